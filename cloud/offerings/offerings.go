// Package offerings turns instance-type data into what the packer launches
// from: packer.InstanceTypes with their requirements, resources and
// (zone, capacity type, price) offerings, and packer.NodePools with the
// instance types each NodePool may use.
//
// Today the data comes from the embedded EC2 catalog, with every type offered
// in every zone of one region, on demand at the catalog price and as spot at a
// fixed fraction of it. This package is the seam where the AWS provider will
// later supply real data instead (DescribeInstanceTypeOfferings per zone, spot
// price history, capacity reservations, insufficient-capacity marks): callers
// that take []*packer.InstanceType do not change when it does.
package offerings

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/catalog"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/scheduling/requirements"
	"github.com/stevedore-autoscaler/stevedore/scheduling/resources"
)

// Defaults of Options.
const (
	// DefaultRegion is the region the catalog's prices are for.
	DefaultRegion = "us-east-1"
	// DefaultSpotPriceFraction prices a spot offering at 35% of the on-demand
	// price: a typical long-run discount across EC2 families (AWS advertises
	// "up to 90%"; observed averages for current-generation c, m and r types
	// sit around 60–70% off).
	DefaultSpotPriceFraction = 0.35
)

// DefaultZones returns the zones offerings are placed in by default.
func DefaultZones() []string { return []string{"us-east-1a", "us-east-1b", "us-east-1c"} }

// Options says where and at what price the catalog's types are offered.
type Options struct {
	// Region labels every type's topology.kubernetes.io/region; default
	// DefaultRegion.
	Region string
	// Zones each type is offered in; default DefaultZones.
	Zones []string
	// SpotPriceFraction is the spot price as a fraction of the on-demand
	// price, in (0, 1]; 0 means DefaultSpotPriceFraction.
	SpotPriceFraction float64
}

// withDefaults returns o with its zero fields set to the defaults.
func (o Options) withDefaults() Options {
	if o.Region == "" {
		o.Region = DefaultRegion
	}
	if len(o.Zones) == 0 {
		o.Zones = DefaultZones()
	}
	if o.SpotPriceFraction == 0 {
		o.SpotPriceFraction = DefaultSpotPriceFraction
	}
	return o
}

// Validate reports options that cannot describe an offering.
func (o Options) Validate() error {
	o = o.withDefaults()
	if o.SpotPriceFraction <= 0 || o.SpotPriceFraction > 1 {
		return fmt.Errorf("spot price fraction %v: use a fraction of the on-demand price in (0, 1], for example 0.35", o.SpotPriceFraction)
	}
	seen := map[string]bool{}
	for _, z := range o.Zones {
		if z == "" {
			return fmt.Errorf("zones %q: a zone name is empty", strings.Join(o.Zones, ","))
		}
		if seen[z] {
			return fmt.Errorf("zones %q: %s is listed twice", strings.Join(o.Zones, ","), z)
		}
		seen[z] = true
	}
	return nil
}

