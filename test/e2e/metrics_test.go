//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// metricsExempt are the metrics of the table TestMetricsScrape does not
// require to see, each with the reason. A metric listed here that does show
// up is still checked against the table.
var metricsExempt = map[string]string{
	// Failures and events the test does not cause.
	"karpenter_cloudprovider_instance_launch_failures_total":      "no launch fails: the account has capacity for every offering",
	"karpenter_cloudprovider_instance_termination_failures_total": "no termination fails",
	"karpenter_interruption_instance_status_unhealthy_total":      "no instance fails a status check",
	"karpenter_interruption_received_messages_total":              "no interruption message is sent to the queue",
	"karpenter_nodeclaims_unhealthy_disrupted_total":              "no node is repaired",
	"karpenter_nodepools_cost_tracker_errors_total":               "every offering has a price",
	"karpenter_voluntary_disruption_failed_validations_total":     "no disruption command fails its validation",
	"karpenter_voluntary_disruption_queue_failures_total":         "no disruption command fails in the queue",
	"karpenter_pods_drained_total":                                "the consolidated node is empty: no pod is drained",
	"karpenter_pods_eviction_requests_total":                      "the consolidated node is empty: no pod is evicted",
	"karpenter_nodes_total_daemon_limits":                         "no DaemonSet runs",
	"karpenter_nodes_total_daemon_requests":                       "no DaemonSet runs",
	"karpenter_nodes_total_pod_limits":                            "the test's pods set no limits",
	"karpenter_consolidation_score":                               "recorded by the opt-in Balanced consolidation policy only",
	"karpenter_consolidation_moves_total":                         "recorded by the opt-in Balanced consolidation policy only",
	// The simulated account is served over HTTP of its own, not reached
	// through the AWS SDK, so no SDK call is made; cmd/stevedore's tests
	// scrape these from an SDK call through the controller's configuration.
	"aws_sdk_go_request_total":                    "the simulated account is not reached through the AWS SDK",
	"aws_sdk_go_request_attempt_total":            "the simulated account is not reached through the AWS SDK",
	"aws_sdk_go_request_duration_seconds":         "the simulated account is not reached through the AWS SDK",
	"aws_sdk_go_request_attempt_duration_seconds": "the simulated account is not reached through the AWS SDK",
	"aws_sdk_go_request_retry_count":              "the simulated account is not reached through the AWS SDK",
	"leader_election_slowpath_total":              "only when another writer changes the Lease between renewals (cmd/stevedore's tests cause it)",
	// Gauges that exist for too short a time for a scrape to be sure to
	// see them.
	"karpenter_pods_provisioning_scheduling_undecided_time_seconds": "exists from when a pod is seen to its first scheduling decision, under a second",
	"karpenter_scheduler_queue_depth":                               "exists during a scheduling run only",
	"karpenter_scheduler_unfinished_work_seconds":                   "exists during a scheduling run only",
	// The NodePool and EC2NodeClass: their conditions are set on their
	// first reconcile and stay, and they are deleted after the scrape.
	"operator_nodepool_status_condition_transition_seconds":     "the NodePool's conditions do not change after its first reconcile",
	"operator_ec2nodeclass_status_condition_transition_seconds": "the EC2NodeClass's conditions do not change after its first reconcile",
	"operator_nodepool_termination_current_time_seconds":        "the NodePool is deleted after the test",
	"operator_nodepool_termination_duration_seconds":            "the NodePool is deleted after the test",
	"operator_ec2nodeclass_termination_current_time_seconds":    "the EC2NodeClass is deleted after the test",
	"operator_ec2nodeclass_termination_duration_seconds":        "the EC2NodeClass is deleted after the test",
}

