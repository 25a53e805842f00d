package disruption

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
)

// PodEventsName is the name of the controller that records pod events in
// NodeClaims' status.lastPodEventTime.
const PodEventsName = "nodeclaim.podevents"

// PodEventDedupe is the least time between two writes of a NodeClaim's
// status.lastPodEventTime. A busy node would otherwise cost a write per pod;
// consolidateAfter is measured in minutes, so ten seconds are not missed.
const PodEventDedupe = 10 * time.Second

// ReconcilePodEvent records that a pod arrived on or left the node of the
// NodeClaim named by req: status.lastPodEventTime becomes now. It is called
// only for the pod events that count (see PodEvent), so it does not check
// the pods itself.
//
// Within PodEventDedupe of the last write nothing is written; the request
// comes back when the interval is over and records the time then. Events
// inside the interval therefore move the time later rather than being lost,
// which errs towards consolidating a node later, never earlier.
func (r *Reconciler) ReconcilePodEvent(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nc := &karpv1.NodeClaim{}
	if err := r.client.Get(ctx, req.NamespacedName, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !nc.DeletionTimestamp.IsZero() || !wellknown.ManagedNodeClaim(nc) {
		return reconcile.Result{}, nil
	}
	now := r.clock.Now()
	if last := nc.Status.LastPodEventTime; !last.IsZero() {
		if next := last.Add(PodEventDedupe); now.Before(next) && !now.Before(last.Time) {
			return reconcile.Result{RequeueAfter: next.Sub(now)}, nil
		}
	}
	// The patch carries only lastPodEventTime, so it cannot undo another
	// controller's write and needs no resource-version guard. It is the
	// patch client.MergeFrom would compute, written directly.
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"lastPodEventTime": metav1.NewTime(now)}})
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := r.client.Status().Patch(ctx, nc, client.RawPatch(types.MergePatchType, patch)); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("recording a pod event on NodeClaim %s: %w", nc.Name, err)
	}
	log.FromContext(ctx).V(1).Info("recorded pod event", "NodeClaim", nc.Name, "lastPodEventTime", now)
	return reconcile.Result{}, nil
}

// PodEvent reports whether a pod's change from prev to cur counts as a pod
// event of its node: the pod was bound to it, turned terminal (Succeeded or
// Failed) or started terminating.
//
// DaemonSet pods never count, as in Karpenter: they follow nodes rather than
// load, so a DaemonSet rolling out must not keep every node from
// consolidating.
func PodEvent(prev, cur *corev1.Pod) bool {
	if cur.Spec.NodeName == "" || ownedByDaemonSet(cur) {
		return false
	}
	bound := prev.Spec.NodeName == ""
	terminal := !terminalPod(prev) && terminalPod(cur)
	terminating := prev.DeletionTimestamp.IsZero() && !cur.DeletionTimestamp.IsZero()
	return bound || terminal || terminating
}

// PodGoneEvent reports whether the deletion of pod, in its last known state,
// counts as a pod event: it was on a node and had neither turned terminal nor
// started terminating, which would have been counted already. That is a pod
// deleted without a grace period.
func PodGoneEvent(pod *corev1.Pod) bool {
	return pod.Spec.NodeName != "" && !ownedByDaemonSet(pod) && !terminalPod(pod) && pod.DeletionTimestamp.IsZero()
}

// ownedByDaemonSet reports whether a DaemonSet controls pod.
func ownedByDaemonSet(pod *corev1.Pod) bool {
	for _, o := range pod.OwnerReferences {
		if o.Controller != nil && *o.Controller && o.Kind == "DaemonSet" {
			return true
		}
	}
	return false
}

func terminalPod(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// podEventHandler enqueues, for every pod event that counts, the NodeClaims
// of the pod's node as nodeClaimsOn finds them.
//
// Creations do not count, not even of pods created already bound to a node
// (static pods' mirrors): when the controller starts, every existing pod
// arrives as a creation, and counting them would restart every node's
// consolidateAfter window at each restart. Karpenter does handle creations:
// it sets lastPodEventTime to the pod's PodScheduled transition time (or
// to now for a finished or terminating pod), for every pod, at every
// restart. stevedore keeps the recorded lastPodEventTime instead, which a
// restart does not lose (it is in the NodeClaim's status); what differs is
// a pod bound or finished while no controller ran, which Karpenter counts
// from its PodScheduled time and stevedore does not count.
func podEventHandler(nodeClaimsOn func(ctx context.Context, nodeName string) []reconcile.Request) handler.EventHandler {
	enqueue := func(ctx context.Context, nodeName string, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		for _, req := range nodeClaimsOn(ctx, nodeName) {
			q.Add(req)
		}
	}
	return handler.Funcs{
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			prev, ok1 := e.ObjectOld.(*corev1.Pod)
			cur, ok2 := e.ObjectNew.(*corev1.Pod)
			if ok1 && ok2 && PodEvent(prev, cur) {
				enqueue(ctx, cur.Spec.NodeName, q)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if pod, ok := e.Object.(*corev1.Pod); ok && PodGoneEvent(pod) {
				enqueue(ctx, pod.Spec.NodeName, q)
			}
		},
	}
}

// nodeClaimsOnNode returns requests for the NodeClaims whose status.nodeName
// is nodeName: from the index when the client has it, otherwise by listing.
func (r *Reconciler) nodeClaimsOnNode(ctx context.Context, nodeName string) []reconcile.Request {
	var list karpv1.NodeClaimList
	var opts []client.ListOption
	if r.indexed {
		opts = append(opts, client.MatchingFields{NodeClaimNodeNameIndex: nodeName})
	}
	// Read only: the cache need not copy what it holds.
	opts = append(opts, client.UnsafeDisableDeepCopy)
	if err := r.client.List(ctx, &list, opts...); err != nil {
		log.FromContext(ctx).Error(err, "listing NodeClaims of node", "Node", nodeName)
		return nil
	}
	out := make([]reconcile.Request, 0, 1)
	for i := range list.Items {
		if list.Items[i].Status.NodeName == nodeName {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
		}
	}
	return out
}
