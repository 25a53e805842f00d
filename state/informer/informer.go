// Package informer keeps a state.Cluster current from controller-runtime
// informers: it registers event handlers that pass every add, update and
// delete of the kinds the state holds to the Cluster.
package informer

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/karpenter/v1alpha1"
	"github.com/stevedore-autoscaler/stevedore/state"
)

// Register wires the manager's informers to st. Call it before the manager
// starts; the manager's scheme must know the karpenter.sh and
// karpenter.k8s.aws types.
func Register(mgr manager.Manager, st *state.Cluster) error {
	return RegisterInformers(context.Background(), mgr.GetCache(), st)
}

// RegisterInformers wires the informers of informers to st, for callers that
// run a cache without a manager.
func RegisterInformers(ctx context.Context, informers cache.Informers, st *state.Cluster) error {
	for _, k := range kinds(st) {
		inf, err := informers.GetInformer(ctx, k.obj)
		if err != nil {
			return fmt.Errorf("informer for %T: %w", k.obj, err)
		}
		if _, err := inf.AddEventHandler(handler{update: k.update, remove: k.remove}); err != nil {
			return fmt.Errorf("event handler for %T: %w", k.obj, err)
		}
	}
	return nil
}

// RegisterNodeOverlays wires the informer of NodeOverlays to st. It is
// separate from RegisterInformers because it runs only with the NodeOverlay
// feature gate on: a cluster without the gate need not have the CRD.
func RegisterNodeOverlays(ctx context.Context, informers cache.Informers, st *state.Cluster) error {
	inf, err := informers.GetInformer(ctx, &v1alpha1.NodeOverlay{})
	if err != nil {
		return fmt.Errorf("informer for NodeOverlays: %w", err)
	}
	if _, err := inf.AddEventHandler(handler{update: typed(st.UpdateNodeOverlay), remove: func(o client.Object) { st.DeleteNodeOverlay(o.GetName()) }}); err != nil {
		return fmt.Errorf("event handler for NodeOverlays: %w", err)
	}
	return nil
}

type kind struct {
	obj    client.Object
	update func(client.Object)
	remove func(client.Object)
}

// typed adapts a Cluster's update method to any object, ignoring objects of
// other types (which an informer for T never delivers).
func typed[T client.Object](f func(T)) func(client.Object) {
	return func(o client.Object) {
		if t, ok := o.(T); ok {
			f(t)
		}
	}
}

func kinds(st *state.Cluster) []kind {
	byName := func(f func(string)) func(client.Object) {
		return func(o client.Object) { f(o.GetName()) }
	}
	byKey := func(f func(string, string)) func(client.Object) {
		return func(o client.Object) { f(o.GetNamespace(), o.GetName()) }
	}
	return []kind{
		{&corev1.Node{}, typed(st.UpdateNode), byName(st.DeleteNode)},
		{&karpv1.NodeClaim{}, typed(st.UpdateNodeClaim), byName(st.DeleteNodeClaim)},
		{&corev1.Pod{}, typed(st.UpdatePod), byKey(st.DeletePod)},
		{&appsv1.DaemonSet{}, typed(st.UpdateDaemonSet), byKey(st.DeleteDaemonSet)},
		{&policyv1.PodDisruptionBudget{}, typed(st.UpdatePodDisruptionBudget), byKey(st.DeletePodDisruptionBudget)},
		{&karpv1.NodePool{}, typed(st.UpdateNodePool), byName(st.DeleteNodePool)},
		{&awsv1.EC2NodeClass{}, typed(st.UpdateEC2NodeClass), byName(st.DeleteEC2NodeClass)},
		{&corev1.Namespace{}, typed(st.UpdateNamespace), byName(st.DeleteNamespace)},
		{&corev1.PersistentVolumeClaim{}, typed(st.UpdatePersistentVolumeClaim), byKey(st.DeletePersistentVolumeClaim)},
		{&corev1.PersistentVolume{}, typed(st.UpdatePersistentVolume), byName(st.DeletePersistentVolume)},
		{&corev1.LimitRange{}, typed(st.UpdateLimitRange), byKey(st.DeleteLimitRange)},
	}
}

// handler is a client-go event handler over client.Objects.
type handler struct {
	update func(client.Object)
	remove func(client.Object)
}

func (h handler) OnAdd(obj any, _ bool) {
	if o, ok := obj.(client.Object); ok {
		h.update(o)
	}
}

func (h handler) OnUpdate(_, obj any) {
	if o, ok := obj.(client.Object); ok {
		h.update(o)
	}
}

// OnDelete also accepts the tombstone an informer delivers when it missed the
// delete and learnt of it from a relist.
func (h handler) OnDelete(obj any) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if o, ok := obj.(client.Object); ok {
		h.remove(o)
	}
}
