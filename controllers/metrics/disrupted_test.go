package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestNodeClaimsDisrupted(t *testing.T) {
	m, reg := newMetrics(t)
	m.NodeClaimDisrupted("expired", "default", "spot")
	m.NodeClaimDisrupted("expired", "default", "spot")
	m.NodeClaimDisrupted("unhealthy", "gpu", "on-demand")
	m.NodeClaimUnhealthyDisrupted("Ready", "gpu", "on-demand", "ami-1")

	want := `
# HELP karpenter_nodeclaims_disrupted_total Number of nodeclaims disrupted in total. Labeled by the reason the nodeclaim was disrupted, the owning nodepool and its capacity type.
# TYPE karpenter_nodeclaims_disrupted_total counter
karpenter_nodeclaims_disrupted_total{capacity_type="on-demand",nodepool="gpu",reason="unhealthy"} 1
karpenter_nodeclaims_disrupted_total{capacity_type="spot",nodepool="default",reason="expired"} 2
# HELP karpenter_nodeclaims_unhealthy_disrupted_total Number of unhealthy nodeclaims replaced by node repair. Labeled by the node condition that made them unhealthy, the owning nodepool, capacity type and image ID.
# TYPE karpenter_nodeclaims_unhealthy_disrupted_total counter
karpenter_nodeclaims_unhealthy_disrupted_total{capacity_type="on-demand",condition="Ready",image_id="ami-1",nodepool="gpu"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), NameNodeClaimsDisrupted, NameNodeClaimsUnhealthyDisrupted); err != nil {
		t.Error(err)
	}

	var nilMetrics *Metrics
	nilMetrics.NodeClaimDisrupted("expired", "default", "spot")
	nilMetrics.NodeClaimUnhealthyDisrupted("Ready", "default", "spot", "")
}
