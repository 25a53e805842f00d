package fake_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"github.com/aws/smithy-go"
	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/catalog"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/sdk"
)

var ctx = context.Background()

var epoch = time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)

// env is a standard cluster world with a launch template for its node role.
type env struct {
	f   *fake.AWS
	clk *clocktesting.FakeClock
	w   *fake.ClusterWorld
	lt  string
}

func newEnv(t *testing.T, seed uint64) *env {
	t.Helper()
	clk := clocktesting.NewFakeClock(epoch)
	f := fake.New(fake.Options{Seed: seed, Clock: clk, InstanceTypes: []string{"m5.large", "m5.xlarge", "m6g.large", "c5.large", "g5.xlarge"}})
	w, err := f.StandardCluster("demo", "1.33")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String("demo_profile"), Path: aws.String("/karpenter/us-east-1/demo/uid/")}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String("demo_profile"), RoleName: aws.String(w.NodeRole)}); err != nil {
		t.Fatal(err)
	}
	_, err = f.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String("karpenter.k8s.aws/123"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
			ImageId:            aws.String(w.Images["al2023/x86_64/standard"]),
			IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String("demo_profile")},
			SecurityGroupIds:   []string{w.SecurityGroupID},
			UserData:           aws.String(base64.StdEncoding.EncodeToString([]byte("#!/bin/bash\necho hi\n"))),
			MetadataOptions:    &ec2types.LaunchTemplateInstanceMetadataOptionsRequest{HttpTokens: "required", HttpPutResponseHopLimit: aws.Int32(1)},
			TagSpecifications:  []ec2types.LaunchTemplateTagSpecificationRequest{{ResourceType: ec2types.ResourceTypeInstance, Tags: []ec2types.Tag{{Key: aws.String("from-lt"), Value: aws.String("yes")}}}},
		},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: []ec2types.Tag{{Key: aws.String("eks:eks-cluster-name"), Value: aws.String("demo")}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &env{f: f, clk: clk, w: w, lt: "karpenter.k8s.aws/123"}
}

func (e *env) fleet(capacityType string, n int32, pools ...[2]string) *ec2.CreateFleetInput {
	var overrides []ec2types.FleetLaunchTemplateOverridesRequest
	for _, p := range pools {
		o := ec2types.FleetLaunchTemplateOverridesRequest{InstanceType: ec2types.InstanceType(p[0]), AvailabilityZone: aws.String(p[1])}
		overrides = append(overrides, o)
	}
	return &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity: aws.Int32(n), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityType(capacityType),
		},
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(e.lt), Version: aws.String("$Latest")},
			Overrides:                   overrides,
		}},
		SpotOptions:     &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyPriceCapacityOptimized},
		OnDemandOptions: &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyLowestPrice},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: []ec2types.Tag{
			{Key: aws.String("karpenter.sh/nodepool"), Value: aws.String("default")},
			{Key: aws.String("eks:eks-cluster-name"), Value: aws.String("demo")},
		}}},
	}
}

func code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func fleetIDs(out *ec2.CreateFleetOutput) []string {
	var ids []string
	for _, i := range out.Instances {
		ids = append(ids, i.InstanceIds...)
	}
	return ids
}

func describe(t *testing.T, f *fake.AWS, in *ec2.DescribeInstancesInput) []ec2types.Instance {
	t.Helper()
	out, err := f.DescribeInstances(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	var all []ec2types.Instance
	for _, r := range out.Reservations {
		all = append(all, r.Instances...)
	}
	return all
}

func TestImplementsInterfaces(t *testing.T) {
	f := fake.New(fake.Options{})
	c := f.Clients()
	var _ sdk.EC2 = f
	if c.EC2 == nil || c.SSM == nil || c.SQS == nil || c.IAM == nil || c.EKS == nil || c.Pricing == nil {
		t.Fatal("Clients left a client nil")
	}
}

func TestENILayoutReproducesCatalogPods(t *testing.T) {
	f := fake.New(fake.Options{})
	all, err := catalog.All()
	if err != nil {
		t.Fatal(err)
	}
	pods := map[string]int64{}
	for _, it := range all {
		q := it.Capacity[corev1.ResourcePods]
		pods[it.Name] = q.Value()
	}
	p := ec2.NewDescribeInstanceTypesPaginator(f, &ec2.DescribeInstanceTypesInput{})
	seen, pages := 0, 0
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(out.InstanceTypes) > 100 {
			t.Fatalf("page of %d types, the API pages at 100", len(out.InstanceTypes))
		}
		for _, it := range out.InstanceTypes {
			seen++
			n := it.NetworkInfo
			got := int64(*n.MaximumNetworkInterfaces)*int64(*n.Ipv4AddressesPerInterface-1) + 2
			if got != pods[string(it.InstanceType)] {
				t.Errorf("%s: ENIs %d × (%d − 1) + 2 = %d, catalog pods %d", it.InstanceType, *n.MaximumNetworkInterfaces, *n.Ipv4AddressesPerInterface, got, pods[string(it.InstanceType)])
			}
		}
	}
	if seen != len(all) || pages < len(all)/100 {
		t.Errorf("saw %d types in %d pages, catalog has %d", seen, pages, len(all))
	}
	// m5.large has the real layout: 3 ENIs × 10 addresses.
	out, err := f.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{InstanceTypes: []ec2types.InstanceType{"m5.large", "g5.xlarge", "c5d.large", "m7g.metal"}})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]ec2types.InstanceTypeInfo{}
	for _, it := range out.InstanceTypes {
		byName[string(it.InstanceType)] = it
	}
	if m := byName["m5.large"]; *m.NetworkInfo.MaximumNetworkInterfaces != 3 || *m.NetworkInfo.Ipv4AddressesPerInterface != 10 || *m.VCpuInfo.DefaultVCpus != 2 || *m.MemoryInfo.SizeInMiB != 8192 {
		t.Errorf("m5.large: %+v", m)
	}
	if g := byName["g5.xlarge"]; g.GpuInfo == nil || *g.GpuInfo.Gpus[0].Count != 1 || *g.GpuInfo.Gpus[0].Manufacturer != "NVIDIA" {
		t.Errorf("g5.xlarge GPU info: %+v", g.GpuInfo)
	}
	if c := byName["c5d.large"]; !*c.InstanceStorageSupported || c.InstanceStorageInfo == nil || *c.InstanceStorageInfo.TotalSizeInGB == 0 {
		t.Errorf("c5d.large instance storage: %+v", c.InstanceStorageInfo)
	}
	if m := byName["m7g.metal"]; !*m.BareMetal || m.Hypervisor != "" || m.ProcessorInfo.SupportedArchitectures[0] != "arm64" {
		t.Errorf("m7g.metal: bare metal %v hypervisor %q arch %v", *m.BareMetal, m.Hypervisor, m.ProcessorInfo.SupportedArchitectures)
	}
	if _, err := f.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{InstanceTypes: []ec2types.InstanceType{"x9.huge"}}); code(err) != "InvalidInstanceType" {
		t.Errorf("unknown type: %v", err)
	}
}

