package aws

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/drift"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
)

// fieldTypes: c8in.96xlarge has two EFA interfaces on two network cards and
// nested virtualization; c8i.large nested virtualization only; c6in.32xlarge
// two EFA interfaces, no nested virtualization; m6i.large neither; m4.large
// runs on Xen.
var fieldTypes = []string{"c6in.32xlarge", "c8i.large", "c8in.96xlarge", "m4.large", "m6i.large"}

func ptrTo[T any](v T) *T { return &v }

// TestNodeClassFieldsFilterInstanceTypes checks which instance types an
// EC2NodeClass can launch under each of networkInterfaces, cpuOptions,
// connectionTracking and a placement group, as Karpenter filters them.
func TestNodeClassFieldsFilterInstanceTypes(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec func(*awsv1.EC2NodeClassSpec)
		want []string
	}{
		{name: "no fields", spec: func(*awsv1.EC2NodeClassSpec) {}, want: fieldTypes},
		{name: "an efa-only interface needs EFA", spec: func(s *awsv1.EC2NodeClassSpec) {
			s.NetworkInterfaces = []awsv1.NetworkInterface{{InterfaceType: awsv1.InterfaceTypeInterface}, {DeviceIndex: 1, InterfaceType: awsv1.InterfaceTypeEFAOnly}}
		}, want: []string{"c6in.32xlarge", "c8in.96xlarge"}},
		{name: "a second network card", spec: func(s *awsv1.EC2NodeClassSpec) {
			s.NetworkInterfaces = []awsv1.NetworkInterface{{InterfaceType: awsv1.InterfaceTypeInterface}, {NetworkCardIndex: 1, InterfaceType: awsv1.InterfaceTypeEFAOnly}}
		}, want: []string{"c6in.32xlarge", "c8in.96xlarge"}},
		{name: "more efa-only interfaces than the types have", spec: func(s *awsv1.EC2NodeClassSpec) {
			s.NetworkInterfaces = []awsv1.NetworkInterface{{InterfaceType: awsv1.InterfaceTypeInterface}, {DeviceIndex: 1, InterfaceType: awsv1.InterfaceTypeEFAOnly},
				{NetworkCardIndex: 1, InterfaceType: awsv1.InterfaceTypeEFAOnly}, {NetworkCardIndex: 2, InterfaceType: awsv1.InterfaceTypeEFAOnly}}
		}, want: nil},
		{name: "device index beyond the card's interfaces", spec: func(s *awsv1.EC2NodeClassSpec) {
			s.NetworkInterfaces = []awsv1.NetworkInterface{{InterfaceType: awsv1.InterfaceTypeInterface}, {DeviceIndex: 40, InterfaceType: awsv1.InterfaceTypeInterface}}
		}, want: nil},
		{name: "nested virtualization enabled", spec: func(s *awsv1.EC2NodeClassSpec) {
			s.CPUOptions = &awsv1.CPUOptions{NestedVirtualization: ptrTo("enabled")}
		}, want: []string{"c8i.large", "c8in.96xlarge"}},
		{name: "nested virtualization disabled filters nothing", spec: func(s *awsv1.EC2NodeClassSpec) {
			s.CPUOptions = &awsv1.CPUOptions{NestedVirtualization: ptrTo("disabled")}
		}, want: fieldTypes},
		{name: "connection tracking needs Nitro", spec: func(s *awsv1.EC2NodeClassSpec) {
			s.ConnectionTracking = &awsv1.ConnectionTracking{UDPTimeout: ptrTo(int32(30))}
		}, want: []string{"c6in.32xlarge", "c8i.large", "c8in.96xlarge", "m6i.large"}},
		{name: "all of them", spec: func(s *awsv1.EC2NodeClassSpec) {
			s.NetworkInterfaces = []awsv1.NetworkInterface{{InterfaceType: awsv1.InterfaceTypeInterface}, {DeviceIndex: 1, InterfaceType: awsv1.InterfaceTypeEFAOnly}}
			s.CPUOptions = &awsv1.CPUOptions{NestedVirtualization: ptrTo("enabled")}
			s.ConnectionTracking = &awsv1.ConnectionTracking{UDPTimeout: ptrTo(int32(30))}
		}, want: []string{"c8in.96xlarge"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnvWithTypes(t, fieldTypes)
			tc.spec(&e.nc.Spec)
			types, err := e.p.GetInstanceTypes(e.ctx, &karpv1.NodePool{Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
				NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}}}}})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, it := range types {
				got = append(got, it.Name)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("instance types %v, want %v", got, tc.want)
			}
		})
	}
}

