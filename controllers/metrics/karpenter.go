package metrics

import (
	"runtime"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stevedore-autoscaler/stevedore/cloud"
	"github.com/stevedore-autoscaler/stevedore/internal/version"
)

// Label names used by the collectors of this file, Karpenter's.
const (
	LabelController   = "controller"
	LabelSchedulingID = "scheduling_id"
	LabelCode         = "code"
	LabelCategory     = "category"
	LabelMethod       = "method"
	LabelProvider     = "provider"
	LabelError        = "error"
	LabelBatcher      = "batcher"
	LabelZoneID       = "zone_id"
	LabelInstanceType = "instance_type"
)

// durationBuckets are Karpenter's buckets for scheduling and pod durations
// (seconds).
var durationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1,
	1.25, 1.5, 1.75, 2, 2.5, 3, 3.5, 4, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60, 120, 150, 300, 450, 600}

// summaryObjectives are Karpenter's quantiles for its summaries.
var summaryObjectives = map[float64]float64{0: 0, 0.5: 0.05, 0.9: 0.01, 0.99: 0.001, 1: 0}

// lifecycle holds the counters and durations of node, NodeClaim and pod
// lifecycles, the scheduler, the cloud provider and the disruption
// evaluation; the gauges that describe the cluster as it is are computed
// from the cluster state when scraped (see state.go).
type lifecycle struct {
	buildInfo *prometheus.GaugeVec

	nodesCreated             *prometheus.CounterVec
	nodesTerminated          *prometheus.CounterVec
	nodesTerminationDuration *prometheus.SummaryVec
	nodesLifetime            *prometheus.HistogramVec
	nodesDrained             *prometheus.CounterVec
	podsDrained              *prometheus.CounterVec
	evictionRequests         *prometheus.CounterVec

	nodeClaimTerminationDuration *prometheus.HistogramVec
	instanceTerminationDuration  *prometheus.HistogramVec

	podStartup              *prometheus.SummaryVec
	podBound                *prometheus.HistogramVec
	podProvisioningBound    *prometheus.HistogramVec
	podProvisioningStartup  *prometheus.HistogramVec
	podSchedulingDecision   *prometheus.HistogramVec
	schedulingDuration      *prometheus.HistogramVec
	unschedulablePods       *prometheus.GaugeVec
	ignoredPods             *prometheus.GaugeVec
	evaluationDuration      *prometheus.HistogramVec
	decisionsByNodePool     *prometheus.CounterVec
	eligibleNodes           *prometheus.GaugeVec
	consolidationTimeouts   *prometheus.CounterVec
	instanceStatusUnhealthy *prometheus.CounterVec
	cloudDuration           *prometheus.HistogramVec
	cloudErrors             *prometheus.CounterVec
	batchSize               *prometheus.HistogramVec
	batchTime               *prometheus.HistogramVec
	launchFailures          *prometheus.CounterVec
	terminationFailures     *prometheus.CounterVec
	costTrackerErrors       *prometheus.CounterVec
}

