package lifecycle

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud"
)

// launch creates the NodeClaim's instance unless it has one. done reports
// that the reconcile should stop here (the NodeClaim was deleted or the launch
// must be retried later).
//
// A launch is never repeated for an instance that exists: a NodeClaim with a
// provider ID is launched, and a NodeClaim whose earlier launch attempt may
// have created an instance without recording it (the Launched condition is
// set but there is no provider ID) first looks for an instance tagged with its
// name and adopts it.
func (r *Reconciler) launch(ctx context.Context, nc *karpv1.NodeClaim) (res reconcile.Result, done bool, err error) {
	if nc.Status.ProviderID != "" {
		if !isTrue(nc, karpv1.ConditionTypeLaunched) {
			// The result was recorded but not the condition.
			return reconcile.Result{}, false, r.patchStatus(ctx, nc, func(nc *karpv1.NodeClaim) {
				r.initConditions(nc)
				r.setLaunched(nc)
			})
		}
		return reconcile.Result{}, false, nil
	}
	cond := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeLaunched)
	if cond != nil && cond.Status == metav1.ConditionFalse {
		// A launch that failed for good; the NodeClaim is being deleted.
		return reconcile.Result{}, true, nil
	}
	if cond != nil {
		adopted, err := r.findLaunched(ctx, nc)
		if err != nil {
			return reconcile.Result{}, true, err
		}
		if adopted != nil {
			log.FromContext(ctx).Info("adopting instance launched by an earlier attempt", "provider-id", adopted.Status.ProviderID)
			return reconcile.Result{}, false, r.recordLaunch(ctx, nc, adopted)
		}
	}
	if timedOut, res, err := r.launchTimedOut(ctx, nc); timedOut || err != nil {
		return res, true, err
	}
	// Record that a launch is being attempted before attempting it: a
	// NodeClaim seen later with this condition and no provider ID may have an
	// instance that must be found.
	if err := r.patchStatus(ctx, nc, r.initConditions); err != nil {
		return reconcile.Result{}, true, err
	}

	created, err := r.cloud.Create(ctx, nc)
	if err != nil {
		return r.launchFailed(ctx, nc, err)
	}
	if err := r.recordLaunch(ctx, nc, created); err != nil {
		return reconcile.Result{}, true, err
	}
	log.FromContext(ctx).Info("launched nodeclaim",
		"provider-id", nc.Status.ProviderID,
		"instance-type", nc.Labels[wellknown.LabelInstanceType],
		"zone", nc.Labels[wellknown.LabelTopologyZone],
		"capacity-type", nc.Labels[wellknown.LabelCapacityType],
		"allocatable", resourceString(nc.Status.Allocatable))
	return reconcile.Result{}, false, nil
}

// eventReason is the reason of the event recorded with a launch failure's
// condition reason: Karpenter's event reasons.
func eventReason(conditionReason string) string {
	if conditionReason == ReasonInsufficientCapacity {
		return ReasonInsufficientCapacityError
	}
	return conditionReason
}

// launchFailed handles an error from Create.
func (r *Reconciler) launchFailed(ctx context.Context, nc *karpv1.NodeClaim, err error) (reconcile.Result, bool, error) {
	logger := log.FromContext(ctx)
	reason := ""
	switch {
	case cloud.IsInsufficientCapacityError(err):
		reason = ReasonInsufficientCapacity
	case cloud.IsNodeClassNotReadyError(err):
		reason = ReasonNodeClassNotReady
	}
	if reason != "" {
		// Nothing was launched: say so, so that the finalizer need not look
		// for an instance, and delete the NodeClaim so that the provisioner
		// can try another offering.
		logger.Error(err, "failed launching nodeclaim, deleting it", "reason", reason)
		r.event(nc, corev1.EventTypeWarning, eventReason(reason), "Launch", "NodeClaim %s could not launch and is deleted: %s", nc.Name, err.Error())
		if perr := r.patchStatus(ctx, nc, func(nc *karpv1.NodeClaim) {
			r.setCondition(nc, karpv1.ConditionTypeLaunched, metav1.ConditionFalse, reason, err.Error())
		}); perr != nil {
			return reconcile.Result{}, true, perr
		}
		return reconcile.Result{}, true, r.deleteNodeClaim(ctx, nc)
	}
	reason, message := cloud.ReasonLaunchFailed, err.Error()
	if ce, ok := cloud.AsCreateError(err); ok {
		reason = ce.Reason
		if ce.Message != "" {
			message = ce.Message
		}
	}
	logger.Error(err, "failed launching nodeclaim", "reason", reason)
	if perr := r.patchStatus(ctx, nc, func(nc *karpv1.NodeClaim) {
		r.setCondition(nc, karpv1.ConditionTypeLaunched, metav1.ConditionUnknown, reason, message)
	}); perr != nil {
		return reconcile.Result{}, true, perr
	}
	return reconcile.Result{RequeueAfter: CreateRetry}, true, nil
}

