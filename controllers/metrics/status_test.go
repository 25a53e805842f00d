package metrics

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/state"
)

// histogramTotals returns the observation count and sum of family name.
func histogramTotals(t *testing.T, g prometheus.Gatherer, name string) (uint64, float64) {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			n += m.GetHistogram().GetSampleCount()
			sum += m.GetHistogram().GetSampleSum()
		}
	}
	return n, sum
}

func counterTotal(t *testing.T, g prometheus.Gatherer, name string) float64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var v float64
	for _, f := range families {
		if f.GetName() == name {
			for _, m := range f.GetMetric() {
				v += m.GetCounter().GetValue()
			}
		}
	}
	return v
}

// TestStatusTransitionsObservedWhenTheyHappen changes an object's Ready
// condition several times without a scrape in between: every transition
// is counted and timed, as Karpenter's status controllers observe each
// change they reconcile, and a scrape changes nothing.
func TestStatusTransitionsObservedWhenTheyHappen(t *testing.T) {
	pool := func(status string, at time.Time) client.Object {
		return &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: karpv1.NodePoolStatus{Conditions: []metav1.Condition{cond("Ready", status, at)}}}
	}
	claim := func(status string, at time.Time) client.Object {
		return &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: claimLabels}, Status: karpv1.NodeClaimStatus{Conditions: []metav1.Condition{cond("Ready", status, at)}}}
	}
	node := func(status string, at time.Time) client.Object {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: claimLabels}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionStatus(status), LastTransitionTime: metav1.NewTime(at)}}}}
	}
	class := func(status string, at time.Time) client.Object {
		return &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "e"}, Status: awsv1.EC2NodeClassStatus{Conditions: []metav1.Condition{cond("Ready", status, at)}}}
	}
	for _, tc := range []struct {
		kind       string
		obj        func(status string, at time.Time) client.Object
		deprecated bool
	}{
		{"nodepool", pool, true},
		{"nodeclaim", claim, true},
		{"node", node, false},
		{"ec2nodeclass", class, true},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			m, reg := newMetrics(t)
			// False at t0, True 10s later, False 30s after that, True
			// again 60s after that: three changes, one scrape at the end.
			m.ObserveStatus(tc.obj("False", t0))
			m.ObserveStatus(tc.obj("True", t0.Add(10*time.Second)))
			m.ObserveStatus(tc.obj("True", t0.Add(10*time.Second))) // a resync: no change
			m.ObserveStatus(tc.obj("False", t0.Add(40*time.Second)))
			m.ObserveStatus(tc.obj("True", t0.Add(100*time.Second)))
			prefix := "operator_" + tc.kind + "_status_condition_"
			if got := counterTotal(t, reg, prefix+"transitions_total"); got != 4 {
				t.Errorf("%stransitions_total = %v, want 4 (the first observation and three changes)", prefix, got)
			}
			n, sum := histogramTotals(t, reg, prefix+"transition_seconds")
			if n != 3 || sum != 10+30+60 {
				t.Errorf("%stransition_seconds: %d observations summing %vs, want 3 summing 100s", prefix, n, sum)
			}
			depN, _ := histogramTotals(t, reg, "operator_status_condition_transition_seconds")
			if want := map[bool]uint64{true: 3, false: 0}[tc.deprecated]; depN != want {
				t.Errorf("operator_status_condition_transition_seconds: %d observations, want %d", depN, want)
			}
			if _, err := reg.Gather(); err != nil {
				t.Fatal(err)
			}
			if n2, _ := histogramTotals(t, reg, prefix+"transition_seconds"); n2 != n {
				t.Errorf("a scrape changed the observations from %d to %d", n, n2)
			}
		})
	}
}

