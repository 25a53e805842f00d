package metrics

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/karpenter/v1alpha1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/scheduling/overlay"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/scheduling/resources"
	"github.com/stevedore-autoscaler/stevedore/state"
)

// StateSource is the cluster state the gauges describe; *state.Cluster is
// one.
type StateSource interface {
	Snapshot(now time.Time) state.Snapshot
}

// StateOptions say where the gauges computed at scrape time come from.
type StateOptions struct {
	// State is the cluster state.
	State StateSource
	// Clock is the time source; default clock.RealClock{}.
	Clock clock.PassiveClock
	// Synced reports whether the cluster state has caught up with the API
	// server (karpenter_cluster_state_synced); nil means it always has.
	Synced func(ctx context.Context) bool
}

// WatchState makes the gauges that describe the cluster (nodes, pods,
// cluster state, NodePool cost, status conditions) follow o.State. They are
// computed from one snapshot on each scrape, as Karpenter's metrics
// controllers compute them from its cluster state every few seconds. The
// durations observed from what a scrape sees (pod startup, condition
// transitions, terminations) count each object once; those of pods count
// pods created after WatchState.
func (m *Metrics) WatchState(o StateOptions) {
	if m == nil {
		return
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	c := m.state
	c.mu.Lock()
	defer c.mu.Unlock()
	c.opts = &o
	c.since = o.Clock.Now()
}

// nodeLabelKeys are the well-known node labels copied onto the per-node
// gauges, and nodeLabelNames their metric label names, in the same order:
// the part of the key after the "/" in lower case with "-" replaced by
// "_" (node.kubernetes.io/instance-type becomes instance_type), as Karpenter
// names them. Deprecated keys are left out: they name the same label as
// their stable key.
var nodeLabelKeys, nodeLabelNames = func() (keys, names []string) {
	seen := map[string]bool{}
	for _, k := range wellknown.WellKnownLabels() {
		if wellknown.NormalizeLabel(k) != k {
			continue
		}
		i := strings.LastIndexByte(k, '/')
		if i < 0 {
			continue
		}
		n := strings.ReplaceAll(strings.ToLower(k[i+1:]), "-", "_")
		if seen[n] {
			continue
		}
		seen[n] = true
		keys = append(keys, k)
		names = append(names, n)
	}
	return keys, names
}()

// NodeLabelNames returns the metric label names of the well-known node
// labels on the per-node gauges, besides node_name, phase and
// resource_type.
func NodeLabelNames() []string { return slices.Clone(nodeLabelNames) }

// Names of the gauges computed from the state.
const (
	NameNodesAllocatable = Namespace + "_nodes_allocatable"
	namePodsState        = Namespace + "_pods_state"
)

// stateCollector computes the gauges that describe the cluster from a
// snapshot when scraped.
type stateCollector struct {
	m    *Metrics
	mu   sync.Mutex
	opts *StateOptions
	// since is when WatchState was called.
	since time.Time
	// unsyncedSince is when the state was first seen unsynced in a row of
	// unsynced scrapes; zero while synced.
	unsyncedSince time.Time
	// observedPods are the pods whose startup and binding were observed.
	startedPods, boundPods map[types.UID]bool
	// costErrors are the NodeClaims counted in the cost tracker errors.
	costErrors map[string]bool
	// overlays is the last evaluation of NodeOverlays for the NodePool
	// cost, with the objects it was made from.
	overlays struct {
		overlays []*v1alpha1.NodeOverlay
		pools    []*karpv1.NodePool
		types    []*packer.InstanceType
		result   *overlay.Result
	}

	descs map[string]*prometheus.Desc
	// status follows the status conditions of each kind, and deprecated
	// holds the metrics several kinds share.
	status     []*statusKind
	deprecated *deprecatedStatus
	// clusterStateOff turns off what Karpenter's
	// --disable-cluster-state-observability does; see
	// DisableClusterStateObservability.
	clusterStateOff bool
}

func newStateCollector(m *Metrics) *stateCollector {
	c := &stateCollector{m: m, startedPods: map[types.UID]bool{}, boundPods: map[types.UID]bool{}, costErrors: map[string]bool{}, descs: map[string]*prometheus.Desc{}}
	node := append(slices.Clone(nodeLabelNames), "node_name", "phase", LabelManaged)
	nodeRes := append(slices.Clone(node), LabelResourceType)
	desc := func(name, help string, labels ...string) {
		c.descs[name] = prometheus.NewDesc(name, help, labels, nil)
	}
	desc(NameNodesAllocatable, "Node allocatable are the resources allocatable by nodes.", nodeRes...)
	desc(Namespace+"_nodes_total_pod_requests", "Node total pod requests are the resources requested by pods bound to nodes, including the DaemonSet pods.", nodeRes...)
	desc(Namespace+"_nodes_total_pod_limits", "Node total pod limits are the resources specified by pod limits, including the DaemonSet pods.", nodeRes...)
	desc(Namespace+"_nodes_total_daemon_requests", "Node total daemon requests are the resource requested by DaemonSet pods bound to nodes.", nodeRes...)
	desc(Namespace+"_nodes_total_daemon_limits", "Node total daemon limits are the resources specified by DaemonSet pod limits.", nodeRes...)
	desc(Namespace+"_nodes_system_overhead", "Node system daemon overhead are the resources reserved for system overhead, the difference between the node's capacity and allocatable values are reported by the status.", nodeRes...)
	desc(Namespace+"_nodes_current_lifetime_seconds", "Node age in seconds.", node...)
	desc(Namespace+"_cluster_utilization_percent", "Utilization of allocatable resources by pod requests.", LabelResourceType)
	desc(namePodsState, "Pod state is the current state of pods. Labeled by the pod name, namespace, owner, node, whether the pod is scheduled, nodepool name, zone, architecture, capacity type, instance type, pod phase, and pod readiness.",
		"name", "namespace", "owner", "node", "scheduled", LabelNodePool, LabelZone, "arch", LabelCapacityType, LabelInstanceType, "phase", "ready", LabelManaged)
	desc(Namespace+"_pods_unbound_time_seconds", "The time from pod creation until the pod is bound.", "name", "namespace")
	desc(Namespace+"_pods_unstarted_time_seconds", "The time from pod creation until the pod is running.", "name", "namespace")
	desc(Namespace+"_pods_provisioning_unbound_time_seconds", "The time from when stevedore first thinks the pod can schedule until it binds. Note: this is calculated from a point in memory, not by the pod creation timestamp.", "name", "namespace")
	desc(Namespace+"_pods_provisioning_unstarted_time_seconds", "The time from when stevedore first thinks the pod can schedule until the pod is running. Note: this is calculated from a point in memory, not by the pod creation timestamp.", "name", "namespace")
	desc(Namespace+"_pods_provisioning_scheduling_undecided_time_seconds", "The time from when stevedore has seen a pod without making a scheduling decision for the pod. Note: this is calculated from a point in memory, not by the pod creation timestamp.", "name", "namespace")
	desc(Namespace+"_scheduler_queue_depth", "The number of pods currently waiting to be scheduled.", LabelController, LabelSchedulingID)
	desc(Namespace+"_scheduler_unfinished_work_seconds", "How many seconds of work has been done that is in progress and hasn't been observed by scheduling_duration_seconds.", LabelController, LabelSchedulingID)
	desc(Namespace+"_scheduler_pending_pods_by_effective_zone_count", "Pending pods dimensioned by effective zone constraint, the intersection of the zones the pod's node selector and required node affinity allow. Values: a zone name, 'flexible' (several or any zone), or 'none' (no zone).", LabelController, LabelZone)
	desc(Namespace+"_cluster_state_node_count", "Current count of nodes in cluster state.")
	desc(Namespace+"_cluster_state_synced", "Returns 1 if cluster state is synced and 0 otherwise. Synced checks that nodeclaims and nodes that are stored in the APIServer have the same representation as the cluster state.")
	desc(Namespace+"_cluster_state_unsynced_time_seconds", "The time for which cluster state is not synced.")
	desc(Namespace+"_nodepools_cost_total", "Total cost of the nodepool: the hourly price of the offerings of its NodeClaims. Not an authoritative source for billing.", LabelNodePool)
	desc(Namespace+"_cloudprovider_instance_type_cpu_cores", "VCPUs cores for a given instance type.", LabelInstanceType)
	desc(Namespace+"_cloudprovider_instance_type_memory_bytes", "Memory, in bytes, for a given instance type.", LabelInstanceType)
	desc(Namespace+"_cloudprovider_instance_type_offering_available", "Instance type offering availability, based on instance type, capacity type, and zone.", LabelInstanceType, LabelCapacityType, LabelZone)
	desc(Namespace+"_cloudprovider_instance_type_offering_price_estimate", "Instance type offering estimated hourly price used when making informed decisions on node cost calculation, based on instance type, capacity type, and zone.", LabelInstanceType, LabelCapacityType, LabelZone)
	return c
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
	for _, s := range c.status {
		s.describe(ch)
	}
	ch <- c.deprecated.count
	ch <- c.deprecated.current
	ch <- c.deprecated.terminating
}

// emit sends one gauge sample.
func (c *stateCollector) emit(ch chan<- prometheus.Metric, name string, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(c.descs[name], prometheus.GaugeValue, v, labels...)
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.collectScheduling(ch)
	c.collectOfferings(ch)
	if c.opts == nil {
		return
	}
	now := c.opts.Clock.Now()
	snap := c.opts.State.Snapshot(now)
	c.collectSync(ch, now, len(snap.Nodes))
	if !c.clusterStateOff {
		c.collectNodes(ch, snap, now)
	}
	c.collectPods(ch, snap, now)
	c.collectCost(ch, snap)
	for _, s := range c.status {
		if c.clusterStateOff && s.clusterState {
			continue
		}
		s.collect(ch, snap, now)
	}
}

// DisableClusterStateObservability turns off the metrics Karpenter's
// --disable-cluster-state-observability turns off: those of its metrics
// controllers of pods (karpenter_pods_state, the pod startup and binding
// durations and times, provisioning ones included), of nodes (the per-node
// gauges, karpenter_cluster_utilization_percent) and of NodePools
// (karpenter_nodepools_usage, _limit and _cost_total), and those of its
// status controllers of NodeClaims, Nodes and NodePools (operator_nodeclaim_*,
// operator_node_*, operator_nodepool_*, and the deprecated operator_* series
// of NodeClaims and NodePools). The EC2NodeClass status metrics stay, as in
// Karpenter. Call it before the metrics are first fed.
func (m *Metrics) DisableClusterStateObservability() {
	if m == nil {
		return
	}
	c := m.state
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clusterStateOff = true
}

// clusterStateObserved reports whether the cluster-state metrics are on.
func (m *Metrics) clusterStateObserved() bool {
	c := m.state
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.clusterStateOff
}

func (c *stateCollector) collectSync(ch chan<- prometheus.Metric, now time.Time, nodes int) {
	synced := true
	if c.opts.Synced != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		synced = c.opts.Synced(ctx)
		cancel()
	}
	unsynced := 0.0
	switch {
	case synced:
		c.unsyncedSince = time.Time{}
	case c.unsyncedSince.IsZero():
		c.unsyncedSince = now
	default:
		unsynced = now.Sub(c.unsyncedSince).Seconds()
	}
	c.emit(ch, Namespace+"_cluster_state_node_count", float64(nodes))
	c.emit(ch, Namespace+"_cluster_state_synced", boolFloat(synced))
	c.emit(ch, Namespace+"_cluster_state_unsynced_time_seconds", unsynced)
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// resourceLabel is Karpenter's resource_type value: the resource name in
// lower case with "-" replaced by "_".
func resourceLabel(name corev1.ResourceName) string {
	return strings.ReplaceAll(strings.ToLower(string(name)), "-", "_")
}

// quantityValue is Karpenter's value of a quantity: cores for CPU, the
// integer value otherwise.
func quantityValue(name corev1.ResourceName, q resource.Quantity) float64 {
	if name == corev1.ResourceCPU {
		return float64(q.MilliValue()) / 1000
	}
	return float64(q.Value())
}

func (c *stateCollector) collectNodes(ch chan<- prometheus.Metric, snap state.Snapshot, now time.Time) {
	allocatable, requested := corev1.ResourceList{}, corev1.ResourceList{}
	for _, n := range snap.Nodes {
		if n.Node == nil {
			continue
		}
		labels := make([]string, 0, len(nodeLabelKeys)+3)
		for _, k := range nodeLabelKeys {
			labels = append(labels, n.Node.Labels[k])
		}
		// A node is managed when a NodeClaim owns it.
		labels = append(labels, n.Node.Name, string(n.Node.Status.Phase), strconv.FormatBool(n.NodeClaim != nil))
		var podReq, podLim, dsReq, dsLim corev1.ResourceList
		for _, p := range n.Pods {
			// Each pod also counts 1 of the pods resource, as Karpenter
			// sums a node's pods.
			req := resources.Add(resources.Requests(p), onePod)
			lim := resources.Add(podLimits(p), onePod)
			podReq, podLim = resources.Add(podReq, req), resources.Add(podLim, lim)
			if isDaemon(p) {
				dsReq, dsLim = resources.Add(dsReq, req), resources.Add(dsLim, lim)
			}
		}
		for _, g := range []struct {
			name string
			rl   corev1.ResourceList
		}{
			{NameNodesAllocatable, n.Node.Status.Allocatable},
			{Namespace + "_nodes_total_pod_requests", podReq},
			{Namespace + "_nodes_total_pod_limits", podLim},
			{Namespace + "_nodes_total_daemon_requests", dsReq},
			{Namespace + "_nodes_total_daemon_limits", dsLim},
			{Namespace + "_nodes_system_overhead", resources.Subtract(n.Node.Status.Capacity, n.Node.Status.Allocatable)},
		} {
			for _, name := range sortedNames(g.rl) {
				c.emit(ch, g.name, quantityValue(name, g.rl[name]), append(slices.Clone(labels), resourceLabel(name))...)
			}
		}
		c.emit(ch, Namespace+"_nodes_current_lifetime_seconds", now.Sub(n.Node.CreationTimestamp.Time).Seconds(), labels...)
		allocatable = resources.Add(allocatable, n.Node.Status.Allocatable)
		requested = resources.Add(requested, podReq)
	}
	for _, name := range sortedNames(allocatable) {
		total := allocatable[name]
		if total.IsZero() {
			continue
		}
		used := requested[name]
		pct := 100 * float64(used.Value()) / float64(total.Value())
		if name == corev1.ResourceCPU {
			pct = 100 * float64(used.MilliValue()) / float64(total.MilliValue())
		}
		c.emit(ch, Namespace+"_cluster_utilization_percent", pct, resourceLabel(name))
	}
}

// onePod is one of the pods resource.
var onePod = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}

