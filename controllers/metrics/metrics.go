// Package metrics defines the Prometheus metrics that stevedore's controllers
// publish, under Karpenter's names and labels so that dashboards and alerts
// written for Karpenter keep working.
//
// A Metrics is created from a prometheus.Registerer; there is no global
// registry, so tests and the simulator each get their own.
//
// Implemented (name, labels):
//
//   - karpenter_nodepools_usage (nodepool, resource_type): the resources of a
//     NodePool's NodeClaims, as in the NodePool's status.resources.
//   - karpenter_nodepools_limit (nodepool, resource_type): the NodePool's
//     spec.limits.
//   - karpenter_nodepools_allowed_disruptions (nodepool, reason): how many
//     nodes the NodePool's disruption budgets allow to be disrupting at once
//     for each reason, before subtracting those disrupting already (as
//     Karpenter publishes it); 2147483647 when no budget applies.
//   - karpenter_nodepools_nodes_consuming_budgets (nodepool, reason): the
//     NodePool's nodes that count against its budgets now (not ready,
//     marked for disruption or being deleted).
//   - karpenter_nodeclaims_created_total (reason, nodepool,
//     min_values_relaxed): NodeClaims created, by why they were created.
//   - karpenter_nodeclaims_terminated_total (nodepool, capacity_type, zone):
//     NodeClaims whose instance has been terminated.
//   - karpenter_nodes_allocatable (node_name, nodepool, resource_type and the
//     well-known node labels in NodeLabelNames): what each node can give to
//     pods.
//   - karpenter_nodeclaims_disrupted_total (reason, nodepool, capacity_type):
//     NodeClaims deleted by a disruption, by reason (for example expired or
//     unhealthy).
//   - karpenter_nodeclaims_unhealthy_disrupted_total (condition, nodepool,
//     capacity_type, image_id): NodeClaims replaced by node repair, by the
//     node condition that made them unhealthy.
//   - karpenter_voluntary_disruption_decisions_total (decision, reason,
//     consolidation_type), karpenter_voluntary_disruption_failed_validations_total
//     (reason, consolidation_type) and
//     karpenter_voluntary_disruption_queue_failures_total (decision, reason,
//     consolidation_type): disruption commands started, dropped at
//     validation and rolled back.
//   - stevedore_interruption_handling_enabled: 1 when an interruption queue
//     is configured, 0 when interruption handling is off (stevedore's own).
//
// Not implemented yet (see Karpenter's list): the other node gauges
// (system_overhead, total_pod_requests, ...),
// the termination duration summaries, karpenter_pods_*, karpenter_scheduler_*,
// the disruption and cluster-state metrics, and the operator_*_status_condition_*
// metrics.
package metrics

import (
	"slices"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"

	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
)

// Namespace is the prefix of every metric name, Karpenter's, for dashboard
// compatibility.
const Namespace = "karpenter"

// Metric names, fully qualified.
const (
	NameNodePoolUsage              = Namespace + "_nodepools_usage"
	NameNodePoolLimit              = Namespace + "_nodepools_limit"
	NameNodePoolAllowedDisruptions = Namespace + "_nodepools_allowed_disruptions"
	NameNodePoolConsumingBudgets   = Namespace + "_nodepools_nodes_consuming_budgets"
	NameNodeClaimsCreated          = Namespace + "_nodeclaims_created_total"
	NameNodeClaimsTerminated       = Namespace + "_nodeclaims_terminated_total"
	NameNodesAllocatable           = Namespace + "_nodes_allocatable"
)

// Label names.
const (
	LabelNodePool         = "nodepool"
	LabelResourceType     = "resource_type"
	LabelReason           = "reason"
	LabelMinValuesRelaxed = "min_values_relaxed"
	LabelCapacityType     = "capacity_type"
	LabelZone             = "zone"
	LabelNodeName         = "node_name"
)

// nodeLabels are the node labels copied onto the per-node gauges, in order,
// each under the metric label name of the same index in NodeLabelNames.
var nodeLabels = []string{
	wellknown.LabelInstanceType,
	wellknown.LabelCapacityType,
	wellknown.LabelTopologyZone,
	wellknown.LabelTopologyRegion,
	wellknown.LabelArch,
	wellknown.LabelOS,
}

// NodeLabelNames are the metric label names of the node labels on the
// per-node gauges: the label key in lower case with every character that is
// not a letter or digit replaced by '_' (node.kubernetes.io/instance-type
// becomes node_kubernetes_io_instance_type), as Karpenter names them.
var NodeLabelNames = func() []string {
	out := make([]string, len(nodeLabels))
	for i, k := range nodeLabels {
		out[i] = metricLabelName(k)
	}
	return out
}()

