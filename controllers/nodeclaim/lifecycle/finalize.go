package lifecycle

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud"
)

// finalize runs while a NodeClaim is being deleted: it deletes the NodeClaim's
// Nodes and waits for them to go (their own finalizer drains them), then
// terminates the instance and waits until the cloud reports it gone, and
// only then releases the NodeClaim.
func (r *Reconciler) finalize(ctx context.Context, nc *karpv1.NodeClaim) (reconcile.Result, error) {
	if !slices.Contains(nc.Finalizers, finalizer) {
		return reconcile.Result{}, nil
	}
	logger := log.FromContext(ctx)
	annotated := ""
	if err := r.patchMeta(ctx, nc, func(nc *karpv1.NodeClaim) {
		if ts, ok := terminationTimestamp(nc); ok && nc.Annotations[wellknown.AnnotationNodeClaimTerminationTimestamp] == "" {
			if nc.Annotations == nil {
				nc.Annotations = map[string]string{}
			}
			nc.Annotations[wellknown.AnnotationNodeClaimTerminationTimestamp] = ts
			annotated = ts
		}
	}); err != nil {
		return reconcile.Result{}, err
	}
	if annotated != "" {
		// Once, when the deadline is set, as Karpenter records it.
		r.event(nc, corev1.EventTypeWarning, ReasonTerminationGracePeriodExpiring, "Finalize",
			"every pod still on its node is deleted by %s, the end of its terminationGracePeriod", annotated)
	}

	instances, err := r.instancesOf(ctx, nc)
	if err != nil {
		return reconcile.Result{}, err
	}
	var nodes []corev1.Node
	for _, inst := range instances {
		ns, err := r.nodesFor(ctx, inst.Status.ProviderID)
		if err != nil {
			return reconcile.Result{}, err
		}
		nodes = append(nodes, ns...)
	}
	if len(nodes) > 0 {
		for i := range nodes {
			if err := r.deleteNode(ctx, nc, &nodes[i]); err != nil {
				return reconcile.Result{}, err
			}
		}
		return reconcile.Result{RequeueAfter: NodeDeletionPoll}, nil
	}

	terminating := false
	for _, inst := range instances {
		err := r.cloud.Delete(ctx, inst)
		if cloud.IsNodeClaimNotFoundError(err) {
			continue
		}
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("terminating instance %s of NodeClaim %s: %w", inst.Status.ProviderID, nc.Name, err)
		}
		terminating = true
	}
	if terminating {
		if err := r.patchStatus(ctx, nc, func(nc *karpv1.NodeClaim) {
			r.setCondition(nc, karpv1.ConditionTypeInstanceTerminating, metav1.ConditionTrue, ReasonInstanceTerminating, "the instance is being terminated")
		}); err != nil {
			return reconcile.Result{}, err
		}
		return reconcile.Result{RequeueAfter: InstanceTerminationPoll}, nil
	}

	if err := r.patchMeta(ctx, nc, func(nc *karpv1.NodeClaim) { removeFinalizer(&nc.ObjectMeta) }); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	var terminatingSince time.Time
	if c := findCondition(nc, karpv1.ConditionTypeInstanceTerminating); c != nil && c.Status == metav1.ConditionTrue {
		terminatingSince = c.LastTransitionTime.Time
	}
	var deleted time.Time
	if nc.DeletionTimestamp != nil {
		deleted = nc.DeletionTimestamp.Time
	}
	r.metrics.NodeClaimFinalized(nc.Labels[wellknown.LabelNodePool], deleted, terminatingSince, r.clock.Now())
	if len(instances) > 0 {
		// An instance existed and the cloud now reports it gone. Counted once:
		// the finalizer is removed once.
		r.metrics.NodeClaimTerminated(nc.Labels[wellknown.LabelNodePool], nc.Labels[wellknown.LabelCapacityType], nc.Labels[wellknown.LabelTopologyZone])
	}
	logger.Info("deleted nodeclaim", "Node", nc.Status.NodeName, "provider-id", nc.Status.ProviderID)
	return reconcile.Result{}, nil
}

// instancesOf returns what must be terminated for the NodeClaim: its recorded
// instance, or, when none is recorded but a launch may have been attempted,
// whatever instances the cloud has tagged with the NodeClaim's name.
func (r *Reconciler) instancesOf(ctx context.Context, nc *karpv1.NodeClaim) ([]*karpv1.NodeClaim, error) {
	if nc.Status.ProviderID != "" {
		return []*karpv1.NodeClaim{nc}, nil
	}
	launched := findCondition(nc, karpv1.ConditionTypeLaunched)
	if launched == nil || launched.Status == metav1.ConditionFalse {
		// No launch was attempted, or it failed without launching anything.
		return nil, nil
	}
	all, err := r.cloud.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("looking for instances of NodeClaim %s: %w", nc.Name, err)
	}
	return ownedBy(all, nc.Name), nil
}

// deleteNode starts deleting a Node of a deleting NodeClaim, passing on the
// termination deadline.
func (r *Reconciler) deleteNode(ctx context.Context, nc *karpv1.NodeClaim, node *corev1.Node) error {
	if ts := nc.Annotations[wellknown.AnnotationNodeClaimTerminationTimestamp]; ts != "" && node.Annotations[wellknown.AnnotationNodeClaimTerminationTimestamp] != ts {
		base := node.DeepCopy()
		if node.Annotations == nil {
			node.Annotations = map[string]string{}
		}
		node.Annotations[wellknown.AnnotationNodeClaimTerminationTimestamp] = ts
		if err := r.client.Patch(ctx, node, client.MergeFrom(base)); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("annotating Node %s with its termination deadline: %w", node.Name, err)
		}
	}
	if !node.DeletionTimestamp.IsZero() {
		return nil
	}
	if err := r.client.Delete(ctx, node); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Node %s of NodeClaim %s: %w", node.Name, nc.Name, err)
	}
	return nil
}

// terminationTimestamp is the deletion time plus the termination grace
// period, when the NodeClaim has one.
func terminationTimestamp(nc *karpv1.NodeClaim) (string, bool) {
	if nc.Spec.TerminationGracePeriod == nil || nc.DeletionTimestamp == nil {
		return "", false
	}
	return nc.DeletionTimestamp.Add(nc.Spec.TerminationGracePeriod.Duration).UTC().Format(time.RFC3339), true
}
