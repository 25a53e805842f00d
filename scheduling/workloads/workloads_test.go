package workloads

import (
	"reflect"
	"regexp"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func ptr[T any](v T) *T { return &v }

func template(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "app:1",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("500m"),
				corev1.ResourceMemory: resource.MustParse("512Mi"),
			}},
		}}},
	}
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	return out
}

func TestExpand(t *testing.T) {
	created := metav1.NewTime(time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC))
	web := template(map[string]string{"app": "web"})
	hash := TemplateHash(&web)
	tests := []struct {
		name       string
		obj        runtime.Object
		wantNames  []string
		wantOwner  string            // kind/name of the controller owner
		wantLabels map[string]string // a subset of the first pod's labels
	}{
		{
			name:       "deployment defaults to one replica in default",
			obj:        &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{Template: web}},
			wantNames:  []string{"default/web-" + hash + "-0"},
			wantOwner:  "ReplicaSet/web-" + hash,
			wantLabels: map[string]string{"app": "web", LabelPodTemplateHash: hash},
		},
		{
			name: "deployment replicas",
			obj: &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
				Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(3)), Template: web}},
			wantNames: []string{"shop/web-" + hash + "-0", "shop/web-" + hash + "-1", "shop/web-" + hash + "-2"},
			wantOwner: "ReplicaSet/web-" + hash,
		},
		{
			name:      "deployment scaled to zero",
			obj:       &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(0)), Template: web}},
			wantNames: nil,
		},
		{
			name: "replicaset",
			obj: &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs", Namespace: "a"},
				Spec: appsv1.ReplicaSetSpec{Replicas: ptr(int32(2)), Template: web}},
			wantNames:  []string{"a/rs-" + hash + "-0", "a/rs-" + hash + "-1"},
			wantOwner:  "ReplicaSet/rs",
			wantLabels: map[string]string{"app": "web"},
		},
		{
			name: "statefulset ordinals",
			obj: &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db"},
				Spec: appsv1.StatefulSetSpec{Replicas: ptr(int32(2)), Template: template(map[string]string{"app": "db"}), ServiceName: "db"}},
			wantNames:  []string{"default/db-0", "default/db-1"},
			wantOwner:  "StatefulSet/db",
			wantLabels: map[string]string{"app": "db", LabelStatefulSetPodName: "db-0", LabelPodIndex: "0"},
		},
		{
			name: "statefulset start ordinal",
			obj: &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db"},
				Spec: appsv1.StatefulSetSpec{Replicas: ptr(int32(1)), Ordinals: &appsv1.StatefulSetOrdinals{Start: 5}, Template: web}},
			wantNames: []string{"default/db-5"},
		},
		{
			name:       "job defaults to parallelism 1",
			obj:        &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "batch"}, Spec: batchv1.JobSpec{Template: web}},
			wantNames:  []string{"default/batch-0"},
			wantOwner:  "Job/batch",
			wantLabels: map[string]string{"app": "web", LabelJobName: "batch", LabelLegacyJobName: "batch"},
		},
		{
			name: "job parallelism",
			obj: &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "batch"},
				Spec: batchv1.JobSpec{Parallelism: ptr(int32(3)), Template: web}},
			wantNames: []string{"default/batch-0", "default/batch-1", "default/batch-2"},
		},
		{
			name: "job parallelism bounded by completions",
			obj: &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "batch"},
				Spec: batchv1.JobSpec{Parallelism: ptr(int32(5)), Completions: ptr(int32(2)), Template: web}},
			wantNames: []string{"default/batch-0", "default/batch-1"},
		},
		{
			name: "suspended job",
			obj: &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "batch"},
				Spec: batchv1.JobSpec{Parallelism: ptr(int32(5)), Suspend: ptr(true), Template: web}},
			wantNames: nil,
		},
		{
			name: "bare pod keeps its name",
			obj: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "solo", Labels: map[string]string{"x": "y"}},
				Spec: web.Spec},
			wantNames:  []string{"default/solo"},
			wantLabels: map[string]string{"x": "y"},
		},
		{
			name: "owner creation timestamp carries over",
			obj: &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", CreationTimestamp: created},
				Spec: appsv1.StatefulSetSpec{Template: web}},
			wantNames: []string{"default/db-0"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, skipped := Expand([]runtime.Object{tc.obj})
			if skipped != 0 || len(got.DaemonSetPods) != 0 {
				t.Fatalf("skipped %d, daemon pods %d", skipped, len(got.DaemonSetPods))
			}
			if !reflect.DeepEqual(names(got.Pods), tc.wantNames) {
				t.Fatalf("pods %v, want %v", names(got.Pods), tc.wantNames)
			}
			for _, p := range got.Pods {
				if p.UID == "" || p.CreationTimestamp.IsZero() {
					t.Errorf("%s: uid %q, created %v", p.Name, p.UID, p.CreationTimestamp)
				}
				if tc.wantOwner != "" {
					if len(p.OwnerReferences) != 1 || p.OwnerReferences[0].Kind+"/"+p.OwnerReferences[0].Name != tc.wantOwner ||
						p.OwnerReferences[0].Controller == nil || !*p.OwnerReferences[0].Controller || p.OwnerReferences[0].UID == "" {
						t.Errorf("%s: owners %+v, want controller %s", p.Name, p.OwnerReferences, tc.wantOwner)
					}
				}
				if len(p.Spec.Containers) != 1 {
					t.Errorf("%s: containers %v", p.Name, p.Spec.Containers)
				}
			}
			for k, v := range tc.wantLabels {
				if got.Pods[0].Labels[k] != v {
					t.Errorf("label %s = %q, want %q (labels %v)", k, got.Pods[0].Labels[k], v, got.Pods[0].Labels)
				}
			}
			if tc.name == "owner creation timestamp carries over" && !got.Pods[0].CreationTimestamp.Equal(&created) {
				t.Errorf("created %v, want %v", got.Pods[0].CreationTimestamp, created)
			}
		})
	}
}

