package apiserver

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var (
	namespaceGVK = corev1.SchemeGroupVersion.WithKind("Namespace")
	podGVK       = corev1.SchemeGroupVersion.WithKind("Pod")
)

// defaultGracePeriod is a pod's termination grace period when its spec
// leaves it unset, as the API server defaults it.
const defaultGracePeriod int64 = 30

// Delete implements client.Client.
//
// A pod bound to a node is deleted gracefully: it gets a deletionTimestamp
// its grace period ahead (the option's, else its own) and stays, terminating,
// until its kubelet deletes it again with grace period 0. Unbound and finished
// pods go at once, as do other objects. An object with finalizers gets a
// deletionTimestamp and stays until the last finalizer is removed. When an
// object goes, its dependents whose owners are all gone are deleted too
// (background propagation), unless the propagation policy is Orphan.
func (s *Server) Delete(_ context.Context, obj client.Object, opts ...client.DeleteOption) error {
	do := client.DeleteOptions{}
	do.ApplyOptions(opts)
	if len(do.DryRun) > 0 {
		return nil
	}
	gvk, err := s.gvkFor(obj)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	if !Namespaced(gvk) {
		key.Namespace = ""
	} else if key.Namespace == "" {
		key.Namespace = metav1.NamespaceDefault
	}
	return s.deleteLocked(ref{gvk: gvk, namespace: key.Namespace, name: key.Name}, do.AsDeleteOptions())
}

// DeleteAllOf implements client.Client.
func (s *Server) DeleteAllOf(_ context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	o := client.DeleteAllOfOptions{}
	o.ApplyOptions(opts)
	if len(o.DryRun) > 0 {
		return nil
	}
	gvk, err := s.gvkFor(obj)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	items, err := s.selectLocked(gvk, o.Namespace, o.LabelSelector, o.FieldSelector)
	if err != nil {
		return err
	}
	for _, it := range items {
		r := ref{gvk: gvk, namespace: it.GetNamespace(), name: it.GetName()}
		if err := s.deleteLocked(r, o.AsDeleteOptions()); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

func (s *Server) deleteLocked(r ref, opts *metav1.DeleteOptions) error {
	cur := s.store(r.gvk).objs[r.key()]
	if cur == nil {
		return apierrors.NewNotFound(resource(r.gvk), r.name)
	}
	if p := opts.Preconditions; p != nil {
		if p.UID != nil && *p.UID != cur.GetUID() {
			return apierrors.NewConflict(resource(r.gvk), r.name,
				errorf("Precondition failed: UID in precondition: %s, UID in object meta: %s", *p.UID, cur.GetUID()))
		}
		if p.ResourceVersion != nil && *p.ResourceVersion != cur.GetResourceVersion() {
			return apierrors.NewConflict(resource(r.gvk), r.name,
				errorf("Precondition failed: ResourceVersion in precondition: %s, ResourceVersion in object meta: %s", *p.ResourceVersion, cur.GetResourceVersion()))
		}
	}
	orphan := opts.PropagationPolicy != nil && *opts.PropagationPolicy == metav1.DeletePropagationOrphan
	now := s.clock.Now()

	if r.gvk == podGVK {
		pod := cur.(*corev1.Pod)
		grace := podGrace(pod, opts)
		if grace > 0 {
			deadline := now.Add(time.Duration(grace) * time.Second)
			if pod.DeletionTimestamp != nil && !deadline.Before(pod.DeletionTimestamp.Time) {
				// Already terminating, and sooner: a second delete
				// may shorten the grace period, never lengthen it.
				return nil
			}
			next := pod.DeepCopy()
			ts := s.stamp(deadline)
			next.DeletionTimestamp = &ts
			next.DeletionGracePeriodSeconds = &grace
			_, err := s.commitLocked(r.gvk, cur, next)
			return err
		}
	}
	if len(cur.GetFinalizers()) > 0 {
		if cur.GetDeletionTimestamp() != nil && (r.gvk != podGVK || isZero(cur.GetDeletionGracePeriodSeconds())) {
			return nil
		}
		next := cur.DeepCopyObject().(client.Object)
		ts := s.stamp(now)
		zero := int64(0)
		next.SetDeletionTimestamp(&ts)
		next.SetDeletionGracePeriodSeconds(&zero)
		// An Orphan policy on an object with finalizers is not
		// remembered: its dependents are collected when it goes.
		_, err := s.commitLocked(r.gvk, cur, next)
		return err
	}
	if orphan {
		s.orphanLocked(cur)
	}
	s.removeLocked(r, cur)
	return nil
}

// stamp returns a timestamp as clients of a real API server see it: metadata
// times are serialized with one-second precision.
func (s *Server) stamp(t time.Time) metav1.Time { return metav1.NewTime(t.Truncate(time.Second)) }

func isZero(p *int64) bool { return p == nil || *p == 0 }

// podGrace returns the grace period a delete gives the pod: 0 for pods that
// are not bound to a node or have finished (they have no kubelet to stop
// them), else the option's, else the one a previous delete set, else the
// pod's own.
func podGrace(pod *corev1.Pod, opts *metav1.DeleteOptions) int64 {
	if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return 0
	}
	if opts.GracePeriodSeconds != nil {
		return max(*opts.GracePeriodSeconds, 0)
	}
	if pod.DeletionGracePeriodSeconds != nil {
		return *pod.DeletionGracePeriodSeconds
	}
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		return max(*g, 0)
	}
	return defaultGracePeriod
}

