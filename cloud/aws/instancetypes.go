package aws

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/amifamily"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/catalog"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/instancetype"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/zonalshift"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
)

// describeCache holds what EC2 and the Price List API said, each part with
// the time it was fetched.
//
// A refresh replaces the maps and slices instead of changing them, so a
// snapshot taken earlier stays consistent while another call refreshes. The
// generations count the refreshes that changed something: the instance-type
// cache (typecache.go) rebuilds only when they move, and a refresh that finds
// what was there before (the usual case every TTL) moves neither.
type describeCache struct {
	types    []ec2types.InstanceTypeInfo // sorted by name
	byName   map[string]int
	zones    map[string][]string // instance type → zones offering it, sorted
	typesAt  time.Time
	typesGen uint64
	// labels memoizes instancetype.Labels of the described types, for the
	// description of labelsGen (see typeLabelsLocked).
	labels    map[labelsKey]map[string]string
	labelsGen uint64

	onDemand   map[string]float64
	onDemandAt time.Time

	spot      map[spotKey]float64
	spotAt    time.Time
	spotKnown bool // a spot price query has succeeded at least once

	pricesGen uint64

	// priceDocs are the documents of the last complete Price List read and
	// what each said. The list seldom changes between refreshes, and parsing
	// a thousand-odd JSON documents every time was most of a refresh's work;
	// a document seen before is not parsed again.
	priceDocs         map[string]priceDoc
	priceDocsCurrency string
}

type spotKey struct{ instanceType, zone string }

// snapshot is a consistent view of the cache for one call.
type snapshot struct {
	types     []ec2types.InstanceTypeInfo
	byName    map[string]int
	zones     map[string][]string
	onDemand  map[string]float64
	spot      map[spotKey]float64
	spotKnown bool
	region    string

	typesGen, pricesGen uint64
}

func (p *Provider) expired(at time.Time) bool {
	return at.IsZero() || !p.clk.Now().Before(at.Add(p.ttl))
}

// refresh returns the cached descriptions, describing again what expired.
// Instance types and offerings must be described; prices fall back to the
// last known ones, then to the embedded catalog.
func (p *Provider) refresh(ctx context.Context) (snapshot, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := &p.cache
	if p.expired(c.typesAt) {
		types, err := p.describeInstanceTypes(ctx)
		if err != nil {
			return snapshot{}, err
		}
		zones, err := p.describeOfferings(ctx)
		if err != nil {
			return snapshot{}, err
		}
		if c.typesGen == 0 || !same(types, c.types) || !same(zones, c.zones) {
			c.types, c.zones = types, zones
			c.byName = make(map[string]int, len(types))
			for i, t := range types {
				c.byName[string(t.InstanceType)] = i
			}
			c.typesGen++
		}
		c.typesAt = p.clk.Now()
	}
	if p.expired(c.onDemandAt) && p.pricing != nil && !p.settings.IsolatedVPC {
		// A failure keeps the last known prices (or the catalog's) and is
		// tried again after the TTL, not at every call: an API that does
		// not answer (an emulator without it, a VPC without a route to
		// it) would otherwise cost every call a failed request and its
		// retries.
		prices, err := p.describeOnDemandPrices(ctx)
		if err == nil {
			if merged, changed := mergePrices(c.onDemand, prices); changed {
				c.onDemand = merged
				c.pricesGen++
			}
		}
		if ctx.Err() == nil { // a cancelled call says nothing of the API
			c.onDemandAt = p.clk.Now()
			p.pricingAnswered(err)
		}
	}
	if p.expired(c.spotAt) {
		if prices, err := p.describeSpotPrices(ctx); err == nil {
			if merged, changed := mergePrices(c.spot, prices); changed || !c.spotKnown {
				c.spot = merged
				c.pricesGen++
			}
			c.spotAt, c.spotKnown = p.clk.Now(), true
		}
	}
	return snapshot{
		types: c.types, byName: c.byName, zones: c.zones,
		onDemand: c.onDemand, spot: c.spot, spotKnown: c.spotKnown, region: p.region,
		typesGen: c.typesGen, pricesGen: c.pricesGen,
	}, nil
}

// ReportPricingTo implements cloud.PricingReporter: report is told when a
// Price List read fails after one that did not (or the first fails), and
// when one succeeds after one that failed. While the API fails, on-demand
// prices are the last ones it gave, else the embedded catalog's.
func (p *Provider) ReportPricingTo(report func(err error)) {
	p.pricingReport.Store(&report)
}

// pricingAnswered records the outcome of a Price List read and reports a
// change. p.mu is held.
func (p *Provider) pricingAnswered(err error) {
	down := err != nil
	if down == p.pricingDown {
		return
	}
	p.pricingDown = down
	if report := p.pricingReport.Load(); report != nil {
		(*report)(err)
	}
}

