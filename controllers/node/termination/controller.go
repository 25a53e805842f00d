// Package termination finalizes Nodes that stevedore launched: when such a
// Node is deleted, the reconciler here taints it, drains its pods through the
// Eviction API, waits for its volumes to detach, terminates its cloud
// instance and only then lets the Node go by removing the
// karpenter.sh/termination finalizer.
//
// The steps, each idempotent and each re-checked on every reconcile:
//
//  1. A Node that is not Ready and whose instance the cloud no longer knows
//     loses its finalizer at once: there is nothing left to drain.
//  2. The Node is tainted karpenter.sh/disrupted:NoSchedule and labelled to
//     be excluded from external load balancers.
//  3. Its pods are drained (see drain.go). The NodeClaim's Drained condition
//     turns True when no pod is left that has to leave.
//  4. VolumeAttachments of the Node are waited for (VolumesDetached), unless
//     the termination deadline has passed.
//  5. The instance is deleted, every 5 s, until the cloud says it is gone
//     (InstanceTerminating), and the finalizer is removed.
//
// A Node whose NodeClaim is another provider's (see
// wellknown.ManagedNodeClaim) is left to that provider, which holds the same
// finalizer.
//
// The termination deadline is the karpenter.sh/nodeclaim-termination-timestamp
// annotation, read from the Node's NodeClaim or, failing that, the Node. The
// NodeClaim lifecycle controller writes it; this package only reads it.
//
// The reconciler holds one piece of memory between calls: the eviction
// backoff of each pod whose eviction a PodDisruptionBudget refused. It is an
// optimisation only; after a restart evictions are simply retried sooner.
package termination

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud"
	"github.com/stevedore-autoscaler/stevedore/controllers/eventlimit"
	"github.com/stevedore-autoscaler/stevedore/controllers/metrics"
	"github.com/stevedore-autoscaler/stevedore/controllers/nodeclaim/conditions"
)

// Name is the controller's name, used for its logger and its events.
const Name = "node.termination"

// Timers.
const (
	// InstanceDeleteInterval is how often the instance is asked to terminate
	// until the cloud reports it gone.
	InstanceDeleteInterval = 5 * time.Second
	// VolumeWaitInterval is how often VolumeAttachments are checked again
	// (their deletion also triggers a reconcile).
	VolumeWaitInterval = 5 * time.Second
)

// Event reasons. Evicted and Disrupted (a pod deleted at the node's
// termination deadline) are Karpenter's; the others are stevedore's own, whose notes say the same in words
// ("tainted node", "deleted node"), as the log lines do.
const (
	ReasonTaintedNode         = "TaintedNode"
	ReasonEvicted             = "Evicted"
	ReasonEvictionFailed      = "EvictionFailed"
	ReasonDisrupted           = "Disrupted"
	ReasonTerminatingInstance = "TerminatingInstance"
	ReasonDeletedNode         = "DeletedNode"
	ReasonInstanceNotFound    = "InstanceNotFound"
	ReasonDeletedNodeClaim    = "DeletedNodeClaim"
	ReasonInvalidAnnotation   = "InvalidAnnotation"
)

// Events Karpenter records while it terminates a node, with its reasons,
// rate-limited as it dedupes them (see EventInterval).
const (
	// ReasonFailedDraining is a node whose drain is not over: pods still
	// have to leave, or a PodDisruptionBudget refused an eviction. It
	// replaces stevedore's own EvictionBlocked pod event.
	ReasonFailedDraining = "FailedDraining"
	// ReasonAwaitingVolumeDetachment is a drained node whose termination
	// waits for VolumeAttachments to be deleted.
	ReasonAwaitingVolumeDetachment = "AwaitingVolumeDetachment"
	// ReasonTerminationGracePeriodExpiring is a node (or, from the
	// NodeClaim lifecycle controller, a NodeClaim) with a termination
	// deadline, by which every pod left is deleted.
	ReasonTerminationGracePeriodExpiring = "TerminationGracePeriodExpiring"
	// ReasonDoNotDisruptUntil, ReasonDoNotDisruptGracePeriodElapsed and
	// ReasonInvalidDoNotDisruptAnnotation are a pod to be evicted whose
	// karpenter.sh/do-not-disrupt annotation is a duration still protecting
	// it, a duration run out, or neither "true" nor a duration.
	ReasonDoNotDisruptUntil              = "DoNotDisruptUntil"
	ReasonDoNotDisruptGracePeriodElapsed = "DoNotDisruptGracePeriodElapsed"
	ReasonInvalidDoNotDisruptAnnotation  = "InvalidDoNotDisruptAnnotation"
)

