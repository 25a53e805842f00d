package workloads

import (
	"encoding/json"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

func limitRange(namespace, name string, items ...corev1.LimitRangeItem) *corev1.LimitRange {
	return &corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       corev1.LimitRangeSpec{Limits: items},
	}
}

func containerItem(def, defRequest corev1.ResourceList) corev1.LimitRangeItem {
	return corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Default: def, DefaultRequest: defRequest}
}

// TestApplyLimitRanges follows the LimitRanger admission plugin: missing
// limits from default, missing requests from defaultRequest (itself
// defaulted from default, max and min as the API server defaults the item),
// containers and init containers alike, several LimitRanges in name order,
// other namespaces' ignored, Pod items defaulting nothing.
func TestApplyLimitRanges(t *testing.T) {
	type res struct{ requests, limits corev1.ResourceList }
	for _, tc := range []struct {
		name        string
		limitRanges []*corev1.LimitRange
		container   res
		init        *res
		// DefaultPod (the API server's order) rather than ApplyLimitRanges alone.
		asPod    bool
		want     res
		wantInit res
	}{
		{
			name:        "default only: the limit, and the request from it",
			limitRanges: []*corev1.LimitRange{limitRange("apps", "lr", containerItem(resourceList("cpu", "2", "memory", "1Gi"), nil))},
			container:   res{limits: resourceList("memory", "1Gi")},
			asPod:       true,
			want:        res{requests: resourceList("cpu", "2", "memory", "1Gi"), limits: resourceList("cpu", "2", "memory", "1Gi")},
		},
		{
			name:        "defaultRequest only: the request, no limit",
			limitRanges: []*corev1.LimitRange{limitRange("apps", "lr", containerItem(nil, resourceList("cpu", "2", "memory", "1Gi")))},
			container:   res{limits: resourceList("memory", "1Gi")},
			asPod:       true,
			want:        res{requests: resourceList("cpu", "2", "memory", "1Gi"), limits: resourceList("memory", "1Gi")},
		},
		{
			name:        "both",
			limitRanges: []*corev1.LimitRange{limitRange("apps", "lr", containerItem(resourceList("cpu", "2"), resourceList("cpu", "500m")))},
			want:        res{requests: resourceList("cpu", "500m"), limits: resourceList("cpu", "2")},
		},
		{
			name:        "values the container sets are kept",
			limitRanges: []*corev1.LimitRange{limitRange("apps", "lr", containerItem(resourceList("cpu", "2", "memory", "1Gi"), resourceList("cpu", "500m", "memory", "256Mi")))},
			container:   res{requests: resourceList("cpu", "100m"), limits: resourceList("memory", "2Gi")},
			want:        res{requests: resourceList("cpu", "100m", "memory", "256Mi"), limits: resourceList("cpu", "2", "memory", "2Gi")},
		},
		{
			name:        "a container's own limit is its request before the default request applies",
			limitRanges: []*corev1.LimitRange{limitRange("apps", "lr", containerItem(nil, resourceList("cpu", "500m")))},
			container:   res{limits: resourceList("cpu", "3")},
			asPod:       true,
			want:        res{requests: resourceList("cpu", "3"), limits: resourceList("cpu", "3")},
		},
		{
			name:        "init containers too",
			limitRanges: []*corev1.LimitRange{limitRange("apps", "lr", containerItem(resourceList("cpu", "2"), nil))},
			init:        &res{requests: resourceList("memory", "64Mi")},
			want:        res{requests: resourceList("cpu", "2"), limits: resourceList("cpu", "2")},
			wantInit:    res{requests: resourceList("cpu", "2", "memory", "64Mi"), limits: resourceList("cpu", "2")},
		},
		{
			name: "max defaults the limit, min the request",
			limitRanges: []*corev1.LimitRange{limitRange("apps", "lr", corev1.LimitRangeItem{
				Type: corev1.LimitTypeContainer, Max: resourceList("cpu", "4"), Min: resourceList("memory", "32Mi"),
			})},
			want: res{requests: resourceList("cpu", "4", "memory", "32Mi"), limits: resourceList("cpu", "4")},
		},
		{
			name: "several LimitRanges: name order, the first to set a value wins",
			limitRanges: []*corev1.LimitRange{
				limitRange("apps", "b", containerItem(resourceList("cpu", "3", "memory", "3Gi"), nil)),
				limitRange("apps", "a", containerItem(resourceList("cpu", "1"), nil)),
			},
			want: res{requests: resourceList("cpu", "1", "memory", "3Gi"), limits: resourceList("cpu", "1", "memory", "3Gi")},
		},
		{
			name: "several items of one LimitRange: the later overrides",
			limitRanges: []*corev1.LimitRange{limitRange("apps", "lr",
				containerItem(resourceList("cpu", "1"), nil),
				containerItem(resourceList("cpu", "2"), nil),
			)},
			want: res{requests: resourceList("cpu", "2"), limits: resourceList("cpu", "2")},
		},
		{
			name: "other namespaces' LimitRanges are ignored",
			limitRanges: []*corev1.LimitRange{
				limitRange("other", "lr", containerItem(resourceList("cpu", "2"), nil)),
				limitRange("", "lr", containerItem(resourceList("cpu", "2"), nil)),
			},
			container: res{requests: resourceList("cpu", "100m")},
			want:      res{requests: resourceList("cpu", "100m")},
		},
		{
			name: "Pod items default nothing",
			limitRanges: []*corev1.LimitRange{limitRange("apps", "lr", corev1.LimitRangeItem{
				Type: corev1.LimitTypePod, Max: resourceList("cpu", "8"), Default: resourceList("memory", "1Gi"),
			})},
			container: res{requests: resourceList("cpu", "100m")},
			want:      res{requests: resourceList("cpu", "100m")},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "p"},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
					Requests: tc.container.requests.DeepCopy(), Limits: tc.container.limits.DeepCopy(),
				}}}},
			}
			if tc.init != nil {
				pod.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{
					Requests: tc.init.requests.DeepCopy(), Limits: tc.init.limits.DeepCopy(),
				}}}
			}
			before := make([]*corev1.LimitRange, len(tc.limitRanges))
			for i, lr := range tc.limitRanges {
				before[i] = lr.DeepCopy()
			}
			if tc.asPod {
				DefaultPod(pod, tc.limitRanges)
			} else {
				ApplyLimitRanges(pod, tc.limitRanges)
			}
			got := pod.Spec.Containers[0].Resources
			if !sameList(got.Requests, tc.want.requests) || !sameList(got.Limits, tc.want.limits) {
				t.Errorf("container requests %v limits %v, want %v and %v", got.Requests, got.Limits, tc.want.requests, tc.want.limits)
			}
			if tc.init != nil {
				got := pod.Spec.InitContainers[0].Resources
				if !sameList(got.Requests, tc.wantInit.requests) || !sameList(got.Limits, tc.wantInit.limits) {
					t.Errorf("init container requests %v limits %v, want %v and %v", got.Requests, got.Limits, tc.wantInit.requests, tc.wantInit.limits)
				}
			}
			for i, lr := range tc.limitRanges {
				if !equalJSON(t, lr, before[i]) {
					t.Errorf("LimitRange %s was modified", lr.Name)
				}
			}
		})
	}
}

