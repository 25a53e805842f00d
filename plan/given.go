package plan

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// lessGivenPods returns objs with every ReplicaSet, StatefulSet and Job
// whose own pods are among objs asking for that many pods fewer, so that
// its pods are the ones given plus only the ones it is missing. Pods are
// matched to their workload by the UID of their controller reference, as a
// snapshot of a cluster (stevedore snapshot) records both; workloads
// without a UID, as hand-written manifests are, and pods that have finished
// change nothing. objs is not modified.
func lessGivenPods(objs []runtime.Object) []runtime.Object {
	given := map[types.UID]int32{}
	for _, o := range objs {
		p, ok := o.(*corev1.Pod)
		if !ok || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, r := range p.OwnerReferences {
			if r.Controller != nil && *r.Controller && r.UID != "" {
				given[r.UID]++
			}
		}
	}
	if len(given) == 0 {
		return objs
	}
	less := func(p *int32, n int32) *int32 {
		v := int32(1)
		if p != nil {
			v = *p
		}
		v = max(v-n, 0)
		return &v
	}
	out := make([]runtime.Object, len(objs))
	for i, o := range objs {
		out[i] = o
		switch w := o.(type) {
		case *appsv1.ReplicaSet:
			if n := given[w.UID]; w.UID != "" && n > 0 {
				c := w.DeepCopy()
				c.Spec.Replicas = less(w.Spec.Replicas, n)
				out[i] = c
			}
		case *appsv1.StatefulSet:
			if n := given[w.UID]; w.UID != "" && n > 0 {
				c := w.DeepCopy()
				c.Spec.Replicas = less(w.Spec.Replicas, n)
				out[i] = c
			}
		case *batchv1.Job:
			if n := given[w.UID]; w.UID != "" && n > 0 {
				c := w.DeepCopy()
				c.Spec.Parallelism = less(w.Spec.Parallelism, n)
				if w.Spec.Completions != nil {
					c.Spec.Completions = less(w.Spec.Completions, n)
				}
				out[i] = c
			}
		}
	}
	return out
}