// EventInterval is the least time between two events of the same reason
// about the same object (and deadline, or value, where they differ by
// one), for the events Karpenter dedupes over its default window.
const EventInterval = 2 * time.Minute

// Condition reasons written on the NodeClaim.
const (
	conditionReasonDraining          = "Draining"
	conditionReasonDrained           = "Drained"
	conditionReasonAwaitingVolumes   = "AwaitingVolumeDetachment"
	conditionReasonVolumesDetached   = "VolumesDetached"
	conditionReasonGracePeriodPassed = "TerminationGracePeriodElapsed"
	conditionReasonInstanceTerminate = "InstanceTerminating"
)

// Reconciler finalizes deleted Nodes that carry the termination finalizer.
// Create it with New.
type Reconciler struct {
	kube     client.Client
	cloud    cloud.CloudProvider
	clock    clock.PassiveClock
	recorder events.EventRecorder
	metrics  *metrics.Metrics
	// events rate-limits the events recorded over EventInterval.
	events *eventlimit.Recorder

	mu sync.Mutex
	// backoff holds, per node name, the eviction backoff of the node's pods
	// by pod UID.
	backoff map[string]map[types.UID]*evictionBackoff
	// reasons holds, per node name, why it is drained (see drainReason).
	reasons map[string]string
}

// New returns a Reconciler that acts through kube and cloudProvider, reads the
// time from clk and reports through recorder.
func New(kube client.Client, cloudProvider cloud.CloudProvider, clk clock.PassiveClock, recorder events.EventRecorder) *Reconciler {
	return &Reconciler{
		kube:     kube,
		cloud:    cloudProvider,
		clock:    clk,
		recorder: recorder,
		events:   eventlimit.New(recorder, EventInterval),
		backoff:  map[string]map[types.UID]*evictionBackoff{},
		reasons:  map[string]string{},
	}
}

// WithMetrics makes the reconciler count terminations, drains and
// evictions in m, and returns it.
func (r *Reconciler) WithMetrics(m *metrics.Metrics) *Reconciler {
	r.metrics = m
	return r
}

// Register adds the reconciler to mgr. It watches Nodes being deleted, and
// Pods and VolumeAttachments by the node they are on, and indexes Pods by
// spec.nodeName in the manager's cache.
func (r *Reconciler) Register(mgr ctrl.Manager) error {
	err := mgr.GetFieldIndexer().IndexField(context.Background(), &corev1.Pod{}, podNodeNameField, func(o client.Object) []string {
		if p, ok := o.(*corev1.Pod); ok && p.Spec.NodeName != "" {
			return []string{p.Spec.NodeName}
		}
		return nil
	})
	// Another controller may have registered the same index already; it
	// serves this one equally well.
	if err != nil && !isIndexConflict(err) {
		return fmt.Errorf("indexing pods by %s: %w", podNodeNameField, err)
	}
	terminating := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return !o.GetDeletionTimestamp().IsZero() && controllerutil.ContainsFinalizer(o, wellknown.FinalizerTermination)
	})
	return builder.ControllerManagedBy(mgr).
		Named(Name).
		For(&corev1.Node{}, builder.WithPredicates(terminating)).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			if p, ok := o.(*corev1.Pod); ok && p.Spec.NodeName != "" {
				return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: p.Spec.NodeName}}}
			}
			return nil
		})).
		Watches(&storagev1.VolumeAttachment{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			if va, ok := o.(*storagev1.VolumeAttachment); ok && va.Spec.NodeName != "" {
				return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: va.Spec.NodeName}}}
			}
			return nil
		})).
		Complete(r)
}

// isIndexConflict reports whether err is the field indexer's complaint that
// the index exists already.
func isIndexConflict(err error) bool {
	return err != nil && strings.Contains(err.Error(), "indexer conflict")
}