// TestExpandAppliesLimitRanges: a manifest's LimitRange reaches the pods of
// its namespace, a Deployment's as a DaemonSet's, and is not counted as
// skipped.
func TestExpandAppliesLimitRanges(t *testing.T) {
	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app",
		Resources: corev1.ResourceRequirements{Requests: resourceList("memory", "4")}}}}}
	objs := []runtime.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{Template: tmpl}},
		&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent"}, Spec: appsv1.DaemonSetSpec{Template: tmpl}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere", Namespace: "other"}, Spec: appsv1.DeploymentSpec{Template: tmpl}},
		limitRange("", "limits", containerItem(resourceList("cpu", "2"), nil)),
	}
	got, skipped := Expand(objs)
	if skipped != 0 {
		t.Errorf("skipped %d objects, want 0", skipped)
	}
	want := resourceList("cpu", "2", "memory", "4")
	for _, p := range []*corev1.Pod{got.Pods[0], got.DaemonSetPods[0]} {
		if r := p.Spec.Containers[0].Resources.Requests; !sameList(r, want) {
			t.Errorf("%s requests %v, want %v", p.Name, r, want)
		}
	}
	if r := got.Pods[1].Spec.Containers[0].Resources.Requests; !sameList(r, resourceList("memory", "4")) {
		t.Errorf("%s/%s requests %v, want the template's", got.Pods[1].Namespace, got.Pods[1].Name, r)
	}
}

