package runner

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	policyv1 "k8s.io/api/policy/v1"

	"github.com/stevedore-autoscaler/stevedore/sim/report"
	"github.com/stevedore-autoscaler/stevedore/sim/scenario"
)

// The scenarios of this file check that disruption behaves as Karpenter
// v1.14 does where stevedore once differed. Each runs one of the scenarios
// under testdata/parity.

// TestParityEmptyBudgets: budgets: [] is no limit at all, not the 10%
// default, which only an absent field gets.
func TestParityEmptyBudgets(t *testing.T) {
	doc := story(t, "testdata/parity/empty-budgets")
	if s := sampleAt(t, doc, 9*time.Minute); s.Nodes != 12 || s.RunningPods != 12 {
		t.Fatalf("before the scale-down: %+v, want 12 nodes with a pod each", s)
	}
	if got := maxInFlight(doc, report.ReasonEmpty); got != 12 {
		t.Errorf("at most %d empty nodes disrupted at once, want all 12 (budgets: [] limits nothing)", got)
	}
	if n := len(doc.Final.Nodes); n != 0 {
		t.Errorf("%d nodes left at the end, want none", n)
	}
}

// TestParitySpotToSpotOff: with SpotToSpotConsolidation off, a spot node
// whose pods would fit on a cheaper node is not replaced at all; stevedore
// once replaced it by on-demand, and that node later by spot again.
func TestParitySpotToSpotOff(t *testing.T) {
	doc := story(t, "testdata/parity/spot-to-spot-off")
	launched := eventsOf(doc, report.KindNodeClaimLaunched)
	if len(launched) != 1 || launched[0].CapacityType != "spot" {
		t.Fatalf("launches %+v, want the one spot node", launched)
	}
	for _, e := range eventsOf(doc, report.KindDisruptionStarted) {
		t.Errorf("%s disruption of %s at %s, want none: spot-to-spot consolidation is off", e.Reason, e.NodeClaim, since(doc, e.Time))
	}
	if n := doc.Final.Nodes; len(n) != 1 || n[0].CapacityType != "spot" {
		t.Errorf("final nodes %+v, want the original spot node", n)
	}
	allRunning(t, doc, 1)
}

// TestParityDaemonSetTimer: a DaemonSet pod landing on a node is not a pod
// event; it does not restart the node's consolidateAfter window.
func TestParityDaemonSetTimer(t *testing.T) {
	doc := story(t, "testdata/parity/daemonset-timer")
	started := eventsOf(doc, report.KindDisruptionStarted)
	if len(started) != 1 || started[0].Reason != report.ReasonEmpty {
		t.Fatalf("disruptions %+v, want the one empty node", started)
	}
	// Its pod left at 2m; consolidateAfter is 10m. The agent came at 10m.
	if at := since(doc, started[0].Time); at < 12*time.Minute || at > 14*time.Minute {
		t.Errorf("empty node disrupted at %s, want soon after 12m (the DaemonSet pod at 10m must not restart its window)", at)
	}
	allRunning(t, doc, 2)
}

// TestParityCandidateOrder: consolidation tries its candidates by price
// over (1 + the pods to reschedule), as Karpenter does. Of a m6i.2xlarge
// left with five web pods and a m6i.large left with one api pod, both
// consolidatable at once under a budget of one node, the 2xlarge goes
// first (0.384/6 > 0.096/2); by price per pod (0.384/5 < 0.096/1)
// stevedore once took the large node.
func TestParityCandidateOrder(t *testing.T) {
	doc := story(t, "testdata/parity/candidate-order")
	// Each NodeClaim's instance type and Node, from the events that name
	// them.
	itype, node := map[string]string{}, map[string]string{}
	for _, e := range doc.Events {
		if e.NodeClaim == "" {
			continue
		}
		if e.InstanceType != "" {
			itype[e.NodeClaim] = e.InstanceType
		}
		if e.Node != "" {
			node[e.NodeClaim] = e.Node
		}
	}
	var first *report.Decision
	for i := range doc.Decisions {
		if d := &doc.Decisions[i]; d.Reason == report.ReasonUnderutilized {
			first = d
			break
		}
	}
	if first == nil {
		t.Fatalf("no Underutilized decision; decisions %+v", doc.Decisions)
	}
	if at := since(doc, first.Time); at < 10*time.Minute {
		t.Fatalf("first consolidation at %s, want after the scale-down at 10m", at)
	}
	if got := itype[first.NodeClaim]; got != "m6i.2xlarge" {
		t.Errorf("first consolidated %s (%s), want the m6i.2xlarge: it has the higher price per rescheduling cost", first.NodeClaim, got)
	}
	if first.Allowed != 1 || first.Disrupting != 1 {
		t.Errorf("budget at the decision %+v, want 1 of 1 allowed", first.BudgetUse)
	}
	pods := podsOn(doc, node[first.NodeClaim], first.Time)
	web := 0
	for p := range pods {
		if strings.HasPrefix(p, "Pod/shop/web-") {
			web++
		}
	}
	if len(pods) != 5 || web != 5 {
		t.Errorf("pods on the first node consolidated %v, want the five web pods", slices.Sorted(maps.Keys(pods)))
	}
	allRunning(t, doc, 6)
}

