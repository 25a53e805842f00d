// Package consistency is the NodeClaim consistency controller: it checks,
// every ScanPeriod, that the Node a NodeClaim became is what the NodeClaim
// promised, as Karpenter's nodeclaim.consistency controller does.
//
// The one check is the node's shape: for every resource the NodeClaim
// requests, the Node's capacity must be at least 90% of the capacity the
// NodeClaim expected at launch (status.capacity). It is made once the
// NodeClaim is initialized and not being deleted. Each shortfall is logged
// and recorded as a FailedConsistencyCheck Warning on the NodeClaim, and its
// ConsistentStateFound condition turns False; with none it turns True.
// Nothing else is done about it: the node stays.
//
// The Reconciler remembers when it last checked each NodeClaim, so that the
// Node and NodeClaim updates that wake it do not repeat the check more
// often than every ScanPeriod; after a restart each NodeClaim is checked
// again at once.
package consistency

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/controllers/eventlimit"
	"github.com/stevedore-autoscaler/stevedore/controllers/nodeclaim/conditions"
)

// Name is the controller's name, as registered with the manager.
const Name = "nodeclaim.consistency"

// ScanPeriod is how often a NodeClaim is checked.
const ScanPeriod = 10 * time.Minute

// EventInterval is the least time between two FailedConsistencyCheck events
// about the same NodeClaim and issue.
const EventInterval = 2 * time.Minute

// MinCapacityFraction is the least fraction of the expected capacity of a
// requested resource a Node may have.
const MinCapacityFraction = 0.9

// ReasonFailedConsistencyCheck is the event of an issue a check found,
// Karpenter's.
const ReasonFailedConsistencyCheck = "FailedConsistencyCheck"

// conditionReasonFailed is the reason of a False ConsistentStateFound.
const conditionReasonFailed = "ConsistencyCheckFailed"

// Reconciler checks NodeClaims against their Nodes. Create it with New.
type Reconciler struct {
	client client.Client
	clock  clock.PassiveClock
	events *eventlimit.Recorder

	mu sync.Mutex
	// scanned is when each NodeClaim, by name, was last checked; the UID
	// tells a NodeClaim created again under the same name, which is
	// checked afresh.
	scanned map[string]scan
}

type scan struct {
	uid types.UID
	at  time.Time
}

var _ reconcile.Reconciler = (*Reconciler)(nil)

// New returns a Reconciler. The recorder may be nil, which drops events.
func New(c client.Client, clk clock.PassiveClock, recorder events.EventRecorder) *Reconciler {
	return &Reconciler{client: c, clock: clk, events: eventlimit.New(recorder, EventInterval), scanned: map[string]scan{}}
}

// Register runs the Reconciler under the manager, woken by changes to
// stevedore's NodeClaims and to the Nodes they own.
func (r *Reconciler) Register(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named(Name).
		For(&karpv1.NodeClaim{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			nc, ok := o.(*karpv1.NodeClaim)
			return ok && wellknown.ManagedNodeClaim(nc)
		}))).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			return NodeClaimsOf(o)
		})).
		Complete(r)
}

// NodeClaimsOf maps a Node to the NodeClaim that owns it, if any.
func NodeClaimsOf(o client.Object) []reconcile.Request {
	var out []reconcile.Request
	for _, ref := range o.GetOwnerReferences() {
		if ref.Kind == "NodeClaim" && ref.APIVersion == karpv1.GroupVersion.String() {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: ref.Name}})
		}
	}
	return out
}

