package packer_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
)

// TestQuantitiesTooLargeToCount checks that requests too large for an int64
// in their unit leave the pod unschedulable, naming the resource and the
// amount as the pod asks for it, instead of wrapping around to a small or
// negative request that packs; that NodePool limits that large never block
// a launch; and that a negative request never makes a NodeClaim ask for a
// negative amount.
func TestQuantitiesTooLargeToCount(t *testing.T) {
	withRequest := func(name corev1.ResourceName, q string) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Requests[name] = resource.MustParse(q) }
	}
	withLimits := func(inUse []string, kv ...string) func(*packer.NodePool) {
		return func(np *packer.NodePool) {
			np.Limits = corev1.ResourceList{}
			for i := 0; i < len(kv); i += 2 {
				np.Limits[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
			}
			if inUse != nil {
				np.InUse = corev1.ResourceList{}
				for i := 0; i < len(inUse); i += 2 {
					np.InUse[corev1.ResourceName(inUse[i])] = resource.MustParse(inUse[i+1])
				}
			}
		}
	}
	small := func() *corev1.Pod { return pod("small", "1", "1Gi") }
	for _, tc := range []struct {
		name string
		pods []*corev1.Pod
		pool packer.NodePool
		// nodes is how many NodeClaims hold the pods that fit; unschedulable
		// names the pods left out, and contains what the first one's
		// verdict says.
		nodes         int
		unschedulable []string
		code          string
		contains      []string
	}{
		{name: "1e30 cpu", pods: []*corev1.Pod{small(), pod("huge", "1e30", "1Gi")}, pool: pool("p", 10),
			nodes: 1, unschedulable: []string{"huge"}, code: packer.CodeNoInstanceTypeFits, contains: []string{"cpu: requests 1e30, largest allocatable"}},
		{name: "2^63-1 cores", pods: []*corev1.Pod{small(), pod("max", "9223372036854775807", "1Gi")}, pool: pool("p", 10),
			nodes: 1, unschedulable: []string{"max"}, code: packer.CodeNoInstanceTypeFits, contains: []string{"cpu: requests 9223372036854775807, largest allocatable"}},
		{name: "1e16 cores, beyond int64 in millicores", pods: []*corev1.Pod{small(), pod("big", "1e16", "1Gi")}, pool: pool("p", 10),
			nodes: 1, unschedulable: []string{"big"}, code: packer.CodeNoInstanceTypeFits, contains: []string{"cpu: requests 10e15"}},
		{name: "1e30 memory", pods: []*corev1.Pod{small(), pod("huge", "1", "1e30")}, pool: pool("p", 10),
			nodes: 1, unschedulable: []string{"huge"}, code: packer.CodeNoInstanceTypeFits, contains: []string{"memory: requests 1e30"}},
		{name: "1e30 of an extended resource", pods: []*corev1.Pod{small(), pod("huge", "1", "1Gi", withRequest("example.com/widget", "1e30"))}, pool: pool("p", 10),
			nodes: 1, unschedulable: []string{"huge"}, code: packer.CodeNoInstanceTypeFits, contains: []string{"example.com/widget: requests 1e30"}},
		{name: "a cpu limit of 1e16 cores", pods: []*corev1.Pod{small()}, pool: pool("p", 10, withLimits([]string{"cpu", "100"}, "cpu", "1e16")), nodes: 1},
		{name: "a cpu limit of 1e30 cores", pods: []*corev1.Pod{small()}, pool: pool("p", 10, withLimits([]string{"cpu", "100"}, "cpu", "1e30")), nodes: 1},
		{name: "a cpu limit of 2^63-1 cores", pods: []*corev1.Pod{small()}, pool: pool("p", 10, withLimits(nil, "cpu", "9223372036854775807")), nodes: 1},
		{name: "a memory limit of 1e30", pods: []*corev1.Pod{small()}, pool: pool("p", 10, withLimits([]string{"memory", "1Ti"}, "memory", "1e30")), nodes: 1},
		{name: "a nodes limit of 1e30", pods: []*corev1.Pod{small()}, pool: pool("p", 10, withLimits([]string{"nodes", "3"}, "nodes", "1e30")), nodes: 1},
		{name: "more nodes in use than the limit allows", pods: []*corev1.Pod{small()}, pool: pool("p", 10, withLimits([]string{"nodes", "3"}, "nodes", "2")),
			unschedulable: []string{"small"}, code: packer.CodeLimitExceeded, contains: []string{"limit nodes reached"}},
		{name: "a negative request asks for nothing", pods: []*corev1.Pod{pod("negative", "-98500m", "1Gi"), small()}, pool: pool("p", 10), nodes: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := packer.Input{Pods: tc.pods, NodePools: []packer.NodePool{tc.pool}}
			r := checkConsistent(t, in)
			if len(r.NodeClaims) != tc.nodes {
				t.Errorf("%d NodeClaims, want %d: %+v", len(r.NodeClaims), tc.nodes, r.NodeClaims)
			}
			for _, nc := range r.NodeClaims {
				if nc.Requests.CPU < 0 || nc.Requests.Memory < 0 {
					t.Errorf("NodeClaim asks for %s", nc.Requests)
				}
			}
			var got []string
			for _, u := range r.Unschedulable {
				got = append(got, u.Pod.Name)
			}
			if strings.Join(got, ",") != strings.Join(tc.unschedulable, ",") {
				t.Fatalf("unschedulable %v, want %v: %+v", got, tc.unschedulable, r.Unschedulable)
			}
			if len(r.Ignored) > 0 {
				t.Errorf("ignored %+v", r.Ignored)
			}
			if tc.code == "" {
				return
			}
			u := r.Unschedulable[0]
			v := u.NodePools[0]
			if v.Code != tc.code {
				t.Errorf("code %s, want %s: %s", v.Code, tc.code, v.Message)
			}
			for _, s := range tc.contains {
				if !strings.Contains(v.Message, s) || !strings.Contains(u.Reason, s) {
					t.Errorf("verdict %q or reason %q lacks %q", v.Message, u.Reason, s)
				}
			}
		})
	}
}

// Pods whose requests are too large to count in an int64 differ by the
// amounts they ask for: a pod of 1e30 and one of 1e31 cores are not grouped
// as one shape, so each verdict names its own amount.
func TestUncountableRequestsKeepTheirOwnShape(t *testing.T) {
	in := packer.Input{Pods: []*corev1.Pod{pod("a", "1e30", "1Gi"), pod("b", "1e31", "1Gi")}, NodePools: []packer.NodePool{pool("p", 10)}}
	r := checkConsistent(t, in)
	want := map[string]string{"a": "cpu: requests 1e30,", "b": "cpu: requests 10e30,"}
	if len(r.Unschedulable) != len(want) {
		t.Fatalf("%d pods unschedulable, want %d: %+v", len(r.Unschedulable), len(want), r.Unschedulable)
	}
	for _, u := range r.Unschedulable {
		if !strings.Contains(u.Reason, want[u.Pod.Name]) {
			t.Errorf("pod %s: reason %q lacks %q", u.Pod.Name, u.Reason, want[u.Pod.Name])
		}
	}
}
