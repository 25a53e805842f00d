// Package lifecycle is the NodeClaim lifecycle controller: it takes a
// NodeClaim from creation to a working node and, when the NodeClaim is
// deleted, back to nothing. NodeClaims of another provider's node class
// (see wellknown.ManagedNodeClaim) are left to that provider.
//
// A NodeClaim moves through four steps, each recorded as a status condition:
//
//   - Launched: the cloud provider has created the instance; the NodeClaim
//     carries its provider ID, image, capacity and labels.
//   - Registered: the instance's Node has joined the cluster and has been
//     given the NodeClaim's labels, annotations and taints, an owner
//     reference and the termination finalizer; the unregistered taint is gone.
//   - Initialized: the Node is Ready, its startup and boot taints are gone and
//     every requested extended resource is allocatable.
//   - Ready: all three of the above.
//
// A NodeClaim that does not launch within LaunchTimeout, or whose node does
// not register within RegistrationTimeout of the launch, is deleted. Deleting
// a NodeClaim deletes its Node (whose own finalizer drains it) and then
// terminates the instance; the NodeClaim's finalizer is removed only once the
// cloud provider reports the instance gone, so instances never leak.
//
// The Reconciler holds no state between calls: everything it needs is on the
// NodeClaim, the Node and in the cloud. Time comes from the injected clock, so
// the same code runs under a controller-runtime manager and in the simulator.
package lifecycle

import (
	"context"
	"fmt"
	"strings"
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
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud"
	"github.com/stevedore-autoscaler/stevedore/controllers/metrics"
)

// Name is the controller's name, as registered with the manager and used as
// the event source.
const Name = "nodeclaim.lifecycle"

// Timers.
const (
	// LaunchTimeout is how long a NodeClaim may stay not Launched, counted
	// from when the controller first saw it, before it is deleted.
	LaunchTimeout = 5 * time.Minute
	// RegistrationTimeout is how long a launched NodeClaim's node may take to
	// join the cluster before the NodeClaim is deleted.
	RegistrationTimeout = 15 * time.Minute
	// InstanceTerminationPoll is how often a deleting NodeClaim checks that
	// its instance is gone.
	InstanceTerminationPoll = 5 * time.Second
	// NodeDeletionPoll is how often a deleting NodeClaim checks that its
	// Nodes are gone, besides being woken by their deletion.
	NodeDeletionPoll = 10 * time.Second
	// CreateRetry is the wait before a launch that failed with a CreateError
	// is tried again.
	CreateRetry = 10 * time.Second
)

// Indexes the controller asks the manager's cache for.
const (
	// NodeProviderIDIndex indexes Nodes by spec.providerID.
	NodeProviderIDIndex = "spec.providerID"
	// NodeClaimProviderIDIndex indexes NodeClaims by status.providerID.
	NodeClaimProviderIDIndex = "status.providerID"
)

// Reasons of events and conditions.
const (
	ReasonLaunching            = "Launching"
	ReasonLaunched             = "Launched"
	ReasonInsufficientCapacity = "InsufficientCapacity"
	// ReasonInsufficientCapacityError is the event recorded with the
	// InsufficientCapacity condition, Karpenter's.
	ReasonInsufficientCapacityError = "InsufficientCapacityError"
	ReasonNodeClassNotReady         = "NodeClassNotReady"
	ReasonLaunchTimeout             = "LaunchTimeout"
	ReasonAwaitingLaunch            = "AwaitingLaunch"
	ReasonNodeNotFound              = "NodeNotFound"
	ReasonMultipleNodesFound        = "MultipleNodesFound"
	ReasonRegistered                = "Registered"
	ReasonRegistrationTimeout       = "RegistrationTimeout"
	ReasonUnregisteredTaintMissing  = "UnregisteredTaintMissing"
	ReasonAwaitingRegistration      = "AwaitingRegistration"
	ReasonNodeNotReady              = "NodeNotReady"
	ReasonStartupTaintsPresent      = "StartupTaintsPresent"
	ReasonResourcesNotRegistered    = "ResourcesNotRegistered"
	ReasonInitialized               = "Initialized"
	ReasonReady                     = "Ready"
	ReasonInstanceTerminating       = "InstanceTerminating"
	ReasonDeleted                   = "Deleted"
	// ReasonTerminationGracePeriodExpiring is the event recorded when a
	// deleted NodeClaim gets its termination deadline, Karpenter's.
	ReasonTerminationGracePeriodExpiring = "TerminationGracePeriodExpiring"
)

// Reconciler is the NodeClaim lifecycle controller. Create it with New.
type Reconciler struct {
	client   client.Client
	cloud    cloud.CloudProvider
	clock    clock.PassiveClock
	recorder events.EventRecorder
	metrics  *metrics.Metrics
	// indexed is set when the client reads from a cache that has the
	// provider-ID indexes; otherwise Nodes are listed and filtered.
	indexed bool
}