// mergePrices returns the prices of old updated with those of fresh (a price
// that fresh does not mention is kept), as a new map, and whether any price
// changed. When none did it returns old itself.
func mergePrices[K comparable](old, fresh map[K]float64) (map[K]float64, bool) {
	changed := old == nil
	for k, v := range fresh {
		if was, ok := old[k]; !ok || was != v {
			changed = true
			break
		}
	}
	if !changed {
		return old, false
	}
	out := make(map[K]float64, max(len(old), len(fresh)))
	maps.Copy(out, old)
	maps.Copy(out, fresh)
	return out, true
}

func (p *Provider) describeInstanceTypes(ctx context.Context) ([]ec2types.InstanceTypeInfo, error) {
	in := &ec2.DescribeInstanceTypesInput{Filters: []ec2types.Filter{
		{Name: ptr("supported-virtualization-type"), Values: []string{"hvm"}},
		{Name: ptr("processor-info.supported-architecture"), Values: []string{"x86_64", "arm64"}},
	}}
	out := make([]ec2types.InstanceTypeInfo, 0, len(p.cache.types)) // sized for the last answer
	pg := ec2.NewDescribeInstanceTypesPaginator(p.ec2, in)
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing instance types: %w", err)
		}
		out = append(out, page.InstanceTypes...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].InstanceType < out[j].InstanceType })
	return out, nil
}

func (p *Provider) describeOfferings(ctx context.Context) (map[string][]string, error) {
	in := &ec2.DescribeInstanceTypeOfferingsInput{LocationType: ec2types.LocationTypeAvailabilityZone}
	zones := make(map[string][]string, len(p.cache.zones)) // sized for the last answer
	pg := ec2.NewDescribeInstanceTypeOfferingsPaginator(p.ec2, in)
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing instance type offerings: %w", err)
		}
		for _, o := range page.InstanceTypeOfferings {
			t := string(o.InstanceType)
			zones[t] = append(zones[t], deref(o.Location))
		}
	}
	for _, z := range zones {
		sort.Strings(z)
	}
	return zones, nil
}

// describeOnDemandPrices queries the Price List API for Linux on-demand
// prices in the region: shared-tenancy instances and bare-metal ones.
func (p *Provider) describeOnDemandPrices(ctx context.Context) (map[string]float64, error) {
	out := map[string]float64{}
	cur := currency(p.region)
	last := p.cache.priceDocs
	if p.cache.priceDocsCurrency != cur {
		last = nil
	}
	seen := make(map[string]priceDoc, len(last))
	for _, q := range []struct{ tenancy, family string }{
		{"Shared", "Compute Instance"},
		{"Dedicated", "Compute Instance (bare metal)"},
	} {
		term := func(field, value string) pricingtypes.Filter {
			return pricingtypes.Filter{Type: pricingtypes.FilterTypeTermMatch, Field: ptr(field), Value: ptr(value)}
		}
		in := &pricing.GetProductsInput{
			ServiceCode: ptr("AmazonEC2"),
			Filters: []pricingtypes.Filter{
				term("regionCode", p.region), term("preInstalledSw", "NA"), term("operatingSystem", "Linux"),
				term("capacitystatus", "Used"), term("marketoption", "OnDemand"),
				term("tenancy", q.tenancy), term("productFamily", q.family),
			},
		}
		pg := pricing.NewGetProductsPaginator(p.pricing, in)
		for pg.HasMorePages() {
			page, err := pg.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("getting on-demand prices: %w", err)
			}
			for _, doc := range page.PriceList {
				d, ok := last[doc]
				if !ok {
					d.name, d.price, d.ok = parsePriceListItem(doc, cur)
				}
				seen[doc] = d
				if d.ok {
					out[d.name] = d.price
				}
			}
		}
	}
	p.cache.priceDocs, p.cache.priceDocsCurrency = seen, cur
	return out, nil
}

// priceDoc is what parsePriceListItem read from a Price List document.
type priceDoc struct {
	name  string
	price float64
	ok    bool
}

func currency(region string) string {
	if strings.HasPrefix(region, "cn-") {
		return "CNY"
	}
	return "USD"
}

