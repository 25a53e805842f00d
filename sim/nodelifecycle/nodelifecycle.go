// Package nodelifecycle plays what kube-controller-manager and the cloud
// controller manager do about nodes, keyed by node name:
//
//   - the node lifecycle controller: a node whose kubelet stopped posting
//     status is marked Ready=Unknown NodeMonitorGracePeriod later and tainted
//     node.kubernetes.io/unreachable (NoSchedule and NoExecute), and its pods
//     are marked not Ready;
//   - taint-based eviction: pods on a node with a NoExecute taint they do not
//     tolerate are deleted at once, and pods that tolerate it for a while
//     (tolerationSeconds, 300 s by the API server's default) are deleted when
//     that time has passed since the taint was added;
//   - pod garbage collection: pods bound to a node that no longer exists are
//     deleted with grace period 0;
//   - the cloud node lifecycle controller: a node that is not Ready and whose
//     instance is shutting down or gone is deleted.
package nodelifecycle

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/scheduling/taints"
	"github.com/stevedore-autoscaler/stevedore/sim/apiserver"
	"github.com/stevedore-autoscaler/stevedore/sim/kubelet"
	"github.com/stevedore-autoscaler/stevedore/sim/watch"
)

// Name is the controller's name.
const Name = "nodelifecycle"

// NodeMonitorGracePeriod is how long a node's kubelet may be silent before
// the node is marked Ready=Unknown (kube-controller-manager's
// --node-monitor-grace-period).
const NodeMonitorGracePeriod = 40 * time.Second

var (
	nodeGVK = corev1.SchemeGroupVersion.WithKind("Node")
	podGVK  = corev1.SchemeGroupVersion.WithKind("Pod")
)

// Heartbeats says when a node's kubelet stopped, if it did.
type Heartbeats interface {
	Stopped(nodeName string) (time.Time, bool)
}

// Controller is the node lifecycle controller. Create it with New.
type Controller struct {
	api        *apiserver.Server
	aws        *fake.AWS
	clock      clock.PassiveClock
	heartbeats Heartbeats
}

// New returns the controller.
func New(api *apiserver.Server, aws *fake.AWS, clk clock.PassiveClock, hb Heartbeats) *Controller {
	return &Controller{api: api, aws: aws, clock: clk, heartbeats: hb}
}

// Controller returns it for the runner: woken by every change to a Node
// (deletions included) and by a pod's binding to a node. A stopped kubelet
// is reported to the runner, which wakes it for the node then.
func (c *Controller) Controller() watch.Controller {
	return watch.Controller{
		Name:       Name,
		Reconciler: c,
		Watches: []watch.Watch{
			watch.Own(nodeGVK),
			{Kind: podGVK, Map: func(ch apiserver.Change) []reconcile.Request {
				n := ch.Object.(*corev1.Pod).Spec.NodeName
				if n == "" || ch.Type == apiserver.Deleted || (ch.Old != nil && ch.Old.(*corev1.Pod).Spec.NodeName == n) {
					return nil
				}
				return []reconcile.Request{watch.Named(n)}
			}},
		},
	}
}

// Reconcile looks after one node.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	now := c.clock.Now()
	node := &corev1.Node{}
	if err := c.api.Get(ctx, client.ObjectKey{Name: req.Name}, node); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, c.collectPods(ctx, req.Name)
		}
		return reconcile.Result{}, err
	}
	var next time.Time
	soon := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	if stopped, ok := c.heartbeats.Stopped(node.Name); ok {
		at := stopped.Add(NodeMonitorGracePeriod)
		if now.Before(at) {
			soon(at)
		} else if err := c.markUnknown(ctx, node, now); err != nil {
			return reconcile.Result{}, err
		}
	}
	if !ready(node) && c.instanceGone(node) {
		if node.DeletionTimestamp == nil {
			if err := c.api.Delete(ctx, node); err != nil && !apierrors.IsNotFound(err) {
				return reconcile.Result{}, fmt.Errorf("deleting node %s of a vanished instance: %w", node.Name, err)
			}
		}
	}
	t, err := c.evict(ctx, node, now)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !t.IsZero() {
		soon(t)
	}
	if next.IsZero() {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{RequeueAfter: max(next.Sub(now), time.Millisecond)}, nil
}

