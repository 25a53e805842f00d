// Package workloads expands workload objects (Deployments, ReplicaSets,
// StatefulSets, Jobs, DaemonSets and bare Pods) into the pods their
// controllers would create, so that the scheduling engine can plan for pods
// that do not exist yet.
//
// The expansion is pure and deterministic: pod names, UIDs and creation
// timestamps are derived from the owner, never from a clock or a random
// source, so the same objects always give the same pods.
//
// Pods carry what the scheduler and the packer look at: the template's labels
// and spec, with requests defaulted from limits and from the namespace's
// LimitRanges as the API server does when the pods are created (see
// DefaultPod), the namespace (defaulting to "default"), owner
// references and the labels the workload controllers add (pod-template-hash,
// job-name, the StatefulSet pod name). Volumes from StatefulSet
// volumeClaimTemplates are not added: volume topology is not modelled by the
// packer's input.
package workloads

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// DefaultNamespace is the namespace of objects that do not name one.
const DefaultNamespace = "default"

// Epoch is the creation timestamp given to pods whose owner has none (as
// manifests usually do not). A fixed instant keeps the expansion
// deterministic.
var Epoch = time.Date(2025, time.January, 1, 0, 0, 0, 0, time.UTC)

// Labels the workload controllers add to the pods they create.
const (
	LabelPodTemplateHash     = appsv1.DefaultDeploymentUniqueLabelKey // "pod-template-hash"
	LabelStatefulSetPodName  = appsv1.StatefulSetPodNameLabel         // "statefulset.kubernetes.io/pod-name"
	LabelPodIndex            = appsv1.PodIndexLabel                   // "apps.kubernetes.io/pod-index"
	LabelJobName             = batchv1.JobNameLabel                   // "batch.kubernetes.io/job-name"
	LabelLegacyJobName       = "job-name"
	LabelControllerUID       = batchv1.ControllerUidLabel // "batch.kubernetes.io/controller-uid"
	LabelLegacyControllerUID = "controller-uid"
)

// Pods are the pods a set of workload objects would create.
type Pods struct {
	// Pods are the pods to schedule, in the order of the objects and, within
	// an object, by index.
	Pods []*corev1.Pod
	// DaemonSetPods holds one template pod per DaemonSet: such pods run on
	// every node that admits them rather than being scheduled once.
	DaemonSetPods []*corev1.Pod
}

// Expand returns the pods that objs would create. The LimitRanges among
// objs give their namespace's pods their defaults, wherever they appear in
// objs, as LimitRanges that exist before the pods are created would.
// Objects of other kinds are skipped; their count is returned so that
// callers can say so. Objects are not modified.
func Expand(objs []runtime.Object) (Pods, int) {
	return expand(objs, false)
}

// ExpandInPlace is Expand for a caller that gives up the bare Pods among
// objs: they are defaulted in place and returned themselves, not copied.
// `stevedore plan` reads its pods for the plan alone, and a copy of each
// doubled what a plan of 100,000 pods held while it was prepared.
func ExpandInPlace(objs []runtime.Object) (Pods, int) {
	return expand(objs, true)
}

func expand(objs []runtime.Object, inPlace bool) (Pods, int) {
	var out Pods
	var limitRanges []*corev1.LimitRange
	for _, obj := range objs {
		if lr, ok := obj.(*corev1.LimitRange); ok {
			limitRanges = append(limitRanges, lr)
		}
	}
	skipped := 0
	for _, obj := range objs {
		switch o := obj.(type) {
		case *appsv1.Deployment:
			out.Pods = append(out.Pods, Deployment(o, limitRanges...)...)
		case *appsv1.ReplicaSet:
			out.Pods = append(out.Pods, ReplicaSet(o, limitRanges...)...)
		case *appsv1.StatefulSet:
			out.Pods = append(out.Pods, StatefulSet(o, limitRanges...)...)
		case *batchv1.Job:
			out.Pods = append(out.Pods, Job(o, limitRanges...)...)
		case *appsv1.DaemonSet:
			out.DaemonSetPods = append(out.DaemonSetPods, DaemonSet(o, limitRanges...))
		case *corev1.Pod:
			if inPlace {
				out.Pods = append(out.Pods, adopt(o, limitRanges))
			} else {
				out.Pods = append(out.Pods, Pod(o, limitRanges...))
			}
		case *corev1.LimitRange:
		default:
			skipped++
		}
	}
	return out, skipped
}

