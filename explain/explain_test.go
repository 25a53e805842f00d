package explain

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud"
	"github.com/stevedore-autoscaler/stevedore/decide/disruption"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
)

// target names what a case explains.
type target struct{ kind, name string }

func explainTarget(in Input, tg target) (*Explanation, error) {
	switch tg.kind {
	case KindPod:
		ns, name, _ := strings.Cut(tg.name, "/")
		return Pod(in, ns, name)
	case KindNode:
		return Node(in, tg.name)
	default:
		return NodePool(in, tg.name)
	}
}

func withTaint(np *karpv1.NodePool) {
	np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "nvidia.com/gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}}
}

func withBudgets(b ...karpv1.Budget) func(*karpv1.NodePool) {
	return func(np *karpv1.NodePool) { np.Spec.Disruption.Budgets = b }
}

func withCPULimit(cpu string) func(*karpv1.NodePool) {
	return func(np *karpv1.NodePool) {
		np.Spec.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	}
}

func annotated(k, v string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Annotations = map[string]string{k: v} }
}

// TestGolden explains one object per reason and compares the text with
// testdata/<case>.golden.
func TestGolden(t *testing.T) {
	tests := []struct {
		name    string
		build   func(w *world) target
		verdict string
		codes   []string
	}{
		// Pods.
		{"pod_bound", func(w *world) target {
			w.pool("default")
			n := w.node("default", nodeOpts{})
			w.pod("web-1", n, "500m", "512Mi")
			return target{KindPod, "default/web-1"}
		}, VerdictBound, nil},
		{"pod_would_launch", func(w *world) target {
			w.pool("default")
			w.pod("web-1", "", "1500m", "2Gi")
			w.pod("web-2", "", "1500m", "2Gi")
			return target{KindPod, "default/web-1"}
		}, VerdictWouldLaunch, nil},
		{"pod_fits_existing", func(w *world) target {
			w.pool("default")
			w.node("default", nodeOpts{})
			w.pod("web-1", "", "500m", "512Mi")
			return target{KindPod, "default/web-1"}
		}, VerdictFitsExisting, nil},
		{"pod_fits_in_flight", func(w *world) target {
			w.pool("default")
			w.node("default", nodeOpts{inFlight: true})
			w.pod("web-1", "", "500m", "512Mi")
			return target{KindPod, "default/web-1"}
		}, VerdictFitsExisting, nil},
		{"pod_unschedulable", func(w *world) target {
			w.pool("default")
			w.pool("gpu", withTaint)
			w.pool("arm")
			w.skip("arm", "NodeClassNotReady", "NodeClass default is not ready: SubnetsReady is False (SubnetsNotFound)")
			w.pod("big", "", "30", "8Gi")
			return target{KindPod, "default/big"}
		}, VerdictUnschedulable, []string{"NodeClassNotReady", packer.CodeNoInstanceTypeFits, packer.CodeTaintNotTolerated}},
		{"pod_limit_exceeded", func(w *world) target {
			w.pool("default", withCPULimit("4"))
			n := w.node("default", nodeOpts{})
			w.pod("fill", n, "3500m", "1Gi")
			w.pod("web-1", "", "1500m", "1Gi")
			return target{KindPod, "default/web-1"}
		}, VerdictUnschedulable, []string{packer.CodeLimitExceeded}},
		{"pod_awaiting_scheduler", func(w *world) target {
			w.pool("default")
			w.pod("web-1", "", "500m", "512Mi", func(p *corev1.Pod) { p.Status.Conditions = nil })
			return target{KindPod, "default/web-1"}
		}, VerdictNotProvisionable, []string{CodeAwaitingScheduler}},

		// Nodes.
		{"node_empty_would_delete", func(w *world) target {
			w.pool("default")
			return target{KindNode, w.node("default", nodeOpts{})}
		}, VerdictWouldDisrupt, nil},
		{"node_do_not_disrupt_pod", func(w *world) target {
			w.pool("default")
			n := w.node("default", nodeOpts{})
			w.node("default", nodeOpts{})
			w.pod("batch-1", n, "500m", "512Mi", annotated(wellknown.AnnotationDoNotDisrupt, "true"))
			return target{KindNode, n}
		}, VerdictKept, []string{disruption.CodeDoNotDisruptPod}},
		{"node_do_not_disrupt_node", func(w *world) target {
			w.pool("default")
			return target{KindNode, w.node("default", nodeOpts{doNotDisrupt: true})}
		}, VerdictKept, []string{disruption.CodeDoNotDisruptNode}},
		{"node_pdb", func(w *world) target {
			w.pool("default")
			n := w.node("default", nodeOpts{})
			w.node("default", nodeOpts{})
			w.pod("web-1", n, "500m", "512Mi")
			w.pdb("web", 0)
			return target{KindNode, n}
		}, VerdictKept, []string{disruption.CodePDBBlocked}},
		{"node_budget", func(w *world) target {
			w.pool("default", withBudgets(karpv1.Budget{Nodes: "0", Schedule: ptr.To("0 9 * * mon-fri"), Duration: &karpv1.Duration{Duration: 8 * time.Hour}},
				karpv1.Budget{Nodes: "100%"}))
			return target{KindNode, w.node("default", nodeOpts{})}
		}, VerdictKept, []string{disruption.CodeBudget}},
		{"node_not_consolidatable", func(w *world) target {
			w.pool("default", func(np *karpv1.NodePool) {
				np.Spec.Disruption.ConsolidateAfter = karpv1.NewNillableDuration(30 * time.Minute)
			})
			n := w.node("default", nodeOpts{notConsolidatable: true, lastPodEvent: 10 * time.Minute})
			w.node("default", nodeOpts{})
			w.pod("web-1", n, "500m", "512Mi")
			return target{KindNode, n}
		}, VerdictKept, []string{disruption.CodeNotConsolidatable}},
		{"node_consolidate_never", func(w *world) target {
			w.pool("default", func(np *karpv1.NodePool) {
				np.Spec.Disruption.ConsolidationPolicy = karpv1.ConsolidationPolicyWhenEmpty
				np.Spec.Disruption.ConsolidateAfter = karpv1.NeverDuration()
			})
			return target{KindNode, w.node("default", nodeOpts{})}
		}, VerdictKept, []string{disruption.CodeNotConsolidatable}},
		{"node_not_cheaper", func(w *world) target {
			w.pool("default")
			n := w.node("default", nodeOpts{itype: "m6i.large"})
			w.pod("web-1", n, "1500m", "4Gi")
			return target{KindNode, n}
		}, VerdictKept, []string{disruption.CodeNotCheaper}},
		{"node_pods_do_not_fit", func(w *world) target {
			w.pool("default")
			n := w.node("default", nodeOpts{labels: map[string]string{"example.com/disk": "local-ssd"}})
			w.pod("db-0", n, "500m", "512Mi", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"example.com/disk": "local-ssd"} })
			return target{KindNode, n}
		}, VerdictKept, []string{disruption.CodePodsDoNotFit}},
		{"node_drifted_replace", func(w *world) target {
			w.pool("default")
			n := w.node("default", nodeOpts{drifted: 2 * time.Hour})
			w.pod("web-1", n, "3", "4Gi")
			return target{KindNode, n}
		}, VerdictWouldDisrupt, nil},
		{"node_disrupting", func(w *world) target {
			w.pool("default")
			n := w.node("default", nodeOpts{disrupting: "Drifted", drifted: time.Hour})
			return target{KindNode, n}
		}, VerdictDisrupting, []string{disruption.CodeDeleting}},

		{"node_unmanaged", func(w *world) target {
			w.pool("default")
			return target{KindNode, w.node("", nodeOpts{unmanaged: true})}
		}, VerdictKept, []string{disruption.CodeUnmanaged}},
		{"node_in_flight", func(w *world) target {
			w.pool("default")
			return target{KindNode, w.node("default", nodeOpts{inFlight: true})}
		}, VerdictKept, []string{disruption.CodeNotRegistered}},

		// NodePools.
		{"nodepool_open", func(w *world) target {
			w.pool("default")
			w.node("default", nodeOpts{})
			return target{KindNodePool, "default"}
		}, VerdictOpen, nil},
		{"nodepool_budget_window", func(w *world) target {
			w.pool("default", withBudgets(
				karpv1.Budget{Nodes: "20%"},
				karpv1.Budget{Nodes: "0", Reasons: []karpv1.DisruptionReason{karpv1.DisruptionReasonEmpty, karpv1.DisruptionReasonUnderutilized},
					Schedule: ptr.To("0 9 * * mon-fri"), Duration: &karpv1.Duration{Duration: 8 * time.Hour}},
				karpv1.Budget{Nodes: "1", Reasons: []karpv1.DisruptionReason{karpv1.DisruptionReasonDrifted}}))
			for range 5 {
				w.node("default", nodeOpts{})
			}
			return target{KindNodePool, "default"}
		}, VerdictConstrained, []string{disruption.CodeBudget, disruption.CodeBudget}},
		{"nodepool_limit_reached", func(w *world) target {
			w.pool("default", withCPULimit("8"))
			w.node("default", nodeOpts{})
			w.node("default", nodeOpts{})
			return target{KindNodePool, "default"}
		}, VerdictConstrained, []string{CodeLimitReached}},
		{"nodepool_not_launchable", func(w *world) target {
			w.pool("default")
			w.skip("default", "NodeClassNotReady", "NodeClass default is not ready: SubnetsReady is False (SubnetsNotFound)")
			return target{KindNodePool, "default"}
		}, VerdictNotLaunchable, []string{"NodeClassNotReady"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			tg := tc.build(w)
			e, err := explainTarget(w.input(), tg)
			if err != nil {
				t.Fatal(err)
			}
			if e.Verdict != tc.verdict {
				t.Errorf("verdict %s, want %s: %s", e.Verdict, tc.verdict, e.Summary)
			}
			var codes []string
			for _, r := range e.Reasons {
				codes = append(codes, r.Code)
			}
			if !slices.Equal(codes, tc.codes) {
				t.Errorf("codes %v, want %v", codes, tc.codes)
			}
			golden(t, tc.name+".golden", text(t, e))
		})
	}
}

