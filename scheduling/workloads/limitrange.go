package workloads

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/stevedore-autoscaler/stevedore/api/defaults"
)

// ApplyLimitRanges gives pod the resource defaults of the LimitRanges of its
// namespace, as the API server's LimitRanger admission plugin does when the
// pod is created. LimitRanges of other namespaces are ignored, so callers
// may pass every LimitRange they know.
//
// For each LimitRange, in name order, its items of type Container give a
// default limit and a default request per resource (a later item of the
// same LimitRange overrides an earlier one), after the API server's
// defaulting of the item: a missing default is the item's max, a missing
// default request is the default, else the min. Every container and init
// container then gets the default limit of each resource it sets no limit
// for, and the default request of each resource it sets no request for.
// The first LimitRange to give a container a value wins: later ones only
// fill what is still missing. Items of type Pod (and PersistentVolumeClaim)
// only constrain, the plugin defaults nothing from them, and neither does
// this. Ephemeral containers and pod-level resources are left alone, as
// the plugin leaves them.
//
// The API server fills a container's missing requests from its own limits
// (defaults.ContainerRequests) before admission runs, so that request wins
// over a LimitRange's default request; callers should apply that first, as
// DefaultPod does. The plugin's order of LimitRanges is its informer's,
// which is not defined; name order makes the answer deterministic when two
// LimitRanges of a namespace default the same resource differently.
// Limits the LimitRanges would reject (a request above a defaulted limit,
// values beyond max) are not checked: such a pod is refused by the API
// server and never needs a node.
func ApplyLimitRanges(pod *corev1.Pod, limitRanges []*corev1.LimitRange) {
	namespace := namespaceOf(pod.Namespace)
	var mine []*corev1.LimitRange
	for _, lr := range limitRanges {
		if lr != nil && namespaceOf(lr.Namespace) == namespace {
			mine = append(mine, lr)
		}
	}
	slices.SortStableFunc(mine, func(a, b *corev1.LimitRange) int { return cmp.Compare(a.Name, b.Name) })
	for _, lr := range mine {
		limits, requests := containerDefaults(lr)
		if len(limits) == 0 && len(requests) == 0 {
			continue
		}
		for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
			for i := range cs {
				r := &cs[i].Resources
				r.Limits = fillMissing(r.Limits, limits)
				r.Requests = fillMissing(r.Requests, requests)
			}
		}
	}
}

// DefaultPod gives pod what the API server fills in when it is created, in
// the API server's order: requests from the containers' own limits, then the
// LimitRanges' defaults (see ApplyLimitRanges), then the pod-level requests
// (see package api/defaults). Pods made from templates need it; pods read
// back from the API server already have it.
func DefaultPod(pod *corev1.Pod, limitRanges []*corev1.LimitRange) {
	defaults.ContainerRequests(pod)
	ApplyLimitRanges(pod, limitRanges)
	defaults.PodLevelRequests(pod)
}

// containerDefaults returns the default limits and requests that lr's
// Container items give, with each item defaulted as the API server defaults
// a LimitRangeItem on write (it may not have been: manifests are read
// without the API server).
func containerDefaults(lr *corev1.LimitRange) (limits, requests corev1.ResourceList) {
	for _, item := range lr.Spec.Limits {
		if item.Type != corev1.LimitTypeContainer {
			continue
		}
		def := fillMissing(item.Default.DeepCopy(), item.Max)
		defRequest := fillMissing(item.DefaultRequest.DeepCopy(), def)
		defRequest = fillMissing(defRequest, item.Min)
		for name, q := range def {
			if limits == nil {
				limits = corev1.ResourceList{}
			}
			limits[name] = q.DeepCopy()
		}
		for name, q := range defRequest {
			if requests == nil {
				requests = corev1.ResourceList{}
			}
			requests[name] = q.DeepCopy()
		}
	}
	return limits, requests
}

// fillMissing adds to list a copy of every quantity of from whose resource
// list does not name, allocating list only when something is added, and
// returns it.
func fillMissing(list, from corev1.ResourceList) corev1.ResourceList {
	for name, q := range from {
		if _, ok := list[name]; ok {
			continue
		}
		if list == nil {
			list = corev1.ResourceList{}
		}
		list[name] = q.DeepCopy()
	}
	return list
}
