// Package workloads is the simulator's kube-controller-manager, as far as
// workloads go: reconcilers that keep pods running for Deployments,
// ReplicaSets, StatefulSets, DaemonSets and Jobs, and the disruption
// controller that keeps PodDisruptionBudget status current.
//
// They do what the real controllers do in the ways that matter to node
// autoscaling, and leave out the rest:
//
//   - a ReplicaSet keeps spec.replicas pods that are neither terminating nor
//     finished: it replaces evicted and deleted pods at once and, when it has
//     too many, deletes the least established first (unbound, then pending,
//     then not ready, then the newest);
//   - a Deployment owns one ReplicaSet per pod template (named with the
//     template's hash) and rolls from the old to the new within maxSurge and
//     maxUnavailable (Recreate: old to zero first);
//   - a StatefulSet keeps pods <name>-0 … <name>-(n-1), created in order (each
//     after the one before is Ready) unless podManagementPolicy is Parallel,
//     and removed from the highest ordinal; each volumeClaimTemplate gets a
//     claim per ordinal, which binds in the zone of its pod's first node
//     (package scheduler) and keeps the pod there; template updates are not
//     rolled out;
//   - a DaemonSet keeps one pod per node that its node selector, affinity and
//     tolerations (plus the tolerations the real controller adds) admit,
//     pinned to the node by node affinity on metadata.name, as the real one
//     does; its pods are bound by the scheduler;
//   - a Job runs parallelism pods until completions have succeeded; its pods
//     succeed after the duration in their simulate.stevedore.io/duration
//     annotation (package kubelet); ttlSecondsAfterFinished is honoured;
//   - a PodDisruptionBudget's status is what the eviction subresource computes
//     (apiserver.Server.PDBStatus), written whenever it changes;
//   - ReplicaSets, Jobs and StatefulSets write pods at the real controllers'
//     pace (pace.go): a sync creates at most 500 pods, in slow-start batches,
//     and every pod created or deleted waits for a token of its controller's
//     API client (Options.KubeAPIQPS and KubeAPIBurst), so that a large
//     scale-out reaches the scheduler and the provisioner over seconds, as
//     on a real cluster, not at one instant.
//
// Every reconciler is keyed like its real counterpart and woken by the
// watches its Controller lists. The only state kept between calls is what
// the real controller process keeps too: each client's token bucket, and the
// syncs waiting for it.
package workloads

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/stevedore-autoscaler/stevedore/sim/apiserver"
	"github.com/stevedore-autoscaler/stevedore/sim/watch"
)

var (
	podGVK         = corev1.SchemeGroupVersion.WithKind("Pod")
	nodeGVK        = corev1.SchemeGroupVersion.WithKind("Node")
	deploymentGVK  = appsv1.SchemeGroupVersion.WithKind("Deployment")
	replicaSetGVK  = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	statefulSetGVK = appsv1.SchemeGroupVersion.WithKind("StatefulSet")
	daemonSetGVK   = appsv1.SchemeGroupVersion.WithKind("DaemonSet")
	jobGVK         = batchv1.SchemeGroupVersion.WithKind("Job")
	pdbGVK         = policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget")
)

// Controller names.
const (
	NameDeployment  = "deployment"
	NameReplicaSet  = "replicaset"
	NameStatefulSet = "statefulset"
	NameDaemonSet   = "daemonset"
	NameJob         = "job"
	NameDisruption  = "disruption"
)

// base is what every workload reconciler holds.
type base struct {
	api   *apiserver.Server
	clock clock.PassiveClock
}

// Options are kube-controller-manager's settings.
type Options struct {
	// KubeAPIQPS and KubeAPIBurst are --kube-api-qps and --kube-api-burst:
	// the token bucket of each controller's API client, which sets the pace
	// of pod creation (see pace.go); zero means DefaultKubeAPIQPS and
	// DefaultKubeAPIBurst.
	KubeAPIQPS   float64
	KubeAPIBurst int
}

