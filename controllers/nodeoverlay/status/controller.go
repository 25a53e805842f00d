// Package status reports, on each NodeOverlay, whether it applies: the
// conditions ValidationSucceeded (False with reason RuntimeValidation when a
// check the API server cannot do fails, or Conflict when an overlay of the
// same weight sets the same offering's price or resource and wins) and
// Ready, which follows it. It runs only with the NodeOverlay feature gate.
//
// The verdicts come from provisioning.EvaluateOverlays, the evaluation the
// provisioner and consolidation apply to the catalog, so that what an
// overlay's status says is what stevedore does. The controller itself
// changes nothing but the status: the catalog is re-evaluated from the
// cluster state on every pass.
package status

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/karpenter/v1alpha1"
	"github.com/stevedore-autoscaler/stevedore/cloud"
	"github.com/stevedore-autoscaler/stevedore/controllers/provisioning"
	"github.com/stevedore-autoscaler/stevedore/controllers/singleton"
	"github.com/stevedore-autoscaler/stevedore/scheduling/overlay"
	"github.com/stevedore-autoscaler/stevedore/state"
)

// Name is the controller's name.
const Name = "nodeoverlay.status"

// Period is how often the overlays are evaluated again without a change to
// an overlay, NodePool or node class: the instance types a cloud lists can
// change on their own.
const Period = 5 * time.Minute

// Reasons of the conditions when they are True.
const (
	ReasonValidationSucceeded = "ValidationSucceeded"
	ReasonReady               = "Ready"
	// ReasonNotValidated is Ready's reason when ValidationSucceeded is False.
	ReasonNotValidated = "NotValidationSucceeded"
)

// Controller writes the NodeOverlays' conditions.
type Controller struct {
	kube  client.Client
	state *state.Cluster
	cloud cloud.CloudProvider
	clock clock.PassiveClock
}

// New returns the controller.
func New(kube client.Client, st *state.Cluster, cp cloud.CloudProvider, clk clock.PassiveClock) *Controller {
	return &Controller{kube: kube, state: st, cloud: cp, clock: clk}
}

// Register adds the controller to mgr. It is a singleton: one pass judges
// every overlay against every other, so any change to an overlay, a
// NodePool or a node class wakes the same request.
func (c *Controller) Register(mgr manager.Manager) error {
	wake := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{singleton.Request(Name)}
	})
	return singleton.Builder(mgr, Name).
		Watches(&v1alpha1.NodeOverlay{}, wake, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&karpv1.NodePool{}, wake, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&awsv1.EC2NodeClass{}, wake).
		Complete(c)
}

// Reconcile evaluates every overlay and writes the conditions that changed.
func (c *Controller) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	if !c.state.Synced(ctx, c.kube) {
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}
	snap := c.state.Snapshot(c.clock.Now())
	if len(snap.NodeOverlays) == 0 {
		return reconcile.Result{RequeueAfter: Period}, nil
	}
	result := provisioning.EvaluateOverlays(ctx, c.cloud, snap)
	verdicts := make(map[string]overlay.Verdict, len(result.Verdicts))
	for _, v := range result.Verdicts {
		verdicts[v.Name] = v
	}
	var errs []error
	for _, o := range snap.NodeOverlays {
		if !o.DeletionTimestamp.IsZero() {
			continue
		}
		updated := o.DeepCopy()
		SetConditions(updated, verdicts[o.Name], c.clock.Now())
		if equality.Semantic.DeepEqual(o.Status, updated.Status) {
			continue
		}
		// The optimistic lock keeps a patch made from a stale copy from
		// overwriting conditions written since; the next pass sees them.
		err := c.kube.Status().Patch(ctx, updated, client.MergeFromWithOptions(o, client.MergeFromWithOptimisticLock{}))
		switch {
		case apierrors.IsNotFound(err):
		case apierrors.IsConflict(err):
			return reconcile.Result{RequeueAfter: time.Second}, nil
		case err != nil:
			errs = append(errs, fmt.Errorf("NodeOverlay %s: %w", o.Name, err))
		default:
			c.state.UpdateNodeOverlay(updated)
		}
	}
	return reconcile.Result{RequeueAfter: Period}, errors.Join(errs...)
}

// SetConditions sets the overlay's ValidationSucceeded and Ready from its
// verdict. The transition time changes only when a condition's status does.
func SetConditions(o *v1alpha1.NodeOverlay, v overlay.Verdict, now time.Time) {
	set := func(typ string, status metav1.ConditionStatus, reason, message string) {
		meta.SetStatusCondition(&o.Status.Conditions, metav1.Condition{
			Type: typ, Status: status, Reason: reason, Message: message,
			ObservedGeneration: o.Generation, LastTransitionTime: metav1.NewTime(now),
		})
	}
	if v.Valid {
		set(v1alpha1.ConditionTypeValidationSucceeded, metav1.ConditionTrue, ReasonValidationSucceeded, "")
		set(v1alpha1.ConditionTypeReady, metav1.ConditionTrue, ReasonReady, "")
		return
	}
	set(v1alpha1.ConditionTypeValidationSucceeded, metav1.ConditionFalse, v.Reason, v.Message)
	set(v1alpha1.ConditionTypeReady, metav1.ConditionFalse, ReasonNotValidated, v1alpha1.ConditionTypeValidationSucceeded+": "+v.Message)
}
