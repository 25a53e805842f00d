package main

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
)

// TestLeaderElectionOnlyLeaderActs runs two controllers against one API
// server and one AWS account: only the Lease holder launches, and when it
// stops the other takes over and carries on.
func TestLeaderElectionOnlyLeaderActs(t *testing.T) {
	srv, kubeconfig := startAPIServer(t)
	f, world := testAccount(t, 11, "leader-test")
	start := func() (context.CancelFunc, <-chan error) {
		_, done, cancel := runTestController(t, f, kubeconfig, "--cluster-name=leader-test",
			"--health-probe-bind-address="+freePort(t), "--metrics-bind-address="+freePort(t))
		return cancel, done
	}

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
	ctx := context.Background()
	holder := func() string {
		var lease coordinationv1.Lease
		if err := kube.Get(ctx, client.ObjectKey{Namespace: "default", Name: "karpenter-leader-election"}, &lease); err != nil || lease.Spec.HolderIdentity == nil {
			return ""
		}
		return *lease.Spec.HolderIdentity
	}
	// waitFor polls a condition; the bound is generous because the machine
	// is shared, and nothing about the time taken is asserted.
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	cancelA, doneA := start()
	defer cancelA()
	waitFor("the first controller to take the Lease", func() bool { return holder() != "" })
	first := holder()
	cancelB, doneB := start()
	defer cancelB()

	// The account and the pool: the image is selected by id, so the API
	// server's Kubernetes version does not matter.
	createDefaultPool(ctx, t, kube, world, "leader-test")
	pending := func(name string) {
		t.Helper()
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "app", Image: "registry.example/app:1",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1200m")}},
			}}},
		}
		if err := kube.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
		if err := kube.Status().Update(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	launched := func() int {
		var list karpv1.NodeClaimList
		if err := kube.List(ctx, &list); err != nil {
			return -1
		}
		n := 0
		for _, c := range list.Items {
			if c.Status.ProviderID != "" {
				n++
			}
		}
		return n
	}
	claims := func() int {
		var list karpv1.NodeClaimList
		if err := kube.List(ctx, &list); err != nil {
			return -1
		}
		return len(list.Items)
	}

	pending("one")
	waitFor("a launched NodeClaim", func() bool { return launched() == 1 })
	// Let a second batch window pass: a second acting controller would have
	// launched again for the same pod by now.
	time.Sleep(3 * time.Second)
	if n := claims(); n != 1 {
		t.Fatalf("%d NodeClaims for one pod, want 1", n)
	}
	// Instances, not CreateFleet calls: the NodeClass validation makes dry-run
	// CreateFleet calls of its own.
	if n := len(f.InstanceIDs()); n != 1 {
		t.Fatalf("%d instances launched, want 1: only the leader may launch", n)
	}
	if h := holder(); h != first {
		t.Fatalf("Lease holder changed from %q to %q while the first controller ran", first, h)
	}

	// The leader stops; the other takes the Lease and carries on.
	cancelA()
	if err := <-doneA; err != nil {
		t.Fatalf("first controller: %v", err)
	}
	waitFor("the second controller to take the Lease", func() bool { h := holder(); return h != "" && h != first })
	pending("two")
	waitFor("a NodeClaim launched by the new leader", func() bool { return launched() == 2 })
	if n := len(f.InstanceIDs()); n != 2 {
		t.Errorf("%d instances after the second pod, want 2", n)
	}
	cancelB()
	if err := <-doneB; err != nil {
		t.Errorf("second controller: %v", err)
	}
}

func ptrTo[T any](v T) *T { return &v }

// createDefaultPool creates the EC2NodeClass and NodePool "default" of the
// account's cluster: on-demand capacity, the AL2023 image selected by id
// (so the API server's Kubernetes version does not matter), subnets and
// security groups by the cluster's discovery tag.
func createDefaultPool(ctx context.Context, t *testing.T, kube client.Client, world *fake.ClusterWorld, cluster string) {
	t.Helper()
	nc := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: awsv1.EC2NodeClassSpec{
			AMIFamily:                  ptrTo(awsv1.AMIFamilyAL2023),
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{ID: world.Images["al2023/x86_64/standard"]}},
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": cluster}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": cluster}}},
			Role:                       world.NodeRole,
		},
	}
	np := &karpv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
				{Key: wellknown.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{wellknown.CapacityTypeOnDemand}},
			},
			NodeClassRef: &karpv1.NodeClassReference{Group: wellknown.GroupAWS, Kind: wellknown.KindEC2NodeClass, Name: "default"},
		}}},
	}
	for _, obj := range []client.Object{nc, np} {
		if err := kube.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
}
