package aws

import (
	"context"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/catalog"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/drift"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/launch"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/sdk"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/settings"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
)

var testTypes = []string{"c6i.large", "m6g.large", "m6i.large", "m6i.xlarge", "r6i.large"}

type env struct {
	t     *testing.T
	ctx   context.Context
	clk   *clocktesting.FakeClock
	aws   *fake.AWS
	world *fake.ClusterWorld
	nc    *awsv1.EC2NodeClass
	p     *Provider
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWith(t, testTypes, nil)
}

// newEnvWithTypes is newEnv with the fake describing only these types.
func newEnvWithTypes(t *testing.T, types []string) *env {
	t.Helper()
	return newEnvWith(t, types, nil)
}

// newEnvWith is newEnv with the fake describing only these types and the
// provider's clients passed through wrap (when not nil), for tests that
// watch the calls.
func newEnvWith(t *testing.T, types []string, wrap func(sdk.Clients) sdk.Clients) *env {
	t.Helper()
	return newEnvWithSettings(t, types, wrap, nil)
}

// newEnvWithSettings is newEnvWith with the provider's settings changed by
// set (when not nil).
func newEnvWithSettings(t *testing.T, types []string, wrap func(sdk.Clients) sdk.Clients, set func(*settings.Settings)) *env {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	f := fake.New(fake.Options{Seed: 7, Clock: clk, InstanceTypes: types})
	w, err := f.StandardCluster("test", "1.33")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.AddInstanceProfile("test-profile", w.NodeRole); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, ctx: context.Background(), clk: clk, aws: f, world: w}
	out, err := f.DescribeSubnets(e.ctx, &ec2.DescribeSubnetsInput{SubnetIds: w.SubnetIDs})
	if err != nil {
		t.Fatal(err)
	}
	var subnets []awsv1.Subnet
	for _, s := range out.Subnets {
		subnets = append(subnets, awsv1.Subnet{ID: *s.SubnetId, Zone: *s.AvailabilityZone, ZoneID: deref(s.AvailabilityZoneId)})
	}
	arch := func(a string) []corev1.NodeSelectorRequirement {
		return []corev1.NodeSelectorRequirement{{Key: wellknown.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{a}}}
	}
	e.nc = &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default", Generation: 1},
		Spec: awsv1.EC2NodeClassSpec{
			AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			Role:             w.NodeRole,
			Tags:             map[string]string{"team": "platform"},
		},
		Status: awsv1.EC2NodeClassStatus{
			Subnets:        subnets,
			SecurityGroups: []awsv1.SecurityGroup{{ID: w.SecurityGroupID}},
			AMIs: []awsv1.AMI{
				{ID: w.Images["al2023/x86_64/standard"], Requirements: arch(wellknown.ArchAMD64)},
				{ID: w.Images["al2023/arm64/standard"], Requirements: arch(wellknown.ArchARM64)},
			},
			InstanceProfile: "test-profile",
			Conditions: []metav1.Condition{{
				Type: awsv1.ConditionTypeReady, Status: metav1.ConditionTrue, ObservedGeneration: 1, Reason: "Ready",
			}},
		},
	}
	s := settings.Default()
	s.ClusterName = "test"
	if set != nil {
		set(&s)
	}
	clients := f.Clients()
	if wrap != nil {
		clients = wrap(clients)
	}
	p, err := New(Options{
		Clients:  clients,
		Region:   f.Region(),
		Settings: s,
		Clock:    clk,
		NodeClass: func(_ context.Context, name string) (*awsv1.EC2NodeClass, error) {
			if e.nc == nil || e.nc.Name != name {
				return nil, nil
			}
			return e.nc.DeepCopy(), nil
		},
		Cluster: ClusterInfo{Endpoint: "https://example.eks.amazonaws.com", CABundle: "Q0E=", ServiceCIDR: "10.100.0.0/16", DNS: []string{"10.100.0.10"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	e.p = p
	return e
}

func req(key string, values ...string) karpv1.NodeSelectorRequirementWithMinValues {
	return karpv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
}

func claim(name string, reqs ...karpv1.NodeSelectorRequirementWithMinValues) *karpv1.NodeClaim {
	return &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{wellknown.LabelNodePool: "default"}},
		Spec: karpv1.NodeClaimSpec{
			Requirements: reqs,
			Resources:    karpv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
			NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
		},
	}
}

func (e *env) create(nc *karpv1.NodeClaim) *karpv1.NodeClaim {
	e.t.Helper()
	out, err := e.p.Create(e.ctx, nc)
	if err != nil {
		e.t.Fatalf("Create(%s): %v", nc.Name, err)
	}
	return out
}

func instanceID(t *testing.T, nc *karpv1.NodeClaim) string {
	t.Helper()
	id, err := parseProviderID(nc.Status.ProviderID)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// cheapest returns the cheapest (type, zone) among the allowed types for a
// capacity type, by the fake's own prices.
func (e *env) cheapest(types []string, capacityType string) (string, string) {
	best, bt, bz := math.Inf(1), "", ""
	for _, it := range types {
		for _, z := range e.aws.Zones() {
			var p float64
			var ok bool
			if capacityType == wellknown.CapacityTypeSpot {
				p, ok = e.aws.SpotPrice(it, z)
			} else {
				p, ok = e.aws.OnDemandPrice(it)
			}
			if ok && p < best {
				best, bt, bz = p, it, z
			}
		}
	}
	return bt, bz
}

func TestCreateChoosesCapacityTypeAndCheapestOffering(t *testing.T) {
	amd := []string{"c6i.large", "m6i.large", "m6i.xlarge", "r6i.large"}
	tests := []struct {
		name          string
		capacityTypes []string
		want          string
	}{
		{"spot and on-demand allowed: spot first", []string{wellknown.CapacityTypeOnDemand, wellknown.CapacityTypeSpot}, wellknown.CapacityTypeSpot},
		{"spot only", []string{wellknown.CapacityTypeSpot}, wellknown.CapacityTypeSpot},
		{"on-demand only", []string{wellknown.CapacityTypeOnDemand}, wellknown.CapacityTypeOnDemand},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			out := e.create(claim("a", req(wellknown.LabelCapacityType, tt.capacityTypes...), req(wellknown.LabelArch, wellknown.ArchAMD64)))
			wantType, wantZone := e.cheapest(amd, tt.want)
			if got := out.Labels[wellknown.LabelCapacityType]; got != tt.want {
				t.Errorf("capacity type label = %q, want %q", got, tt.want)
			}
			if got := out.Labels[wellknown.LabelInstanceType]; got != wantType {
				t.Errorf("instance type = %q, want cheapest %q", got, wantType)
			}
			if tt.want == wellknown.CapacityTypeSpot {
				if got := out.Labels[wellknown.LabelTopologyZone]; got != wantZone {
					t.Errorf("zone = %q, want cheapest %q", got, wantZone)
				}
			}
			info, ok := e.aws.Instance(instanceID(t, out))
			if !ok {
				t.Fatal("instance not found in fake")
			}
			if info.CapacityType != tt.want || info.InstanceType != out.Labels[wellknown.LabelInstanceType] || info.Zone != out.Labels[wellknown.LabelTopologyZone] {
				t.Errorf("fake instance = %s %s %s, NodeClaim says %v", info.CapacityType, info.InstanceType, info.Zone, out.Labels)
			}
			if !strings.HasPrefix(out.Status.ProviderID, "aws:///"+info.Zone+"/i-") {
				t.Errorf("providerID = %q", out.Status.ProviderID)
			}
			if out.Status.ImageID != e.world.Images["al2023/x86_64/standard"] || info.ImageID != out.Status.ImageID {
				t.Errorf("imageID = %q (instance %q)", out.Status.ImageID, info.ImageID)
			}
			if out.Status.Capacity.Cpu().IsZero() || out.Status.Allocatable.Memory().IsZero() {
				t.Errorf("capacity/allocatable missing: %v %v", out.Status.Capacity, out.Status.Allocatable)
			}
			for _, k := range []string{wellknown.LabelArch, wellknown.LabelInstanceFamily, wellknown.LabelInstanceCPU, wellknown.LabelTopologyZoneID, wellknown.LabelTopologyRegion} {
				if out.Labels[k] == "" {
					t.Errorf("label %s missing", k)
				}
			}
			if out.Annotations[wellknown.AnnotationEC2NodeClassHash] != drift.Hash(e.nc, "Q0E=") ||
				out.Annotations[wellknown.AnnotationEC2NodeClassHashVersion] != drift.HashVersion {
				t.Errorf("hash annotations = %v", out.Annotations)
			}
		})
	}
}

