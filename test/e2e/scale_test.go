//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/internal/kubemetrics"
)

// TestScaleOut is the suite's load test, with a controller of its own and
// its account in the controller process (--simulated-account=FILE): 1,000
// pods of two Deployments, 500 of 900m/3100Mi and 500 of 3500m/28Gi,
// become Running on nodes stevedore launches for them; after both are
// scaled down to 350, consolidation removes nodes. It reports, and does not
// assert, the time from the pods' creation to all of them Running, the
// controller's CPU time and peak memory (from /proc) and the API requests it
// issued (client_go_request_total on its metrics endpoint); see
// docs/performance.md.
func TestScaleOut(t *testing.T) {
	ctx := t.Context()
	spec := accountSpec{Cluster: "e2e-scale", Region: "us-east-2", Seed: 13}
	ctl := startController(t, controllerOptions{name: "stevedore-scale", account: writeAccount(t, spec)})
	pool := "scale-" + suffix()
	createPool(t, poolSpec{
		Name: pool, Cluster: spec.Cluster,
		Disruption: `    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 10s
    budgets: [{nodes: "20%"}]`,
	})
	ns := newNamespace(t, "scale")
	baseline := measure(ctx, t, ctl)

	created := time.Now()
	create(t, workloadYAML, workloadSpec{Name: "small", Namespace: ns, Pool: pool, Replicas: 500, CPU: "900m", Memory: "3100Mi"})
	create(t, workloadYAML, workloadSpec{Name: "large", Namespace: ns, Pool: pool, Replicas: 500, CPU: "3500m", Memory: "28Gi"})
	waitAllRunning(t, 8*time.Minute, ns, map[string]int{"small": 500, "large": 500})
	toRunning := time.Since(created)
	up := measure(ctx, t, ctl)
	s, err := readPool(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	peakNodes := len(s.initialized())
	t.Logf("measurement: 1,000 pods Running %s after creation, on %d nodes (%s); %d NodeClaims exist",
		toRunning.Round(100*time.Millisecond), peakNodes, typeMix(s), len(s.claims))
	t.Logf("measurement: scale-out: %s", up.since(baseline))
	lat, err := nominationLatencies(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("measurement: %s", lat)
	if len(lat.decided) == 0 {
		t.Error("no pod has a Nominated event")
	}
	// Karpenter's own gate for this scale-out is 260 MB of controller
	// memory; the peak is a high-water mark of the process, not a timing.
	if mib := up.peakRSS >> 20; mib > 260 {
		t.Errorf("the controller's peak resident memory reached %d MiB during the scale-out, above Karpenter's gate of 260", mib)
	}

	// Scale down to 700 pods: consolidation takes nodes away.
	if err := scale(ctx, ns, "small", 350); err != nil {
		t.Fatal(err)
	}
	if err := scale(ctx, ns, "large", 350); err != nil {
		t.Fatal(err)
	}
	scaled := time.Now()
	waitAllRunning(t, 2*time.Minute, ns, map[string]int{"small": 350, "large": 350})
	var fewer int
	eventually(t, 5*time.Minute, "consolidation removed nodes", func(ctx context.Context) error {
		s, err := readPool(ctx, pool)
		if err != nil {
			return err
		}
		fewer = len(s.initialized())
		if fewer >= peakNodes {
			return fmt.Errorf("%d initialized nodes, as many as at the peak (%d)", fewer, peakNodes)
		}
		return nil
	})
	// Let consolidation run on a little; report where it got to.
	settle := time.Now()
	last, lastChange := fewer, time.Now()
	for time.Since(settle) < 30*time.Second && time.Since(lastChange) < 15*time.Second {
		time.Sleep(2 * time.Second)
		s, err := readPool(ctx, pool)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(s.initialized()); n != last {
			last, lastChange = n, time.Now()
		}
	}
	waitAllRunning(t, 2*time.Minute, ns, map[string]int{"small": 350, "large": 350})
	down := measure(ctx, t, ctl)
	s, err = readPool(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("measurement: after scaling to 700 pods, %d → %d nodes within %s (%s)", peakNodes, len(s.initialized()),
		lastChange.Sub(scaled).Round(time.Second), typeMix(s))
	t.Logf("measurement: consolidation: %s", down.since(up))
	t.Logf("measurement: whole test: %s", down.since(baseline))
	// Nothing changed the NodePool or its EC2NodeClass: no node may have
	// drifted.
	if n := down.disrupted["drifted"] - baseline.disrupted["drifted"]; n > 0 {
		t.Errorf("%.0f NodeClaims were replaced as drifted, though neither the NodePool nor its EC2NodeClass changed", n)
	}
}

// waitAllRunning waits until each app has exactly its number of pods, all
// Running and Ready, and logs progress every 15 seconds.
func waitAllRunning(t *testing.T, timeout time.Duration, ns string, want map[string]int) {
	t.Helper()
	lastLog := time.Now()
	eventually(t, timeout, fmt.Sprintf("pods Running %v", want), func(ctx context.Context) error {
		list := &corev1.PodList{}
		if err := kube.List(ctx, list, client.InNamespace(ns)); err != nil {
			return err
		}
		total, running := map[string]int{}, map[string]int{}
		for i := range list.Items {
			p := &list.Items[i]
			if p.DeletionTimestamp != nil {
				continue
			}
			app := p.Labels["app"]
			total[app]++
			if p.Status.Phase == corev1.PodRunning && isPodReady(p) {
				running[app]++
			}
		}
		var problems []string
		for _, app := range slices.Sorted(maps.Keys(want)) {
			if total[app] != want[app] || running[app] != want[app] {
				problems = append(problems, fmt.Sprintf("%s: %d pods, %d Running", app, total[app], running[app]))
			}
		}
		if len(problems) == 0 {
			return nil
		}
		if time.Since(lastLog) > 15*time.Second {
			lastLog = time.Now()
			t.Logf("waiting: %s", strings.Join(problems, "; "))
		}
		return fmt.Errorf("%s", strings.Join(problems, "; "))
	})
}

// latencies are the scale-out's provisioning latencies, each sorted.
type latencies struct {
	// decided: pod created -> its first Nominated event (the provisioner's
	// decision for it: a new NodeClaim, or room on a node or NodeClaim
	// already there).
	decided []time.Duration
	// afterScheduler: kube-scheduler's first FailedScheduling event for the
	// pod -> its first Nominated event: the provisioner's own part, in
	// microseconds on both sides.
	afterScheduler []time.Duration
	// toClaim: pod created -> the NodeClaim created for it, for the pods
	// first nominated to a NodeClaim created after them.
	toClaim []time.Duration

	// pods counts the namespace's pods; notNominated those without a
	// Nominated event, and neverUnschedulable those of them that
	// kube-scheduler never reported unschedulable either: it bound them to
	// a node with room at its first attempt, so the provisioner had nothing
	// to decide for them.
	pods, notNominated, neverUnschedulable int
}

func (l latencies) String() string {
	return fmt.Sprintf("pod created -> first Nominated event, %d pods: p50 %s, p99 %s; kube-scheduler's first FailedScheduling -> first Nominated, %d pods: p50 %s, p99 %s; pod created -> its new NodeClaim created, %d pods: p50 %s, p99 %s (pods' creation times are whole seconds); %d of %d pods have no Nominated event, %d of them no FailedScheduling event from kube-scheduler either",
		len(l.decided), percentile(l.decided, 50), percentile(l.decided, 99),
		len(l.afterScheduler), percentile(l.afterScheduler, 50), percentile(l.afterScheduler, 99),
		len(l.toClaim), percentile(l.toClaim, 50), percentile(l.toClaim, 99),
		l.notNominated, l.pods, l.neverUnschedulable)
}

// nominationLatencies reads the scale-out's latencies from the namespace's
// pods, NodeClaims and events. Pods without the events are left out.
func nominationLatencies(ctx context.Context, ns string) (latencies, error) {
	var l latencies
	events := &corev1.EventList{}
	if err := kube.List(ctx, events, client.InNamespace(ns)); err != nil {
		return l, err
	}
	claims := &karpv1.NodeClaimList{}
	if err := kube.List(ctx, claims); err != nil {
		return l, err
	}
	createdClaim := map[string]time.Time{}
	for _, nc := range claims.Items {
		createdClaim[nc.Name] = nc.CreationTimestamp.Time
	}
	podList := &corev1.PodList{}
	if err := kube.List(ctx, podList, client.InNamespace(ns)); err != nil {
		return l, err
	}
	createdPod := map[string]time.Time{}
	for _, p := range podList.Items {
		createdPod[p.Name] = p.CreationTimestamp.Time
	}
	// An event written through events.k8s.io has its time in eventTime
	// (microseconds), one through core/v1 in firstTimestamp (seconds).
	at := func(e *corev1.Event) time.Time {
		if !e.EventTime.IsZero() {
			return e.EventTime.Time
		}
		return e.FirstTimestamp.Time
	}
	// The first event of a reason for each pod.
	first := func(reason string) map[string]*corev1.Event {
		out := map[string]*corev1.Event{}
		for i := range events.Items {
			e := &events.Items[i]
			if e.Reason != reason || e.InvolvedObject.Kind != "Pod" || at(e).IsZero() {
				continue
			}
			if f, seen := out[e.InvolvedObject.Name]; !seen || at(e).Before(at(f)) {
				out[e.InvolvedObject.Name] = e
			}
		}
		return out
	}
	nominated, failed := first("Nominated"), first("FailedScheduling")
	// The provisioner records FailedScheduling too, for pods it cannot
	// place; kube-scheduler's are the ones that count as "unschedulable".
	byScheduler := map[string]bool{}
	for i := range events.Items {
		e := &events.Items[i]
		if e.Reason == "FailedScheduling" && e.InvolvedObject.Kind == "Pod" && (e.ReportingController == corev1.DefaultSchedulerName || e.Source.Component == corev1.DefaultSchedulerName) {
			byScheduler[e.InvolvedObject.Name] = true
		}
	}
	l.pods = len(createdPod)
	for pod := range createdPod {
		if nominated[pod] == nil {
			l.notNominated++
			if !byScheduler[pod] {
				l.neverUnschedulable++
			}
		}
	}
	for pod, e := range nominated {
		created, ok := createdPod[pod]
		if !ok {
			continue
		}
		l.decided = append(l.decided, max(at(e).Sub(created), 0))
		if f, ok := failed[pod]; ok {
			l.afterScheduler = append(l.afterScheduler, max(at(e).Sub(at(f)), 0))
		}
		if _, claim, ok := strings.Cut(e.Message, "nodeclaim/"); ok && !createdClaim[claim].IsZero() && !createdClaim[claim].Before(created) {
			l.toClaim = append(l.toClaim, createdClaim[claim].Sub(created))
		}
	}
	slices.Sort(l.decided)
	slices.Sort(l.afterScheduler)
	slices.Sort(l.toClaim)
	return l, nil
}

// percentile is the p-th percentile of sorted durations (nearest rank).
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (p*len(sorted) + 99) / 100
	return sorted[min(max(i, 1), len(sorted))-1]
}

// usage is what the controller process had used at one moment.
type usage struct {
	at       time.Time
	cpu      time.Duration // user and system time
	peakRSS  int64         // VmHWM, bytes
	requests float64       // client_go_request_total
	byVerb   map[string]float64
	// disrupted counts karpenter_nodeclaims_disrupted_total by reason.
	disrupted map[string]float64
	launched  float64 // karpenter_nodeclaims_created_total
}

// disruptionReasons are the reason labels of karpenter_nodeclaims_disrupted_total.
var disruptionReasons = []string{"empty", "underutilized", "drifted", "expired", "interrupted", "unhealthy"}

// clockTicks is the unit of /proc/PID/stat's times (USER_HZ), 100 on Linux.
const clockTicks = 100

func measure(ctx context.Context, t *testing.T, c *controller) usage {
	t.Helper()
	u := usage{at: time.Now(), byVerb: map[string]float64{}, disrupted: map[string]float64{}}
	p, err := readProc(c.PID())
	if err != nil {
		t.Fatalf("reading the controller's /proc: %v", err)
	}
	u.cpu, u.peakRSS = p.cpu, p.peakRSS
	page, err := scrapePage(ctx, c.metrics)
	if err != nil {
		t.Fatalf("scraping the controller's metrics: %v", err)
	}
	if u.requests, err = sumMetric(page, kubemetrics.NameRequestTotal); err != nil {
		t.Fatal(err)
	}
	for _, verb := range []string{"GET", "LIST", "WATCH", "POST", "PUT", "PATCH", "DELETE"} {
		if u.byVerb[verb], err = sumMetric(page, kubemetrics.NameRequestTotal, `method="`+verb+`"`); err != nil {
			t.Fatal(err)
		}
	}
	for _, reason := range disruptionReasons {
		if u.disrupted[reason], err = sumMetric(page, "karpenter_nodeclaims_disrupted_total", `reason="`+reason+`"`); err != nil {
			t.Fatal(err)
		}
	}
	if u.launched, err = sumMetric(page, "karpenter_nodeclaims_created_total"); err != nil {
		t.Fatal(err)
	}
	return u
}

// procStat is what /proc says about a process at one moment.
type procStat struct {
	cpu     time.Duration // user and system time
	peakRSS int64         // VmHWM, bytes
	rss     int64         // VmRSS, bytes
}

// readProc reads a process's CPU time and resident memory from /proc.
func readProc(pid int) (procStat, error) {
	var p procStat
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return p, err
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(fields) < 13 {
		return p, fmt.Errorf("/proc/%d/stat: %d fields after the command, want at least 13", pid, len(fields))
	}
	// After "pid (comm)": state is field 3, utime 14 and stime 15.
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	p.cpu = time.Duration(utime+stime) * time.Second / clockTicks
	status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return p, err
	}
	kib := func(rest string) int64 {
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		return kb << 10
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			p.peakRSS = kib(rest)
		} else if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			p.rss = kib(rest)
		}
	}
	return p, nil
}