// TestTerminationObservedWhenTheObjectGoes checks the termination duration:
// from the deletion request to the moment the object is gone, observed
// then, whether or not a scrape saw it terminating.
func TestTerminationObservedWhenTheObjectGoes(t *testing.T) {
	m, reg := newMetrics(t)
	clk := clocktesting.NewFakeClock(t0)
	m.WatchState(StateOptions{State: state.NewCluster(), Clock: clk})
	deleting := metav1.NewTime(t0)
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "p", DeletionTimestamp: &deleting, Finalizers: []string{"x"}}}
	m.ObserveStatus(np)
	clk.Step(90 * time.Second)
	m.ObserveStatusGone(&karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "p"}})
	n, sum := histogramTotals(t, reg, "operator_nodepool_termination_duration_seconds")
	if n != 1 || sum != 90 {
		t.Errorf("termination: %d observations summing %vs, want 1 of 90s", n, sum)
	}
	// Gone again (a repeated delete event): nothing more.
	m.ObserveStatusGone(&karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "p"}})
	if n, _ := histogramTotals(t, reg, "operator_nodepool_termination_duration_seconds"); n != 1 {
		t.Errorf("a second delete observed again: %d observations", n)
	}
}

// clusterStateFamilies are the families Karpenter's
// --disable-cluster-state-observability turns off that exerciseState
// feeds.
var clusterStateFamilies = []string{
	Namespace + "_nodes_allocatable", Namespace + "_nodes_total_pod_requests", Namespace + "_nodes_total_pod_limits",
	Namespace + "_nodes_total_daemon_requests", Namespace + "_nodes_total_daemon_limits", Namespace + "_nodes_system_overhead",
	Namespace + "_nodes_current_lifetime_seconds", Namespace + "_cluster_utilization_percent",
	Namespace + "_pods_state", Namespace + "_pods_unbound_time_seconds", Namespace + "_pods_unstarted_time_seconds",
	Namespace + "_pods_startup_duration_seconds", Namespace + "_pods_bound_duration_seconds",
	Namespace + "_nodepools_usage", Namespace + "_nodepools_limit", Namespace + "_nodepools_cost_total",
	"operator_nodeclaim_status_condition_count", "operator_nodeclaim_status_condition_current_status_seconds",
	"operator_nodeclaim_status_condition_transitions_total", "operator_nodeclaim_status_condition_transition_seconds",
	"operator_nodeclaim_termination_current_time_seconds", "operator_nodeclaim_termination_duration_seconds",
	"operator_node_status_condition_count", "operator_node_status_condition_current_status_seconds",
	"operator_node_status_condition_transitions_total", "operator_node_status_condition_transition_seconds",
	"operator_node_termination_current_time_seconds", "operator_node_termination_duration_seconds",
	"operator_nodepool_status_condition_count", "operator_nodepool_status_condition_current_status_seconds",
	"operator_nodepool_status_condition_transitions_total", "operator_nodepool_status_condition_transition_seconds",
	"operator_nodepool_termination_current_time_seconds", "operator_nodepool_termination_duration_seconds",
}

// TestDisableClusterStateObservability feeds the metrics with the switch
// off and on: with it on, the families of Karpenter's pod, node and
// NodePool metrics controllers and of its NodeClaim, Node and NodePool
// status controllers are absent, the EC2NodeClass status metrics and the
// rest stay.
func TestDisableClusterStateObservability(t *testing.T) {
	for _, disabled := range []bool{false, true} {
		m, reg := newMetrics(t)
		if disabled {
			m.DisableClusterStateObservability()
		}
		var families []*dto.MetricFamily
		exercise(t, m, func() {
			var err error
			if families, err = reg.Gather(); err != nil {
				t.Fatal(err)
			}
		})
		served := map[string]bool{}
		for _, f := range families {
			served[f.GetName()] = len(f.GetMetric()) > 0
		}
		for _, name := range clusterStateFamilies {
			if served[name] == disabled {
				t.Errorf("disabled=%v: %s served=%v", disabled, name, served[name])
			}
		}
		for _, name := range []string{"operator_ec2nodeclass_status_condition_count", "operator_ec2nodeclass_status_condition_transitions_total",
			"operator_ec2nodeclass_termination_duration_seconds", "operator_status_condition_count", Namespace + "_nodeclaims_created_total",
			Namespace + "_scheduler_pending_pods_by_effective_zone_count", Namespace + "_nodepools_allowed_disruptions"} {
			if !served[name] {
				t.Errorf("disabled=%v: %s not served", disabled, name)
			}
		}
	}
}

