package aws

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/launch"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
)

// ReservationSyncInterval is how often the instance counts left in the
// selected capacity reservations are described again, as Karpenter polls
// them (every minute). Between two descriptions the counts move with the
// launches and terminations the provider makes itself.
const ReservationSyncInterval = time.Minute

// ReservedPriceDivisor divides a type's on-demand price into the price of its
// reserved offerings: the instances are paid for already, so launching into
// a reservation costs next to nothing, and dividing (rather than pricing at
// zero) keeps reserved offerings of different types in the order of their
// on-demand prices, which consolidation compares. Karpenter uses the same
// constant.
const ReservedPriceDivisor = 10_000_000.0

// reservationCounts tracks how many more instances each capacity reservation
// takes: AvailableInstanceCount as DescribeCapacityReservations last said,
// less the launches and plus the terminations made since. It is safe for
// concurrent use.
type reservationCounts struct {
	mu     sync.Mutex
	counts map[string]int
	synced map[string]time.Time // reservation ID → last description
}

func newReservationCounts() *reservationCounts {
	return &reservationCounts{counts: map[string]int{}, synced: map[string]time.Time{}}
}

// stale returns the IDs among ids not described within
// ReservationSyncInterval before now, sorted.
func (r *reservationCounts) stale(ids []string, now time.Time) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, id := range ids {
		at, ok := r.synced[id]
		if !ok || !now.Before(at.Add(ReservationSyncInterval)) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// set records what EC2 said about a reservation at now.
func (r *reservationCounts) set(id string, available int, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts[id], r.synced[id] = max(available, 0), now
}

// Available returns how many more instances the reservation takes; 0 for
// one never described.
func (r *reservationCounts) Available(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[id]
}

// MarkLaunched counts an instance launched into the reservation.
func (r *reservationCounts) MarkLaunched(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n, ok := r.counts[id]; ok && n > 0 {
		r.counts[id] = n - 1
	}
}

// MarkTerminated counts an instance of the reservation being terminated.
// EC2 frees the slot once the instance has terminated, a little later; the
// count may run ahead of EC2's until the next description, and a launch in
// between fails with ReservationCapacityExceeded and falls back, which is
// better than leaving reserved capacity unused.
func (r *reservationCounts) MarkTerminated(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n, ok := r.counts[id]; ok {
		r.counts[id] = n + 1
	}
}

// MarkUnavailable records that EC2 refused a launch into the reservation for
// lack of capacity: nothing more is launched into it until the next
// description says otherwise.
func (r *reservationCounts) MarkUnavailable(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.counts[id]; ok {
		r.counts[id] = 0
	}
}

// ReservationAvailable returns how many more instances the provider
// believes the capacity reservation takes.
func (p *Provider) ReservationAvailable(id string) int { return p.reservations.Available(id) }

// MarkReservationUnavailable stops launches into the capacity reservation
// until it is described again: EC2 is reclaiming its capacity (a capacity
// reservation interruption), so a replacement must go elsewhere.
func (p *Provider) MarkReservationUnavailable(id string) { p.reservations.MarkUnavailable(id) }

// reservedCapacity reports whether the ReservedCapacity feature gate is on.
func (p *Provider) reservedCapacity() bool { return !p.disableReserved }

// syncReservations describes the node class's reservations whose counts are
// older than ReservationSyncInterval. A failure keeps the last counts (none
// at first, which offers no reserved capacity): reservations are an extra
// place to launch, and a failed description must not stop launches
// elsewhere.
func (p *Provider) syncReservations(ctx context.Context, nc *awsv1.EC2NodeClass) {
	if !p.reservedCapacity() || len(nc.Status.CapacityReservations) == 0 {
		return
	}
	ids := make([]string, 0, len(nc.Status.CapacityReservations))
	for _, cr := range nc.Status.CapacityReservations {
		ids = append(ids, cr.ID)
	}
	now := p.clk.Now()
	stale := p.reservations.stale(ids, now)
	if len(stale) == 0 {
		return
	}
	describe := func(ids []string) error {
		out, err := p.ec2.DescribeCapacityReservations(ctx, &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: ids})
		if err != nil {
			return err
		}
		seen := map[string]bool{}
		for _, cr := range out.CapacityReservations {
			id := deref(cr.CapacityReservationId)
			seen[id] = true
			n := int(deref(cr.AvailableInstanceCount))
			if cr.State != ec2types.CapacityReservationStateActive {
				n = 0
			}
			p.reservations.set(id, n, now)
		}
		for _, id := range ids {
			if !seen[id] {
				p.reservations.set(id, 0, now)
			}
		}
		return nil
	}
	// One call for all of them; when it fails (a reservation among them
	// may no longer exist, which fails the whole call), one call each, so
	// that one gone reservation does not hide the others.
	if describe(stale) == nil {
		return
	}
	for _, id := range stale {
		if err := describe([]string{id}); err != nil && launch.ErrorCode(err) == "InvalidCapacityReservationId.NotFound" {
			p.reservations.set(id, 0, now)
		}
	}
}

