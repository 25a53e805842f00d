package taints

import (
	"fmt"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	schedulinghelper "k8s.io/component-helpers/scheduling/corev1"
)

const (
	noSchedule       = corev1.TaintEffectNoSchedule
	preferNoSchedule = corev1.TaintEffectPreferNoSchedule
	noExecute        = corev1.TaintEffectNoExecute
)

func taint(key, value string, effect corev1.TaintEffect) corev1.Taint {
	return corev1.Taint{Key: key, Value: value, Effect: effect}
}

func toleration(key string, op corev1.TolerationOperator, value string, effect corev1.TaintEffect) corev1.Toleration {
	return corev1.Toleration{Key: key, Operator: op, Value: value, Effect: effect}
}

func TestTolerates(t *testing.T) {
	gpu := taint("nvidia.com/gpu", "true", noSchedule)
	tier := taint("example.com/tier", "5", noSchedule)
	for _, tc := range []struct {
		name       string
		toleration corev1.Toleration
		taint      corev1.Taint
		want       bool
		// wantWithComparison is the answer with the comparison operators
		// enabled, where it differs.
		wantWithComparison *bool
	}{
		{name: "Equal, same key, value and effect", toleration: toleration("nvidia.com/gpu", corev1.TolerationOpEqual, "true", noSchedule), taint: gpu, want: true},
		{name: "Equal, other value", toleration: toleration("nvidia.com/gpu", corev1.TolerationOpEqual, "false", noSchedule), taint: gpu},
		{name: "Equal, other key", toleration: toleration("example.com/gpu", corev1.TolerationOpEqual, "true", noSchedule), taint: gpu},
		{name: "empty operator means Equal", toleration: toleration("nvidia.com/gpu", "", "true", noSchedule), taint: gpu, want: true},
		{name: "empty operator, other value", toleration: toleration("nvidia.com/gpu", "", "yes", noSchedule), taint: gpu},
		{name: "Exists, any value", toleration: toleration("nvidia.com/gpu", corev1.TolerationOpExists, "", noSchedule), taint: gpu, want: true},
		{name: "Exists, other key", toleration: toleration("example.com/gpu", corev1.TolerationOpExists, "", noSchedule), taint: gpu},
		{name: "empty key with Exists tolerates everything", toleration: toleration("", corev1.TolerationOpExists, "", ""), taint: taint("anything", "at-all", noExecute), want: true},
		{name: "empty key with Exists, restricted to an effect", toleration: toleration("", corev1.TolerationOpExists, "", noSchedule), taint: taint("anything", "x", noExecute)},
		{name: "empty effect matches NoSchedule", toleration: toleration("nvidia.com/gpu", corev1.TolerationOpEqual, "true", ""), taint: gpu, want: true},
		{name: "empty effect matches NoExecute", toleration: toleration("nvidia.com/gpu", corev1.TolerationOpExists, "", ""), taint: taint("nvidia.com/gpu", "true", noExecute), want: true},
		{name: "empty effect matches PreferNoSchedule", toleration: toleration("nvidia.com/gpu", corev1.TolerationOpExists, "", ""), taint: taint("nvidia.com/gpu", "", preferNoSchedule), want: true},
		{name: "other effect", toleration: toleration("nvidia.com/gpu", corev1.TolerationOpEqual, "true", noExecute), taint: gpu},
		{name: "Gt, taint above", toleration: toleration("example.com/tier", corev1.TolerationOpGt, "3", noSchedule), taint: tier, wantWithComparison: ptr(true)},
		{name: "Gt, taint equal", toleration: toleration("example.com/tier", corev1.TolerationOpGt, "5", noSchedule), taint: tier},
		{name: "Lt, taint below", toleration: toleration("example.com/tier", corev1.TolerationOpLt, "9", noSchedule), taint: tier, wantWithComparison: ptr(true)},
		{name: "Lt, taint above", toleration: toleration("example.com/tier", corev1.TolerationOpLt, "2", noSchedule), taint: tier},
		{name: "Gt, non-integer taint", toleration: toleration("nvidia.com/gpu", corev1.TolerationOpGt, "0", noSchedule), taint: gpu},
		{name: "Lt, non-integer toleration", toleration: toleration("example.com/tier", corev1.TolerationOpLt, "ten", noSchedule), taint: tier},
		{name: "unknown operator", toleration: toleration("nvidia.com/gpu", "Near", "true", noSchedule), taint: gpu},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tolerations := []corev1.Toleration{toleration("unrelated", corev1.TolerationOpExists, "", noSchedule), tc.toleration}
			if got := Tolerates(tolerations, tc.taint); got != tc.want {
				t.Errorf("Tolerates = %v, want %v", got, tc.want)
			}
			want := tc.want
			if tc.wantWithComparison != nil {
				want = *tc.wantWithComparison
			}
			if got := (Matcher{ComparisonOperators: true}).Tolerates(tolerations, tc.taint); got != want {
				t.Errorf("with comparison operators: Tolerates = %v, want %v", got, want)
			}
		})
	}
	if Tolerates(nil, gpu) {
		t.Errorf("no tolerations tolerated a taint")
	}
}

func ptr[T any](v T) *T { return &v }

