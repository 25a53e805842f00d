package capacitybuffer

import (
	"errors"
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	autoscalingv1beta1 "github.com/stevedore-autoscaler/stevedore/api/autoscaling/v1beta1"
)

func i32(v int32) *int32 { return &v }

func podSpec(cpu, mem string) corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{
		Name: "pause",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem),
		}},
	}}}
}

func TestReplicas(t *testing.T) {
	pod := podSpec("1", "512Mi")
	limits := func(kv ...string) autoscalingv1beta1.Limits {
		l := autoscalingv1beta1.Limits{}
		for i := 0; i < len(kv); i += 2 {
			l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return l
	}
	for _, tc := range []struct {
		name     string
		spec     autoscalingv1beta1.CapacityBufferSpec
		workload int32
		want     int32
	}{
		{"replicas alone", autoscalingv1beta1.CapacityBufferSpec{Replicas: i32(3)}, -1, 3},
		{"nothing asked", autoscalingv1beta1.CapacityBufferSpec{}, -1, 0},
		{"zero replicas", autoscalingv1beta1.CapacityBufferSpec{Replicas: i32(0)}, -1, 0},
		{"percentage of 10 is 2", autoscalingv1beta1.CapacityBufferSpec{Percentage: i32(20)}, 10, 2},
		{"percentage rounds up", autoscalingv1beta1.CapacityBufferSpec{Percentage: i32(20)}, 6, 2},
		{"percentage at least 1", autoscalingv1beta1.CapacityBufferSpec{Percentage: i32(1)}, 5, 1},
		{"percentage of a scaled-down workload", autoscalingv1beta1.CapacityBufferSpec{Percentage: i32(50)}, 0, 0},
		{"percentage without a workload", autoscalingv1beta1.CapacityBufferSpec{Percentage: i32(50)}, -1, 0},
		{"the larger of replicas and percentage", autoscalingv1beta1.CapacityBufferSpec{Replicas: i32(1), Percentage: i32(50)}, 10, 5},
		{"limits alone", autoscalingv1beta1.CapacityBufferSpec{Limits: limits("cpu", "2")}, -1, 2},
		{"limits round down", autoscalingv1beta1.CapacityBufferSpec{Limits: limits("cpu", "2500m")}, -1, 2},
		{"the tightest limit", autoscalingv1beta1.CapacityBufferSpec{Limits: limits("cpu", "5", "memory", "1Gi")}, -1, 2},
		{"limits cap replicas", autoscalingv1beta1.CapacityBufferSpec{Replicas: i32(10), Limits: limits("cpu", "4")}, -1, 4},
		{"limits above replicas", autoscalingv1beta1.CapacityBufferSpec{Replicas: i32(3), Limits: limits("cpu", "40")}, -1, 3},
		{"limits on a resource not requested", autoscalingv1beta1.CapacityBufferSpec{Replicas: i32(3), Limits: limits("nvidia.com/gpu", "1")}, -1, 3},
		{"limits below one pod", autoscalingv1beta1.CapacityBufferSpec{Limits: limits("cpu", "500m")}, -1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Replicas(tc.spec, tc.workload, &pod); got != tc.want {
				t.Errorf("Replicas = %d, want %d", got, tc.want)
			}
		})
	}
}

func buffer(spec autoscalingv1beta1.CapacityBufferSpec) *autoscalingv1beta1.CapacityBuffer {
	return &autoscalingv1beta1.CapacityBuffer{
		ObjectMeta: metav1.ObjectMeta{Name: "spare", Namespace: "team", UID: "uid-1", Generation: 2,
			CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))},
		Spec: spec,
	}
}