// Controllers returns the workload controllers for the runner.
func Controllers(api *apiserver.Server, clk clock.PassiveClock, opts Options) []watch.Controller {
	if opts.KubeAPIQPS <= 0 {
		opts.KubeAPIQPS = DefaultKubeAPIQPS
	}
	if opts.KubeAPIBurst <= 0 {
		opts.KubeAPIBurst = DefaultKubeAPIBurst
	}
	// Each controller has a client, and so a token bucket, of its own.
	pace := func() *pacer { return newPacer(opts.KubeAPIQPS, opts.KubeAPIBurst) }
	b := base{api: api, clock: clk}
	return []watch.Controller{
		{Name: NameDeployment, Reconciler: &deployments{b}, Watches: []watch.Watch{
			watch.Own(deploymentGVK), watch.Map(replicaSetGVK, ownerOfKind("Deployment")),
		}},
		{Name: NameReplicaSet, Reconciler: &replicaSets{b, pace()}, Watches: []watch.Watch{
			watch.Own(replicaSetGVK), watch.Map(podGVK, ownerOfKind("ReplicaSet")),
		}},
		{Name: NameStatefulSet, Reconciler: &statefulSets{b, pace()}, Watches: []watch.Watch{
			watch.Own(statefulSetGVK), watch.Map(podGVK, ownerOfKind("StatefulSet")),
		}},
		{Name: NameDaemonSet, Reconciler: &daemonSets{b}, Watches: []watch.Watch{
			watch.Own(daemonSetGVK), watch.Map(podGVK, ownerOfKind("DaemonSet")),
			watch.Map(nodeGVK, func(client.Object) []reconcile.Request { return allOf(api, daemonSetGVK) }),
		}},
		{Name: NameJob, Reconciler: &jobs{b, pace()}, Watches: []watch.Watch{
			watch.Own(jobGVK), watch.Map(podGVK, ownerOfKind("Job")),
		}},
		{Name: NameDisruption, Reconciler: &disruptionBudgets{b}, Watches: []watch.Watch{
			watch.Own(pdbGVK),
			{Kind: podGVK, Map: func(c apiserver.Change) []reconcile.Request { return budgetsForPod(api, c) }},
			{Kind: deploymentGVK, Map: func(c apiserver.Change) []reconcile.Request { return budgetsForScale(api, c) }},
			{Kind: replicaSetGVK, Map: func(c apiserver.Change) []reconcile.Request { return budgetsForScale(api, c) }},
			{Kind: statefulSetGVK, Map: func(c apiserver.Change) []reconcile.Request { return budgetsForScale(api, c) }},
		}},
	}
}

// ownerOfKind maps an object to its controller of the given kind.
func ownerOfKind(kind string) func(client.Object) []reconcile.Request {
	return func(o client.Object) []reconcile.Request {
		if c := metav1.GetControllerOf(o); c != nil && c.Kind == kind {
			return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: c.Name}}}
		}
		return nil
	}
}

// allOf maps to every object of a kind.
func allOf(api *apiserver.Server, gvk schema.GroupVersionKind) []reconcile.Request {
	objs := api.Objects(gvk)
	out := make([]reconcile.Request, 0, len(objs))
	for _, o := range objs {
		out = append(out, watch.Key(o))
	}
	return out
}

// budgetsForPod maps a pod's change to the budgets whose status it can
// move: those selecting the pod before or after the change, and only when
// the change touches what a budget's status reads (the pod's labels and
// controller, whether it is deleting, finished or ready). Most pod changes,
// a binding or a condition other than Ready, touch none of it.
func budgetsForPod(api *apiserver.Server, c apiserver.Change) []reconcile.Request {
	pod, ok := c.Object.(*corev1.Pod)
	if !ok {
		return nil
	}
	old, _ := c.Old.(*corev1.Pod)
	if c.Type == apiserver.Modified && old != nil && !budgetFieldsChanged(old, pod) {
		return nil
	}
	var out []reconcile.Request
	for _, k := range api.BudgetsSelecting(pod) {
		out = append(out, reconcile.Request{NamespacedName: k})
	}
	if old != nil && !maps.Equal(old.Labels, pod.Labels) {
		for _, k := range api.BudgetsSelecting(old) {
			if !slices.ContainsFunc(out, func(r reconcile.Request) bool { return r.NamespacedName == k }) {
				out = append(out, reconcile.Request{NamespacedName: k})
			}
		}
	}
	return out
}

// budgetsForScale maps a change of a pod controller to the budgets of its
// namespace, when the change can move the pods a budget expects: the
// controller came or went, or its spec.replicas or its own controller
// changed. A status update (ready replicas, every time a pod becomes
// ready) cannot.
func budgetsForScale(api *apiserver.Server, c apiserver.Change) []reconcile.Request {
	if c.Type == apiserver.Modified && c.Old != nil && !scaleChanged(c.Old, c.Object) {
		return nil
	}
	return budgetsInNamespace(api, c.Object.GetNamespace())
}

