// Package health is node repair: it replaces nodes that the cloud provider's
// repair policies call unhealthy, such as a node whose Ready condition has
// been False or Unknown for longer than the policy tolerates.
//
// For a Node whose matching condition has outlasted its toleration, the
// controller
//
//  1. checks the cap: at most Options.MaxUnhealthyPercent of the nodes of the
//     Node's NodePool (of the whole cluster, for a Node without one) may be
//     unhealthy at once. So many failing together points at a cause that new
//     nodes will not fix (a network partition, a bad image, the control
//     plane), so repair waits, records a NodeRepairBlocked event with the
//     counts and looks again after BlockedRequeue;
//  2. sets the NodeClaim's DisruptionReason condition to True with reason
//     Unhealthy;
//  3. sets the NodeClaim's karpenter.sh/nodeclaim-termination-timestamp
//     annotation to now, unless it already holds an earlier time: repair is
//     forceful, and the termination that follows does not wait for pods to
//     drain from a node that cannot run them;
//  4. deletes the NodeClaim, records an Unhealthy event and counts
//     karpenter_nodeclaims_disrupted_total{reason="unhealthy"} and
//     karpenter_nodeclaims_unhealthy_disrupted_total.
//
// A Node that matches a policy but is still within its toleration is looked at
// again when the toleration runs out. The NodeClaim lifecycle controller
// copies the termination timestamp onto the Node and keeps an existing value
// when the NodeClaim's deletion begins, so the deadline set here is the one
// the drain honours.
//
// Nodes whose NodeClaim is another provider's (see wellknown.ManagedNodeClaim)
// are left to that provider.
//
// Repair is off unless Options.Enabled is set, as Karpenter keeps it behind
// its NodeRepair feature gate: replacing nodes on a condition is a policy
// that operators should opt into.
package health

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud"
	"github.com/stevedore-autoscaler/stevedore/controllers/metrics"
	decide "github.com/stevedore-autoscaler/stevedore/decide/nodeclaim"
)

// Name is the controller's name, as registered with the manager and used as
// the event source.
const Name = "node.health"

// BlockedRequeue is how long repair waits before looking again when the cap
// blocks it.
const BlockedRequeue = 5 * time.Minute

// Reasons of the DisruptionReason condition and of events.
const (
	// ReasonUnhealthy is the DisruptionReason of a repaired NodeClaim and
	// the event recorded on it and its Node.
	ReasonUnhealthy = "Unhealthy"
	// ReasonNodeRepairBlocked is the event recorded on a Node whose repair
	// the cap holds back.
	ReasonNodeRepairBlocked = "NodeRepairBlocked"
)

// metricReason is the reason label of karpenter_nodeclaims_disrupted_total.
const metricReason = "unhealthy"

// nodeClaimProviderIDIndex indexes NodeClaims by status.providerID in the
// manager's cache. The lifecycle controller registers the same index under
// the same name; whichever registers first serves both.
const nodeClaimProviderIDIndex = "status.providerID"

// Options configure node repair.
type Options struct {
	// Enabled turns node repair on. It is off by default, like Karpenter's
	// NodeRepair feature gate, so that a cluster moved from Karpenter keeps
	// its behaviour until the operator opts in.
	Enabled bool
	// MaxUnhealthyPercent is the largest share of a NodePool's nodes, in
	// percent, that may be unhealthy for repair to go ahead (see
	// decide/nodeclaim.RepairCap). Zero means
	// decide/nodeclaim.DefaultMaxUnhealthyPercent; values above 100 mean 100.
	// To stop repair altogether, leave Enabled false.
	MaxUnhealthyPercent int
}

func (o Options) maxUnhealthyPercent() int {
	if o.MaxUnhealthyPercent <= 0 {
		return decide.DefaultMaxUnhealthyPercent
	}
	return min(o.MaxUnhealthyPercent, 100)
}

// Reconciler repairs unhealthy nodes. Create it with New.
type Reconciler struct {
	client   client.Client
	cloud    cloud.CloudProvider
	clock    clock.PassiveClock
	recorder events.EventRecorder
	metrics  *metrics.Metrics
	opts     Options
	// indexed is set when the client reads from a cache that has
	// nodeClaimProviderIDIndex; otherwise NodeClaims are listed and filtered.
	indexed bool
}

var _ reconcile.Reconciler = (*Reconciler)(nil)

// New returns a Reconciler. The recorder may be nil, which drops events; m
// may be nil, which drops metrics.
func New(c client.Client, cp cloud.CloudProvider, clk clock.PassiveClock, recorder events.EventRecorder, m *metrics.Metrics, opts Options) *Reconciler {
	return &Reconciler{client: c, cloud: cp, clock: clk, recorder: recorder, metrics: m, opts: opts}
}

