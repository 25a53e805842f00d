package aws

import (
	"maps"
	"slices"
	"testing"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/drift"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/instancetype"
)

// TestIsDriftedFollowsEachCheck: every drift check reads the instance and
// the node class as they are at that moment: a change to the security
// groups or subnets the node class selects is found by the next check, and
// so is its undoing.
func TestIsDriftedFollowsEachCheck(t *testing.T) {
	e := newEnv(t)
	nc := e.create(claim("a", req(wellknown.LabelArch, wellknown.ArchAMD64)))
	check := func(when string, want cloud.DriftReason) {
		t.Helper()
		if r, err := e.p.IsDrifted(e.ctx, nc); err != nil || r != want {
			t.Fatalf("%s: IsDrifted = %q, %v; want %q", when, r, err, want)
		}
	}
	check("as launched", cloud.NoDrift)

	groups := e.nc.Status.SecurityGroups
	e.nc.Status.SecurityGroups = append(slices.Clone(groups), awsv1.SecurityGroup{ID: "sg-0123456789abcdef0"})
	check("a security group added to the node class", drift.SecurityGroupDrift)
	e.nc.Status.SecurityGroups = groups
	check("the security group removed again", cloud.NoDrift)

	subnets := e.nc.Status.Subnets
	var others []awsv1.Subnet
	for _, s := range subnets {
		if s.ID != e.instanceSubnet(t, nc) {
			others = append(others, s)
		}
	}
	e.nc.Status.Subnets = others
	check("the instance's subnet no longer selected", drift.SubnetDrift)
	e.nc.Status.Subnets = subnets
	check("the subnet selected again", cloud.NoDrift)
}

func (e *env) instanceSubnet(t *testing.T, nc interface{ GetName() string }) string {
	t.Helper()
	for _, id := range e.aws.InstanceIDs() {
		info, ok := e.aws.Instance(id)
		if ok && info.Tags[wellknown.TagNodeClaim] == nc.GetName() {
			return info.SubnetID
		}
	}
	t.Fatalf("no instance of NodeClaim %s", nc.GetName())
	return ""
}

// TestTypeLabelsRemembered: the labels List and IsDrifted use are those of
// instancetype.Labels for the type as last described, computed again when a
// new description differs.
func TestTypeLabelsRemembered(t *testing.T) {
	e := newEnv(t)
	e.create(claim("a", req(wellknown.LabelArch, wellknown.ArchAMD64)))
	list, err := e.p.List(e.ctx)
	if err != nil || len(list) != 1 {
		t.Fatalf("List = %v, %v", list, err)
	}
	name := list[0].Labels[wellknown.LabelInstanceType]
	e.p.mu.Lock()
	info := e.p.cache.types[e.p.cache.byName[name]]
	e.p.mu.Unlock()
	for k, v := range instancetype.Labels(info, instancetype.DefaultOptions()) {
		if list[0].Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, list[0].Labels[k], v)
		}
	}
	// The claims' labels are their own: changing one changes no other.
	list[0].Labels[wellknown.LabelInstanceCPU] = "changed"
	again, _ := e.p.List(e.ctx)
	if again[0].Labels[wellknown.LabelInstanceCPU] == "changed" {
		t.Fatal("List handed out a shared labels map")
	}

	// A new description of the type (more vCPUs) gives new labels.
	e.p.mu.Lock()
	types := slices.Clone(e.p.cache.types)
	i := e.p.cache.byName[name]
	vcpu := *types[i].VCpuInfo.DefaultVCpus + 1
	cpuInfo := *types[i].VCpuInfo
	cpuInfo.DefaultVCpus = &vcpu
	types[i].VCpuInfo = &cpuInfo
	e.p.cache.types = types
	e.p.cache.typesGen++
	e.p.mu.Unlock()
	after, _ := e.p.List(e.ctx)
	want := instancetype.Labels(types[i], instancetype.DefaultOptions())
	if got := after[0].Labels[wellknown.LabelInstanceCPU]; got != want[wellknown.LabelInstanceCPU] {
		t.Errorf("after a new description: %s = %q, want %q", wellknown.LabelInstanceCPU, got, want[wellknown.LabelInstanceCPU])
	}

	// The options' family and region are part of what is remembered.
	e.p.mu.Lock()
	defer e.p.mu.Unlock()
	opts := instancetype.DefaultOptions()
	opts.Region = "eu-west-1"
	opts.AMIFamily = awsv1.AMIFamilyWindows2022
	got := e.p.typeLabelsLocked(name, opts)
	if !maps.Equal(got, instancetype.Labels(types[i], opts)) {
		t.Errorf("labels with other options = %v", got)
	}
	if got[wellknown.LabelOS] != wellknown.OSWindows || got[wellknown.LabelTopologyRegion] != "eu-west-1" {
		t.Errorf("labels with other options = %v", got)
	}
	if e.p.typeLabelsLocked("x9.huge", opts) != nil {
		t.Error("labels of a type never described")
	}
}
