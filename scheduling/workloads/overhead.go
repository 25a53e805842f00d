package workloads

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stevedore-autoscaler/stevedore/api/defaults"
)

// DaemonSetPod returns the pod that stands for ds when a new node is sized:
// the room every node it runs on keeps for it.
//
// When pods holds a pod of ds (controlled by it: same namespace, a
// controller owner reference of kind DaemonSet with its name, and its UID
// when both are known), the newest of them, by creation time and then by
// name, gives the spec. A real pod carries what the API server did to the
// template when it created it (the namespace's LimitRanges, mutating
// webhooks), which no template can tell, so it is the better guess of what
// the next one will request. Its identity (name, labels, owner) is the
// template pod's, its node is cleared, and its required node affinity is the
// template's rather than the pin to its node the DaemonSet controller adds.
//
// Otherwise the template pod (see DaemonSet) is used, with the defaults of
// limitRanges applied as the API server will apply them to the real pod.
//
// pods may hold any pods; those of other owners are skipped, so callers can
// pass every pod of the namespace.
func DaemonSetPod(ds *appsv1.DaemonSet, pods []*corev1.Pod, limitRanges []*corev1.LimitRange) *corev1.Pod {
	tmpl := DaemonSet(ds, limitRanges...)
	live := NewestDaemonSetPod(ds, pods)
	if live == nil {
		return tmpl
	}
	out := tmpl.DeepCopy()
	out.Spec = *live.Spec.DeepCopy()
	out.Spec.NodeName = ""
	var required *corev1.NodeSelector
	if a := tmpl.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		required = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.DeepCopy()
	}
	if a := out.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = required
	} else if required != nil {
		if out.Spec.Affinity == nil {
			out.Spec.Affinity = &corev1.Affinity{}
		}
		out.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: required}
	}
	out.Spec.Tolerations = addDaemonTolerations(out.Spec.Tolerations, out.Spec.HostNetwork)
	// A real pod has its requests already; a pod given by hand may not.
	defaults.PodRequests(out)
	return out
}

// NewestDaemonSetPod returns the pod of pods that ds controls (see
// DaemonSetPod) created last, the greatest name among those created in the
// same second, or nil when there is none.
func NewestDaemonSetPod(ds *appsv1.DaemonSet, pods []*corev1.Pod) *corev1.Pod {
	var best *corev1.Pod
	for _, p := range pods {
		if !ControlledByDaemonSet(p, ds) {
			continue
		}
		if best == nil || newer(p, best) {
			best = p
		}
	}
	return best
}

// ControlledByDaemonSet reports whether pod is one of ds's pods.
func ControlledByDaemonSet(pod *corev1.Pod, ds *appsv1.DaemonSet) bool {
	if namespaceOf(pod.Namespace) != namespaceOf(ds.Namespace) {
		return false
	}
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != "DaemonSet" || ref.Name != ds.Name {
		return false
	}
	return ref.UID == "" || ds.UID == "" || ref.UID == ds.UID
}

// newer orders pods by creation time, then by name, so that the choice does
// not depend on the order they are listed in.
func newer(a, b *corev1.Pod) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return b.CreationTimestamp.Before(&a.CreationTimestamp)
	}
	return a.Name > b.Name
}
