package metrics

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/cloud"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/scheduling/resources"
	"github.com/stevedore-autoscaler/stevedore/state"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// fakeCloud answers every call; Delete fails.
type fakeCloud struct{ cloud.CloudProvider }

func (fakeCloud) Name() string { return "aws" }
func (fakeCloud) GetInstanceTypes(context.Context, *karpv1.NodePool) ([]*packer.InstanceType, error) {
	return []*packer.InstanceType{{
		Name:     "m5.large",
		Capacity: resources.NewVector(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi")}),
		Offerings: []packer.Offering{
			{Zone: "us-east-1a", CapacityType: "on-demand", PricePerHour: 0.096, Available: true},
			{Zone: "us-east-1a", CapacityType: "spot", PricePerHour: 0.04, Available: false},
		},
	}}, nil
}
func (fakeCloud) Delete(context.Context, *karpv1.NodeClaim) error    { return errors.New("boom") }
func (fakeCloud) GetSupportedNodeClasses() []schema.GroupVersionKind { return nil }

func cond(typ, status string, at time.Time) metav1.Condition {
	return metav1.Condition{Type: typ, Status: metav1.ConditionStatus(status), Reason: typ + status, LastTransitionTime: metav1.NewTime(at)}
}

// exerciseState builds a cluster with one of everything the state gauges
// describe: a NodePool, an EC2NodeClass, a node with its NodeClaim and a
// DaemonSet pod and a ready pod, and a pending pod.
// claimLabels are the labels of the node and NodeClaim of exerciseState.
var claimLabels = map[string]string{
	"karpenter.sh/nodepool": "default", "karpenter.k8s.aws/ec2nodeclass": "default",
	"node.kubernetes.io/instance-type": "m5.large", "karpenter.sh/capacity-type": "on-demand",
	"topology.kubernetes.io/zone": "us-east-1a", "kubernetes.io/arch": "amd64", "karpenter.sh/initialized": "true",
}

// deletingAt is when the NodeClaim and EC2NodeClass of exerciseState began
// to be deleted.
var deletingAt = metav1.NewTime(t0.Add(time.Minute))

func exerciseState(clk *clocktesting.FakeClock) *state.Cluster {
	st := state.NewCluster()
	labels := claimLabels
	deleting := deletingAt
	st.UpdateNodePool(&karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Status: karpv1.NodePoolStatus{Conditions: []metav1.Condition{cond("Ready", "True", t0)}}})
	st.UpdateEC2NodeClass(&awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default", DeletionTimestamp: &deleting, Finalizers: []string{"x"}},
		Status: awsv1.EC2NodeClassStatus{Conditions: []metav1.Condition{cond("Ready", "True", t0)}}})
	st.UpdateNodeClaim(&karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-abc", Labels: labels, DeletionTimestamp: &deleting, Finalizers: []string{"x"}},
		Status: karpv1.NodeClaimStatus{ProviderID: "aws:///us-east-1a/i-1", NodeName: "n1",
			Conditions: []metav1.Condition{cond("Launched", "True", t0), cond("Ready", "Unknown", t0)}}})
	st.UpdateNode(&corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: labels, CreationTimestamp: metav1.NewTime(t0)},
		Spec:       corev1.NodeSpec{ProviderID: "aws:///us-east-1a/i-1"},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1930m"), corev1.ResourceMemory: resource.MustParse("7Gi")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastTransitionTime: metav1.NewTime(t0)}},
		},
	})
	container := corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")},
	}}
	created := metav1.NewTime(clk.Now())
	ready := []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(clk.Now().Add(time.Second))},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(clk.Now().Add(5 * time.Second))},
	}
	st.UpdatePod(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "ds-1", UID: "u-ds", CreationTimestamp: created,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds"}}},
		Spec:   corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{container}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: ready},
	})
	st.UpdatePod(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "app-1", UID: "u-app", CreationTimestamp: created,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "app"}}},
		Spec:   corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{container}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: ready},
	})
	st.UpdatePod(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pending-1", UID: "u-pending", CreationTimestamp: created},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{container}, NodeSelector: map[string]string{"topology.kubernetes.io/zone": "us-east-1a"}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}},
	})
	// A NodeClaim whose offering has no known price.
	st.UpdateNodeClaim(&karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-unpriced", Labels: map[string]string{"karpenter.sh/nodepool": "default", "node.kubernetes.io/instance-type": "x9.huge"}},
		Status: karpv1.NodeClaimStatus{ProviderID: "aws:///us-east-1a/i-9"}})
	st.UpdatePod(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pending-2", UID: "u-pending-2", CreationTimestamp: created},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{container}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}},
	})
	return st
}

