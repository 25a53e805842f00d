// Package defaults gives objects the defaults the API server gives them when
// they are created, for objects stevedore meets that have not been through
// an API server: manifests that `validate`, `plan` and `simulate` read, and
// pods made from the templates of workloads.
//
// It is part of the API layer, below the scheduler that packs the pods and
// the validation that checks the manifests, so that both can use it.
package defaults

import (
	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// PodRequests gives pod the requests the API server defaults when it
// creates a pod, so that what is packed is what the kube-scheduler will
// see:
//
//   - a container (or init container) with a limit but no request for a
//     resource requests its limit (ContainerRequests);
//   - with pod-level limits (spec.resources.limits), a pod-level request
//     left unset becomes what the containers request together (cpu and
//     memory), or else the pod-level limit (PodLevelRequests).
//
// A request already set is kept. Requests of templates are not defaulted by
// the API server, only those of pods, so callers apply this to the pods
// they make from templates. The API server applies a namespace's
// LimitRanges between the two steps; callers that model them call the
// steps themselves.
func PodRequests(pod *corev1.Pod) {
	ContainerRequests(pod)
	PodLevelRequests(pod)
}

// ContainerRequests gives each container and init container of pod a
// request for every resource it limits without requesting.
func ContainerRequests(pod *corev1.Pod) {
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

// PodLevelRequests defaults the pod-level requests of pod from its
// containers' requests and its pod-level limits, as the API server's
// defaultPodRequests does.
func PodLevelRequests(pod *corev1.Pod) {
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
