package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/stevedore-autoscaler/stevedore/cloud"
	"github.com/stevedore-autoscaler/stevedore/state"
)

func newMetrics(t *testing.T) (*Metrics, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	m, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	return m, reg
}

func TestNewTwiceOnOneRegistryFails(t *testing.T) {
	_, reg := newMetrics(t)
	if _, err := New(reg); err == nil {
		t.Fatal("second New on the same registry succeeded")
	}
}

func TestNodePoolUsageAndLimit(t *testing.T) {
	m, reg := newMetrics(t)
	m.SetNodePool("default",
		corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")},
		corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100")})
	m.SetNodePool("gpu", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}, nil)

	want := `
# HELP karpenter_nodepools_limit Limits specified on the NodePool that restrict the quantity of resources provisioned. Labeled by nodepool name and resource type.
# TYPE karpenter_nodepools_limit gauge
karpenter_nodepools_limit{nodepool="default",resource_type="cpu"} 100
# HELP karpenter_nodepools_usage Resources of the NodeClaims a NodePool owns that are not being deleted. Labeled by nodepool name and resource type.
# TYPE karpenter_nodepools_usage gauge
karpenter_nodepools_usage{nodepool="default",resource_type="cpu"} 4
karpenter_nodepools_usage{nodepool="default",resource_type="memory"} 8.589934592e+09
karpenter_nodepools_usage{nodepool="gpu",resource_type="cpu"} 0.5
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), NameNodePoolUsage, NameNodePoolLimit); err != nil {
		t.Fatal(err)
	}

	// A resource that leaves the usage leaves the gauge; other pools stay.
	m.SetNodePool("default", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}, nil)
	if got := testutil.ToFloat64(m.nodePoolUsage.WithLabelValues("default", "cpu")); got != 2 {
		t.Errorf("usage cpu = %v, want 2", got)
	}
	if n := testutil.CollectAndCount(m.nodePoolUsage); n != 2 {
		t.Errorf("usage series = %d, want 2 (default/cpu, gpu/cpu)", n)
	}
	if n := testutil.CollectAndCount(m.nodePoolLimit); n != 0 {
		t.Errorf("limit series = %d, want 0", n)
	}

	m.DeleteNodePool("gpu")
	if n := testutil.CollectAndCount(m.nodePoolUsage); n != 1 {
		t.Errorf("usage series after delete = %d, want 1", n)
	}
}

func TestNodePoolAllowedDisruptions(t *testing.T) {
	m, reg := newMetrics(t)
	m.SetNodePoolAllowedDisruptions("default", "Drifted", 1)
	m.SetNodePoolAllowedDisruptions("default", "Empty", 0)
	m.SetNodePoolAllowedDisruptions("gpu", "Underutilized", 2147483647)
	m.SetNodePoolAllowedDisruptions("default", "Empty", 3) // replaces the 0
	want := `
# HELP karpenter_nodepools_allowed_disruptions Nodes of a NodePool that its disruption budgets allow to be disrupting at the same time, before subtracting those disrupting already. Labeled by nodepool name and disruption reason.
# TYPE karpenter_nodepools_allowed_disruptions gauge
karpenter_nodepools_allowed_disruptions{nodepool="default",reason="Drifted"} 1
karpenter_nodepools_allowed_disruptions{nodepool="default",reason="Empty"} 3
karpenter_nodepools_allowed_disruptions{nodepool="gpu",reason="Underutilized"} 2.147483647e+09
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), NameNodePoolAllowedDisruptions); err != nil {
		t.Fatal(err)
	}
	m.DeleteNodePool("default")
	if n := testutil.CollectAndCount(m.nodePoolAllowedDisruptions); n != 1 {
		t.Errorf("series after DeleteNodePool = %d, want 1 (gpu)", n)
	}
}

func TestNodePoolConsumingBudgets(t *testing.T) {
	m, reg := newMetrics(t)
	m.SetNodePoolConsumingBudgets("default", "Drifted", 2)
	m.SetNodePoolConsumingBudgets("gpu", "Empty", 0)
	m.SetNodePoolConsumingBudgets("default", "Drifted", 1) // replaces the 2
	want := `
# HELP karpenter_nodepools_nodes_consuming_budgets Nodes of a NodePool that count against its disruption budgets now: not ready, marked for disruption or being deleted. Labeled by nodepool name and disruption reason.
# TYPE karpenter_nodepools_nodes_consuming_budgets gauge
karpenter_nodepools_nodes_consuming_budgets{nodepool="default",reason="Drifted"} 1
karpenter_nodepools_nodes_consuming_budgets{nodepool="gpu",reason="Empty"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), NameNodePoolConsumingBudgets); err != nil {
		t.Fatal(err)
	}
	m.DeleteNodePool("default")
	if n := testutil.CollectAndCount(m.nodePoolConsumingBudgets); n != 1 {
		t.Errorf("series after DeleteNodePool = %d, want 1 (gpu)", n)
	}
}

func TestNodeClaimCounters(t *testing.T) {
	m, reg := newMetrics(t)
	m.NodeClaimCreated("provisioning", "default", false)
	m.NodeClaimCreated("provisioning", "default", false)
	m.NodeClaimCreated("disruption", "default", true)
	m.NodeClaimTerminated("default", "spot", "us-east-1a")

	want := `
# HELP karpenter_nodeclaims_created_total Number of NodeClaims created. Labeled by the reason they were created, the owning nodepool, and whether minValues were relaxed.
# TYPE karpenter_nodeclaims_created_total counter
karpenter_nodeclaims_created_total{min_values_relaxed="false",nodepool="default",reason="provisioning"} 2
karpenter_nodeclaims_created_total{min_values_relaxed="true",nodepool="default",reason="disruption"} 1
# HELP karpenter_nodeclaims_terminated_total Number of NodeClaims terminated. Labeled by the owning nodepool, capacity type and zone.
# TYPE karpenter_nodeclaims_terminated_total counter
karpenter_nodeclaims_terminated_total{capacity_type="spot",nodepool="default",zone="us-east-1a"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), NameNodeClaimsCreated, NameNodeClaimsTerminated); err != nil {
		t.Fatal(err)
	}
}

