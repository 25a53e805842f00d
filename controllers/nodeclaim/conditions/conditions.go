// Package conditions writes a NodeClaim's status conditions, and nothing
// else, for the controllers that set one (disruption signals, termination).
package conditions

import (
	"context"
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
)

// Patch writes nc's status.conditions with a merge patch guarded by nc's
// resource version. It is the patch that client.MergeFrom with optimistic
// locking computes when only the conditions changed (a merge patch replaces
// a list whole), written directly: computing it meant copying the NodeClaim
// and marshalling and diffing two documents. An empty list removes the
// field, as the diff of an emptied list (omitempty) would.
func Patch(ctx context.Context, c client.Client, nc *karpv1.NodeClaim) error {
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": nc.ResourceVersion},
		"status":   map[string]any{"conditions": nilIfEmpty(nc.Status.Conditions)},
	})
	if err != nil {
		return err
	}
	return c.Status().Patch(ctx, nc, client.RawPatch(types.MergePatchType, patch))
}

func nilIfEmpty(cs []metav1.Condition) any {
	if len(cs) == 0 {
		return nil
	}
	return cs
}
