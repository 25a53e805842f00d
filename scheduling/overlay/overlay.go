// Package overlay applies NodeOverlays to the instance-type catalog. It is
// a pure function of the overlays and of each NodePool's instance types, so
// that the controller, the simulator and `stevedore plan` adjust prices and
// capacity with the same code.
//
// The rules are Karpenter's. Overlays are taken by weight, highest first,
// and among equal weights by name, later in the alphabet first. An overlay
// matches an offering when the offering's instance type, its zone, capacity
// type and reservation, and the NodePool's name and template labels meet the
// overlay's requirements. For each offering the first overlay that sets a
// price (price or priceAdjustment) wins; for each extended resource the
// first overlay that sets it wins. An overlay that would set the same
// offering's price, or the same resource of a type, as an overlay of the
// same weight taken before it conflicts: it applies nowhere (in no NodePool,
// so that it never applies in part) and its ValidationSucceeded condition
// says so. An overlay that fails the checks the API server cannot do
// applies nowhere either.
package overlay

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/stevedore-autoscaler/stevedore/api/karpenter/v1alpha1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/scheduling/requirements"
	"github.com/stevedore-autoscaler/stevedore/scheduling/resources"
)

// Pool is one NodePool's catalog as the overlays see it.
type Pool struct {
	// Name is the NodePool's name; overlays may select it with
	// karpenter.sh/nodepool.
	Name string
	// Labels are the NodePool template's labels, which overlays may select.
	Labels map[string]string
	// InstanceTypes are the types the cloud provider lists for the NodePool,
	// before its requirements narrow them: an overlay conflicts on a type
	// even where the NodePool does not launch it, as in Karpenter.
	InstanceTypes []*packer.InstanceType
}

// Verdict is what became of one overlay.
type Verdict struct {
	// Name is the overlay's name.
	Name string
	// Valid is true when the overlay passed its checks and conflicts with
	// no overlay of its weight; only then does it apply.
	Valid bool
	// Reason is v1alpha1.ReasonRuntimeValidation or v1alpha1.ReasonConflict
	// when Valid is false.
	Reason string
	// Message says what is wrong and what to do.
	Message string
}

// Result is the overlays' effect on a catalog: a verdict per overlay and the
// changes Apply makes to each NodePool's instance types.
type Result struct {
	// Verdicts are one per overlay, in name order.
	Verdicts []Verdict
	// updates are the changes per NodePool and instance type name.
	updates map[string]map[string]*typeUpdate
}

// typeUpdate is what the overlays change about one instance type in one
// NodePool.
type typeUpdate struct {
	// prices are the price changes of the offerings, by offering.
	prices map[offeringKey]*priceUpdate
	// capacity is nil until an overlay sets a resource of the type.
	capacity *capacityUpdate
}

// offeringKey identifies an offering within its instance type.
type offeringKey struct {
	zone, capacityType, reservationID string
}

type priceUpdate struct {
	// change is the winning overlay's price or priceAdjustment.
	change string
	// weight and name are those of the last overlay that set this
	// offering's price, winning or not: an overlay of the same weight
	// taken next conflicts with it.
	weight int32
	name   string
}

type capacityUpdate struct {
	// set are the resources overlays set, each from the first overlay
	// that set it.
	set corev1.ResourceList
	// last, weight and name are the resources, weight and name of the last
	// overlay that set resources of this type.
	last   corev1.ResourceList
	weight int32
	name   string
}

// Weight is the overlay's weight, 0 when it has none.
func Weight(o *v1alpha1.NodeOverlay) int32 {
	if o.Spec.Weight == nil {
		return 0
	}
	return *o.Spec.Weight
}

// Order sorts overlays in the order they are taken: by weight, highest
// first, then by name, later in the alphabet first. It sorts a copy.
func Order(overlays []*v1alpha1.NodeOverlay) []*v1alpha1.NodeOverlay {
	out := slices.Clone(overlays)
	slices.SortStableFunc(out, func(a, b *v1alpha1.NodeOverlay) int {
		if c := cmp.Compare(Weight(b), Weight(a)); c != 0 {
			return c
		}
		return strings.Compare(b.Name, a.Name)
	})
	return out
}

