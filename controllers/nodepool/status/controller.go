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
//     offline validator; False with the problems' messages;
//   - Ready: True when NodeClassReady and ValidationSucceeded both are;
//   - status.nodeClassObservedGeneration: the node class's generation. When
//     it changes, NodeRegistrationHealthy (owned by the registration-health
//     controller) is reset to Unknown, since past launches no longer say
//     anything about the new node class;
//   - the karpenter.sh/nodepool-hash and -hash-version annotations (see
//     package hash);
//   - the karpenter_nodepools_usage and karpenter_nodepools_limit gauges.
//
// Writes are merge patches guarded by the resource version; condition
// transition times come from the injected clock.
package status

import (
	"context"
	"fmt"
	"strings"

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
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/validation"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/controllers/metrics"
	"github.com/stevedore-autoscaler/stevedore/controllers/nodepool/hash"
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
)

// Reconciler is the NodePool status controller. Create it with New.
type Reconciler struct {
	client    client.Client
	clock     clock.PassiveClock
	recorder  events.EventRecorder
	validator *validation.Validator
	metrics   *metrics.Metrics
}

var _ reconcile.Reconciler = (*Reconciler)(nil)

// New returns a Reconciler. validator runs the ValidationSucceeded checks
// (normally validation.Default()); the recorder and m may be nil, which drops
// events and metrics.
func New(c client.Client, clk clock.PassiveClock, recorder events.EventRecorder, validator *validation.Validator, m *metrics.Metrics) *Reconciler {
	return &Reconciler{client: c, clock: clk, recorder: recorder, validator: validator, metrics: m}
}

// Register runs the Reconciler under the manager, woken by changes to
// NodePools, to their NodeClaims and to the EC2NodeClasses they reference.
func (r *Reconciler) Register(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named(Name).
		For(&karpv1.NodePool{}).
		Watches(&karpv1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(nodePoolOfNodeClaim)).
		Watches(&awsv1.EC2NodeClass{}, handler.EnqueueRequestsFromMapFunc(r.nodePoolsOfNodeClass)).
		Complete(r)
}

func nodePoolOfNodeClaim(_ context.Context, o client.Object) []reconcile.Request {
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
	return ref != nil && ref.Group == wellknown.GroupAWS && ref.Kind == "EC2NodeClass" && ref.Name == name
}

// Reconcile brings one NodePool's hash annotations, status and gauges up to
// date.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	np := &karpv1.NodePool{}
	if err := r.client.Get(ctx, req.NamespacedName, np); err != nil {
		if client.IgnoreNotFound(err) == nil {
			r.metrics.DeleteNodePool(req.Name)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !np.DeletionTimestamp.IsZero() {
		r.metrics.DeleteNodePool(np.Name)
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

	base := np.DeepCopy()
	np.Status.Resources = resources
	np.Status.Nodes = nodes
	r.setNodeClassReady(np, nodeClass)
	r.setValidation(np)
	r.setReady(np)
	r.eventOnInvalid(base, np)
	if !equality.Semantic.DeepEqual(base.Status, np.Status) {
		if err := r.client.Status().Patch(ctx, np, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			return reconcile.Result{}, fmt.Errorf("patching status of NodePool %s: %w", np.Name, err)
		}
	}
	r.metrics.SetNodePool(np.Name, np.Status.Resources, np.Spec.Limits)
	return reconcile.Result{}, nil
}

// patchHash writes the hash annotations when they are missing or stale.
func (r *Reconciler) patchHash(ctx context.Context, np *karpv1.NodePool) error {
	h := hash.Hash(np)
	a := np.Annotations
	if a[wellknown.AnnotationNodePoolHash] == h && a[wellknown.AnnotationNodePoolHashVersion] == hash.Version {
		return nil
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

// count sums the capacity of the NodePool's NodeClaims that are not being
// deleted, and counts them.
func (r *Reconciler) count(ctx context.Context, nodePool string) (corev1.ResourceList, int64, error) {
	var list karpv1.NodeClaimList
	if err := r.client.List(ctx, &list, client.MatchingLabels{wellknown.LabelNodePool: nodePool}); err != nil {
		return nil, 0, fmt.Errorf("listing NodeClaims of NodePool %s: %w", nodePool, err)
	}
	total := corev1.ResourceList{}
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
	for name, q := range total {
		// Canonical form, so that the status compares equal across
		// reconciles and prints as users expect ("8Gi", not "8192Mi").
		total[name] = resource.MustParse(q.String())
	}
	if len(total) == 0 {
		total = nil
	}
	return total, n, nil
}

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
	case nc == nil && ref != nil && !refersTo(np, ref.Name):
		r.setCondition(np, karpv1.ConditionTypeNodeClassReady, metav1.ConditionFalse, ReasonNodeClassNotFound,
			fmt.Sprintf("nodeClassRef names %s/%s, which stevedore does not serve: use group %s and kind EC2NodeClass", ref.Group, ref.Kind, wellknown.GroupAWS))
		return
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
// left are those of the checks it cannot do.
func (r *Reconciler) setValidation(np *karpv1.NodePool) {
	if r.validator == nil {
		return
	}
	obj, err := toUnstructured(np)
	if err != nil {
		r.setCondition(np, karpv1.ConditionTypeValidationSucceeded, metav1.ConditionUnknown, ReasonValidationFailed, err.Error())
		return
	}
	var msgs []string
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
		msgs = append(msgs, m)
	}
	if len(msgs) > 0 {
		r.setCondition(np, karpv1.ConditionTypeValidationSucceeded, metav1.ConditionFalse, ReasonValidationFailed, strings.Join(msgs, "; "))
		return
	}
	r.setCondition(np, karpv1.ConditionTypeValidationSucceeded, metav1.ConditionTrue, ReasonValidationSucceeded, "")
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