func TestDescribeInstanceTypesFiltersAndOfferings(t *testing.T) {
	e := newEnv(t, 1)
	out, err := e.f.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{Filters: []ec2types.Filter{
		{Name: aws.String("processor-info.supported-architecture"), Values: []string{"arm64"}},
		{Name: aws.String("supported-virtualization-type"), Values: []string{"hvm"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.InstanceTypes) != 1 || out.InstanceTypes[0].InstanceType != "m6g.large" {
		t.Errorf("arm64 filter: %v", out.InstanceTypes)
	}
	e.f.SetOffered("g5.xlarge", "us-east-1c", false)
	offs, err := e.f.DescribeInstanceTypeOfferings(ctx, &ec2.DescribeInstanceTypeOfferingsInput{LocationType: ec2types.LocationTypeAvailabilityZone})
	if err != nil {
		t.Fatal(err)
	}
	if len(offs.InstanceTypeOfferings) != 5*3-1 {
		t.Errorf("got %d offerings, want 14", len(offs.InstanceTypeOfferings))
	}
	for _, o := range offs.InstanceTypeOfferings {
		if o.InstanceType == "g5.xlarge" && *o.Location == "us-east-1c" {
			t.Error("excluded offering listed")
		}
	}
	ids, err := e.f.DescribeInstanceTypeOfferings(ctx, &ec2.DescribeInstanceTypeOfferingsInput{LocationType: ec2types.LocationTypeAvailabilityZoneId,
		Filters: []ec2types.Filter{{Name: aws.String("instance-type"), Values: []string{"m5.*"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ids.InstanceTypeOfferings) != 6 || *ids.InstanceTypeOfferings[0].Location != "use1-az1" {
		t.Errorf("zone-id offerings: %+v", ids.InstanceTypeOfferings)
	}
	page, err := e.f.DescribeInstanceTypeOfferings(ctx, &ec2.DescribeInstanceTypeOfferingsInput{LocationType: ec2types.LocationTypeAvailabilityZone, MaxResults: aws.Int32(5)})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.InstanceTypeOfferings) != 5 || page.NextToken == nil {
		t.Fatalf("first page: %d, token %v", len(page.InstanceTypeOfferings), page.NextToken)
	}
	rest, err := e.f.DescribeInstanceTypeOfferings(ctx, &ec2.DescribeInstanceTypeOfferingsInput{LocationType: ec2types.LocationTypeAvailabilityZone, NextToken: page.NextToken})
	if err != nil {
		t.Fatal(err)
	}
	if len(rest.InstanceTypeOfferings) != 9 || rest.NextToken != nil {
		t.Errorf("second page: %d, token %v", len(rest.InstanceTypeOfferings), rest.NextToken)
	}
	if _, err := e.f.DescribeInstanceTypeOfferings(ctx, &ec2.DescribeInstanceTypeOfferingsInput{NextToken: aws.String("garbage")}); code(err) != "InvalidNextToken" {
		t.Errorf("bad token: %v", err)
	}
}

func TestSubnetAndSecurityGroupFilters(t *testing.T) {
	e := newEnv(t, 1)
	other, _ := e.f.AddSubnet(fake.Subnet{Zone: "us-east-1a", VPCID: "vpc-other", Tags: map[string]string{"team": "x"}})
	otherSG, _ := e.f.AddSecurityGroup(fake.SecurityGroup{Name: "legacy", VPCID: "vpc-other", Tags: map[string]string{"team": "x"}})
	f := func(name string, values ...string) ec2types.Filter {
		return ec2types.Filter{Name: aws.String(name), Values: values}
	}
	subnetCases := []struct {
		name    string
		filters []ec2types.Filter
		ids     []string
		want    int
		code    string
	}{
		{"tag", []ec2types.Filter{f("tag:karpenter.sh/discovery", "demo")}, nil, 3, ""},
		{"tag wildcard", []ec2types.Filter{f("tag:Name", "demo-private-*")}, nil, 3, ""},
		{"tag-key", []ec2types.Filter{f("tag-key", "team")}, nil, 1, ""},
		{"subnet-id", []ec2types.Filter{f("subnet-id", e.w.SubnetIDs[1])}, nil, 1, ""},
		{"vpc-id", []ec2types.Filter{f("vpc-id", "vpc-other")}, nil, 1, ""},
		{"ANDed", []ec2types.Filter{f("tag:karpenter.sh/discovery", "demo"), f("availability-zone", "us-east-1b")}, nil, 1, ""},
		{"ORed values", []ec2types.Filter{f("subnet-id", e.w.SubnetIDs[0], other)}, nil, 2, ""},
		{"ids", nil, []string{other}, 1, ""},
		{"missing id", nil, []string{"subnet-nope"}, 0, "InvalidSubnetID.NotFound"},
		{"bad filter", []ec2types.Filter{f("colour", "red")}, nil, 0, "InvalidParameterValue"},
	}
	for _, tc := range subnetCases {
		t.Run("subnets/"+tc.name, func(t *testing.T) {
			out, err := e.f.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: tc.filters, SubnetIds: tc.ids})
			if tc.code != "" {
				if code(err) != tc.code {
					t.Fatalf("got %v, want %s", err, tc.code)
				}
				return
			}
			if err != nil || len(out.Subnets) != tc.want {
				t.Fatalf("got %d subnets (%v), want %d", len(out.Subnets), err, tc.want)
			}
		})
	}
	sgCases := []struct {
		name    string
		filters []ec2types.Filter
		want    string
		code    string
	}{
		{"tag", []ec2types.Filter{f("tag:karpenter.sh/discovery", "demo")}, e.w.SecurityGroupID, ""},
		{"tag-key", []ec2types.Filter{f("tag-key", "team")}, otherSG, ""},
		{"group-id", []ec2types.Filter{f("group-id", otherSG)}, otherSG, ""},
		{"group-name", []ec2types.Filter{f("group-name", "legacy")}, otherSG, ""},
		{"vpc-id", []ec2types.Filter{f("vpc-id", "vpc-other")}, otherSG, ""},
		{"bad filter", []ec2types.Filter{f("nope", "x")}, "", "InvalidParameterValue"},
	}
	for _, tc := range sgCases {
		t.Run("security groups/"+tc.name, func(t *testing.T) {
			out, err := e.f.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: tc.filters})
			if tc.code != "" {
				if code(err) != tc.code {
					t.Fatalf("got %v, want %s", err, tc.code)
				}
				return
			}
			if err != nil || len(out.SecurityGroups) != 1 || *out.SecurityGroups[0].GroupId != tc.want {
				t.Fatalf("got %+v (%v), want %s", out, err, tc.want)
			}
		})
	}
	if _, err := e.f.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{"sg-missing"}}); code(err) != "InvalidGroup.NotFound" {
		t.Errorf("missing group: %v", err)
	}
}

func TestDescribeImages(t *testing.T) {
	e := newEnv(t, 1)
	own, _ := e.f.AddImage(fake.Image{Name: "team-node-2026-07", Architecture: "arm64", Tags: map[string]string{"team": "a"}})
	old, _ := e.f.AddImage(fake.Image{Name: "public-old", OwnerID: "111122223333", DeprecationTime: epoch.Add(-time.Hour)})
	ownOld, _ := e.f.AddImage(fake.Image{Name: "team-node-2025", DeprecationTime: epoch.Add(-time.Hour)})
	pending, _ := e.f.AddImage(fake.Image{Name: "team-node-building", State: "pending"})
	f := func(name string, values ...string) ec2types.Filter {
		return ec2types.Filter{Name: aws.String(name), Values: values}
	}
	cases := []struct {
		name string
		in   ec2.DescribeImagesInput
		want []string // IDs expected to be included
		not  []string // IDs expected to be absent
		n    int      // exact count when > 0
		code string
	}{
		{name: "image-id", in: ec2.DescribeImagesInput{Filters: []ec2types.Filter{f("image-id", own.ID)}}, want: []string{own.ID}, n: 1},
		{name: "ImageIds", in: ec2.DescribeImagesInput{ImageIds: []string{own.ID}}, want: []string{own.ID}, n: 1},
		{name: "name wildcard", in: ec2.DescribeImagesInput{Filters: []ec2types.Filter{f("name", "team-node-*")}}, want: []string{own.ID, ownOld.ID, pending.ID}, n: 3},
		{name: "name ?", in: ec2.DescribeImagesInput{Filters: []ec2types.Filter{f("name", "team-node-202?")}}, want: []string{ownOld.ID}, n: 1},
		{name: "owners self", in: ec2.DescribeImagesInput{Owners: []string{"self"}}, want: []string{own.ID, ownOld.ID, pending.ID}, n: 3},
		{name: "owners amazon", in: ec2.DescribeImagesInput{Owners: []string{"amazon"}}, not: []string{own.ID, old.ID}, n: 9},
		{name: "owner-id filter", in: ec2.DescribeImagesInput{Filters: []ec2types.Filter{f("owner-id", fake.AmazonOwnerID)}}, n: 9},
		{name: "tag", in: ec2.DescribeImagesInput{Filters: []ec2types.Filter{f("tag:team", "a")}}, want: []string{own.ID}, n: 1},
		{name: "state", in: ec2.DescribeImagesInput{Owners: []string{"self"}, Filters: []ec2types.Filter{f("state", "available")}}, not: []string{pending.ID}, n: 2},
		{name: "architecture", in: ec2.DescribeImagesInput{Owners: []string{"self"}, Filters: []ec2types.Filter{f("architecture", "arm64")}}, want: []string{own.ID}, n: 1},
		{name: "deprecated hidden", in: ec2.DescribeImagesInput{Owners: []string{"111122223333"}}, not: []string{old.ID}},
		{name: "IncludeDeprecated", in: ec2.DescribeImagesInput{Owners: []string{"111122223333"}, IncludeDeprecated: aws.Bool(true)}, want: []string{old.ID}, n: 1},
		{name: "own deprecated always shown", in: ec2.DescribeImagesInput{Filters: []ec2types.Filter{f("name", "team-node-2025")}}, want: []string{ownOld.ID}, n: 1},
		{name: "missing id", in: ec2.DescribeImagesInput{ImageIds: []string{"ami-00000000000000000"}}, code: "InvalidAMIID.NotFound"},
		{name: "malformed id", in: ec2.DescribeImagesInput{ImageIds: []string{"img-1"}}, code: "InvalidAMIID.Malformed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := e.f.DescribeImages(ctx, &tc.in)
			if tc.code != "" {
				if code(err) != tc.code {
					t.Fatalf("got %v, want %s", err, tc.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for _, img := range out.Images {
				got[*img.ImageId] = true
			}
			for _, id := range tc.want {
				if !got[id] {
					t.Errorf("%s missing", id)
				}
			}
			for _, id := range tc.not {
				if got[id] {
					t.Errorf("%s present", id)
				}
			}
			if tc.n > 0 && len(out.Images) != tc.n {
				t.Errorf("got %d images, want %d", len(out.Images), tc.n)
			}
		})
	}
}

func TestReleaseImageMovesLatest(t *testing.T) {
	e := newEnv(t, 1)
	latest := "/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/standard/recommended/image_id"
	if p, _ := fake.LatestImageParameter("al2023", "1.33", "amd64", "standard"); p != latest {
		t.Fatalf("LatestImageParameter = %s", p)
	}
	get := func(name string) string {
		t.Helper()
		out, err := e.f.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name)})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return *out.Parameter.Value
	}
	first := get(latest)
	e.clk.Step(24 * time.Hour)
	img, err := e.f.ReleaseImage("al2023", "1.33", "amd64", "standard", fake.Image{ReleaseVersion: "v20260702"})
	if err != nil {
		t.Fatal(err)
	}
	if got := get(latest); got != img.ID || got == first {
		t.Errorf("latest = %s, want the new release %s", got, img.ID)
	}
	pinned := "/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/standard/amazon-eks-node-al2023-x86_64-standard-1.33-v20260702/image_id"
	if got := get(pinned); got != img.ID {
		t.Errorf("pinned = %s, want %s", got, img.ID)
	}
	if img.Name != "amazon-eks-node-al2023-x86_64-standard-1.33-v20260702" || img.OwnerAlias != "amazon" {
		t.Errorf("release image %+v", img)
	}
	out, _ := e.f.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(latest)})
	if out.Parameter.Version != 2 {
		t.Errorf("parameter version %d, want 2", out.Parameter.Version)
	}
	paths := []struct{ family, arch, variant, version, latest, pinned string }{
		{"al2", "arm64", "standard", "v20260702", "/aws/service/eks/optimized-ami/1.32/amazon-linux-2-arm64/recommended/image_id", "/aws/service/eks/optimized-ami/1.32/amazon-linux-2-arm64/amazon-eks-arm64-node-1.32-v20260702/image_id"},
		{"al2", "x86_64", "gpu", "v20260702", "/aws/service/eks/optimized-ami/1.32/amazon-linux-2-gpu/recommended/image_id", "/aws/service/eks/optimized-ami/1.32/amazon-linux-2-gpu/amazon-eks-gpu-node-1.32-v20260702/image_id"},
		{"bottlerocket", "arm64", "nvidia", "v1.41.0", "/aws/service/bottlerocket/aws-k8s-1.32-nvidia/arm64/latest/image_id", "/aws/service/bottlerocket/aws-k8s-1.32-nvidia/arm64/1.41.0/image_id"},
		{"windows2022", "x86_64", "", "v1", "/aws/service/ami-windows-latest/Windows_Server-2022-English-Core-EKS_Optimized-1.32/image_id", ""},
	}
	for _, p := range paths {
		img, err := e.f.ReleaseImage(p.family, "1.32", p.arch, p.variant, fake.Image{ReleaseVersion: p.version})
		if err != nil {
			t.Fatalf("%s: %v", p.family, err)
		}
		if got := get(p.latest); got != img.ID {
			t.Errorf("%s latest %s = %s, want %s", p.family, p.latest, got, img.ID)
		}
		if p.pinned != "" && get(p.pinned) != img.ID {
			t.Errorf("%s pinned path not set", p.family)
		}
	}
	if _, err := e.f.ReleaseImage("al2023", "1.33", "arm64", "neuron", fake.Image{}); err == nil {
		t.Error("arm64 neuron release accepted")
	}
	_, err = e.f.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/aws/service/eks/optimized-ami/1.99/nothing")})
	var nf *ssmtypes.ParameterNotFound
	if !errors.As(err, &nf) {
		t.Errorf("missing parameter: %v", err)
	}
}