// Deployment returns the pods of d's current ReplicaSet: replicas (default
// 1) copies of the template, named <name>-<hash>-<i> where hash is the
// pod-template-hash of the template, owned by the ReplicaSet <name>-<hash>.
// limitRanges give the pods their defaults (see ApplyLimitRanges); those of
// other namespaces are ignored, as in every function here that takes them.
func Deployment(d *appsv1.Deployment, limitRanges ...*corev1.LimitRange) []*corev1.Pod {
	hash := TemplateHash(&d.Spec.Template)
	rsName := d.Name + "-" + hash
	namespace := namespaceOf(d.Namespace)
	owner := ownerRef("apps/v1", "ReplicaSet", rsName, uidOf("", "ReplicaSet", namespace, rsName))
	pods := make([]*corev1.Pod, 0, replicas(d.Spec.Replicas))
	for i := range replicas(d.Spec.Replicas) {
		pod := fromTemplate(&d.Spec.Template, namespace, fmt.Sprintf("%s-%d", rsName, i), owner, d.CreationTimestamp, limitRanges)
		pod.Labels[LabelPodTemplateHash] = hash
		pods = append(pods, pod)
	}
	return pods
}

// ReplicaSet returns replicas (default 1) copies of rs's template, named
// <name>-<hash>-<i>, owned by rs.
func ReplicaSet(rs *appsv1.ReplicaSet, limitRanges ...*corev1.LimitRange) []*corev1.Pod {
	hash := TemplateHash(&rs.Spec.Template)
	namespace := namespaceOf(rs.Namespace)
	owner := ownerRef("apps/v1", "ReplicaSet", rs.Name, uidOf(rs.UID, "ReplicaSet", namespace, rs.Name))
	pods := make([]*corev1.Pod, 0, replicas(rs.Spec.Replicas))
	for i := range replicas(rs.Spec.Replicas) {
		pods = append(pods, fromTemplate(&rs.Spec.Template, namespace, fmt.Sprintf("%s-%s-%d", rs.Name, hash, i), owner, rs.CreationTimestamp, limitRanges))
	}
	return pods
}

// StatefulSet returns replicas (default 1) pods named <name>-<ordinal>, with
// ordinals from spec.ordinals.start (default 0), each with the hostname and
// subdomain the StatefulSet controller sets and its pod-name and pod-index
// labels.
func StatefulSet(s *appsv1.StatefulSet, limitRanges ...*corev1.LimitRange) []*corev1.Pod {
	namespace := namespaceOf(s.Namespace)
	owner := ownerRef("apps/v1", "StatefulSet", s.Name, uidOf(s.UID, "StatefulSet", namespace, s.Name))
	start := int32(0)
	if s.Spec.Ordinals != nil {
		start = s.Spec.Ordinals.Start
	}
	pods := make([]*corev1.Pod, 0, replicas(s.Spec.Replicas))
	for i := range replicas(s.Spec.Replicas) {
		ordinal := strconv.Itoa(int(start) + i)
		name := s.Name + "-" + ordinal
		pod := fromTemplate(&s.Spec.Template, namespace, name, owner, s.CreationTimestamp, limitRanges)
		pod.Labels[LabelStatefulSetPodName] = name
		pod.Labels[LabelPodIndex] = ordinal
		pod.Spec.Hostname = name
		pod.Spec.Subdomain = s.Spec.ServiceName
		pods = append(pods, pod)
	}
	return pods
}

// Job returns the pods a Job runs at once: parallelism (default 1), bounded
// by completions when set, named <name>-<i>. A suspended Job runs none.
func Job(j *batchv1.Job, limitRanges ...*corev1.LimitRange) []*corev1.Pod {
	n := 1
	if j.Spec.Parallelism != nil {
		n = int(max(*j.Spec.Parallelism, 0))
	}
	if j.Spec.Completions != nil {
		n = min(n, int(max(*j.Spec.Completions, 0)))
	}
	if j.Spec.Suspend != nil && *j.Spec.Suspend {
		n = 0
	}
	namespace := namespaceOf(j.Namespace)
	uid := uidOf(j.UID, "Job", namespace, j.Name)
	owner := ownerRef("batch/v1", "Job", j.Name, uid)
	pods := make([]*corev1.Pod, 0, n)
	for i := range n {
		pod := fromTemplate(&j.Spec.Template, namespace, fmt.Sprintf("%s-%d", j.Name, i), owner, j.CreationTimestamp, limitRanges)
		pod.Labels[LabelJobName] = j.Name
		pod.Labels[LabelLegacyJobName] = j.Name
		pod.Labels[LabelControllerUID] = string(uid)
		pod.Labels[LabelLegacyControllerUID] = string(uid)
		if j.Spec.CompletionMode != nil && *j.Spec.CompletionMode == batchv1.IndexedCompletion {
			pod.Labels[batchv1.JobCompletionIndexAnnotation] = strconv.Itoa(i)
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			pod.Annotations[batchv1.JobCompletionIndexAnnotation] = strconv.Itoa(i)
		}
		pods = append(pods, pod)
	}
	return pods
}

