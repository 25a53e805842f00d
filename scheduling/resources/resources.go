// Package resources is the resource arithmetic of the scheduling engine:
// what a pod requests, whether requests fit what a node has left, and sums,
// differences and maxima of resource lists.
//
// Two representations are offered. The functions over corev1.ResourceList
// are exact (they use resource.Quantity) and are what the engine uses at its
// edges: reading pods and instance types, writing NodeClaims, explaining a
// decision. Vector is a compact fixed form, with integer slots for cpu,
// memory, ephemeral storage and pods and a short sorted list for everything
// else, for the packer's inner loop, where Add, Sub and Fits must not
// allocate.
//
// Fit follows the kube-scheduler's NodeResourcesFit filter: a request of
// zero (or a resource not requested at all) always fits, even on a node that
// is over-committed on that resource; a requested resource the node does not
// have counts as zero available.
package resources

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Requests returns what pod requests of a node, as the kube-scheduler
// computes it: the larger of the sum over regular and sidecar (restartable
// init) containers and what each init container needs while it runs (its own
// requests plus those of the sidecars started before it), pod-level requests
// where the pod sets them, plus the pod overhead. Containers that request
// nothing count zero: the scheduler's fit check uses the raw requests, not
// the defaults it uses for scoring.
//
// The pod slot itself is not included; PodVector adds it.
func Requests(pod *corev1.Pod) corev1.ResourceList {
	return resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
}

// Fits reports whether requests fit in available. When they do not, it also
// returns the resources that fall short, sorted. A resource requested at
// zero or less always fits; one missing from available has none available.
// Fits allocates only to report a shortfall.
func Fits(requests, available corev1.ResourceList) (bool, []corev1.ResourceName) {
	var short []corev1.ResourceName
	for name, want := range requests {
		if want.Sign() <= 0 {
			continue
		}
		if have := available[name]; want.Cmp(have) > 0 {
			short = append(short, name)
		}
	}
	if short == nil {
		return true, nil
	}
	slices.Sort(short)
	return false, short
}

// Add returns a new list with, for every resource in any of lists, the sum
// of its quantities.
func Add(lists ...corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, list := range lists {
		for name, q := range list {
			sum := out[name]
			sum.Add(q)
			out[name] = sum
		}
	}
	return out
}

// Subtract returns a new list with a's quantity minus b's for every resource
// in a or b. A resource only b has comes out negative.
func Subtract(a, b corev1.ResourceList) corev1.ResourceList {
	out := make(corev1.ResourceList, len(a))
	for name, q := range a {
		out[name] = q.DeepCopy()
	}
	for name, q := range b {
		diff := out[name]
		diff.Sub(q)
		out[name] = diff
	}
	return out
}

// Max returns a new list with, for every resource in any of lists, its
// largest quantity. A resource missing from a list does not count as zero
// there: the maximum of {cpu: -1} alone is -1.
func Max(lists ...corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, list := range lists {
		for name, q := range list {
			if have, ok := out[name]; !ok || q.Cmp(have) > 0 {
				out[name] = q.DeepCopy()
			}
		}
	}
	return out
}

// IsZero reports whether every quantity in list is zero. An empty or nil
// list is zero.
func IsZero(list corev1.ResourceList) bool {
	for _, q := range list {
		if !q.IsZero() {
			return false
		}
	}
	return true
}

// Cmp compares resource name in a and b, a missing resource counting as
// zero: -1 if a has less, 0 if the same, 1 if more.
func Cmp(a, b corev1.ResourceList, name corev1.ResourceName) int {
	qa, qb := a[name], b[name]
	return qa.Cmp(qb)
}
