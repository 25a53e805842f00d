// Package status is the NodePool status controller. For each NodePool it
// keeps up to date:
//
//   - status.resources and status.nodes: the summed status.capacity and the
//     number of the NodePool's NodeClaims (label karpenter.sh/nodepool) that
//     are not being deleted;
//   - NodeClassReady: the Ready condition of the referenced EC2NodeClass,
//     reason and message copied, or False with NodeClassNotFound or
//     NodeClassTerminating, or Unknown with NodeClassReadinessUnknown while
//     the node class has not been resolved for its current generation;
//   - ValidationSucceeded: the checks the API server cannot do (cron
//     schedules, well-known label values, duplicate taints, ...), run by the
//     offline validator; False with the problems' messages. The verdict is
//     remembered per NodePool and reused until its generation, labels or
//     annotations change, which is all the validator reads;
//   - Ready: True when NodeClassReady and ValidationSucceeded both are;
//   - status.nodeClassObservedGeneration: the node class's generation. When
//     it changes, NodeRegistrationHealthy (owned by the registration-health
//     controller) is reset to Unknown, since past launches no longer say
//     anything about the new node class;
//   - the karpenter.sh/nodepool-hash and -hash-version annotations (see
//     package hash) and, when the NodePool's hash version is not the
//     current one, those of its NodeClaims (see restampNodeClaims);
//   - status.allowedDisruptions: per disruption reason, how many more nodes
//     the disruption budgets allow now (package decide/budget). Budgets
//     count nodes marked for deletion, which only the in-memory cluster
//     state knows, so they are computed from a state.Cluster (its nodes of
//     the NodePool, without a whole snapshot); without one (tests that do
//     not need them) they are left alone. The NodePool is
//     looked at again when a budget's schedule opens or closes a window,
//     and at least every MaxBudgetRequeue;
//   - a DisruptionBlocked event when a budget starts to allow no disruption
//     for a reason while the NodePool has nodes (once per reason each time
//     that happens, not on every reconcile);
//   - the karpenter_nodepools_usage, karpenter_nodepools_limit and
//     karpenter_nodepools_allowed_disruptions gauges.
//
// Writes are merge patches guarded by the resource version; condition
// transition times and budget windows come from the injected clock.
package status

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/validation"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/controllers/metrics"
	"github.com/stevedore-autoscaler/stevedore/controllers/nodepool/hash"
	"github.com/stevedore-autoscaler/stevedore/decide/budget"
	decide "github.com/stevedore-autoscaler/stevedore/decide/nodeclaim"
	"github.com/stevedore-autoscaler/stevedore/state"
)

// Name is the controller's name, as registered with the manager.
const Name = "nodepool.status"

// Reasons of the NodePool's conditions.
const (
	ReasonNodeClassReady            = "NodeClassReady"
	ReasonNodeClassNotFound         = "NodeClassNotFound"
	ReasonNodeClassTerminating      = "NodeClassTerminating"
	ReasonNodeClassReadinessUnknown = "NodeClassReadinessUnknown"
	ReasonValidationSucceeded       = "ValidationSucceeded"
	ReasonValidationFailed          = "NodePoolValidationFailed"
	ReasonReady                     = "Ready"
	// ReasonNodeClassChanged resets NodeRegistrationHealthy when the node
	// class's generation changes.
	ReasonNodeClassChanged = "NodeClassChanged"
	// ReasonDisruptionBlocked is the event recorded when a budget allows no
	// disruption for a reason.
	ReasonDisruptionBlocked = "DisruptionBlocked"
)

const (
	// MaxBudgetRequeue is the longest a NodePool goes without its budgets
	// being recomputed. Marks for deletion change no API object, so no watch
	// reports them; this bounds how stale the published numbers get.
	MaxBudgetRequeue = 5 * time.Minute
	// unsyncedRequeue is how soon a NodePool is looked at again when the
	// cluster state has not caught up with the API yet.
	unsyncedRequeue = 5 * time.Second
)