// Reconcile implements reconcile.Reconciler for a Node name.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	logger := log.FromContext(ctx).WithValues("node", req.Name)
	ctx = log.IntoContext(ctx, logger)

	node := &corev1.Node{}
	if err := r.kube.Get(ctx, req.NamespacedName, node); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.Name)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	if node.DeletionTimestamp.IsZero() || !controllerutil.ContainsFinalizer(node, wellknown.FinalizerTermination) {
		return reconcile.Result{}, nil
	}

	nodeClaim, err := r.nodeClaimFor(ctx, node)
	if err != nil {
		return reconcile.Result{}, err
	}
	if nodeClaim != nil && !wellknown.ManagedNodeClaim(nodeClaim) {
		return reconcile.Result{}, nil
	}
	if nodeClaim != nil {
		logger = logger.WithValues("nodeclaim", nodeClaim.Name)
		ctx = log.IntoContext(ctx, logger)
		// A Node deleted on its own takes its NodeClaim with it, so that the
		// NodeClaim's finalizer sets the termination deadline.
		if nodeClaim.DeletionTimestamp.IsZero() {
			if err := r.kube.Delete(ctx, nodeClaim); client.IgnoreNotFound(err) != nil {
				return reconcile.Result{}, fmt.Errorf("deleting nodeclaim %s: %w", nodeClaim.Name, err)
			}
			logger.Info("deleted nodeclaim of deleted node")
			r.recorder.Eventf(nodeClaim, node, corev1.EventTypeNormal, ReasonDeletedNodeClaim, "Delete", "deleted nodeclaim because its node %s is being deleted", node.Name)
			// Deletion changed the NodeClaim (a deletion timestamp, or it is
			// gone); work from what is stored now.
			if err := r.kube.Get(ctx, client.ObjectKeyFromObject(nodeClaim), nodeClaim); err != nil {
				if !apierrors.IsNotFound(err) {
					return reconcile.Result{}, fmt.Errorf("getting nodeclaim %s: %w", nodeClaim.Name, err)
				}
				nodeClaim = nil
			}
		}
	}

	// 1. The instance is gone: nothing to drain, nothing to terminate.
	if !nodeReady(node) && node.Spec.ProviderID != "" {
		_, err := r.cloud.Get(ctx, node.Spec.ProviderID)
		switch {
		case cloud.IsNodeClaimNotFoundError(err):
			logger.Info("instance not found for not-ready node, removing finalizer", "providerID", node.Spec.ProviderID)
			r.recorder.Eventf(node, nil, corev1.EventTypeNormal, ReasonInstanceNotFound, "Finalize", "instance %s is gone; skipping drain", node.Spec.ProviderID)
			return r.removeFinalizer(ctx, node)
		case err != nil:
			// Without an answer the node is treated as still there: draining
			// is safe either way.
			logger.Error(err, "looking up instance of not-ready node", "providerID", node.Spec.ProviderID)
		}
	}

	deadline := r.deadline(ctx, node, nodeClaim)
	now := r.clock.Now()
	r.events.Forget(now)

	// 2. Taint and exclude from load balancers.
	if err := r.taint(ctx, node); err != nil {
		return reconcile.Result{}, err
	}

	// 3. Drain.
	r.mu.Lock()
	r.reasons[node.Name] = drainReason(nodeClaim)
	r.mu.Unlock()
	drained, requeue, err := r.drain(ctx, node, deadline)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !drained {
		if err := r.setCondition(ctx, nodeClaim, karpv1.ConditionTypeDrained, metav1.ConditionFalse, conditionReasonDraining, "Evicting pods from the node"); err != nil {
			return reconcile.Result{}, err
		}
		return reconcile.Result{RequeueAfter: requeue}, nil
	}
	if !conditionTrue(nodeClaim, karpv1.ConditionTypeDrained) && nodeClaim != nil {
		r.metrics.NodeDrained(node.Labels[wellknown.LabelNodePool])
	}
	if err := r.setCondition(ctx, nodeClaim, karpv1.ConditionTypeDrained, metav1.ConditionTrue, conditionReasonDrained, ""); err != nil {
		return reconcile.Result{}, err
	}

	// 4. Volumes.
	if deadline == nil || now.Before(*deadline) {
		pending, err := r.pendingVolumeAttachments(ctx, node)
		if err != nil {
			return reconcile.Result{}, err
		}
		if len(pending) > 0 {
			logger.V(1).Info("waiting for volume attachments to be removed", "volumeAttachments", pending)
			r.events.Eventf(now, node, nil, corev1.EventTypeNormal, ReasonAwaitingVolumeDetachment, "Terminate",
				"waiting for %d VolumeAttachment(s) to be deleted: %s", len(pending), listFirst(pending, 5))
			if err := r.setCondition(ctx, nodeClaim, karpv1.ConditionTypeVolumesDetached, metav1.ConditionFalse, conditionReasonAwaitingVolumes,
				fmt.Sprintf("Waiting for %d VolumeAttachments to be removed", len(pending))); err != nil {
				return reconcile.Result{}, err
			}
			return reconcile.Result{RequeueAfter: r.untilDeadline(VolumeWaitInterval, deadline, now)}, nil
		}
		if err := r.setCondition(ctx, nodeClaim, karpv1.ConditionTypeVolumesDetached, metav1.ConditionTrue, conditionReasonVolumesDetached, ""); err != nil {
			return reconcile.Result{}, err
		}
	} else if !conditionTrue(nodeClaim, karpv1.ConditionTypeVolumesDetached) {
		if err := r.setCondition(ctx, nodeClaim, karpv1.ConditionTypeVolumesDetached, metav1.ConditionFalse, conditionReasonGracePeriodPassed,
			"Termination grace period elapsed before volumes were detached"); err != nil {
			return reconcile.Result{}, err
		}
	}

	// 5. Terminate the instance.
	return r.terminate(ctx, node, nodeClaim)
}

