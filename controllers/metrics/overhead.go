package metrics

import "github.com/prometheus/client_golang/prometheus"

// NameDaemonSetOverheadMismatches is stevedore's own: Karpenter has no
// metric for a DaemonSet pod that outgrew the room a new node kept for it.
const NameDaemonSetOverheadMismatches = "stevedore_daemonset_overhead_mismatches_total"

// Label names of NameDaemonSetOverheadMismatches.
const (
	LabelNamespace = "namespace"
	LabelDaemonSet = "daemonset"
)

// registerOverhead creates the overhead-mismatch counter and registers it
// with reg.
func (m *Metrics) registerOverhead(reg prometheus.Registerer) error {
	m.overheadMismatches = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: NameDaemonSetOverheadMismatches,
		Help: "Number of DaemonSet pods found on a new node requesting more than the node was sized with for their DaemonSet. Labeled by the DaemonSet's namespace and name.",
	}, []string{LabelNamespace, LabelDaemonSet})
	return reg.Register(m.overheadMismatches)
}

// DaemonSetOverheadMismatch counts one DaemonSet pod that requests more
// than the NodeClaim of its node was sized with for it.
func (m *Metrics) DaemonSetOverheadMismatch(namespace, daemonSet string) {
	if m == nil {
		return
	}
	m.overheadMismatches.WithLabelValues(namespace, daemonSet).Inc()
}