// parsePriceListItem reads the instance type and its hourly price from one
// Price List product document.
func parsePriceListItem(doc, cur string) (string, float64, bool) {
	var item struct {
		Product struct {
			Attributes struct {
				InstanceType string `json:"instanceType"`
			} `json:"attributes"`
		} `json:"product"`
		Terms struct {
			OnDemand map[string]struct {
				PriceDimensions map[string]struct {
					PricePerUnit map[string]string `json:"pricePerUnit"`
				} `json:"priceDimensions"`
			} `json:"OnDemand"`
		} `json:"terms"`
	}
	if err := json.Unmarshal([]byte(doc), &item); err != nil {
		return "", 0, false
	}
	name := item.Product.Attributes.InstanceType
	for _, term := range item.Terms.OnDemand {
		for _, dim := range term.PriceDimensions {
			if v, err := strconv.ParseFloat(dim.PricePerUnit[cur], 64); err == nil && v > 0 && name != "" {
				return name, v, true
			}
		}
	}
	return "", 0, false
}

// describeSpotPrices returns the latest Linux spot price per type and zone.
func (p *Provider) describeSpotPrices(ctx context.Context) (map[spotKey]float64, error) {
	in := &ec2.DescribeSpotPriceHistoryInput{
		StartTime:           ptr(p.clk.Now()),
		ProductDescriptions: []string{"Linux/UNIX", "Linux/UNIX (Amazon VPC)"},
	}
	// Sized for the usual answer, a price per offering, so that the maps
	// are not grown record by record on every refresh.
	size := len(p.cache.spot)
	latest := make(map[spotKey]time.Time, size)
	out := make(map[spotKey]float64, size)
	pg := ec2.NewDescribeSpotPriceHistoryPaginator(p.ec2, in)
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing spot prices: %w", err)
		}
		for _, sp := range page.SpotPriceHistory {
			price, err := strconv.ParseFloat(deref(sp.SpotPrice), 64)
			if err != nil {
				continue
			}
			k := spotKey{string(sp.InstanceType), deref(sp.AvailabilityZone)}
			ts := deref(sp.Timestamp)
			if at, ok := latest[k]; ok && at.After(ts) {
				continue
			}
			latest[k], out[k] = ts, price
		}
	}
	return out, nil
}

// onDemandPrice returns the type's on-demand price: the Price List API's,
// else the embedded catalog's.
func (s snapshot) onDemandPrice(name string) (float64, bool) {
	if v, ok := s.onDemand[name]; ok && v > 0 {
		return v, true
	}
	if t, ok := catalog.Lookup(name); ok && t.Priced() {
		return t.OnDemandPricePerHour, true
	}
	return 0, false
}

// spotPrice returns the spot price of a pool. Until spot prices have been
// described once the on-demand price stands in; after that a pool without a
// spot price has no spot offering.
func (s snapshot) spotPrice(name, zone string) (float64, bool) {
	if !s.spotKnown {
		return s.onDemandPrice(name)
	}
	v, ok := s.spot[spotKey{name, zone}]
	return v, ok && v > 0
}

// resolvedType is an instance type as a node class launches it.
type resolvedType struct {
	it      *instancetype.InstanceType
	packer  *packer.InstanceType
	imageID string
}

func (p *Provider) typeOptions(nc *awsv1.EC2NodeClass, region string) instancetype.Options {
	opts := instancetype.DefaultOptions()
	opts.AMIFamily = amifamily.ResolvedFamily(&nc.Spec)
	opts.Kubelet = nc.Spec.Kubelet
	opts.BlockDeviceMappings = nc.Spec.BlockDeviceMappings
	opts.InstanceStorePolicy = nc.Spec.InstanceStorePolicy
	// The setting is taken as given: 0 is a valid choice (no VM overhead),
	// and settings.Default() supplies the usual 0.075.
	opts.VMMemoryOverheadPercent = p.settings.VMMemoryOverheadPercent
	opts.ReservedENIs = p.settings.ReservedENIs
	opts.NetworkInterfaces = nc.Spec.NetworkInterfaces
	opts.Region = region
	return opts
}

// resolve returns the instance types the node class can launch, each with
// its offerings in the zones of the node class's subnets (on-demand, then
// spot, per zone in order), unavailable where the ICE cache says so, and
// then its reserved offerings (see withReservations); every offering in a
// zone under an ARC zonal shift is unavailable (see withoutShiftedZones). Types no selected
// image suits are left out when the node class has images.
//
// The result comes from the provider's type cache (typecache.go) and is
// shared between callers: it must not be modified.
func (p *Provider) resolve(ctx context.Context, nc *awsv1.EC2NodeClass) ([]*resolvedType, snapshot, error) {
	snap, err := p.refresh(ctx)
	if err != nil {
		return nil, snap, err
	}
	// The placement group's strategy decides which types are compatible.
	if _, err := p.placementGroup(ctx, nc); err != nil {
		return nil, snap, err
	}
	// Reserved offerings are added past the cache: their availability
	// moves with every launch into a reservation.
	p.syncReservations(ctx, nc)
	types := p.withReservations(p.typeCache.get(p, nc, snap), nc, snap)
	return withoutShiftedZones(types, shiftedZones(nc, p.zonalShift)), snap, nil
}

