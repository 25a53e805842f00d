package workloads

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func resourceList(kv ...string) corev1.ResourceList {
	if len(kv) == 0 {
		return nil
	}
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func sameList(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, q := range a {
		if o, ok := b[k]; !ok || q.Cmp(o) != 0 {
			return false
		}
	}
	return true
}

// TestDefaultRequests checks that expanded pods request their limits where
// they set no request, as the API server makes them, so that a limit of
// 1e30 cpu without a request leaves the pod as unschedulable as a request
// of it would.
func TestDefaultRequests(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		requests, limits     corev1.ResourceList
		init                 *corev1.ResourceRequirements
		podLevel             *corev1.ResourceRequirements
		want, wantInit       corev1.ResourceList
		wantPodLevelRequests corev1.ResourceList
	}{
		{name: "limits only", limits: resourceList("cpu", "1e30", "memory", "1Gi"), want: resourceList("cpu", "1e30", "memory", "1Gi")},
		{name: "a request is kept", requests: resourceList("cpu", "1"), limits: resourceList("cpu", "2", "memory", "1Gi"), want: resourceList("cpu", "1", "memory", "1Gi")},
		{name: "no limits", requests: resourceList("cpu", "1"), want: resourceList("cpu", "1")},
		{name: "extended resources", limits: resourceList("nvidia.com/gpu", "1"), want: resourceList("nvidia.com/gpu", "1")},
		{name: "init containers too", init: &corev1.ResourceRequirements{Limits: resourceList("cpu", "3")}, want: nil, wantInit: resourceList("cpu", "3")},
		{name: "pod-level limits: containers' requests first, then the limit",
			requests: resourceList("cpu", "1"), podLevel: &corev1.ResourceRequirements{Limits: resourceList("cpu", "4", "memory", "1e30")},
			want: resourceList("cpu", "1"), wantPodLevelRequests: resourceList("cpu", "1", "memory", "1e30")},
		{name: "a pod-level request is kept",
			podLevel:             &corev1.ResourceRequirements{Requests: resourceList("cpu", "2"), Limits: resourceList("cpu", "4")},
			wantPodLevelRequests: resourceList("cpu", "2")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: tc.requests, Limits: tc.limits}}},
				Resources:  tc.podLevel,
			}}
			if tc.init != nil {
				tmpl.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: *tc.init}}
			}
			before := tmpl.DeepCopy()
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d"}, Spec: appsv1.DeploymentSpec{Template: tmpl}}
			bare := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: *tmpl.Spec.DeepCopy()}
			for _, pod := range []*corev1.Pod{Deployment(d)[0], Pod(bare)} {
				if got := pod.Spec.Containers[0].Resources.Requests; !sameList(got, tc.want) {
					t.Errorf("%s: requests %v, want %v", pod.Name, got, tc.want)
				}
				if tc.init != nil {
					if got := pod.Spec.InitContainers[0].Resources.Requests; !sameList(got, tc.wantInit) {
						t.Errorf("%s: init requests %v, want %v", pod.Name, got, tc.wantInit)
					}
				}
				if tc.podLevel != nil {
					if got := pod.Spec.Resources.Requests; !sameList(got, tc.wantPodLevelRequests) {
						t.Errorf("%s: pod-level requests %v, want %v", pod.Name, got, tc.wantPodLevelRequests)
					}
				}
			}
			if !sameList(d.Spec.Template.Spec.Containers[0].Resources.Requests, before.Spec.Containers[0].Resources.Requests) ||
				!sameList(bare.Spec.Containers[0].Resources.Requests, before.Spec.Containers[0].Resources.Requests) {
				t.Error("the objects expanded were changed")
			}
		})
	}
}
