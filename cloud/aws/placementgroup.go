package aws

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/launch"
)

// placementGroupTTL is how long a resolved placement group is trusted before
// it is described again.
const placementGroupTTL = time.Minute

// placementGroups remembers, per node class, the placement group its
// selector resolved to. The zero value is ready to use.
type placementGroups struct {
	mu      sync.Mutex
	byClass map[string]placementGroupEntry
}

type placementGroupEntry struct {
	sel awsv1.PlacementGroupSelector
	pg  *launch.PlacementGroup // nil: none matched
	at  time.Time
}

// placementGroup returns the placement group nc's selector resolves to, nil
// when nc has no selector or nothing matches, from the cache while it is
// fresh and the selector unchanged.
func (p *Provider) placementGroup(ctx context.Context, nc *awsv1.EC2NodeClass) (*launch.PlacementGroup, error) {
	sel := nc.Spec.PlacementGroupSelector
	if sel == nil {
		return nil, nil
	}
	now := p.clk.Now()
	c := &p.pgs
	c.mu.Lock()
	e, ok := c.byClass[nc.Name]
	c.mu.Unlock()
	if ok && e.sel == *sel && now.Sub(e.at) < placementGroupTTL {
		return e.pg, nil
	}
	pg, err := launch.DescribePlacementGroup(ctx, p.ec2, sel)
	if err != nil {
		return nil, fmt.Errorf("describing placement group %q of EC2NodeClass %q: %w", launch.Selector(sel), nc.Name, err)
	}
	c.mu.Lock()
	if c.byClass == nil {
		c.byClass = map[string]placementGroupEntry{}
	}
	c.byClass[nc.Name] = placementGroupEntry{sel: *sel, pg: pg, at: now}
	c.mu.Unlock()
	return pg, nil
}

// placementStrategy returns the strategy of nc's placement group as last
// resolved, for the instance-type compatibility check; "" without one.
func (p *Provider) placementStrategy(nc *awsv1.EC2NodeClass) string {
	if nc.Spec.PlacementGroupSelector == nil {
		return ""
	}
	p.pgs.mu.Lock()
	defer p.pgs.mu.Unlock()
	if e, ok := p.pgs.byClass[nc.Name]; ok && e.sel == *nc.Spec.PlacementGroupSelector && e.pg != nil {
		return e.pg.Strategy
	}
	return ""
}

// launchPlacement resolves where a NodeClaim's instance goes: nc's placement
// group and, in a partition group, the partition (the one the NodeClaim's
// requirements pin with karpenter.k8s.aws/placement-group-partition In [n],
// else one picked from its name).
func (p *Provider) launchPlacement(ctx context.Context, nc *awsv1.EC2NodeClass, nodeClaim *karpv1.NodeClaim) (launch.Placement, error) {
	pg, err := p.placementGroup(ctx, nc)
	switch {
	case err != nil:
		return launch.Placement{}, err
	case pg == nil && nc.Spec.PlacementGroupSelector != nil:
		return launch.Placement{}, fmt.Errorf("placement group %q of EC2NodeClass %q was not found: create it, or fix spec.placementGroupSelector",
			launch.Selector(nc.Spec.PlacementGroupSelector), nc.Name)
	case pg == nil:
		return launch.Placement{}, nil
	}
	var wanted int32
	for _, r := range nodeClaim.Spec.Requirements {
		if r.Key == wellknown.LabelPlacementGroupPartition && r.Operator == "In" && len(r.Values) == 1 {
			if n, err := strconv.ParseInt(r.Values[0], 10, 32); err == nil {
				wanted = int32(n)
			}
		}
	}
	partition, err := pg.Partition(nodeClaim.Name, wanted)
	if err != nil {
		return launch.Placement{}, fmt.Errorf("NodeClaim %q: %w", nodeClaim.Name, err)
	}
	return launch.Placement{GroupID: pg.ID, Partition: partition}, nil
}

// placementLabels are the labels a launch into a placement group adds.
func placementLabels(pl launch.Placement) map[string]string {
	if pl.GroupID == "" {
		return nil
	}
	out := map[string]string{wellknown.LabelPlacementGroupID: pl.GroupID}
	if pl.Partition > 0 {
		out[wellknown.LabelPlacementGroupPartition] = strconv.Itoa(int(pl.Partition))
	}
	return out
}
