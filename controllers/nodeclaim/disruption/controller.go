// Package disruption is the NodeClaim disruption-signal controller. It keeps
// on every launched NodeClaim the signals that the disruption loop reads:
//
//   - Drifted: True, with the reason, when the node no longer matches what
//     would be launched today. NodePool drift (NodePoolDrifted,
//     RequirementsDrifted) is checked first; then, once the node is
//     initialized, whether its instance type is still offered to the
//     NodePool (InstanceTypeNotFound; NodeClaims older than an hour, at most
//     every 30 minutes), then the cloud provider's IsDrifted (AMIDrift, SubnetDrift,
//     SecurityGroupDrift, NodeClassDrift, ...). The condition is removed when
//     the node no longer drifts. Drift is re-checked every DriftInterval and
//     whenever the NodePool or the node class changes. A NodeClaim whose
//     karpenter.sh/nodepool-hash-version differs from its NodePool's is not
//     compared by hash; the NodePool status controller re-stamps it when
//     the NodePool's own version changes.
//   - Consolidatable: True once the NodePool's consolidateAfter has passed
//     since status.lastPodEventTime or, without one, since the Initialized
//     transition; False with the reason (ConsolidateAfterNever,
//     ConsolidateAfterNotElapsed) otherwise. The NodeClaim is requeued for
//     the moment the condition would flip.
//   - status.lastPodEventTime: bumped by a second controller, PodEventsName,
//     when a pod is bound to the node, turns terminal or starts terminating,
//     at most once per PodEventDedupe per NodeClaim.
//
// The decisions are decide/nodeclaim's; this package reads the objects, asks
// the cloud provider about cloud drift, and writes the answers with merge
// patches on the status subresource, guarded by the resource version so that
// the conditions other controllers own are never overwritten with stale
// copies. Condition transition times come from the injected clock.
//
// The controller remembers the last cloud drift answer of each NodeClaim for
// up to DriftInterval, so that the frequent NodeClaim updates (pod events,
// other controllers' conditions) do not each cost a cloud API call; a change
// to the node class forgets the answers of its NodeClaims, including an
// answer that a reconcile running at the time of the change is still working
// out from the class as it was (each node class has a change count, and an
// answer is kept only with the count it was asked under). The memory is an
// optimisation only: after a restart every NodeClaim is simply asked again.
//
// Another provider's NodeClaims (see wellknown.ManagedNodeClaim) get no
// signals from stevedore: their own provider writes them.
package disruption

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
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
	"github.com/stevedore-autoscaler/stevedore/cloud"
	"github.com/stevedore-autoscaler/stevedore/controllers/nodeclaim/conditions"
	decide "github.com/stevedore-autoscaler/stevedore/decide/nodeclaim"
)

// Name is the name of the condition controller, as registered with the
// manager and used as the event source.
const Name = "nodeclaim.disruption"

// DriftInterval is how often drift is checked again without a change to the
// NodeClaim, its NodePool or its node class, and how long a cloud drift
// answer is reused.
const DriftInterval = 5 * time.Minute

// NodeClaimNodeNameIndex indexes NodeClaims by status.nodeName in the
// manager's cache, so a pod's node leads to its NodeClaim without a scan.
const NodeClaimNodeNameIndex = "status.nodeName"

// ReasonDrifted is the reason of the event recorded on a NodeClaim that
// starts drifting: the Drifted condition's transition event, which the status
// watch records (see controllers/metrics).
const ReasonDrifted = "Drifted"

// Reconciler maintains the Drifted and Consolidatable conditions and
// status.lastPodEventTime of NodeClaims. Create it with New.
type Reconciler struct {
	client   client.Client
	cloud    cloud.CloudProvider
	clock    clock.PassiveClock
	recorder events.EventRecorder
	// indexed is set when the client reads from a cache that has
	// NodeClaimNodeNameIndex; otherwise NodeClaims are listed and filtered.
	indexed bool

	mu sync.Mutex
	// checked holds the last cloud drift answer per NodeClaim name.
	checked map[string]cloudCheck
	// classChanges counts the changes seen to each node class; an answer in
	// checked holds only while its class's count is the one it was asked
	// under.
	classChanges map[classKey]uint64
	// typeChecked holds the last instance-type drift verdict per NodeClaim
	// name (see decide/nodeclaim.InstanceTypeCheckInterval).
	typeChecked map[string]typeCheck
}

// typeCheck is one remembered instance-type drift verdict.
type typeCheck struct {
	uid   types.UID
	at    time.Time
	drift decide.Drift
}

// cloudCheck is one remembered answer of the cloud provider's IsDrifted.
type cloudCheck struct {
	uid        types.UID
	providerID string
	imageID    string
	at         time.Time
	reason     cloud.DriftReason
	// classChanges is the node class's change count when the cloud was
	// asked.
	classChanges uint64
}

