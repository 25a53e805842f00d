package disruption

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/controllers/provisioning"
	decide "github.com/stevedore-autoscaler/stevedore/decide/disruption"
	"github.com/stevedore-autoscaler/stevedore/test/environment"
)

// TestConsolidationEvents: the decision's consolidation moves are reported
// as Karpenter reports them. A move that replaces nodes gets
// ConsolidationCandidate on each candidate's Node and NodeClaim, even when
// the Balanced policy then turns it down; a move that only deletes gets
// none. A command a Balanced NodePool approves gets ConsolidationApproved:
// on the Node and NodeClaim for one node, on the NodePool for several.
//
// On-demand prices per hour: c6i.large 0.085, m6i.large 0.096, c6i.xlarge
// 0.17, m6i.xlarge 0.192.
func TestConsolidationEvents(t *testing.T) {
	type node struct {
		itype          string
		cpu            string // of its one pod
		consolidatable bool
	}
	// want is an event expected once: on node i's NodeClaim and Node, or on
	// the NodePool when i is -1.
	type want struct {
		reason string
		i      int
	}
	for _, tc := range []struct {
		name     string
		balanced bool
		// m6iOnly restricts the NodePool to m6i.large and m6i.xlarge.
		m6iOnly bool
		// all lets every node be disrupted at once (the default budget
		// allows one of a few).
		all   bool
		nodes []node
		want  []want
		// none are reasons no object may get.
		none []string
	}{{
		// The 500m pod fits nowhere else; m6i.large, c6i.large and
		// c6i.xlarge cost less than the node, so the move saves
		// 0.192-0.17.
		name:  "a replace move",
		nodes: []node{{"m6i.xlarge", "500m", true}},
		want:  []want{{ReasonConsolidationCandidate, 0}},
		none:  []string{ReasonConsolidationApproved},
	}, {
		// The same move under Balanced: 0.022 of the pool's 0.192 for all
		// of its disruption scores 0.11.
		name:     "Balanced turns a replace move down",
		balanced: true,
		nodes:    []node{{"m6i.xlarge", "500m", true}},
		want:     []want{{ReasonConsolidationCandidate, 0}, {ReasonUnconsolidatable, 0}},
		none:     []string{ReasonConsolidationApproved},
	}, {
		// Only m6i.large may replace the m6i.xlarge: 0.096 of the pool's
		// 0.384 (25%) for a third of its disruption scores 0.75. The full
		// nodes' pods leave no room for the 500m pod.
		name:     "Balanced approves a replace move",
		balanced: true,
		m6iOnly:  true,
		nodes:    []node{{"m6i.large", "1600m", false}, {"m6i.large", "1600m", false}, {"m6i.xlarge", "500m", true}},
		want:     []want{{ReasonConsolidationCandidate, 2}, {ReasonConsolidationApproved, 2}},
	}, {
		// The pod of node 1 fits beside node 0's: deleting node 1 saves
		// half of the pool's price for half of its disruption.
		name:     "Balanced approves a delete move, which is no candidate",
		balanced: true,
		nodes:    []node{{"m6i.large", "500m", false}, {"m6i.large", "500m", true}},
		want:     []want{{ReasonConsolidationApproved, 1}},
		none:     []string{ReasonConsolidationCandidate},
	}, {
		// Both nodes' pods on one c6i.large: 0.192-0.085 of 0.192 for all
		// of the disruption scores 0.56.
		name:     "Balanced approves a move of several nodes on the NodePool",
		balanced: true,
		all:      true,
		nodes:    []node{{"m6i.large", "500m", true}, {"m6i.large", "500m", true}},
		want:     []want{{ReasonConsolidationCandidate, 0}, {ReasonConsolidationCandidate, 1}, {ReasonConsolidationApproved, -1}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "consolidation-events", 331)
			np := e.CreateNodePool(func(np *karpv1.NodePool) {
				if tc.balanced {
					np.Spec.Disruption.ConsolidationPolicy = karpv1.ConsolidationPolicyBalanced
				}
				if tc.all {
					np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "100%"}}
				}
				if tc.m6iOnly {
					np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, karpv1.NodeSelectorRequirementWithMinValues{
						Key: wellknown.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"m6i.large", "m6i.xlarge"}})
				}
			})
			var claims, nodes []string
			for i, n := range tc.nodes {
				nc := e.node(n.itype)
				e.pod(fmt.Sprintf("pod-%d", i), nc.Status.NodeName, n.cpu)
				if n.consolidatable {
					e.setCondition(nc.Name, karpv1.ConditionTypeConsolidatable, metav1.ConditionTrue, "Consolidatable")
				}
				claims, nodes = append(claims, nc.Name), append(nodes, nc.Status.NodeName)
			}
			e.pass()

			for _, w := range tc.want {
				objs := []environment.Event{{Kind: "NodePool", Name: np.Name}}
				if w.i >= 0 {
					objs = []environment.Event{{Kind: "NodeClaim", Name: claims[w.i]}, {Kind: "Node", Name: nodes[w.i]}}
				}
				for _, o := range objs {
					o.Reason, o.Type = w.reason, corev1.EventTypeNormal
					evs := e.Events.Matching(o)
					if len(evs) != 1 {
						t.Errorf("%s events about %s %s: %d, want 1; events:\n%s", w.reason, o.Kind, o.Name, len(evs), e.Events)
						continue
					}
					switch w.reason {
					case ReasonConsolidationApproved:
						if !strings.Contains(evs[0].Note, ">= threshold") {
							t.Errorf("approval %q does not give the score", evs[0].Note)
						}
					case ReasonUnconsolidatable:
						if !strings.Contains(evs[0].Note, decide.CodeBalancedScore) {
							t.Errorf("Unconsolidatable %q is not the Balanced rejection", evs[0].Note)
						}
					case ReasonConsolidationCandidate:
						if !strings.Contains(evs[0].Note, "saves $") {
							t.Errorf("candidate %q does not give the savings", evs[0].Note)
						}
					}
				}
			}
			for _, reason := range tc.none {
				if evs := e.Events.Matching(environment.Event{Reason: reason}); len(evs) != 0 {
					t.Errorf("%s events %+v, want none", reason, evs)
				}
			}
			// A command's candidates are reported once: the command waits
			// for its validation, and no decision is made meanwhile.
			e.Clock.Step(Period)
			e.pass()
			for _, w := range tc.want {
				if w.reason != ReasonConsolidationCandidate {
					continue
				}
				if n := len(e.Events.About(claims[w.i], w.reason)); n != 1 {
					t.Errorf("%d %s events about %s after another pass, want still 1", n, w.reason, claims[w.i])
				}
			}
		})
	}
}