// Reconciler is the NodePool status controller. Create it with New.
type Reconciler struct {
	client    client.Client
	cluster   *state.Cluster
	clock     clock.PassiveClock
	recorder  events.EventRecorder
	validator *validation.Validator
	metrics   *metrics.Metrics

	// blocked remembers, per NodePool, the reasons a budget blocked at the
	// last reconcile, so that DisruptionBlocked is recorded when blocking
	// starts rather than on every reconcile.
	mu      sync.Mutex
	blocked map[string][]karpv1.DisruptionReason
	// validated remembers, per NodePool, the validator's verdict on what
	// it was given (see setValidation).
	validated map[string]verdict
}

// verdict is the remembered verdict of the validator on one version of a
// NodePool: its spec (by generation) and the labels and annotations it is
// given with them. The validator reads nothing else, so the verdict holds
// until one of those changes; running it (schema and CEL) on every
// reconcile was most of the cost of a reconcile.
type verdict struct {
	uid         types.UID
	generation  int64
	labels      map[string]string
	annotations map[string]string
	// messages are the errors found; err is set when the NodePool could
	// not be converted for the validator.
	messages []string
	err      error
}

var _ reconcile.Reconciler = (*Reconciler)(nil)

// New returns a Reconciler. cluster is the in-memory cluster state the
// disruption budgets are computed from; nil leaves status.allowedDisruptions,
// its gauge and events alone. validator runs the ValidationSucceeded checks
// (normally validation.Default()); the recorder and m may be nil, which drops
// events and metrics.
func New(c client.Client, cluster *state.Cluster, clk clock.PassiveClock, recorder events.EventRecorder, validator *validation.Validator, m *metrics.Metrics) *Reconciler {
	return &Reconciler{
		client: c, cluster: cluster, clock: clk, recorder: recorder, validator: validator, metrics: m,
		blocked: map[string][]karpv1.DisruptionReason{}, validated: map[string]verdict{},
	}
}

// Register runs the Reconciler under the manager, woken by changes to
// NodePools, to their NodeClaims and Nodes (which change the budgets) and to
// the EC2NodeClasses they reference.
func (r *Reconciler) Register(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named(Name).
		// Another provider's NodePools are its controller's to write, as
		// Karpenter leaves the pools of node classes it does not serve.
		For(&karpv1.NodePool{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			np, ok := o.(*karpv1.NodePool)
			return !ok || wellknown.ManagedNodePool(np)
		}))).
		Watches(&karpv1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(nodePoolOfLabel),
			builder.WithPredicates(predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
				before, ok1 := e.ObjectOld.(*karpv1.NodeClaim)
				after, ok2 := e.ObjectNew.(*karpv1.NodeClaim)
				return !ok1 || !ok2 || NodeClaimCountChanged(before, after)
			}})).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(nodePoolOfLabel),
			builder.WithPredicates(predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
				before, ok1 := e.ObjectOld.(*corev1.Node)
				after, ok2 := e.ObjectNew.(*corev1.Node)
				return !ok1 || !ok2 || NodeBudgetChanged(before, after)
			}})).
		Watches(&awsv1.EC2NodeClass{}, handler.EnqueueRequestsFromMapFunc(r.nodePoolsOfNodeClass)).
		Complete(r)
}

// NodeClaimCountChanged reports whether a NodeClaim update can change what
// the NodePool's status counts: its NodePool, the start of its deletion, its
// capacity, or the type or status of a condition (Launched, Initialized,
// DisruptionReason and the like). NodeClaims are written far more often than
// that — lastPodEventTime on pod events, condition reasons and messages —
// and the rest of those updates would recount the pool for nothing.
func NodeClaimCountChanged(before, after *karpv1.NodeClaim) bool {
	if before.Labels[wellknown.LabelNodePool] != after.Labels[wellknown.LabelNodePool] ||
		before.DeletionTimestamp.IsZero() != after.DeletionTimestamp.IsZero() ||
		!equality.Semantic.DeepEqual(before.Status.Capacity, after.Status.Capacity) ||
		len(before.Status.Conditions) != len(after.Status.Conditions) {
		return true
	}
	for i := range before.Status.Conditions {
		if before.Status.Conditions[i].Type != after.Status.Conditions[i].Type || before.Status.Conditions[i].Status != after.Status.Conditions[i].Status {
			return true
		}
	}
	return false
}

