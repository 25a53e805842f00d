package kubelet

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
)

// launch runs one on-demand m6i.large in the first subnet with the cluster's
// ownership tags and the node role's instance profile.
func launch(t *testing.T, f *fake.AWS, w *fake.ClusterWorld, template string) string {
	t.Helper()
	ctx := context.Background()
	lt, err := f.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: ptr(template),
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
			Overrides:                   []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: "m6i.large", SubnetId: ptr(w.SubnetIDs[0])}},
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

func ptr[T any](v T) *T { return &v }

func TestSyncRegistersBootedAuthorizedInstances(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	f := fake.New(fake.Options{Seed: 1, Clock: clk, InstanceTypes: []string{"m6i.large"}})
	w, err := f.StandardCluster("test", "1.33")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.AddInstanceProfile("profile", w.NodeRole); err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := clientfake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&corev1.Node{}).Build()

	id := launch(t, f, w, "first")
	if names, err := Sync(ctx, c, f, "test"); err != nil || len(names) != 0 {
		t.Fatalf("Sync while booting = %v, %v; want nothing", names, err)
	}
	clk.Step(fake.DefaultBootDelay)
	if names, err := Sync(ctx, c, f, "other"); err != nil || len(names) != 0 {
		t.Fatalf("Sync for another cluster = %v, %v; want nothing", names, err)
	}
	names, err := Sync(ctx, c, f, "test")
	if err != nil || len(names) != 1 {
		t.Fatalf("Sync = %v, %v; want one node", names, err)
	}
	info, _ := f.Instance(id)
	node := &corev1.Node{}
	if err := c.Get(ctx, client.ObjectKey{Name: names[0]}, node); err != nil {
		t.Fatal(err)
	}
	if node.Name != info.PrivateDNSName || node.Spec.ProviderID != "aws:///"+info.Zone+"/"+id {
		t.Errorf("node %s has provider ID %s; instance %s in %s is %s", node.Name, node.Spec.ProviderID, id, info.Zone, info.PrivateDNSName)
	}
	if len(node.Spec.Taints) != 1 || !node.Spec.Taints[0].MatchTaint(ptr(wellknown.UnregisteredTaint())) {
		t.Errorf("taints = %v, want the unregistered taint", node.Spec.Taints)
	}
	want := map[string]string{
		wellknown.LabelInstanceType: "m6i.large", wellknown.LabelTopologyZone: info.Zone,
		wellknown.LabelArch: wellknown.ArchAMD64, wellknown.LabelOS: wellknown.OSLinux, wellknown.LabelHostname: node.Name,
	}
	for k, v := range want {
		if node.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, node.Labels[k], v)
		}
	}
	if node.Status.Allocatable.Cpu().MilliValue() == 0 || node.Status.Capacity.Memory().IsZero() {
		t.Errorf("capacity %v, allocatable %v", node.Status.Capacity, node.Status.Allocatable)
	}
	if names, err := Sync(ctx, c, f, "test"); err != nil || len(names) != 0 {
		t.Errorf("second Sync = %v, %v; want nothing new", names, err)
	}

	if err := MarkReady(ctx, c, node.Name); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: node.Name}, node); err != nil {
		t.Fatal(err)
	}
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady && cond.Status != corev1.ConditionTrue {
			t.Errorf("Ready = %s after MarkReady", cond.Status)
		}
	}

	// Without an access entry the kubelet cannot join.
	f.RemoveAccessEntry("test", w.NodeRoleARN)
	launch(t, f, w, "second")
	clk.Step(fake.DefaultBootDelay)
	if names, err := Sync(ctx, c, f, "test"); err != nil || len(names) != 0 {
		t.Errorf("Sync without an access entry = %v, %v; want nothing", names, err)
	}
}