// TestMetricsScrape runs the controller with its metrics served on
// loopback, provisions a node and consolidates it, and scrapes /metrics:
// every metric of Karpenter v1.14 (controllers/metrics/testdata/
// karpenter-metrics.txt) is served with its type and exactly its label
// names, except the few of metricsExempt.
func TestMetricsScrape(t *testing.T) {
	ctx := t.Context()
	table := readMetricsTable(t)
	spec := accountSpec{Cluster: "e2e-metrics", Region: "ap-northeast-1", Seed: 15}
	acc := serveAccount(t, spec)
	// With leader election on, as in production, so that its metrics
	// (leader_election_master_status) are served too.
	c := startController(t, controllerOptions{name: "stevedore-metrics", account: acc.URL, leaderElectionID: "stevedore-e2e-metrics-" + suffix()})

	// Many series exist only for a while: the per-pod gauges while a pod is
	// pending, the per-node ones while the node exists, a termination gauge
	// while the object terminates; the status histograms are observed when
	// one scrape sees a condition (or an object) another scrape saw
	// differently. So the test scrapes every 250ms throughout, and checks
	// what all the scrapes saw together.
	var mu sync.Mutex
	seen := map[string]*family{}
	scrapeInto := func(ctx context.Context) error {
		families, err := scrapeFamilies(ctx, c.metrics)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		mergeFamilies(seen, families)
		return nil
	}
	scrapeCtx, stopScraping := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for scrapeCtx.Err() == nil {
			if err := scrapeInto(scrapeCtx); err != nil && scrapeCtx.Err() == nil {
				t.Logf("scraping %s: %v", c.metrics, err)
			}
			select {
			case <-scrapeCtx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	})
	defer func() { stopScraping(); wg.Wait() }()

	// The pool has limits, so that its limit gauges have series.
	pool := "metrics-" + suffix()
	createPool(t, poolSpec{Name: pool, Cluster: spec.Cluster,
		Disruption: "    consolidationPolicy: WhenEmptyOrUnderutilized\n    consolidateAfter: 1s\n  limits: {cpu: \"1000\", memory: 1000Gi}"})
	ns := newNamespace(t, "metrics")
	create(t, workloadYAML, workloadSpec{Name: "web", Namespace: ns, Pool: pool, Replicas: 3, CPU: "500m", Memory: "1Gi"})
	waitRunning(t, 90*time.Second, ns, "web", 3)
	if err := scale(ctx, ns, "web", 0); err != nil {
		t.Fatal(err)
	}
	eventually(t, 90*time.Second, "the empty node consolidated and its NodeClaim gone", func(ctx context.Context) error {
		s, err := readPool(ctx, pool)
		if err != nil {
			return err
		}
		if len(s.claims) > 0 || len(s.nodes) > 0 {
			return fmt.Errorf("%d NodeClaims and %d Nodes left", len(s.claims), len(s.nodes))
		}
		return nil
	})
	stopScraping()
	wg.Wait()

	// The last observations land at the next scrape or two.
	eventually(t, 20*time.Second, "every Karpenter metric served with its labels", func(context.Context) error {
		// A scrape of its own deadline, so that the last attempt reports
		// the metrics' problems rather than a scrape cut short.
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		if err := scrapeInto(ctx); err != nil {
			return err
		}
		if problems := checkMetrics(table, seen); len(problems) > 0 {
			return fmt.Errorf("%d problems:\n%s", len(problems), strings.Join(problems, "\n"))
		}
		return nil
	})
}

// mergeFamilies adds what a scrape saw to what earlier ones did.
func mergeFamilies(into, from map[string]*family) {
	for name, f := range from {
		if into[name] == nil {
			into[name] = &family{typ: f.typ, labelSets: map[string]bool{}}
		}
		if into[name].typ != f.typ {
			into[name].typ = into[name].typ + "/" + f.typ
		}
		for l := range f.labelSets {
			into[name].labelSets[l] = true
		}
	}
}

// tableMetric is a line of the metrics table.
type tableMetric struct {
	name, typ string
	labels    []string // sorted
}