func TestCreateTagsAndLaunchTemplateReuse(t *testing.T) {
	e := newEnv(t)
	pin := []karpv1.NodeSelectorRequirementWithMinValues{req(wellknown.LabelInstanceType, "m6i.large"), req(wellknown.LabelCapacityType, wellknown.CapacityTypeOnDemand)}
	a := e.create(claim("a", pin...))
	b := e.create(claim("b", pin...))
	if n := e.aws.Calls("CreateLaunchTemplate"); n != 1 {
		t.Errorf("CreateLaunchTemplate called %d times, want 1", n)
	}
	names := e.aws.LaunchTemplateNames()
	if len(names) != 1 || !strings.HasPrefix(names[0], "stevedore/test/") {
		t.Fatalf("launch templates = %v", names)
	}
	for _, nc := range []*karpv1.NodeClaim{a, b} {
		info, _ := e.aws.Instance(instanceID(t, nc))
		if info.LaunchTemplateName != names[0] {
			t.Errorf("%s launched from %q", nc.Name, info.LaunchTemplateName)
		}
		want := map[string]string{
			wellknown.TagNodePool:        "default",
			wellknown.TagNodeClaim:       nc.Name,
			wellknown.TagEC2NodeClass:    "default",
			"kubernetes.io/cluster/test": "owned",
			wellknown.TagEKSClusterName:  "test",
			"team":                       "platform",
		}
		for k, v := range want {
			if info.Tags[k] != v {
				t.Errorf("%s: tag %s = %q, want %q", nc.Name, k, info.Tags[k], v)
			}
		}
		if info.InstanceProfile != "test-profile" {
			t.Errorf("instance profile = %q", info.InstanceProfile)
		}
	}
	data, ok := e.aws.LaunchTemplateData(names[0])
	if !ok {
		t.Fatal("no launch template data")
	}
	if len(data.BlockDeviceMappings) != 1 || *data.BlockDeviceMappings[0].DeviceName != "/dev/xvda" ||
		*data.BlockDeviceMappings[0].Ebs.VolumeSize != 20 || !*data.BlockDeviceMappings[0].Ebs.Encrypted ||
		data.BlockDeviceMappings[0].Ebs.VolumeType != "gp3" {
		t.Errorf("block devices = %+v", data.BlockDeviceMappings)
	}
	if data.MetadataOptions == nil || data.MetadataOptions.HttpTokens != "required" || *data.MetadataOptions.HttpPutResponseHopLimit != 1 {
		t.Errorf("metadata options = %+v", data.MetadataOptions)
	}
	// A template deleted behind our back is recreated and the launch retried.
	if _, err := e.aws.DeleteLaunchTemplate(e.ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: &names[0]}); err != nil {
		t.Fatal(err)
	}
	e.create(claim("c", pin...))
	if n := e.aws.Calls("CreateLaunchTemplate"); n != 2 {
		t.Errorf("CreateLaunchTemplate called %d times after deletion, want 2", n)
	}
}

