// Package garbagecollection is the NodeClaim garbage collector: every
// Interval it deletes the registered NodeClaims whose instance the cloud
// provider no longer lists (terminated from outside stevedore: by hand, by
// EC2, by another tool), so that their pods are rescheduled and replacement
// capacity is launched instead of waiting on a node that will never come
// back.
//
// A NodeClaim whose Node is still Ready is kept: a Ready node proves the
// instance is alive, and the cloud's list may simply lag. NodeClaims that
// have not registered are left to the lifecycle controller's launch and
// registration timeouts, and another provider's NodeClaims (see
// wellknown.ManagedNodeClaim) to that provider.
//
// Deleting a NodeClaim hands it to the lifecycle controller's finalizer,
// which deletes its Node and confirms the instance is gone.
package garbagecollection

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud"
	"github.com/stevedore-autoscaler/stevedore/controllers/singleton"
)

// Name is the controller's name, as registered with the manager and used as
// the event source.
const Name = "nodeclaim.garbagecollection"

// Interval is how often the collector runs.
const Interval = 2 * time.Minute

// ReasonInstanceNotFound is the event recorded on a NodeClaim deleted
// because its instance is gone.
const ReasonInstanceNotFound = "InstanceNotFound"

// Request returns the request the collector reconciles: there is one
// collector, whatever the request says.
func Request() reconcile.Request {
	return singleton.Request(Name)
}

// Reconciler is the NodeClaim garbage collector. Create it with New.
type Reconciler struct {
	client   client.Client
	cloud    cloud.CloudProvider
	clock    clock.PassiveClock
	recorder events.EventRecorder
}

var _ reconcile.Reconciler = (*Reconciler)(nil)

// New returns a Reconciler. The recorder may be nil, which drops events.
func New(c client.Client, cp cloud.CloudProvider, clk clock.PassiveClock, recorder events.EventRecorder) *Reconciler {
	return &Reconciler{client: c, cloud: cp, clock: clk, recorder: recorder}
}

// Register runs the collector under the manager: once when the manager
// starts, then every Interval.
func (r *Reconciler) Register(mgr manager.Manager) error {
	return singleton.Register(mgr, Name, r)
}

// Reconcile deletes the registered NodeClaims whose instance is gone and
// whose Node is not Ready, and asks to run again after Interval.
func (r *Reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	next := reconcile.Result{RequeueAfter: Interval}
	// The lists are only read (a NodeClaim to delete is copied first), so
	// the cache need not copy every object for each pass.
	var claims karpv1.NodeClaimList
	if err := r.client.List(ctx, &claims, client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing NodeClaims: %w", err)
	}
	var candidates []*karpv1.NodeClaim
	for i := range claims.Items {
		nc := &claims.Items[i]
		if wellknown.ManagedNodeClaim(nc) && nc.DeletionTimestamp.IsZero() && nc.Status.ProviderID != "" &&
			meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeRegistered) {
			candidates = append(candidates, nc)
		}
	}
	if len(candidates) == 0 {
		return next, nil
	}
	// Listed after the NodeClaims: an instance launched in between belongs
	// to a NodeClaim that is not registered yet, so it cannot be mistaken
	// for a missing one.
	instances, err := r.cloud.List(ctx)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("listing cloud instances: %w", err)
	}
	alive := make(map[string]bool, len(instances))
	for _, inst := range instances {
		// An instance that is shutting down is as good as gone.
		if inst.DeletionTimestamp.IsZero() {
			alive[inst.Status.ProviderID] = true
		}
	}
	var nodes corev1.NodeList
	if err := r.client.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing Nodes: %w", err)
	}
	ready := map[string]bool{}
	for i := range nodes.Items {
		if n := &nodes.Items[i]; n.Spec.ProviderID != "" && nodeReady(n) {
			ready[n.Spec.ProviderID] = true
		}
	}

	logger := log.FromContext(ctx)
	var errs []error
	for _, nc := range candidates {
		if alive[nc.Status.ProviderID] || ready[nc.Status.ProviderID] {
			continue
		}
		// The listed object is shared with the cache; the event recorder
		// and Delete get a copy of their own.
		nc = nc.DeepCopy()
		logger.Info("garbage collecting nodeclaim with no cloudprovider instance",
			"NodeClaim", nc.Name, "provider-id", nc.Status.ProviderID, "Node", nc.Status.NodeName)
		if r.recorder != nil {
			r.recorder.Eventf(nc, nil, corev1.EventTypeWarning, ReasonInstanceNotFound, "Delete",
				"instance %s no longer exists in the cloud provider; deleting the NodeClaim so that its pods are rescheduled", nc.Status.ProviderID)
		}
		if err := r.client.Delete(ctx, nc, client.Preconditions{UID: &nc.UID}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting NodeClaim %s: %w", nc.Name, err))
		}
	}
	if len(errs) > 0 {
		return reconcile.Result{}, errors.Join(errs...)
	}
	return next, nil
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
