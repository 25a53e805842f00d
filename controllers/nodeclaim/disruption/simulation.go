package disruption

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// NodeClaimsForNodeClass is the map function of the node class watch that
// Register sets up, for callers that drive the Reconciler without a manager
// (the simulator): it returns the NodeClaims launched from the node class and
// forgets their cached cloud-drift answers, so that a change to the class is
// judged at once.
func (r *Reconciler) NodeClaimsForNodeClass(ctx context.Context, o client.Object) []reconcile.Request {
	return r.nodeClaimsForNodeClass(ctx, o)
}
