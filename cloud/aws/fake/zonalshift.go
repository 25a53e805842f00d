package fake

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/arczonalshift"
	arctypes "github.com/aws/aws-sdk-go-v2/service/arczonalshift/types"
)

// MaxZonalShiftDuration is the longest a zonal shift may be started for:
// ARC lets a shift run for up to three days before it must be extended.
const MaxZonalShiftDuration = 72 * time.Hour

// zonalShift is one customer-started ARC zonal shift of an EKS cluster.
type zonalShift struct {
	id        string
	cluster   string // cluster name
	awayFrom  string // zone ID
	comment   string
	start     time.Time
	expiry    time.Time
	cancelled bool
}

func (z *zonalShift) active(now time.Time) bool { return !z.cancelled && now.Before(z.expiry) }

// StartZonalShift starts an ARC zonal shift of the cluster away from a zone
// (its name, such as us-east-1a, or its ID, such as use1-az1) for d, as
// `aws arc-zonal-shift start-zonal-shift` would, and returns the shift's ID.
// As in ARC, a cluster has at most one active zonal shift, d is at most
// MaxZonalShiftDuration, and the shift ends by itself when d has passed.
// GetManagedResource reports it until then, applied.
func (f *AWS) StartZonalShift(clusterName, zone string, d time.Duration, comment string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.advance()
	if _, ok := f.clusters[clusterName]; !ok {
		return "", fmt.Errorf("zonal shift: no cluster %q; add it with AddCluster first", clusterName)
	}
	id, ok := f.ZoneID(zone)
	if !ok {
		for _, z := range f.zones {
			if z.id == zone {
				id, ok = z.id, true
			}
		}
	}
	if !ok {
		return "", fmt.Errorf("zonal shift: zone %q is neither a zone name nor a zone ID of region %s", zone, f.opts.Region)
	}
	if d <= 0 || d > MaxZonalShiftDuration {
		return "", fmt.Errorf("zonal shift: duration %s must be more than 0 and at most %s", d, MaxZonalShiftDuration)
	}
	now := f.now()
	for _, z := range f.zonalShifts {
		if z.cluster == clusterName && z.active(now) {
			return "", fmt.Errorf("zonal shift: cluster %q already has the active zonal shift %s away from %s; cancel it first", clusterName, z.id, z.awayFrom)
		}
	}
	z := &zonalShift{id: f.uuid(), cluster: clusterName, awayFrom: id, comment: comment, start: now, expiry: now.Add(d)}
	f.zonalShifts = append(f.zonalShifts, z)
	return z.id, nil
}

// CancelZonalShift ends a zonal shift before it expires; traffic and
// capacity may return to the zone.
func (f *AWS) CancelZonalShift(id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.advance()
	for _, z := range f.zonalShifts {
		if z.id == id {
			if !z.active(f.now()) {
				return fmt.Errorf("zonal shift %s has already ended", id)
			}
			z.cancelled = true
			return nil
		}
	}
	return fmt.Errorf("no zonal shift %s", id)
}

// GetManagedResource implements sdk.ARCZonalShift for the fake's EKS
// clusters, identified by their ARN: the active zonal shifts, applied, and
// the applied weights of the zones (0 for the zone shifted away from).
// Autoshifts and practice runs are not simulated. Another identifier is
// answered as ARC answers a resource that is not registered for zonal shift.
func (f *AWS) GetManagedResource(_ context.Context, in *arczonalshift.GetManagedResourceInput, _ ...func(*arczonalshift.Options)) (*arczonalshift.GetManagedResourceOutput, error) {
	const api = "GetManagedResource"
	unlock, err := f.lock(api, in)
	defer unlock()
	if err != nil {
		return nil, err
	}
	arn := deref(in.ResourceIdentifier)
	var name string
	for n := range f.clusters {
		if f.clusterARN(n) == arn {
			name = n
		}
	}
	if name == "" {
		return nil, typed(svcARC, api, &arctypes.ResourceNotFoundException{Message: ptr(fmt.Sprintf("The resource %s is not a managed resource.", arn))})
	}
	now := f.now()
	out := &arczonalshift.GetManagedResourceOutput{
		Arn: ptr(arn), Name: ptr(name),
		AppliedWeights:       map[string]float32{},
		ZonalShifts:          []arctypes.ZonalShiftInResource{},
		ZonalAutoshiftStatus: arctypes.ZonalAutoshiftStatusDisabled,
	}
	for _, z := range f.zones {
		out.AppliedWeights[z.id] = 1
	}
	for _, z := range f.zonalShifts {
		if z.cluster != name || !z.active(now) {
			continue
		}
		out.AppliedWeights[z.awayFrom] = 0
		out.ZonalShifts = append(out.ZonalShifts, arctypes.ZonalShiftInResource{
			AppliedStatus: arctypes.AppliedStatusApplied, AwayFrom: ptr(z.awayFrom), Comment: ptr(z.comment),
			ExpiryTime: ptr(z.expiry), StartTime: ptr(z.start), ResourceIdentifier: ptr(arn), ZonalShiftId: ptr(z.id),
			ShiftType: arctypes.ShiftTypeZonalShift,
		})
	}
	return out, nil
}

// clusterARN is the ARN of the cluster with the given name, as DescribeCluster
// reports it.
func (f *AWS) clusterARN(name string) string {
	return fmt.Sprintf("arn:aws:eks:%s:%s:cluster/%s", f.opts.Region, f.opts.AccountID, name)
}
