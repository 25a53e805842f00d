package aws

import (
	"reflect"
	"sync"
	"testing"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/launch"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
)

func defaultPool() *karpv1.NodePool {
	return &karpv1.NodePool{Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
		NodeClassRef: &karpv1.NodeClassReference{Name: "default"},
	}}}}
}

func (e *env) types() []*packer.InstanceType {
	e.t.Helper()
	types, err := e.p.GetInstanceTypes(e.ctx, defaultPool())
	if err != nil {
		e.t.Fatal(err)
	}
	return types
}

// uncached returns what a provider with empty caches, over the same AWS and
// node class, says now.
func (e *env) uncached() []*packer.InstanceType {
	e.t.Helper()
	return e.uncachedFor(defaultPool())
}

// uncachedFor is uncached for the node class of np.
func (e *env) uncachedFor(np *karpv1.NodePool) []*packer.InstanceType {
	e.t.Helper()
	p, err := New(Options{Clients: e.aws.Clients(), Region: e.aws.Region(), Settings: e.p.settings, Clock: e.clk, NodeClass: e.p.nodeClass, Cluster: e.p.cluster})
	if err != nil {
		e.t.Fatal(err)
	}
	// The ICE marks live in the provider; copy them over.
	for _, u := range e.p.ICE().List() {
		p.ICE().MarkUnavailable(u.InstanceType, u.Zone, u.CapacityType)
	}
	types, err := p.GetInstanceTypes(e.ctx, np)
	if err != nil {
		e.t.Fatal(err)
	}
	return types
}

func sameObjects(a, b []*packer.InstanceType) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func offeringOf(types []*packer.InstanceType, name, zone, capacityType string) (packer.Offering, bool) {
	for _, it := range types {
		if it.Name != name {
			continue
		}
		for _, o := range it.Offerings {
			if o.Zone == zone && o.CapacityType == capacityType {
				return o, true
			}
		}
	}
	return packer.Offering{}, false
}

func TestTypeCacheReusesUnchangedTypes(t *testing.T) {
	e := newEnv(t)
	first := e.types()
	if !sameObjects(first, e.types()) {
		t.Error("a second call with nothing changed rebuilt the types")
	}
	// A refresh that finds the same descriptions and prices rebuilds nothing.
	e.clk.Step(DefaultCacheTTL)
	if !sameObjects(first, e.types()) {
		t.Error("a refresh that changed nothing rebuilt the types")
	}
	if got, want := e.types(), e.uncached(); !reflect.DeepEqual(got, want) {
		t.Error("cached types differ from uncached ones")
	}
}

