// Package capacitybuffer is the CapacityBuffer controller (behind the
// CapacityBuffer feature gate). For each CapacityBuffer it:
//
//   - fetches the PodTemplate or workload its spec names and works out the
//     chunk's pod shape and the number of chunks (decide/capacitybuffer);
//   - writes the status as Karpenter does: status.podTemplateRef,
//     podTemplateGeneration, replicas, provisioningStrategy and the
//     ReadyForProvisioning condition, and the Provisioning condition while
//     the buffer is not ready or empty (once it has chunks, the provisioner
//     writes Provisioning from where they were packed);
//   - records the buffer's placeholder pods in the cluster state, where the
//     provisioner launches capacity for them and the disruption decisions
//     keep it, and wakes the provisioner.
//
// A deleted buffer's placeholders are forgotten, so that its capacity may be
// consolidated. Changes to PodTemplates, Deployments and StatefulSets wake
// the buffers of their namespace that name them; every buffer is also looked
// at again each Requeue, which catches the rest (ReplicaSets).
package capacitybuffer

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	autoscalingv1beta1 "github.com/stevedore-autoscaler/stevedore/api/autoscaling/v1beta1"
	"github.com/stevedore-autoscaler/stevedore/controllers/provisioning"
	decide "github.com/stevedore-autoscaler/stevedore/decide/capacitybuffer"
	"github.com/stevedore-autoscaler/stevedore/state"
)

// Name is the controller's name, as registered with the manager.
const Name = "capacitybuffer"

// KindPodTemplate is the kind of object a podTemplateRef names.
const KindPodTemplate = decide.KindPodTemplate

// Requeue is how soon a buffer is resolved again without a change that
// wakes it: a workload's replica count may change without one.
const Requeue = 30 * time.Second

// Controller reconciles CapacityBuffers. Create it with New.
type Controller struct {
	client client.Client
	state  *state.Cluster
	clock  clock.PassiveClock
	// wake tells the provisioner a buffer changed; may be nil.
	wake func()
}

// New returns a Controller that reads and writes through c, records
// placeholder pods in st and calls wake (if not nil) after each buffer it
// resolved.
func New(c client.Client, st *state.Cluster, clk clock.PassiveClock, wake func()) *Controller {
	return &Controller{client: c, state: st, clock: clk, wake: wake}
}

// Register runs the controller under the manager.
func (c *Controller) Register(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named(Name).
		For(&autoscalingv1beta1.CapacityBuffer{}).
		Watches(&corev1.PodTemplate{}, handler.EnqueueRequestsFromMapFunc(c.BuffersNaming(decide.KindPodTemplate))).
		Watches(&appsv1.Deployment{}, handler.EnqueueRequestsFromMapFunc(c.BuffersNaming(autoscalingv1beta1.KindDeployment))).
		Watches(&appsv1.StatefulSet{}, handler.EnqueueRequestsFromMapFunc(c.BuffersNaming(autoscalingv1beta1.KindStatefulSet))).
		Complete(c)
}

// BuffersNaming maps an object of kind to the buffers of its namespace
// whose spec names it, in the order the list returns them.
func (c *Controller) BuffersNaming(kind string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		list := &autoscalingv1beta1.CapacityBufferList{}
		if err := c.client.List(ctx, list, client.InNamespace(o.GetNamespace())); err != nil {
			return nil
		}
		var out []reconcile.Request
		for i := range list.Items {
			cb := &list.Items[i]
			if ref, err := decide.Target(cb); err == nil && ref.Kind == kind && ref.Name == o.GetName() {
				out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: cb.Namespace, Name: cb.Name}})
			}
		}
		return out
	}
}

// Reconcile resolves one CapacityBuffer.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	cb := &autoscalingv1beta1.CapacityBuffer{}
	if err := c.client.Get(ctx, req.NamespacedName, cb); err != nil {
		if apierrors.IsNotFound(err) {
			c.forget(req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !cb.DeletionTimestamp.IsZero() {
		c.forget(req.NamespacedName)
		return reconcile.Result{}, nil
	}
	res, err := c.resolve(ctx, cb)
	if err != nil {
		return reconcile.Result{}, err
	}
	now := c.clock.Now()
	stored := cb.DeepCopy()
	cb.Status = decide.Status(cb, res, now)
	if !equality.Semantic.DeepEqual(stored.Status, cb.Status) {
		if err := c.client.Status().Patch(ctx, cb, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
				return reconcile.Result{RequeueAfter: time.Second}, nil
			}
			return reconcile.Result{}, fmt.Errorf("writing the status of CapacityBuffer %s: %w", req.NamespacedName, err)
		}
	}
	// Provisioning for a buffer with nothing to pack (not ready, or no
	// chunks); the provisioner writes it for the others.
	if err := provisioning.WriteProvisioningCondition(ctx, c.client, cb, nil, now); err != nil {
		return reconcile.Result{}, err
	}
	if res.Ready {
		c.state.SetBufferPods(req.NamespacedName, decide.VirtualPods(cb, res.Template, res.Replicas))
	} else {
		c.state.SetBufferPods(req.NamespacedName, nil)
	}
	if c.wake != nil {
		c.wake()
	}
	return reconcile.Result{RequeueAfter: Requeue}, nil
}

// forget drops a buffer's placeholders and wakes the provisioner.
func (c *Controller) forget(key types.NamespacedName) {
	c.state.SetBufferPods(key, nil)
	if c.wake != nil {
		c.wake()
	}
}

// resolve fetches what the buffer names and resolves it. A missing object
// or a reference stevedore cannot read is a resolution that failed (the
// user's to fix, reported in the status); any other error is returned, to
// be retried.
func (c *Controller) resolve(ctx context.Context, cb *autoscalingv1beta1.CapacityBuffer) (decide.Resolution, error) {
	ref, err := decide.Target(cb)
	if err != nil {
		return decide.Failed(cb, err, false), nil
	}
	key := types.NamespacedName{Namespace: cb.Namespace, Name: ref.Name}
	var found decide.Found
	var obj client.Object
	switch ref.Kind {
	case decide.KindPodTemplate:
		found.PodTemplate = &corev1.PodTemplate{}
		obj = found.PodTemplate
	case autoscalingv1beta1.KindDeployment:
		found.Deployment = &appsv1.Deployment{}
		obj = found.Deployment
	case autoscalingv1beta1.KindStatefulSet:
		found.StatefulSet = &appsv1.StatefulSet{}
		obj = found.StatefulSet
	default:
		found.ReplicaSet = &appsv1.ReplicaSet{}
		obj = found.ReplicaSet
	}
	if err := c.client.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return decide.Failed(cb, err, true), nil
		}
		return decide.Resolution{}, fmt.Errorf("getting %s %s of CapacityBuffer %s/%s: %w", ref.Kind, key, cb.Namespace, cb.Name, err)
	}
	return decide.Resolve(cb, found), nil
}