// readMetricsTable reads controllers/metrics/testdata/karpenter-metrics.txt
// (its header describes the format).
func readMetricsTable(t *testing.T) []tableMetric {
	t.Helper()
	path := filepath.Join(mustRepoRoot(t), "controllers", "metrics", "testdata", "karpenter-metrics.txt")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []tableMetric
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 4 {
			t.Fatalf("%s:%d: want name, type, labels and package, got %q", path, i+1, line)
		}
		m := tableMetric{name: f[0], typ: f[1]}
		if f[2] != "-" {
			m.labels = strings.Split(f[2], ",")
			slices.Sort(m.labels)
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		t.Fatalf("%s lists no metric", path)
	}
	return out
}

// family is a metric family as scraped: its type and the label-name sets
// of its series (sorted names joined by ",").
type family struct {
	typ       string
	labelSets map[string]bool
}

// scrapeFamilies reads the Prometheus text exposition at url.
func scrapeFamilies(ctx context.Context, url string) (map[string]*family, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	// Read it whole first: a body cut short is an error, not a short line.
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	return parseExposition(bytes.NewReader(body))
}

// parseExposition reads the text format: "# TYPE name type" lines and
// samples "name{label="value",...} value". A histogram's _bucket, _sum and
// _count samples (and a summary's) belong to its family; their le and
// quantile labels are not the family's labels.
func parseExposition(r io.Reader) (map[string]*family, error) {
	out := map[string]*family{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			out[f[2]] = &family{typ: f[3], labelSets: map[string]bool{}}
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, labels, err := parseSample(line)
		if err != nil {
			return nil, err
		}
		fam := out[name]
		if fam == nil {
			for _, suf := range []string{"_bucket", "_sum", "_count"} {
				if base, ok := strings.CutSuffix(name, suf); ok && out[base] != nil {
					fam = out[base]
				}
			}
		}
		if fam == nil {
			return nil, fmt.Errorf("sample %q has no # TYPE line", line)
		}
		labels = slices.DeleteFunc(labels, func(l string) bool {
			return (l == "le" && fam.typ == "histogram") || (l == "quantile" && fam.typ == "summary")
		})
		slices.Sort(labels)
		fam.labelSets[strings.Join(labels, ",")] = true
	}
	return out, sc.Err()
}

// parseSample returns a sample line's metric name and label names.
func parseSample(line string) (string, []string, error) {
	i := strings.IndexAny(line, "{ ")
	if i < 0 {
		return "", nil, fmt.Errorf("sample %q: no value", line)
	}
	name, rest := line[:i], line[i:]
	if !strings.HasPrefix(rest, "{") {
		return name, nil, nil
	}
	var labels []string
	rest = rest[1:]
	for {
		rest = strings.TrimLeft(rest, ", ")
		if strings.HasPrefix(rest, "}") {
			return name, labels, nil
		}
		eq := strings.Index(rest, `="`)
		if eq < 0 {
			return "", nil, fmt.Errorf("sample %q: a label without a quoted value", line)
		}
		labels = append(labels, rest[:eq])
		// Skip the value: up to the closing quote not escaped by a backslash.
		j := eq + 2
		for ; j < len(rest) && rest[j] != '"'; j++ {
			if rest[j] == '\\' {
				j++
			}
		}
		if j >= len(rest) {
			return "", nil, fmt.Errorf("sample %q: an unterminated label value", line)
		}
		rest = rest[j+1:]
	}
}

// checkMetrics compares what was scraped with the table: each metric is
// served (unless exempt) with the table's type, and every one of its
// series has exactly the table's label names.
func checkMetrics(table []tableMetric, families map[string]*family) []string {
	var problems []string
	for _, m := range table {
		fam := families[m.name]
		if fam == nil {
			if _, ok := metricsExempt[m.name]; !ok {
				problems = append(problems, fmt.Sprintf("%s: not served", m.name))
			}
			continue
		}
		if fam.typ != m.typ {
			problems = append(problems, fmt.Sprintf("%s: type %s, want %s", m.name, fam.typ, m.typ))
		}
		want := strings.Join(m.labels, ",")
		for got := range fam.labelSets {
			if got != want {
				problems = append(problems, fmt.Sprintf("%s: a series with labels {%s}, want {%s}", m.name, got, want))
			}
		}
	}
	slices.Sort(problems)
	return problems
}