func TestCreateFleetChoosesCheapestPool(t *testing.T) {
	e := newEnv(t, 1)
	e.f.SetOnDemandPrice("m5.xlarge", 0.01)
	out, err := e.f.CreateFleet(ctx, e.fleet("on-demand", 1, [2]string{"m5.large", "us-east-1a"}, [2]string{"m5.xlarge", "us-east-1b"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Errors) != 0 || len(out.Instances) != 1 || out.Instances[0].InstanceType != "m5.xlarge" || out.Instances[0].Lifecycle != "on-demand" {
		t.Fatalf("on-demand lowest-price: %+v", out)
	}
	e.f.SetSpotPrice("m5.large", "us-east-1c", 0.001)
	out, err = e.f.CreateFleet(ctx, e.fleet("spot", 2, [2]string{"m5.large", "us-east-1a"}, [2]string{"m5.large", "us-east-1c"}, [2]string{"m5.xlarge", "us-east-1b"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Instances) != 1 || *out.Instances[0].AvailabilityZone != "us-east-1c" || len(out.Instances[0].InstanceIds) != 2 {
		t.Fatalf("spot price-capacity-optimized: %+v", out.Instances)
	}
	insts := describe(t, e.f, &ec2.DescribeInstancesInput{InstanceIds: out.Instances[0].InstanceIds})
	for _, inst := range insts {
		if inst.InstanceLifecycle != ec2types.InstanceLifecycleTypeSpot || *inst.ImageId != e.w.Images["al2023/x86_64/standard"] ||
			len(inst.SecurityGroups) != 1 || *inst.SecurityGroups[0].GroupId != e.w.SecurityGroupID ||
			!strings.HasPrefix(*inst.PrivateDnsName, "ip-10-0-") || !strings.HasSuffix(*inst.PrivateDnsName, ".ec2.internal") ||
			len(*inst.InstanceId) != len("i-")+17 || inst.IamInstanceProfile == nil {
			t.Errorf("instance %+v", inst)
		}
		tags := map[string]string{}
		for _, tg := range inst.Tags {
			tags[*tg.Key] = *tg.Value
		}
		if tags["karpenter.sh/nodepool"] != "default" || tags["from-lt"] != "yes" {
			t.Errorf("tags %v", tags)
		}
	}
	info, _ := e.f.Instance(*insts[0].InstanceId)
	if info.Role != e.w.NodeRole || info.UserData == "" || !e.f.AccessEntryAllows(info.Role) {
		t.Errorf("instance info %+v", info)
	}
}

func TestCreateFleetValidation(t *testing.T) {
	e := newEnv(t, 1)
	armLT := "arm-on-x86-ami"
	if _, err := e.f.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String(armLT), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
		ImageId: aws.String(e.w.Images["al2023/x86_64/standard"]), SecurityGroupIds: []string{"sg-missing"},
	}}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		mutate func(*ec2.CreateFleetInput)
		code   string // top-level error
		fleet  string // fleet Errors entry
	}{
		{"not instant", func(in *ec2.CreateFleetInput) { in.Type = ec2types.FleetTypeMaintain }, "InvalidParameterValue", ""},
		{"no capacity", func(in *ec2.CreateFleetInput) { in.TargetCapacitySpecification.TotalTargetCapacity = aws.Int32(0) }, "InvalidTargetCapacitySpecification", ""},
		{"no configs", func(in *ec2.CreateFleetInput) { in.LaunchTemplateConfigs = nil }, "MissingParameter", ""},
		{"missing template", func(in *ec2.CreateFleetInput) {
			in.LaunchTemplateConfigs[0].LaunchTemplateSpecification.LaunchTemplateName = aws.String("gone")
		}, "", "InvalidLaunchTemplateName.NotFoundException"},
		{"type not offered", func(in *ec2.CreateFleetInput) {
			e.f.SetOffered("c5.large", "us-east-1a", false)
			in.LaunchTemplateConfigs[0].Overrides[0].InstanceType = "c5.large"
		}, "", "Unsupported"},
		{"architecture mismatch", func(in *ec2.CreateFleetInput) { in.LaunchTemplateConfigs[0].Overrides[0].InstanceType = "m6g.large" }, "", "InvalidParameterValue"},
		{"missing AMI", func(in *ec2.CreateFleetInput) {
			in.LaunchTemplateConfigs[0].Overrides[0].ImageId = aws.String("ami-00000000000000000")
		}, "", "InvalidAMIID.NotFound"},
		{"missing subnet", func(in *ec2.CreateFleetInput) {
			in.LaunchTemplateConfigs[0].Overrides[0].SubnetId = aws.String("subnet-nope")
		}, "", "InvalidSubnetID.NotFound"},
		{"missing security group", func(in *ec2.CreateFleetInput) {
			in.LaunchTemplateConfigs[0].LaunchTemplateSpecification.LaunchTemplateName = aws.String(armLT)
		}, "", "InvalidGroup.NotFound"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := e.fleet("on-demand", 1, [2]string{"m5.large", "us-east-1a"})
			tc.mutate(in)
			out, err := e.f.CreateFleet(ctx, in)
			if tc.code != "" {
				if code(err) != tc.code {
					t.Fatalf("got %v, want %s", err, tc.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Instances) != 0 || len(out.Errors) != 1 || *out.Errors[0].ErrorCode != tc.fleet {
				t.Fatalf("got %+v, want one %s error", out.Errors, tc.fleet)
			}
		})
	}
}

func TestInsufficientCapacityInjectionAndExpiry(t *testing.T) {
	e := newEnv(t, 1)
	e.f.InjectInsufficientCapacity([]string{"m5.large"}, []string{"us-east-1a"}, "spot", epoch.Add(3*time.Minute))
	e.f.SetSpotPrice("m5.large", "us-east-1a", 0.001) // cheapest, so it is tried first
	out, err := e.f.CreateFleet(ctx, e.fleet("spot", 1, [2]string{"m5.large", "us-east-1a"}, [2]string{"m5.xlarge", "us-east-1a"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Errors) != 1 || *out.Errors[0].ErrorCode != "InsufficientInstanceCapacity" || out.Errors[0].LaunchTemplateAndOverrides.Overrides.InstanceType != "m5.large" ||
		*out.Errors[0].LaunchTemplateAndOverrides.Overrides.AvailabilityZone != "us-east-1a" || out.Errors[0].Lifecycle != "spot" {
		t.Fatalf("errors %+v", out.Errors)
	}
	if len(out.Instances) != 1 || out.Instances[0].InstanceType != "m5.xlarge" {
		t.Fatalf("instances %+v", out.Instances)
	}
	only := e.fleet("spot", 1, [2]string{"m5.large", "us-east-1a"})
	out, _ = e.f.CreateFleet(ctx, only)
	if len(out.Instances) != 0 || len(out.Errors) != 1 {
		t.Fatalf("ICE'd pool launched: %+v", out)
	}
	// On-demand in the same pool is unaffected.
	only.TargetCapacitySpecification.DefaultTargetCapacityType = "on-demand"
	if out, _ = e.f.CreateFleet(ctx, only); len(out.Instances) != 1 {
		t.Fatalf("on-demand affected by a spot ICE: %+v", out)
	}
	only.TargetCapacitySpecification.DefaultTargetCapacityType = "spot"
	e.clk.Step(3 * time.Minute)
	if out, _ = e.f.CreateFleet(ctx, only); len(out.Instances) != 1 || len(out.Errors) != 0 {
		t.Fatalf("ICE did not expire: %+v", out)
	}
	// Pool capacity counts.
	e.f.SetCapacity("c5.large", "us-east-1b", "on-demand", 1)
	c5 := e.fleet("on-demand", 2, [2]string{"c5.large", "us-east-1b"})
	out, _ = e.f.CreateFleet(ctx, c5)
	if ids := fleetIDs(out); len(ids) != 1 {
		t.Fatalf("capacity 1 launched %d", len(ids))
	}
	c5.TargetCapacitySpecification.TotalTargetCapacity = aws.Int32(1)
	if out, _ = e.f.CreateFleet(ctx, c5); len(out.Instances) != 0 || *out.Errors[0].ErrorCode != "InsufficientInstanceCapacity" {
		t.Fatalf("exhausted pool: %+v", out)
	}
}

func TestPassRoleAndDryRun(t *testing.T) {
	e := newEnv(t, 1)
	runDry := &ec2.RunInstancesInput{DryRun: aws.Bool(true), MinCount: aws.Int32(1), MaxCount: aws.Int32(1),
		LaunchTemplate: &ec2types.LaunchTemplateSpecification{LaunchTemplateName: aws.String(e.lt)}, InstanceType: "m5.large", SubnetId: aws.String(e.w.SubnetIDs[0])}
	fleetDry := e.fleet("on-demand", 1, [2]string{"m5.large", "us-east-1a"})
	fleetDry.DryRun = aws.Bool(true)
	ltDry := &ec2.CreateLaunchTemplateInput{DryRun: aws.Bool(true), LaunchTemplateName: aws.String("probe"), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{}}

	if _, err := e.f.RunInstances(ctx, runDry); code(err) != "DryRunOperation" {
		t.Errorf("authorized RunInstances dry run: %v", err)
	}
	if _, err := e.f.CreateFleet(ctx, fleetDry); code(err) != "DryRunOperation" {
		t.Errorf("authorized CreateFleet dry run: %v", err)
	}
	if _, err := e.f.CreateLaunchTemplate(ctx, ltDry); code(err) != "DryRunOperation" {
		t.Errorf("authorized CreateLaunchTemplate dry run: %v", err)
	}
	noSubnet := *runDry
	noSubnet.SubnetId = nil
	if _, err := e.f.RunInstances(ctx, &noSubnet); code(err) != "VPCIdNotSpecified" {
		t.Errorf("dry run without a subnet: %v", err)
	}

	e.f.DenyPassRole(e.w.NodeRole)
	for name, err := range map[string]error{
		"RunInstances": func() error { _, err := e.f.RunInstances(ctx, runDry); return err }(),
		"CreateFleet":  func() error { _, err := e.f.CreateFleet(ctx, fleetDry); return err }(),
	} {
		var ae smithy.APIError
		if !errors.As(err, &ae) || ae.ErrorCode() != "UnauthorizedOperation" || !strings.Contains(ae.ErrorMessage(), "iam:PassRole") || !strings.Contains(ae.ErrorMessage(), e.w.NodeRole) {
			t.Errorf("%s dry run without PassRole: %v", name, err)
		}
	}
	out, err := e.f.CreateFleet(ctx, e.fleet("on-demand", 1, [2]string{"m5.large", "us-east-1a"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Instances) != 0 || len(out.Errors) != 1 || *out.Errors[0].ErrorCode != "UnauthorizedOperation" || !strings.Contains(*out.Errors[0].ErrorMessage, "iam:PassRole") {
		t.Fatalf("launch without PassRole: %+v", out)
	}
	e.f.AllowPassRole(e.w.NodeRole)
	e.f.DenyAction("ec2:CreateFleet")
	if _, err := e.f.CreateFleet(ctx, fleetDry); code(err) != "UnauthorizedOperation" {
		t.Errorf("denied CreateFleet dry run: %v", err)
	}
	e.f.DenyAction("ec2:CreateLaunchTemplate")
	if _, err := e.f.CreateLaunchTemplate(ctx, ltDry); code(err) != "UnauthorizedOperation" {
		t.Errorf("denied CreateLaunchTemplate dry run: %v", err)
	}
	e.f.DenyAction("ssm:GetParameter")
	if _, err := e.f.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/x")}); code(err) != "AccessDeniedException" {
		t.Errorf("denied GetParameter: %v", err)
	}
}

func TestSubnetIPExhaustion(t *testing.T) {
	e := newEnv(t, 1)
	subnet := e.w.SubnetIDs[0]
	if err := e.f.SetSubnetAvailableIPs(subnet, 1); err != nil {
		t.Fatal(err)
	}
	in := e.fleet("on-demand", 1, [2]string{"m5.large", "us-east-1a"})
	in.LaunchTemplateConfigs[0].Overrides[0].SubnetId = aws.String(subnet)
	out, _ := e.f.CreateFleet(ctx, in)
	ids := fleetIDs(out)
	if len(ids) != 1 {
		t.Fatalf("first launch: %+v", out)
	}
	if n, _ := e.f.SubnetAvailableIPs(subnet); n != 0 {
		t.Fatalf("free IPs %d after launch", n)
	}
	out, _ = e.f.CreateFleet(ctx, in)
	if len(out.Instances) != 0 || *out.Errors[0].ErrorCode != "InsufficientFreeAddressesInSubnet" || !strings.Contains(*out.Errors[0].ErrorMessage, subnet) {
		t.Fatalf("exhausted subnet: %+v", out.Errors)
	}
	sub, _ := e.f.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: []string{subnet}})
	if *sub.Subnets[0].AvailableIpAddressCount != 0 {
		t.Errorf("DescribeSubnets shows %d free", *sub.Subnets[0].AvailableIpAddressCount)
	}
	if _, err := e.f.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: ids}); err != nil {
		t.Fatal(err)
	}
	e.clk.Step(fake.DefaultShutdownDelay)
	if n, _ := e.f.SubnetAvailableIPs(subnet); n != 1 {
		t.Fatalf("free IPs %d after termination, want 1", n)
	}
}

func TestInstanceLifecycle(t *testing.T) {
	e := newEnv(t, 1)
	out, _ := e.f.CreateFleet(ctx, e.fleet("on-demand", 1, [2]string{"m5.large", "us-east-1a"}))
	id := fleetIDs(out)[0]
	state := func() string {
		insts := describe(t, e.f, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
		return string(insts[0].State.Name)
	}
	steps := []struct {
		step time.Duration
		do   func()
		want string
	}{
		{0, nil, "pending"},
		{fake.DefaultBootDelay - time.Second, nil, "pending"},
		{time.Second, nil, "running"},
		{time.Minute, func() {
			out, err := e.f.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
			if err != nil || out.TerminatingInstances[0].PreviousState.Name != "running" || out.TerminatingInstances[0].CurrentState.Name != "shutting-down" {
				t.Fatalf("terminate: %+v %v", out, err)
			}
		}, "shutting-down"},
		{fake.DefaultShutdownDelay, nil, "terminated"},
	}
	for i, s := range steps {
		e.clk.Step(s.step)
		if s.do != nil {
			s.do()
		}
		if got := state(); got != s.want {
			t.Fatalf("step %d: state %s, want %s", i, got, s.want)
		}
	}
	running := describe(t, e.f, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{{Name: aws.String("instance-state-name"), Values: []string{"pending", "running"}}}})
	if len(running) != 0 {
		t.Errorf("state filter returned %d instances", len(running))
	}
	e.clk.Step(fake.DefaultTerminatedRetention)
	if _, err := e.f.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}}); code(err) != "InvalidInstanceID.NotFound" {
		t.Errorf("instance still visible after retention: %v", err)
	}
	if _, err := e.f.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}}); code(err) != "InvalidInstanceID.NotFound" {
		t.Errorf("terminating a gone instance: %v", err)
	}
}

