package state

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
)

// Synced reports whether the Cluster has caught up with what c lists, so
// that a decision made from it will not launch twice or miss a node: every
// NodeClaim and Node listed is known, every listed NodeClaim that has a
// providerID has it in the Cluster too, and no NodeClaim that has launched
// lacks a providerID (its launch has not been recorded completely). Another
// provider's NodeClaims, which the Cluster does not record, are not looked
// at. It is false when listing fails.
//
// Objects the Cluster knows but c does not list (deleted since) do not make
// it unsynced: their delete events are on the way, and until then the
// Cluster overestimates capacity, which costs a decision at most a retry.
func (c *Cluster) Synced(ctx context.Context, r client.Reader) bool {
	// Read only: the cache need not copy what it holds.
	var claims karpv1.NodeClaimList
	if err := r.List(ctx, &claims, client.UnsafeDisableDeepCopy); err != nil {
		return false
	}
	var nodes corev1.NodeList
	if err := r.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range claims.Items {
		listed := &claims.Items[i]
		if !wellknown.ManagedNodeClaim(listed) {
			continue
		}
		if launched(listed) && listed.Status.ProviderID == "" {
			return false
		}
		known, ok := c.nodeClaims[listed.Name]
		if !ok {
			return false
		}
		if listed.Status.ProviderID != "" && known.Status.ProviderID == "" {
			return false
		}
	}
	for _, nc := range c.nodeClaims {
		if launched(nc) && nc.Status.ProviderID == "" {
			return false
		}
	}
	for i := range nodes.Items {
		if _, ok := c.nodes[nodes.Items[i].Name]; !ok {
			return false
		}
	}
	return true
}
