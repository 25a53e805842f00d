package scheduler

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/stevedore-autoscaler/stevedore/sim/apiserver"
	"github.com/stevedore-autoscaler/stevedore/sim/internal/simtest"
)

// The queue changes which pods a pass tries, never where a pod goes: on
// random sequences of pods arriving and leaving and nodes joining,
// changing and going, a binder that keeps turned-away pods aside binds
// the same pods to the same nodes, pass after pass, as one that tries every
// pending pod in every pass; and it tries fewer.
func TestQueueBindsAsTryingEveryPod(t *testing.T) {
	for seed := range uint64(16) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			queued, queuedAPI := emptyBinder(t)
			every, everyAPI := emptyBinder(t)
			every.retryAll = true
			rng := rand.New(rand.NewPCG(seed, 7))
			passes, bound, skipped := 0, 0, 0
			for step := range 400 {
				op := randomOp(rng, step)
				op(t, queuedAPI)
				op(t, everyAPI)
				if step%5 != 4 {
					continue
				}
				passes++
				simtest.Reconcile(t, queued, "", Name)
				simtest.Reconcile(t, every, "", Name)
				for _, o := range everyAPI.Objects(podGVK) {
					want := o.(*corev1.Pod)
					got := queuedAPI.Object(podGVK, want.Namespace, want.Name).(*corev1.Pod)
					if got.Spec.NodeName != want.Spec.NodeName || scheduledStatus(got) != scheduledStatus(want) {
						t.Fatalf("step %d, pod %s: the queue gave node %q scheduled %q, trying every pod node %q scheduled %q",
							step, want.Name, got.Spec.NodeName, scheduledStatus(got), want.Spec.NodeName, scheduledStatus(want))
					}
					if want.Spec.NodeName != "" {
						bound++
					}
				}
			}
			skipped = queued.waited - queued.tried
			if every.waited != every.tried {
				t.Fatalf("trying every pod, %d of %d were tried", every.tried, every.waited)
			}
			t.Logf("tried %d of %d pending pods over %d passes", queued.tried, queued.waited, passes)
			if bound == 0 || skipped == 0 {
				t.Fatalf("%d passes bound nothing or skipped no pod (bound %d, skipped %d): the sequence tests nothing", passes, bound, skipped)
			}
		})
	}
}

func pendingPods(api *apiserver.Server) []*corev1.Pod {
	var out []*corev1.Pod
	for _, o := range api.Objects(podGVK) {
		if p := o.(*corev1.Pod); pending(p) {
			out = append(out, p)
		}
	}
	return out
}

func scheduledStatus(p *corev1.Pod) corev1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status
		}
	}
	return ""
}

func emptyBinder(t *testing.T) (*Binder, *apiserver.Server) {
	t.Helper()
	api, clk := simtest.Server(t, "apps")
	for i := range 2 {
		simtest.Create(t, api, node(fmt.Sprintf("n%d", i), "a", "2"))
	}
	return New(api, clk), api
}

type op func(t *testing.T, api *apiserver.Server)

// randomOp draws one change to a cluster. The pods of a ReplicaSet are
// alike, as the binder assumes; some pods spread over zones or keep away
// from each other, which the queue treats as depending on the whole
// cluster.
func randomOp(rng *rand.Rand, step int) op {
	ctx := context.Background()
	n := rng.IntN(10)
	nodeName := fmt.Sprintf("n%d", rng.IntN(8))
	switch {
	case n < 4:
		rs := rng.IntN(4)
		name := fmt.Sprintf("p%d", step)
		spread := rng.IntN(6) == 0
		return func(t *testing.T, api *apiserver.Server) {
			p := pod(name, []string{"500m", "900m", "1500m", "300m"}[rs], "")
			p.Labels = map[string]string{"app": fmt.Sprint("rs", rs)}
			if rs < 3 {
				p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: fmt.Sprint("rs", rs),
					UID: types.UID(fmt.Sprint("rs", rs)), Controller: ptr.To(true)}}
			}
			if rs == 2 {
				// Only one per node.
				p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
					{TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: p.Labels}}}}}
			}
			if rs == 3 && spread {
				p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
					WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: p.Labels}}}
			}
			simtest.Create(t, api, p)
		}
	case n < 6:
		cpu := fmt.Sprint(1 + rng.IntN(3))
		zone := []string{"a", "b"}[rng.IntN(2)]
		return func(t *testing.T, api *apiserver.Server) {
			if api.Object(nodeGVK, "", nodeName) == nil {
				simtest.Create(t, api, node(nodeName, zone, cpu))
			}
		}
	case n < 8:
		pick := rng.IntN(1000)
		finish := rng.IntN(2) == 0
		return func(t *testing.T, api *apiserver.Server) {
			var boundPods []*corev1.Pod
			for _, o := range api.Objects(podGVK) {
				if p := o.(*corev1.Pod); p.Spec.NodeName != "" && p.Status.Phase != corev1.PodSucceeded {
					boundPods = append(boundPods, p)
				}
			}
			if len(boundPods) == 0 {
				return
			}
			p := boundPods[pick%len(boundPods)].DeepCopy()
			if finish {
				p.Status.Phase = corev1.PodSucceeded
				if err := api.Status().Update(ctx, p); err != nil {
					t.Fatal(err)
				}
				return
			}
			if err := api.Delete(ctx, p, ctxGrace0()); err != nil {
				t.Fatal(err)
			}
		}
	case n < 9:
		taint := rng.IntN(2) == 0
		return func(t *testing.T, api *apiserver.Server) {
			o := api.Object(nodeGVK, "", nodeName)
			if o == nil {
				return
			}
			nd := o.(*corev1.Node).DeepCopy()
			if taint {
				if len(nd.Spec.Taints) == 0 {
					nd.Spec.Taints = []corev1.Taint{{Key: "maintenance", Effect: corev1.TaintEffectNoSchedule}}
				} else {
					nd.Spec.Taints = nil
				}
			} else {
				nd.Spec.Unschedulable = !nd.Spec.Unschedulable
			}
			if err := api.Update(ctx, nd); err != nil {
				t.Fatal(err)
			}
		}
	default:
		return func(t *testing.T, api *apiserver.Server) {
			if api.Object(nodeGVK, "", nodeName) == nil {
				return
			}
			if err := api.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}); err != nil {
				t.Fatal(err)
			}
		}
	}
}