func TestDescribeInstancesFiltersAndTags(t *testing.T) {
	e := newEnv(t, 1)
	out, _ := e.f.CreateFleet(ctx, e.fleet("on-demand", 3, [2]string{"m5.large", "us-east-1a"}))
	ids := fleetIDs(out)
	if _, err := e.f.CreateTags(ctx, &ec2.CreateTagsInput{Resources: ids[:1], Tags: []ec2types.Tag{{Key: aws.String("karpenter.sh/nodeclaim"), Value: aws.String("default-abc")}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.f.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{"i-00000000000000000"}, Tags: []ec2types.Tag{{Key: aws.String("a"), Value: aws.String("b")}}}); code(err) != "InvalidInstanceID.NotFound" {
		t.Errorf("tagging a missing instance: %v", err)
	}
	f := func(name string, values ...string) ec2types.Filter {
		return ec2types.Filter{Name: aws.String(name), Values: values}
	}
	cases := []struct {
		name    string
		filters []ec2types.Filter
		want    int
	}{
		{"instance-id", []ec2types.Filter{f("instance-id", ids[1])}, 1},
		{"tag", []ec2types.Filter{f("tag:karpenter.sh/nodeclaim", "default-abc")}, 1},
		{"tag-key", []ec2types.Filter{f("tag-key", "karpenter.sh/nodepool")}, 3},
		{"tag and state", []ec2types.Filter{f("tag:eks:eks-cluster-name", "demo"), f("instance-state-name", "pending", "running")}, 3},
		{"state none", []ec2types.Filter{f("instance-state-name", "stopped")}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := describe(t, e.f, &ec2.DescribeInstancesInput{Filters: tc.filters}); len(got) != tc.want {
				t.Errorf("got %d, want %d", len(got), tc.want)
			}
		})
	}
	page, err := e.f.DescribeInstances(ctx, &ec2.DescribeInstancesInput{MaxResults: aws.Int32(5)})
	if err != nil || page.NextToken != nil {
		t.Errorf("single page: %v %v", err, page.NextToken)
	}
	if _, err := e.f.DescribeInstances(ctx, &ec2.DescribeInstancesInput{MaxResults: aws.Int32(5), InstanceIds: ids}); code(err) != "InvalidParameterCombination" {
		t.Errorf("MaxResults with IDs: %v", err)
	}
}

