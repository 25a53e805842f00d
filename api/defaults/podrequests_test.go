package defaults

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// list is a ResourceList of name, quantity pairs; nil for none.
func list(kv ...string) corev1.ResourceList {
	if len(kv) == 0 {
		return nil
	}
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func equal(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, q := range a {
		if other, ok := b[name]; !ok || q.Cmp(other) != 0 {
			return false
		}
	}
	return true
}

func TestPodRequests(t *testing.T) {
	for _, tc := range []struct {
		name string
		// The container's and the pod's requirements, before and after.
		container, init, pod          corev1.ResourceRequirements
		wantContainer, wantInit, want corev1.ResourceList
	}{
		{
			name:          "a limit without a request is requested",
			container:     corev1.ResourceRequirements{Limits: list("cpu", "2", "example.com/device", "1")},
			wantContainer: list("cpu", "2", "example.com/device", "1"),
		},
		{
			name:          "a request is kept below its limit",
			container:     corev1.ResourceRequirements{Requests: list("cpu", "500m"), Limits: list("cpu", "2", "memory", "1Gi")},
			wantContainer: list("cpu", "500m", "memory", "1Gi"),
		},
		{
			name:     "init containers too",
			init:     corev1.ResourceRequirements{Limits: list("memory", "2Gi")},
			wantInit: list("memory", "2Gi"),
		},
		{
			name:          "pod-level requests: the containers' cpu and memory first, then the pod-level limits",
			container:     corev1.ResourceRequirements{Requests: list("cpu", "1")},
			pod:           corev1.ResourceRequirements{Limits: list("cpu", "4", "memory", "8Gi")},
			wantContainer: list("cpu", "1"),
			want:          list("cpu", "1", "memory", "8Gi"),
		},
		{
			name: "a pod-level request is kept",
			pod:  corev1.ResourceRequirements{Requests: list("cpu", "3"), Limits: list("cpu", "4")},
			want: list("cpu", "3"),
		},
		{
			name: "no pod-level limits, no pod-level requests",
			pod:  corev1.ResourceRequirements{Requests: list("cpu", "3")},
			want: list("cpu", "3"),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "init", Resources: tc.init}},
				Containers:     []corev1.Container{{Name: "app", Resources: tc.container}},
				Resources:      &tc.pod,
			}}
			PodRequests(pod)
			if got := pod.Spec.Containers[0].Resources.Requests; !equal(got, tc.wantContainer) {
				t.Errorf("container requests %v, want %v", got, tc.wantContainer)
			}
			if got := pod.Spec.InitContainers[0].Resources.Requests; !equal(got, tc.wantInit) {
				t.Errorf("init container requests %v, want %v", got, tc.wantInit)
			}
			if got := pod.Spec.Resources.Requests; !equal(got, tc.want) {
				t.Errorf("pod-level requests %v, want %v", got, tc.want)
			}
		})
	}
}

// TestPodRequestsCopies: the requests defaulted are copies, so that
// changing one leaves the limit it came from as it was.
func TestPodRequestsCopies(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "app", Resources: corev1.ResourceRequirements{Limits: list("cpu", "2")},
	}}}}
	PodRequests(pod)
	r := &pod.Spec.Containers[0].Resources
	q := r.Requests[corev1.ResourceCPU]
	q.Add(resource.MustParse("1"))
	r.Requests[corev1.ResourceCPU] = q
	if got := r.Limits[corev1.ResourceCPU]; got.Cmp(resource.MustParse("2")) != 0 {
		t.Errorf("limit %s after the request changed, want 2", got.String())
	}
}