func TestDaemonSet(t *testing.T) {
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "kube-system"},
		Spec: appsv1.DaemonSetSpec{Template: template(map[string]string{"app": "agent"})}}
	ds.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}
	got, _ := Expand([]runtime.Object{ds, &corev1.Namespace{}})
	if len(got.Pods) != 0 || len(got.DaemonSetPods) != 1 {
		t.Fatalf("pods %d, daemon pods %d", len(got.Pods), len(got.DaemonSetPods))
	}
	p := got.DaemonSetPods[0]
	if p.Namespace != "kube-system" || p.Name != "agent-daemon" || p.OwnerReferences[0].Kind != "DaemonSet" || p.Labels["app"] != "agent" {
		t.Errorf("daemon pod %s/%s owners %v labels %v", p.Namespace, p.Name, p.OwnerReferences, p.Labels)
	}
	if len(p.Spec.Tolerations) != 6 {
		t.Errorf("tolerations %v: want the not-ready one once plus five the controller adds", p.Spec.Tolerations)
	}
	if len(ds.Spec.Template.Spec.Tolerations) != 1 {
		t.Error("the DaemonSet was modified")
	}
}

func TestDeterministic(t *testing.T) {
	mk := func() []runtime.Object {
		return []runtime.Object{
			&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(2)), Template: template(map[string]string{"app": "web", "tier": "front"})}},
			&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j"}, Spec: batchv1.JobSpec{Template: template(nil)}},
		}
	}
	a, _ := Expand(mk())
	b, _ := Expand(mk())
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two expansions of the same objects differ")
	}
	if a.Pods[0].UID == a.Pods[1].UID {
		t.Error("two pods share a UID")
	}
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(string(a.Pods[0].UID)) {
		t.Errorf("uid %q is not in UUID form", a.Pods[0].UID)
	}
	other := template(map[string]string{"app": "web", "tier": "back"})
	web := template(map[string]string{"app": "web", "tier": "front"})
	if TemplateHash(&other) == TemplateHash(&web) {
		t.Error("different templates share a hash")
	}
	if !regexp.MustCompile(`^[bcdfghjklmnpqrstvwxz2456789]+$`).MatchString(TemplateHash(&web)) {
		t.Errorf("hash %q uses characters outside the safe alphabet", TemplateHash(&web))
	}
}

// ExpandInPlace gives the same pods as Expand, but a bare Pod is the object
// given, defaulted, and Expand leaves its input alone.
func TestExpandInPlace(t *testing.T) {
	lr := &corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Name: "defaults", Namespace: "default"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type:           corev1.LimitTypeContainer,
			DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")},
		}}},
	}
	bare := func() *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "solo"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}}}
	}
	web := template(map[string]string{"app": "web"})
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{Template: web}}

	given := bare()
	want, _ := Expand([]runtime.Object{lr, given, deploy})
	if !reflect.DeepEqual(given, bare()) {
		t.Errorf("Expand changed the pod it was given: %+v", given)
	}
	adopted := bare()
	got, _ := ExpandInPlace([]runtime.Object{lr, adopted, deploy})
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ExpandInPlace gave\n%+v\nExpand gave\n%+v", got.Pods, want.Pods)
	}
	if got.Pods[0] != adopted {
		t.Errorf("the bare pod was copied, not defaulted in place")
	}
	if q := adopted.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; q.String() != "250m" {
		t.Errorf("the adopted pod's cpu request is %s, want the LimitRange's 250m", q.String())
	}
}