// TestInstanceLaunchData: an instance snapshot carries a copy of the launch
// data, user data included, which can be changed without changing the fake;
// and a snapshot of an instance launched with 15,512 bytes of user data
// allocates no more than one of an instance launched with 20 bytes (the
// simulated kubelets take one on every pass). Before, each snapshot ran the
// user data through a JSON round trip.
func TestInstanceLaunchData(t *testing.T) {
	e := newEnv(t, 1)
	small := e.launchWithUserData(t, "small", "#!/bin/bash\necho hi\n")
	large := e.launchWithUserData(t, "large", "#!/bin/bash\n"+strings.Repeat("echo 'a line of the user data'\n", 500))

	want := base64.StdEncoding.EncodeToString([]byte("#!/bin/bash\necho hi\n"))
	info, _ := e.f.Instance(small)
	d := info.LaunchTemplateData
	if d == nil || d.UserData == nil || *d.UserData != want || info.UserData != want || d.ImageId == nil || len(d.SecurityGroupIds) != 1 {
		t.Fatalf("launch data %+v (user data %q), want the template's", d, info.UserData)
	}
	*d.UserData, *d.ImageId, d.SecurityGroupIds[0] = "changed", "changed", "changed"
	d.MetadataOptions.HttpPutResponseHopLimit = aws.Int32(9)
	again, _ := e.f.Instance(small)
	if a := again.LaunchTemplateData; *a.UserData != want || *a.ImageId == "changed" || a.SecurityGroupIds[0] == "changed" || *a.MetadataOptions.HttpPutResponseHopLimit != 1 {
		t.Errorf("after changing a snapshot's launch data the next one has %+v", a)
	}
	if data, _ := e.f.LaunchTemplateData("small"); *data.UserData != want {
		t.Errorf("after changing a snapshot's launch data the template's user data is %q", *data.UserData)
	}

	allocated := func(id string) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range 20 {
			if _, ok := e.f.Instance(id); !ok {
				t.Fatalf("no instance %s", id)
			}
		}
		runtime.ReadMemStats(&after)
		return (after.TotalAlloc - before.TotalAlloc) / 20
	}
	allocated(large) // the first snapshot may grow caches
	if s, l := allocated(small), allocated(large); l > s+1024 {
		t.Errorf("a snapshot allocates %d bytes with 15,512 bytes of user data and %d with 20, want no more than 1 KiB apart", l, s)
	}
}

// launchWithUserData launches an instance from a new launch template named
// name with the user data and returns its ID.
func (e *env) launchWithUserData(t *testing.T, name, userData string) string {
	t.Helper()
	data, ok := e.f.LaunchTemplateData(e.lt)
	if !ok {
		t.Fatal("no launch template")
	}
	data.UserData = aws.String(base64.StdEncoding.EncodeToString([]byte(userData)))
	if _, err := e.f.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String(name), LaunchTemplateData: data}); err != nil {
		t.Fatal(err)
	}
	e.lt = name
	fl, err := e.f.CreateFleet(ctx, e.fleet("on-demand", 1, [2]string{"m5.large", "us-east-1a"}))
	if err != nil || len(fl.Instances) != 1 {
		t.Fatalf("CreateFleet: %v %+v", err, fl)
	}
	return fl.Instances[0].InstanceIds[0]
}

func TestLaunchTemplates(t *testing.T) {
	e := newEnv(t, 1)
	if _, err := e.f.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String(e.lt), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{}}); code(err) != "InvalidLaunchTemplateName.AlreadyExistsException" {
		t.Errorf("duplicate: %v", err)
	}
	big := base64.StdEncoding.EncodeToString(make([]byte, fake.MaxUserDataBytes+1))
	if _, err := e.f.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("big"), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{UserData: aws.String(big)}}); code(err) != "InvalidParameterValue" {
		t.Errorf("oversized user data: %v", err)
	}
	out, err := e.f.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{Filters: []ec2types.Filter{{Name: aws.String("tag:eks:eks-cluster-name"), Values: []string{"demo"}}}})
	if err != nil || len(out.LaunchTemplates) != 1 || *out.LaunchTemplates[0].LaunchTemplateName != e.lt {
		t.Fatalf("by tag: %+v %v", out, err)
	}
	if _, err := e.f.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{"nope"}}); code(err) != "InvalidLaunchTemplateName.NotFoundException" {
		t.Errorf("missing name: %v", err)
	}
	data, ok := e.f.LaunchTemplateData(e.lt)
	if !ok || *data.MetadataOptions.HttpPutResponseHopLimit != 1 || data.IamInstanceProfile == nil {
		t.Errorf("recorded data %+v", data)
	}
	if _, err := e.f.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: aws.String(e.lt)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.f.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: aws.String(e.lt)}); code(err) != "InvalidLaunchTemplateName.NotFoundException" {
		t.Errorf("second delete: %v", err)
	}
	fl, _ := e.f.CreateFleet(ctx, e.fleet("on-demand", 1, [2]string{"m5.large", "us-east-1a"}))
	if len(fl.Errors) != 1 || *fl.Errors[0].ErrorCode != "InvalidLaunchTemplateName.NotFoundException" {
		t.Errorf("fleet with a deleted template: %+v", fl.Errors)
	}
}

func TestSQSVisibilityTimeout(t *testing.T) {
	e := newEnv(t, 1)
	url, err := e.f.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("demo")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.f.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: url.QueueUrl, MessageBody: aws.String("hello")}); err != nil {
		t.Fatal(err)
	}
	recv := func() []sqstypes.Message {
		out, err := e.f.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url.QueueUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 20,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{"All"}})
		if err != nil {
			t.Fatal(err)
		}
		return out.Messages
	}
	first := recv()
	if len(first) != 1 || *first[0].Body != "hello" || first[0].Attributes["ApproximateReceiveCount"] != "1" || *first[0].MD5OfBody != "5d41402abc4b2a76b9719d911017c592" {
		t.Fatalf("first receive %+v", first)
	}
	e.clk.Step(19 * time.Second)
	if got := recv(); len(got) != 0 {
		t.Fatalf("message visible during its visibility timeout")
	}
	e.clk.Step(time.Second)
	second := recv()
	if len(second) != 1 || second[0].Attributes["ApproximateReceiveCount"] != "2" {
		t.Fatalf("second receive %+v", second)
	}
	if _, err := e.f.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: url.QueueUrl, ReceiptHandle: first[0].ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	if e.f.QueueMessages("demo") != 1 {
		t.Fatal("a stale receipt handle deleted the message")
	}
	if _, err := e.f.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: url.QueueUrl, ReceiptHandle: second[0].ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	if e.f.QueueMessages("demo") != 0 {
		t.Fatal("message not deleted")
	}
	var invalid *sqstypes.ReceiptHandleIsInvalid
	if _, err := e.f.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: url.QueueUrl, ReceiptHandle: aws.String("bogus")}); !errors.As(err, &invalid) {
		t.Errorf("bogus handle: %v", err)
	}
	var missing *sqstypes.QueueDoesNotExist
	if _, err := e.f.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("arn:aws:sqs:us-east-1:123456789012:demo")}); !errors.As(err, &missing) {
		t.Errorf("queue ARN instead of name: %v", err)
	}
	// Retention: the standard cluster's queue keeps messages 300s.
	_ = e.f.SendMessageBody("demo", "old")
	e.clk.Step(301 * time.Second)
	if got := recv(); len(got) != 0 {
		t.Errorf("expired message delivered")
	}
}

