// Package singleton runs controllers that have one piece of work rather than
// one per object: the provisioner, the disruption loop, the NodeClaim garbage
// collector and the static NodePool controller. Such a controller reconciles
// a single request named after itself, is woken once when the manager starts
// and then as its results ask (RequeueAfter), and never runs two reconciles
// at once, since each pass reads and changes the whole cluster.
package singleton

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Request is the one request the controller called name reconciles.
func Request(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}
}

// Builder starts the registration of the controller called name: its
// request is queued once when the manager starts, and one reconcile runs at
// a time. Callers add their own watches (mapped to Request(name)) and
// Complete it.
func Builder(mgr manager.Manager, name string) *builder.Builder {
	return builder.ControllerManagedBy(mgr).
		Named(name).
		WatchesRawSource(source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
			q.Add(Request(name))
			return nil
		})).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1})
}

// Register runs r under mgr as the controller called name, with no watches:
// it runs when the manager starts and then as its results ask.
func Register(mgr manager.Manager, name string, r reconcile.Reconciler) error {
	return Builder(mgr, name).Complete(r)
}