// Reconcile checks the NodeClaim, unless it was checked less than
// ScanPeriod ago, and asks to run again in ScanPeriod.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nc := &karpv1.NodeClaim{}
	if err := r.client.Get(ctx, req.NamespacedName, nc); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.Name)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !wellknown.ManagedNodeClaim(nc) || nc.Status.ProviderID == "" {
		return reconcile.Result{}, nil
	}
	now := r.clock.Now()
	r.events.Forget(now)
	r.mu.Lock()
	last, seen := r.scanned[nc.Name]
	if seen && last.uid == nc.UID && now.Sub(last.at) < ScanPeriod {
		r.mu.Unlock()
		return reconcile.Result{RequeueAfter: ScanPeriod - now.Sub(last.at)}, nil
	}
	r.scanned[nc.Name] = scan{uid: nc.UID, at: now}
	r.mu.Unlock()

	node, err := r.nodeOf(ctx, nc)
	if err != nil || node == nil {
		// No Node yet, or another one than the NodeClaim's: the lifecycle
		// controller sees to that. A Node update wakes this one again.
		return reconcile.Result{}, err
	}
	issues := NodeShape(node, nc)
	for _, issue := range issues {
		log.FromContext(ctx).Info("failed consistency check", "NodeClaim", nc.Name, "Node", node.Name, "issue", issue)
		r.events.EventfBy(now, issue, nc, node, corev1.EventTypeWarning, ReasonFailedConsistencyCheck, "Check", "%s", issue)
	}
	if err := r.setCondition(ctx, nc, issues, now); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: ScanPeriod}, nil
}

// nodeOf returns the NodeClaim's Node: the one status.nodeName names, if it
// carries the NodeClaim's provider ID; nil otherwise.
func (r *Reconciler) nodeOf(ctx context.Context, nc *karpv1.NodeClaim) (*corev1.Node, error) {
	if nc.Status.NodeName == "" {
		return nil, nil
	}
	node := &corev1.Node{}
	if err := r.client.Get(ctx, client.ObjectKey{Name: nc.Status.NodeName}, node); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if node.Spec.ProviderID != nc.Status.ProviderID {
		return nil, nil
	}
	return node, nil
}

// NodeShape is the node-shape check: for a NodeClaim initialized and not
// being deleted, each resource it requests of which the Node has less than
// MinCapacityFraction of the capacity the NodeClaim expected. Resources
// requested at zero, or expected at zero, are not checked. The issues come
// in resource name order.
func NodeShape(node *corev1.Node, nc *karpv1.NodeClaim) []string {
	if !nc.DeletionTimestamp.IsZero() || !meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeInitialized) {
		return nil
	}
	var issues []string
	for _, name := range slices.Sorted(maps.Keys(nc.Spec.Resources.Requests)) {
		requested, expected := nc.Spec.Resources.Requests[name], nc.Status.Capacity[name]
		if requested.IsZero() || expected.IsZero() {
			continue
		}
		have := node.Status.Capacity[name]
		fraction := have.AsApproximateFloat64() / expected.AsApproximateFloat64()
		if fraction < MinCapacityFraction {
			issues = append(issues, fmt.Sprintf("the node has %s of %s, %.1f%% of the %s its NodeClaim expected",
				have.String(), name, 100*fraction, expected.String()))
		}
	}
	return issues
}

// setCondition sets ConsistentStateFound: False with the issues, True
// without (left alone when it is True already).
func (r *Reconciler) setCondition(ctx context.Context, nc *karpv1.NodeClaim, issues []string, now time.Time) error {
	want := metav1.Condition{Type: karpv1.ConditionTypeConsistentStateFound, Status: metav1.ConditionTrue,
		Reason: karpv1.ConditionTypeConsistentStateFound, ObservedGeneration: nc.Generation, LastTransitionTime: metav1.NewTime(now)}
	if len(issues) > 0 {
		want.Status, want.Reason = metav1.ConditionFalse, conditionReasonFailed
		want.Message = issues[0]
		if len(issues) > 1 {
			want.Message = fmt.Sprintf("%s (and %d more)", issues[0], len(issues)-1)
		}
	} else if meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeConsistentStateFound) {
		return nil
	}
	if !meta.SetStatusCondition(&nc.Status.Conditions, want) {
		return nil
	}
	if err := conditions.Patch(ctx, r.client, nc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		if apierrors.IsConflict(err) {
			// Check again with what is stored now.
			r.forget(nc.Name)
		}
		return fmt.Errorf("setting %s on NodeClaim %s: %w", karpv1.ConditionTypeConsistentStateFound, nc.Name, err)
	}
	return nil
}

// forget drops what the Reconciler remembers of a NodeClaim.
func (r *Reconciler) forget(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.scanned, name)
}
