package provisioning

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
)

// TestQuantitiesBeyondInt64 runs the provisioner against the API server,
// which accepts quantities of any size: NodePool limits too large for an
// int64 in millicores or bytes (1e16 cores is already) mean no limit in
// practice and let the launch through, and a pod that requests 1e30 cpu,
// or 2^63-1 cores, gets no node (and a FailedScheduling event that names
// cpu) instead of being packed as a small or negative request.
func TestQuantitiesBeyondInt64(t *testing.T) {
	for i, tc := range []struct {
		name   string
		limits corev1.ResourceList
		huge   string // cpu request of a second pod, which must get no node
	}{
		{name: "limits-1e16", limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1e16"), corev1.ResourceMemory: resource.MustParse("1e16")}},
		{name: "limits-1e30", limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1e30"), corev1.ResourceMemory: resource.MustParse("1e30"), "nodes": resource.MustParse("1e30")}},
		{name: "request-1e30", huge: "1e30"},
		{name: "request-maxint64", huge: "9223372036854775807"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "prov-"+tc.name, 220+uint64(i))
			e.nodeClass(metav1.ConditionTrue, "Ready", "")
			e.nodePool(func(np *karpv1.NodePool) { np.Spec.Limits = tc.limits })
			e.pod("app")
			if tc.huge != "" {
				e.pod("huge", func(p *corev1.Pod) {
					p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse(tc.huge)
				})
			}
			e.batch()
			claims := e.nodeClaims()
			if len(claims) != 1 {
				t.Fatalf("%d NodeClaims, want 1 for the small pod", len(claims))
			}
			cpu := claims[0].Spec.Resources.Requests[corev1.ResourceCPU]
			if cpu.Cmp(resource.MustParse("500m")) < 0 || cpu.Cmp(resource.MustParse("100")) > 0 {
				t.Errorf("the NodeClaim requests cpu %s, want the small pod's 500m and some overhead", cpu.String())
			}
			if tc.huge == "" {
				return
			}
			evs := e.podEvents("huge", ReasonFailedScheduling)
			if len(evs) != 1 {
				t.Fatalf("FailedScheduling events for the huge pod = %+v, want one", evs)
			}
			q := resource.MustParse(tc.huge)
			if note := evs[0].Note; !strings.Contains(note, fmt.Sprintf("cpu: requests %s", q.String())) {
				t.Errorf("event %q does not name the cpu the pod requests", note)
			}
		})
	}
}