// since describes the usage between two measurements.
func (u usage) since(before usage) string {
	wall := u.at.Sub(before.at)
	var verbs []string
	for _, v := range []string{"GET", "LIST", "WATCH", "POST", "PUT", "PATCH", "DELETE"} {
		if n := u.byVerb[v] - before.byVerb[v]; n > 0 {
			verbs = append(verbs, fmt.Sprintf("%s %.0f", v, n))
		}
	}
	var disrupted []string
	for _, r := range disruptionReasons {
		if n := u.disrupted[r] - before.disrupted[r]; n > 0 {
			disrupted = append(disrupted, fmt.Sprintf("%s %.0f", r, n))
		}
	}
	if len(disrupted) == 0 {
		disrupted = []string{"none"}
	}
	return fmt.Sprintf("%s wall, controller CPU %s (%.0f%% of one core), peak RSS %d MiB, %.0f API requests (%s); %.0f NodeClaims created, disrupted: %s",
		wall.Round(100*time.Millisecond), (u.cpu - before.cpu).Round(10*time.Millisecond),
		100*float64(u.cpu-before.cpu)/float64(wall), u.peakRSS>>20, u.requests-before.requests, strings.Join(verbs, ", "),
		u.launched-before.launched, strings.Join(disrupted, ", "))
}

// typeMix counts the nodes of initialized NodeClaims that are not being
// deleted, by instance type.
func typeMix(s poolState) string {
	count := map[string]int{}
	for _, nc := range s.claims {
		if nc.DeletionTimestamp == nil && meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeInitialized) {
			count[nc.Labels[wellknown.LabelInstanceType]]++
		}
	}
	var parts []string
	for _, it := range slices.Sorted(maps.Keys(count)) {
		parts = append(parts, fmt.Sprintf("%d %s", count[it], it))
	}
	return strings.Join(parts, ", ")
}