// TestDaemonSetPod: a live pod of the DaemonSet is preferred over the
// template, the newest one (the greatest name on a tie), with the
// template's identity and node affinity; without one, the template with
// the LimitRange's defaults.
func TestDaemonSetPod(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	zone := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}},
	}}}}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "agent", UID: "ds-uid"},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
			Spec: corev1.PodSpec{
				Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: zone}},
				Containers: []corev1.Container{{Name: "agent",
					Resources: corev1.ResourceRequirements{Limits: resourceList("memory", "1Gi")}}},
			},
		}},
	}
	lrs := []*corev1.LimitRange{limitRange("kube-system", "lr", containerItem(resourceList("cpu", "2"), nil))}
	live := func(name, node string, created time.Time, cpu string, owner types.UID) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name, CreationTimestamp: metav1.NewTime(created),
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: owner, Controller: ptr(true)}}},
			Spec: corev1.PodSpec{
				NodeName: node,
				Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{
						{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}},
					}}},
				}}},
				Containers: []corev1.Container{{Name: "agent", Resources: corev1.ResourceRequirements{
					Requests: resourceList("cpu", cpu, "memory", "1Gi"), Limits: resourceList("cpu", cpu, "memory", "1Gi")}}},
			},
		}
		return p
	}
	other := live("other-x", "n9", t0.Add(time.Hour), "9", "ds-uid")
	other.OwnerReferences[0].Name = "other"
	for _, tc := range []struct {
		name    string
		pods    []*corev1.Pod
		wantCPU string
	}{
		{name: "no live pod: the template with the LimitRange's default", wantCPU: "2"},
		{name: "pods of other DaemonSets or UIDs do not count", pods: []*corev1.Pod{other, live("agent-old", "n8", t0.Add(time.Hour), "7", "old-uid")}, wantCPU: "2"},
		{name: "the live pod", pods: []*corev1.Pod{live("agent-a", "n1", t0, "3", "ds-uid")}, wantCPU: "3"},
		{name: "the newest live pod", pods: []*corev1.Pod{
			live("agent-b", "n2", t0.Add(time.Minute), "4", "ds-uid"), live("agent-a", "n1", t0, "3", "ds-uid"),
		}, wantCPU: "4"},
		{name: "a tie goes to the greatest name, whatever the order", pods: []*corev1.Pod{
			live("agent-c", "n3", t0, "5", "ds-uid"), live("agent-d", "n4", t0, "6", "ds-uid"), live("agent-a", "n1", t0, "3", "ds-uid"),
		}, wantCPU: "6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := DaemonSetPod(ds, tc.pods, lrs)
			want := resourceList("cpu", tc.wantCPU, "memory", "1Gi")
			if r := got.Spec.Containers[0].Resources.Requests; !sameList(r, want) {
				t.Errorf("requests %v, want %v", r, want)
			}
			if got.Name != "agent-daemon" || got.Spec.NodeName != "" || got.Labels["app"] != "agent" {
				t.Errorf("pod %s on %q labels %v, want the template's identity and no node", got.Name, got.Spec.NodeName, got.Labels)
			}
			if !equalJSON(t, got.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution, zone) {
				t.Errorf("required node affinity %+v, want the template's", got.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution)
			}
		})
	}
}

// equalJSON compares two values by their JSON encoding, which compares
// quantities by their canonical form.
func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(ja) == string(jb)
}