// terminate asks the cloud to delete the instance until it reports it gone,
// then removes the finalizer.
func (r *Reconciler) terminate(ctx context.Context, node *corev1.Node, nodeClaim *karpv1.NodeClaim) (reconcile.Result, error) {
	logger := log.FromContext(ctx)
	target := nodeClaim
	if target == nil {
		// No NodeClaim (deleted by hand, or never matched): the provider ID
		// on the Node still names the instance, which must not leak.
		target = &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: node.Name}}
		target.Status.ProviderID = node.Spec.ProviderID
	}
	if target.Status.ProviderID == "" {
		target = target.DeepCopy()
		target.Status.ProviderID = node.Spec.ProviderID
	}
	var err error
	if target.Status.ProviderID == "" {
		err = cloud.NewNodeClaimNotFoundError(errors.New("node has no provider ID"))
	} else {
		err = r.cloud.Delete(ctx, target)
	}
	if err != nil && !cloud.IsNodeClaimNotFoundError(err) {
		return reconcile.Result{}, fmt.Errorf("terminating instance %s: %w", target.Status.ProviderID, err)
	}
	if err := r.setCondition(ctx, nodeClaim, karpv1.ConditionTypeInstanceTerminating, metav1.ConditionTrue, conditionReasonInstanceTerminate, ""); err != nil {
		return reconcile.Result{}, err
	}
	if err == nil {
		logger.Info("terminating instance", "providerID", target.Status.ProviderID)
		r.recorder.Eventf(node, nil, corev1.EventTypeNormal, ReasonTerminatingInstance, "Terminate", "terminating instance %s", target.Status.ProviderID)
		return reconcile.Result{RequeueAfter: InstanceDeleteInterval}, nil
	}
	return r.removeFinalizer(ctx, node)
}

// removeFinalizer lets the Node go and forgets its eviction state.
func (r *Reconciler) removeFinalizer(ctx context.Context, node *corev1.Node) (reconcile.Result, error) {
	stored := node.DeepCopy()
	if !controllerutil.RemoveFinalizer(node, wellknown.FinalizerTermination) {
		return reconcile.Result{}, nil
	}
	if err := r.kube.Patch(ctx, node, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(node.Name)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("removing finalizer of node %s: %w", node.Name, err)
	}
	r.forget(node.Name)
	var deleted time.Time
	if node.DeletionTimestamp != nil {
		deleted = node.DeletionTimestamp.Time
	}
	r.metrics.NodeTerminated(node.Labels[wellknown.LabelNodePool], node.Labels[wellknown.LabelTopologyZone], node.CreationTimestamp.Time, deleted, r.clock.Now())
	log.FromContext(ctx).Info("deleted node")
	r.recorder.Eventf(node, nil, corev1.EventTypeNormal, ReasonDeletedNode, "Finalize", "deleted node")
	return reconcile.Result{}, nil
}

// taint adds the disrupted taint and the exclude-from-load-balancers label
// when either is missing.
func (r *Reconciler) taint(ctx context.Context, node *corev1.Node) error {
	stored := node.DeepCopy()
	want := wellknown.DisruptedTaint()
	hasTaint := false
	for _, t := range node.Spec.Taints {
		if t.MatchTaint(&want) {
			hasTaint = true
			break
		}
	}
	if !hasTaint {
		node.Spec.Taints = append(node.Spec.Taints, want)
	}
	hasLabel := node.Labels[wellknown.LabelExcludeFromExternalLoadBalancers] != ""
	if !hasLabel {
		if node.Labels == nil {
			node.Labels = map[string]string{}
		}
		node.Labels[wellknown.LabelExcludeFromExternalLoadBalancers] = wellknown.ExcludeFromExternalLoadBalancersValue
	}
	if hasTaint && hasLabel {
		return nil
	}
	if err := r.kube.Patch(ctx, node, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("tainting node %s: %w", node.Name, err)
	}
	if !hasTaint {
		log.FromContext(ctx).Info("tainted node", "taint", want.ToString())
		r.recorder.Eventf(node, nil, corev1.EventTypeNormal, ReasonTaintedNode, "Taint", "tainted node with %s", want.ToString())
	}
	return nil
}

