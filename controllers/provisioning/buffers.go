package provisioning

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	autoscalingv1beta1 "github.com/stevedore-autoscaler/stevedore/api/autoscaling/v1beta1"
	"github.com/stevedore-autoscaler/stevedore/decide/capacitybuffer"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/state"
)

// provisionBuffers packs the CapacityBuffers' placeholder pods and
// launches the NodeClaims they need. It runs after the real pods were
// packed and nominated, so that those are counted on their nodes first:
// placeholders take only the room real pods leave, and a real pod that
// arrives later takes a placeholder's room like any free room, after which
// the placeholder needs a new node (the buffer is refilled).
//
// Placeholders are not nominated: on the next pass they are packed afresh,
// onto the NodeClaims launched for them (in flight, they count as existing
// capacity) or wherever there is room by then. Each buffer's Provisioning
// condition is written from where its placeholders went.
func (p *Provisioner) provisionBuffers(ctx context.Context, now time.Time) error {
	snap := p.state.Snapshot(now)
	if len(snap.BufferPods) == 0 {
		return nil
	}
	pools, _ := p.nodePools(ctx, snap)
	in := snap.PackerInput(snap.BufferPods, pools, p.opts.PreferencePolicy)
	in.MaxInstanceTypes = p.opts.MaxInstanceTypes
	in.EqualWeightOrder = p.opts.EqualWeightOrder
	res := packer.Solve(in)

	byKey := make(map[types.NamespacedName]*corev1.Pod, len(snap.BufferPods))
	placed := map[types.NamespacedName]*capacitybuffer.Placed{}
	for _, pod := range snap.BufferPods {
		byKey[types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}] = pod
		if b, ok := capacitybuffer.BufferOf(pod); ok && placed[b] == nil {
			placed[b] = &capacitybuffer.Placed{}
		}
	}
	count := func(k types.NamespacedName, add func(*capacitybuffer.Placed)) {
		if b, ok := capacitybuffer.BufferOf(byKey[k]); ok {
			add(placed[b])
		}
	}
	for _, pl := range res.Placements {
		count(pl.Pod, func(c *capacitybuffer.Placed) { c.Existing++ })
	}
	for _, u := range slices.Concat(res.Unschedulable, res.Ignored) {
		count(u.Pod, func(c *capacitybuffer.Placed) { c.Failed++ })
	}

	poolsByName := byName(in.NodePools)
	nominateUntil := now.Add(state.NominationWindow(p.opts.BatchMax))
	current := p.state.Snapshot(now)
	added := map[string]corev1.ResourceList{}
	var errs []error
	for _, claim := range res.NodeClaims {
		nc, why, err := p.launch(ctx, claim, poolsByName[claim.NodePool], current, added)
		if err != nil {
			errs = append(errs, err)
		}
		for _, k := range claim.Pods {
			if err != nil || why != "" {
				// Within the NodePool's limits (or with its NodePool gone)
				// the chunk fits nowhere.
				count(k, func(c *capacitybuffer.Placed) { c.Failed++ })
				continue
			}
			count(k, func(c *capacitybuffer.Placed) { c.New++ })
		}
		if nc == nil {
			if why != "" {
				log.FromContext(ctx).V(1).Info("capacity buffer not provisioned", "nodepool", claim.NodePool, "reason", why)
			}
			continue
		}
		p.state.UpdateNodeClaim(nc)
		// The nomination keeps the new node from being taken away while it
		// boots empty: the placeholders are never bound to it.
		p.state.Nominate(nc.Name, nominateUntil)
	}
	errs = append(errs, p.writeBufferConditions(ctx, now, placed))
	return errors.Join(errs...)
}

// writeBufferConditions writes each buffer's Provisioning condition from
// where its placeholders went, in the buffers' order.
func (p *Provisioner) writeBufferConditions(ctx context.Context, now time.Time, placed map[types.NamespacedName]*capacitybuffer.Placed) error {
	var errs []error
	for _, k := range slices.SortedFunc(maps.Keys(placed), func(a, b types.NamespacedName) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	}) {
		cb := &autoscalingv1beta1.CapacityBuffer{}
		if err := p.client.Get(ctx, k, cb); err != nil {
			if !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("getting CapacityBuffer %s: %w", k, err))
			}
			continue
		}
		if err := WriteProvisioningCondition(ctx, p.client, cb, placed[k], now); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// WriteProvisioningCondition patches the buffer's Provisioning condition to
// what capacitybuffer.ProvisioningCondition says for placed, when that
// differs from what it holds. The patch carries the resource version, so
// that it never overwrites a status written meanwhile from a newer spec.
func WriteProvisioningCondition(ctx context.Context, c client.Client, cb *autoscalingv1beta1.CapacityBuffer, placed *capacitybuffer.Placed, now time.Time) error {
	cond := capacitybuffer.ProvisioningCondition(cb, placed, now)
	if cond == nil {
		return nil
	}
	if old := meta.FindStatusCondition(cb.Status.Conditions, cond.Type); old != nil &&
		old.Status == cond.Status && old.Reason == cond.Reason && old.Message == cond.Message && old.ObservedGeneration == cond.ObservedGeneration {
		return nil
	}
	stored := cb.DeepCopy()
	meta.SetStatusCondition(&cb.Status.Conditions, *cond)
	if err := c.Status().Patch(ctx, cb, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			// Gone, or changed since it was read: the next pass writes it.
			return nil
		}
		return fmt.Errorf("writing the Provisioning condition of CapacityBuffer %s/%s: %w", cb.Namespace, cb.Name, err)
	}
	return nil
}
