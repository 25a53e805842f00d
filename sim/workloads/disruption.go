package workloads

import (
	"context"

	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

type disruptionBudgets struct{ base }

// Reconcile writes the budget's status as the eviction subresource computes
// it, when it changed.
func (r *disruptionBudgets) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pdb := &policyv1.PodDisruptionBudget{}
	if err := r.api.Get(ctx, req.NamespacedName, pdb); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	st := r.api.PDBStatus(pdb)
	st.DisruptedPods = pdb.Status.DisruptedPods
	changed := statusChanged(pdb.Status, st)
	pdb.Status = st
	return reconcile.Result{}, r.writeStatus(ctx, pdb, changed)
}