// Evaluate works out what the overlays change in the pools' catalogs.
// Neither the overlays nor the instance types are modified.
func Evaluate(overlays []*v1alpha1.NodeOverlay, pools []Pool) *Result {
	r := &Result{updates: map[string]map[string]*typeUpdate{}}
	if len(overlays) == 0 {
		return r
	}
	// What each type in each pool defines, built once for every overlay.
	bases := make([][]requirements.Requirements, len(pools))
	for i, p := range pools {
		labels := maps.Clone(p.Labels)
		if labels == nil {
			labels = map[string]string{}
		}
		labels[wellknown.LabelNodePool] = p.Name
		poolReqs := requirements.FromLabels(labels)
		bases[i] = make([]requirements.Requirements, len(p.InstanceTypes))
		for j, it := range p.InstanceTypes {
			bases[i][j] = it.Requirements.Intersect(poolReqs)
		}
	}
	for _, o := range Order(overlays) {
		v := Verdict{Name: o.Name, Valid: true}
		sel, err := parse(o)
		switch {
		case err != nil:
			v = Verdict{Name: o.Name, Reason: v1alpha1.ReasonRuntimeValidation, Message: err.Error()}
		default:
			if with, conflict := r.conflict(sel, pools, bases); conflict {
				v = Verdict{Name: o.Name, Reason: v1alpha1.ReasonConflict, Message: fmt.Sprintf(
					"conflicts with NodeOverlay %s, which has the same weight (%d) and sets the price or a resource of the same offerings; it wins by name, so this overlay applies nowhere: give one of them another weight, or narrow the requirements so that they do not overlap",
					with, sel.weight)}
			} else {
				r.store(sel, pools, bases)
			}
		}
		r.Verdicts = append(r.Verdicts, v)
	}
	slices.SortFunc(r.Verdicts, func(a, b Verdict) int { return strings.Compare(a.Name, b.Name) })
	return r
}

// selector is an overlay, checked and parsed.
type selector struct {
	name   string
	weight int32
	// typeReqs are the requirements on the instance type and NodePool;
	// offeringReqs those on the offering's zone, capacity type and
	// reservation.
	typeReqs     requirements.Requirements
	offeringReqs []requirements.Requirement
	// price is the price or priceAdjustment, "" when the overlay sets none.
	price    string
	capacity corev1.ResourceList
}

// offeringLabels are the labels an offering, not its instance type, defines.
var offeringLabels = []string{wellknown.LabelTopologyZone, wellknown.LabelCapacityType, wellknown.LabelCapacityReservationID}

func parse(o *v1alpha1.NodeOverlay) (selector, error) {
	if err := Validate(o); err != nil {
		return selector{}, err
	}
	s := selector{name: o.Name, weight: Weight(o), capacity: o.Spec.Capacity}
	var typeReqs []requirements.Requirement
	for _, nsr := range o.Spec.Requirements {
		req, err := requirements.NewRequirement(nsr.Key, nsr.Operator, nsr.Values...)
		if err != nil {
			return selector{}, fmt.Errorf("spec.requirements: %s: %w", nsr.Key, err)
		}
		if slices.Contains(offeringLabels, req.Key()) {
			s.offeringReqs = append(s.offeringReqs, req)
		} else {
			typeReqs = append(typeReqs, req)
		}
	}
	s.typeReqs = requirements.New(typeReqs...)
	switch {
	case o.Spec.Price != nil:
		s.price = *o.Spec.Price
	case o.Spec.PriceAdjustment != nil:
		s.price = *o.Spec.PriceAdjustment
	}
	return s, nil
}

// matchesType reports whether a type (its requirements and its NodePool's
// labels, base) can meet the overlay's requirements on anything but the
// offering. A key the type does not define matches only NotIn and
// DoesNotExist, as in Karpenter.
func (s *selector) matchesType(base requirements.Requirements) bool {
	_, conflict := base.Conflict(s.typeReqs, requirements.RequireDefined)
	return !conflict
}

// matchesOffering reports whether the offering meets the overlay's
// requirements on zone, capacity type and reservation.
func (s *selector) matchesOffering(o packer.Offering) bool {
	for _, req := range s.offeringReqs {
		var value string
		switch req.Key() {
		case wellknown.LabelTopologyZone:
			value = o.Zone
		case wellknown.LabelCapacityType:
			value = o.CapacityType
		case wellknown.LabelCapacityReservationID:
			value = o.ReservationID
		}
		if value == "" {
			if !req.AllowsAbsent() {
				return false
			}
			continue
		}
		if !req.Allows(value) {
			return false
		}
	}
	return true
}

func keyOf(o packer.Offering) offeringKey {
	return offeringKey{zone: o.Zone, capacityType: o.CapacityType, reservationID: o.ReservationID}
}

// each calls f for every type of every pool that the overlay matches, with
// the offerings it matches (at least one).
func (s *selector) each(pools []Pool, bases [][]requirements.Requirements, f func(pool string, it *packer.InstanceType, offerings []packer.Offering) bool) bool {
	for i, p := range pools {
		for j, it := range p.InstanceTypes {
			if !s.matchesType(bases[i][j]) {
				continue
			}
			var matched []packer.Offering
			for _, o := range it.Offerings {
				if s.matchesOffering(o) {
					matched = append(matched, o)
				}
			}
			if len(matched) == 0 {
				continue
			}
			if !f(p.Name, it, matched) {
				return false
			}
		}
	}
	return true
}

