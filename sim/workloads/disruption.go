package workloads

import (
	"context"

	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
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
	// A condition keeps its transition time while its status stays, as
	// meta.SetStatusCondition keeps it in the real disruption controller:
	// a budget whose numbers did not move is not written again.
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if old := meta.FindStatusCondition(pdb.Status.Conditions, c.Type); old != nil && old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		}
	}
	changed := statusChanged(pdb.Status, st)
	pdb.Status = st
	return reconcile.Result{}, r.writeStatus(ctx, pdb, changed)
}
