package packer_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/scheduling/workloads/karpenterbench"
)

// First fit asks the open claims whether they take each pod. Karpenter's
// benchmark pods form a new variant every few pods (labels and constraints
// differ, requests come from a few dozen), and when every variant asked
// every claim afresh the checks per pod grew with the number of claims:
// 20,000 pods on the catalog took 7 million checks. Variants whose requests,
// node affinity and topology keys are the same share what the claims
// answered them on resources, so the checks per pod stay about level as
// the plan grows.
func TestFirstFitChecksPerPodStayLevel(t *testing.T) {
	pool := catalogPool(t)
	perPod := map[int]float64{}
	for _, n := range []int{1000, 4000} {
		in := karpenterbench.Input(karpenterbench.DiversePods(n), packer.PreferenceScore)
		in.NodePools = []packer.NodePool{pool}
		r, checks := packer.SolveChecks(in)
		if len(r.Unschedulable) > 0 {
			t.Fatalf("%d pods: %d unschedulable", n, len(r.Unschedulable))
		}
		perPod[n] = float64(checks) / float64(n)
		t.Logf("%d pods: %d claims, %d checks, %.1f per pod", n, len(r.NodeClaims), checks, perPod[n])
	}
	if growth := perPod[4000] / perPod[1000]; growth > 1.5 {
		t.Errorf("checks per pod grew %.2f times from 1,000 to 4,000 pods (%.1f to %.1f); want at most 1.5", growth, perPod[1000], perPod[4000])
	}
}

// A pod asks the existing nodes in order, from where its variant's pointer
// stopped: the pointer passes the leading nodes that never take the
// variant, and stops at the first that turns it away for now. Pods of a
// zone-spread Deployment met such a node (one with room, in the zone with
// the most of them) ahead of hundreds of full ones, and each pod checked
// every full node again: a disruption decision at 1,000 nodes spent most of
// its time so. The full nodes must be checked about once per variant, not
// once per pod.
func TestFullNodesAreCheckedOncePerVariant(t *testing.T) {
	const full, pending, crowded = 400, 190, 100
	node := func(name, zone string) packer.Node {
		return packer.Node{
			Name: name, NodePool: "p",
			Labels: map[string]string{
				wellknown.LabelHostname: name, wellknown.LabelTopologyZone: zone, wellknown.LabelNodePool: "p",
				wellknown.LabelInstanceType: "bench-4", wellknown.LabelCapacityType: wellknown.CapacityTypeOnDemand,
			},
			Allocatable: vec("4", "16Gi", "110"),
		}
	}
	// node-000 has room but holds the Deployment's pods of zone 1, which
	// the spread keeps the pending ones away from; the others are full.
	roomy := node("node-000", karpenterbench.Zones[0])
	for i := range crowded {
		roomy.Pods = append(roomy.Pods, pod(fmt.Sprintf("web-%03d", i), "10m", "16Mi", spreadZone("web")))
	}
	nodes := []packer.Node{roomy}
	for i := 1; i <= full; i++ {
		n := node(fmt.Sprintf("node-%03d", i), karpenterbench.Zones[1+i%2])
		n.Pods = []*corev1.Pod{pod(fmt.Sprintf("filler-%03d", i), "4", "1Gi")}
		nodes = append(nodes, n)
	}
	var pods []*corev1.Pod
	for i := range pending {
		pods = append(pods, pod(fmt.Sprintf("web-new-%03d", i), "10m", "16Mi", spreadZone("web")))
	}
	r, checks := packer.SolveChecks(packer.Input{Nodes: nodes, Pods: pods, NodePools: []packer.NodePool{pool("p", 8)}})
	if len(r.Unschedulable) > 0 || len(r.Placements) > 0 {
		t.Fatalf("want every pending pod on new claims in zones 2 and 3; %d placed on nodes, %d unschedulable: %v", len(r.Placements), len(r.Unschedulable), r.Unschedulable)
	}
	if limit := 2*full + 10*pending; checks > limit {
		t.Errorf("%d checks for %d pods over %d full nodes; want at most %d (about one per full node, a few per pod)", checks, pending, full, limit)
	}
	t.Logf("%d checks, %d claims", checks, len(r.NodeClaims))
}
