package disruption

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
)

// conflictRetries is how many times a write that lost a race with another
// writer is tried again at once, on a fresh copy. There is no sleep between
// tries: the other writer has finished by the time the conflict is seen.
const conflictRetries = 3

// patchNodeClaim applies mutate to the stored NodeClaim and, when mutate
// reports a change, writes it back (the status subresource when status is
// true), guarded by the resource version so that a concurrent write is never
// lost. found is false when the NodeClaim does not exist.
func (c *Controller) patchNodeClaim(ctx context.Context, name string, status bool, mutate func(*karpv1.NodeClaim) bool) (found bool, err error) {
	for attempt := 0; ; attempt++ {
		nc := &karpv1.NodeClaim{}
		if err := c.kube.Get(ctx, nodeClaimKey(name), nc); err != nil {
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return false, fmt.Errorf("getting NodeClaim %s: %w", name, err)
		}
		base := nc.DeepCopy()
		if !mutate(nc) {
			return true, nil
		}
		patch := client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})
		if status {
			err = c.kube.Status().Patch(ctx, nc, patch)
		} else {
			err = c.kube.Patch(ctx, nc, patch)
		}
		switch {
		case err == nil:
			return true, nil
		case apierrors.IsNotFound(err):
			return false, nil
		case apierrors.IsConflict(err) && attempt < conflictRetries:
			continue
		}
		return true, fmt.Errorf("updating NodeClaim %s: %w", name, err)
	}
}

// patchNode is patchNodeClaim for a Node.
func (c *Controller) patchNode(ctx context.Context, name string, mutate func(*corev1.Node) bool) (found bool, err error) {
	for attempt := 0; ; attempt++ {
		node := &corev1.Node{}
		if err := c.kube.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return false, fmt.Errorf("getting Node %s: %w", name, err)
		}
		base := node.DeepCopy()
		if !mutate(node) {
			return true, nil
		}
		err = c.kube.Patch(ctx, node, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
		switch {
		case err == nil:
			return true, nil
		case apierrors.IsNotFound(err):
			return false, nil
		case apierrors.IsConflict(err) && attempt < conflictRetries:
			continue
		}
		return true, fmt.Errorf("updating Node %s: %w", name, err)
	}
}

// isDisrupted matches the karpenter.sh/disrupted taint.
func isDisrupted(t corev1.Taint) bool {
	d := wellknown.DisruptedTaint()
	return t.MatchTaint(&d)
}

// hasDisruptedTaint reports whether the node carries the disrupted taint.
func hasDisruptedTaint(node *corev1.Node) bool {
	return slices.ContainsFunc(node.Spec.Taints, isDisrupted)
}

// taint puts the disrupted taint on a node, so that no new pods land on it
// while its command runs.
func (c *Controller) taint(ctx context.Context, name string) error {
	added := false
	_, err := c.patchNode(ctx, name, func(n *corev1.Node) bool {
		if hasDisruptedTaint(n) {
			return false
		}
		n.Spec.Taints = append(n.Spec.Taints, wellknown.DisruptedTaint())
		added = true
		return true
	})
	if err == nil && added {
		log.FromContext(ctx).Info("tainted node", "Node", name, "taint.Key", wellknown.TaintKeyDisrupted)
	}
	return err
}

// untaint removes the disrupted taint from a node that is not being
// deleted (a node being deleted needs it for its drain).
func (c *Controller) untaint(ctx context.Context, name string) error {
	removed := false
	_, err := c.patchNode(ctx, name, func(n *corev1.Node) bool {
		if !n.DeletionTimestamp.IsZero() || !hasDisruptedTaint(n) {
			return false
		}
		n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, isDisrupted)
		removed = true
		return true
	})
	if err == nil && removed {
		log.FromContext(ctx).Info("untainted node", "Node", name, "taint.Key", wellknown.TaintKeyDisrupted)
	}
	return err
}