func TestInterruptionMessages(t *testing.T) {
	e := newEnv(t, 1)
	out, _ := e.f.CreateFleet(ctx, e.fleet("spot", 1, [2]string{"m5.large", "us-east-1b"}))
	id := fleetIDs(out)[0]
	cases := []struct {
		name       string
		send       func() error
		source     string
		detailType string
		resource   string
		detail     map[string]any
	}{
		{"spot", func() error { return e.f.SendSpotInterruptionWarning("demo", id) }, "aws.ec2", "EC2 Spot Instance Interruption Warning",
			"arn:aws:ec2:us-east-1b:instance/" + id, map[string]any{"instance-id": id, "instance-action": "terminate"}},
		{"rebalance", func() error { return e.f.SendRebalanceRecommendation("demo", id) }, "aws.ec2", "EC2 Instance Rebalance Recommendation",
			"arn:aws:ec2:us-east-1b:instance/" + id, map[string]any{"instance-id": id}},
		{"stopping", func() error { return e.f.SendStateChange("demo", id, "stopping") }, "aws.ec2", "EC2 Instance State-change Notification",
			"arn:aws:ec2:us-east-1:123456789012:instance/" + id, map[string]any{"instance-id": id, "state": "stopping"}},
		{"terminated", func() error { return e.f.SendStateChange("demo", id, "terminated") }, "aws.ec2", "EC2 Instance State-change Notification",
			"arn:aws:ec2:us-east-1:123456789012:instance/" + id, map[string]any{"instance-id": id, "state": "terminated"}},
		{"health", func() error {
			return e.f.SendScheduledChange("demo", []string{id}, "", epoch.Add(24*time.Hour), epoch.Add(48*time.Hour))
		}, "aws.health", "AWS Health Event", id, map[string]any{
			"service": "EC2", "eventTypeCategory": "scheduledChange", "eventTypeCode": "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED",
			"startTime": "Thu, 2 Jul 2026 12:00:00 GMT", "affectedEntities": []any{map[string]any{"entityValue": id}},
		}},
		{"capacity reservation", func() error { return e.f.SendCapacityReservationInterruption("demo", id) }, "aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning",
			"arn:aws:ec2:us-east-1:123456789012:instance/" + id, map[string]any{"instance-id": id, "instance-action": "terminate"}},
	}
	url := "https://sqs.us-east-1.amazonaws.com/123456789012/demo"
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.send(); err != nil {
				t.Fatal(err)
			}
			got, err := e.f.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10})
			if err != nil || len(got.Messages) != 1 {
				t.Fatalf("receive: %v %v", got, err)
			}
			defer e.f.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: got.Messages[0].ReceiptHandle})
			var ev struct {
				Version    string         `json:"version"`
				ID         string         `json:"id"`
				DetailType string         `json:"detail-type"`
				Source     string         `json:"source"`
				Account    string         `json:"account"`
				Time       string         `json:"time"`
				Region     string         `json:"region"`
				Resources  []string       `json:"resources"`
				Detail     map[string]any `json:"detail"`
			}
			if err := json.Unmarshal([]byte(*got.Messages[0].Body), &ev); err != nil {
				t.Fatal(err)
			}
			if ev.Version != "0" || ev.Source != tc.source || ev.DetailType != tc.detailType || ev.Account != "123456789012" ||
				ev.Region != "us-east-1" || ev.Time != "2026-07-01T12:00:00Z" || len(ev.ID) != 36 || len(ev.Resources) != 1 || ev.Resources[0] != tc.resource {
				t.Errorf("envelope %+v", ev)
			}
			for k, v := range tc.detail {
				if !reflect.DeepEqual(ev.Detail[k], v) {
					t.Errorf("detail[%s] = %v, want %v", k, ev.Detail[k], v)
				}
			}
		})
	}
}

func TestInterruptSpotInstanceTerminatesAfterNotice(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	f := fake.New(fake.Options{Seed: 3, Clock: clk, InstanceTypes: []string{"m5.large"}, EventQueue: "events"})
	e := &env{f: f, clk: clk}
	w, _ := f.StandardCluster("demo", "1.33")
	f.CreateQueue("events", 0)
	e.w = w
	_ = f.AddInstanceProfile("p", w.NodeRole)
	_, _ = f.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("spot-lt"), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
		ImageId: aws.String(w.Images["al2023/x86_64/standard"]), IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String("p")},
	}})
	e.lt = "spot-lt"
	out, _ := f.CreateFleet(ctx, e.fleet("spot", 1, [2]string{"m5.large", "us-east-1a"}))
	id := fleetIDs(out)[0]
	clk.Step(time.Minute)
	if err := f.InterruptSpotInstance("demo", id); err != nil {
		t.Fatal(err)
	}
	if f.QueueMessages("demo") != 1 {
		t.Fatal("no warning sent")
	}
	clk.Step(fake.SpotInterruptionNotice - time.Second)
	if info, _ := f.Instance(id); info.State != "running" {
		t.Fatalf("state %s before the notice ran out", info.State)
	}
	clk.Step(time.Second)
	insts := describe(t, f, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if insts[0].State.Name != "shutting-down" || *insts[0].StateReason.Code != "Server.SpotInstanceTermination" {
		t.Fatalf("after notice: %s %+v", insts[0].State.Name, insts[0].StateReason)
	}
	clk.Step(fake.DefaultShutdownDelay)
	// The event queue saw pending, running, shutting-down, terminated in time order.
	msgs, _ := f.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String("https://sqs.us-east-1.amazonaws.com/123456789012/events"), MaxNumberOfMessages: 10})
	var states []string
	for _, m := range msgs.Messages {
		var ev struct {
			Detail struct {
				State string `json:"state"`
			} `json:"detail"`
		}
		_ = json.Unmarshal([]byte(*m.Body), &ev)
		states = append(states, ev.Detail.State)
	}
	if want := []string{"pending", "running", "shutting-down", "terminated"}; !reflect.DeepEqual(states, want) {
		t.Errorf("state events %v, want %v", states, want)
	}
}

func TestErrorAndThrottleInjection(t *testing.T) {
	e := newEnv(t, 1)
	e.f.ResetCalls()
	e.f.InjectError("DescribeSubnets", fake.APIError("InternalError", "boom"), 2)
	for i := range 3 {
		_, err := e.f.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
		if i < 2 {
			var oe *smithy.OperationError
			if code(err) != "InternalError" || !errors.As(err, &oe) || oe.ServiceID != "EC2" || oe.OperationName != "DescribeSubnets" {
				t.Fatalf("call %d: %v", i, err)
			}
		} else if err != nil {
			t.Fatalf("call %d after injections ran out: %v", i, err)
		}
	}
	if n := e.f.Calls("DescribeSubnets"); n != 3 {
		t.Errorf("Calls = %d, want 3", n)
	}
	throttles := []struct{ api, code string }{
		{"CreateFleet", "RequestLimitExceeded"},
		{"GetParameter", "ThrottlingException"},
		{"GetInstanceProfile", "Throttling"},
		{"ReceiveMessage", "ThrottlingException"},
	}
	for _, tc := range throttles {
		e.f.Throttle(tc.api, 1)
	}
	_, err := e.f.CreateFleet(ctx, e.fleet("on-demand", 1, [2]string{"m5.large", "us-east-1a"}))
	_, err2 := e.f.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/x")})
	_, err3 := e.f.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String("demo_profile")})
	_, err4 := e.f.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String("x")})
	for i, err := range []error{err, err2, err3, err4} {
		if code(err) != throttles[i].code {
			t.Errorf("%s: %v, want %s", throttles[i].api, err, throttles[i].code)
		}
	}
	e.f.InjectError("GetRole", errors.New("connection reset"), -1)
	for range 3 {
		if _, err := e.f.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String(e.w.NodeRole)}); err == nil || !strings.Contains(err.Error(), "connection reset") {
			t.Fatalf("persistent injection: %v", err)
		}
	}
	e.f.ClearErrors()
	if _, err := e.f.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String(e.w.NodeRole)}); err != nil {
		t.Fatal(err)
	}
}

// TestErrorWindow checks that an error injected until a time fails every
// call before it and none from it on, and that a count injected behind it
// is used up after the window.
func TestErrorWindow(t *testing.T) {
	e := newEnv(t, 1)
	start := e.clk.Now()
	e.f.InjectErrorUntil("DescribeSubnets", fake.APIError("ServiceUnavailable", "down"), start.Add(10*time.Minute))
	e.f.InjectError("DescribeSubnets", fake.APIError("InternalError", "boom"), 1)
	e.f.InjectErrorUntil("DescribeImages", fake.APIError("InternalError", "gone"), start)
	for _, tc := range []struct {
		at   time.Duration
		want string
	}{
		{0, "ServiceUnavailable"},
		{5 * time.Minute, "ServiceUnavailable"},
		{10*time.Minute - time.Nanosecond, "ServiceUnavailable"},
		{10 * time.Minute, "InternalError"},
		{10 * time.Minute, ""},
	} {
		e.clk.SetTime(start.Add(tc.at))
		_, err := e.f.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
		if code(err) != tc.want || (tc.want == "") != (err == nil) {
			t.Errorf("at %s: %v, want %q", tc.at, err, tc.want)
		}
	}
	if _, err := e.f.DescribeImages(ctx, &ec2.DescribeImagesInput{}); err != nil {
		t.Errorf("a window that has already ended failed a call: %v", err)
	}
	if ops := fake.Operations(); !slices.Contains(ops, "CreateFleet") || !slices.Contains(ops, "GetParameter") || !slices.IsSorted(ops) {
		t.Errorf("Operations() = %v", ops)
	}
}

