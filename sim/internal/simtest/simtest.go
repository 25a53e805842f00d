// Package simtest holds what the simulator's package tests share: an
// in-memory API server with the simulator's scheme on a virtual clock, an
// in-memory AWS with a standard cluster, and a way to launch an instance.
package simtest

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	autoscalingv1beta1 "github.com/stevedore-autoscaler/stevedore/api/autoscaling/v1beta1"
	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/sim/apiserver"
	simclock "github.com/stevedore-autoscaler/stevedore/sim/clock"
)

// Start is the virtual time tests begin at.
var Start = simclock.DefaultStart

// Scheme returns a scheme with the core, karpenter.sh and karpenter.k8s.aws
// types.
func Scheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, karpv1.AddToScheme, awsv1.AddToScheme, autoscalingv1beta1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// Server returns an API server on a clock at Start, with the namespaces
// given (and "default") created and the log drained.
func Server(t testing.TB, namespaces ...string) (*apiserver.Server, *simclock.Clock) {
	t.Helper()
	clk := simclock.New(Start)
	s, err := apiserver.New(apiserver.Options{Scheme: Scheme(t), Clock: clk, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range append([]string{"default"}, namespaces...) {
		Create(t, s, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	s.Drain()
	return s, clk
}

// Create creates the objects or fails the test.
func Create(t testing.TB, s *apiserver.Server, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := s.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

// Get reads an object or fails the test.
func Get[T client.Object](t testing.TB, s *apiserver.Server, namespace, name string, obj T) T {
	t.Helper()
	if err := s.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
		t.Fatalf("getting %T %s/%s: %v", obj, namespace, name, err)
	}
	return obj
}

// Reconcile calls r for the request and fails the test on error.
func Reconcile(t testing.TB, r reconcile.Reconciler, namespace, name string) reconcile.Result {
	t.Helper()
	res, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKey{Namespace: namespace, Name: name}})
	if err != nil {
		t.Fatalf("reconciling %s/%s: %v", namespace, name, err)
	}
	return res
}

// AWS returns an in-memory AWS with a standard cluster named "test" on clk,
// and an instance profile "profile" of its node role.
func AWS(t testing.TB, clk *simclock.Clock) (*fake.AWS, *fake.ClusterWorld) {
	t.Helper()
	f := fake.New(fake.Options{Seed: 1, Clock: clk, InstanceTypes: []string{"m6i.large", "m6i.xlarge"}})
	w, err := f.StandardCluster("test", "1.33")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.AddInstanceProfile("profile", w.NodeRole); err != nil {
		t.Fatal(err)
	}
	return f, w
}

// Launch runs one on-demand instance of the type in the cluster's first
// subnet, with the cluster's tag and the node role's profile, and returns
// its ID.
func Launch(t testing.TB, f *fake.AWS, w *fake.ClusterWorld, instanceType string) string {
	t.Helper()
	ctx := context.Background()
	templates++
	name := fmt.Sprintf("lt-%d", templates)
	lt, err := f.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: &name,
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
			ImageId:            ptr(w.Images["al2023/x86_64/standard"]),
			IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: ptr("profile")},
			SecurityGroupIds:   []string{w.SecurityGroupID},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.CreateFleet(ctx, &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateId: lt.LaunchTemplate.LaunchTemplateId, Version: ptr("$Latest")},
			Overrides:                   []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: ec2types.InstanceType(instanceType), SubnetId: ptr(w.SubnetIDs[0])}},
		}},
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: ptr(int32(1)), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: []ec2types.Tag{
			{Key: ptr(wellknown.TagEKSClusterName), Value: ptr(w.ClusterName)},
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Instances) != 1 || len(out.Instances[0].InstanceIds) != 1 {
		t.Fatalf("CreateFleet launched %+v (errors %+v)", out.Instances, out.Errors)
	}
	return out.Instances[0].InstanceIds[0]
}

// templates numbers the launch templates Launch creates.
var templates int

func ptr[T any](v T) *T { return &v }
