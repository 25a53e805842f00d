package lifecycle

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
)

// liveness deletes a NodeClaim whose node has not registered within
// RegistrationTimeout of the launch, and otherwise asks to be woken when that
// time comes. (The launch timeout is checked before each launch attempt.)
func (r *Reconciler) liveness(ctx context.Context, nc *karpv1.NodeClaim) (reconcile.Result, error) {
	if isTrue(nc, karpv1.ConditionTypeRegistered) {
		return reconcile.Result{}, nil
	}
	launched := findCondition(nc, karpv1.ConditionTypeLaunched)
	if launched == nil || launched.Status != metav1.ConditionTrue {
		return reconcile.Result{}, nil
	}
	left := RegistrationTimeout - r.clock.Since(launched.LastTransitionTime.Time)
	if left > 0 {
		return reconcile.Result{RequeueAfter: left}, nil
	}
	msg := fmt.Sprintf("the node of NodeClaim %s (instance %s) did not join the cluster within %s of launching; deleting the NodeClaim and terminating the instance. %s",
		nc.Name, nc.Status.ProviderID, RegistrationTimeout, registrationFailureCauses)
	log.FromContext(ctx).Info("nodeclaim registration timed out, deleting it", "provider-id", nc.Status.ProviderID, "timeout", RegistrationTimeout.String())
	r.event(nc, corev1.EventTypeWarning, ReasonRegistrationTimeout, "Delete", "%s", msg)
	if err := r.deleteNodeClaim(ctx, nc); err != nil {
		return reconcile.Result{}, err
	}
	// Once deleted, the NodeClaim is finalized and never comes here again,
	// so the failure is recorded once.
	return reconcile.Result{}, r.recordRegistration(ctx, nc, false)
}

// registrationFailureCauses are the usual reasons a launched instance's
// node does not join the cluster.
const registrationFailureCauses = "Likely causes: the node role has no EKS access entry (or aws-auth mapping) of type EC2_LINUX; " +
	"the kubelet cannot reach the API server (security groups, subnet routes, private endpoint access); " +
	"or the user data is broken (check the instance's console output)"