// TestEFAOnlyInterfaceOnCardZeroLowersMaxPods: an efa-only interface on
// network card 0 takes one of its ENIs from the VPC CNI, as Karpenter counts
// max pods; one on another card does not.
func TestEFAOnlyInterfaceOnCardZeroLowersMaxPods(t *testing.T) {
	pods := func(list []awsv1.NetworkInterface) int64 {
		t.Helper()
		e := newEnvWithTypes(t, []string{"c8in.96xlarge"})
		e.nc.Spec.NetworkInterfaces = list
		types, _, err := e.p.resolve(e.ctx, e.nc)
		if err != nil || len(types) != 1 {
			t.Fatalf("resolve: %d types, %v", len(types), err)
		}
		q := types[0].it.Capacity[corev1.ResourcePods]
		return q.Value()
	}
	primary := awsv1.NetworkInterface{InterfaceType: awsv1.InterfaceTypeInterface}
	// The fake lays c8in.96xlarge's 758 pods out as 18 ENIs of 43 addresses.
	for _, tc := range []struct {
		name string
		list []awsv1.NetworkInterface
		want int64
	}{
		{"none", nil, 758},
		{"efa-only on card 0", []awsv1.NetworkInterface{primary, {DeviceIndex: 1, InterfaceType: awsv1.InterfaceTypeEFAOnly}}, 17*42 + 2},
		{"efa-only on card 1", []awsv1.NetworkInterface{primary, {NetworkCardIndex: 1, InterfaceType: awsv1.InterfaceTypeEFAOnly}}, 758},
	} {
		if got := pods(tc.list); got != tc.want {
			t.Errorf("%s: pods %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestLaunchWithNodeClassFields launches with every new field set and
// checks what the fake EC2 received: the launch template's interfaces,
// prefix count, connection tracking, CPU options and placement, the
// instance's placement, and the NodeClaim's placement group labels. Then it
// checks PlacementGroupDrift.
func TestLaunchWithNodeClassFields(t *testing.T) {
	e := newEnvWithTypes(t, fieldTypes)
	pgID, err := e.aws.AddPlacementGroup(fake.PlacementGroup{Name: "training", Strategy: "partition", PartitionCount: 4})
	if err != nil {
		t.Fatal(err)
	}
	other, err := e.aws.AddPlacementGroup(fake.PlacementGroup{Name: "other", Strategy: "cluster"})
	if err != nil {
		t.Fatal(err)
	}
	s := &e.nc.Spec
	s.NetworkInterfaces = []awsv1.NetworkInterface{
		{NetworkCardIndex: 1, DeviceIndex: 0, InterfaceType: awsv1.InterfaceTypeEFAOnly},
		{NetworkCardIndex: 0, DeviceIndex: 0, InterfaceType: awsv1.InterfaceTypeInterface},
	}
	s.IPPrefixCount = ptrTo(int32(2))
	s.ConnectionTracking = &awsv1.ConnectionTracking{TCPEstablishedTimeout: ptrTo(int32(7200))}
	s.CPUOptions = &awsv1.CPUOptions{NestedVirtualization: ptrTo("enabled")}
	s.PlacementGroupSelector = &awsv1.PlacementGroupSelector{Name: "training"}

	nc := claim("trainer", req(wellknown.LabelCapacityType, wellknown.CapacityTypeOnDemand), req(wellknown.LabelPlacementGroupPartition, "3"))
	out := e.create(nc)
	info, ok := e.aws.Instance(instanceID(t, out))
	if !ok {
		t.Fatal("no instance")
	}
	if info.InstanceType != "c8in.96xlarge" {
		t.Errorf("launched %s, want c8in.96xlarge, the only compatible type", info.InstanceType)
	}
	data, ok := e.aws.LaunchTemplateData(info.LaunchTemplateName)
	if !ok {
		t.Fatal("no launch template data")
	}
	enis := data.NetworkInterfaces
	if len(enis) != 2 || data.SecurityGroupIds != nil {
		t.Fatalf("interfaces %+v, security groups %v: want two interfaces carrying the groups", enis, data.SecurityGroupIds)
	}
	primary, efa := enis[0], enis[1]
	for _, c := range []struct {
		what string
		ok   bool
	}{
		{"primary is card 0 device 0, interface", *primary.NetworkCardIndex == 0 && *primary.DeviceIndex == 0 && *primary.InterfaceType == "interface"},
		{"primary carries the security groups", slices.Equal(primary.Groups, []string{e.world.SecurityGroupID})},
		{"primary has 2 IPv4 prefixes", primary.Ipv4PrefixCount != nil && *primary.Ipv4PrefixCount == 2},
		{"primary tracks connections", primary.ConnectionTrackingSpecification != nil && *primary.ConnectionTrackingSpecification.TcpEstablishedTimeout == 7200},
		{"efa-only is card 1", *efa.NetworkCardIndex == 1 && *efa.DeviceIndex == 0 && *efa.InterfaceType == "efa-only"},
		{"efa-only has no prefixes or conntrack", efa.Ipv4PrefixCount == nil && efa.ConnectionTrackingSpecification == nil},
		{"nested virtualization", data.CpuOptions != nil && data.CpuOptions.NestedVirtualization == "enabled"},
		{"placement group and partition", data.Placement != nil && *data.Placement.GroupId == pgID && *data.Placement.PartitionNumber == 3},
		{"instance in the group's partition", info.PlacementGroupID == pgID && info.PlacementPartition == 3},
		{"placement-group-id label", out.Labels[wellknown.LabelPlacementGroupID] == pgID},
		{"placement-group-partition label", out.Labels[wellknown.LabelPlacementGroupPartition] == "3"},
	} {
		if !c.ok {
			t.Errorf("%s: template %+v, instance %+v, labels %v", c.what, data, info, out.Labels)
		}
	}

	// Drift: the node class selects another group. Its hash annotations
	// are not set, so the static hash does not decide first.
	if r, err := e.p.IsDrifted(e.ctx, out); err != nil || r != cloud.NoDrift {
		t.Fatalf("IsDrifted before the change = %q, %v; want no drift", r, err)
	}
	e.nc.Spec.PlacementGroupSelector = &awsv1.PlacementGroupSelector{ID: other}
	if r, err := e.p.IsDrifted(e.ctx, out); err != nil || r != drift.PlacementGroupDrift {
		t.Errorf("IsDrifted after the change = %q, %v; want %s", r, err, drift.PlacementGroupDrift)
	}
}

// TestTypeCacheFollowsNodeClassFields: the type cache rebuilds when a field
// that decides compatibility changes, and when the placement group's
// strategy does.
func TestTypeCacheFollowsNodeClassFields(t *testing.T) {
	e := newEnvWithTypes(t, fieldTypes)
	count := func() int {
		t.Helper()
		types, _, err := e.p.resolve(e.ctx, e.nc)
		if err != nil {
			t.Fatal(err)
		}
		return len(types)
	}
	if n := count(); n != len(fieldTypes) {
		t.Fatalf("%d types, want %d", n, len(fieldTypes))
	}
	e.nc.Spec.CPUOptions = &awsv1.CPUOptions{NestedVirtualization: ptrTo("enabled")}
	if n := count(); n != 2 {
		t.Errorf("after cpuOptions: %d types, want 2", n)
	}
	e.nc.Spec.CPUOptions = nil
	e.nc.Spec.ConnectionTracking = &awsv1.ConnectionTracking{UDPTimeout: ptrTo(int32(30))}
	if n := count(); n != 4 {
		t.Errorf("after connectionTracking: %d types, want 4", n)
	}
	e.nc.Spec.ConnectionTracking = nil
	e.nc.Spec.NetworkInterfaces = []awsv1.NetworkInterface{{InterfaceType: awsv1.InterfaceTypeInterface}, {NetworkCardIndex: 1, InterfaceType: awsv1.InterfaceTypeEFAOnly}}
	if n := count(); n != 2 {
		t.Errorf("after networkInterfaces: %d types, want 2", n)
	}
}