func sortedNames(rl corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(rl))
	for n := range rl {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// podLimits returns the limits of pod's containers (the larger of the sum of
// its containers and of each init container) plus its overhead.
func podLimits(pod *corev1.Pod) corev1.ResourceList {
	var sum corev1.ResourceList
	for _, ct := range pod.Spec.Containers {
		sum = resources.Add(sum, ct.Resources.Limits)
	}
	for _, ct := range pod.Spec.InitContainers {
		sum = resources.Max(sum, ct.Resources.Limits)
	}
	return resources.Add(sum, pod.Spec.Overhead)
}

func isDaemon(pod *corev1.Pod) bool {
	for _, o := range pod.OwnerReferences {
		if o.Kind == "DaemonSet" {
			return true
		}
	}
	return false
}

func podCondition(pod *corev1.Pod, t corev1.PodConditionType) (corev1.PodCondition, bool) {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c, c.Status == corev1.ConditionTrue
		}
	}
	return corev1.PodCondition{}, false
}

// owner is Karpenter's owner label: the self link of the pod's first owner.
func owner(pod *corev1.Pod) string {
	if len(pod.OwnerReferences) == 0 {
		return ""
	}
	o := pod.OwnerReferences[0]
	return fmt.Sprintf("/apis/%s/namespaces/%s/%ss/%s", o.APIVersion, pod.Namespace, strings.ToLower(o.Kind), o.Name)
}