func TestToleratesAll(t *testing.T) {
	taints := []corev1.Taint{
		taint("a", "1", preferNoSchedule),
		taint("b", "1", noSchedule),
		taint("c", "1", noExecute),
	}
	tolerate := func(key string) corev1.Toleration { return toleration(key, corev1.TolerationOpExists, "", "") }
	for _, tc := range []struct {
		name        string
		tolerations []corev1.Toleration
		taints      []corev1.Taint
		effects     Effects
		wantFirst   int // index into taints of the first untolerated one, -1 for none
	}{
		{name: "no taints", effects: Blocking, wantFirst: -1},
		{name: "all tolerated", tolerations: []corev1.Toleration{tolerate("a"), tolerate("b"), tolerate("c")}, taints: taints, effects: AllEffects, wantFirst: -1},
		{name: "PreferNoSchedule never blocks", tolerations: []corev1.Toleration{tolerate("b"), tolerate("c")}, taints: taints, effects: Blocking, wantFirst: -1},
		{name: "PreferNoSchedule blocks under AllEffects", tolerations: []corev1.Toleration{tolerate("b"), tolerate("c")}, taints: taints, effects: AllEffects, wantFirst: 0},
		{name: "NoSchedule blocks", tolerations: []corev1.Toleration{tolerate("c")}, taints: taints, effects: Blocking, wantFirst: 1},
		{name: "NoExecute blocks", tolerations: []corev1.Toleration{tolerate("b")}, taints: taints, effects: Blocking, wantFirst: 2},
		{name: "first untolerated in order", taints: taints, effects: Blocking, wantFirst: 1},
		{name: "only NoExecute considered", taints: taints, effects: NoExecute, wantFirst: 2},
		{name: "tolerate everything", tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}, taints: taints, effects: AllEffects, wantFirst: -1},
		{name: "undefined effect blocks nothing", taints: []corev1.Taint{taint("d", "1", "Sometimes")}, effects: AllEffects, wantFirst: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, first := ToleratesAll(tc.tolerations, tc.taints, tc.effects)
			switch {
			case tc.wantFirst < 0 && (!ok || first != nil):
				t.Errorf("got %v, %v; want tolerated", ok, first)
			case tc.wantFirst >= 0 && (ok || first != &tc.taints[tc.wantFirst]):
				t.Errorf("got %v, %v; want taints[%d] untolerated", ok, first, tc.wantFirst)
			}
		})
	}
}

// TestToleratesAllAgreesWithScheduler checks ToleratesAll with Blocking
// against the kube-scheduler's own filter on every combination of a few
// tolerations and taints.
func TestToleratesAllAgreesWithScheduler(t *testing.T) {
	var tolerations []corev1.Toleration
	for _, key := range []string{"", "k"} {
		for _, op := range []corev1.TolerationOperator{"", corev1.TolerationOpEqual, corev1.TolerationOpExists, corev1.TolerationOpGt, corev1.TolerationOpLt} {
			for _, value := range []string{"", "1", "v"} {
				for _, effect := range []corev1.TaintEffect{"", noSchedule, preferNoSchedule, noExecute} {
					tolerations = append(tolerations, toleration(key, op, value, effect))
				}
			}
		}
	}
	var taints []corev1.Taint
	for _, key := range []string{"k", "other"} {
		for _, value := range []string{"", "0", "1", "2", "v"} {
			for _, effect := range []corev1.TaintEffect{noSchedule, preferNoSchedule, noExecute} {
				taints = append(taints, taint(key, value, effect))
			}
		}
	}
	blocking := func(t *corev1.Taint) bool { return t.Effect == noSchedule || t.Effect == noExecute }
	for _, comparison := range []bool{false, true} {
		m := Matcher{ComparisonOperators: comparison}
		for i := range tolerations {
			tols := tolerations[i : i+1]
			for j := range taints {
				for k := j; k < min(j+3, len(taints)); k++ {
					ts := taints[j : k+1]
					wantTaint, untolerated := schedulinghelper.FindMatchingUntoleratedTaint(logr.Discard(), ts, tols, blocking, comparison)
					ok, first := m.ToleratesAll(tols, ts, Blocking)
					if ok != !untolerated || !ok && fmt.Sprint(*first) != fmt.Sprint(wantTaint) {
						t.Fatalf("comparison=%v tolerations %v taints %v: got %v %v, scheduler says untolerated=%v %v",
							comparison, tols, ts, ok, first, untolerated, wantTaint)
					}
				}
			}
		}
	}
}

func TestToleratesAllDoesNotAllocate(t *testing.T) {
	taints := []corev1.Taint{taint("a", "1", noSchedule), taint("b", "2", noExecute), taint("c", "3", preferNoSchedule)}
	tolerations := []corev1.Toleration{
		toleration("x", corev1.TolerationOpExists, "", ""),
		toleration("a", corev1.TolerationOpEqual, "1", noSchedule),
		toleration("b", corev1.TolerationOpExists, "", ""),
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = ToleratesAll(tolerations, taints, Blocking) }); n != 0 {
		t.Errorf("ToleratesAll allocated %v times, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = Tolerates(tolerations, taints[2]) }); n != 0 {
		t.Errorf("Tolerates allocated %v times, want 0", n)
	}
}

func BenchmarkToleratesAll(b *testing.B) {
	taints := []corev1.Taint{
		taint("karpenter.sh/unregistered", "", noExecute),
		taint("nvidia.com/gpu", "true", noSchedule),
		taint("example.com/team", "payments", noSchedule),
		taint("example.com/spot", "true", preferNoSchedule),
	}
	tolerations := []corev1.Toleration{
		toleration("node.kubernetes.io/not-ready", corev1.TolerationOpExists, "", noExecute),
		toleration("node.kubernetes.io/unreachable", corev1.TolerationOpExists, "", noExecute),
		toleration("karpenter.sh/unregistered", corev1.TolerationOpExists, "", ""),
		toleration("nvidia.com/gpu", corev1.TolerationOpExists, "", noSchedule),
		toleration("example.com/team", corev1.TolerationOpEqual, "payments", noSchedule),
	}
	b.ReportAllocs()
	for b.Loop() {
		if ok, _ := ToleratesAll(tolerations, taints, Blocking); !ok {
			b.Fatal("want tolerated")
		}
	}
}