// scaleChanged reports whether an update changed what the eviction
// subresource reads of a pod controller for a budget's expected pods.
func scaleChanged(old, cur client.Object) bool {
	replicas := func(o client.Object) (*int32, bool) {
		switch o := o.(type) {
		case *appsv1.Deployment:
			return o.Spec.Replicas, true
		case *appsv1.ReplicaSet:
			return o.Spec.Replicas, true
		case *appsv1.StatefulSet:
			return o.Spec.Replicas, true
		}
		return nil, false
	}
	a, okA := replicas(old)
	b, okB := replicas(cur)
	if !okA || !okB || (a == nil) != (b == nil) || (a != nil && *a != *b) {
		return true
	}
	oc, cc := metav1.GetControllerOf(old), metav1.GetControllerOf(cur)
	return (oc == nil) != (cc == nil) || (oc != nil && oc.UID != cc.UID)
}

// budgetFieldsChanged reports whether a pod's update changed anything a
// budget's status is computed from (see apiserver's PDBStatus).
func budgetFieldsChanged(old, cur *corev1.Pod) bool {
	finished := func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	}
	controller := func(p *corev1.Pod) types.UID {
		if c := metav1.GetControllerOf(p); c != nil {
			return c.UID
		}
		return ""
	}
	return !maps.Equal(old.Labels, cur.Labels) ||
		(old.DeletionTimestamp == nil) != (cur.DeletionTimestamp == nil) ||
		finished(old) != finished(cur) ||
		podReady(old) != podReady(cur) ||
		controller(old) != controller(cur)
}

// budgetsInNamespace maps to the PodDisruptionBudgets of a namespace.
func budgetsInNamespace(api *apiserver.Server, namespace string) []reconcile.Request {
	var out []reconcile.Request
	for _, o := range api.Objects(pdbGVK) {
		if o.GetNamespace() == namespace {
			out = append(out, watch.Key(o))
		}
	}
	return out
}

// owned returns the pods (or other objects indexed by controller) that obj
// controls, in name order. They are the stored objects: do not modify them.
func (b base) owned(gvk schema.GroupVersionKind, obj client.Object) []client.Object {
	return b.api.Select(gvk, apiserver.IndexController, string(obj.GetUID()))
}

// ownedUnordered is owned in no particular order, for a controller that
// either only counts what it gets or puts it in a total order of its own:
// a ReplicaSet of thousands of pods is synced after every change to one of
// them, and the index would sort its keys again each time.
func (b base) ownedUnordered(gvk schema.GroupVersionKind, obj client.Object) []client.Object {
	return b.api.SelectUnordered(gvk, apiserver.IndexController, string(obj.GetUID()))
}

// active reports whether a pod counts towards its controller's replicas:
// neither terminating nor finished.
func active(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// controllerRef is the owner reference a controller puts on what it creates.
func controllerRef(owner client.Object, kind, apiVersion string) metav1.OwnerReference {
	t := true
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: owner.GetName(), UID: owner.GetUID(), Controller: &t, BlockOwnerDeletion: &t}
}

// podFromTemplate returns a pod of the template, owned by owner.
func podFromTemplate(t *corev1.PodTemplateSpec, namespace string, ref metav1.OwnerReference) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       namespace,
			Labels:          copyMap(t.Labels),
			Annotations:     copyMap(t.Annotations),
			OwnerReferences: []metav1.OwnerReference{ref},
		},
		Spec: *t.Spec.DeepCopy(),
	}
	return pod
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// templateHash is the hash of a pod template, as the value of the
// pod-template-hash label: a stable encoding of the template (JSON, whose
// map keys are sorted), hashed with FNV-32a and written in the API's safe
// alphabet.
func templateHash(t *corev1.PodTemplateSpec) string {
	b, err := json.Marshal(t)
	if err != nil {
		b = []byte(fmt.Sprint(t))
	}
	h := fnv.New32a()
	_, _ = h.Write(b)
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// writeStatus writes obj's status when it differs from the stored one.
func (b base) writeStatus(ctx context.Context, obj client.Object, changed bool) error {
	if !changed {
		return nil
	}
	if err := b.api.Status().Update(ctx, obj); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("updating status of %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

func statusChanged(a, b any) bool { return !equality.Semantic.DeepEqual(a, b) }

// podName names a pod in errors.
func podName(p *corev1.Pod) string { return strings.TrimPrefix(p.Namespace+"/"+p.Name, "/") }
