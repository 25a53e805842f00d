// Package watch describes what wakes a reconciler in the simulator. Under a
// controller-runtime manager a reconciler is woken by the watches its Register
// method sets up (For, Owns, Watches with a map function, predicates) and by
// the requeues it asks for. The simulator has no informers and no work
// queues: the runner maps every change to the in-memory API through a
// Controller's Watches, and the result is the same set of requests.
//
// A Controller's Watches must mirror its Register method: the same kinds, the
// same predicates and the same mapping from an object to requests. The table
// for each production controller lives next to the runner (package runner);
// the simulated world's controllers (kubelet, binder, workloads, node
// lifecycle) describe their own.
package watch

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/stevedore-autoscaler/stevedore/sim/apiserver"
)

// Controller is a reconciler and what wakes it.
type Controller struct {
	// Name identifies the controller in the run's statistics and errors.
	Name string
	// Reconciler is called with each request, one at a time.
	Reconciler reconcile.Reconciler
	// Watches map changes to requests.
	Watches []Watch
	// Start are the requests enqueued when the controller starts, as a raw
	// source that adds a request at start does (singleton controllers).
	Start []reconcile.Request
}

// Watch maps changes to one kind of object to requests.
type Watch struct {
	Kind schema.GroupVersionKind
	Map  func(apiserver.Change) []reconcile.Request
}

// Predicate filters the objects of a watch, as a controller-runtime predicate
// does; it sees the object after the change (its last state for a deletion).
type Predicate func(client.Object) bool

// Own wakes the controller for the changed object itself, like For or an
// EnqueueRequestForObject handler.
func Own(kind schema.GroupVersionKind, preds ...Predicate) Watch {
	return Watch{Kind: kind, Map: func(c apiserver.Change) []reconcile.Request {
		if !pass(c, preds) {
			return nil
		}
		return []reconcile.Request{Key(c.Object)}
	}}
}

// Fixed wakes the controller with req for every change that passes preds,
// like a map function that always returns the same request.
func Fixed(kind schema.GroupVersionKind, req reconcile.Request, preds ...Predicate) Watch {
	return Watch{Kind: kind, Map: func(c apiserver.Change) []reconcile.Request {
		if !pass(c, preds) {
			return nil
		}
		return []reconcile.Request{req}
	}}
}

// Map wakes the controller with what fn returns for the changed object, like
// EnqueueRequestsFromMapFunc.
func Map(kind schema.GroupVersionKind, fn func(client.Object) []reconcile.Request) Watch {
	return Watch{Kind: kind, Map: func(c apiserver.Change) []reconcile.Request { return fn(c.Object) }}
}

// Key is the request for obj.
func Key(obj client.Object) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}}
}

// Named is the request for a cluster-scoped object or a singleton.
func Named(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}
}

func pass(c apiserver.Change, preds []Predicate) bool {
	for _, p := range preds {
		if !p(c.Object) {
			return false
		}
	}
	return true
}
