//go:build e2e && scale

package e2e

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/catalog"
	"github.com/stevedore-autoscaler/stevedore/test/e2e/cluster"
)

// This file is built only with the tags e2e and scale: it is a measurement
// that takes far longer than the suite's budget, run by
// hack/bench-kwok-scale.sh. hack/e2e.sh builds with the tag e2e alone, so
// its shards never see it.

func init() {
	// The suite's cluster keeps the components' default client limits, or
	// close to them; at 20,000 pods they, not the autoscaler, would set the
	// pace. These apply to the cluster of this build only.
	clusterFlags = map[string][]string{
		// kube-scheduler writes each pod's unschedulable status and later
		// its binding through one client, 50 requests a second by default:
		// 40,000 requests for 20,000 pods, over 13 minutes.
		cluster.KubeScheduler: {"--kube-api-qps=500", "--kube-api-burst=1000"},
		// The ReplicaSet controller creates and deletes the pods through
		// the controller manager's client (100 a second in the suite's
		// flags): 20,000 pods would take well over three minutes.
		cluster.KubeControllerManager: {"--kube-api-qps=500", "--kube-api-burst=1000"},
		// More kwok workers (see config-scale.yaml): with the suite's four,
		// Node Leases lapse past about 1,400 Nodes. kwok reads the first
		// KwokConfiguration it is given, and a flag named here replaces
		// all of kwok.flags' --config, so the stages are named again.
		cluster.KWOK: {
			"--config=${CONFIG}/kwok/config-scale.yaml",
			"--config=${CONFIG}/kwok/node-stages.yaml",
			"--config=${CONFIG}/kwok/pod-stages.yaml",
		},
	}
}

// kwokScale are the measurement's parameters, from the environment (see
// hack/bench-kwok-scale.sh).
type kwokScale struct {
	pods        int // SCALE_PODS
	nodes       int // SCALE_NODES: the pods are sized so that this many nodes hold them
	podsAfter   int // SCALE_PODS_AFTER: the scale-down's target
	deployments int // SCALE_DEPLOYMENTS
	nodeCPU     int // SCALE_NODE_CPU: the NodePool's only instance size, in vCPUs
	podMemory   string
	// consolidateAfter and budget are the NodePool's.
	consolidateAfter, budget string
	// timeout bounds each phase; settle is how long the nodes must stay
	// the same for consolidation to count as done.
	timeout, settle time.Duration
}

func kwokScaleParams(t *testing.T) kwokScale {
	t.Helper()
	p := kwokScale{
		pods:             envInt(t, "SCALE_PODS", 20000),
		deployments:      envInt(t, "SCALE_DEPLOYMENTS", 10),
		nodeCPU:          envInt(t, "SCALE_NODE_CPU", 16),
		podMemory:        envString("SCALE_POD_MEMORY", "1Gi"),
		consolidateAfter: envString("SCALE_CONSOLIDATE_AFTER", "30s"),
		budget:           envString("SCALE_BUDGET", "10%"),
		timeout:          envDuration(t, "SCALE_TIMEOUT", 30*time.Minute),
		settle:           envDuration(t, "SCALE_SETTLE", 2*time.Minute),
	}
	p.nodes = envInt(t, "SCALE_NODES", p.pods/10)
	p.podsAfter = envInt(t, "SCALE_PODS_AFTER", p.pods/2)
	if p.pods < 1 || p.nodes < 1 || p.nodes > p.pods || p.deployments < 1 || p.podsAfter < 0 || p.podsAfter > p.pods {
		t.Fatalf("parameters out of range: %d pods, %d nodes, %d pods after the scale-down, %d Deployments", p.pods, p.nodes, p.podsAfter, p.deployments)
	}
	return p
}

func envString(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(strings.ReplaceAll(v, ",", ""))
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}

func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return d
}