// NodeBudgetChanged reports whether a Node update can change a budget: its
// readiness, its NodePool, its initialization or the start of its deletion.
// Nodes report status every few minutes; the rest of those updates would
// recompute budgets for nothing.
func NodeBudgetChanged(before, after *corev1.Node) bool {
	return nodeReady(before) != nodeReady(after) ||
		before.Labels[wellknown.LabelNodePool] != after.Labels[wellknown.LabelNodePool] ||
		before.Labels[wellknown.LabelInitialized] != after.Labels[wellknown.LabelInitialized] ||
		before.DeletionTimestamp.IsZero() != after.DeletionTimestamp.IsZero()
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// nodePoolOfLabel maps a NodeClaim or Node to the NodePool its
// karpenter.sh/nodepool label names.
func nodePoolOfLabel(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[wellknown.LabelNodePool]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: name}}}
}

func (r *Reconciler) nodePoolsOfNodeClass(ctx context.Context, o client.Object) []reconcile.Request {
	var list karpv1.NodePoolList
	if err := r.client.List(ctx, &list); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if refersTo(&list.Items[i], o.GetName()) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
		}
	}
	return out
}

// refersTo reports whether np's nodeClassRef names the EC2NodeClass name.
func refersTo(np *karpv1.NodePool, name string) bool {
	ref := np.Spec.Template.Spec.NodeClassRef
	return ref != nil && wellknown.ManagedNodeClass(ref) && ref.Name == name
}