func (m *Metrics) registerLifecycle(reg prometheus.Registerer) error {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	}
	histogram := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	}
	summary := func(name, help string, labels ...string) *prometheus.SummaryVec {
		return prometheus.NewSummaryVec(prometheus.SummaryOpts{Name: name, Help: help, Objectives: summaryObjectives}, labels)
	}
	day := 24 * time.Hour
	var lifetimeBuckets []float64
	for _, d := range []time.Duration{15 * time.Minute, 30 * time.Minute, 45 * time.Minute, time.Hour, 2 * time.Hour, 4 * time.Hour,
		6 * time.Hour, 8 * time.Hour, 10 * time.Hour, 12 * time.Hour, 16 * time.Hour, 20 * time.Hour,
		day, 2 * day, 3 * day, 5 * day, 10 * day, 15 * day, 20 * day, 25 * day, 30 * day} {
		lifetimeBuckets = append(lifetimeBuckets, d.Seconds())
	}
	l := &m.lifecycle
	l.buildInfo = gauge(Namespace+"_build_info", "A metric with a constant '1' value labeled by version from which karpenter was built (here: stevedore's version, Go version and architecture, and VCS revision).", "version", "goversion", "goarch", "commit")
	l.nodesCreated = counter(Namespace+"_nodes_created_total", "Number of nodes created in total by Karpenter. Labeled by owning nodepool and zone.", LabelNodePool, LabelZone)
	l.nodesTerminated = counter(Namespace+"_nodes_terminated_total", "Number of nodes terminated in total by Karpenter. Labeled by owning nodepool and zone.", LabelNodePool, LabelZone)
	l.nodesTerminationDuration = summary(Namespace+"_nodes_termination_duration_seconds", "The time taken between a node's deletion request and the removal of its finalizer.", LabelNodePool)
	l.nodesLifetime = histogram(Namespace+"_nodes_lifetime_duration_seconds", "The lifetime duration of the nodes since creation.", lifetimeBuckets, LabelNodePool)
	l.nodesDrained = counter(Namespace+"_nodes_drained_total", "The total number of nodes drained by Karpenter.", LabelNodePool)
	l.podsDrained = counter(Namespace+"_pods_drained_total", "The total number of pods drained during node termination, labeled by reason.", LabelReason)
	l.evictionRequests = counter(Namespace+"_pods_eviction_requests_total", "The total number of pod eviction requests made, labeled by response code.", LabelCode)
	l.nodeClaimTerminationDuration = histogram(Namespace+"_nodeclaims_termination_duration_seconds", "Duration of NodeClaim termination in seconds.", prometheus.ExponentialBuckets(1, 2, 12), LabelNodePool)
	l.instanceTerminationDuration = histogram(Namespace+"_nodeclaims_instance_termination_duration_seconds", "Duration of CloudProvider Instance termination in seconds.", prometheus.ExponentialBuckets(1, 2, 11), LabelNodePool)
	l.podStartup = summary(Namespace+"_pods_startup_duration_seconds", "The time from pod creation until the pod is running.")
	l.podBound = histogram(Namespace+"_pods_bound_duration_seconds", "The time from pod creation until the pod is bound.", durationBuckets)
	l.podProvisioningBound = histogram(Namespace+"_pods_provisioning_bound_duration_seconds", "The time from when stevedore first thinks the pod can schedule until it binds. Note: this is calculated from a point in memory, not by the pod creation timestamp.", durationBuckets)
	l.podProvisioningStartup = histogram(Namespace+"_pods_provisioning_startup_duration_seconds", "The time from when stevedore first thinks the pod can schedule until the pod is running. Note: this is calculated from a point in memory, not by the pod creation timestamp.", durationBuckets)
	l.podSchedulingDecision = histogram(Namespace+"_pods_scheduling_decision_duration_seconds", "The time it takes to first try to schedule a pod after it has been seen.", durationBuckets)
	l.schedulingDuration = histogram(Namespace+"_scheduler_scheduling_duration_seconds", "Duration of scheduling simulations used for deprovisioning and provisioning in seconds.", durationBuckets, LabelController)
	l.unschedulablePods = gauge(Namespace+"_scheduler_unschedulable_pods_count", "The number of unschedulable Pods.", LabelController)
	l.ignoredPods = gauge(Namespace+"_scheduler_ignored_pods_count", "Number of pods ignored during scheduling.")
	l.evaluationDuration = histogram(Namespace+"_voluntary_disruption_decision_evaluation_duration_seconds", "Duration of the disruption decision evaluation process in seconds. Labeled by method and consolidation type.", durationBuckets, LabelReason, LabelConsolidationType)
	l.decisionsByNodePool = counter(Namespace+"_voluntary_disruption_decisions_by_nodepool_total", "Number of disruption decisions performed by nodepool. Labeled by nodepool name, disruption decision, reason, and consolidation type.", LabelNodePool, LabelDecision, LabelReason, LabelConsolidationType)
	l.eligibleNodes = gauge(Namespace+"_voluntary_disruption_eligible_nodes", "Number of nodes eligible for disruption. Labeled by disruption reason.", LabelReason)
	l.consolidationTimeouts = counter(Namespace+"_voluntary_disruption_consolidation_timeouts_total", "Number of times the Consolidation algorithm has reached a timeout. Labeled by consolidation type.", LabelConsolidationType)
	l.instanceStatusUnhealthy = counter(Namespace+"_interruption_instance_status_unhealthy_total", "Count of unhealthy instance statuses detected. Broken down by status check category.", LabelCategory)
	l.cloudDuration = histogram(Namespace+"_cloudprovider_duration_seconds", "Duration of cloud provider method calls. Labeled by the controller, method name and provider.", prometheus.DefBuckets, LabelController, LabelMethod, LabelProvider)
	l.cloudErrors = counter(Namespace+"_cloudprovider_errors_total", "Total number of errors returned from CloudProvider calls.", LabelController, LabelMethod, LabelProvider, LabelError)
	l.batchSize = histogram(Namespace+"_cloudprovider_batcher_batch_size", "Size of the request batch per batcher.", []float64{1, 2, 4, 5, 10, 15, 20, 25, 30, 40, 50, 100, 200, 300, 400, 500}, LabelBatcher)
	l.batchTime = histogram(Namespace+"_cloudprovider_batcher_batch_time_seconds", "Duration of the batching window per batcher.", prometheus.DefBuckets, LabelBatcher)
	l.launchFailures = counter(Namespace+"_cloudprovider_instance_launch_failures_total", "Number of instance launch (CreateFleet offering) failures, dimensioned by availability zone, zone ID, capacity type, and launch failure reason.", LabelZone, LabelZoneID, LabelCapacityType, LabelReason)
	l.terminationFailures = counter(Namespace+"_cloudprovider_instance_termination_failures_total", "Number of instance termination (TerminateInstances) failures, dimensioned by availability zone and zone ID.", LabelZone, LabelZoneID)
	l.costTrackerErrors = counter(Namespace+"_nodepools_cost_tracker_errors_total", "Number of errors encountered during cost tracking operations: NodeClaims whose offering price is unknown. Labeled by nodepool.", LabelNodePool)

	for _, c := range []prometheus.Collector{l.buildInfo, l.nodesCreated, l.nodesTerminated, l.nodesTerminationDuration, l.nodesLifetime,
		l.nodesDrained, l.podsDrained, l.evictionRequests, l.nodeClaimTerminationDuration, l.instanceTerminationDuration,
		l.podStartup, l.podBound, l.podProvisioningBound, l.podProvisioningStartup, l.podSchedulingDecision,
		l.schedulingDuration, l.unschedulablePods, l.ignoredPods, l.evaluationDuration, l.decisionsByNodePool,
		l.eligibleNodes, l.consolidationTimeouts, l.instanceStatusUnhealthy, l.cloudDuration, l.cloudErrors,
		l.batchSize, l.batchTime, l.launchFailures, l.terminationFailures, l.costTrackerErrors} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	info := version.Get()
	l.buildInfo.WithLabelValues(info.Version, runtime.Version(), runtime.GOARCH, info.Revision).Set(1)
	// Karpenter starts the timeout counters of the searches that can time
	// out at zero. stevedore's consolidation searches have no timeout, so
	// these stay at zero.
	for _, ct := range []string{"multi", "single"} {
		l.consolidationTimeouts.WithLabelValues(ct).Add(0)
	}
	return nil
}