func metricLabelName(key string) string {
	b := []byte(key)
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c >= 'A' && c <= 'Z':
			b[i] = c - 'A' + 'a'
		default:
			b[i] = '_'
		}
	}
	return string(b)
}

// Metrics holds the collectors. Create it with New; all methods are safe for
// concurrent use.
type Metrics struct {
	nodePoolUsage              *prometheus.GaugeVec
	nodePoolLimit              *prometheus.GaugeVec
	nodePoolAllowedDisruptions *prometheus.GaugeVec
	nodePoolConsumingBudgets   *prometheus.GaugeVec
	nodeClaimsCreated          *prometheus.CounterVec
	nodeClaimsTerminated       *prometheus.CounterVec
	nodesAllocatable           *prometheus.GaugeVec

	// allocatableMu guards allocatable: per node name, the label values of
	// the karpenter_nodes_allocatable series published for it, so that
	// replacing or removing them deletes those series by their exact
	// labels. DeletePartialMatch walks every series of the gauge (nodes ×
	// resources) on each call, and the gauge is republished on every change
	// to a node.
	allocatableMu sync.Mutex
	allocatable   map[string][][]string

	// Disruption counters; see disrupted.go.
	nodeClaimsDisrupted          *prometheus.CounterVec
	nodeClaimsUnhealthyDisrupted *prometheus.CounterVec

	// The disruption controller's collectors; see voluntary.go.
	voluntary voluntary
	balanced  balancedMetrics
}

// New creates the metrics and registers them with reg. It fails when reg
// already holds a metric of the same name (for example a second Metrics on
// the same registry).
func New(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		nodePoolUsage: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: NameNodePoolUsage,
			Help: "Resources of the NodeClaims a NodePool owns that are not being deleted. Labeled by nodepool name and resource type.",
		}, []string{LabelNodePool, LabelResourceType}),
		nodePoolLimit: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: NameNodePoolLimit,
			Help: "Limits specified on the NodePool that restrict the quantity of resources provisioned. Labeled by nodepool name and resource type.",
		}, []string{LabelNodePool, LabelResourceType}),
		nodePoolAllowedDisruptions: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: NameNodePoolAllowedDisruptions,
			Help: "Nodes of a NodePool that its disruption budgets allow to be disrupting at the same time, before subtracting those disrupting already. Labeled by nodepool name and disruption reason.",
		}, []string{LabelNodePool, LabelReason}),
		nodePoolConsumingBudgets: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: NameNodePoolConsumingBudgets,
			Help: "Nodes of a NodePool that count against its disruption budgets now: not ready, marked for disruption or being deleted. Labeled by nodepool name and disruption reason.",
		}, []string{LabelNodePool, LabelReason}),
		nodeClaimsCreated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameNodeClaimsCreated,
			Help: "Number of NodeClaims created. Labeled by the reason they were created, the owning nodepool, and whether minValues were relaxed.",
		}, []string{LabelReason, LabelNodePool, LabelMinValuesRelaxed}),
		nodeClaimsTerminated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameNodeClaimsTerminated,
			Help: "Number of NodeClaims terminated. Labeled by the owning nodepool, capacity type and zone.",
		}, []string{LabelNodePool, LabelCapacityType, LabelZone}),
		nodesAllocatable: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: NameNodesAllocatable,
			Help: "Node allocatable: the resources a node can give to pods. Labeled by node name, nodepool, resource type and well-known node labels.",
		}, append([]string{LabelNodeName, LabelNodePool, LabelResourceType}, NodeLabelNames...)),
		allocatable: map[string][][]string{},
	}
	for _, c := range []prometheus.Collector{m.nodePoolUsage, m.nodePoolLimit, m.nodePoolAllowedDisruptions, m.nodePoolConsumingBudgets, m.nodeClaimsCreated, m.nodeClaimsTerminated, m.nodesAllocatable} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	if err := m.registerDisrupted(reg); err != nil {
		return nil, err
	}
	if err := m.registerVoluntary(reg); err != nil {
		return nil, err
	}
	if err := m.registerBalanced(reg); err != nil {
		return nil, err
	}
	return m, nil
}

// SetNodePool publishes a NodePool's usage and limits, replacing what was
// published for it before (a resource that left the usage or the limits
// disappears from the gauge).
func (m *Metrics) SetNodePool(nodePool string, usage, limits corev1.ResourceList) {
	if m == nil {
		return
	}
	setResources(m.nodePoolUsage, nodePool, usage)
	setResources(m.nodePoolLimit, nodePool, limits)
}