func TestCreateInsufficientCapacityFallsBack(t *testing.T) {
	e := newEnv(t)
	e.aws.InjectInsufficientCapacity([]string{"c6i.large"}, []string{"us-east-1a"}, fake.CapacityTypeSpot, e.clk.Now().Add(time.Hour))
	var failures []cloud.LaunchFailure
	e.p.ReportLaunchFailuresTo(func(f cloud.LaunchFailure) { failures = append(failures, f) })
	pool := []karpv1.NodeSelectorRequirementWithMinValues{
		req(wellknown.LabelInstanceType, "c6i.large"), req(wellknown.LabelCapacityType, wellknown.CapacityTypeSpot),
	}
	_, err := e.p.Create(e.ctx, claim("a", append(pool, req(wellknown.LabelTopologyZone, "us-east-1a"))...))
	if !cloud.IsInsufficientCapacityError(err) {
		t.Fatalf("Create = %v, want InsufficientCapacityError", err)
	}
	if e.p.ICE().Available("c6i.large", "us-east-1a", wellknown.CapacityTypeSpot) {
		t.Error("pool not marked unavailable")
	}
	zoneID := ""
	for _, s := range e.nc.Status.Subnets {
		if s.Zone == "us-east-1a" {
			zoneID = s.ZoneID
		}
	}
	wantFailure := cloud.LaunchFailure{Zone: "us-east-1a", ZoneID: zoneID, CapacityType: wellknown.CapacityTypeSpot, Reason: "InsufficientInstanceCapacity"}
	if zoneID == "" || len(failures) != 1 || failures[0] != wantFailure {
		t.Errorf("reported launch failures = %+v, want [%+v]", failures, wantFailure)
	}
	offering := func() bool {
		types, err := e.p.GetInstanceTypes(e.ctx, &karpv1.NodePool{Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{NodeClassRef: &karpv1.NodeClassReference{Name: "default"}}}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range types {
			if it.Name != "c6i.large" {
				continue
			}
			for _, o := range it.Offerings {
				if o.Zone == "us-east-1a" && o.CapacityType == wellknown.CapacityTypeSpot {
					return o.Available
				}
			}
		}
		t.Fatal("offering missing")
		return false
	}
	if offering() {
		t.Error("GetInstanceTypes shows the ICE'd offering available")
	}
	// The next launch, allowed in two zones, goes to the other one without trying the first.
	calls := e.aws.Calls("CreateFleet")
	out := e.create(claim("b", append(pool, req(wellknown.LabelTopologyZone, "us-east-1a", "us-east-1b"))...))
	if z := out.Labels[wellknown.LabelTopologyZone]; z != "us-east-1b" {
		t.Errorf("fallback zone = %q, want us-east-1b", z)
	}
	if n := e.aws.Calls("CreateFleet") - calls; n != 1 {
		t.Errorf("CreateFleet calls = %d, want 1", n)
	}
	if len(failures) != 1 {
		t.Errorf("a launch that succeeded first time reported failures: %+v", failures[1:])
	}
	e.clk.Step(launch.UnavailableTTL + time.Second)
	if !offering() {
		t.Error("offering still unavailable after the TTL")
	}
}

func TestCreateErrors(t *testing.T) {
	tests := []struct {
		name  string
		setup func(e *env)
		check func(t *testing.T, err error)
	}{
		{"pass role denied", func(e *env) { e.aws.DenyPassRole(e.world.NodeRole) }, func(t *testing.T, err error) {
			ce, ok := cloud.AsCreateError(err)
			if !ok || ce.Reason != cloud.ReasonUnauthorized || !strings.Contains(ce.Message, "iam:PassRole") || !strings.Contains(ce.Message, "test-profile") {
				t.Fatalf("Create = %v, want Unauthorized CreateError naming iam:PassRole", err)
			}
		}},
		{"node class not ready", func(e *env) {
			e.nc.Status.Conditions[0].Status, e.nc.Status.Conditions[0].Reason = metav1.ConditionFalse, "SubnetsNotFound"
		}, func(t *testing.T, err error) {
			if !cloud.IsNodeClassNotReadyError(err) {
				t.Fatalf("Create = %v, want NodeClassNotReadyError", err)
			}
		}},
		{"node class readiness unknown", func(e *env) { e.nc.Status.Conditions[0].Status = metav1.ConditionUnknown }, func(t *testing.T, err error) {
			if ce, ok := cloud.AsCreateError(err); !ok || ce.Reason != cloud.ReasonNodeClassReadinessUnknown {
				t.Fatalf("Create = %v, want CreateError NodeClassReadinessUnknown", err)
			}
		}},
		{"node class status stale", func(e *env) { e.nc.Generation = 2 }, func(t *testing.T, err error) {
			if ce, ok := cloud.AsCreateError(err); !ok || ce.Reason != cloud.ReasonNodeClassReadinessUnknown {
				t.Fatalf("Create = %v, want CreateError", err)
			}
		}},
		{"node class missing", func(e *env) { e.nc = nil }, func(t *testing.T, err error) {
			if !cloud.IsInsufficientCapacityError(err) {
				t.Fatalf("Create = %v, want InsufficientCapacityError", err)
			}
		}},
		{"user data too large", func(e *env) {
			e.nc.Spec.UserData = ptr("#!/bin/bash\n" + strings.Repeat("echo padding the user data\n", 600))
		}, func(t *testing.T, err error) {
			ce, ok := cloud.AsCreateError(err)
			if !ok || ce.Reason != cloud.ReasonUserDataTooLarge {
				t.Fatalf("Create = %v, want CreateError %s", err, cloud.ReasonUserDataTooLarge)
			}
			for _, want := range []string{`EC2NodeClass "default"`, "spec.userData", "16384", "AL2023", "S3 or SSM Parameter Store"} {
				if !strings.Contains(ce.Message, want) {
					t.Errorf("message %q does not say %q", ce.Message, want)
				}
			}
		}},
		{"nothing fits", func(e *env) {}, func(t *testing.T, err error) {
			if err == nil {
				t.Fatal("Create succeeded")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			tt.setup(e)
			c := claim("a")
			if tt.name == "nothing fits" {
				c.Spec.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1000")
			}
			_, err := e.p.Create(e.ctx, c)
			tt.check(t, err)
			if n := e.aws.InstanceIDs(); len(n) != 0 {
				t.Errorf("instances launched: %v", n)
			}
		})
	}
}

func TestDeleteGetList(t *testing.T) {
	e := newEnv(t)
	a := e.create(claim("a"))
	b := e.create(claim("b"))
	got, err := e.p.Get(e.ctx, a.Status.ProviderID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "a" || got.Labels[wellknown.LabelNodePool] != "default" || got.Labels[wellknown.LabelInstanceType] != a.Labels[wellknown.LabelInstanceType] ||
		got.Labels[wellknown.LabelCapacityType] != a.Labels[wellknown.LabelCapacityType] || got.Status.ImageID != a.Status.ImageID || got.Status.ProviderID != a.Status.ProviderID {
		t.Errorf("Get = %+v", got)
	}
	list, err := e.p.List(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Name != "a" || list[1].Name != "b" {
		t.Errorf("List = %d claims", len(list))
	}
	if err := e.p.Delete(e.ctx, a); err != nil {
		t.Fatalf("first Delete = %v", err)
	}
	calls := e.aws.Calls("TerminateInstances")
	if err := e.p.Delete(e.ctx, a); err != nil {
		t.Fatalf("Delete while shutting down = %v, want nil", err)
	}
	if e.aws.Calls("TerminateInstances") != calls {
		t.Error("terminated twice")
	}
	e.clk.Step(fake.DefaultShutdownDelay + time.Second)
	if err := e.p.Delete(e.ctx, a); !cloud.IsNodeClaimNotFoundError(err) {
		t.Fatalf("Delete after termination = %v, want NodeClaimNotFoundError", err)
	}
	if _, err := e.p.Get(e.ctx, a.Status.ProviderID); !cloud.IsNodeClaimNotFoundError(err) {
		t.Errorf("Get after termination = %v", err)
	}
	if err := e.p.Delete(e.ctx, &karpv1.NodeClaim{Status: karpv1.NodeClaimStatus{ProviderID: "aws:///us-east-1a/i-0123456789abcdef0"}}); !cloud.IsNodeClaimNotFoundError(err) {
		t.Errorf("Delete unknown = %v", err)
	}
	list, err = e.p.List(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Name != b.Name {
		t.Errorf("List after delete = %v", list)
	}
}

func TestGetInstanceTypes(t *testing.T) {
	e := newEnv(t)
	np := &karpv1.NodePool{Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{NodeClassRef: &karpv1.NodeClassReference{Name: "default"}}}}}
	types, err := e.p.GetInstanceTypes(e.ctx, np)
	if err != nil {
		t.Fatal(err)
	}
	if len(types) != len(testTypes) {
		t.Fatalf("got %d types, want %d", len(types), len(testTypes))
	}
	for _, it := range types {
		labels := it.Requirements.Labels()
		if labels[wellknown.LabelInstanceType] != it.Name || labels[wellknown.LabelArch] == "" || labels[wellknown.LabelInstanceFamily] == "" {
			t.Errorf("%s: labels %v", it.Name, labels)
		}
		if len(it.Offerings) != 2*len(e.aws.Zones()) {
			t.Errorf("%s: %d offerings", it.Name, len(it.Offerings))
		}
		od, _ := e.aws.OnDemandPrice(it.Name)
		for _, o := range it.Offerings {
			want := od
			if o.CapacityType == wellknown.CapacityTypeSpot {
				want, _ = e.aws.SpotPrice(it.Name, o.Zone)
			}
			if math.Abs(o.PricePerHour-want) > 1e-6 || !o.Available {
				t.Errorf("%s %s %s: price %v available %v, want %v", it.Name, o.Zone, o.CapacityType, o.PricePerHour, o.Available, want)
			}
		}
	}
	// Cached: a second call describes nothing.
	calls := e.aws.Calls("DescribeInstanceTypes")
	if _, err := e.p.GetInstanceTypes(e.ctx, np); err != nil {
		t.Fatal(err)
	}
	if e.aws.Calls("DescribeInstanceTypes") != calls {
		t.Error("instance types described again within the TTL")
	}
	e.clk.Step(DefaultCacheTTL)
	if _, err := e.p.GetInstanceTypes(e.ctx, np); err != nil {
		t.Fatal(err)
	}
	if e.aws.Calls("DescribeInstanceTypes") == calls {
		t.Error("instance types not described again after the TTL")
	}
	// A missing node class gives no types and no error.
	np.Spec.Template.Spec.NodeClassRef.Name = "other"
	if types, err := e.p.GetInstanceTypes(e.ctx, np); err != nil || types != nil {
		t.Errorf("missing node class: %v, %v", types, err)
	}
}

func TestGetInstanceTypesPricingFallback(t *testing.T) {
	e := newEnv(t)
	e.aws.InjectError("GetProducts", fake.APIError("ServiceUnavailableException", "down"), 1)
	e.aws.SetOnDemandPrice("m6i.large", 9.99) // the Price List API would say this; the catalog does not
	np := &karpv1.NodePool{Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{NodeClassRef: &karpv1.NodeClassReference{Name: "default"}}}}}
	types, err := e.p.GetInstanceTypes(e.ctx, np)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range types {
		if it.Name == "m6i.large" {
			for _, o := range it.Offerings {
				if o.CapacityType == wellknown.CapacityTypeOnDemand && o.PricePerHour == 9.99 {
					t.Error("price taken from a failed Price List call")
				}
				if o.CapacityType == wellknown.CapacityTypeOnDemand && o.PricePerHour <= 0 {
					t.Error("no catalog fallback price")
				}
			}
		}
	}
}

// TestPricingReportedOncePerChange: while the Price List API fails (as
// against moto, which has none), on-demand prices come from the embedded
// catalog and the failure is reported once, however many refreshes fail;
// its recovery is reported once too.
func TestPricingReportedOncePerChange(t *testing.T) {
	e := newEnv(t)
	var reports []string
	e.p.ReportPricingTo(func(err error) {
		if err != nil {
			reports = append(reports, "down: "+launch.ErrorCode(err))
			return
		}
		reports = append(reports, "up")
	})
	catalogPrice := 0.0
	if it, ok := catalog.Lookup("m6i.large"); ok {
		catalogPrice = it.OnDemandPricePerHour
	}
	if catalogPrice <= 0 {
		t.Fatal("the embedded catalog has no price for m6i.large")
	}
	np := &karpv1.NodePool{Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{NodeClassRef: &karpv1.NodeClassReference{Name: "default"}}}}}
	for i, step := range []struct {
		failing     bool
		wantPrice   float64
		wantReports []string
	}{
		{failing: true, wantPrice: catalogPrice, wantReports: []string{"down: ServiceUnavailableException"}},
		{failing: true, wantPrice: catalogPrice, wantReports: []string{"down: ServiceUnavailableException"}},
		{failing: true, wantPrice: catalogPrice, wantReports: []string{"down: ServiceUnavailableException"}},
		{failing: false, wantPrice: 9.99, wantReports: []string{"down: ServiceUnavailableException", "up"}},
		{failing: false, wantPrice: 9.99, wantReports: []string{"down: ServiceUnavailableException", "up"}},
		{failing: true, wantPrice: 9.99, wantReports: []string{"down: ServiceUnavailableException", "up", "down: ServiceUnavailableException"}},
	} {
		e.aws.ClearErrors()
		if step.failing {
			e.aws.InjectError("GetProducts", fake.APIError("ServiceUnavailableException", "down"), 100)
		}
		// What the Price List API says when it answers; not the catalog's.
		e.aws.SetOnDemandPrice("m6i.large", 9.99)
		e.clk.Step(DefaultCacheTTL)
		types, err := e.p.GetInstanceTypes(e.ctx, np)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := onDemandPriceOf(types, "m6i.large"); got != step.wantPrice {
			t.Errorf("step %d: m6i.large on-demand price %v, want %v", i, got, step.wantPrice)
		}
		if !slices.Equal(reports, step.wantReports) {
			t.Errorf("step %d: reports %q, want %q", i, reports, step.wantReports)
		}
	}
	// Within the TTL a failing API is not asked again.
	calls := e.aws.Calls("GetProducts")
	if calls < 6 {
		t.Errorf("GetProducts called %d times over six refreshes", calls)
	}
	if _, err := e.p.GetInstanceTypes(e.ctx, np); err != nil {
		t.Fatal(err)
	}
	if n := e.aws.Calls("GetProducts"); n != calls {
		t.Errorf("GetProducts called again within the TTL of a failure (%d calls, then %d)", calls, n)
	}
}