// DaemonSet returns the template pod of ds, named <name>-daemon, with the
// tolerations the DaemonSet controller adds to every daemon pod. The pod has
// no node affinity: the controller pins each copy to its node, the packer
// decides which nodes a DaemonSet runs on.
func DaemonSet(ds *appsv1.DaemonSet, limitRanges ...*corev1.LimitRange) *corev1.Pod {
	namespace := namespaceOf(ds.Namespace)
	owner := ownerRef("apps/v1", "DaemonSet", ds.Name, uidOf(ds.UID, "DaemonSet", namespace, ds.Name))
	pod := fromTemplate(&ds.Spec.Template, namespace, ds.Name+"-daemon", owner, ds.CreationTimestamp, limitRanges)
	pod.Spec.Tolerations = addDaemonTolerations(pod.Spec.Tolerations, pod.Spec.HostNetwork)
	return pod
}

// Pod returns a copy of a bare pod, as the API server would create it, with
// the namespace and the requests defaulted (see DefaultPod) and, when
// missing, a UID and a creation timestamp.
func Pod(p *corev1.Pod, limitRanges ...*corev1.LimitRange) *corev1.Pod {
	return adopt(p.DeepCopy(), limitRanges)
}

// adopt defaults pod in place, as Pod does its copy.
func adopt(pod *corev1.Pod, limitRanges []*corev1.LimitRange) *corev1.Pod {
	pod.Namespace = namespaceOf(pod.Namespace)
	if pod.UID == "" {
		pod.UID = uidOf("", "Pod", pod.Namespace, pod.Name)
	}
	if pod.CreationTimestamp.IsZero() {
		pod.CreationTimestamp = metav1.NewTime(Epoch)
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	DefaultPod(pod, limitRanges)
	return pod
}

// TemplateHash returns the pod-template-hash of a template: a short
// deterministic name-safe string derived from the template's content, in
// the alphabet the Deployment controller uses.
func TemplateHash(t *corev1.PodTemplateSpec) string {
	h := fnv.New32a()
	// Encoding a struct with encoding/json is deterministic: fields in
	// declaration order, map keys sorted.
	data, _ := json.Marshal(t)
	h.Write(data)
	return safeEncode(strconv.FormatUint(uint64(h.Sum32()), 10))
}

// safeEncode maps the digits of s onto consonants and digits that cannot
// form words, as the apimachinery rand.SafeEncodeString does.
func safeEncode(s string) string {
	const alphanums = "bcdfghjklmnpqrstvwxz2456789"
	out := make([]byte, len(s))
	for i := range len(s) {
		out[i] = alphanums[int(s[i])%len(alphanums)]
	}
	return string(out)
}

func fromTemplate(t *corev1.PodTemplateSpec, namespace, name string, owner metav1.OwnerReference, created metav1.Time, limitRanges []*corev1.LimitRange) *corev1.Pod {
	if created.IsZero() {
		created = metav1.NewTime(Epoch)
	}
	pod := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:              name,
			Namespace:         namespace,
			UID:               uidOf("", "Pod", namespace, name),
			CreationTimestamp: created,
			Labels:            map[string]string{},
			OwnerReferences:   []metav1.OwnerReference{owner},
		},
		Spec: *t.Spec.DeepCopy(),
	}
	for k, v := range t.Labels {
		pod.Labels[k] = v
	}
	if len(t.Annotations) > 0 {
		pod.Annotations = make(map[string]string, len(t.Annotations))
		for k, v := range t.Annotations {
			pod.Annotations[k] = v
		}
	}
	DefaultPod(pod, limitRanges)
	return pod
}

func ownerRef(apiVersion, kind, name string, uid types.UID) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid, Controller: &yes, BlockOwnerDeletion: &yes}
}

// uidOf returns uid, or when it is empty a UID derived from the object's
// kind, namespace and name in the UUID format.
func uidOf(uid types.UID, kind, namespace, name string) types.UID {
	if uid != "" {
		return uid
	}
	h := fnv.New128a()
	h.Write([]byte(kind + "/" + namespace + "/" + name))
	b := h.Sum(nil)
	b[6] = b[6]&0x0f | 0x50 // version 5 layout, name-based
	b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
	return types.UID(fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]))
}

func namespaceOf(ns string) string {
	if ns == "" {
		return DefaultNamespace
	}
	return ns
}

func replicas(r *int32) int {
	if r == nil {
		return 1
	}
	return int(max(*r, 0))
}

// addDaemonTolerations adds the tolerations that the DaemonSet controller
// gives every daemon pod, unless the pod already has a toleration for the
// same key and effect.
func addDaemonTolerations(tols []corev1.Toleration, hostNetwork bool) []corev1.Toleration {
	out := append([]corev1.Toleration(nil), tols...)
	add := func(key string, effect corev1.TaintEffect) {
		for _, t := range out {
			if t.Key == key && t.Effect == effect {
				return
			}
		}
		out = append(out, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect})
	}
	add(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute)
	add(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute)
	add(corev1.TaintNodeDiskPressure, corev1.TaintEffectNoSchedule)
	add(corev1.TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule)
	add(corev1.TaintNodePIDPressure, corev1.TaintEffectNoSchedule)
	add(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule)
	if hostNetwork {
		add(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule)
	}
	return out
}