// conflict reports whether the overlay would set what an overlay of the
// same weight already set, and that overlay's name.
func (r *Result) conflict(s selector, pools []Pool, bases [][]requirements.Requirements) (string, bool) {
	var with string
	done := s.each(pools, bases, func(pool string, it *packer.InstanceType, offerings []packer.Offering) bool {
		u := r.updates[pool][it.Name]
		if u == nil {
			return true
		}
		if s.price != "" {
			for _, o := range offerings {
				if p, ok := u.prices[keyOf(o)]; ok && p.weight == s.weight {
					with = p.name
					return false
				}
			}
		}
		if len(s.capacity) > 0 && u.capacity != nil && u.capacity.weight == s.weight {
			for name := range s.capacity {
				if _, ok := u.capacity.last[name]; ok {
					with = u.capacity.name
					return false
				}
			}
		}
		return true
	})
	return with, !done
}

// store records what a valid overlay sets, where no overlay taken before
// set it.
func (r *Result) store(s selector, pools []Pool, bases [][]requirements.Requirements) {
	if s.price == "" && len(s.capacity) == 0 {
		return
	}
	s.each(pools, bases, func(pool string, it *packer.InstanceType, offerings []packer.Offering) bool {
		types := r.updates[pool]
		if types == nil {
			types = map[string]*typeUpdate{}
			r.updates[pool] = types
		}
		u := types[it.Name]
		if u == nil {
			u = &typeUpdate{prices: map[offeringKey]*priceUpdate{}}
			types[it.Name] = u
		}
		if s.price != "" {
			for _, o := range offerings {
				if p, ok := u.prices[keyOf(o)]; ok {
					p.weight, p.name = s.weight, s.name
					continue
				}
				u.prices[keyOf(o)] = &priceUpdate{change: s.price, weight: s.weight, name: s.name}
			}
		}
		if len(s.capacity) > 0 {
			if u.capacity == nil {
				u.capacity = &capacityUpdate{set: corev1.ResourceList{}}
			}
			for name, q := range s.capacity {
				if _, ok := u.capacity.set[name]; !ok {
					u.capacity.set[name] = q.DeepCopy()
				}
			}
			u.capacity.last, u.capacity.weight, u.capacity.name = s.capacity, s.weight, s.name
		}
		return true
	})
}

// Applies reports whether the overlays change anything in the pool.
func (r *Result) Applies(pool string) bool {
	return r != nil && len(r.updates[pool]) > 0
}

// Apply returns the pool's instance types with the overlays applied: an
// overlaid type is a copy with its offerings' prices changed and its
// resources added to its capacity and allocatable; every other type is
// returned as it was. The argument and its types are not modified.
func (r *Result) Apply(pool string, types []*packer.InstanceType) []*packer.InstanceType {
	if !r.Applies(pool) {
		return types
	}
	updates := r.updates[pool]
	out := make([]*packer.InstanceType, len(types))
	for i, it := range types {
		u := updates[it.Name]
		if u == nil {
			out[i] = it
			continue
		}
		cp := *it
		if len(u.prices) > 0 {
			cp.Offerings = slices.Clone(it.Offerings)
			for j := range cp.Offerings {
				if p, ok := u.prices[keyOf(cp.Offerings[j])]; ok {
					cp.Offerings[j].PricePerHour = AdjustedPrice(cp.Offerings[j].PricePerHour, p.change)
				}
			}
		}
		if u.capacity != nil && len(u.capacity.set) > 0 {
			cp.Capacity = withResources(it.Capacity, u.capacity.set)
			cp.Allocatable = withResources(it.Allocatable, u.capacity.set)
		}
		out[i] = &cp
	}
	return out
}

// withResources returns v with the resources of set set to set's
// quantities: an overlay's quantity replaces the type's own, as in
// Karpenter.
func withResources(v resources.Vector, set corev1.ResourceList) resources.Vector {
	list := v.ResourceList()
	if list == nil {
		list = corev1.ResourceList{}
	}
	for name, q := range set {
		list[name] = q.DeepCopy()
	}
	return resources.NewVector(list)
}

// AdjustedPrice applies an overlay's price or priceAdjustment to a price:
// an unsigned number replaces it; a signed number is added to it; a signed
// percentage scales it. The result is never below 0. A change that does
// not parse (the API server's pattern keeps those out) leaves the price as
// it was.
func AdjustedPrice(price float64, change string) float64 {
	if change == "" {
		return price
	}
	if !strings.HasPrefix(change, "+") && !strings.HasPrefix(change, "-") {
		v, err := strconv.ParseFloat(change, 64)
		if err != nil {
			return price
		}
		return v
	}
	var out float64
	if pct, ok := strings.CutSuffix(change, "%"); ok {
		v, err := strconv.ParseFloat(pct, 64)
		if err != nil {
			return price
		}
		out = price * (1 + v/100)
	} else {
		v, err := strconv.ParseFloat(change, 64)
		if err != nil {
			return price
		}
		out = price + v
	}
	return max(out, 0)
}
