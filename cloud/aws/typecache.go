package aws

import (
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/amifamily"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/instancetype"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
)

// typeCache keeps, per node class, the instance types resolve built. The
// disruption controller asks for them on every pass and the provisioner on
// every batch, per NodePool, and modelling the whole catalog each time was
// most of the controllers' work; now a call that finds its inputs unchanged
// returns the same types.
//
// It has two layers, each rebuilt only when its own inputs change:
//
//   - the types as the node class makes them (labels, capacity, allocatable,
//     image): rebuilt when the described instance types or the region
//     change, or what the node class feeds instancetype.New (AMI family,
//     kubelet configuration, block devices, instance store policy) or its
//     resolved images;
//   - their offerings: rebuilt when the first layer is, or when the zones of
//     the node class's subnets, the prices, or the ICE cache's marks change
//     (a new mark, or the earliest mark expiring).
//
// Inputs are compared by value rather than by resource version or
// generation: a node class's status changes without a new generation, and
// callers (tests, the simulator) may hand in objects without either.
//
// The types handed out are shared by every caller until the next rebuild,
// which makes new ones instead of changing them; no caller modifies them.
type typeCache struct {
	mu      sync.Mutex
	classes map[string]*classTypes
	// swept is when idle classes were last dropped.
	swept time.Time
}

// typeCacheIdle is how long a node class's types stay cached without being
// asked for. A node class in use is asked for on every disruption pass and
// provisioning batch; one idle this long is gone (deleted, renamed) or
// unused, and keeping its whole catalog would make the cache grow with every
// node class the cluster ever had. A class asked for again is rebuilt, with
// the same result.
const typeCacheIdle = 15 * time.Minute

// classTypes is the cache of one node class.
type classTypes struct {
	// The first layer and its inputs.
	inputs   typeInputs
	typesGen uint64
	base     []baseType

	// used is when the class was last asked for.
	used time.Time

	// The second layer and its inputs; valid only for the base above.
	valid      bool
	zones      []string // the subnets' zones, sorted, without duplicates
	pricesGen  uint64
	iceSeq     uint64
	iceExpires time.Time // zero: no mark was current
	resolved   []*resolvedType
}

// baseType is an instance type as the node class launches it, without
// offerings; packer's Offerings are nil.
type baseType struct {
	it      *instancetype.InstanceType
	packer  *packer.InstanceType
	imageID string
}

// typeInputs is what the first layer reads from a node class. Its fields
// are copies, so that a caller changing its node class later cannot change
// them.
type typeInputs struct {
	family  awsv1.AMIFamily
	kubelet *awsv1.KubeletConfiguration
	devices []awsv1.BlockDeviceMapping
	store   *awsv1.InstanceStorePolicy
	amis    []awsv1.AMI
	region  string
	// What instancetype.Compatible reads, and the max-pods effect of
	// efa-only interfaces (compatible.go).
	compat compatInputs
}

func inputsOf(nc *awsv1.EC2NodeClass, region, strategy string) typeInputs {
	in := typeInputs{family: amifamily.ResolvedFamily(&nc.Spec), kubelet: nc.Spec.Kubelet.DeepCopy(), region: region, compat: compatInputsOf(nc, strategy)}
	for i := range nc.Spec.BlockDeviceMappings {
		in.devices = append(in.devices, *nc.Spec.BlockDeviceMappings[i].DeepCopy())
	}
	if nc.Spec.InstanceStorePolicy != nil {
		p := *nc.Spec.InstanceStorePolicy
		in.store = &p
	}
	for i := range nc.Status.AMIs {
		in.amis = append(in.amis, *nc.Status.AMIs[i].DeepCopy())
	}
	return in
}

// sameAs reports whether the node class still gives these inputs, without
// copying anything.
func (in *typeInputs) sameAs(nc *awsv1.EC2NodeClass, region, strategy string) bool {
	eq := equality.Semantic.DeepEqual
	return in.region == region && in.compat.sameAs(nc, strategy) &&
		in.family == amifamily.ResolvedFamily(&nc.Spec) &&
		eq(in.kubelet, nc.Spec.Kubelet) &&
		len(in.devices) == len(nc.Spec.BlockDeviceMappings) && (len(in.devices) == 0 || eq(in.devices, nc.Spec.BlockDeviceMappings)) &&
		eq(in.store, nc.Spec.InstanceStorePolicy) &&
		len(in.amis) == len(nc.Status.AMIs) && (len(in.amis) == 0 || eq(in.amis, nc.Status.AMIs))
}

// subnetZones returns the zones of the node class's subnets, sorted, each
// once.
func subnetZones(nc *awsv1.EC2NodeClass) []string {
	zones := make([]string, 0, len(nc.Status.Subnets))
	for _, s := range nc.Status.Subnets {
		zones = append(zones, s.Zone)
	}
	slices.Sort(zones)
	return slices.Compact(zones)
}

// sweep drops the classes not asked for in typeCacheIdle, at most once per
// typeCacheIdle. The caller holds c.mu.
func (c *typeCache) sweep(now time.Time) {
	if now.Sub(c.swept) < typeCacheIdle {
		return
	}
	c.swept = now
	for name, ct := range c.classes {
		if now.Sub(ct.used) >= typeCacheIdle {
			delete(c.classes, name)
		}
	}
}

// len returns how many node classes are cached.
func (c *typeCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.classes)
}

// get returns the node class's types under snap, from the cache when its
// inputs are unchanged.
func (c *typeCache) get(p *Provider, nc *awsv1.EC2NodeClass, snap snapshot) []*resolvedType {
	// The ICE cache's version is read before any availability, so that a
	// mark made while the offerings are built makes the next call rebuild.
	iceSeq, iceExpires := p.ice.Version()
	zones := subnetZones(nc)

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.classes == nil {
		c.classes = map[string]*classTypes{}
	}
	now := p.clk.Now()
	c.sweep(now)
	ct := c.classes[nc.Name]
	strategy := p.placementStrategy(nc)
	if ct == nil || ct.typesGen != snap.typesGen || !ct.inputs.sameAs(nc, snap.region, strategy) {
		ct = &classTypes{inputs: inputsOf(nc, snap.region, strategy), typesGen: snap.typesGen, base: p.baseTypes(nc, snap)}
		c.classes[nc.Name] = ct
	}
	ct.used = now
	if ct.valid && ct.pricesGen == snap.pricesGen && slices.Equal(ct.zones, zones) &&
		ct.iceSeq == iceSeq && (ct.iceExpires.IsZero() || now.Before(ct.iceExpires)) {
		return ct.resolved
	}
	in := make(map[string]bool, len(zones))
	for _, z := range zones {
		in[z] = true
	}
	ct.resolved = p.withOfferings(ct.base, in, snap)
	ct.valid, ct.zones, ct.pricesGen, ct.iceSeq, ct.iceExpires = true, zones, snap.pricesGen, iceSeq, iceExpires
	return ct.resolved
}