func (c *stateCollector) collectPods(ch chan<- prometheus.Metric, snap state.Snapshot, now time.Time) {
	s := &c.m.scheduling
	s.mu.Lock()
	defer s.mu.Unlock()
	live := map[types.NamespacedName]bool{}
	liveUID := map[types.UID]bool{}
	zones := map[string]int{}
	visit := func(pod *corev1.Pod, n *state.StateNode) {
		key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
		live[key], liveUID[pod.UID] = true, true
		var labels map[string]string
		if n != nil && n.Node != nil {
			labels = n.Node.Labels
		}
		scheduledCond, scheduled := podCondition(pod, corev1.PodScheduled)
		readyCond, ready := podCondition(pod, corev1.PodReady)
		if pod.Spec.NodeName == "" && state.IsProvisionable(pod) {
			zones[effectiveZone(pod)]++
		}
		if c.clusterStateOff {
			return
		}
		c.emit(ch, namePodsState, 1, pod.Name, pod.Namespace, owner(pod), pod.Spec.NodeName, fmt.Sprint(scheduled),
			labels[wellknown.LabelNodePool], labels[wellknown.LabelTopologyZone], labels[wellknown.LabelArch],
			labels[wellknown.LabelCapacityType], labels[wellknown.LabelInstanceType], string(pod.Status.Phase), fmt.Sprint(ready),
			strconv.FormatBool(labels[wellknown.LabelNodePool] != ""))
		times := s.pods[key]
		pending := pod.Status.Phase == corev1.PodPending
		created := pod.CreationTimestamp.Time
		// Creation timestamps have whole seconds: a pod created in the
		// second WatchState was called in reads as older than it.
		fresh := !created.Before(c.since.Truncate(time.Second))
		if pending && !scheduled {
			c.emit(ch, Namespace+"_pods_unbound_time_seconds", now.Sub(created).Seconds(), pod.Name, pod.Namespace)
			if !times.schedulable.IsZero() {
				c.emit(ch, Namespace+"_pods_provisioning_unbound_time_seconds", now.Sub(times.schedulable).Seconds(), pod.Name, pod.Namespace)
			}
		}
		if scheduled && fresh && !c.boundPods[pod.UID] {
			c.boundPods[pod.UID] = true
			c.m.lifecycle.podBound.WithLabelValues().Observe(scheduledCond.LastTransitionTime.Sub(created).Seconds())
			if !times.schedulable.IsZero() {
				c.m.lifecycle.podProvisioningBound.WithLabelValues().Observe(scheduledCond.LastTransitionTime.Sub(times.schedulable).Seconds())
			}
		}
		if pending && !ready {
			c.emit(ch, Namespace+"_pods_unstarted_time_seconds", now.Sub(created).Seconds(), pod.Name, pod.Namespace)
			if !times.schedulable.IsZero() {
				c.emit(ch, Namespace+"_pods_provisioning_unstarted_time_seconds", now.Sub(times.schedulable).Seconds(), pod.Name, pod.Namespace)
			}
		}
		if ready && fresh && !c.startedPods[pod.UID] {
			c.startedPods[pod.UID] = true
			c.m.lifecycle.podStartup.WithLabelValues().Observe(readyCond.LastTransitionTime.Sub(created).Seconds())
			if !times.schedulable.IsZero() {
				c.m.lifecycle.podProvisioningStartup.WithLabelValues().Observe(readyCond.LastTransitionTime.Sub(times.schedulable).Seconds())
			}
			// Started: stevedore need not remember its provisioning
			// times any longer.
			delete(s.pods, key)
		}
		if !times.seen.IsZero() && times.decided.IsZero() && pod.Spec.NodeName == "" && !scheduled {
			c.emit(ch, Namespace+"_pods_provisioning_scheduling_undecided_time_seconds", now.Sub(times.seen).Seconds(), pod.Name, pod.Namespace)
		}
	}
	for _, n := range snap.Nodes {
		for _, p := range n.Pods {
			visit(p, n)
		}
	}
	for _, p := range snap.PendingPods {
		visit(p, nil)
	}
	for _, z := range sortedKeys(zones) {
		c.emit(ch, Namespace+"_scheduler_pending_pods_by_effective_zone_count", float64(zones[z]), ControllerProvisioner, z)
	}
	// Forget the pods that are gone.
	for k := range s.pods {
		if !live[k] {
			delete(s.pods, k)
		}
	}
	for _, m := range []map[types.UID]bool{c.startedPods, c.boundPods} {
		for uid := range m {
			if !liveUID[uid] {
				delete(m, uid)
			}
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Values of the zone label of the pending pods by effective zone besides
// zone names.
const (
	ZoneFlexible = "flexible"
	ZoneNone     = "none"
)

// effectiveZone is the zone a pending pod can only run in, "flexible" when
// it may run in several (or any), or "none" when its node selector and
// required node affinity leave no zone.
func effectiveZone(pod *corev1.Pod) string {
	var allowed []string // nil: any zone
	restrict := func(zones []string) {
		if allowed == nil {
			allowed = slices.Clone(zones)
			slices.Sort(allowed)
			return
		}
		allowed = slices.DeleteFunc(allowed, func(z string) bool { return !slices.Contains(zones, z) })
	}
	if z, ok := pod.Spec.NodeSelector[wellknown.LabelTopologyZone]; ok {
		restrict([]string{z})
	}
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		// Terms are alternatives: a zone allowed by any term is allowed.
		var union []string
		constrained := true
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			termZones := []string(nil)
			termConstrained := false
			for _, e := range term.MatchExpressions {
				if e.Key == wellknown.LabelTopologyZone && e.Operator == corev1.NodeSelectorOpIn {
					termZones, termConstrained = e.Values, true
				}
			}
			if !termConstrained {
				constrained = false
				break
			}
			union = append(union, termZones...)
		}
		if constrained && len(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) > 0 {
			restrict(union)
		}
	}
	switch {
	case allowed == nil:
		return ZoneFlexible
	case len(allowed) == 0:
		return ZoneNone
	case len(slices.Compact(allowed)) == 1:
		return allowed[0]
	}
	return ZoneFlexible
}

func (c *stateCollector) collectScheduling(ch chan<- prometheus.Metric) {
	s := &c.m.scheduling
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]runKey, 0, len(s.running))
	for k := range s.running {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b runKey) int { return strings.Compare(a.controller+"/"+a.id, b.controller+"/"+b.id) })
	for _, k := range keys {
		r := s.running[k]
		c.emit(ch, Namespace+"_scheduler_queue_depth", float64(r.pods), k.controller, k.id)
		c.emit(ch, Namespace+"_scheduler_unfinished_work_seconds", time.Since(r.started).Seconds(), k.controller, k.id)
	}
}