// TestKWOKScale provisions nodes for SCALE_PODS pods (20,000 by default)
// sized so that SCALE_NODES nodes (2,000) hold them, then scales the pods
// down to SCALE_PODS_AFTER (half) and lets consolidation take nodes away.
// It reports, for the scale-out and the consolidation apart, the time, the
// nodes, the controller's CPU time, peak memory and API requests (as
// TestScaleOut does), the CPU time and memory of every component of the
// local cluster, and the scale-out's provisioning latencies. Every 30
// seconds it logs progress with each process's share of the CPU since the
// last line, which shows which component sets the pace.
//
// The NodePool allows one instance size (SCALE_NODE_CPU vCPUs, c, m or r,
// generation 6 or later) and each pod asks for that size's allocatable CPU
// divided by the pods a node is to hold, so the packer cannot put more on
// a node, and consolidation can only move pods and delete nodes, never
// replace one with a smaller one.
func TestKWOKScale(t *testing.T) {
	ctx := t.Context()
	p := kwokScaleParams(t)
	perNode := (p.pods + p.nodes - 1) / p.nodes
	alloc, err := allocatableMilliCPU(p.nodeCPU)
	if err != nil {
		t.Fatal(err)
	}
	podCPU := fmt.Sprintf("%dm", alloc/int64(perNode))
	t.Logf("%d pods of %s and %s in %d Deployments, %d per %d-vCPU node (%dm allocatable): about %d nodes; then %d pods; consolidateAfter %s, budget %s",
		p.pods, podCPU, p.podMemory, p.deployments, perNode, p.nodeCPU, alloc, (p.pods+perNode-1)/perNode, p.podsAfter, p.consolidateAfter, p.budget)

	spec := accountSpec{Cluster: "e2e-kwok-scale", Region: "us-east-2", Seed: 17}
	ctl := startController(t, controllerOptions{name: "stevedore-kwok-scale", account: writeAccount(t, spec)})
	pool := "kwok-scale-" + suffix()
	// The pool and its nodes are left for the cluster's teardown: deleting
	// a thousand nodes one drain at a time is no part of the measurement.
	createPoolObjects(t, poolSpec{
		Name: pool, Cluster: spec.Cluster,
		Requirements: []string{fmt.Sprintf(`{key: %s, operator: In, values: ["%d"]}`, wellknown.LabelInstanceCPU, p.nodeCPU)},
		Disruption: fmt.Sprintf(`    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: %s
    budgets: [{nodes: "%s"}]`, p.consolidateAfter, p.budget),
	})
	ns := newNamespace(t, "kwok-scale")
	procs := newProcWatch(t, ctl)
	baseline, baseProcs := measure(ctx, t, ctl), procs.snapshot(t)

	names := make([]string, p.deployments)
	for i := range names {
		names[i] = fmt.Sprintf("scale-%d", i)
	}
	replicas := spread(p.pods, names)
	created := time.Now()
	for _, name := range names {
		create(t, workloadYAML, workloadSpec{Name: name, Namespace: ns, Pool: pool, Replicas: replicas[name], CPU: podCPU, Memory: p.podMemory})
	}
	ready, outErr := waitDeployments(t, p.timeout, ns, pool, replicas, procs)
	toRunning := time.Since(created)
	up, upProcs := measure(ctx, t, ctl), procs.snapshot(t)
	s, err := readPool(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	peakNodes := len(s.initialized())
	// A scale-out that did not finish is reported as far as it got: where
	// it stopped is the measurement.
	done := fmt.Sprintf("%d pods Running %s after creation", p.pods, toRunning.Round(time.Second))
	if outErr != nil {
		done = fmt.Sprintf("NOT DONE: %d of %d pods Running %s after creation (%v)", ready, p.pods, toRunning.Round(time.Second), outErr)
	}
	t.Logf("measurement: %s, on %d nodes (%s); %d NodeClaims exist; load average %s",
		done, peakNodes, typeMix(s), len(s.claims), loadAverage())
	t.Logf("measurement: scale-out: controller: %s", up.since(baseline))
	t.Logf("measurement: scale-out: processes: %s", upProcs.since(baseProcs))
	lat, err := nominationLatencies(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("measurement: scale-out: %s", lat)
	if outErr != nil {
		t.Fatalf("scale-out: %v", outErr)
	}

	after := spread(p.podsAfter, names)
	for _, name := range names {
		if err := scale(ctx, ns, name, after[name]); err != nil {
			t.Fatal(err)
		}
	}
	scaled := time.Now()
	if _, err := waitDeployments(t, p.timeout, ns, pool, after, procs); err != nil {
		t.Fatalf("scale-down: %v", err)
	}
	t.Logf("scaled down to %d pods in %s", p.podsAfter, time.Since(scaled).Round(time.Second))
	last, most, lastChange, settled := waitConsolidation(t, p.timeout, p.settle, pool, peakNodes, procs)
	if _, err := waitDeployments(t, p.timeout, ns, pool, after, procs); err != nil {
		t.Errorf("after consolidation: %v", err)
	}
	down, downProcs := measure(ctx, t, ctl), procs.snapshot(t)
	if s, err = readPool(ctx, pool); err != nil {
		t.Fatal(err)
	}
	state := "settled"
	if !settled {
		state = fmt.Sprintf("not settled within %s", p.timeout)
	}
	t.Logf("measurement: after scaling to %d pods, %d → %d nodes (the most initialized at once → at the end), the last change %s after the scale-down (%s; %s); load average %s",
		p.podsAfter, most, last, lastChange.Sub(scaled).Round(time.Second), state, typeMix(s), loadAverage())
	t.Logf("measurement: consolidation: controller: %s", down.since(up))
	t.Logf("measurement: consolidation: processes: %s", downProcs.since(upProcs))
	t.Logf("measurement: whole test: controller: %s", down.since(baseline))
	if last >= most && p.podsAfter <= p.pods/2 {
		t.Errorf("consolidation removed no node: %d nodes at the peak, %d after", most, last)
	}
}

// allocatableMilliCPU is the allocatable CPU of the catalog's instance types
// with vcpu vCPUs: the least of them, though on AL2023 the kubelet's CPU
// reservation depends on the core count alone.
func allocatableMilliCPU(vcpu int) (int64, error) {
	all, err := catalog.All()
	if err != nil {
		return 0, err
	}
	least := int64(-1)
	for i := range all {
		if all[i].Labels[wellknown.LabelInstanceCPU] != strconv.Itoa(vcpu) {
			continue
		}
		if m := all[i].Allocatable.Cpu().MilliValue(); least < 0 || m < least {
			least = m
		}
	}
	if least <= 0 {
		return 0, fmt.Errorf("no instance type of the catalog has %d vCPUs", vcpu)
	}
	return least, nil
}

// spread divides n replicas among the names, the first ones taking the
// remainder.
func spread(n int, names []string) map[string]int {
	out := map[string]int{}
	for i, name := range names {
		out[name] = n / len(names)
		if i < n%len(names) {
			out[name]++
		}
	}
	return out
}

// waitDeployments waits until every Deployment has exactly its replicas,
// all updated and ready, as the Deployment controller counts them: listing
// 20,000 pods every few seconds would load the API server more than the
// workload does. It logs progress every 30 seconds, and returns how many
// pods were ready when it last looked.
func waitDeployments(t *testing.T, timeout time.Duration, ns, pool string, want map[string]int, procs *procWatch) (int, error) {
	t.Helper()
	start := time.Now()
	total, lastReady := 0, 0
	for _, n := range want {
		total += n
	}
	err := poll(t, timeout, 2*time.Second, func(ctx context.Context, report bool) (bool, error) {
		list := &appsv1.DeploymentList{}
		if err := kube.List(ctx, list, client.InNamespace(ns)); err != nil {
			return false, err
		}
		ready, exist, done := 0, 0, 0
		defer func() { lastReady = ready }()
		for _, d := range list.Items {
			n, ok := want[d.Name]
			if !ok {
				continue
			}
			ready += int(d.Status.ReadyReplicas)
			exist += int(d.Status.Replicas)
			if d.Status.ObservedGeneration == d.Generation && int(d.Status.Replicas) == n && int(d.Status.UpdatedReplicas) == n && int(d.Status.ReadyReplicas) == n {
				done++
			}
		}
		if done == len(want) {
			t.Logf("%d pods ready after %s", total, time.Since(start).Round(time.Second))
			return true, nil
		}
		if report {
			nodes := "?"
			if s, err := readPool(ctx, pool); err == nil {
				nodes = fmt.Sprintf("%d NodeClaims (%d initialized), %d Nodes", len(s.claims), len(s.initialized()), len(s.nodes))
			}
			t.Logf("waiting %s: %d of %d pods ready, %d exist; %s; %s", time.Since(start).Round(time.Second), ready, total, exist, nodes, procs.interval(t))
		}
		return false, nil
	})
	return lastReady, err
}

// waitConsolidation waits until the pool's nodes have stayed the same for
// settle, with none launching or being deleted, and returns how many nodes
// it ended with, the most it saw initialized (NodeClaims launched for the
// scale-out may still initialize after its last pod runs), and when the
// count last changed. It gives up after timeout and reports settled false:
// how far consolidation got is the measurement.
func waitConsolidation(t *testing.T, timeout, settle time.Duration, pool string, peak int, procs *procWatch) (nodes, most int, lastChange time.Time, settled bool) {
	t.Helper()
	start := time.Now()
	lastChange = start
	nodes, most = peak, peak
	lastClaims := -1
	err := poll(t, timeout, 5*time.Second, func(ctx context.Context, report bool) (bool, error) {
		s, err := readPool(ctx, pool)
		if err != nil {
			return false, err
		}
		initialized := len(s.initialized())
		most = max(most, initialized)
		if initialized != nodes || len(s.claims) != lastClaims {
			nodes, lastClaims, lastChange = initialized, len(s.claims), time.Now()
		}
		deleting := 0
		for _, nc := range s.claims {
			if nc.DeletionTimestamp != nil || !meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeInitialized) {
				deleting++
			}
		}
		if deleting == 0 && time.Since(lastChange) >= settle {
			return true, nil
		}
		if report {
			t.Logf("consolidating %s: %d nodes initialized, %d NodeClaims launching or being deleted; %s",
				time.Since(start).Round(time.Second), initialized, deleting, procs.interval(t))
		}
		return false, nil
	})
	return nodes, most, lastChange, err == nil
}

// poll calls check every interval until it is done, fails or timeout has
// passed (an error). check's report is true about every 30 seconds, when it
// should log its progress.
func poll(t *testing.T, timeout, interval time.Duration, check func(ctx context.Context, report bool) (bool, error)) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	lastReport := time.Now()
	for {
		report := time.Since(lastReport) >= 30*time.Second
		if report {
			lastReport = time.Now()
		}
		done, err := check(ctx, report)
		if err != nil && ctx.Err() == nil {
			return err
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not within %s", timeout)
		case <-time.After(interval):
		}
	}
}