// Reconcile brings one NodePool's hash annotations, status and gauges up to
// date.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	np := &karpv1.NodePool{}
	if err := r.client.Get(ctx, req.NamespacedName, np); err != nil {
		if client.IgnoreNotFound(err) == nil {
			r.forget(req.Name)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !np.DeletionTimestamp.IsZero() || !wellknown.ManagedNodePool(np) {
		r.forget(np.Name)
		return reconcile.Result{}, nil
	}

	if err := r.patchHash(ctx, np); err != nil {
		return reconcile.Result{}, err
	}

	resources, nodes, err := r.count(ctx, np.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	nodeClass, err := r.nodeClass(ctx, np)
	if err != nil {
		return reconcile.Result{}, err
	}

	allowances, requeue := r.allowances(ctx, np)

	base := np.DeepCopy()
	np.Status.Resources = resources
	np.Status.Nodes = nodes
	if allowances != nil {
		np.Status.AllowedDisruptions = allowedDisruptions(allowances)
	}
	r.setNodeClassReady(np, nodeClass)
	r.setValidation(np)
	r.setReady(np)
	r.eventOnInvalid(base, np)
	// The gauges follow what was counted even when the patch below loses a
	// conflict and the reconcile is retried with back-off.
	r.metrics.SetNodePool(np.Name, np.Status.Resources, np.Spec.Limits)
	if !equality.Semantic.DeepEqual(base.Status, np.Status) {
		if err := r.client.Status().Patch(ctx, np, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			return reconcile.Result{}, fmt.Errorf("patching status of NodePool %s: %w", np.Name, err)
		}
	}
	if allowances != nil {
		for _, a := range allowances.ByReason {
			r.metrics.SetNodePoolAllowedDisruptions(np.Name, string(a.Reason), a.Allowed)
			r.metrics.SetNodePoolConsumingBudgets(np.Name, string(a.Reason), a.Disrupting)
		}
		r.eventOnBlocked(np, allowances)
	}
	return reconcile.Result{RequeueAfter: requeue}, nil
}

// forget drops what is kept about a NodePool that is gone or going.
func (r *Reconciler) forget(nodePool string) {
	r.metrics.DeleteNodePool(nodePool)
	r.mu.Lock()
	delete(r.blocked, nodePool)
	delete(r.validated, nodePool)
	r.mu.Unlock()
}

// allowances computes np's disruption allowances from the cluster state,
// and how soon to look again: when a budget window next opens or closes, at
// most MaxBudgetRequeue. It returns nil when there is no cluster state, or
// when the state has not caught up with the API yet (a NodeClaim missing
// from it would make the numbers wrong).
func (r *Reconciler) allowances(ctx context.Context, np *karpv1.NodePool) (*budget.Allowances, time.Duration) {
	if r.cluster == nil {
		return nil, 0
	}
	if !r.cluster.Synced(ctx, r.client) {
		return nil, unsyncedRequeue
	}
	now := r.clock.Now()
	// The budgets count only the NodePool's own nodes, and read neither
	// their pods nor their nominations: no need for a whole snapshot.
	a := budget.Compute(np, r.cluster.NodePoolNodes(np.Name), now)
	requeue := MaxBudgetRequeue
	if next, ok := budget.NextChange(np, now); ok {
		// At least a second, so that a window edge a moment away is not
		// turned into no requeue at all.
		requeue = min(requeue, max(next.Sub(now), time.Second))
	}
	return &a, requeue
}

// allowedDisruptions renders the allowances as status.allowedDisruptions:
// what remains per reason, in the order of budget.Reasons (sorted by
// reason).
func allowedDisruptions(a *budget.Allowances) []karpv1.AllowedDisruption {
	out := make([]karpv1.AllowedDisruption, 0, len(a.ByReason))
	for _, al := range a.ByReason {
		out = append(out, karpv1.AllowedDisruption{Reason: al.Reason, Nodes: int32(min(al.Remaining, budget.Unbounded))})
	}
	return out
}

// eventOnBlocked records DisruptionBlocked for each reason a budget has
// started to block since the last reconcile.
func (r *Reconciler) eventOnBlocked(np *karpv1.NodePool, a *budget.Allowances) {
	var now []karpv1.DisruptionReason
	for _, al := range a.ByReason {
		if al.Blocked() {
			now = append(now, al.Reason)
		}
	}
	r.mu.Lock()
	before := r.blocked[np.Name]
	if len(now) == 0 {
		delete(r.blocked, np.Name)
	} else {
		r.blocked[np.Name] = now
	}
	r.mu.Unlock()
	if r.recorder == nil {
		return
	}
	for _, reason := range now {
		if slices.Contains(before, reason) {
			continue
		}
		al := a.For(reason)
		var why string
		if len(a.Invalid) > 0 {
			why = fmt.Sprintf("%v; no disruption is allowed until it is fixed", a.Invalid[0])
		} else {
			why = fmt.Sprintf("spec.disruption.budgets[%d] (%s) allows none of its %d nodes now", al.Budget, budget.Describe(a.Budgets[al.Budget]), al.Nodes)
		}
		r.recorder.Eventf(np, nil, corev1.EventTypeNormal, ReasonDisruptionBlocked, "Disrupt",
			"NodePool %s blocks %s disruption: %s", np.Name, reason, why)
	}
}

// patchHash writes the hash annotations when they are missing or stale.
// When np's hash version is not the current one, its NodeClaims are
// re-stamped first (see restampNodeClaims): once np carries the current
// version, nothing would bring them to it.
func (r *Reconciler) patchHash(ctx context.Context, np *karpv1.NodePool) error {
	h := hash.Hash(np)
	a := np.Annotations
	if a[wellknown.AnnotationNodePoolHash] == h && a[wellknown.AnnotationNodePoolHashVersion] == hash.Version {
		return nil
	}
	if a[wellknown.AnnotationNodePoolHashVersion] != hash.Version {
		if err := r.restampNodeClaims(ctx, np.Name, h); err != nil {
			return err
		}
	}
	base := np.DeepCopy()
	if np.Annotations == nil {
		np.Annotations = map[string]string{}
	}
	np.Annotations[wellknown.AnnotationNodePoolHash] = h
	np.Annotations[wellknown.AnnotationNodePoolHashVersion] = hash.Version
	if err := r.client.Patch(ctx, np, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("patching hash annotations of NodePool %s: %w", np.Name, err)
	}
	return nil
}

// restampNodeClaims gives the NodeClaims of the NodePool nodePool the
// current hash version, and the NodePool's hash h unless they have drifted
// (decide/nodeclaim.Restamp). It runs when the NodePool's own version is not
// the current one, as Karpenter's NodePool hash controller does: a change
// of the NodePool's version is what says the hashes were computed by
// another algorithm. Re-stamping at that moment, with the hash of the
// template as it is then, rather than whenever a NodeClaim's version
// differs from its NodePool's, keeps a NodeClaim from being given a hash
// that the NodePool is about to replace. Another provider's NodeClaims (see
// wellknown.ManagedNodeClaim) are left to it, as Karpenter's hash controller
// leaves them.
func (r *Reconciler) restampNodeClaims(ctx context.Context, nodePool, h string) error {
	var list karpv1.NodeClaimList
	if err := r.client.List(ctx, &list, client.MatchingLabels{wellknown.LabelNodePool: nodePool}); err != nil {
		return fmt.Errorf("listing NodeClaims of NodePool %s: %w", nodePool, err)
	}
	var errs []error
	for i := range list.Items {
		nc := &list.Items[i]
		stampVersion, stampHash := decide.Restamp(nc, hash.Version)
		if !stampVersion || !wellknown.ManagedNodeClaim(nc) {
			continue
		}
		base := nc.DeepCopy()
		if nc.Annotations == nil {
			nc.Annotations = map[string]string{}
		}
		nc.Annotations[wellknown.AnnotationNodePoolHashVersion] = hash.Version
		if stampHash {
			nc.Annotations[wellknown.AnnotationNodePoolHash] = h
		}
		// Guarded by the resource version: whether to keep the old hash
		// depends on the Drifted condition as read.
		if err := r.client.Patch(ctx, nc, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("re-stamping the NodePool hash of NodeClaim %s: %w", nc.Name, err))
		}
	}
	return errors.Join(errs...)
}

// count sums the capacity of the NodePool's NodeClaims that are not being
// deleted, and counts them.
func (r *Reconciler) count(ctx context.Context, nodePool string) (corev1.ResourceList, int64, error) {
	var list karpv1.NodeClaimList
	// Read only: the cache need not copy what it holds.
	if err := r.client.List(ctx, &list, client.MatchingLabels{wellknown.LabelNodePool: nodePool}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, 0, fmt.Errorf("listing NodeClaims of NodePool %s: %w", nodePool, err)
	}
	// Every pool reports the base resources, zero when it has no nodes, as
	// Karpenter does: status.resources and the usage gauge always carry
	// cpu, memory, pods, ephemeral-storage and nodes, so that a dashboard
	// or alert on a pool without nodes reads 0 rather than no series.
	total := corev1.ResourceList{}
	for _, name := range baseResources {
		total[name] = resource.Quantity{}
	}
	var n int64
	for i := range list.Items {
		nc := &list.Items[i]
		if !nc.DeletionTimestamp.IsZero() {
			continue
		}
		n++
		for name, q := range nc.Status.Capacity {
			sum := total[name]
			sum.Add(q)
			total[name] = sum
		}
	}
	total[ResourceNodes] = *resource.NewQuantity(n, resource.DecimalSI)
	for name, q := range total {
		// Canonical form, so that the status compares equal across
		// reconciles and prints as users expect ("8Gi", not "8192Mi").
		total[name] = resource.MustParse(q.String())
	}
	return total, n, nil
}

// ResourceNodes is the resource name under which status.resources and the
// usage gauge count a pool's nodes (its NodeClaims not being deleted).
const ResourceNodes corev1.ResourceName = "nodes"

// baseResources are reported for every pool, zero when it has none.
var baseResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage, ResourceNodes}

