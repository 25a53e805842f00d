// Package metrics defines the Prometheus metrics that stevedore's controllers
// publish, under Karpenter's names, types and label names so that dashboards
// and alerts written for Karpenter keep working.
//
// A Metrics is created from a prometheus.Registerer; there is no global
// registry, so tests and the simulator each get their own. It publishes
// every karpenter_* and operator_* metric of Karpenter v1.14's metrics
// reference (testdata/karpenter-metrics.txt lists them with their types and
// label names; the interruption queue's own three are registered by package
// queue, and the Balanced consolidation metrics elsewhere):
//
//   - counters and durations recorded by the controllers as things happen
//     (NodeClaims and nodes created, disrupted, drained and terminated,
//     evictions, scheduling runs, disruption decisions; see karpenter.go,
//     disrupted.go, voluntary.go and scheduler.go);
//   - the cloud provider's calls, errors and instance types, through the
//     provider Decorate wraps (cloud.go);
//   - gauges that describe the cluster (per-node resources, pods, cluster
//     state, NodePool cost, status conditions of NodeClaims, Nodes,
//     NodePools and EC2NodeClasses), computed from the cluster state that
//     WatchState names when the registry is scraped (state.go, status.go);
//   - the status condition transitions and terminations of those objects,
//     observed when they change or go (ObserveStatus, WatchStatus).
//
// What stevedore cannot produce as Karpenter does is said where it is
// recorded: it sends its EC2 calls one at a time (every batch has one
// request) and its consolidation search has no timeout.
package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
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
	// LabelManaged says whether a node belongs to a NodePool (a NodeClaim
	// owns it; for pods, their node has a NodePool label).
	LabelManaged = "managed"
)

// Metrics holds the collectors. Create it with New; all methods are safe for
// concurrent use.
type Metrics struct {
	nodePoolUsage              *prometheus.GaugeVec
	nodePoolLimit              *prometheus.GaugeVec
	nodePoolAllowedDisruptions *prometheus.GaugeVec
	nodePoolConsumingBudgets   *prometheus.GaugeVec
	nodeClaimsCreated          *prometheus.CounterVec
	nodeClaimsTerminated       *prometheus.CounterVec

	// lifecycle holds the counters and durations of lifecycles, the
	// scheduler and the cloud provider; see karpenter.go.
	lifecycle lifecycle
	// scheduling remembers scheduling runs and pod provisioning times; see
	// scheduler.go.
	scheduling scheduling
	// offerings are the instance types the cloud provider returned last;
	// see cloud.go.
	offerings offerings
	// state computes the gauges that describe the cluster; see state.go.
	state *stateCollector

	// Disruption counters; see disrupted.go.
	nodeClaimsDisrupted          *prometheus.CounterVec
	nodeClaimsUnhealthyDisrupted *prometheus.CounterVec

	// The disruption controller's collectors; see voluntary.go.
	voluntary voluntary
	balanced  balancedMetrics

	// overheadMismatches counts DaemonSet pods larger than the room kept
	// for them; see overhead.go.
	overheadMismatches *prometheus.CounterVec

	// pricingFallback says whether on-demand prices are the pricing API's;
	// see pricing.go.
	pricingFallback prometheus.Gauge
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
		scheduling: scheduling{running: map[runKey]run{}, pods: map[types.NamespacedName]podTimes{}},
		offerings:  offerings{types: map[string]*packer.InstanceType{}},
	}
	m.state = newStateCollector(m)
	kinds, deprecated := statusKinds()
	m.state.status = kinds
	m.state.deprecated = deprecated
	collectors := []prometheus.Collector{m.nodePoolUsage, m.nodePoolLimit, m.nodePoolAllowedDisruptions, m.nodePoolConsumingBudgets, m.nodeClaimsCreated, m.nodeClaimsTerminated, m.state}
	for _, k := range kinds {
		collectors = append(collectors, k.collectors()...)
	}
	collectors = append(collectors, deprecated.collectors()...)
	for _, c := range collectors {
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
	if err := m.registerLifecycle(reg); err != nil {
		return nil, err
	}
	if err := m.registerOverhead(reg); err != nil {
		return nil, err
	}
	if err := m.registerPricing(reg); err != nil {
		return nil, err
	}
	return m, nil
}

// SetNodePool publishes a NodePool's usage and limits, replacing what was
// published for it before (a resource that left the usage or the limits
// disappears from the gauge).
func (m *Metrics) SetNodePool(nodePool string, usage, limits corev1.ResourceList) {
	if m == nil || !m.clusterStateObserved() {
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