// shiftedZones returns the names of the node class's subnet zones that the
// cluster's traffic is shifted away from. ARC names zones by ID; the
// subnets the node class resolved carry both.
func shiftedZones(nc *awsv1.EC2NodeClass, shifts *zonalshift.Tracker) map[string]bool {
	if shifts == nil {
		return nil
	}
	var out map[string]bool
	for _, s := range nc.Status.Subnets {
		if shifts.Shifted(s.ZoneID) {
			if out == nil {
				out = map[string]bool{}
			}
			out[s.Zone] = true
		}
	}
	return out
}

// withoutShiftedZones marks every offering in the given zones unavailable
// (on-demand, spot and reserved alike, as Karpenter does during a zonal
// shift), so that nothing is scheduled onto or launched into them. Types
// with such offerings are copied; the shared cached ones are not changed.
func withoutShiftedZones(types []*resolvedType, zones map[string]bool) []*resolvedType {
	if len(zones) == 0 {
		return types
	}
	out := make([]*resolvedType, len(types))
	for i, t := range types {
		out[i] = t
		if !slices.ContainsFunc(t.packer.Offerings, func(o packer.Offering) bool { return o.Available && zones[o.Zone] }) {
			continue
		}
		pt := *t.packer
		pt.Offerings = slices.Clone(t.packer.Offerings)
		for j := range pt.Offerings {
			if zones[pt.Offerings[j].Zone] {
				pt.Offerings[j].Available = false
			}
		}
		cp := *t
		cp.packer = &pt
		out[i] = &cp
	}
	return out
}

// baseTypes computes what the node class makes of every described instance
// type: labels, resources and image. Offerings are left out.
func (p *Provider) baseTypes(nc *awsv1.EC2NodeClass, snap snapshot) []baseType {
	opts := p.typeOptions(nc, snap.region)
	strategy := p.placementStrategy(nc)
	var out []baseType
	for _, info := range snap.types {
		if _, ok := instancetype.Compatible(info, &nc.Spec, strategy); !ok {
			continue
		}
		it, err := instancetype.New(info, opts)
		if err != nil {
			continue // a type EC2 describes incompletely cannot be modelled
		}
		var imageID string
		if len(nc.Status.AMIs) > 0 {
			ami, ok := amifamily.ImageFor(nc.Status.AMIs, it.Labels)
			if !ok {
				continue
			}
			imageID = ami.ID
		}
		out = append(out, baseType{it: it, packer: it.ToPacker(nil), imageID: imageID})
	}
	return out
}

// withOfferings returns the types with their offerings in the given zones at
// the snapshot's prices, unavailable where the ICE cache says so. Each type
// is a new value; the base types are not changed.
func (p *Provider) withOfferings(base []baseType, zones map[string]bool, snap snapshot) []*resolvedType {
	out := make([]*resolvedType, 0, len(base))
	for i := range base {
		b := &base[i]
		name := b.packer.Name
		var offs []packer.Offering
		for _, zone := range snap.zones[name] {
			if !zones[zone] {
				continue
			}
			if price, ok := snap.onDemandPrice(name); ok {
				offs = append(offs, packer.Offering{Zone: zone, CapacityType: wellknown.CapacityTypeOnDemand, PricePerHour: price,
					Available: p.ice.Available(name, zone, wellknown.CapacityTypeOnDemand)})
			}
			if price, ok := snap.spotPrice(name, zone); ok {
				offs = append(offs, packer.Offering{Zone: zone, CapacityType: wellknown.CapacityTypeSpot, PricePerHour: price,
					Available: p.ice.Available(name, zone, wellknown.CapacityTypeSpot)})
			}
		}
		pt := *b.packer
		pt.Offerings = offs
		out = append(out, &resolvedType{it: b.it, packer: &pt, imageID: b.imageID})
	}
	return out
}

// GetInstanceTypes implements cloud.CloudProvider.
func (p *Provider) GetInstanceTypes(ctx context.Context, nodePool *karpv1.NodePool) ([]*packer.InstanceType, error) {
	ref := nodePool.Spec.Template.Spec.NodeClassRef
	if ref == nil {
		return nil, nil
	}
	nc, err := p.getNodeClass(ctx, ref.Name)
	if err != nil || nc == nil {
		return nil, err
	}
	types, _, err := p.resolve(ctx, nc)
	if err != nil {
		return nil, err
	}
	out := make([]*packer.InstanceType, 0, len(types))
	for _, t := range types {
		out = append(out, t.packer)
	}
	return out, nil
}