func TestDeterminism(t *testing.T) {
	run := func(seed uint64) string {
		e := newEnv(t, seed)
		_, _ = e.f.CreateFleet(ctx, e.fleet("spot", 3, [2]string{"m5.large", "us-east-1a"}, [2]string{"m5.large", "us-east-1b"}, [2]string{"m5.xlarge", "us-east-1c"}))
		_, _ = e.f.CreateFleet(ctx, e.fleet("on-demand", 2, [2]string{"c5.large", "us-east-1b"}, [2]string{"m5.large", "us-east-1c"}))
		e.clk.Step(time.Minute)
		out, err := e.f.DescribeInstances(ctx, &ec2.DescribeInstancesInput{})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(out.Reservations)
		return string(b)
	}
	a, b := run(42), run(42)
	if a != b {
		t.Fatal("same seed and calls gave different worlds")
	}
	if run(43) == a {
		t.Fatal("different seeds gave the same world")
	}
}

func TestPrices(t *testing.T) {
	e := newEnv(t, 1)
	hist, err := e.f.DescribeSpotPriceHistory(ctx, &ec2.DescribeSpotPriceHistoryInput{
		InstanceTypes: []ec2types.InstanceType{"m5.large"}, ProductDescriptions: []string{"Linux/UNIX", "Linux/UNIX (Amazon VPC)"}, StartTime: aws.Time(epoch),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(hist.SpotPriceHistory) != 6 {
		t.Fatalf("got %d entries, want 3 zones × 2 descriptions", len(hist.SpotPriceHistory))
	}
	od, _ := e.f.OnDemandPrice("m5.large")
	prices := map[string]bool{}
	for _, h := range hist.SpotPriceHistory {
		p, _ := strconv.ParseFloat(*h.SpotPrice, 64)
		if p < od*0.35*0.9-1e-6 || p > od*0.35*1.1+1e-6 {
			t.Errorf("spot price %v outside the band around %v", p, od*0.35)
		}
		prices[*h.AvailabilityZone] = true
	}
	if len(prices) != 3 {
		t.Errorf("zones %v", prices)
	}
	e.f.SetSpotPrice("m5.large", "us-east-1a", 0.05)
	hist, _ = e.f.DescribeSpotPriceHistory(ctx, &ec2.DescribeSpotPriceHistoryInput{AvailabilityZone: aws.String("us-east-1a"), InstanceTypes: []ec2types.InstanceType{"m5.large"}})
	if len(hist.SpotPriceHistory) != 1 || *hist.SpotPriceHistory[0].SpotPrice != "0.050000" {
		t.Errorf("set price: %+v", hist.SpotPriceHistory)
	}

	out, err := e.f.GetProducts(ctx, &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), Filters: []pricingtypes.Filter{
		{Type: pricingtypes.FilterTypeTermMatch, Field: aws.String("regionCode"), Value: aws.String("us-east-1")},
		{Type: pricingtypes.FilterTypeTermMatch, Field: aws.String("operatingSystem"), Value: aws.String("Linux")},
		{Type: pricingtypes.FilterTypeTermMatch, Field: aws.String("tenancy"), Value: aws.String("Shared")},
		{Type: pricingtypes.FilterTypeTermMatch, Field: aws.String("productFamily"), Value: aws.String("Compute Instance")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.PriceList) != 5 {
		t.Fatalf("got %d products", len(out.PriceList))
	}
	for _, doc := range out.PriceList {
		name, got, ok := parsePrice(doc)
		if !ok {
			t.Fatalf("unreadable product %s", doc)
		}
		if want, _ := e.f.OnDemandPrice(name); got != want {
			t.Errorf("%s: price %v, want %v", name, got, want)
		}
	}
}

// The Price List documents are rendered once per price: asking twice gives
// the same documents, and a new price gives a new document.
func TestGetProductsFollowsPriceChanges(t *testing.T) {
	e := newEnv(t, 1)
	in := &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), Filters: []pricingtypes.Filter{
		{Type: pricingtypes.FilterTypeTermMatch, Field: aws.String("instanceType"), Value: aws.String("m5.large")},
	}}
	price := func() (string, float64) {
		t.Helper()
		out, err := e.f.GetProducts(ctx, in)
		if err != nil || len(out.PriceList) != 1 {
			t.Fatalf("GetProducts = %v, %v; want one product", out, err)
		}
		name, p, ok := parsePrice(out.PriceList[0])
		if !ok || name != "m5.large" {
			t.Fatalf("unreadable document %s", out.PriceList[0])
		}
		return out.PriceList[0], p
	}
	doc, p := price()
	if want, _ := e.f.OnDemandPrice("m5.large"); p != want {
		t.Errorf("price %v, want %v", p, want)
	}
	if again, _ := price(); again != doc {
		t.Error("the same product rendered differently")
	}
	e.f.SetOnDemandPrice("m5.large", 0.5)
	if _, p := price(); p != 0.5 {
		t.Errorf("after SetOnDemandPrice: price %v, want 0.5", p)
	}
}

func parsePrice(doc string) (string, float64, bool) {
	var p struct {
		Product struct {
			Attributes map[string]string `json:"attributes"`
		} `json:"product"`
		Terms struct {
			OnDemand map[string]struct {
				PriceDimensions map[string]struct {
					PricePerUnit map[string]string `json:"pricePerUnit"`
				} `json:"priceDimensions"`
			} `json:"OnDemand"`
		} `json:"terms"`
	}
	if err := json.Unmarshal([]byte(doc), &p); err != nil {
		return "", 0, false
	}
	for _, term := range p.Terms.OnDemand {
		for _, dim := range term.PriceDimensions {
			v, err := strconv.ParseFloat(dim.PricePerUnit["USD"], 64)
			return p.Product.Attributes["instanceType"], v, err == nil
		}
	}
	return "", 0, false
}

func TestIAMInstanceProfiles(t *testing.T) {
	e := newEnv(t, 1)
	name := aws.String("demo_profile")
	got, err := e.f.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: name})
	if err != nil || len(got.InstanceProfile.Roles) != 1 || *got.InstanceProfile.Roles[0].RoleName != e.w.NodeRole ||
		*got.InstanceProfile.Arn != "arn:aws:iam::123456789012:instance-profile/karpenter/us-east-1/demo/uid/demo_profile" {
		t.Fatalf("profile %+v %v", got, err)
	}
	steps := []struct {
		name string
		call func() error
		want any
	}{
		{"create duplicate", func() error {
			_, err := e.f.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: name})
			return err
		}, &iamtypes.EntityAlreadyExistsException{}},
		{"second role", func() error {
			e.f.AddRole("other")
			_, err := e.f.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: name, RoleName: aws.String("other")})
			return err
		}, &iamtypes.LimitExceededException{}},
		{"delete with role", func() error {
			_, err := e.f.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: name})
			return err
		}, &iamtypes.DeleteConflictException{}},
		{"tag", func() error {
			_, err := e.f.TagInstanceProfile(ctx, &iam.TagInstanceProfileInput{InstanceProfileName: name, Tags: []iamtypes.Tag{{Key: aws.String("k"), Value: aws.String("v")}}})
			return err
		}, nil},
		{"remove role", func() error {
			_, err := e.f.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: name, RoleName: aws.String(e.w.NodeRole)})
			return err
		}, nil},
		{"delete", func() error {
			_, err := e.f.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: name})
			return err
		}, nil},
		{"get deleted", func() error {
			_, err := e.f.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: name})
			return err
		}, &iamtypes.NoSuchEntityException{}},
		{"get missing role", func() error {
			_, err := e.f.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String("nope")})
			return err
		}, &iamtypes.NoSuchEntityException{}},
	}
	for _, s := range steps {
		err := s.call()
		if s.want == nil {
			if err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
			continue
		}
		target := reflect.New(reflect.TypeOf(s.want))
		if !errors.As(err, target.Interface()) {
			t.Fatalf("%s: got %v, want %T", s.name, err, s.want)
		}
	}
	// A launch with the deleted profile fails like EC2 says.
	out, _ := e.f.CreateFleet(ctx, e.fleet("on-demand", 1, [2]string{"m5.large", "us-east-1a"}))
	if len(out.Errors) != 1 || !strings.Contains(*out.Errors[0].ErrorMessage, "Invalid IAM Instance Profile name") {
		t.Errorf("launch with a deleted profile: %+v", out.Errors)
	}
}

func TestEKS(t *testing.T) {
	e := newEnv(t, 1)
	out, err := e.f.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String("demo")})
	if err != nil {
		t.Fatal(err)
	}
	c := out.Cluster
	if *c.Version != "1.33" || *c.KubernetesNetworkConfig.ServiceIpv4Cidr != "10.100.0.0/16" || c.Status != "ACTIVE" ||
		!strings.HasPrefix(*c.Endpoint, "https://") || *c.CertificateAuthority.Data == "" {
		t.Errorf("cluster %+v", c)
	}
	entries, err := e.f.ListAccessEntries(ctx, &eks.ListAccessEntriesInput{ClusterName: aws.String("demo")})
	if err != nil || !reflect.DeepEqual(entries.AccessEntries, []string{e.w.NodeRoleARN}) {
		t.Errorf("entries %+v %v", entries, err)
	}
	if !e.f.AccessEntryAllows(e.w.NodeRole) || e.f.AccessEntryAllows("someone-else") {
		t.Error("AccessEntryAllows")
	}
	e.f.RemoveAccessEntry("demo", e.w.NodeRoleARN)
	if e.f.AccessEntryAllows(e.w.NodeRole) {
		t.Error("removed entry still allows")
	}
	if _, err := e.f.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String("nope")}); code(err) != "ResourceNotFoundException" {
		t.Errorf("missing cluster: %v", err)
	}
}

