package workloads

import (
	"context"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

type replicaSets struct {
	base
	pace *pacer
}

// Reconcile keeps a ReplicaSet's active pods at spec.replicas, at the pace
// of the real controller: a sync creates or deletes at most BurstReplicas
// pods, creations in slow-start batches, every request waiting for a token
// of the controller's client.
func (r *replicaSets) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	rs := &appsv1.ReplicaSet{}
	if err := r.api.Get(ctx, req.NamespacedName, rs); err != nil {
		if apierrors.IsNotFound(err) {
			r.pace.forget(req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if rs.DeletionTimestamp != nil {
		r.pace.forget(req.NamespacedName)
		return reconcile.Result{}, nil
	}
	// Counted, or ranked for deletion in a total order (rankForDeletion):
	// the index's order does not matter.
	var pods []*corev1.Pod
	for _, o := range r.ownedUnordered(podGVK, rs) {
		if p := o.(*corev1.Pod); active(p) {
			pods = append(pods, p)
		}
	}
	want := int(replicas(rs.Spec.Replicas))
	start := func() *podSync {
		switch diff := want - len(pods); {
		case diff > 0:
			return creations(min(diff, BurstReplicas), 0)
		case diff < 0:
			return deletions(min(-diff, BurstReplicas))
		}
		return nil
	}
	ref := controllerRef(rs, "ReplicaSet", appsv1.SchemeGroupVersion.String())
	write := func(s *podSync, n int) error {
		if !s.deleting {
			for range n {
				pod := podFromTemplate(&rs.Spec.Template, rs.Namespace, ref)
				pod.GenerateName = rs.Name + "-"
				if err := r.api.Create(ctx, pod); err != nil {
					return fmt.Errorf("creating a pod of ReplicaSet %s/%s: %w", rs.Namespace, rs.Name, err)
				}
				pods = append(pods, pod)
			}
			return nil
		}
		rankForDeletion(pods)
		n = min(n, len(pods))
		for _, p := range pods[:n] {
			err := r.api.Delete(ctx, p, client.Preconditions{UID: &p.UID})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return fmt.Errorf("deleting pod %s: %w", podName(p), err)
			}
		}
		pods = pods[n:]
		return nil
	}
	wait, err := r.pace.run(r.clock.Now(), req.NamespacedName, 1, start, write)
	if err != nil {
		return reconcile.Result{}, err
	}
	st := appsv1.ReplicaSetStatus{
		Replicas:             int32(len(pods)),
		FullyLabeledReplicas: int32(len(pods)),
		ObservedGeneration:   rs.Generation,
	}
	for _, p := range pods {
		if podReady(p) {
			st.ReadyReplicas++
			st.AvailableReplicas++
		}
	}
	changed := statusChanged(rs.Status, st)
	rs.Status = st
	return reconcile.Result{RequeueAfter: wait}, r.writeStatus(ctx, rs, changed)
}

func replicas(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}

// rankForDeletion sorts pods so that the ones to delete first come first:
// unbound before bound, pending before running, not ready before ready,
// newer before older, as the ReplicaSet controller ranks them.
func rankForDeletion(pods []*corev1.Pod) {
	rank := func(p *corev1.Pod) [3]int {
		r := [3]int{}
		if p.Spec.NodeName != "" {
			r[0] = 1
		}
		if p.Status.Phase == corev1.PodRunning {
			r[1] = 1
		}
		if podReady(p) {
			r[2] = 1
		}
		return r
	}
	slices.SortStableFunc(pods, func(a, b *corev1.Pod) int {
		ra, rb := rank(a), rank(b)
		for i := range ra {
			if ra[i] != rb[i] {
				return ra[i] - rb[i]
			}
		}
		if c := b.CreationTimestamp.Compare(a.CreationTimestamp.Time); c != 0 {
			return c
		}
		// A ReplicaSet's pods share its namespace: the name makes the
		// order total, whatever order the pods came in.
		return strings.Compare(b.Name, a.Name)
	})
}