// classKey names a node class.
type classKey struct {
	group, kind, name string
}

// classOf returns the key of nc's node class; the zero key without one.
func classOf(nc *karpv1.NodeClaim) classKey {
	ref := nc.Spec.NodeClassRef
	if ref == nil {
		return classKey{}
	}
	return classKey{group: ref.Group, kind: ref.Kind, name: ref.Name}
}

var _ reconcile.Reconciler = (*Reconciler)(nil)

// New returns a Reconciler. The recorder may be nil, which drops events.
func New(c client.Client, cp cloud.CloudProvider, clk clock.PassiveClock, recorder events.EventRecorder) *Reconciler {
	return &Reconciler{client: c, cloud: cp, clock: clk, recorder: recorder, checked: map[string]cloudCheck{},
		classChanges: map[classKey]uint64{}, typeChecked: map[string]typeCheck{}}
}

// Register indexes NodeClaims by status.nodeName in the manager's cache and
// runs two controllers under the manager: Name, woken by NodeClaim changes,
// by changes to a NodePool's spec or annotations and by changes to a node
// class, each mapped to the NodeClaims concerned; and PodEventsName, woken by
// the pod events that count for consolidateAfter. The Reconciler must have
// been created with the manager's client.
func (r *Reconciler) Register(mgr manager.Manager) error {
	err := mgr.GetFieldIndexer().IndexField(context.Background(), &karpv1.NodeClaim{}, NodeClaimNodeNameIndex, func(o client.Object) []string {
		if n := o.(*karpv1.NodeClaim).Status.NodeName; n != "" {
			return []string{n}
		}
		return nil
	})
	// Another controller may have registered the same index; it serves this
	// one equally well.
	if err != nil && !strings.Contains(err.Error(), "conflict") {
		return fmt.Errorf("indexing NodeClaims by %s: %w", NodeClaimNodeNameIndex, err)
	}
	r.indexed = true

	b := builder.ControllerManagedBy(mgr).
		Named(Name).
		For(&karpv1.NodeClaim{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			nc, ok := o.(*karpv1.NodeClaim)
			return ok && wellknown.ManagedNodeClaim(nc)
		}))).
		// Status changes of a NodePool (its resources, its conditions) say
		// nothing about drift or consolidateAfter; its spec and its hash
		// annotation do.
		Watches(&karpv1.NodePool{}, handler.EnqueueRequestsFromMapFunc(r.nodeClaimsForNodePool),
			builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{})))
	for _, gvk := range r.cloud.GetSupportedNodeClasses() {
		o, err := mgr.GetScheme().New(gvk)
		if err != nil {
			return fmt.Errorf("watching node class %s: %w", gvk, err)
		}
		obj, ok := o.(client.Object)
		if !ok {
			return fmt.Errorf("watching node class %s: %T is not an API object", gvk, o)
		}
		// Any change counts, status included: cloud drift is judged
		// against the node class's resolved images, subnets and security
		// groups.
		b = b.Watches(obj, handler.EnqueueRequestsFromMapFunc(r.nodeClaimsForNodeClass))
	}
	if err := b.Complete(r); err != nil {
		return err
	}
	return builder.ControllerManagedBy(mgr).
		Named(PodEventsName).
		Watches(&corev1.Pod{}, podEventHandler(r.nodeClaimsOnNode)).
		Complete(reconcile.Func(r.ReconcilePodEvent))
}

// nodeClaimsForNodePool maps a NodePool to its NodeClaims.
func (r *Reconciler) nodeClaimsForNodePool(ctx context.Context, o client.Object) []reconcile.Request {
	var list karpv1.NodeClaimList
	// Read only: the cache need not copy what it holds.
	if err := r.client.List(ctx, &list, client.MatchingLabels{wellknown.LabelNodePool: o.GetName()}, client.UnsafeDisableDeepCopy); err != nil {
		log.FromContext(ctx).Error(err, "listing NodeClaims of NodePool", "NodePool", o.GetName())
		return nil
	}
	return requests(list.Items, nil)
}