// withReservations returns types with a reserved offering appended for every
// selected capacity reservation of the node class that matches the type's
// name: in the reservation's zone, at the on-demand price divided by
// ReservedPriceDivisor, available while the reservation takes more
// instances, its zone is one the node class launches in and (for a capacity
// block) it is not expiring. Types without reservations are returned as
// they are; the others are copies.
func (p *Provider) withReservations(types []*resolvedType, nc *awsv1.EC2NodeClass, snap snapshot) []*resolvedType {
	if !p.reservedCapacity() || len(nc.Status.CapacityReservations) == 0 {
		return types
	}
	byType := map[string][]awsv1.CapacityReservation{}
	for _, cr := range nc.Status.CapacityReservations {
		byType[cr.InstanceType] = append(byType[cr.InstanceType], cr)
	}
	zones := map[string]bool{}
	for _, z := range subnetZones(nc) {
		zones[z] = true
	}
	out := make([]*resolvedType, len(types))
	for i, t := range types {
		out[i] = t
		crs := byType[t.packer.Name]
		if len(crs) == 0 {
			continue
		}
		pt := *t.packer
		pt.Offerings = slices.Clone(t.packer.Offerings)
		price, _ := snap.onDemandPrice(pt.Name)
		for _, cr := range crs {
			n := p.reservations.Available(cr.ID)
			pt.Offerings = append(pt.Offerings, packer.Offering{
				Zone: cr.AvailabilityZone, CapacityType: wellknown.CapacityTypeReserved,
				PricePerHour:        price / ReservedPriceDivisor,
				Available:           n > 0 && zones[cr.AvailabilityZone] && slices.Contains(snap.zones[pt.Name], cr.AvailabilityZone) && cr.State != awsv1.CapacityReservationStateExpiring,
				ReservationID:       cr.ID,
				ReservationCapacity: n,
			})
		}
		cp := *t
		cp.packer = &pt
		out[i] = &cp
	}
	return out
}

// reservationOf returns the selected reservation with the given ID.
func reservationOf(nc *awsv1.EC2NodeClass, id string) (awsv1.CapacityReservation, bool) {
	for _, cr := range nc.Status.CapacityReservations {
		if cr.ID == id {
			return cr, true
		}
	}
	return awsv1.CapacityReservation{}, false
}

// reservationLabels are the labels of an instance in the reservation.
func reservationLabels(cr awsv1.CapacityReservation) map[string]string {
	typ := cr.ReservationType
	if typ == "" {
		typ = awsv1.CapacityReservationTypeDefault
	}
	return map[string]string{
		wellknown.LabelCapacityReservationID:            cr.ID,
		wellknown.LabelCapacityReservationType:          string(typ),
		wellknown.LabelCapacityReservationInterruptible: strconv.FormatBool(cr.Interruptible),
	}
}
