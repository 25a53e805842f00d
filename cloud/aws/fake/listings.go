package fake

import (
	"strings"
	"time"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
)

// listing is the whole result of a paginated read of the catalog (instance
// types, their offerings, spot prices, Price List products). A client pages
// through 1,000-odd types at 100 a page, and computing the whole result again
// for every page made each refresh of the provider's caches cost ten times
// what it should; the pages after the first are now cut from the listing,
// and a later read with the same request reuses it.
//
// A listing is kept per read and request (without its paging fields) and is
// current while catalogVersion, which every change to what these reads
// report (prices, offerings) moves, is what it was built at; the catalog
// itself does not change after New. Items hold no pointers a caller
// receives: each page is rendered into fresh values.
type listing struct {
	version uint64
	items   any
}

// maxListings bounds the listings kept. A client reads a handful of them in
// turn (the provider asks the Price List API twice per refresh, for shared
// and bare-metal types); past the bound they are all dropped.
const maxListings = 16

// listed returns the items of the read api with request key, building them
// unless a current listing of the same read is kept. The caller holds f.mu.
// A build that fails is not kept.
func listed[T any](f *AWS, api, key string, build func() ([]T, error)) ([]T, error) {
	id := api + "\x00" + key
	if l := f.listings[id]; l != nil && l.version == f.catalogVersion {
		return l.items.([]T), nil
	}
	items, err := build()
	if err != nil {
		return nil, err
	}
	if f.listings == nil || len(f.listings) >= maxListings {
		f.listings = map[string]*listing{}
	}
	f.listings[id] = &listing{version: f.catalogVersion, items: items}
	return items, nil
}

// catalogChanged invalidates the listings. The caller holds f.mu.
func (f *AWS) catalogChanged() { f.catalogVersion++ }

// requestKey joins the parts of a request that decide its result.
type requestKey struct{ b strings.Builder }

func (k *requestKey) add(parts ...string) *requestKey {
	for _, p := range parts {
		k.b.WriteString(p)
		k.b.WriteByte(0)
	}
	k.b.WriteByte(1)
	return k
}

func (k *requestKey) ptr(p *string) *requestKey {
	if p == nil {
		return k.add("\x02nil")
	}
	return k.add(*p)
}

func (k *requestKey) filters(fs []ec2types.Filter) *requestKey {
	for _, f := range fs {
		k.ptr(f.Name).add(f.Values...)
	}
	return k.add("\x03")
}

func (k *requestKey) types(ts []ec2types.InstanceType) *requestKey {
	for _, t := range ts {
		k.b.WriteString(string(t))
		k.b.WriteByte(0)
	}
	return k.add("\x03")
}

func (k *requestKey) pricingFilters(fs []pricingtypes.Filter) *requestKey {
	for _, f := range fs {
		k.add(string(f.Type)).ptr(f.Field).ptr(f.Value)
	}
	return k.add("\x03")
}

func (k *requestKey) String() string { return k.b.String() }

// spotRecord is one entry of a spot price listing.
type spotRecord struct {
	instanceType, zone, zoneID, description, price string
	at                                             time.Time
}

func (r spotRecord) render() ec2types.SpotPrice {
	return ec2types.SpotPrice{
		InstanceType:       ec2types.InstanceType(r.instanceType),
		AvailabilityZone:   ptr(r.zone),
		AvailabilityZoneId: ptr(r.zoneID),
		ProductDescription: ec2types.RIProductDescription(r.description),
		SpotPrice:          ptr(r.price),
		Timestamp:          ptr(r.at),
	}
}

// offeringRecord is one entry of an instance type offering listing.
type offeringRecord struct{ instanceType, location string }