func TestCapacityReservations(t *testing.T) {
	e := newEnv(t, 1)
	id, err := e.f.AddCapacityReservation(fake.CapacityReservation{InstanceType: "m5.large", Zone: "us-east-1a", Total: 1, Tags: map[string]string{"team": "a"}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.f.DescribeCapacityReservations(ctx, &ec2.DescribeCapacityReservationsInput{Filters: []ec2types.Filter{{Name: aws.String("tag:team"), Values: []string{"a"}}}})
	if err != nil || len(out.CapacityReservations) != 1 || *out.CapacityReservations[0].AvailableInstanceCount != 1 {
		t.Fatalf("describe %+v %v", out, err)
	}
	_, err = e.f.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("reserved"), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
		ImageId: aws.String(e.w.Images["al2023/x86_64/standard"]),
		CapacityReservationSpecification: &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{
			CapacityReservationPreference: "capacity-reservations-only", CapacityReservationTarget: &ec2types.CapacityReservationTarget{CapacityReservationId: aws.String(id)},
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	e.lt = "reserved"
	fl, _ := e.f.CreateFleet(ctx, e.fleet("on-demand", 1, [2]string{"m5.large", "us-east-1a"}))
	ids := fleetIDs(fl)
	if len(ids) != 1 {
		t.Fatalf("reserved launch %+v", fl)
	}
	if info, _ := e.f.Instance(ids[0]); info.CapacityReservationID != id {
		t.Errorf("instance not in the reservation: %+v", info)
	}
	// DescribeInstances says the instance was launched into the
	// reservation by targeting it.
	desc, err := e.f.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: ids})
	if err != nil {
		t.Fatal(err)
	}
	inst := desc.Reservations[0].Instances[0]
	if s := inst.CapacityReservationSpecification; aws.ToString(inst.CapacityReservationId) != id || s == nil ||
		s.CapacityReservationPreference != ec2types.CapacityReservationPreferenceCapacityReservationsOnly ||
		s.CapacityReservationTarget == nil || aws.ToString(s.CapacityReservationTarget.CapacityReservationId) != id {
		t.Errorf("described instance: reservation %v, specification %+v", aws.ToString(inst.CapacityReservationId), s)
	}
	// The instance keeps what it was launched with when its launch template
	// is deleted (stevedore deletes unused templates), as EC2 does.
	if _, err := e.f.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: aws.String("reserved")}); err != nil {
		t.Fatal(err)
	}
	desc, err = e.f.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: ids})
	if err != nil {
		t.Fatal(err)
	}
	if s := desc.Reservations[0].Instances[0].CapacityReservationSpecification; s == nil || s.CapacityReservationPreference != ec2types.CapacityReservationPreferenceCapacityReservationsOnly {
		t.Errorf("after deleting the launch template the instance reports %+v, want its capacity-reservations-only launch", s)
	}
	if info, _ := e.f.Instance(ids[0]); info.LaunchTemplateData == nil || info.LaunchTemplateData.CapacityReservationSpecification == nil {
		t.Errorf("after deleting the launch template the instance's launch data is %+v", info.LaunchTemplateData)
	}
	if _, err := e.f.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("reserved"), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
		ImageId: aws.String(e.w.Images["al2023/x86_64/standard"]),
		CapacityReservationSpecification: &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{
			CapacityReservationPreference: "capacity-reservations-only", CapacityReservationTarget: &ec2types.CapacityReservationTarget{CapacityReservationId: aws.String(id)},
		},
	}}); err != nil {
		t.Fatal(err)
	}
	fl, _ = e.f.CreateFleet(ctx, e.fleet("on-demand", 1, [2]string{"m5.large", "us-east-1a"}))
	if len(fl.Errors) != 1 || *fl.Errors[0].ErrorCode != "ReservationCapacityExceeded" {
		t.Errorf("exhausted reservation: %+v", fl.Errors)
	}
	available := func() int32 {
		t.Helper()
		out, err := e.f.DescribeCapacityReservations(ctx, &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{id}})
		if err != nil {
			t.Fatal(err)
		}
		return *out.CapacityReservations[0].AvailableInstanceCount
	}
	if n := available(); n != 0 {
		t.Errorf("full reservation: %d available", n)
	}
	// Terminating the instance frees its slot once it has terminated.
	if _, err := e.f.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: ids}); err != nil {
		t.Fatal(err)
	}
	if n := available(); n != 0 {
		t.Errorf("while shutting down: %d available, want 0", n)
	}
	e.clk.Step(fake.DefaultShutdownDelay)
	if n := available(); n != 1 {
		t.Errorf("after termination: %d available, want 1", n)
	}
	fl, _ = e.f.CreateFleet(ctx, e.fleet("on-demand", 1, [2]string{"m5.large", "us-east-1a"}))
	if len(fleetIDs(fl)) != 1 {
		t.Errorf("launch into the freed slot: %+v", fl.Errors)
	}
}

func TestConcurrentUse(t *testing.T) {
	e := newEnv(t, 1)
	done := make(chan struct{})
	for g := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 20 {
				out, err := e.f.CreateFleet(ctx, e.fleet("on-demand", 1, [2]string{"m5.large", e.f.Zones()[(g+i)%3]}))
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = e.f.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: fleetIDs(out)})
				_, _ = e.f.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: fleetIDs(out)})
				_, _ = e.f.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(e.w.QueueURL), MessageBody: aws.String("x")})
			}
		}()
	}
	for range 8 {
		<-done
	}
	if got := len(e.f.InstanceIDs()); got != 160 {
		t.Errorf("%d instances, want 160", got)
	}
}

// TestDescribeInstanceTypesRepeatsItsAnswer: a second description of the
// catalog says exactly what the first said, and shares its nested values, so
// that the provider's refresh finds "unchanged" at the first pointer.
func TestDescribeInstanceTypesRepeatsItsAnswer(t *testing.T) {
	f := fake.New(fake.Options{})
	describe := func() []ec2types.InstanceTypeInfo { return allInstanceTypes(t, f) }
	first, second := describe(), describe()
	if len(first) == 0 || len(first) != len(second) {
		t.Fatalf("described %d then %d types", len(first), len(second))
	}
	if !reflect.DeepEqual(first, second) {
		t.Fatal("the second description differs from the first")
	}
	for i := range first {
		if first[i].VCpuInfo != second[i].VCpuInfo || first[i].NetworkInfo != second[i].NetworkInfo {
			t.Fatalf("%s: the second description built its values anew", first[i].InstanceType)
		}
	}
	// A caller changing its copy's top-level fields does not change the next answer.
	first[0].InstanceType = "changed"
	if third := describe(); third[0].InstanceType != second[0].InstanceType {
		t.Errorf("the next description says %s", third[0].InstanceType)
	}
}

// TestEnforcePolicy: with Karpenter's policy enforced, a call it grants
// goes through, one it does not grant fails with the service's
// authorization error and is listed, and the world's own calls (an
// interruption message sent to the queue) are not the controller's and
// pass.
func TestEnforcePolicy(t *testing.T) {
	e := newEnv(t, 41)
	pol := e.f.KarpenterPolicy(e.w.ClusterName, e.w.QueueName)
	e.f.EnforcePolicy(&pol)

	if _, err := e.f.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{}); err != nil {
		t.Errorf("DescribeSubnets: %v", err)
	}
	if _, err := e.f.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String("demo_profile")}); err != nil {
		t.Errorf("GetInstanceProfile: %v", err)
	}
	_, err := e.f.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String(e.w.NodeRole)})
	if code := apiCode(err); code != "AccessDenied" {
		t.Errorf("GetRole: %v (code %q), want AccessDenied: Karpenter's policy has no iam:GetRole", err, code)
	}
	// An instance profile created without the ownership tags.
	_, err = e.f.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String("untagged")})
	if code := apiCode(err); code != "AccessDenied" {
		t.Errorf("CreateInstanceProfile without tags: %v, want AccessDenied", err)
	}
	if _, err := e.f.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(e.w.QueueURL), MessageBody: aws.String("{}")}); err != nil {
		t.Errorf("SendMessage (the world's): %v", err)
	}
	want := []string{
		"GetRole: iam:GetRole on " + e.w.NodeRoleARN,
		"CreateInstanceProfile: iam:CreateInstanceProfile on arn:aws:iam::" + e.f.AccountID() + ":instance-profile/untagged",
	}
	if got := e.f.Denials(); !slices.Equal(got, want) {
		t.Errorf("Denials = %q\nwant %q", got, want)
	}
	_, _ = e.f.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String(e.w.NodeRole)})
	wantSummary := []string{want[1] + " (1 times)", want[0] + " (2 times)"}
	if got := e.f.DenialSummary(); !slices.Equal(got, wantSummary) {
		t.Errorf("DenialSummary = %q\nwant %q", got, wantSummary)
	}

	e.f.EnforcePolicy(nil)
	if _, err := e.f.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String(e.w.NodeRole)}); err != nil {
		t.Errorf("GetRole with no policy enforced: %v", err)
	}
}

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}