// recordedEvents records what a status watch records.
type recordedEvents struct{ lines []string }

func (r *recordedEvents) Eventf(regarding runtime.Object, _ runtime.Object, eventType, reason, _, note string, args ...any) {
	o := regarding.(client.Object)
	r.lines = append(r.lines, fmt.Sprintf("%s %s %s: %s", o.GetName(), eventType, reason, fmt.Sprintf(note, args...)))
}

// TestStatusWatchRecordsKarpentersEvents drives the watch's event handlers:
// before it starts (as on a replica that is not the leader) nothing is
// observed; then a condition that changes status records an event named
// after the condition's type, a condition that appears none, and a
// finalizer removed (or an object gone with its finalizers) records
// Finalized, as Karpenter's status controllers do.
func TestStatusWatchRecordsKarpentersEvents(t *testing.T) {
	m, reg := newMetrics(t)
	rec := &recordedEvents{}
	w := &statusWatch{m: m, rec: rec}
	claim := func(ready string, at time.Time, finalizers ...string) *karpv1.NodeClaim {
		c := cond("Ready", ready, at)
		c.Message = map[string]string{"False": "kubelet not ready"}[ready]
		return &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Finalizers: finalizers}, Status: karpv1.NodeClaimStatus{Conditions: []metav1.Condition{c}}}
	}
	w.OnAdd(claim("Unknown", t0, "karpenter.sh/termination"), false)
	if n := counterTotal(t, reg, "operator_nodeclaim_status_condition_transitions_total"); n != 0 || len(rec.lines) != 0 {
		t.Fatalf("observed before the watch started: %v transitions, events %q", n, rec.lines)
	}
	w.active.Store(true)
	w.OnAdd(claim("Unknown", t0, "karpenter.sh/termination"), false)
	w.OnUpdate(nil, claim("False", t0.Add(time.Second), "karpenter.sh/termination"))
	w.OnUpdate(nil, claim("True", t0.Add(2*time.Second), "karpenter.sh/termination", "example.com/other"))
	w.OnUpdate(nil, claim("True", t0.Add(2*time.Second), "example.com/other"))
	w.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "c", Obj: claim("True", t0.Add(2*time.Second), "example.com/other")})
	want := []string{
		"c Normal Ready: Status condition transitioned, Type: Ready, Status: Unknown -> False, Reason: ReadyFalse, Message: kubelet not ready",
		"c Normal Ready: Status condition transitioned, Type: Ready, Status: False -> True, Reason: ReadyTrue",
		"c Normal Finalized: Finalized karpenter.sh/termination",
		"c Normal Finalized: Finalized example.com/other",
	}
	if !slices.Equal(rec.lines, want) {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(rec.lines, "\n"), strings.Join(want, "\n"))
	}

	// With cluster-state observability off, NodeClaims record nothing;
	// EC2NodeClasses still do.
	off, _ := newMetrics(t)
	off.DisableClusterStateObservability()
	rec = &recordedEvents{}
	w = &statusWatch{m: off, rec: rec}
	w.active.Store(true)
	w.OnAdd(claim("False", t0), false)
	w.OnUpdate(nil, claim("True", t0.Add(time.Second)))
	class := func(ready string, at time.Time) *awsv1.EC2NodeClass {
		return &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "e"}, Status: awsv1.EC2NodeClassStatus{Conditions: []metav1.Condition{cond("Ready", ready, at)}}}
	}
	w.OnAdd(class("False", t0), false)
	w.OnUpdate(nil, class("True", t0.Add(time.Second)))
	if want := []string{"e Normal Ready: Status condition transitioned, Type: Ready, Status: False -> True, Reason: ReadyTrue"}; !slices.Equal(rec.lines, want) {
		t.Errorf("with observability off, events %q, want %q", rec.lines, want)
	}
}