// nodeClass returns the EC2NodeClass np refers to, or nil when there is
// none (or np refers to a kind stevedore does not serve).
func (r *Reconciler) nodeClass(ctx context.Context, np *karpv1.NodePool) (*awsv1.EC2NodeClass, error) {
	ref := np.Spec.Template.Spec.NodeClassRef
	if ref == nil || !refersTo(np, ref.Name) {
		return nil, nil
	}
	nc := &awsv1.EC2NodeClass{}
	if err := r.client.Get(ctx, types.NamespacedName{Name: ref.Name}, nc); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil, nil
		}
		return nil, fmt.Errorf("getting EC2NodeClass %s of NodePool %s: %w", ref.Name, np.Name, err)
	}
	return nc, nil
}

func (r *Reconciler) setNodeClassReady(np *karpv1.NodePool, nc *awsv1.EC2NodeClass) {
	ref := np.Spec.Template.Spec.NodeClassRef
	switch {
	case nc == nil:
		name := ""
		if ref != nil {
			name = ref.Name
		}
		r.setCondition(np, karpv1.ConditionTypeNodeClassReady, metav1.ConditionFalse, ReasonNodeClassNotFound,
			fmt.Sprintf("EC2NodeClass %q not found: create it, or set nodeClassRef.name to an existing EC2NodeClass", name))
		return
	}

	if np.Status.NodeClassObservedGeneration != nc.Generation {
		if np.Status.NodeClassObservedGeneration != 0 && meta.FindStatusCondition(np.Status.Conditions, karpv1.ConditionTypeNodeRegistrationHealthy) != nil {
			r.setCondition(np, karpv1.ConditionTypeNodeRegistrationHealthy, metav1.ConditionUnknown, ReasonNodeClassChanged,
				fmt.Sprintf("EC2NodeClass %s changed (generation %d); waiting for launches with it", nc.Name, nc.Generation))
		}
		np.Status.NodeClassObservedGeneration = nc.Generation
	}

	if !nc.DeletionTimestamp.IsZero() {
		r.setCondition(np, karpv1.ConditionTypeNodeClassReady, metav1.ConditionFalse, ReasonNodeClassTerminating,
			fmt.Sprintf("EC2NodeClass %s is being deleted: point nodeClassRef at another EC2NodeClass", nc.Name))
		return
	}
	ready := meta.FindStatusCondition(nc.Status.Conditions, awsv1.ConditionTypeReady)
	switch {
	case ready == nil || ready.Status == metav1.ConditionUnknown:
		r.setCondition(np, karpv1.ConditionTypeNodeClassReady, metav1.ConditionUnknown, ReasonNodeClassReadinessUnknown,
			fmt.Sprintf("EC2NodeClass %s has not been resolved yet", nc.Name))
	case ready.ObservedGeneration != nc.Generation:
		r.setCondition(np, karpv1.ConditionTypeNodeClassReady, metav1.ConditionUnknown, ReasonNodeClassReadinessUnknown,
			fmt.Sprintf("EC2NodeClass %s has not been resolved since its spec changed (generation %d)", nc.Name, nc.Generation))
	case ready.Status == metav1.ConditionTrue:
		r.setCondition(np, karpv1.ConditionTypeNodeClassReady, metav1.ConditionTrue, ReasonNodeClassReady, "")
	default:
		r.setCondition(np, karpv1.ConditionTypeNodeClassReady, metav1.ConditionFalse, ready.Reason, ready.Message)
	}
}