// Register runs the Reconciler under the manager, woken when a Node appears
// or one of its conditions changes (status, transition), and again when a
// toleration runs out. When repair is not enabled, or the cloud provider has
// no repair policies, nothing is registered.
func (r *Reconciler) Register(mgr manager.Manager) error {
	if !r.opts.Enabled {
		log.Log.WithName(Name).Info("node repair is off; enable it to replace unhealthy nodes")
		return nil
	}
	if len(r.cloud.RepairPolicies()) == 0 {
		log.Log.WithName(Name).Info("the cloud provider has no repair policies; node repair is off")
		return nil
	}
	err := mgr.GetFieldIndexer().IndexField(context.Background(), &karpv1.NodeClaim{}, nodeClaimProviderIDIndex, func(o client.Object) []string {
		if id := o.(*karpv1.NodeClaim).Status.ProviderID; id != "" {
			return []string{id}
		}
		return nil
	})
	if err != nil && !strings.Contains(err.Error(), "conflict") {
		return fmt.Errorf("indexing NodeClaims by %s: %w", nodeClaimProviderIDIndex, err)
	}
	r.indexed = true
	return builder.ControllerManagedBy(mgr).
		Named(Name).
		For(&corev1.Node{}, builder.WithPredicates(conditionsChanged())).
		Complete(r)
}

// conditionsChanged passes Node creations and the updates that change a
// condition's type, status or transition time. Heartbeats, which only move
// lastHeartbeatTime, do not pass.
func conditionsChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return true },
		UpdateFunc: func(e event.UpdateEvent) bool {
			prev, ok1 := e.ObjectOld.(*corev1.Node)
			cur, ok2 := e.ObjectNew.(*corev1.Node)
			return ok1 && ok2 && !sameConditions(prev.Status.Conditions, cur.Status.Conditions)
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

func sameConditions(a, b []corev1.NodeCondition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Type != b[i].Type || a[i].Status != b[i].Status || !a[i].LastTransitionTime.Equal(&b[i].LastTransitionTime) {
			return false
		}
	}
	return true
}

// Reconcile repairs the Node if it is due for repair and the cap allows, or
// asks to run again when its toleration runs out or the cap may have eased.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if !r.opts.Enabled {
		return reconcile.Result{}, nil
	}
	node := &corev1.Node{}
	if err := r.client.Get(ctx, req.NamespacedName, node); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	policies := r.cloud.RepairPolicies()
	now := r.clock.Now()
	health := decide.NodeHealth(policies, node, now)
	if !health.Unhealthy {
		return reconcile.Result{}, nil
	}
	if !health.Due {
		return reconcile.Result{RequeueAfter: health.RepairAt.Sub(now)}, nil
	}
	nc, err := r.nodeClaimOf(ctx, node)
	if err != nil || nc == nil || !wellknown.ManagedNodeClaim(nc) {
		// A Node without a NodeClaim, or whose NodeClaim is another
		// provider's, is not stevedore's to replace.
		return reconcile.Result{}, err
	}
	if repaired(nc, now) {
		return reconcile.Result{}, nil
	}

	pool := nc.Labels[wellknown.LabelNodePool]
	verdict, err := r.capVerdict(ctx, policies, pool)
	if err != nil {
		return reconcile.Result{}, err
	}
	logger := log.FromContext(ctx).WithValues("NodeClaim", nc.Name, "NodePool", pool)
	if !verdict.Repair {
		scope := "the cluster"
		if pool != "" {
			scope = "NodePool " + pool
		}
		logger.Info("node repair blocked: too many unhealthy nodes", "unhealthy", verdict.Unhealthy, "total", verdict.Total, "allowed", verdict.Allowed)
		r.event(node, corev1.EventTypeWarning, ReasonNodeRepairBlocked, "Repair", "not replacing unhealthy node (%s): in %s %s", health.Message(), scope, verdict.Message())
		return reconcile.Result{RequeueAfter: BlockedRequeue}, nil
	}

	deleting := !nc.DeletionTimestamp.IsZero()
	if err := r.markDisruption(ctx, nc, health, now, deleting); err != nil {
		return reconcile.Result{}, err
	}
	if err := r.stampTermination(ctx, nc, now); err != nil {
		return reconcile.Result{}, err
	}
	if deleting {
		logger.Info("terminating unhealthy nodeclaim without waiting for its pods", "condition", string(health.Condition.Type), "status", string(health.Condition.Status))
		return reconcile.Result{}, nil
	}
	if err := r.client.Delete(ctx, nc, client.Preconditions{UID: &nc.UID}); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("deleting unhealthy NodeClaim %s: %w", nc.Name, err)
	}
	logger.Info("deleting unhealthy nodeclaim", "condition", string(health.Condition.Type), "status", string(health.Condition.Status),
		"since", health.Since.UTC().Format(time.RFC3339), "unhealthy", verdict.Unhealthy, "total", verdict.Total)
	r.event(nc, corev1.EventTypeWarning, ReasonUnhealthy, "Repair", "replacing the node: %s", health.Message())
	r.event(node, corev1.EventTypeWarning, ReasonUnhealthy, "Repair", "replacing the node: %s", health.Message())
	capacityType := nc.Labels[wellknown.LabelCapacityType]
	r.metrics.NodeClaimDisrupted(metricReason, pool, capacityType)
	r.metrics.NodeClaimUnhealthyDisrupted(snakeCase(string(health.Condition.Type)), pool, capacityType, nc.Status.ImageID)
	return reconcile.Result{}, nil
}

