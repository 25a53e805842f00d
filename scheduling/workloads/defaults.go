package workloads

import (
	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// DefaultRequests gives pod the requests the API server defaults when it
// creates a pod, so that the packer sees what the kube-scheduler will:
//
//   - a container (or init container) with a limit but no request for a
//     resource requests its limit;
//   - with pod-level limits (spec.resources.limits), a pod-level request
//     left unset becomes what the containers request together (cpu and
//     memory), or else the pod-level limit.
//
// A request already set is kept. Requests of templates are not defaulted by
// the API server, only those of pods, so the caller applies this to the pods
// it makes from templates (through DefaultPod, which also applies the
// namespace's LimitRanges).
func DefaultRequests(pod *corev1.Pod) {
	defaultContainerRequests(pod)
	defaultPodLevelRequests(pod)
}

// defaultContainerRequests gives each container and init container a
// request for every resource it limits without requesting.
func defaultContainerRequests(pod *corev1.Pod) {
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			r := &cs[i].Resources
			for name, q := range r.Limits {
				if _, ok := r.Requests[name]; ok {
					continue
				}
				if r.Requests == nil {
					r.Requests = corev1.ResourceList{}
				}
				r.Requests[name] = q.DeepCopy()
			}
		}
	}
}

// defaultPodLevelRequests defaults the pod-level requests from the
// containers' and the pod-level limits, as the API server's defaultPodRequests
// does.
func defaultPodLevelRequests(pod *corev1.Pod) {
	r := pod.Spec.Resources
	if r == nil || len(r.Limits) == 0 {
		return
	}
	requests := r.Requests
	if requests == nil {
		requests = corev1.ResourceList{}
	}
	for name, q := range resourcehelper.AggregateContainerRequests(pod, resourcehelper.PodResourcesOptions{}) {
		// cpu and memory only: hugepages cannot be overcommitted.
		if _, ok := requests[name]; !ok && (name == corev1.ResourceCPU || name == corev1.ResourceMemory) {
			requests[name] = q.DeepCopy()
		}
	}
	for name, q := range r.Limits {
		if _, ok := requests[name]; !ok && resourcehelper.IsSupportedPodLevelResource(name) {
			requests[name] = q.DeepCopy()
		}
	}
	if len(requests) > 0 {
		r.Requests = requests
	}
}