// TestJSON pins the JSON shape of a node explanation with a budget reason.
func TestJSON(t *testing.T) {
	w := newWorld(t)
	w.pool("default", withBudgets(karpv1.Budget{Nodes: "0", Schedule: ptr.To("0 9 * * mon-fri"), Duration: &karpv1.Duration{Duration: 8 * time.Hour}},
		karpv1.Budget{Nodes: "100%"}))
	n := w.node("default", nodeOpts{})
	e, err := Node(w.input(), n)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := e.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	golden(t, "node_budget.json", b.Bytes())
	var back Explanation
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || back.Reasons[0].Until == nil || back.Reasons[0].Until.Hour() != 17 {
		t.Errorf("round trip: %+v %v", back, err)
	}
}

// TestDeterministic explains the same world twice and gets the same bytes.
func TestDeterministic(t *testing.T) {
	build := func() []byte {
		w := newWorld(t)
		w.pool("default")
		w.pool("gpu", withTaint)
		for i := range 4 {
			n := w.node("default", nodeOpts{})
			w.pod("web-"+string(rune('a'+i)), n, "500m", "512Mi")
		}
		w.pod("big", "", "30", "8Gi")
		var out []byte
		for _, tg := range []target{{KindPod, "default/big"}, {KindNode, "ip-10-0-0-1.ec2.internal"}, {KindNodePool, "default"}} {
			e, err := explainTarget(w.input(), tg)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, text(t, e)...)
		}
		return out
	}
	if a, b := build(), build(); !bytes.Equal(a, b) {
		t.Errorf("two runs differ:\n%s\n---\n%s", a, b)
	}
}