func (c *stateCollector) collectOfferings(ch chan<- prometheus.Metric) {
	for _, it := range c.m.offerings.sorted() {
		capacity := it.Capacity.ResourceList()
		if q, ok := capacity[corev1.ResourceCPU]; ok {
			c.emit(ch, Namespace+"_cloudprovider_instance_type_cpu_cores", float64(q.MilliValue())/1000, it.Name)
		}
		if q, ok := capacity[corev1.ResourceMemory]; ok {
			c.emit(ch, Namespace+"_cloudprovider_instance_type_memory_bytes", float64(q.Value()), it.Name)
		}
		for _, o := range it.Offerings {
			c.emit(ch, Namespace+"_cloudprovider_instance_type_offering_available", boolFloat(o.Available), it.Name, o.CapacityType, o.Zone)
			c.emit(ch, Namespace+"_cloudprovider_instance_type_offering_price_estimate", o.PricePerHour, it.Name, o.CapacityType, o.Zone)
		}
	}
}

// overlaid evaluates the snapshot's NodeOverlays over the instance types
// the cloud provider last returned, offered in every NodePool, and returns
// the result with those types by name; nil without overlays. The result is
// kept while the overlays, NodePools and types are the same objects.
func (c *stateCollector) overlaid(snap state.Snapshot) (*overlay.Result, map[string]*packer.InstanceType) {
	if len(snap.NodeOverlays) == 0 {
		return nil, nil
	}
	types := c.m.offerings.sorted()
	byName := make(map[string]*packer.InstanceType, len(types))
	for _, it := range types {
		byName[it.Name] = it
	}
	m := &c.overlays
	if m.result != nil && slices.Equal(m.overlays, snap.NodeOverlays) && slices.Equal(m.pools, snap.NodePools) && slices.Equal(m.types, types) {
		return m.result, byName
	}
	pools := make([]overlay.Pool, 0, len(snap.NodePools))
	for _, np := range snap.NodePools {
		labels := make(map[string]string, len(np.Spec.Template.Metadata.Labels))
		for k, v := range np.Spec.Template.Metadata.Labels {
			labels[k] = string(v)
		}
		pools = append(pools, overlay.Pool{Name: np.Name, Labels: labels, InstanceTypes: types})
	}
	m.overlays, m.pools, m.types = slices.Clone(snap.NodeOverlays), slices.Clone(snap.NodePools), types
	m.result = overlay.Evaluate(snap.NodeOverlays, pools)
	return m.result, byName
}