// exercise records at least one sample of every metric m publishes: it
// follows a cluster state, calls every recorder and scrapes in between, so
// that transitions and terminations are observed.
func exercise(t *testing.T, m *Metrics, scrape func()) {
	t.Helper()
	clk := clocktesting.NewFakeClock(t0)
	m.WatchState(StateOptions{Clock: clk, Synced: func(context.Context) bool { return false }})
	clk.Step(time.Hour)
	st := exerciseState(clk)
	m.WatchState(StateOptions{State: st, Clock: clk, Synced: func(context.Context) bool { return false }})
	observeSnapshot(m, st, clk.Now())
	// update changes an object in the state and has its status observed,
	// as the informers do.
	update := func(o client.Object) {
		switch o := o.(type) {
		case *karpv1.NodePool:
			st.UpdateNodePool(o)
		case *karpv1.NodeClaim:
			st.UpdateNodeClaim(o)
		case *corev1.Node:
			st.UpdateNode(o)
		case *awsv1.EC2NodeClass:
			st.UpdateEC2NodeClass(o)
		}
		m.ObserveStatus(o)
	}

	cp := m.Decorate(fakeCloud{}, "provisioner")
	if _, err := cp.GetInstanceTypes(context.Background(), &karpv1.NodePool{}); err != nil {
		t.Fatal(err)
	}
	_ = cp.Delete(context.Background(), &karpv1.NodeClaim{})

	app := types.NamespacedName{Namespace: "default", Name: "app-1"}
	pending := types.NamespacedName{Namespace: "default", Name: "pending-1"}
	undecided := types.NamespacedName{Namespace: "default", Name: "pending-2"}
	m.PodsSeen([]types.NamespacedName{app, pending, undecided}, clk.Now())
	m.PodsDecided([]types.NamespacedName{app, pending}, nil, clk.Now())
	m.StartScheduling(ControllerProvisioner, 3) // still running when scraped
	m.StartScheduling(ControllerDisruption, 1)()
	m.SchedulingResult(ControllerProvisioner, 1, 0)
	scrape()

	m.SetNodePool("default", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")})
	m.SetNodePoolAllowedDisruptions("default", "Empty", 1)
	m.SetNodePoolConsumingBudgets("default", "Empty", 0)
	m.NodeClaimCreated("provisioning", "default", false)
	m.NodeClaimTerminated("default", "spot", "us-east-1a")
	m.NodeClaimDisrupted("expired", "default", "spot")
	m.NodeClaimUnhealthyDisrupted("Ready", "default", "spot", "ami-1")
	m.NodeClaimFinalized("default", t0, t0.Add(time.Second), t0.Add(time.Minute))
	m.DisruptionDecision("delete", "empty", "empty")
	m.DisruptionDecisionByNodePool("default", "delete", "empty", "empty")
	m.DisruptionEvaluated("underutilized", "single", time.Millisecond, 3)
	m.DisruptionFailedValidation("single")
	m.DisruptionQueueFailure("replace", "underutilized", "single")
	m.NodeCreated("default", "us-east-1a")
	m.NodeDrained("default")
	m.PodDrained("underutilized")
	m.EvictionRequested(200)
	m.NodeTerminated("default", "us-east-1a", t0, t0.Add(time.Minute), t0.Add(2*time.Minute))
	m.InstanceStatusUnhealthy("event_status")
	m.InstanceLaunchFailed("us-east-1a", "use1-az1", "spot", "InsufficientInstanceCapacity")

	// Conditions change; the objects being deleted go, the others stay
	// terminating.
	clk.Step(time.Minute)
	now := clk.Now()
	for _, name := range []string{"default", "gone"} {
		update(&karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name, DeletionTimestamp: &metav1.Time{Time: now}, Finalizers: []string{"x"}},
			Status: karpv1.NodePoolStatus{Conditions: []metav1.Condition{cond("Ready", "False", now)}}})
		update(&corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "n-" + name, CreationTimestamp: metav1.NewTime(t0), DeletionTimestamp: &metav1.Time{Time: now}, Finalizers: []string{"x"}},
			Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(now)}}},
		})
	}
	update(&karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "gone", DeletionTimestamp: &metav1.Time{Time: now}, Finalizers: []string{"x"}},
		Status: karpv1.NodeClaimStatus{Conditions: []metav1.Condition{cond("Launched", "False", now)}}})
	update(&awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "gone", DeletionTimestamp: &metav1.Time{Time: now}, Finalizers: []string{"x"}},
		Status: awsv1.EC2NodeClassStatus{Conditions: []metav1.Condition{cond("Ready", "False", now)}}})
	scrape()
	clk.Step(time.Minute)
	now = clk.Now()
	for _, name := range []string{"default", "gone"} {
		update(&corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "n-" + name, CreationTimestamp: metav1.NewTime(t0), DeletionTimestamp: &metav1.Time{Time: now}, Finalizers: []string{"x"}},
			Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now)}}},
		})
	}
	update(&karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default", DeletionTimestamp: &metav1.Time{Time: now}, Finalizers: []string{"x"}},
		Status: karpv1.NodePoolStatus{Conditions: []metav1.Condition{cond("Ready", "True", now)}}})
	update(&awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default", DeletionTimestamp: &deletingAt, Finalizers: []string{"x"}},
		Status: awsv1.EC2NodeClassStatus{Conditions: []metav1.Condition{cond("Ready", "False", now)}}})
	update(&karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-abc", Labels: claimLabels, DeletionTimestamp: &deletingAt, Finalizers: []string{"x"}},
		Status: karpv1.NodeClaimStatus{ProviderID: "aws:///us-east-1a/i-1", NodeName: "n1",
			Conditions: []metav1.Condition{cond("Launched", "True", t0), cond("Ready", "True", now)}}})
	st.DeleteNodePool("gone")
	st.DeleteNode("n-gone")
	st.DeleteNodeClaim("gone")
	st.DeleteEC2NodeClass("gone")
	for _, o := range []client.Object{&karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "gone"}}, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n-gone"}},
		&karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "gone"}}, &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "gone"}}} {
		m.ObserveStatusGone(o)
	}
	scrape()
}

// observeSnapshot observes the status of every object of st, as the
// status watch does when it starts.
func observeSnapshot(m *Metrics, st *state.Cluster, now time.Time) {
	snap := st.Snapshot(now)
	for _, np := range snap.NodePools {
		m.ObserveStatus(np)
	}
	for _, nc := range snap.NodeClasses {
		m.ObserveStatus(nc)
	}
	for _, n := range snap.Nodes {
		if n.NodeClaim != nil {
			m.ObserveStatus(n.NodeClaim)
		}
		if n.Node != nil {
			m.ObserveStatus(n.Node)
		}
	}
}