// nodeClaimFor returns the NodeClaim of the node: the NodeClaim owner if the
// Node names one, else the NodeClaim with the Node's provider ID, else nil.
func (r *Reconciler) nodeClaimFor(ctx context.Context, node *corev1.Node) (*karpv1.NodeClaim, error) {
	for _, ref := range node.OwnerReferences {
		if ref.Kind != "NodeClaim" || ref.APIVersion != karpv1.GroupVersion.String() {
			continue
		}
		nc := &karpv1.NodeClaim{}
		err := r.kube.Get(ctx, types.NamespacedName{Name: ref.Name}, nc)
		if err == nil && (node.Spec.ProviderID == "" || nc.Status.ProviderID == node.Spec.ProviderID) {
			return nc, nil
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("getting nodeclaim %s: %w", ref.Name, err)
		}
	}
	if node.Spec.ProviderID == "" {
		return nil, nil
	}
	list := &karpv1.NodeClaimList{}
	if err := r.kube.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing nodeclaims: %w", err)
	}
	for i := range list.Items {
		if list.Items[i].Status.ProviderID == node.Spec.ProviderID {
			return &list.Items[i], nil
		}
	}
	return nil, nil
}

// deadline returns the termination deadline from the NodeClaim's annotation,
// or the Node's, or nil when neither has a valid one.
func (r *Reconciler) deadline(ctx context.Context, node *corev1.Node, nodeClaim *karpv1.NodeClaim) *time.Time {
	var objs []client.Object
	if nodeClaim != nil {
		objs = append(objs, nodeClaim)
	}
	objs = append(objs, node)
	for _, o := range objs {
		v, ok := o.GetAnnotations()[wellknown.AnnotationNodeClaimTerminationTimestamp]
		if !ok {
			continue
		}
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			log.FromContext(ctx).Error(err, "ignoring invalid termination timestamp annotation", "object", o.GetName(), "value", v)
			r.recorder.Eventf(o, nil, corev1.EventTypeWarning, ReasonInvalidAnnotation, "Drain",
				"ignoring %s=%q: not an RFC 3339 time", wellknown.AnnotationNodeClaimTerminationTimestamp, v)
			continue
		}
		r.events.Eventf(r.clock.Now(), node, nil, corev1.EventTypeWarning, ReasonTerminationGracePeriodExpiring, "Drain",
			"every pod still on the node is deleted by %s, its termination deadline", t.UTC().Format(time.RFC3339))
		return &t
	}
	return nil
}

// untilDeadline returns d, or the time left until the deadline if that is
// sooner (at least a second).
func (r *Reconciler) untilDeadline(d time.Duration, deadline *time.Time, now time.Time) time.Duration {
	if deadline == nil {
		return d
	}
	left := deadline.Sub(now)
	if left < time.Second {
		left = time.Second
	}
	return min(d, left)
}

// setCondition sets a condition on the NodeClaim's status, with the
// transition time from the clock, and patches it when it changed. A nil
// NodeClaim is ignored.
func (r *Reconciler) setCondition(ctx context.Context, nodeClaim *karpv1.NodeClaim, condType string, status metav1.ConditionStatus, reason, message string) error {
	if nodeClaim == nil {
		return nil
	}
	if c := meta.FindStatusCondition(nodeClaim.Status.Conditions, condType); c != nil &&
		c.Status == status && c.Reason == reason && c.Message == message && c.ObservedGeneration == nodeClaim.Generation {
		return nil
	}
	meta.SetStatusCondition(&nodeClaim.Status.Conditions, metav1.Condition{
		Type:               condType,
		Status:             status,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: nodeClaim.Generation,
		LastTransitionTime: metav1.NewTime(r.clock.Now()),
	})
	if err := conditions.Patch(ctx, r.kube, nodeClaim); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("setting %s=%s on nodeclaim %s: %w", condType, status, nodeClaim.Name, err)
	}
	return nil
}

func conditionTrue(nodeClaim *karpv1.NodeClaim, condType string) bool {
	return nodeClaim != nil && meta.IsStatusConditionTrue(nodeClaim.Status.Conditions, condType)
}

// nodeReady reports whether the Node's Ready condition is True.
func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// forget drops the eviction state of a node.
func (r *Reconciler) forget(nodeName string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.backoff, nodeName)
	delete(r.reasons, nodeName)
}

// drainReasonOf returns why the node is drained.
func (r *Reconciler) drainReasonOf(nodeName string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if reason, ok := r.reasons[nodeName]; ok {
		return reason
	}
	return "deleted"
}

// listFirst joins the first n names, saying how many more there are.
func listFirst(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}