// TestDoNotDisruptEvents: the pods of a node the controller considers get
// an event of what their do-not-disrupt annotation does, other than
// "true": still protecting (until when), run out, or ignored as invalid.
func TestDoNotDisruptEvents(t *testing.T) {
	e := newEnv(t, "do-not-disrupt", 332)
	e.CreateNodePool()
	nc := e.node("m6i.large")
	node := nc.Status.NodeName
	started := e.Clock.Now()
	// In name order, the order they are read in: the one that protects
	// the node comes last, so that all three are read.
	for _, p := range [][2]string{{"a-invalid", "soon"}, {"b-short", "1m"}, {"c-long", "2h"}} {
		e.pod(p[0], node, "100m", func(pod *corev1.Pod) {
			pod.Annotations = map[string]string{wellknown.AnnotationDoNotDisrupt: p[1]}
		})
	}
	e.Clock.Step(90 * time.Second)
	e.pass()
	until := started.Add(2 * time.Hour).UTC().Format(time.RFC3339)
	for _, tc := range []struct {
		pod, reason, typ, note string
	}{
		{"a-invalid", ReasonInvalidDoNotDisruptAnnotation, corev1.EventTypeWarning, `"soon"`},
		{"b-short", ReasonDoNotDisruptGracePeriodElapsed, corev1.EventTypeNormal, "run out"},
		{"c-long", ReasonDoNotDisruptUntil, corev1.EventTypeNormal, until},
	} {
		evs := e.Events.Matching(environment.Event{Kind: "Pod", Namespace: e.Name, Name: tc.pod})
		if len(evs) != 1 || evs[0].Reason != tc.reason || evs[0].Type != tc.typ || !strings.Contains(evs[0].Note, tc.note) {
			t.Errorf("events about %s: %+v, want one %s %s saying %s", tc.pod, evs, tc.typ, tc.reason, tc.note)
		}
	}

	// Once the long one has run out too, it says so.
	e.Clock.Step(2 * time.Hour)
	e.pass()
	if evs := e.Events.About("c-long", ReasonDoNotDisruptGracePeriodElapsed); len(evs) != 1 {
		t.Errorf("%s events about c-long after its duration: %+v, want one", ReasonDoNotDisruptGracePeriodElapsed, evs)
	}
	if n := len(e.Events.About("c-long", ReasonDoNotDisruptUntil)); n != 1 {
		t.Errorf("%d %s events about c-long, want still 1", n, ReasonDoNotDisruptUntil)
	}
}

// TestNoCompatibleInstanceTypesEvent: deciding with a NodePool whose
// requirements leave no instance type to launch replacements from says so
// on the NodePool, as the provisioner does; a static NodePool, which
// launches for its replicas only, is left out.
func TestNoCompatibleInstanceTypesEvent(t *testing.T) {
	for _, tc := range []struct {
		name   string
		static bool
		want   int
	}{{"dynamic", false, 1}, {"static", true, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "no-compatible", 333)
			np := e.CreateNodePool(func(np *karpv1.NodePool) {
				np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, karpv1.NodeSelectorRequirementWithMinValues{
					Key: wellknown.LabelInstanceFamily, Operator: corev1.NodeSelectorOpIn, Values: []string{"r8g"}})
				if tc.static {
					np.Spec.Replicas = new(int64)
				}
			})
			e.pass()
			evs := e.Events.Matching(environment.Event{Kind: "NodePool", Name: np.Name, Type: corev1.EventTypeWarning, Reason: provisioning.ReasonNoCompatibleInstanceTypes})
			if len(evs) != tc.want {
				t.Errorf("%s events %+v, want %d", provisioning.ReasonNoCompatibleInstanceTypes, evs, tc.want)
			}
		})
	}
}
