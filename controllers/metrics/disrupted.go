package metrics

import "github.com/prometheus/client_golang/prometheus"

// Names of the disruption counters, fully qualified.
const (
	NameNodeClaimsDisrupted          = Namespace + "_nodeclaims_disrupted_total"
	NameNodeClaimsUnhealthyDisrupted = Namespace + "_nodeclaims_unhealthy_disrupted_total"
)

// Label names of the disruption counters.
const (
	LabelCondition = "condition"
	LabelImageID   = "image_id"
)

// registerDisrupted creates the disruption counters and registers them with
// reg.
func (m *Metrics) registerDisrupted(reg prometheus.Registerer) error {
	m.nodeClaimsDisrupted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: NameNodeClaimsDisrupted,
		Help: "Number of nodeclaims disrupted in total. Labeled by the reason the nodeclaim was disrupted, the owning nodepool and its capacity type.",
	}, []string{LabelReason, LabelNodePool, LabelCapacityType})
	m.nodeClaimsUnhealthyDisrupted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: NameNodeClaimsUnhealthyDisrupted,
		Help: "Number of unhealthy nodeclaims replaced by node repair. Labeled by the node condition that made them unhealthy, the owning nodepool, capacity type and image ID.",
	}, []string{LabelCondition, LabelNodePool, LabelCapacityType, LabelImageID})
	for _, c := range []prometheus.Collector{m.nodeClaimsDisrupted, m.nodeClaimsUnhealthyDisrupted} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// NodeClaimDisrupted counts one NodeClaim deleted by a disruption for reason,
// in Karpenter's lower-case form (for example "expired" or "unhealthy").
func (m *Metrics) NodeClaimDisrupted(reason, nodePool, capacityType string) {
	if m == nil {
		return
	}
	m.nodeClaimsDisrupted.WithLabelValues(reason, nodePool, capacityType).Inc()
}

// NodeClaimUnhealthyDisrupted counts one NodeClaim replaced by node repair
// because of the node condition named condition (for example "Ready").
func (m *Metrics) NodeClaimUnhealthyDisrupted(condition, nodePool, capacityType, imageID string) {
	if m == nil {
		return
	}
	m.nodeClaimsUnhealthyDisrupted.WithLabelValues(condition, nodePool, capacityType, imageID).Inc()
}