// procWatch reads /proc for the cluster's components, the controller and
// this test process.
type procWatch struct {
	names []string
	pids  map[string]int
	last  procSnapshot
}

type procSnapshot struct {
	at    time.Time
	stats map[string]procStat
}

func newProcWatch(t *testing.T, ctl *controller) *procWatch {
	t.Helper()
	w := &procWatch{pids: map[string]int{}}
	for _, c := range testCluster.Components() {
		if c.PID == 0 {
			t.Logf("the PID of %s is not known; its usage is not reported", c.Name)
			continue
		}
		w.names = append(w.names, c.Name)
		w.pids[c.Name] = c.PID
	}
	w.names = append(w.names, "stevedore", "test")
	w.pids["stevedore"] = ctl.PID()
	w.pids["test"] = os.Getpid()
	w.last = w.snapshot(t)
	return w
}

func (w *procWatch) snapshot(t *testing.T) procSnapshot {
	t.Helper()
	s := procSnapshot{at: time.Now(), stats: map[string]procStat{}}
	for _, name := range w.names {
		st, err := readProc(w.pids[name])
		if err != nil {
			t.Errorf("reading /proc of %s: %v", name, err)
			continue
		}
		s.stats[name] = st
	}
	return s
}

// interval describes each process's share of a core since the last call,
// busiest first, with the machine's load average.
func (w *procWatch) interval(t *testing.T) string {
	t.Helper()
	now := w.snapshot(t)
	wall := now.at.Sub(w.last.at)
	type share struct {
		name string
		cpu  time.Duration
	}
	var shares []share
	for _, name := range w.names {
		if a, ok := now.stats[name]; ok {
			shares = append(shares, share{name, a.cpu - w.last.stats[name].cpu})
		}
	}
	w.last = now
	slices.SortStableFunc(shares, func(a, b share) int { return cmp.Compare(b.cpu, a.cpu) })
	var parts []string
	for _, s := range shares {
		parts = append(parts, fmt.Sprintf("%s %.0f%%", s.name, 100*float64(s.cpu)/float64(wall)))
	}
	return fmt.Sprintf("CPU over %s: %s; load average %s", wall.Round(time.Second), strings.Join(parts, ", "), loadAverage())
}

// since describes each process's CPU time between two snapshots, and its
// resident memory now and at its peak.
func (s procSnapshot) since(before procSnapshot) string {
	wall := s.at.Sub(before.at)
	var parts []string
	names := make([]string, 0, len(s.stats))
	for name := range s.stats {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		a := s.stats[name]
		cpu := a.cpu - before.stats[name].cpu
		parts = append(parts, fmt.Sprintf("%s CPU %s (%.0f%% of a core), RSS %d MiB (peak %d MiB)",
			name, cpu.Round(time.Second), 100*float64(cpu)/float64(wall), a.rss>>20, a.peakRSS>>20))
	}
	return fmt.Sprintf("%s wall; %s", wall.Round(time.Second), strings.Join(parts, "; "))
}

// loadAverage is the machine's 1, 5 and 15 minute load averages, which say
// how much of the two cores the other work on the machine took.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