// TestParityDaemonSetPodsBlock: Karpenter keeps a node whose DaemonSet pods
// forbid its disruption, as it does for any other pod. Each scenario leaves
// one of two nodes with only its DaemonSet pod at 5m; the DaemonSet pods
// either carry karpenter.sh/do-not-disrupt or are covered by a
// PodDisruptionBudget that allows no eviction. stevedore once looked at
// neither for DaemonSet pods and removed the node as empty. Each case runs
// its scenario a second time without the DaemonSet pods' protection (the
// annotation dropped, the budget deleted), where the node does go: that is
// what shows the protection, nothing else, keeps it.
func TestParityDaemonSetPodsBlock(t *testing.T) {
	for _, tc := range []struct {
		name, path string
		// code and note are what the DisruptionBlocked events must say.
		code, note string
		// unprotect takes the DaemonSet pods' protection out of the loaded
		// scenario; it fails the test when the scenario has none to take.
		unprotect func(t *testing.T, run *scenario.Run)
	}{{
		name: "do-not-disrupt",
		path: "testdata/parity/daemonset-do-not-disrupt",
		code: "(DoNotDisruptPod)",
		note: "karpenter.sh/do-not-disrupt=true",
		unprotect: func(t *testing.T, run *scenario.Run) {
			for _, o := range run.Objects {
				if ds, ok := o.Object.(*appsv1.DaemonSet); ok && ds.Name == "agent" {
					if ds.Spec.Template.Annotations["karpenter.sh/do-not-disrupt"] != "true" {
						t.Fatal("the agent DaemonSet's pods no longer carry do-not-disrupt; update this test")
					}
					delete(ds.Spec.Template.Annotations, "karpenter.sh/do-not-disrupt")
					return
				}
			}
			t.Fatal("the scenario has no agent DaemonSet; update this test")
		},
	}, {
		name: "pdb",
		path: "testdata/parity/daemonset-pdb",
		code: "(PDBBlocked)",
		note: "PodDisruptionBudget kube-system/agent allows no disruption of pod agent-",
		unprotect: func(t *testing.T, run *scenario.Run) {
			kept := run.Objects[:0]
			for _, o := range run.Objects {
				if _, ok := o.Object.(*policyv1.PodDisruptionBudget); !ok {
					kept = append(kept, o)
				}
			}
			if len(kept) == len(run.Objects) {
				t.Fatal("the scenario has no PodDisruptionBudget; update this test")
			}
			run.Objects = kept
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			doc := story(t, tc.path)
			if s := sampleAt(t, doc, 4*time.Minute); s.Nodes != 2 || s.RunningPods != 4 {
				t.Fatalf("before the scale-down: %+v, want 2 nodes with a web and an agent pod each", s)
			}
			for _, d := range doc.Decisions {
				if d.Reason == report.ReasonEmpty || d.Reason == report.ReasonUnderutilized {
					t.Errorf("%s decision for %s at %s, want none: the agent's pods protect every node", d.Reason, d.NodeClaim, since(doc, d.Time))
				}
			}
			for _, e := range eventsOf(doc, report.KindDisruptionStarted) {
				t.Errorf("%s disruption of %s at %s, want none", e.Reason, e.NodeClaim, since(doc, e.Time))
			}
			blocked := 0
			for _, e := range eventsOf(doc, report.KindDisruptionBlocked) {
				if e.NodeClaim != "" && strings.Contains(e.Message, tc.note) && strings.Contains(e.Message, tc.code) {
					blocked++
				}
			}
			if blocked == 0 {
				t.Errorf("no DisruptionBlocked event saying %q %s; blocked events %+v", tc.note, tc.code, eventsOf(doc, report.KindDisruptionBlocked))
			}
			if n := len(doc.Final.Nodes); n != 2 {
				t.Errorf("%d nodes at the end, want both", n)
			}
			allRunning(t, doc, 3)

			// The control: unprotected, the empty node goes.
			run, problems, err := scenario.Load([]string{tc.path}, testScheme(t))
			if err != nil {
				t.Fatalf("%v: %v", err, problems)
			}
			tc.unprotect(t, run)
			free := runLoaded(t, run)
			consolidated := 0
			for _, d := range free.Decisions {
				if d.Reason == report.ReasonEmpty || d.Reason == report.ReasonUnderutilized {
					consolidated++
				}
			}
			if consolidated == 0 {
				t.Errorf("unprotected: no Empty or Underutilized decision; decisions %+v", free.Decisions)
			}
			if n := len(free.Final.Nodes); n != 1 {
				t.Errorf("unprotected: %d nodes at the end, want 1", n)
			}
			allRunning(t, free, 2)
		})
	}
}

// TestParityMinValuesBestEffort: with MIN_VALUES_POLICY=BestEffort, pods
// whose instance types fall short of the NodePool's minValues launch with
// it relaxed; stevedore once treated BestEffort as Strict and left them
// pending. Each pod opens its own node, since a pod joining a node may not
// relax it further.
func TestParityMinValuesBestEffort(t *testing.T) {
	doc := story(t, "testdata/parity/min-values-best-effort")
	launched := eventsOf(doc, report.KindNodeClaimLaunched)
	if len(launched) != 3 || len(doc.Final.Nodes) != 3 {
		t.Fatalf("launches %+v and final nodes %+v, want three", launched, doc.Final.Nodes)
	}
	for _, n := range doc.Final.Nodes {
		if n.InstanceType != "m6i.large" || n.Pods != 1 {
			t.Errorf("final node %+v, want a m6i.large with one pod", n)
		}
	}
	for _, e := range eventsOf(doc, report.KindDisruptionStarted) {
		t.Errorf("%s disruption of %s at %s, want none", e.Reason, e.NodeClaim, since(doc, e.Time))
	}
	allRunning(t, doc, 3)
}