// setValidation runs the offline validator on the NodePool as stored. The
// API server has already applied its schema and CEL rules, so the errors
// left are those of the checks it cannot do. The verdict is remembered for
// the NodePool's generation, labels and annotations, and reused while they
// stay the same.
func (r *Reconciler) setValidation(np *karpv1.NodePool) {
	if r.validator == nil {
		return
	}
	v := r.validate(np)
	switch {
	case v.err != nil:
		r.setCondition(np, karpv1.ConditionTypeValidationSucceeded, metav1.ConditionUnknown, ReasonValidationFailed, v.err.Error())
	case len(v.messages) > 0:
		r.setCondition(np, karpv1.ConditionTypeValidationSucceeded, metav1.ConditionFalse, ReasonValidationFailed, strings.Join(v.messages, "; "))
	default:
		r.setCondition(np, karpv1.ConditionTypeValidationSucceeded, metav1.ConditionTrue, ReasonValidationSucceeded, "")
	}
}

// validate returns the validator's verdict on np, the remembered one when np
// has not changed since. A NodePool without a generation (an API server
// that does not keep one) is validated every time.
func (r *Reconciler) validate(np *karpv1.NodePool) verdict {
	r.mu.Lock()
	v, ok := r.validated[np.Name]
	r.mu.Unlock()
	if ok && np.Generation != 0 && v.uid == np.UID && v.generation == np.Generation &&
		maps.Equal(v.labels, np.Labels) && maps.Equal(v.annotations, np.Annotations) {
		return v
	}
	v = verdict{uid: np.UID, generation: np.Generation, labels: maps.Clone(np.Labels), annotations: maps.Clone(np.Annotations)}
	obj, err := toUnstructured(np)
	if err != nil {
		v.err = err
	} else {
		for _, p := range r.validator.Object("NodePool/"+np.Name, obj) {
			if p.Severity != validation.SeverityError {
				continue
			}
			m := p.Message
			if p.Field != "" {
				m = p.Field + ": " + m
			}
			if p.Fix != "" {
				m += " (fix: " + p.Fix + ")"
			}
			v.messages = append(v.messages, m)
		}
	}
	if np.Generation != 0 {
		r.mu.Lock()
		r.validated[np.Name] = v
		r.mu.Unlock()
	}
	return v
}