// NodeCreated counts a node that registered for a NodeClaim of nodePool.
func (m *Metrics) NodeCreated(nodePool, zone string) {
	if m == nil {
		return
	}
	m.lifecycle.nodesCreated.WithLabelValues(nodePool, zone).Inc()
}

// NodeTerminated records a node whose termination finished: its finalizer
// is removed. deleted is when its deletion was requested and created when
// it was created.
func (m *Metrics) NodeTerminated(nodePool, zone string, created, deleted, now time.Time) {
	if m == nil {
		return
	}
	m.lifecycle.nodesTerminated.WithLabelValues(nodePool, zone).Inc()
	if !deleted.IsZero() {
		m.lifecycle.nodesTerminationDuration.WithLabelValues(nodePool).Observe(now.Sub(deleted).Seconds())
	}
	if !created.IsZero() {
		m.lifecycle.nodesLifetime.WithLabelValues(nodePool).Observe(now.Sub(created).Seconds())
	}
}

// NodeDrained counts a node whose pods have all been evicted.
func (m *Metrics) NodeDrained(nodePool string) {
	if m == nil {
		return
	}
	m.lifecycle.nodesDrained.WithLabelValues(nodePool).Inc()
}

// PodDrained counts a pod evicted while its node was drained, by why the
// node was drained (the NodeClaim's disruption reason, or "deleted").
func (m *Metrics) PodDrained(reason string) {
	if m == nil {
		return
	}
	m.lifecycle.podsDrained.WithLabelValues(reason).Inc()
}