func TestNilMetricsIsANoOp(t *testing.T) {
	var m *Metrics
	m.SetNodePool("x", nil, nil)
	m.DeleteNodePool("x")
	m.SetNodePoolAllowedDisruptions("x", "Empty", 1)
	m.NodeClaimCreated("r", "x", false)
	m.NodeClaimTerminated("x", "spot", "z")
	m.WatchState(StateOptions{})
	m.NodeCreated("x", "z")
	m.StartScheduling("provisioner", 1)()
	if got := m.Decorate(nil, "x"); got != nil {
		t.Errorf("Decorate on nil Metrics = %v, want the provider", got)
	}
}

func TestLint(t *testing.T) {
	m, reg := newMetrics(t)
	m.SetNodePool("default", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}, nil)
	m.NodeClaimCreated("provisioning", "default", false)
	m.SetNodePoolAllowedDisruptions("default", "Drifted", 1)
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

// reportingCloud is a provider that reports launch failures; the methods of
// cloud.CloudProvider are never called.
type reportingCloud struct {
	cloud.CloudProvider
	report func(cloud.LaunchFailure)
}

func (r *reportingCloud) ReportLaunchFailuresTo(f func(cloud.LaunchFailure)) { r.report = f }

func TestCountLaunchFailures(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	cp := &reportingCloud{}
	m.CountLaunchFailures(cp)
	if cp.report == nil {
		t.Fatal("CountLaunchFailures did not hand the provider a reporter")
	}
	cp.report(cloud.LaunchFailure{Zone: "us-east-1a", ZoneID: "use1-az1", CapacityType: "spot", Reason: "InsufficientInstanceCapacity"})
	cp.report(cloud.LaunchFailure{Zone: "us-east-1a", ZoneID: "use1-az1", CapacityType: "spot", Reason: "InsufficientInstanceCapacity"})
	cp.report(cloud.LaunchFailure{Zone: "us-east-1b", ZoneID: "use1-az2", CapacityType: "on-demand", Reason: "VcpuLimitExceeded"})
	want := `
# HELP karpenter_cloudprovider_instance_launch_failures_total Number of instance launch (CreateFleet offering) failures, dimensioned by availability zone, zone ID, capacity type, and launch failure reason.
# TYPE karpenter_cloudprovider_instance_launch_failures_total counter
karpenter_cloudprovider_instance_launch_failures_total{capacity_type="on-demand",reason="VcpuLimitExceeded",zone="us-east-1b",zone_id="use1-az2"} 1
karpenter_cloudprovider_instance_launch_failures_total{capacity_type="spot",reason="InsufficientInstanceCapacity",zone="us-east-1a",zone_id="use1-az1"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "karpenter_cloudprovider_instance_launch_failures_total"); err != nil {
		t.Error(err)
	}
	// A provider that cannot report, and nil metrics, are left alone.
	m.CountLaunchFailures(nil)
	var none *Metrics
	none.CountLaunchFailures(cp)
}

// TestPodDurationsCountPodsOfTheStartSecond: a pod created in the second
// the collector started, after it, has a creation timestamp (whole seconds)
// before the start; it is counted all the same. A pod of an earlier second
// is not: its start may predate stevedore.
func TestPodDurationsCountPodsOfTheStartSecond(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 1, 2, 3, 4, 5, 600_000_000, time.UTC)
	clk := clocktesting.NewFakeClock(start)
	st := state.NewCluster()
	m.WatchState(StateOptions{State: st, Clock: clk})
	st.UpdateNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
	pod := func(name string, created time.Time) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name), CreationTimestamp: metav1.NewTime(created.Truncate(time.Second))},
			Spec:       corev1.PodSpec{NodeName: "n1"},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(start.Add(time.Second))},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(start.Add(2 * time.Second))},
			}},
		}
	}
	st.UpdatePod(pod("same-second", start.Add(100*time.Millisecond)))
	st.UpdatePod(pod("second-before", start.Add(-time.Second)))
	clk.Step(3 * time.Second)
	if _, err := reg.Gather(); err != nil {
		t.Fatal(err)
	}
	for name, h := range map[string]prometheus.Collector{
		"karpenter_pods_bound_duration_seconds":   m.lifecycle.podBound,
		"karpenter_pods_startup_duration_seconds": m.lifecycle.podStartup,
	} {
		if got := sampleCount(t, h); got != 1 {
			t.Errorf("%s counted %d pods, want 1 (the pod created in the start second)", name, got)
		}
	}
}

// sampleCount is the number of observations of the one histogram or
// summary c collects.
func sampleCount(t *testing.T, c prometheus.Collector) uint64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 1)
	c.Collect(ch)
	close(ch)
	var n uint64
	for metric := range ch {
		var pb dto.Metric
		if err := metric.Write(&pb); err != nil {
			t.Fatal(err)
		}
		switch {
		case pb.Histogram != nil:
			n += pb.Histogram.GetSampleCount()
		case pb.Summary != nil:
			n += pb.Summary.GetSampleCount()
		}
	}
	return n
}
