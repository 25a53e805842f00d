package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
)

// metricsTable is controllers/metrics/testdata/karpenter-metrics.txt: the
// name, type, sorted label names and source of every family.
type metricsTableRow struct {
	name, typ, source string
	labels            []string
}

func readMetricsTable(t *testing.T) []metricsTableRow {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "controllers", "metrics", "testdata", "karpenter-metrics.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []metricsTableRow
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 4 {
			t.Fatalf("metrics table: %q", line)
		}
		r := metricsTableRow{name: fields[0], typ: fields[1], source: fields[3]}
		if fields[2] != "-" {
			r.labels = strings.Split(fields[2], ",")
			slices.Sort(r.labels)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// borrowedRegistry registers into controller-runtime's registry, which the
// controller's metrics address serves, and gives back at the end of the test
// what it registered, so that another test (or another run) can register
// the same metrics again.
type borrowedRegistry struct {
	mu         sync.Mutex
	registered []prometheus.Collector
}

func (b *borrowedRegistry) Register(c prometheus.Collector) error {
	if err := ctrlmetrics.Registry.Register(c); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.registered = append(b.registered, c)
	return nil
}

func (b *borrowedRegistry) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := b.Register(c); err != nil {
			panic(err)
		}
	}
}

func (b *borrowedRegistry) Unregister(c prometheus.Collector) bool {
	return ctrlmetrics.Registry.Unregister(c)
}

func (b *borrowedRegistry) giveBack() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.registered {
		ctrlmetrics.Registry.Unregister(c)
	}
}

// scrape reads the families served at addr's /metrics.
func scrape(ctx context.Context, addr string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(resp.Body)
}

// TestControllerServesEveryFamily runs the controller against a real API
// server with its metrics served on loopback, causes the happenings that
// feed the families of client-go, controller-runtime, leader election and
// the AWS SDK (requests, reconciles of a NodePool and an EC2NodeClass, a
// lease renewal that takes the slow path, an AWS call through the
// controller's AWS configuration), scrapes /metrics over HTTP, and checks
// that every family of the table from those sources is served with its type
// and label names, and that every family of the table the scrape holds has
// them too.
func TestControllerServesEveryFamily(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real API server")
	}
	srv, kubeconfig := startAPIServer(t)
	f, world := testAccount(t, 11, "scrape-test")
	reg := &borrowedRegistry{}
	t.Cleanup(reg.giveBack)
	metricsAddr := freePort(t)
	logs, done, _ := runControllerWith(t, f, kubeconfig, reg, "--cluster-name=scrape-test", "--interruption-queue="+world.QueueName,
		"--health-probe-bind-address="+freePort(t), "--metrics-bind-address="+metricsAddr)
	ctx := t.Context()

	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{coordinationv1.AddToScheme, karpv1.AddToScheme, awsv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	kube, err := client.New(srv.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for !ok() {
			select {
			case err := <-done:
				t.Fatalf("controller stopped: %v\nlogs:\n%s", err, logs)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %s after 60s\nlogs:\n%s", what, logs)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	leaseKey := client.ObjectKey{Namespace: "default", Name: "karpenter-leader-election"}
	waitFor("Lease holder", func() bool {
		var lease coordinationv1.Lease
		return kube.Get(ctx, leaseKey, &lease) == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != ""
	})

	// Reconciles.
	createDefaultPool(ctx, t, kube, world, "scrape-test")

	// A slow-path renewal: another writer changes the Lease, so the
	// leader's next optimistic update conflicts and it reads the Lease
	// before writing it again.
	var lease coordinationv1.Lease
	if err := kube.Get(ctx, leaseKey, &lease); err != nil {
		t.Fatal(err)
	}
	if lease.Annotations == nil {
		lease.Annotations = map[string]string{}
	}
	lease.Annotations["example.com/touched"] = "by the test"
	if err := kube.Update(ctx, &lease); err != nil {
		t.Fatal(err)
	}

	// An AWS call through the controller's instrumented AWS configuration,
	// to an EC2 endpoint on loopback.
	ec2srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/xml")
		_, _ = w.Write([]byte(`<DescribeInstancesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>r</requestId><reservationSet/></DescribeInstancesResponse>`))
	}))
	defer ec2srv.Close()
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_REGION": "us-west-2", "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret",
		"AWS_ENDPOINT_URL": ec2srv.URL, "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_CONFIG_FILE": filepath.Join(dir, "config"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"),
		"AWS_PROFILE": "", "AWS_ROLE_ARN": "", "AWS_WEB_IDENTITY_TOKEN_FILE": "", "AWS_CONTAINER_CREDENTIALS_FULL_URI": "",
	} {
		t.Setenv(k, v)
	}
	cfg, err := awsConfig(ctx, reg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ec2.NewFromConfig(cfg).DescribeInstances(ctx, &ec2.DescribeInstancesInput{}); err != nil {
		t.Fatal(err)
	}

	table := readMetricsTable(t)
	required := map[string]bool{"sdk": true, "kubemetrics": true, "runtime": true}
	var problems []string
	deadline := time.Now().Add(60 * time.Second)
	for {
		families, err := scrape(ctx, metricsAddr)
		problems = nil
		if err != nil {
			problems = append(problems, err.Error())
		}
		for _, row := range table {
			fam, ok := families[row.name]
			if !ok || len(fam.GetMetric()) == 0 {
				if required[row.source] {
					problems = append(problems, row.name+" not served")
				}
				continue
			}
			if got := strings.ToLower(fam.GetType().String()); got != row.typ {
				problems = append(problems, fmt.Sprintf("%s: type %s, want %s", row.name, got, row.typ))
			}
			for _, m := range fam.GetMetric() {
				var got []string
				for _, l := range m.GetLabel() {
					got = append(got, l.GetName())
				}
				slices.Sort(got)
				if !slices.Equal(got, row.labels) {
					problems = append(problems, fmt.Sprintf("%s: labels %v, want %v", row.name, got, row.labels))
					break
				}
			}
		}
		if len(problems) == 0 {
			if v := sampleValue(families["leader_election_slowpath_total"]); v < 1 {
				problems = append(problems, fmt.Sprintf("leader_election_slowpath_total is %v, want at least 1", v))
			}
			if v := sampleValue(families["leader_election_master_status"]); v != 1 {
				problems = append(problems, fmt.Sprintf("leader_election_master_status is %v, want 1", v))
			}
		}
		if len(problems) == 0 {
			served := 0
			for _, row := range table {
				if len(families[row.name].GetMetric()) > 0 {
					served++
				}
			}
			t.Logf("%d of the table's %d families served", served, len(table))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 60s:\n%s\nlogs:\n%s", strings.Join(problems, "\n"), logs)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// sampleValue is the value of the first series of a counter or gauge, or -1.
func sampleValue(f *dto.MetricFamily) float64 {
	if f == nil || len(f.GetMetric()) == 0 {
		return -1
	}
	m := f.GetMetric()[0]
	if m.GetCounter() != nil {
		return m.GetCounter().GetValue()
	}
	return m.GetGauge().GetValue()
}

// runControllerWith is runTestController with the metrics registered on
// reg.
func runControllerWith(t *testing.T, f *fake.AWS, kubeconfig string, reg prometheus.Registerer, args ...string) (*syncBuffer, <-chan error, context.CancelFunc) {
	t.Helper()
	return runTestControllerOpts(t, f, kubeconfig, func(o *controllerOptions) { o.registerer = reg }, args...)
}
