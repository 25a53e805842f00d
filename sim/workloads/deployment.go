package workloads

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/stevedore-autoscaler/stevedore/sim/apiserver"
)

type deployments struct{ base }

// Reconcile makes sure the Deployment's current template has a ReplicaSet
// and moves replicas to it from the older ones.
func (d *deployments) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	dep := &appsv1.Deployment{}
	if err := d.api.Get(ctx, req.NamespacedName, dep); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if dep.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	hash := templateHash(&dep.Spec.Template)
	var current *appsv1.ReplicaSet
	var old []*appsv1.ReplicaSet
	for _, o := range d.owned(replicaSetGVK, dep) {
		rs := o.(*appsv1.ReplicaSet).DeepCopy()
		if rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey] == hash {
			current = rs
		} else {
			old = append(old, rs)
		}
	}
	// Oldest first: they are scaled down first.
	slices.SortStableFunc(old, func(a, b *appsv1.ReplicaSet) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
	desired := replicas(dep.Spec.Replicas)
	if current == nil {
		var err error
		if current, err = d.newReplicaSet(ctx, dep, hash, 0); err != nil {
			return reconcile.Result{}, err
		}
	}
	oldTotal := int32(0)
	oldReady := int32(0)
	for _, rs := range old {
		oldTotal += replicas(rs.Spec.Replicas)
		oldReady += rs.Status.ReadyReplicas
	}
	target := replicas(current.Spec.Replicas)
	if dep.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		for _, rs := range old {
			if err := d.scale(ctx, rs, 0); err != nil {
				return reconcile.Result{}, err
			}
		}
		if oldTotal == 0 && d.oldPodsGone(old) {
			target = desired
		} else {
			target = 0
		}
	} else {
		surge, unavailable := rollingParams(dep, desired)
		// Scale up the new ReplicaSet as far as the surge allows (all the
		// way when there is no old one: a plain scale).
		target = max(target, min(desired, desired+surge-oldTotal))
		if len(old) == 0 || target > desired {
			target = desired
		}
		// Scale down old ReplicaSets as far as availability allows.
		available := oldReady + current.Status.ReadyReplicas
		canRemove := available - (desired - unavailable)
		for _, rs := range old {
			n := replicas(rs.Spec.Replicas)
			if n == 0 || canRemove <= 0 {
				continue
			}
			cut := min(n, canRemove)
			canRemove -= cut
			if err := d.scale(ctx, rs, n-cut); err != nil {
				return reconcile.Result{}, err
			}
		}
	}
	if err := d.scale(ctx, current, target); err != nil {
		return reconcile.Result{}, err
	}
	st := appsv1.DeploymentStatus{ObservedGeneration: dep.Generation, UpdatedReplicas: current.Status.Replicas}
	for _, rs := range append(old, current) {
		st.Replicas += rs.Status.Replicas
		st.ReadyReplicas += rs.Status.ReadyReplicas
		st.AvailableReplicas += rs.Status.AvailableReplicas
	}
	st.UnavailableReplicas = max(desired-st.AvailableReplicas, 0)
	changed := statusChanged(dep.Status, st)
	dep.Status = st
	return reconcile.Result{}, d.writeStatus(ctx, dep, changed)
}

// rollingParams returns maxSurge (rounded up) and maxUnavailable (rounded
// down), with the API's 25% defaults; both zero is read as one surge.
func rollingParams(dep *appsv1.Deployment, desired int32) (surge, unavailable int32) {
	def := intstr.FromString("25%")
	s, u := &def, &def
	if ru := dep.Spec.Strategy.RollingUpdate; ru != nil {
		if ru.MaxSurge != nil {
			s = ru.MaxSurge
		}
		if ru.MaxUnavailable != nil {
			u = ru.MaxUnavailable
		}
	}
	sv, _ := intstr.GetScaledValueFromIntOrPercent(s, int(desired), true)
	uv, _ := intstr.GetScaledValueFromIntOrPercent(u, int(desired), false)
	if sv == 0 && uv == 0 {
		sv = 1
	}
	return int32(sv), int32(uv)
}

func (d *deployments) oldPodsGone(old []*appsv1.ReplicaSet) bool {
	for _, rs := range old {
		if len(d.owned(podGVK, rs)) > 0 {
			return false
		}
	}
	return true
}

func (d *deployments) newReplicaSet(ctx context.Context, dep *appsv1.Deployment, hash string, n int32) (*appsv1.ReplicaSet, error) {
	tmpl := dep.Spec.Template.DeepCopy()
	if tmpl.Labels == nil {
		tmpl.Labels = map[string]string{}
	}
	tmpl.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	sel := dep.Spec.Selector.DeepCopy()
	if sel == nil {
		sel = &metav1.LabelSelector{}
	}
	if sel.MatchLabels == nil {
		sel.MatchLabels = map[string]string{}
	}
	sel.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	labels := copyMap(tmpl.Labels)
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: dep.Name + "-" + hash, Namespace: dep.Namespace, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{controllerRef(dep, "Deployment", appsv1.SchemeGroupVersion.String())},
		},
		Spec: appsv1.ReplicaSetSpec{Replicas: &n, Selector: sel, Template: *tmpl, MinReadySeconds: dep.Spec.MinReadySeconds},
	}
	if err := d.api.Create(ctx, rs); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating ReplicaSet for Deployment %s/%s: %w", dep.Namespace, dep.Name, err)
	}
	return rs, nil
}

// scale sets a ReplicaSet's replicas.
func (d *deployments) scale(ctx context.Context, rs *appsv1.ReplicaSet, n int32) error {
	if replicas(rs.Spec.Replicas) == n {
		return nil
	}
	base := rs.DeepCopy()
	rs.Spec.Replicas = &n
	if err := d.api.Patch(ctx, rs, apiserver.MergeFrom(base)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("scaling ReplicaSet %s/%s to %d: %w", rs.Namespace, rs.Name, n, err)
	}
	return nil
}