// collectCost publishes each NodePool's cost: the hourly price of the
// offerings its NodeClaims run in. A NodeClaim whose offering has no known
// price counts once in the cost tracker errors and adds nothing.
func (c *stateCollector) collectCost(ch chan<- prometheus.Metric, snap state.Snapshot) {
	overlays, byName := c.overlaid(snap)
	cost := map[string]float64{}
	for _, np := range snap.NodePools {
		cost[np.Name] = 0
	}
	live := map[string]bool{}
	for _, n := range snap.Nodes {
		nc := n.NodeClaim
		if nc == nil {
			continue
		}
		pool := nc.Labels[wellknown.LabelNodePool]
		live[nc.Name] = true
		price, ok := c.m.offerings.price(nc.Labels[wellknown.LabelInstanceType], nc.Labels[wellknown.LabelCapacityType], nc.Labels[wellknown.LabelTopologyZone])
		if it := byName[nc.Labels[wellknown.LabelInstanceType]]; ok && it != nil && overlays.Applies(pool) {
			// The price stevedore compares it by, as Karpenter's cost
			// includes what NodeOverlays change.
			for _, o := range overlays.Apply(pool, []*packer.InstanceType{it})[0].Offerings {
				if o.Zone == nc.Labels[wellknown.LabelTopologyZone] && o.CapacityType == nc.Labels[wellknown.LabelCapacityType] {
					price = o.PricePerHour
					break
				}
			}
		}
		if !ok {
			if !c.costErrors[nc.Name] && nc.Status.ProviderID != "" {
				c.costErrors[nc.Name] = true
				c.m.lifecycle.costTrackerErrors.WithLabelValues(pool).Inc()
			}
			continue
		}
		cost[pool] += price
	}
	for name := range c.costErrors {
		if !live[name] {
			delete(c.costErrors, name)
		}
	}
	for _, pool := range sortedKeys(cost) {
		if c.clusterStateOff {
			break
		}
		c.emit(ch, Namespace+"_nodepools_cost_total", cost[pool], pool)
	}
}