// nodeClaimsForNodeClass maps a node class to the NodeClaims launched from
// it, and forgets their cloud drift answers: the class's change may be what
// makes them drift. NodeClaims are matched by spec.nodeClassRef rather than
// by label, so that NodeClaims created without the label are found too.
func (r *Reconciler) nodeClaimsForNodeClass(ctx context.Context, o client.Object) []reconcile.Request {
	gvk := o.GetObjectKind().GroupVersionKind()
	if gvk.Empty() {
		if kinds, _, err := r.client.Scheme().ObjectKinds(o); err == nil && len(kinds) > 0 {
			gvk = kinds[0]
		}
	}
	var list karpv1.NodeClaimList
	// Read only: the cache need not copy what it holds.
	if err := r.client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		log.FromContext(ctx).Error(err, "listing NodeClaims of node class", "kind", gvk.Kind, "name", o.GetName())
		return nil
	}
	class := classKey{group: gvk.Group, kind: gvk.Kind, name: o.GetName()}
	// Counted before the NodeClaims are enqueued, so that their reconciles
	// ask the cloud again, and so that a reconcile already asking it, with
	// the class as it was, does not leave its answer to them.
	r.mu.Lock()
	r.classChanges[class]++
	r.mu.Unlock()
	return requests(list.Items, func(nc *karpv1.NodeClaim) bool { return classOf(nc) == class })
}

func requests(items []karpv1.NodeClaim, keep func(*karpv1.NodeClaim) bool) []reconcile.Request {
	out := make([]reconcile.Request, 0, len(items))
	for i := range items {
		if keep == nil || keep(&items[i]) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: items[i].Name}})
		}
	}
	return out
}

// Reconcile brings the Drifted and Consolidatable conditions of one
// NodeClaim up to date and asks to run again when either may change on its
// own: when consolidateAfter runs out, and after DriftInterval.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nc := &karpv1.NodeClaim{}
	if err := r.client.Get(ctx, req.NamespacedName, nc); err != nil {
		r.forget(req.Name)
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	// A deleting NodeClaim is on its way out whatever its signals say, and
	// one that has not launched has nothing to compare yet; its launch is a
	// change that wakes this controller. Another provider's NodeClaim,
	// which its NodePool or node class may enqueue, is that provider's.
	if !nc.DeletionTimestamp.IsZero() || !meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeLaunched) ||
		!wellknown.ManagedNodeClaim(nc) {
		return reconcile.Result{}, nil
	}
	poolName := nc.Labels[wellknown.LabelNodePool]
	if poolName == "" {
		return reconcile.Result{}, nil
	}
	np := &karpv1.NodePool{}
	if err := r.client.Get(ctx, types.NamespacedName{Name: poolName}, np); err != nil {
		// Without its NodePool there is nothing to drift from or to read
		// consolidateAfter from; the NodePool's creation wakes us.
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	now := r.clock.Now()

	drift := decide.NodePoolDrift(nc, np)
	var cloudErr error
	keepDrift := false
	initialized := meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeInitialized)
	if !drift.Drifted() && initialized {
		typeDrift, err := r.instanceTypeDrift(ctx, nc, np, now)
		if err != nil {
			// As for the cloud below: an unknown catalog keeps a reason
			// the catalog gave, and drops a NodePool reason.
			cloudErr = fmt.Errorf("checking the instance type of NodeClaim %s: %w", nc.Name, err)
			c := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeDrifted)
			keepDrift = c != nil && c.Reason == decide.ReasonInstanceTypeNotFound
		}
		drift = typeDrift
	}
	if !drift.Drifted() && !keepDrift && initialized {
		reason, err := r.cloudDrift(ctx, nc, now)
		switch {
		case cloud.IsNodeClaimNotFoundError(err):
			// The instance is gone; garbage collection deletes the
			// NodeClaim. There is nothing to judge and nothing to retry.
			keepDrift = true
		case err != nil:
			// Not knowing is not the same as not drifted: leave a cloud
			// reason as it is until the provider can answer. A NodePool
			// or instance-type reason is known to be gone and goes.
			cloudErr = errors.Join(cloudErr, fmt.Errorf("checking cloud drift of NodeClaim %s: %w", nc.Name, err))
			c := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeDrifted)
			keepDrift = c == nil || (c.Reason != decide.ReasonNodePoolDrifted && c.Reason != decide.ReasonRequirementsDrifted &&
				c.Reason != decide.ReasonInstanceTypeNotFound)
		case reason != cloud.NoDrift:
			drift = decide.Drift{Reason: string(reason), Message: fmt.Sprintf("the cloud provider reports %s", reason)}
		}
	}
	consolidation := decide.Consolidatable(nc, np.Spec.Disruption.ConsolidateAfter, now)

	// Only the conditions change here; a copy of them is all the
	// comparison below needs (most reconciles change nothing, and a copy
	// of the whole NodeClaim for each was a good part of their cost).
	before := slices.Clone(nc.Status.Conditions)
	wasDrifted := meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeDrifted)
	if !keepDrift {
		if drift.Drifted() {
			r.setCondition(nc, karpv1.ConditionTypeDrifted, metav1.ConditionTrue, drift.Reason, drift.Message, now)
		} else {
			meta.RemoveStatusCondition(&nc.Status.Conditions, karpv1.ConditionTypeDrifted)
		}
	}
	switch {
	case consolidation.Reason == decide.ReasonNotInitialized:
		// The window has not started; there is nothing to say yet.
		meta.RemoveStatusCondition(&nc.Status.Conditions, karpv1.ConditionTypeConsolidatable)
	case consolidation.Consolidatable:
		r.setCondition(nc, karpv1.ConditionTypeConsolidatable, metav1.ConditionTrue, consolidation.Reason, consolidation.Message(), now)
	default:
		r.setCondition(nc, karpv1.ConditionTypeConsolidatable, metav1.ConditionFalse, consolidation.Reason, consolidation.Message(), now)
	}
	if !equality.Semantic.DeepEqual(before, nc.Status.Conditions) {
		err := conditions.Patch(ctx, r.client, nc)
		if apierrors.IsNotFound(err) {
			r.forget(nc.Name)
			return reconcile.Result{}, nil
		}
		if err != nil {
			return reconcile.Result{}, errors.Join(cloudErr, fmt.Errorf("patching status of NodeClaim %s: %w", nc.Name, err))
		}
	}
	if drift.Drifted() && !wasDrifted && !keepDrift {
		// The event is the status watch's (controllers/metrics), as
		// Karpenter's status controller records it: reason Drifted, with
		// the condition's reason and message.
		log.FromContext(ctx).Info("nodeclaim drifted", "reason", drift.Reason, "message", drift.Message)
	}
	if cloudErr != nil {
		return reconcile.Result{}, cloudErr
	}
	next := DriftInterval
	if left := consolidation.Remaining(now); left > 0 && left < next {
		next = left
	}
	return reconcile.Result{RequeueAfter: next}, nil
}

