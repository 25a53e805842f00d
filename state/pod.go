package state

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// IsProvisionable reports whether pod is waiting for a node that does not
// exist yet: the scheduler marked it PodScheduled=False with reason
// Unschedulable, it is not bound, it is not preempting other pods to make
// room (status.nominatedNodeName), it is neither a DaemonSet's pod (those
// follow nodes, they do not ask for them) nor a static pod (owned by its
// Node), and it is neither terminating nor finished.
func IsProvisionable(pod *corev1.Pod) bool {
	if pod.Spec.NodeName != "" || pod.Status.NominatedNodeName != "" || pod.DeletionTimestamp != nil {
		return false
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	if ownedBy(pod, "apps", "DaemonSet") || ownedBy(pod, "", "Node") {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
		}
	}
	return false
}

// ownedBy reports whether pod has an owner of the given API group and kind.
func ownedBy(pod *corev1.Pod, group, kind string) bool {
	for _, o := range pod.OwnerReferences {
		if o.Kind != kind {
			continue
		}
		if gv, err := schema.ParseGroupVersion(o.APIVersion); err == nil && gv.Group == group {
			return true
		}
	}
	return false
}

// UsesVolumes reports whether pod mounts a PersistentVolumeClaim or a generic
// ephemeral volume, whose zone may constrain where it runs.
func UsesVolumes(pod *corev1.Pod) bool {
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			return true
		}
	}
	return false
}
