// Package expiration is the NodeClaim expiration controller: once a
// NodeClaim has lived for its spec.expireAfter, counted from its creation,
// the controller deletes it, so that nodes are replaced regularly whatever
// else happens to them.
//
// Expiration is forceful. The decision ignores disruption budgets, the
// karpenter.sh/do-not-disrupt annotation and PodDisruptionBudgets; the
// termination that the deletion starts still drains the node through the
// Eviction API, honouring PodDisruptionBudgets, until the NodeClaim's
// terminationGracePeriod runs out. No replacement is launched ahead of time:
// the provisioner launches one for the pods that the drain leaves pending.
//
// Before deleting, the controller sets the NodeClaim's DisruptionReason
// condition to True with reason Expired, so that the reason the node went
// away is on the object itself; afterwards it records an Expired event and
// counts karpenter_nodeclaims_disrupted_total{reason="expired"}.
//
// Another provider's NodeClaims (see wellknown.ManagedNodeClaim) are left to
// that provider to expire.
package expiration

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/controllers/metrics"
	decide "github.com/stevedore-autoscaler/stevedore/decide/nodeclaim"
)

// Name is the controller's name, as registered with the manager and used as
// the event source.
const Name = "nodeclaim.expiration"

// ReasonExpired is the reason of the DisruptionReason condition and of the
// event recorded on an expired NodeClaim.
const ReasonExpired = "Expired"

// metricReason is the reason label of karpenter_nodeclaims_disrupted_total,
// in Karpenter's lower-case form.
const metricReason = "expired"

// Reconciler deletes expired NodeClaims. Create it with New.
type Reconciler struct {
	client   client.Client
	clock    clock.PassiveClock
	recorder events.EventRecorder
	metrics  *metrics.Metrics
}

var _ reconcile.Reconciler = (*Reconciler)(nil)

// New returns a Reconciler. The recorder may be nil, which drops events; m
// may be nil, which drops metrics.
func New(c client.Client, clk clock.PassiveClock, recorder events.EventRecorder, m *metrics.Metrics) *Reconciler {
	return &Reconciler{client: c, clock: clk, recorder: recorder, metrics: m}
}

// Register runs the Reconciler under the manager, woken by NodeClaim changes
// and, for each NodeClaim, again at its expiry.
func (r *Reconciler) Register(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named(Name).
		For(&karpv1.NodeClaim{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			nc, ok := o.(*karpv1.NodeClaim)
			return ok && wellknown.ManagedNodeClaim(nc)
		}))).
		Complete(r)
}

// Reconcile deletes the NodeClaim if it has expired, or asks to run again at
// its expiry.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nc := &karpv1.NodeClaim{}
	if err := r.client.Get(ctx, req.NamespacedName, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !nc.DeletionTimestamp.IsZero() || !wellknown.ManagedNodeClaim(nc) {
		return reconcile.Result{}, nil
	}
	now := r.clock.Now()
	at, expired := decide.Expired(nc, now)
	if at.IsZero() {
		return reconcile.Result{}, nil
	}
	if !expired {
		return reconcile.Result{RequeueAfter: at.Sub(now)}, nil
	}

	msg := fmt.Sprintf("NodeClaim %s expired at %s: expireAfter %s after its creation at %s",
		nc.Name, at.UTC().Format(time.RFC3339), nc.Spec.ExpireAfter, nc.CreationTimestamp.UTC().Format(time.RFC3339))
	base := nc.DeepCopy()
	meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{
		Type:               karpv1.ConditionTypeDisruptionReason,
		Status:             metav1.ConditionTrue,
		Reason:             ReasonExpired,
		Message:            msg,
		ObservedGeneration: nc.Generation,
		LastTransitionTime: metav1.NewTime(now),
	})
	if !equality.Semantic.DeepEqual(base.Status, nc.Status) {
		if err := r.client.Status().Patch(ctx, nc, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsNotFound(err) {
				return reconcile.Result{}, nil
			}
			return reconcile.Result{}, fmt.Errorf("setting the disruption reason of NodeClaim %s: %w", nc.Name, err)
		}
	}
	if err := r.client.Delete(ctx, nc, client.Preconditions{UID: &nc.UID}); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("deleting expired NodeClaim %s: %w", nc.Name, err)
	}
	// Counted once: a deleting NodeClaim is not reconciled again above.
	log.FromContext(ctx).Info("deleting expired nodeclaim", "NodeClaim", nc.Name, "expiredAt", at.UTC().Format(time.RFC3339))
	if r.recorder != nil {
		r.recorder.Eventf(nc, nil, corev1.EventTypeNormal, ReasonExpired, "Delete", "%s; deleting it", msg)
	}
	r.metrics.NodeClaimDisrupted(metricReason, nc.Labels[wellknown.LabelNodePool], nc.Labels[wellknown.LabelCapacityType])
	return reconcile.Result{}, nil
}