func TestTarget(t *testing.T) {
	for _, tc := range []struct {
		name    string
		spec    autoscalingv1beta1.CapacityBufferSpec
		want    Ref
		wantErr bool
	}{
		{"pod template", autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: &autoscalingv1beta1.LocalObjectRef{Name: "t"}}, Ref{KindPodTemplate, "t"}, false},
		{"deployment", autoscalingv1beta1.CapacityBufferSpec{ScalableRef: &autoscalingv1beta1.ScalableRef{APIGroup: "apps", Kind: "Deployment", Name: "d"}}, Ref{"Deployment", "d"}, false},
		{"empty group is apps", autoscalingv1beta1.CapacityBufferSpec{ScalableRef: &autoscalingv1beta1.ScalableRef{Kind: "StatefulSet", Name: "s"}}, Ref{"StatefulSet", "s"}, false},
		{"other group", autoscalingv1beta1.CapacityBufferSpec{ScalableRef: &autoscalingv1beta1.ScalableRef{APIGroup: "argoproj.io", Kind: "Rollout", Name: "r"}}, Ref{}, true},
		{"unsupported kind", autoscalingv1beta1.CapacityBufferSpec{ScalableRef: &autoscalingv1beta1.ScalableRef{APIGroup: "apps", Kind: "DaemonSet", Name: "r"}}, Ref{}, true},
		{"nothing", autoscalingv1beta1.CapacityBufferSpec{}, Ref{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Target(buffer(tc.spec))
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("Target = %+v, %v; want %+v, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestResolveAndStatus(t *testing.T) {
	now := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	pt := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: "shape", Generation: 4}, Template: corev1.PodTemplateSpec{Spec: podSpec("1", "1Gi")}}
	dep := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: i32(10), Template: corev1.PodTemplateSpec{Spec: podSpec("500m", "256Mi")}}}

	cb := buffer(autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: &autoscalingv1beta1.LocalObjectRef{Name: "shape"}, Replicas: i32(3)})
	res := Resolve(cb, Found{PodTemplate: pt})
	st := Status(cb, res, now)
	if !res.Ready || *st.Replicas != 3 || st.PodTemplateRef.Name != "shape" || *st.PodTemplateGeneration != 4 {
		t.Fatalf("pod template: %+v", st)
	}
	c := meta.FindStatusCondition(st.Conditions, autoscalingv1beta1.ConditionReadyForProvisioning)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != autoscalingv1beta1.ReasonResolved || c.ObservedGeneration != 2 {
		t.Fatalf("condition %+v", c)
	}

	// A workload: no PodTemplate in the status, the percentage counts.
	cb = buffer(autoscalingv1beta1.CapacityBufferSpec{ScalableRef: &autoscalingv1beta1.ScalableRef{APIGroup: "apps", Kind: "Deployment", Name: "d"}, Percentage: i32(20)})
	cb.Status.PodTemplateRef = &autoscalingv1beta1.LocalObjectRef{Name: "old"}
	st = Status(cb, Resolve(cb, Found{Deployment: dep}), now)
	if *st.Replicas != 2 || st.PodTemplateRef != nil || st.PodTemplateGeneration != nil {
		t.Fatalf("deployment: %+v", st)
	}

	// Not found: the reason names which reference, replicas stay.
	for _, tc := range []struct {
		spec   autoscalingv1beta1.CapacityBufferSpec
		found  bool
		reason string
	}{
		{autoscalingv1beta1.CapacityBufferSpec{ScalableRef: &autoscalingv1beta1.ScalableRef{Kind: "Deployment", Name: "d"}}, false, autoscalingv1beta1.ReasonScalableRefNotFound},
		{autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: &autoscalingv1beta1.LocalObjectRef{Name: "t"}, Replicas: i32(1)}, false, autoscalingv1beta1.ReasonPodTemplateNotFound},
		{autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: &autoscalingv1beta1.LocalObjectRef{Name: "t"}, Replicas: i32(1)}, true, autoscalingv1beta1.ReasonResolutionFailed},
	} {
		cb := buffer(tc.spec)
		cb.Status.Replicas = i32(7)
		st := Status(cb, Failed(cb, errors.New("gone"), !tc.found), now)
		c := meta.FindStatusCondition(st.Conditions, autoscalingv1beta1.ConditionReadyForProvisioning)
		if c.Status != metav1.ConditionFalse || c.Reason != tc.reason || c.Message != "gone" || *st.Replicas != 7 {
			t.Errorf("%+v: condition %+v, replicas %d", tc.spec, c, *st.Replicas)
		}
	}
}