var _ reconcile.Reconciler = (*Reconciler)(nil)

// New returns a Reconciler. The recorder may be nil, which drops events; m
// may be nil, which drops metrics.
func New(c client.Client, cp cloud.CloudProvider, clk clock.PassiveClock, recorder events.EventRecorder, m *metrics.Metrics) *Reconciler {
	return &Reconciler{client: c, cloud: cp, clock: clk, recorder: recorder, metrics: m}
}

// NodeProviderID is the index function of NodeProviderIDIndex: a Node's
// spec.providerID, if it has one.
func NodeProviderID(o client.Object) []string {
	if id := o.(*corev1.Node).Spec.ProviderID; id != "" {
		return []string{id}
	}
	return nil
}

// NodeClaimProviderID is the index function of NodeClaimProviderIDIndex: a
// NodeClaim's status.providerID, if it has one.
func NodeClaimProviderID(o client.Object) []string {
	if id := o.(*karpv1.NodeClaim).Status.ProviderID; id != "" {
		return []string{id}
	}
	return nil
}

// WithIndexes tells the Reconciler that its client selects Nodes by
// NodeProviderIDIndex (indexed with NodeProviderID), so that finding a
// NodeClaim's Node is a look-up instead of a list of every Node. Register
// sets this up itself under a manager; a caller that drives the Reconciler
// over another client with that index (the simulator) uses WithIndexes. It
// returns r.
func (r *Reconciler) WithIndexes() *Reconciler {
	r.indexed = true
	return r
}

// Register indexes Nodes and NodeClaims by provider ID in the manager's cache
// and runs the Reconciler under the manager, woken by NodeClaim changes and by
// changes to the Nodes that share a NodeClaim's provider ID. The Reconciler
// must have been created with the manager's client.
func (r *Reconciler) Register(mgr manager.Manager) error {
	ctx := context.Background()
	idx := mgr.GetFieldIndexer()
	if err := ignoreIndexConflict(idx.IndexField(ctx, &corev1.Node{}, NodeProviderIDIndex, NodeProviderID)); err != nil {
		return fmt.Errorf("indexing Nodes by %s: %w", NodeProviderIDIndex, err)
	}
	if err := ignoreIndexConflict(idx.IndexField(ctx, &karpv1.NodeClaim{}, NodeClaimProviderIDIndex, NodeClaimProviderID)); err != nil {
		return fmt.Errorf("indexing NodeClaims by %s: %w", NodeClaimProviderIDIndex, err)
	}
	r.WithIndexes()
	return builder.ControllerManagedBy(mgr).
		Named(Name).
		For(&karpv1.NodeClaim{}, builder.WithPredicates(predicate.NewPredicateFuncs(managed))).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.nodeClaimsForNode)).
		Complete(r)
}

// managed passes stevedore's NodeClaims.
func managed(o client.Object) bool {
	nc, ok := o.(*karpv1.NodeClaim)
	return ok && wellknown.ManagedNodeClaim(nc)
}

// ignoreIndexConflict lets several controllers register the same index.
func ignoreIndexConflict(err error) error {
	if err != nil && strings.Contains(err.Error(), "conflict") {
		return nil
	}
	return err
}

// nodeClaimsForNode maps a Node to the NodeClaims with its provider ID.
func (r *Reconciler) nodeClaimsForNode(ctx context.Context, o client.Object) []reconcile.Request {
	node, ok := o.(*corev1.Node)
	if !ok || node.Spec.ProviderID == "" {
		return nil
	}
	var list karpv1.NodeClaimList
	if err := r.client.List(ctx, &list, client.MatchingFields{NodeClaimProviderIDIndex: node.Spec.ProviderID}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return out
}

// Reconcile moves one NodeClaim forward by as many steps as it can take now.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nc := &karpv1.NodeClaim{}
	if err := r.client.Get(ctx, req.NamespacedName, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	// Another provider's NodeClaim may still come through its Node's events.
	if !wellknown.ManagedNodeClaim(nc) {
		return reconcile.Result{}, nil
	}
	if !nc.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, nc)
	}
	if err := r.patchMeta(ctx, nc, func(nc *karpv1.NodeClaim) {
		addFinalizer(&nc.ObjectMeta)
	}); err != nil {
		return reconcile.Result{}, err
	}

	res, done, err := r.launch(ctx, nc)
	if done || err != nil {
		return res, err
	}
	if isTrue(nc, karpv1.ConditionTypeLaunched) {
		if err := r.register(ctx, nc); err != nil {
			return reconcile.Result{}, err
		}
	}
	if isTrue(nc, karpv1.ConditionTypeRegistered) {
		if err := r.initialize(ctx, nc); err != nil {
			return reconcile.Result{}, err
		}
	}
	return r.liveness(ctx, nc)
}

