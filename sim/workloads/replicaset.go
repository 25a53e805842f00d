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

type replicaSets struct{ base }

// Reconcile keeps a ReplicaSet's active pods at spec.replicas.
func (r *replicaSets) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	rs := &appsv1.ReplicaSet{}
	if err := r.api.Get(ctx, req.NamespacedName, rs); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if rs.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	var pods []*corev1.Pod
	for _, o := range r.owned(podGVK, rs) {
		if p := o.(*corev1.Pod); active(p) {
			pods = append(pods, p)
		}
	}
	want := int(replicas(rs.Spec.Replicas))
	switch {
	case len(pods) < want:
		ref := controllerRef(rs, "ReplicaSet", appsv1.SchemeGroupVersion.String())
		for range want - len(pods) {
			pod := podFromTemplate(&rs.Spec.Template, rs.Namespace, ref)
			pod.GenerateName = rs.Name + "-"
			if err := r.api.Create(ctx, pod); err != nil {
				return reconcile.Result{}, fmt.Errorf("creating a pod of ReplicaSet %s/%s: %w", rs.Namespace, rs.Name, err)
			}
			pods = append(pods, pod)
		}
	case len(pods) > want:
		rankForDeletion(pods)
		for _, p := range pods[:len(pods)-want] {
			err := r.api.Delete(ctx, p, client.Preconditions{UID: &p.UID})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return reconcile.Result{}, fmt.Errorf("deleting pod %s: %w", podName(p), err)
			}
		}
		pods = pods[len(pods)-want:]
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
	return reconcile.Result{}, r.writeStatus(ctx, rs, changed)
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
		return strings.Compare(b.Name, a.Name)
	})
}
