package informer_test

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	"github.com/stevedore-autoscaler/stevedore/api/crds"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/state"
	"github.com/stevedore-autoscaler/stevedore/state/informer"
	"github.com/stevedore-autoscaler/stevedore/test/apiserver"
)

// TestConvergesWithAPIServer runs the informers against a real API server
// and checks that the state follows what is created there.
func TestConvergesWithAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real API server")
	}
	all, err := crds.All()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := apiserver.Start(apiserver.Options{CRDs: all})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })

	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, karpv1.AddToScheme, awsv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	kube, err := client.New(srv.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	informers, err := cache.New(srv.Config, cache.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	st := state.NewCluster()
	if err := informer.RegisterInformers(ctx, informers, st); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- informers.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("cache: %v", err)
		}
	})
	if !informers.WaitForCacheSync(ctx) {
		t.Fatal("informers did not sync")
	}

	const providerID = "aws:///us-east-1a/i-0123456789abcdef0"
	nodeClassRef := &karpv1.NodeClassReference{Group: wellknown.GroupAWS, Kind: "EC2NodeClass", Name: "default"}
	arch := karpv1.NodeSelectorRequirementWithMinValues{Key: wellknown.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{wellknown.ArchAMD64}}
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	np.Spec.Template.Spec.NodeClassRef = nodeClassRef
	np.Spec.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{arch}
	create(ctx, t, kube, np)

	nc := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "default-x1", Labels: map[string]string{wellknown.LabelNodePool: "default"}},
		Spec: karpv1.NodeClaimSpec{
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{arch},
			Resources:    karpv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
			NodeClassRef: nodeClassRef,
		},
	}
	create(ctx, t, kube, nc)
	allocatable := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")}
	nc.Status.ProviderID = providerID
	nc.Status.Allocatable = allocatable
	nc.Status.Capacity = allocatable
	nc.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeLaunched, Status: metav1.ConditionTrue, Reason: "Launched", Message: "", LastTransitionTime: metav1.Now()}}
	if err := kube.Status().Update(ctx, nc); err != nil {
		t.Fatalf("NodeClaim status: %v", err)
	}

	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "ip-10-0-0-1.ec2.internal", Labels: map[string]string{
			wellknown.LabelNodePool: "default", wellknown.LabelArch: wellknown.ArchAMD64, wellknown.LabelHostname: "ip-10-0-0-1.ec2.internal",
		}},
		Spec: corev1.NodeSpec{ProviderID: providerID},
	}
	create(ctx, t, kube, node)
	node.Status.Allocatable = allocatable
	node.Status.Capacity = allocatable
	if err := kube.Status().Update(ctx, node); err != nil {
		t.Fatalf("Node status: %v", err)
	}

	container := corev1.Container{Name: "c", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
	}}
	bound := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "bound"},
		Spec:       corev1.PodSpec{NodeName: node.Name, Containers: []corev1.Container{container}},
	}
	create(ctx, t, kube, bound)
	pending := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pending"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{container}},
	}
	create(ctx, t, kube, pending)
	pending.Status.Phase = corev1.PodPending
	pending.Status.Conditions = []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: "0/1 nodes are available", LastTransitionTime: metav1.Now(),
	}}
	if err := kube.Status().Update(ctx, pending); err != nil {
		t.Fatalf("pending pod status: %v", err)
	}

	// A DaemonSet without a pod yet, and a LimitRange (created after the
	// pods, which it would otherwise give defaults) whose default the
	// DaemonSet's overhead takes.
	create(ctx, t, kube, &corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "defaults"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type: corev1.LimitTypeContainer, Default: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
		}}},
	})
	labels := map[string]string{"app": "agent"}
	create(ctx, t, kube, &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "agent"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				// Not for the node above, which would otherwise
				// expect its pod while it starts.
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{"example.com/agent": "true"},
					Containers:   []corev1.Container{{Name: "agent", Image: "registry.k8s.io/pause:3.10"}},
				},
			},
		},
	})

	// Poll for correctness only: the informers deliver asynchronously.
	var s state.Snapshot
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if !st.Synced(ctx, kube) {
			return false, nil
		}
		s = st.Snapshot(time.Now())
		if len(s.Nodes) != 1 || s.Nodes[0].Node == nil || len(s.Nodes[0].Pods) != 1 || len(s.NodePools) != 1 ||
			len(s.LimitRanges) != 1 || len(s.DaemonSets) != 1 {
			return false, nil
		}
		return len(s.ProvisionablePods()) == 1, nil
	})
	if err != nil {
		t.Fatalf("the state did not converge: %v; last snapshot: %d nodes, %d pending pods, %d node pools", err, len(s.Nodes), len(s.PendingPods), len(s.NodePools))
	}

	sn := s.Nodes[0]
	if !sn.Managed() || sn.InFlight() || sn.NodeClaim.Name != nc.Name || sn.ProviderID() != providerID {
		t.Errorf("state node not joined: claim %v, node %v", sn.NodeClaim != nil, sn.Node != nil)
	}
	in := s.PackerInput(s.ProvisionablePods(), nil, packer.PreferenceScore)
	if len(in.Nodes) != 1 {
		t.Fatalf("packer nodes: %d", len(in.Nodes))
	}
	pn := in.Nodes[0]
	if pn.Name != node.Name || pn.NodePool != "default" || pn.InFlight || pn.Unschedulable {
		t.Errorf("packer node: %+v", pn)
	}
	if len(pn.Pods) != 1 || pn.Pods[0].Name != "bound" {
		t.Errorf("packer node pods: %v", pn.Pods)
	}
	if got := pn.Allocatable.Get(corev1.ResourceCPU); got != 2000 {
		t.Errorf("packer node cpu %d, want 2000", got)
	}
	if len(in.Pods) != 1 || in.Pods[0].Name != "pending" || !state.IsProvisionable(in.Pods[0]) {
		t.Errorf("packer pods: %v", in.Pods)
	}
	if len(in.DaemonSetPods) != 1 || in.DaemonSetPods[0].Spec.Containers[0].Resources.Requests.Cpu().String() != "2" {
		t.Errorf("DaemonSet pods %v, want one requesting the LimitRange's 2 cpu", in.DaemonSetPods)
	}
	if in.NamespaceLabels["default"][corev1.LabelMetadataName] != "default" {
		t.Errorf("namespace labels: %v", in.NamespaceLabels)
	}

	// Deletes reach the state too.
	if err := kube.Delete(ctx, pending); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return len(st.Snapshot(time.Now()).PendingPods) == 0, nil
	})
	if err != nil {
		t.Errorf("the deleted pod stayed in the state: %v", err)
	}
}

func create(ctx context.Context, t *testing.T, kube client.Client, obj client.Object) {
	t.Helper()
	if err := kube.Create(ctx, obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}