// FromCatalog returns every catalog type as a packer.InstanceType, in
// catalog order (by name), with:
//
//   - Requirements: each catalog label as `In [value]`, plus
//     kubernetes.io/os=linux when the catalog omits it and
//     topology.kubernetes.io/region=Region;
//   - Capacity and Allocatable from the catalog;
//   - Offerings in every zone, in zone order: on-demand at the catalog price
//     (types without a price get none), then spot at SpotPriceFraction of
//     the on-demand price (types without a price get none either, since
//     there is nothing to take the fraction of). All are Available.
//
// Types left without offerings are still returned; NodePool drops them.
func FromCatalog(types []catalog.InstanceType, opts Options) ([]*packer.InstanceType, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	out := make([]*packer.InstanceType, 0, len(types))
	for i := range types {
		ct := &types[i]
		labels := make(map[string]string, len(ct.Labels)+2)
		for k, v := range ct.Labels {
			labels[k] = v
		}
		if labels[wellknown.LabelOS] == "" {
			labels[wellknown.LabelOS] = string(corev1.Linux)
		}
		labels[wellknown.LabelTopologyRegion] = opts.Region
		it := &packer.InstanceType{
			Name:         ct.Name,
			Requirements: requirements.FromLabels(labels),
			Capacity:     resources.NewVector(ct.Capacity),
			Allocatable:  resources.NewVector(ct.Allocatable),
		}
		if ct.Priced() {
			it.Offerings = make([]packer.Offering, 0, 2*len(opts.Zones))
			for _, zone := range opts.Zones {
				it.Offerings = append(it.Offerings,
					packer.Offering{Zone: zone, CapacityType: packer.CapacityTypeOnDemand, PricePerHour: ct.OnDemandPricePerHour, Available: true},
					packer.Offering{Zone: zone, CapacityType: packer.CapacityTypeSpot, PricePerHour: ct.OnDemandPricePerHour * opts.SpotPriceFraction, Available: true})
			}
		}
		out = append(out, it)
	}
	return out, nil
}

// Catalog returns the embedded catalog's types under opts (see FromCatalog).
func Catalog(opts Options) ([]*packer.InstanceType, error) {
	all, err := catalog.All()
	if err != nil {
		return nil, err
	}
	return FromCatalog(all, opts)
}

// instanceKeyPrefix marks the labels an instance type defines for itself; a
// type without one of them does not have the label at all.
const instanceKeyPrefix = wellknown.GroupAWS + "/instance-"

// typeDefines reports whether the label key is one that instance types
// define, so that a type without it lacks the label (and fails In, Exists, Gt
// and Lt on it). Other keys come from the offering (zone, capacity type) or
// from the NodePool (its name, template labels).
func typeDefines(key string) bool {
	switch key {
	case wellknown.LabelArch, wellknown.LabelOS, wellknown.LabelInstanceType, wellknown.LabelTopologyRegion, wellknown.LabelWindowsBuild:
		return true
	}
	return strings.HasPrefix(key, instanceKeyPrefix)
}

// Compatible returns the instance types that can serve a NodePool with the
// requirements reqs: those whose labels meet reqs on every key that instance
// types define, with their offerings narrowed to the zones and capacity
// types reqs allow and to available ones. Types left with no offering are
// dropped. The result keeps the order of types; a type whose offerings are
// all kept is returned as is, others as a copy that shares everything but
// the offerings.
func Compatible(types []*packer.InstanceType, reqs requirements.Requirements) []*packer.InstanceType {
	zone, hasZone := reqs.Get(wellknown.LabelTopologyZone)
	capacity, hasCapacity := reqs.Get(wellknown.LabelCapacityType)
	undefined := func(key string) bool { return !typeDefines(key) }
	var out []*packer.InstanceType
	for _, it := range types {
		if !compatible(it.Requirements, reqs, undefined) {
			continue
		}
		keep := it.Offerings[:0:0]
		for _, o := range it.Offerings {
			if !o.Available || hasZone && !zone.Allows(o.Zone) || hasCapacity && !capacity.Allows(o.CapacityType) {
				continue
			}
			keep = append(keep, o)
		}
		switch {
		case len(keep) == 0:
			continue
		case len(keep) == len(it.Offerings):
			out = append(out, it)
		default:
			cp := *it
			cp.Offerings = keep
			out = append(out, &cp)
		}
	}
	return out
}

func compatible(have, want requirements.Requirements, undefined requirements.UndefinedPolicy) bool {
	_, conflict := have.Conflict(want, undefined)
	return !conflict
}

// CheapestOffering returns the lowest price among it's available offerings
// and whether it has any.
func CheapestOffering(it *packer.InstanceType) (float64, bool) {
	best, found := 0.0, false
	for _, o := range it.Offerings {
		if o.Available && (!found || o.PricePerHour < best) {
			best, found = o.PricePerHour, true
		}
	}
	return best, found
}