// toUnstructured renders the NodePool's metadata that a user writes and its
// spec, the way a manifest would hold them.
func toUnstructured(np *karpv1.NodePool) (*unstructured.Unstructured, error) {
	c := &karpv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: np.Name, Labels: np.Labels, Annotations: np.Annotations},
		Spec:       np.Spec,
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
	if err != nil {
		return nil, fmt.Errorf("converting NodePool %s for validation: %w", np.Name, err)
	}
	delete(m, "status")
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(karpv1.GroupVersion.String())
	u.SetKind("NodePool")
	return u, nil
}

// setReady derives Ready: True when NodeClassReady and ValidationSucceeded
// are; otherwise False if either is False, else Unknown, naming the first
// that is not True.
func (r *Reconciler) setReady(np *karpv1.NodePool) {
	var unknown *metav1.Condition
	for _, typ := range []string{karpv1.ConditionTypeValidationSucceeded, karpv1.ConditionTypeNodeClassReady} {
		c := meta.FindStatusCondition(np.Status.Conditions, typ)
		if c == nil {
			c = &metav1.Condition{Type: typ, Status: metav1.ConditionUnknown, Message: "not evaluated"}
		}
		if c.Status == metav1.ConditionFalse {
			r.setCondition(np, karpv1.ConditionTypeReady, metav1.ConditionFalse, "Not"+typ, typ+": "+c.Message)
			return
		}
		if c.Status != metav1.ConditionTrue && unknown == nil {
			unknown = c
		}
	}
	if unknown != nil {
		r.setCondition(np, karpv1.ConditionTypeReady, metav1.ConditionUnknown, "Not"+unknown.Type, unknown.Type+": "+unknown.Message)
		return
	}
	r.setCondition(np, karpv1.ConditionTypeReady, metav1.ConditionTrue, ReasonReady, "")
}

// eventOnInvalid records a warning when ValidationSucceeded turns False.
func (r *Reconciler) eventOnInvalid(before, after *karpv1.NodePool) {
	if r.recorder == nil {
		return
	}
	c := meta.FindStatusCondition(after.Status.Conditions, karpv1.ConditionTypeValidationSucceeded)
	if c == nil || c.Status != metav1.ConditionFalse || meta.IsStatusConditionFalse(before.Status.Conditions, karpv1.ConditionTypeValidationSucceeded) {
		return
	}
	r.recorder.Eventf(after, nil, corev1.EventTypeWarning, ReasonValidationFailed, "Validate", "NodePool %s is invalid and will not be used: %s", after.Name, c.Message)
}

// setCondition sets a condition at the clock's time; the transition time
// changes only when the status does.
func (r *Reconciler) setCondition(np *karpv1.NodePool, typ string, status metav1.ConditionStatus, reason, message string) {
	if reason == "" {
		reason = typ
	}
	meta.SetStatusCondition(&np.Status.Conditions, metav1.Condition{
		Type:               typ,
		Status:             status,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: np.Generation,
		LastTransitionTime: metav1.NewTime(r.clock.Now()),
	})
}