// EvictionRequested counts an eviction request by its HTTP response code
// (200, 404, 429, 500, ...).
func (m *Metrics) EvictionRequested(code int) {
	if m == nil {
		return
	}
	m.lifecycle.evictionRequests.WithLabelValues(strconv.Itoa(code)).Inc()
}

// NodeClaimFinalized records the durations of a NodeClaim whose finalizer
// was removed: from its deletion, and from when its instance started
// terminating (zero when it had none).
func (m *Metrics) NodeClaimFinalized(nodePool string, deleted, instanceTerminating, now time.Time) {
	if m == nil {
		return
	}
	if !deleted.IsZero() {
		m.lifecycle.nodeClaimTerminationDuration.WithLabelValues(nodePool).Observe(now.Sub(deleted).Seconds())
	}
	if !instanceTerminating.IsZero() {
		m.lifecycle.instanceTerminationDuration.WithLabelValues(nodePool).Observe(now.Sub(instanceTerminating).Seconds())
	}
}

// DisruptionEvaluated records how long evaluating the disruption method took
// and how many candidates it had.
func (m *Metrics) DisruptionEvaluated(reason, consolidationType string, took time.Duration, eligible int) {
	if m == nil {
		return
	}
	m.lifecycle.evaluationDuration.WithLabelValues(reason, consolidationType).Observe(took.Seconds())
	m.lifecycle.eligibleNodes.WithLabelValues(reason).Set(float64(eligible))
}

// DisruptionDecisionByNodePool counts a started disruption command once
// for each NodePool of its candidates.
func (m *Metrics) DisruptionDecisionByNodePool(nodePool, decision, reason, consolidationType string) {
	if m == nil {
		return
	}
	m.lifecycle.decisionsByNodePool.WithLabelValues(nodePool, decision, reason, consolidationType).Inc()
}

// InstanceStatusUnhealthy counts an unhealthy instance status, by category
// (instance_status, system_status or event_status).
func (m *Metrics) InstanceStatusUnhealthy(category string) {
	if m == nil {
		return
	}
	m.lifecycle.instanceStatusUnhealthy.WithLabelValues(category).Inc()
}

// CountLaunchFailures makes cp hand the offerings its launches fail in to
// InstanceLaunchFailed, if cp can report them (cloud.LaunchFailureReporter).
func (m *Metrics) CountLaunchFailures(cp cloud.CloudProvider) {
	r, ok := cp.(cloud.LaunchFailureReporter)
	if m == nil || !ok {
		return
	}
	r.ReportLaunchFailuresTo(func(f cloud.LaunchFailure) {
		m.InstanceLaunchFailed(f.Zone, f.ZoneID, f.CapacityType, f.Reason)
	})
}

// InstanceLaunchFailed counts an offering a launch failed in.
func (m *Metrics) InstanceLaunchFailed(zone, zoneID, capacityType, reason string) {
	if m == nil {
		return
	}
	m.lifecycle.launchFailures.WithLabelValues(zone, zoneID, capacityType, reason).Inc()
}