func TestNotFound(t *testing.T) {
	w := newWorld(t)
	w.pool("default")
	in := w.input()
	if _, err := Pod(in, "default", "nope"); err == nil || !strings.Contains(err.Error(), "default/nope") {
		t.Errorf("pod: %v", err)
	}
	if _, err := Node(in, "nope"); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("node: %v", err)
	}
	if _, err := NodePool(in, "nope"); err == nil {
		t.Error("nodepool: no error")
	}
}

// TestUnhealthyNode shows the repair verdict when the input carries the
// provider's repair policies.
func TestUnhealthyNode(t *testing.T) {
	w := newWorld(t)
	w.pool("default")
	n := w.node("default", nodeOpts{})
	in := w.input()
	sn, _ := in.Snapshot.Node(n)
	sn.Node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(t0.Add(-4 * time.Minute))}}
	in.RepairPolicies = []cloud.RepairPolicy{{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionFalse, TolerationDuration: 10 * time.Minute}}
	e, err := Node(in, n)
	if err != nil {
		t.Fatal(err)
	}
	if h := e.Node.Health; h == nil || h.Due || h.RepairAt == nil || !h.RepairAt.Equal(t0.Add(6*time.Minute)) {
		t.Fatalf("health %+v", e.Node.Health)
	}
	if !strings.Contains(string(text(t, e)), "repair at 2026-03-03T10:06:00Z (in 6m0s)") {
		t.Errorf("text does not show the repair time:\n%s", text(t, e))
	}
}