// terminatingPod reports whether o is a pod in its graceful termination:
// it stays until its kubelet deletes it, finalizers or not.
func terminatingPod(gvk schema.GroupVersionKind, o client.Object) bool {
	return gvk == podGVK && o.GetDeletionTimestamp() != nil && !isZero(o.GetDeletionGracePeriodSeconds())
}

// orphanLocked strips the owner references to cur from its dependents.
func (s *Server) orphanLocked(cur client.Object) {
	for _, d := range s.dependentsLocked(cur.GetUID()) {
		dep := s.store(d.gvk).objs[d.key()]
		if dep == nil {
			continue
		}
		next := dep.DeepCopyObject().(client.Object)
		next.SetOwnerReferences(slices.DeleteFunc(slices.Clone(next.GetOwnerReferences()), func(o metav1.OwnerReference) bool {
			return o.UID == cur.GetUID()
		}))
		_, _ = s.commitLocked(d.gvk, dep, next)
	}
}

// removeLocked takes the object out of the store, records its deletion and
// collects its dependents that have no owner left.
func (s *Server) removeLocked(r ref, last client.Object) {
	gone := s.drop(r)
	if gone == nil {
		return
	}
	s.rv++
	s.record(Change{Type: Deleted, GVK: r.gvk, Object: gone, Old: last})
	for _, d := range s.dependentsLocked(gone.GetUID()) {
		dep := s.store(d.gvk).objs[d.key()]
		if dep == nil || s.hasLiveOwner(dep) {
			continue
		}
		_ = s.deleteLocked(d, &metav1.DeleteOptions{})
	}
}

// dependentsLocked returns the objects with an owner reference to uid, in a
// stable order.
func (s *Server) dependentsLocked(uid types.UID) []ref {
	m := s.owned[uid]
	out := make([]ref, 0, len(m))
	for r := range m {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b ref) int {
		if c := strings.Compare(a.gvk.String(), b.gvk.String()); c != 0 {
			return c
		}
		return compareKeys(a.key(), b.key())
	})
	return out
}

// hasLiveOwner reports whether one of o's owners still exists (with the
// UID the reference names).
func (s *Server) hasLiveOwner(o client.Object) bool {
	for _, or := range o.GetOwnerReferences() {
		if _, ok := s.byUID[or.UID]; ok {
			return true
		}
	}
	return false
}

// clearMetaAndStatus zeroes the ObjectMeta and Status fields of a typed
// object, leaving what a write's generation depends on.
func clearMetaAndStatus(o runtime.Object) {
	v := reflect.ValueOf(o).Elem()
	for _, name := range []string{"ObjectMeta", "Status", "TypeMeta"} {
		if f := v.FieldByName(name); f.IsValid() && f.CanSet() {
			f.Set(reflect.Zero(f.Type()))
		}
	}
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }
