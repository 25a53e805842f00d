package aws

import (
	"math"
	"testing"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

func TestSameTree(t *testing.T) {
	e := newEnv(t)
	a, err := e.p.describeInstanceTypes(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.p.describeInstanceTypes(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !same(a, b) {
		t.Fatal("two descriptions of the same catalog differ")
	}
	// The same catalog described by another fake shares no values with a:
	// the comparison has to walk both trees.
	other, err := newEnv(t).p.describeInstanceTypes(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if a[0].VCpuInfo == other[0].VCpuInfo || !same(a, other) {
		t.Fatal("two fakes' descriptions of the same catalog differ, or share values")
	}
	changes := map[string]func(ts []ec2types.InstanceTypeInfo){
		"nested pointer value": func(ts []ec2types.InstanceTypeInfo) { *ts[1].VCpuInfo.DefaultVCpus++ },
		"pointer set to nil":   func(ts []ec2types.InstanceTypeInfo) { ts[2].MemoryInfo = nil },
		"slice element":        func(ts []ec2types.InstanceTypeInfo) { ts[0].ProcessorInfo.SupportedArchitectures[0] = "arm64" },
		"slice length":         func(ts []ec2types.InstanceTypeInfo) { ts[0].SupportedUsageClasses = ts[0].SupportedUsageClasses[:0] },
		"enum string":          func(ts []ec2types.InstanceTypeInfo) { ts[3].InstanceType = "x9.large" },
		"one type fewer":       func(ts []ec2types.InstanceTypeInfo) {},
	}
	for name, change := range changes {
		// Each changed tree comes from a fake of its own: one fake's
		// descriptions share their nested values, as a reader may expect,
		// and changing them in place would change a as well.
		c, err := newEnv(t).p.describeInstanceTypes(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		change(c)
		if name == "one type fewer" {
			c = c[1:]
		}
		if same(a, c) {
			t.Errorf("%s: sameTree says unchanged", name)
		}
	}
	zones := map[string][]string{"m6i.large": {"a", "b"}}
	if !same(zones, map[string][]string{"m6i.large": {"a", "b"}}) || same(zones, map[string][]string{"m6i.large": {"a"}}) ||
		same(zones, map[string][]string{"m6i.xlarge": {"a", "b"}}) {
		t.Error("zone maps compared wrongly")
	}
	// Values that cannot be shown equal count as changed.
	if same(math.NaN(), math.NaN()) || same([]int(nil), []int{}) || same(func() {}, func() {}) {
		t.Error("sameTree errs towards equal")
	}
}

// A re-description that finds a changed instance type rebuilds the types;
// one that finds the same catalog does not (TestTypeCacheReusesUnchangedTypes).
func TestTypeCacheFollowsRedescribedTypes(t *testing.T) {
	e := newEnv(t)
	before := e.types()
	e.p.mu.Lock()
	e.p.cache.typesAt = e.clk.Now().Add(-DefaultCacheTTL) // due for a refresh
	changed := make([]ec2types.InstanceTypeInfo, len(e.p.cache.types))
	copy(changed, e.p.cache.types)
	vcpus := *changed[0].VCpuInfo.DefaultVCpus + 1
	info := *changed[0].VCpuInfo
	info.DefaultVCpus = &vcpus
	changed[0].VCpuInfo = &info
	e.p.cache.types = changed // what the last description said, now unlike EC2's
	e.p.mu.Unlock()
	after := e.types()
	if sameObjects(before, after) {
		t.Error("a description unlike the last one did not rebuild the types")
	}
}