// launchTimedOut deletes the NodeClaim if it has not launched within
// LaunchTimeout of its Launched condition first being set.
func (r *Reconciler) launchTimedOut(ctx context.Context, nc *karpv1.NodeClaim) (bool, reconcile.Result, error) {
	cond := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeLaunched)
	if cond == nil || cond.Status == metav1.ConditionTrue {
		return false, reconcile.Result{}, nil
	}
	if r.clock.Since(cond.LastTransitionTime.Time) < LaunchTimeout {
		return false, reconcile.Result{}, nil
	}
	msg := fmt.Sprintf("NodeClaim %s did not launch within %s (last: %s: %s); deleting it", nc.Name, LaunchTimeout, cond.Reason, cond.Message)
	log.FromContext(ctx).Info("nodeclaim launch timed out, deleting it", "reason", cond.Reason, "message", cond.Message)
	r.event(nc, corev1.EventTypeWarning, ReasonLaunchTimeout, "Delete", "%s", msg)
	return true, reconcile.Result{}, r.deleteNodeClaim(ctx, nc)
}

// recordLaunch writes what Create resolved onto the NodeClaim: the labels
// and annotations first, then the status with the provider ID and the
// Launched condition. In that order a NodeClaim never reads as launched
// without the labels of its instance, which drift would otherwise judge it by
// (as missing). The instance cannot leak in between: the Launched condition
// was set before Create, so a NodeClaim without a provider ID looks for an
// instance tagged with its name first. A conflicting write is retried on the
// latest version, since the instance now exists whatever happened to the
// NodeClaim.
func (r *Reconciler) recordLaunch(ctx context.Context, nc *karpv1.NodeClaim, created *karpv1.NodeClaim) error {
	if err := r.retryOnConflict(ctx, nc, created, func() error {
		return r.patchMeta(ctx, nc, func(nc *karpv1.NodeClaim) {
			if len(created.Labels) > 0 && nc.Labels == nil {
				nc.Labels = map[string]string{}
			}
			maps.Copy(nc.Labels, created.Labels)
			if len(created.Annotations) > 0 && nc.Annotations == nil {
				nc.Annotations = map[string]string{}
			}
			maps.Copy(nc.Annotations, created.Annotations)
		})
	}); err != nil {
		return err
	}
	return r.retryOnConflict(ctx, nc, created, func() error {
		return r.patchStatus(ctx, nc, func(nc *karpv1.NodeClaim) {
			nc.Status.ProviderID = created.Status.ProviderID
			nc.Status.ImageID = created.Status.ImageID
			nc.Status.Capacity = created.Status.Capacity.DeepCopy()
			nc.Status.Allocatable = created.Status.Allocatable.DeepCopy()
			r.initConditions(nc)
			r.setLaunched(nc)
		})
	})
}

// retryOnConflict runs write up to three times, reading nc again after a
// conflict. If nc is gone, nothing will ever own the instance created for
// it, which is terminated.
func (r *Reconciler) retryOnConflict(ctx context.Context, nc *karpv1.NodeClaim, created *karpv1.NodeClaim, write func() error) error {
	var err error
	for range 3 {
		if err = write(); !apierrors.IsConflict(err) {
			return err
		}
		if gerr := r.client.Get(ctx, client.ObjectKeyFromObject(nc), nc); gerr != nil {
			if apierrors.IsNotFound(gerr) {
				if derr := cloud.IgnoreNodeClaimNotFoundError(r.cloud.Delete(ctx, created)); derr != nil {
					return fmt.Errorf("NodeClaim %s vanished after launching %s, and terminating the instance failed: %w", nc.Name, created.Status.ProviderID, derr)
				}
			}
			return fmt.Errorf("recording launch of %s: %w", created.Status.ProviderID, gerr)
		}
	}
	return err
}

func (r *Reconciler) setLaunched(nc *karpv1.NodeClaim) {
	r.setCondition(nc, karpv1.ConditionTypeLaunched, metav1.ConditionTrue, ReasonLaunched, "")
	r.setCondition(nc, karpv1.ConditionTypeRegistered, metav1.ConditionUnknown, ReasonNodeNotFound, "waiting for the node to join the cluster")
}

// findLaunched returns the live instance tagged with the NodeClaim's name, if
// the cloud has one.
func (r *Reconciler) findLaunched(ctx context.Context, nc *karpv1.NodeClaim) (*karpv1.NodeClaim, error) {
	all, err := r.cloud.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("looking for an instance of NodeClaim %s: %w", nc.Name, err)
	}
	for _, c := range ownedBy(all, nc.Name) {
		if c.DeletionTimestamp.IsZero() {
			return c, nil
		}
	}
	return nil, nil
}

// ownedBy returns the cloud's instances that belong to the named NodeClaim.
func ownedBy(all []*karpv1.NodeClaim, name string) []*karpv1.NodeClaim {
	var out []*karpv1.NodeClaim
	for _, c := range all {
		if c.Name == name && c.Status.ProviderID != "" {
			out = append(out, c)
		}
	}
	return out
}

// resourceString renders a resource list in a stable order for logs.
func resourceString(rl corev1.ResourceList) map[string]string {
	out := make(map[string]string, len(rl))
	for k, v := range rl {
		out[string(k)] = v.String()
	}
	return out
}
