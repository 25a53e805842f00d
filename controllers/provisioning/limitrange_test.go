package provisioning

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/controllers/metrics"
	"github.com/stevedore-autoscaler/stevedore/test/environment"
)

// daemonSet creates a DaemonSet in the test's namespace whose pods tolerate
// every taint and have the resources given.
func (e *env) daemonSet(name string, res corev1.ResourceRequirements, mutate ...func(*appsv1.DaemonSet)) *appsv1.DaemonSet {
	e.T.Helper()
	labels := map[string]string{"app": name}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.Name, Name: name},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers:  []corev1.Container{{Name: "agent", Image: "registry.example/agent:1", Resources: res}},
					Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
				},
			},
		},
	}
	for _, m := range mutate {
		m(ds)
	}
	e.Create(ds)
	return ds
}

// TestLimitRangeDaemonSetOverhead is Karpenter's regression scenario: a
// LimitRange whose default (or default request) gives every container cpu,
// a high-priority DaemonSet whose template limits only memory, and a pod
// requesting 4 bytes of memory, which the API server gives the LimitRange's
// cpu too. The DaemonSet has no pod yet (no DaemonSet controller runs here),
// so its overhead is its template with the LimitRange's defaults: the
// NodeClaim requests the cpu of both pods, and not only the pending pod's,
// which left the DaemonSet's pod to pre-empt it on every new node.
func TestLimitRangeDaemonSetOverhead(t *testing.T) {
	for _, tc := range []struct {
		name string
		item corev1.LimitRangeItem
	}{
		{"Default", corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Default: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"),
		}}},
		{"DefaultRequest", corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, DefaultRequest: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"),
		}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "prov-limitrange", 231)
			e.nodeClass(metav1.ConditionTrue, "Ready", "")
			e.nodePool()
			pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: e.Name + "-daemonsets"}, Value: 10000000}
			e.Create(pc)
			lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Namespace: e.Name, Name: "limitrange"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{tc.item}}}
			e.Create(lr)
			e.daemonSet("daemon", corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}},
				func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.PriorityClassName = pc.Name })
			pod := e.pod("large-app", func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("4")}}
			})
			if cpu := pod.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; cpu.String() != "1" {
				t.Fatalf("the API server gave the pod requests %v, want the LimitRange's cpu", pod.Spec.Containers[0].Resources.Requests)
			}

			e.batch()
			claims := e.nodeClaims()
			if len(claims) != 1 {
				t.Fatalf("%d NodeClaims, want 1; events %+v", len(claims), e.Events)
			}
			req := claims[0].Spec.Resources.Requests
			cpu, mem := req[corev1.ResourceCPU], req[corev1.ResourceMemory]
			if cpu.Cmp(resource.MustParse("2")) != 0 || mem.Cmp(resource.MustParse("1073741828")) != 0 {
				t.Errorf("NodeClaim requests %v, want cpu 2 (the pod's and the DaemonSet's LimitRange default) and memory 1Gi+4", req)
			}
		})
	}
}

// TestDaemonSetOverheadMismatchReported: a NodeClaim is sized for a
// DaemonSet's template (100m), but the DaemonSet's pod bound to its node
// requests 1 cpu (as a mutating webhook might make it). The mismatch is
// reported once, as a Warning event on the NodeClaim and on the counter,
// and the pod that lost its room gets one NodeClaim more, sized from the
// live DaemonSet pod.
func TestDaemonSetOverheadMismatchReported(t *testing.T) {
	e := newEnv(t, "prov-overhead", 233)
	e.nodeClass(metav1.ConditionTrue, "Ready", "")
	e.nodePool()
	ds := e.daemonSet("agent", corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}})
	e.pod("app", requests("500m", "512Mi"))
	e.batch()
	claims := e.nodeClaims()
	if len(claims) != 1 {
		t.Fatalf("%d NodeClaims, want 1", len(claims))
	}
	nc := claims[0]
	if cpu := nc.Spec.Resources.Requests[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse("600m")) != 0 {
		t.Fatalf("first NodeClaim requests %v, want the pod's 500m and the template's 100m", nc.Spec.Resources.Requests)
	}

	// The NodeClaim launched and its node registered, with room for the
	// DaemonSet's real pod and no more.
	providerID := "aws:///us-east-1a/i-0overhead" + e.Name[len(e.Name)-2:]
	nc.Status.ProviderID = providerID
	if err := e.Kube.Status().Update(e.Ctx, &nc); err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: e.Name + "-node", Labels: map[string]string{
			wellknown.LabelNodePool: e.Name, wellknown.LabelRegistered: wellknown.LabelValueTrue, wellknown.LabelInitialized: wellknown.LabelValueTrue,
		}},
		Spec: corev1.NodeSpec{ProviderID: providerID},
	}
	node.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourcePods: resource.MustParse("110")}
	node.Status.Capacity = node.Status.Allocatable
	e.Create(node)
	live := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.Name, Name: "agent-x1", Labels: map[string]string{"app": "agent"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{
			NodeName:    node.Name,
			Containers:  []corev1.Container{{Name: "agent", Image: "registry.example/agent:1", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}},
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		},
	}
	e.Create(live)

	e.Clock.Step(Period)
	e.batch()
	got := e.Events.Matching(environment.Event{Kind: "NodeClaim", Name: nc.Name, Reason: ReasonDaemonSetOverheadMismatch})
	if len(got) != 1 || got[0].Type != corev1.EventTypeWarning {
		t.Fatalf("events about %s: %+v, want one Warning %s", nc.Name, e.Events, ReasonDaemonSetOverheadMismatch)
	}
	for _, want := range []string{"DaemonSet " + e.Name + "/agent", "pod agent-x1", "requests cpu=1,", "than the cpu=100m,"} {
		if !strings.Contains(got[0].Note, want) {
			t.Errorf("event %q does not say %q", got[0].Note, want)
		}
	}
	if n := e.Metric(metrics.NameDaemonSetOverheadMismatches, map[string]string{metrics.LabelNamespace: e.Name, metrics.LabelDaemonSet: "agent"}); n != 1 {
		t.Errorf("%s = %v, want 1", metrics.NameDaemonSetOverheadMismatches, n)
	}

	// The pending pod no longer fits beside the real DaemonSet pod: one more
	// NodeClaim, with room for the DaemonSet as its pod is.
	var second *karpv1.NodeClaim
	for _, c := range e.nodeClaims() {
		if c.Name != nc.Name {
			second = &c
		}
	}
	if second == nil {
		t.Fatalf("no second NodeClaim; events %+v", e.Events)
	}
	if cpu := second.Spec.Resources.Requests[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse("1500m")) != 0 {
		t.Errorf("second NodeClaim requests %v, want the pod's 500m and the live DaemonSet pod's 1", second.Spec.Resources.Requests)
	}
	for range 3 {
		e.Clock.Step(Period)
		e.batch()
	}
	if n := len(e.nodeClaims()); n != 2 {
		t.Errorf("%d NodeClaims after more batches, want 2", n)
	}
	if n := len(e.Events.Matching(environment.Event{Kind: "NodeClaim", Name: nc.Name, Reason: ReasonDaemonSetOverheadMismatch})); n != 1 {
		t.Errorf("%d mismatch events, want 1", n)
	}
}