func onDemandPriceOf(types []*packer.InstanceType, name string) float64 {
	for _, it := range types {
		if it.Name != name {
			continue
		}
		for _, o := range it.Offerings {
			if o.CapacityType == wellknown.CapacityTypeOnDemand {
				return o.PricePerHour
			}
		}
	}
	return 0
}

func TestIsDrifted(t *testing.T) {
	e := newEnv(t)
	nc := e.create(claim("a", req(wellknown.LabelArch, wellknown.ArchAMD64)))
	if r, err := e.p.IsDrifted(e.ctx, nc); err != nil || r != cloud.NoDrift {
		t.Fatalf("IsDrifted = %q, %v; want no drift", r, err)
	}
	img, err := e.aws.ReleaseImage(fake.FamilyAL2023, "1.33", "x86_64", "standard", fake.Image{})
	if err != nil {
		t.Fatal(err)
	}
	e.nc.Status.AMIs[0].ID = img.ID // what the node class controller resolves next
	if r, err := e.p.IsDrifted(e.ctx, nc); err != nil || r != drift.AMIDrift {
		t.Fatalf("IsDrifted = %q, %v; want AMIDrift", r, err)
	}
}

func TestRepairPoliciesAndName(t *testing.T) {
	e := newEnv(t)
	if e.p.Name() != "aws" {
		t.Errorf("Name = %q", e.p.Name())
	}
	// Karpenter's AWS policies: the kubelet's Ready, and the EKS node
	// monitoring agent's conditions.
	want := []cloud.RepairPolicy{
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute},
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionUnknown, TolerationDuration: 30 * time.Minute},
		{ConditionType: "AcceleratedHardwareReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: 10 * time.Minute},
		{ConditionType: "StorageReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute},
		{ConditionType: "NetworkingReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute},
		{ConditionType: "KernelReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute},
		{ConditionType: "ContainerRuntimeReady", ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute},
	}
	if rp := e.p.RepairPolicies(); !reflect.DeepEqual(rp, want) {
		t.Errorf("RepairPolicies = %+v\nwant %+v", rp, want)
	}
	if g := e.p.GetSupportedNodeClasses(); len(g) != 1 || g[0].Kind != "EC2NodeClass" {
		t.Errorf("GetSupportedNodeClasses = %v", g)
	}
	if _, err := New(Options{Clients: e.aws.Clients(), Region: e.aws.Region()}); err == nil {
		t.Error("New without a getter succeeded")
	}
	getter := func(context.Context, string) (*awsv1.EC2NodeClass, error) { return nil, nil }
	s := settings.Default()
	s.ClusterName = "test"
	if _, err := New(Options{Clients: e.aws.Clients(), Settings: s, NodeClass: getter}); err == nil || !strings.Contains(err.Error(), "no region") {
		t.Errorf("New without a region: %v, want an error saying so", err)
	}
}