func TestTypeCacheFollowsItsInputs(t *testing.T) {
	zone := func(e *env) string { return e.nc.Status.Subnets[0].Zone }
	tests := []struct {
		name   string
		change func(e *env)
		check  func(t *testing.T, e *env, types []*packer.InstanceType)
	}{
		{"kubelet maxPods", func(e *env) {
			e.nc.Spec.Kubelet = &awsv1.KubeletConfiguration{MaxPods: ptr(int32(7))}
		}, func(t *testing.T, _ *env, types []*packer.InstanceType) {
			for _, it := range types {
				if it.Allocatable.Pods != 7 {
					t.Errorf("%s: %d pods allocatable, want 7", it.Name, it.Allocatable.Pods)
				}
			}
		}},
		{"images", func(e *env) {
			e.nc.Status.AMIs = e.nc.Status.AMIs[:1] // x86_64 only
		}, func(t *testing.T, _ *env, types []*packer.InstanceType) {
			for _, it := range types {
				if a := it.Requirements.Labels()[wellknown.LabelArch]; a != wellknown.ArchAMD64 {
					t.Errorf("%s (%s) offered without an image for it", it.Name, a)
				}
			}
		}},
		{"subnet zones", func(e *env) {
			e.nc.Status.Subnets = e.nc.Status.Subnets[:1]
		}, func(t *testing.T, e *env, types []*packer.InstanceType) {
			for _, it := range types {
				for _, o := range it.Offerings {
					if o.Zone != zone(e) {
						t.Errorf("%s offered in %s, which has no subnet", it.Name, o.Zone)
					}
				}
			}
		}},
		{"ICE mark", func(e *env) {
			e.p.ICE().MarkUnavailable("m6i.large", zone(e), wellknown.CapacityTypeSpot)
		}, func(t *testing.T, e *env, types []*packer.InstanceType) {
			if o, ok := offeringOf(types, "m6i.large", zone(e), wellknown.CapacityTypeSpot); !ok || o.Available {
				t.Errorf("marked offering: %+v, %v; want unavailable", o, ok)
			}
		}},
		{"on-demand price", func(e *env) {
			e.aws.SetOnDemandPrice("m6i.large", 1.234)
			e.clk.Step(DefaultCacheTTL)
		}, func(t *testing.T, e *env, types []*packer.InstanceType) {
			if o, _ := offeringOf(types, "m6i.large", zone(e), wellknown.CapacityTypeOnDemand); o.PricePerHour != 1.234 {
				t.Errorf("on-demand price %v, want 1.234", o.PricePerHour)
			}
		}},
		{"spot price", func(e *env) {
			e.aws.SetSpotPrice("m6i.large", zone(e), 0.0123)
			e.clk.Step(DefaultCacheTTL)
		}, func(t *testing.T, e *env, types []*packer.InstanceType) {
			if o, _ := offeringOf(types, "m6i.large", zone(e), wellknown.CapacityTypeSpot); o.PricePerHour != 0.0123 {
				t.Errorf("spot price %v, want 0.0123", o.PricePerHour)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			before := e.types()
			kept := *before[0]
			tt.change(e)
			after := e.types()
			if sameObjects(before, after) {
				t.Fatal("the change did not rebuild the types")
			}
			tt.check(t, e, after)
			if !reflect.DeepEqual(after, e.uncached()) {
				t.Error("cached types differ from uncached ones")
			}
			// Types handed out earlier are not changed by the rebuild.
			if !reflect.DeepEqual(*before[0], kept) {
				t.Error("a rebuild changed types handed out before it")
			}
		})
	}
}

func TestTypeCacheICEExpiry(t *testing.T) {
	e := newEnv(t)
	zone := e.nc.Status.Subnets[0].Zone
	e.p.ICE().MarkUnavailable("c6i.large", zone, wellknown.CapacityTypeOnDemand)
	if o, _ := offeringOf(e.types(), "c6i.large", zone, wellknown.CapacityTypeOnDemand); o.Available {
		t.Fatal("marked offering available")
	}
	// The mark expires without any call to the ICE cache in between: the
	// cached offerings must not outlive it.
	e.clk.Step(launch.UnavailableTTL)
	if o, _ := offeringOf(e.types(), "c6i.large", zone, wellknown.CapacityTypeOnDemand); !o.Available {
		t.Error("offering still unavailable after its mark expired")
	}
}

func TestTypeCacheIgnoresIrrelevantChanges(t *testing.T) {
	e := newEnv(t)
	first := e.types()
	e.nc.Spec.Tags = map[string]string{"team": "other"}
	e.nc.ResourceVersion = "42"
	e.nc.Status.Conditions = append(e.nc.Status.Conditions, e.nc.Status.Conditions[0])
	if !sameObjects(first, e.types()) {
		t.Error("a change the types do not depend on rebuilt them")
	}
	// Block device mappings are compared by value, not by pointer.
	size := e.nc.DeepCopy()
	size.Spec.BlockDeviceMappings = []awsv1.BlockDeviceMapping{{DeviceName: ptr("/dev/xvda"), RootVolume: true}}
	e.nc = size
	second := e.types()
	if sameObjects(first, second) {
		t.Error("new block device mappings did not rebuild the types")
	}
	e.nc = size.DeepCopy()
	if !sameObjects(second, e.types()) {
		t.Error("an equal copy of the node class rebuilt the types")
	}
}

// The controllers ask for types concurrently (the provisioner and the
// disruption controller) while the ICE cache is marked and the caches
// expire; run with -race.
func TestTypeCacheConcurrentUse(t *testing.T) {
	e := newEnv(t)
	zone := e.nc.Status.Subnets[0].Zone
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 20 {
				if _, err := e.p.GetInstanceTypes(e.ctx, defaultPool()); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for i := range 20 {
		e.p.ICE().MarkUnavailable(testTypes[i%len(testTypes)], zone, wellknown.CapacityTypeSpot)
		e.clk.Step(DefaultCacheTTL / 4)
	}
	wg.Wait()
	if got, want := e.types(), e.uncached(); !reflect.DeepEqual(got, want) {
		t.Error("cached types differ from uncached ones after concurrent use")
	}
}

// The cache holds a node class's types only while the class is asked for:
// those of a class gone (deleted, renamed) for typeCacheIdle are dropped, so
// that the cache does not grow with every node class the cluster ever had.
func TestTypeCacheDropsIdleClasses(t *testing.T) {
	e := newEnv(t)
	poolOf := func(class string) *karpv1.NodePool {
		np := defaultPool()
		np.Spec.Template.Spec.NodeClassRef.Name = class
		return np
	}
	get := func(class string) []*packer.InstanceType {
		t.Helper()
		types, err := e.p.GetInstanceTypes(e.ctx, poolOf(class))
		if err != nil || len(types) == 0 {
			t.Fatalf("types of %s: %d, %v", class, len(types), err)
		}
		return types
	}
	get("default")
	e.nc.Name = "replacement" // the old class is gone, a new one serves
	get("replacement")
	if n := e.p.typeCache.len(); n != 2 {
		t.Fatalf("%d classes cached, want both", n)
	}
	for range 3 {
		e.clk.Step(typeCacheIdle / 2)
		get("replacement")
	}
	if n := e.p.typeCache.len(); n != 1 {
		t.Errorf("%d classes cached after the old one was idle for %s, want only the one in use", n, typeCacheIdle)
	}
	if got, want := get("replacement"), e.uncachedFor(poolOf("replacement")); !reflect.DeepEqual(got, want) {
		t.Error("types after a sweep differ from uncached ones")
	}
}