// repaired reports whether everything repair does has been done to nc: it
// is being deleted, carries the Unhealthy disruption reason and a
// termination deadline no later than now.
func repaired(nc *karpv1.NodeClaim, now time.Time) bool {
	if nc.DeletionTimestamp.IsZero() {
		return false
	}
	c := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeDisruptionReason)
	if c == nil || c.Status != metav1.ConditionTrue {
		return false
	}
	t, ok := terminationTimestamp(nc)
	return ok && !t.After(now)
}

// capVerdict applies the cap to the NodePool's nodes, or to every node of the
// cluster when pool is empty.
func (r *Reconciler) capVerdict(ctx context.Context, policies []cloud.RepairPolicy, pool string) (decide.RepairVerdict, error) {
	var nodes corev1.NodeList
	var opts []client.ListOption
	if pool != "" {
		opts = append(opts, client.MatchingLabels{wellknown.LabelNodePool: pool})
	}
	if err := r.client.List(ctx, &nodes, opts...); err != nil {
		return decide.RepairVerdict{}, fmt.Errorf("listing nodes to count the unhealthy ones: %w", err)
	}
	return decide.RepairCap(decide.CountUnhealthy(policies, nodes.Items), len(nodes.Items), r.opts.maxUnhealthyPercent()), nil
}

// markDisruption sets the DisruptionReason condition to Unhealthy. On a
// NodeClaim already being deleted for another reason, that reason is kept.
func (r *Reconciler) markDisruption(ctx context.Context, nc *karpv1.NodeClaim, health decide.Health, now time.Time, deleting bool) error {
	if deleting && meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeDisruptionReason) != nil {
		return nil
	}
	base := nc.DeepCopy()
	meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{
		Type:               karpv1.ConditionTypeDisruptionReason,
		Status:             metav1.ConditionTrue,
		Reason:             ReasonUnhealthy,
		Message:            health.Message(),
		ObservedGeneration: nc.Generation,
		LastTransitionTime: metav1.NewTime(now),
	})
	if equality.Semantic.DeepEqual(base.Status, nc.Status) {
		return nil
	}
	if err := r.client.Status().Patch(ctx, nc, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("setting the disruption reason of NodeClaim %s: %w", nc.Name, err)
	}
	return nil
}

// stampTermination sets the termination deadline annotation to now unless it
// already holds an earlier time. An unreadable value is replaced: the
// termination controller would ignore it.
func (r *Reconciler) stampTermination(ctx context.Context, nc *karpv1.NodeClaim, now time.Time) error {
	if t, ok := terminationTimestamp(nc); ok && !t.After(now) {
		return nil
	}
	base := nc.DeepCopy()
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	nc.Annotations[wellknown.AnnotationNodeClaimTerminationTimestamp] = now.UTC().Format(time.RFC3339)
	if err := r.client.Patch(ctx, nc, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("setting the termination deadline of NodeClaim %s: %w", nc.Name, err)
	}
	return nil
}

func terminationTimestamp(nc *karpv1.NodeClaim) (time.Time, bool) {
	v, ok := nc.Annotations[wellknown.AnnotationNodeClaimTerminationTimestamp]
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, v)
	return t, err == nil
}

// nodeClaimOf returns the NodeClaim with the Node's provider ID, or nil.
func (r *Reconciler) nodeClaimOf(ctx context.Context, node *corev1.Node) (*karpv1.NodeClaim, error) {
	if node.Spec.ProviderID == "" {
		return nil, nil
	}
	var list karpv1.NodeClaimList
	var opts []client.ListOption
	if r.indexed {
		opts = append(opts, client.MatchingFields{nodeClaimProviderIDIndex: node.Spec.ProviderID})
	}
	if err := r.client.List(ctx, &list, opts...); err != nil {
		return nil, fmt.Errorf("finding the NodeClaim of Node %s: %w", node.Name, err)
	}
	for i := range list.Items {
		if list.Items[i].Status.ProviderID == node.Spec.ProviderID {
			return &list.Items[i], nil
		}
	}
	return nil, nil
}

func (r *Reconciler) event(obj client.Object, eventType, reason, action, note string, args ...any) {
	if r.recorder != nil {
		r.recorder.Eventf(obj, nil, eventType, reason, action, note, args...)
	}
}

// snakeCase writes a condition type as Karpenter's condition label does:
// AcceleratedHardwareReady becomes accelerated_hardware_ready.
func snakeCase(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				prev := rune(s[i-1])
				if unicode.IsLower(prev) || unicode.IsDigit(prev) {
					b.WriteByte('_')
				}
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