// DeleteNodePool removes a deleted NodePool's usage, limits, allowed
// disruptions and nodes consuming budgets.
func (m *Metrics) DeleteNodePool(nodePool string) {
	if m == nil {
		return
	}
	m.nodePoolUsage.DeletePartialMatch(prometheus.Labels{LabelNodePool: nodePool})
	m.nodePoolLimit.DeletePartialMatch(prometheus.Labels{LabelNodePool: nodePool})
	m.nodePoolAllowedDisruptions.DeletePartialMatch(prometheus.Labels{LabelNodePool: nodePool})
	m.nodePoolConsumingBudgets.DeletePartialMatch(prometheus.Labels{LabelNodePool: nodePool})
}

// SetNodePoolAllowedDisruptions publishes how many of a NodePool's nodes
// its budgets allow to be disrupting at once for reason (Empty,
// Underutilized or Drifted).
func (m *Metrics) SetNodePoolAllowedDisruptions(nodePool, reason string, allowed int) {
	if m == nil {
		return
	}
	m.nodePoolAllowedDisruptions.WithLabelValues(nodePool, reason).Set(float64(allowed))
}

// SetNodePoolConsumingBudgets publishes how many of a NodePool's nodes
// count against its budget for reason now.
func (m *Metrics) SetNodePoolConsumingBudgets(nodePool, reason string, nodes int) {
	if m == nil {
		return
	}
	m.nodePoolConsumingBudgets.WithLabelValues(nodePool, reason).Set(float64(nodes))
}

func setResources(g *prometheus.GaugeVec, nodePool string, rl corev1.ResourceList) {
	g.DeletePartialMatch(prometheus.Labels{LabelNodePool: nodePool})
	for name, q := range rl {
		g.WithLabelValues(nodePool, string(name)).Set(q.AsApproximateFloat64())
	}
}

// NodeClaimCreated counts one NodeClaim created from nodePool for reason
// (for example "provisioning" or "disruption").
func (m *Metrics) NodeClaimCreated(reason, nodePool string, minValuesRelaxed bool) {
	if m == nil {
		return
	}
	m.nodeClaimsCreated.WithLabelValues(reason, nodePool, strconv.FormatBool(minValuesRelaxed)).Inc()
}

// NodeClaimTerminated counts one NodeClaim whose instance was terminated.
func (m *Metrics) NodeClaimTerminated(nodePool, capacityType, zone string) {
	if m == nil {
		return
	}
	m.nodeClaimsTerminated.WithLabelValues(nodePool, capacityType, zone).Inc()
}

// SetNodeAllocatable publishes a node's allocatable resources, replacing
// what was published for it before. The nodepool and well-known labels come
// from the node's labels.
func (m *Metrics) SetNodeAllocatable(node *corev1.Node) {
	if m == nil {
		return
	}
	common := make([]string, 0, 3+len(nodeLabels))
	common = append(common, node.Name, node.Labels[wellknown.LabelNodePool], "")
	for _, k := range nodeLabels {
		common = append(common, node.Labels[k])
	}
	published := make([][]string, 0, len(node.Status.Allocatable))
	for name := range node.Status.Allocatable {
		values := slices.Clone(common)
		values[2] = string(name)
		published = append(published, values)
	}
	m.allocatableMu.Lock()
	defer m.allocatableMu.Unlock()
	// A series whose labels are published again is set below; only those
	// that went away (a resource, or a label that changed) are deleted.
	for _, old := range m.allocatable[node.Name] {
		if !slices.ContainsFunc(published, func(v []string) bool { return slices.Equal(v, old) }) {
			m.nodesAllocatable.DeleteLabelValues(old...)
		}
	}
	for _, values := range published {
		q := node.Status.Allocatable[corev1.ResourceName(values[2])]
		m.nodesAllocatable.WithLabelValues(values...).Set(q.AsApproximateFloat64())
	}
	if len(published) == 0 {
		delete(m.allocatable, node.Name)
		return
	}
	m.allocatable[node.Name] = published
}

// DeleteNode removes a deleted node's gauges.
func (m *Metrics) DeleteNode(nodeName string) {
	if m == nil {
		return
	}
	m.allocatableMu.Lock()
	defer m.allocatableMu.Unlock()
	for _, values := range m.allocatable[nodeName] {
		m.nodesAllocatable.DeleteLabelValues(values...)
	}
	delete(m.allocatable, nodeName)
}