// patchMeta applies mutate to nc and, if its metadata changed, writes it with
// a merge patch guarded by the resource version.
func (r *Reconciler) patchMeta(ctx context.Context, nc *karpv1.NodeClaim, mutate func(*karpv1.NodeClaim)) error {
	base := nc.DeepCopy()
	mutate(nc)
	if equality.Semantic.DeepEqual(base.ObjectMeta, nc.ObjectMeta) {
		return nil
	}
	if err := r.client.Patch(ctx, nc, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("patching NodeClaim %s: %w", nc.Name, err)
	}
	return nil
}

// patchStatus applies mutate to nc and, if its status changed, writes it
// through the status subresource with a merge patch guarded by the resource
// version. The Ready condition is kept in step with the others.
func (r *Reconciler) patchStatus(ctx context.Context, nc *karpv1.NodeClaim, mutate func(*karpv1.NodeClaim)) error {
	base := nc.DeepCopy()
	mutate(nc)
	r.setReady(nc)
	if equality.Semantic.DeepEqual(base.Status, nc.Status) {
		return nil
	}
	if err := r.client.Status().Patch(ctx, nc, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("patching status of NodeClaim %s: %w", nc.Name, err)
	}
	return nil
}

// setCondition sets a condition at the clock's time. The transition time
// changes only when the status does.
func (r *Reconciler) setCondition(nc *karpv1.NodeClaim, typ string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{
		Type:               typ,
		Status:             status,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: nc.Generation,
		LastTransitionTime: metav1.NewTime(r.clock.Now()),
	})
}

// initConditions gives the lifecycle conditions an Unknown value if they have
// none, so that their transition times start the liveness timers.
func (r *Reconciler) initConditions(nc *karpv1.NodeClaim) {
	for _, c := range []struct{ typ, reason, msg string }{
		{karpv1.ConditionTypeLaunched, ReasonLaunching, "the instance is being launched"},
		{karpv1.ConditionTypeRegistered, ReasonAwaitingLaunch, "waiting for the instance to launch"},
		{karpv1.ConditionTypeInitialized, ReasonAwaitingRegistration, "waiting for the node to register"},
	} {
		if meta.FindStatusCondition(nc.Status.Conditions, c.typ) == nil {
			r.setCondition(nc, c.typ, metav1.ConditionUnknown, c.reason, c.msg)
		}
	}
}

// setReady derives the Ready condition from Launched, Registered and
// Initialized: True when all are, otherwise the first that is not.
func (r *Reconciler) setReady(nc *karpv1.NodeClaim) {
	if meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeLaunched) == nil {
		return
	}
	for _, typ := range []string{karpv1.ConditionTypeLaunched, karpv1.ConditionTypeRegistered, karpv1.ConditionTypeInitialized} {
		c := meta.FindStatusCondition(nc.Status.Conditions, typ)
		if c == nil {
			r.setCondition(nc, karpv1.ConditionTypeReady, metav1.ConditionUnknown, "Awaiting"+typ, typ+" is not set")
			return
		}
		if c.Status != metav1.ConditionTrue {
			status := metav1.ConditionUnknown
			if c.Status == metav1.ConditionFalse {
				status = metav1.ConditionFalse
			}
			r.setCondition(nc, karpv1.ConditionTypeReady, status, "Not"+typ, typ+": "+c.Message)
			return
		}
	}
	r.setCondition(nc, karpv1.ConditionTypeReady, metav1.ConditionTrue, ReasonReady, "")
}

// event records an event about the NodeClaim, if there is a recorder.
func (r *Reconciler) event(nc *karpv1.NodeClaim, eventType, reason, action, note string, args ...any) {
	if r.recorder == nil {
		return
	}
	r.recorder.Eventf(nc, nil, eventType, reason, action, note, args...)
}

// deleteNodeClaim deletes the NodeClaim; its finalizer then cleans up.
func (r *Reconciler) deleteNodeClaim(ctx context.Context, nc *karpv1.NodeClaim) error {
	if err := r.client.Delete(ctx, nc, client.Preconditions{UID: &nc.UID}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting NodeClaim %s: %w", nc.Name, err)
	}
	return nil
}

func isTrue(nc *karpv1.NodeClaim, typ string) bool {
	return meta.IsStatusConditionTrue(nc.Status.Conditions, typ)
}

func addFinalizer(m *metav1.ObjectMeta) {
	for _, f := range m.Finalizers {
		if f == finalizer {
			return
		}
	}
	m.Finalizers = append(m.Finalizers, finalizer)
}

func removeFinalizer(m *metav1.ObjectMeta) {
	out := m.Finalizers[:0]
	for _, f := range m.Finalizers {
		if f != finalizer {
			out = append(out, f)
		}
	}
	m.Finalizers = out
}