func TestVirtualPods(t *testing.T) {
	cb := buffer(autoscalingv1beta1.CapacityBufferSpec{})
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "spare"}}, Spec: podSpec("1", "1Gi")}
	tmpl.Spec.NodeName = "somewhere"
	tmpl.Spec.Volumes = []corev1.Volume{
		{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}},
		{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
	}
	tmpl.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data"}, {Name: "cfg"}}

	pods := VirtualPods(cb, tmpl, 2)
	if len(pods) != 2 {
		t.Fatalf("%d pods", len(pods))
	}
	p := pods[1]
	if p.Name != "capacity-buffer-spare-2" || p.Namespace != "team" || p.UID != "uid-1-2" || p.Labels["app"] != "spare" {
		t.Errorf("meta %+v", p.ObjectMeta)
	}
	if !IsVirtual(p) || IsVirtual(&corev1.Pod{}) {
		t.Error("IsVirtual")
	}
	if key, ok := BufferOf(p); !ok || key.String() != "team/spare" {
		t.Errorf("BufferOf = %v, %v", key, ok)
	}
	if p.Spec.NodeName != "" || len(p.Spec.Volumes) != 1 || len(p.Spec.Containers[0].VolumeMounts) != 1 || *p.Spec.Priority != VirtualPodPriority {
		t.Errorf("spec %+v", p.Spec)
	}
	if tmpl.Spec.NodeName != "somewhere" || len(tmpl.Spec.Volumes) != 2 {
		t.Error("the template was changed")
	}
	if !reflect.DeepEqual(pods, VirtualPods(cb, tmpl, 2)) {
		t.Error("the same buffer gave different pods")
	}
	if VirtualPods(cb, tmpl, 0) != nil {
		t.Error("zero replicas gave pods")
	}
}

func TestProvisioningCondition(t *testing.T) {
	now := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	ready := func(replicas int32) *autoscalingv1beta1.CapacityBuffer {
		cb := buffer(autoscalingv1beta1.CapacityBufferSpec{})
		cb.Status = Status(cb, Resolution{Ready: true, Reason: autoscalingv1beta1.ReasonResolved, Replicas: replicas}, now)
		return cb
	}
	for _, tc := range []struct {
		name   string
		cb     *autoscalingv1beta1.CapacityBuffer
		placed *Placed
		status metav1.ConditionStatus
		reason string // empty: no condition
	}{
		{"not resolved", buffer(autoscalingv1beta1.CapacityBufferSpec{}), nil, metav1.ConditionFalse, autoscalingv1beta1.ReasonNotReadyForProvisioning},
		{"empty", ready(0), nil, metav1.ConditionFalse, autoscalingv1beta1.ReasonBufferEmpty},
		{"not packed", ready(2), nil, "", ""},
		{"all on existing", ready(2), &Placed{Existing: 2}, metav1.ConditionTrue, autoscalingv1beta1.ReasonFitsExistingCapacity},
		{"one new", ready(2), &Placed{Existing: 1, New: 1}, metav1.ConditionFalse, autoscalingv1beta1.ReasonRequiresNewCapacity},
		{"one failed", ready(2), &Placed{Existing: 1, Failed: 1}, metav1.ConditionFalse, autoscalingv1beta1.ReasonRequiresNewCapacity},
		{"fewer than asked", ready(3), &Placed{Existing: 2}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ProvisioningCondition(tc.cb, tc.placed, now)
			switch {
			case tc.reason == "" && c != nil:
				t.Errorf("condition %+v, want none", c)
			case tc.reason != "" && (c == nil || c.Status != tc.status || c.Reason != tc.reason):
				t.Errorf("condition %+v, want %s/%s", c, tc.status, tc.reason)
			}
		})
	}
}
