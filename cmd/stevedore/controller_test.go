package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-autoscaler/stevedore/api/crds"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/settings"
	"github.com/stevedore-autoscaler/stevedore/test/apiserver"
)

func TestControllerHelpDocumentsEveryFlag(t *testing.T) {
	out, _, err := run(t, "", "controller", "--help")
	if err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	(&controllerOptions{}).addFlags(fs, func(string) string { return "" })
	n := 0
	fs.VisitAll(func(f *pflag.Flag) {
		n++
		var line string
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "--"+f.Name+" ") {
				line = l
			}
		}
		if line == "" {
			t.Errorf("--help does not list --%s", f.Name)
			return
		}
		if !strings.Contains(line, "(env "+settings.EnvVar(f.Name)+")") {
			t.Errorf("--%s: help names no env var %s: %q", f.Name, settings.EnvVar(f.Name), line)
		}
		if f.Value.Type() != "string" && !strings.Contains(line, "(default ") {
			t.Errorf("--%s: help shows no default: %q", f.Name, line)
		}
	})
	if n < 26 {
		t.Errorf("only %d flags", n)
	}
	for _, want := range []string{"--leader-elect ", "--preference-policy ", "--vm-memory-overhead-percent ", "(default 0)", "(default false)"} {
		if !strings.Contains(out, want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}

func TestControllerEnvVars(t *testing.T) {
	env := map[string]string{
		"BATCH_IDLE_DURATION": "2s", "LEADER_ELECT": "false", "CLUSTER_NAME": "env-cluster",
		"KUBE_CLIENT_QPS": "50", "PREFERENCE_POLICY": "Respect",
	}
	var o controllerOptions
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	o.addFlags(fs, func(k string) string { return env[k] })
	if err := fs.Parse([]string{"--batch-idle-duration=3s"}); err != nil {
		t.Fatal(err)
	}
	if o.envErr != nil || o.batchIdle != 3*time.Second || o.leaderElect || o.settings.ClusterName != "env-cluster" ||
		o.kubeClientQPS != 50 || o.preferencePolicy != "Respect" {
		t.Errorf("options = %+v", o)
	}

	var bad controllerOptions
	bad.addFlags(pflag.NewFlagSet("y", pflag.ContinueOnError), func(k string) string {
		return map[string]string{"KUBE_CLIENT_BURST": "lots"}[k]
	})
	if bad.envErr == nil || !strings.Contains(bad.envErr.Error(), "KUBE_CLIENT_BURST") {
		t.Errorf("bad env var: %v", bad.envErr)
	}
}

func TestControllerInvalidSettingsFailBeforeConnecting(t *testing.T) {
	// No kubeconfig and no cluster: an attempt to connect would fail
	// differently, and slowly.
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "missing"))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--cluster-name=c", "--vm-memory-overhead-percent=2"}, "--vm-memory-overhead-percent 2 must be a fraction"},
		{[]string{"--vm-memory-overhead-percent=0.1"}, "--cluster-name (CLUSTER_NAME) is required"},
		{[]string{"--cluster-name=c", "--preference-policy=Maybe"}, "--preference-policy \"Maybe\""},
		{[]string{"--cluster-name=c", "--batch-idle-duration=20s"}, "must not exceed --batch-max-duration"},
		{[]string{"--cluster-name=c", "--log-level=loud"}, "--log-level \"loud\""},
	} {
		start := time.Now()
		_, _, err := run(t, "", append([]string{"controller"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), "invalid settings") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %q", tc.args, err, tc.want)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%v: took %s", tc.args, d)
		}
	}
}

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startAPIServer starts a real kube-apiserver with stevedore's CRDs for the
// test, and returns it with the path of an admin kubeconfig for it.
func startAPIServer(t *testing.T) (*apiserver.Server, string) {
	t.Helper()
	all, err := crds.All()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := apiserver.Start(apiserver.Options{CRDs: all})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	kc, err := srv.Kubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	return srv, kubeconfig
}