// markUnknown marks a silent node Ready=Unknown, taints it unreachable and
// marks its pods not ready.
func (c *Controller) markUnknown(ctx context.Context, node *corev1.Node, now time.Time) error {
	t := metav1.NewTime(now)
	changed := false
	base := node.DeepCopy()
	for i := range node.Status.Conditions {
		cond := &node.Status.Conditions[i]
		if cond.Type == corev1.NodeReady && cond.Status != corev1.ConditionUnknown {
			cond.Status, cond.Reason, cond.Message = corev1.ConditionUnknown, "NodeStatusUnknown", "Kubelet stopped posting node status."
			cond.LastTransitionTime = t
			changed = true
		}
	}
	if changed {
		if err := c.api.Status().Patch(ctx, node, apiserver.MergeFrom(base)); err != nil {
			return fmt.Errorf("marking node %s unknown: %w", node.Name, err)
		}
	}
	base = node.DeepCopy()
	for _, effect := range []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute} {
		taint := corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: effect, TimeAdded: &t}
		if !slices.ContainsFunc(node.Spec.Taints, func(x corev1.Taint) bool { return x.MatchTaint(&taint) }) {
			node.Spec.Taints = append(node.Spec.Taints, taint)
		}
	}
	if len(node.Spec.Taints) != len(base.Spec.Taints) {
		if err := c.api.Patch(ctx, node, apiserver.MergeFrom(base)); err != nil {
			return fmt.Errorf("tainting node %s unreachable: %w", node.Name, err)
		}
	}
	if !changed {
		return nil
	}
	for _, o := range c.api.Select(podGVK, "spec.nodeName", node.Name) {
		p := o.(*corev1.Pod).DeepCopy()
		base := p.DeepCopy()
		found := false
		for i := range p.Status.Conditions {
			if cond := &p.Status.Conditions[i]; cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				cond.Status, cond.Reason, cond.LastTransitionTime = corev1.ConditionFalse, "NodeNotReady", t
				found = true
			}
		}
		if !found {
			continue
		}
		if err := c.api.Status().Patch(ctx, p, apiserver.MergeFrom(base)); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("marking pod %s/%s not ready: %w", p.Namespace, p.Name, err)
		}
	}
	return nil
}

// evict deletes the node's pods that a NoExecute taint evicts now, and
// returns when the next one is due.
func (c *Controller) evict(ctx context.Context, node *corev1.Node, now time.Time) (time.Time, error) {
	var noExec []corev1.Taint
	for _, t := range node.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoExecute {
			noExec = append(noExec, t)
		}
	}
	if len(noExec) == 0 {
		return time.Time{}, nil
	}
	var next time.Time
	for _, o := range c.api.Select(podGVK, "spec.nodeName", node.Name) {
		p := o.(*corev1.Pod)
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		due, ok := evictionTime(p, noExec)
		if !ok {
			continue
		}
		if now.Before(due) {
			if next.IsZero() || due.Before(next) {
				next = due
			}
			continue
		}
		err := c.api.Delete(ctx, p, client.Preconditions{UID: &p.UID})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return time.Time{}, fmt.Errorf("evicting pod %s/%s from tainted node %s: %w", p.Namespace, p.Name, node.Name, err)
		}
	}
	return next, nil
}

// evictionTime returns when the taints evict the pod: at once for a taint it
// does not tolerate, else the earliest end of a limited toleration, counted
// from when its taint was added; false when it tolerates them all forever.
func evictionTime(p *corev1.Pod, noExec []corev1.Taint) (time.Time, bool) {
	var due time.Time
	found := false
	for _, t := range noExec {
		if !taints.Tolerates(p.Spec.Tolerations, t) {
			return time.Time{}, true
		}
		secs := int64(-1)
		for _, tol := range p.Spec.Tolerations {
			if tol.TolerationSeconds == nil || !taints.Tolerates([]corev1.Toleration{tol}, t) {
				continue
			}
			if secs < 0 || *tol.TolerationSeconds < secs {
				secs = *tol.TolerationSeconds
			}
		}
		if secs < 0 {
			continue
		}
		added := time.Time{}
		if t.TimeAdded != nil {
			added = t.TimeAdded.Time
		}
		at := added.Add(time.Duration(secs) * time.Second)
		if !found || at.Before(due) {
			due, found = at, true
		}
	}
	return due, found
}

// collectPods deletes the pods of a node that is gone.
func (c *Controller) collectPods(ctx context.Context, nodeName string) error {
	for _, o := range c.api.Select(podGVK, "spec.nodeName", nodeName) {
		p := o.(*corev1.Pod)
		err := c.api.Delete(ctx, p, client.GracePeriodSeconds(0), client.Preconditions{UID: &p.UID})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("collecting pod %s/%s of deleted node %s: %w", p.Namespace, p.Name, nodeName, err)
		}
	}
	return nil
}

// instanceGone reports whether the node's instance is shutting down,
// terminated or unknown to EC2. Nodes without an AWS provider ID have no
// instance to check.
func (c *Controller) instanceGone(node *corev1.Node) bool {
	id := kubelet.InstanceID(node.Spec.ProviderID)
	if id == "" || c.aws == nil {
		return false
	}
	info, ok := c.aws.Instance(id)
	return !ok || info.State == fake.StateShuttingDown || info.State == fake.StateTerminated
}

func ready(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
