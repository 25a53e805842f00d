// Package zonalshift tracks the Application Recovery Controller (ARC) zonal
// shifts of the EKS cluster, for --enable-zonal-shift.
//
// When traffic for the cluster is shifted away from an Availability Zone
// (by hand, or by ARC's practice runs), Karpenter stops launching capacity
// there: every offering in the zone is unavailable until the shift expires
// or is cancelled. The Tracker is the cache behind that. A poller calls
// Update every DefaultInterval; the AWS provider asks Shifted while it
// builds offerings. Between polls, and when a poll fails, the last answer
// stands, but a shift ends on its own at its expiry time, read from the
// injected clock.
//
// Shifts are keyed by zone ID (use1-az1), as ARC names the zone it shifts
// away from; zone names differ between accounts, zone IDs do not. Callers
// map zone names to IDs with the subnets they discovered.
package zonalshift

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/arczonalshift"
	arctypes "github.com/aws/aws-sdk-go-v2/service/arczonalshift/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"k8s.io/utils/clock"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/sdk"
)

// DefaultInterval is how often the shifts are read: Karpenter's zonal shift
// controller requeues every 30 seconds.
const DefaultInterval = 30 * time.Second

// Tracker caches the zones the cluster's traffic is shifted away from. A nil
// Tracker (zonal shift handling off) reports no zone shifted. It is safe for
// concurrent use.
type Tracker struct {
	arc     sdk.ARCZonalShift
	eks     sdk.EKS
	cluster string
	clk     clock.PassiveClock

	mu  sync.RWMutex
	arn string
	// expiry is, per zone ID shifted away from, when the shift ends.
	expiry map[string]time.Time
}

// New returns a Tracker of the zonal shifts of the named EKS cluster. Its
// ARN, the identifier ARC knows the cluster by, is looked up with
// DescribeCluster on the first Update.
func New(arc sdk.ARCZonalShift, eks sdk.EKS, clusterName string, clk clock.PassiveClock) (*Tracker, error) {
	switch {
	case arc == nil:
		return nil, errors.New("zonal shift: no ARC zonal shift client")
	case eks == nil:
		return nil, errors.New("zonal shift: no EKS client to find the cluster's ARN with")
	case clusterName == "":
		return nil, errors.New("zonal shift: no cluster name: set --cluster-name (CLUSTER_NAME)")
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Tracker{arc: arc, eks: eks, cluster: clusterName, clk: clk, expiry: map[string]time.Time{}}, nil
}

// Update reads the cluster's zonal shifts from ARC and replaces the cached
// ones. On error the cache is kept as it was.
func (t *Tracker) Update(ctx context.Context) error {
	if t == nil {
		return nil
	}
	arn, err := t.clusterARN(ctx)
	if err != nil {
		return err
	}
	out, err := t.arc.GetManagedResource(ctx, &arczonalshift.GetManagedResourceInput{ResourceIdentifier: &arn})
	if err != nil {
		return fmt.Errorf("reading the zonal shifts of EKS cluster %q (arc-zonal-shift:GetManagedResource on %s; the cluster must have zonal shift enabled and the controller's policy the AllowZonalShiftStatusReadOnly statement): %w", t.cluster, arn, err)
	}
	shifts := Applied(out)
	t.mu.Lock()
	t.expiry = shifts
	t.mu.Unlock()
	return nil
}

// clusterARN returns the cluster's ARN, described once.
func (t *Tracker) clusterARN(ctx context.Context) (string, error) {
	t.mu.RLock()
	arn := t.arn
	t.mu.RUnlock()
	if arn != "" {
		return arn, nil
	}
	out, err := t.eks.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: &t.cluster})
	if err != nil {
		return "", fmt.Errorf("finding the ARN of EKS cluster %q for its zonal shifts: %w", t.cluster, err)
	}
	if out.Cluster == nil || out.Cluster.Arn == nil || *out.Cluster.Arn == "" {
		return "", fmt.Errorf("finding the ARN of EKS cluster %q for its zonal shifts: DescribeCluster returned no ARN", t.cluster)
	}
	t.mu.Lock()
	t.arn = *out.Cluster.Arn
	t.mu.Unlock()
	return *out.Cluster.Arn, nil
}

// Applied returns, per zone ID, when the zonal shift away from it expires,
// for the shifts of a GetManagedResource answer that are in effect: those
// ARC reports as APPLIED. Karpenter reads the zonalShifts list (which holds
// customer shifts and practice runs) and not the autoshifts; so does this.
// Of two applied shifts away from one zone, the later expiry counts.
func Applied(out *arczonalshift.GetManagedResourceOutput) map[string]time.Time {
	shifts := map[string]time.Time{}
	if out == nil {
		return shifts
	}
	for _, z := range out.ZonalShifts {
		if z.AppliedStatus != arctypes.AppliedStatusApplied || z.AwayFrom == nil || z.ExpiryTime == nil {
			continue
		}
		if cur, ok := shifts[*z.AwayFrom]; !ok || z.ExpiryTime.After(cur) {
			shifts[*z.AwayFrom] = *z.ExpiryTime
		}
	}
	return shifts
}

// Shifted reports whether traffic is shifted away from the zone with the
// given ID now: an applied shift was read for it and has not expired.
func (t *Tracker) Shifted(zoneID string) bool {
	if t == nil || zoneID == "" {
		return false
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	exp, ok := t.expiry[zoneID]
	return ok && t.clk.Now().Before(exp)
}

// ShiftedZoneIDs returns the IDs of the zones shifted away from now, sorted.
func (t *Tracker) ShiftedZoneIDs() []string {
	if t == nil {
		return nil
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	now := t.clk.Now()
	var out []string
	for id, exp := range t.expiry {
		if now.Before(exp) {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return slices.Clip(out)
}