// TestControllerRunsAgainstAPIServer starts the command's manager against a
// real API server and the in-memory AWS: it must take the leader Lease,
// answer its probes, and stop when cancelled.
func TestControllerRunsAgainstAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real API server")
	}
	srv, kubeconfig := startAPIServer(t)

	f, world := testAccount(t, 7, "cmd-test")
	probe, metricsAddr := freePort(t), freePort(t)
	logs, done, cancel := runTestController(t, f, kubeconfig, "--cluster-name=cmd-test", "--interruption-queue="+world.QueueName,
		"--health-probe-bind-address="+probe, "--metrics-bind-address="+metricsAddr, "--log-level=debug")
	defer cancel()
	ctx := t.Context()

	scheme := runtime.NewScheme()
	if err := coordinationv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	kube, err := client.New(srv.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	var lease coordinationv1.Lease
	var healthz, readyz int
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case err := <-done:
			t.Fatalf("controller stopped early: %v\nlogs:\n%s", err, logs)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("lease holder %v, /healthz %d, /readyz %d after 60s\nlogs:\n%s", lease.Spec.HolderIdentity, healthz, readyz, logs)
		}
		err := kube.Get(ctx, client.ObjectKey{Namespace: "default", Name: "karpenter-leader-election"}, &lease)
		healthz, readyz = status(probe, "/healthz"), status(probe, "/readyz")
		if err == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "" && healthz == 200 && readyz == 200 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if s := status(metricsAddr, "/metrics"); s != 200 {
		t.Errorf("/metrics answered %d", s)
	}
	// Logs are JSON, one object a line, and the start is announced.
	out := logs.String()
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, `"level":"ERROR"`) {
			t.Logf("error logged: %s", l)
		}
	}
	if !strings.Contains(out, `"message":"starting controller"`) || !strings.Contains(out, `"kubernetesVersion":"1.`) {
		t.Errorf("no start line in logs:\n%s", out)
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(l, "{") {
			t.Errorf("log line is not JSON: %q", l)
			break
		}
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("controller: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("controller did not stop within 60s of cancellation")
	}
	if s := status(probe, "/healthz"); s != 0 {
		t.Errorf("/healthz still answers %d after stop", s)
	}
	// LeaderElectionReleaseOnCancel gives the Lease up on the way out.
	if err := kube.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "karpenter-leader-election"}, &lease); err != nil {
		t.Fatal(err)
	}
	if h := lease.Spec.HolderIdentity; h != nil && *h != "" {
		t.Errorf("lease still held by %q after stop", *h)
	}
}

// testAccount returns an in-memory AWS account of two instance types with
// the standard cluster named cluster in it.
func testAccount(t *testing.T, seed uint64, cluster string) (*fake.AWS, *fake.ClusterWorld) {
	t.Helper()
	f := fake.New(fake.Options{Seed: seed, InstanceTypes: []string{"m6i.large", "c6i.large"}})
	world, err := f.StandardCluster(cluster, "1.33")
	if err != nil {
		t.Fatal(err)
	}
	return f, world
}

// runTestController starts the command's manager against the account f,
// with the kubeconfig and the flags given, and returns its logs, the channel
// its result arrives on, and the function that stops it. It is stopped when
// the test ends, at the latest.
func runTestController(t *testing.T, f *fake.AWS, kubeconfig string, args ...string) (*syncBuffer, <-chan error, context.CancelFunc) {
	t.Helper()
	return runTestControllerOpts(t, f, kubeconfig, nil, args...)
}

// runTestControllerOpts is runTestController with the options changed by
// set, when not nil, after the flags are parsed.
func runTestControllerOpts(t *testing.T, f *fake.AWS, kubeconfig string, set func(*controllerOptions), args ...string) (*syncBuffer, <-chan error, context.CancelFunc) {
	t.Helper()
	var o controllerOptions
	fs := pflag.NewFlagSet("controller", pflag.ContinueOnError)
	o.addFlags(fs, func(string) string { return "" })
	if err := fs.Parse(append([]string{"--kubeconfig=" + kubeconfig, "--leader-election-namespace=default"}, args...)); err != nil {
		t.Fatal(err)
	}
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	o.logOutput = logs
	o.registerer = prometheus.NewRegistry()
	// Several tests start a manager in this process; controller-runtime
	// refuses a controller name it has seen before unless told.
	o.sharedProcess = true
	if set != nil {
		set(&o)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done, finished := make(chan error, 1), make(chan struct{})
	go func() {
		done <- runController(ctx, &o, f.Clients(), fake.DefaultRegion)
		close(finished)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-finished:
		case <-time.After(time.Minute):
			t.Error("controller did not stop within a minute of cancellation")
		}
	})
	return logs, done, cancel
}

// status returns the HTTP status of GET path on addr, or 0 when nothing answers.
func status(addr, path string) int {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(fmt.Sprintf("http://%s%s", addr, path))
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}
