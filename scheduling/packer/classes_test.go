package packer_test

import (
	"testing"

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