// cloudDrift returns the cloud provider's drift verdict for nc, reusing an
// answer given less than DriftInterval ago for the same instance and image,
// with no change to the node class since it was asked.
func (r *Reconciler) cloudDrift(ctx context.Context, nc *karpv1.NodeClaim, now time.Time) (cloud.DriftReason, error) {
	class := classOf(nc)
	r.mu.Lock()
	c, ok := r.checked[nc.Name]
	changes := r.classChanges[class]
	r.mu.Unlock()
	if ok && c.uid == nc.UID && c.providerID == nc.Status.ProviderID && c.imageID == nc.Status.ImageID &&
		c.classChanges == changes && !now.Before(c.at) && now.Sub(c.at) < DriftInterval {
		return c.reason, nil
	}
	reason, err := r.cloud.IsDrifted(ctx, nc)
	if err != nil {
		return cloud.NoDrift, err
	}
	r.mu.Lock()
	r.checked[nc.Name] = cloudCheck{uid: nc.UID, providerID: nc.Status.ProviderID, imageID: nc.Status.ImageID, at: now, reason: reason,
		classChanges: changes}
	r.mu.Unlock()
	return reason, nil
}

// instanceTypeDrift returns whether nc's instance type has left its
// NodePool's offer (decide/nodeclaim.InstanceTypeDrift), for NodeClaims at
// least InstanceTypeCheckMinAge old, reusing a verdict less than
// InstanceTypeCheckInterval old.
func (r *Reconciler) instanceTypeDrift(ctx context.Context, nc *karpv1.NodeClaim, np *karpv1.NodePool, now time.Time) (decide.Drift, error) {
	if now.Sub(nc.CreationTimestamp.Time) < decide.InstanceTypeCheckMinAge {
		return decide.Drift{}, nil
	}
	r.mu.Lock()
	c, ok := r.typeChecked[nc.Name]
	r.mu.Unlock()
	if ok && c.uid == nc.UID && !now.Before(c.at) && now.Sub(c.at) < decide.InstanceTypeCheckInterval {
		return c.drift, nil
	}
	types, err := r.cloud.GetInstanceTypes(ctx, np)
	if err != nil {
		return decide.Drift{}, err
	}
	d := decide.InstanceTypeDrift(nc, np.Name, types)
	r.mu.Lock()
	r.typeChecked[nc.Name] = typeCheck{uid: nc.UID, at: now, drift: d}
	r.mu.Unlock()
	return d, nil
}

func (r *Reconciler) forget(name string) {
	r.mu.Lock()
	delete(r.checked, name)
	delete(r.typeChecked, name)
	r.mu.Unlock()
}

// setCondition sets a condition with the given time as its transition time;
// meta.SetStatusCondition keeps the old transition time when the status does
// not change.
func (r *Reconciler) setCondition(nc *karpv1.NodeClaim, typ string, status metav1.ConditionStatus, reason, message string, now time.Time) {
	meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{
		Type:               typ,
		Status:             status,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: nc.Generation,
		LastTransitionTime: metav1.NewTime(now),
	})
}
