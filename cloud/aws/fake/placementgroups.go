package fake

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// PlacementGroup is an EC2 placement group of the in-memory account.
type PlacementGroup struct {
	// ID is generated (pg-...) when empty.
	ID   string
	Name string
	// Strategy is cluster, partition or spread.
	Strategy string
	// PartitionCount is the number of partitions of a partition group
	// (default 2).
	PartitionCount int32
	// State is available unless set (pending, deleting, deleted).
	State string
	Tags  map[string]string
}

// AddPlacementGroup adds a placement group and returns its ID.
func (f *AWS) AddPlacementGroup(g PlacementGroup) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch g.Strategy {
	case "cluster", "spread":
		g.PartitionCount = 0
	case "partition":
		if g.PartitionCount == 0 {
			g.PartitionCount = 2
		}
	default:
		return "", fmt.Errorf("placement group %q: unknown strategy %q; use cluster, partition or spread", g.Name, g.Strategy)
	}
	if g.ID == "" {
		g.ID = "pg-" + f.hex(17)
	}
	if g.State == "" {
		g.State = "available"
	}
	if f.placementGroups == nil {
		f.placementGroups = map[string]*PlacementGroup{}
	}
	for _, other := range f.placementGroups {
		if other.Name == g.Name {
			return "", fmt.Errorf("placement group %q exists already", g.Name)
		}
	}
	g.Tags = copyMap(g.Tags)
	f.placementGroups[g.ID] = &g
	return g.ID, nil
}

// DescribePlacementGroups implements sdk.EC2. As EC2 does, a name or ID that
// does not exist fails the call (InvalidPlacementGroup.Unknown).
func (f *AWS) DescribePlacementGroups(_ context.Context, in *ec2.DescribePlacementGroupsInput, _ ...func(*ec2.Options)) (*ec2.DescribePlacementGroupsOutput, error) {
	const api = "DescribePlacementGroups"
	unlock, err := f.lock(api, in)
	defer unlock()
	if err != nil {
		return nil, err
	}
	if in == nil {
		in = &ec2.DescribePlacementGroupsInput{}
	}
	if err := f.dryRun(api, in.DryRun); err != nil {
		return nil, err
	}
	if err := checkFilters(api, in.Filters, "group-name", "group-id", "state", "strategy"); err != nil {
		return nil, err
	}
	for _, id := range in.GroupIds {
		if f.placementGroups[id] == nil {
			return nil, ec2Error(api, "InvalidPlacementGroup.Unknown", "The Placement Group '%s' is unknown.", id)
		}
	}
	for _, name := range in.GroupNames {
		if f.placementGroupByName(name) == nil {
			return nil, ec2Error(api, "InvalidPlacementGroup.Unknown", "The Placement Group '%s' is unknown.", name)
		}
	}
	out := &ec2.DescribePlacementGroupsOutput{}
	for _, id := range sortedKeys(f.placementGroups) {
		g := f.placementGroups[id]
		if len(in.GroupIds) > 0 && !contains(in.GroupIds, id) || len(in.GroupNames) > 0 && !contains(in.GroupNames, g.Name) {
			continue
		}
		attr := func(n string) []string {
			switch n {
			case "group-name":
				return one(g.Name)
			case "group-id":
				return one(g.ID)
			case "state":
				return one(g.State)
			case "strategy":
				return one(g.Strategy)
			}
			return nil
		}
		if !matchFilters(in.Filters, g.Tags, attr) {
			continue
		}
		pg := ec2types.PlacementGroup{
			GroupId: ptr(g.ID), GroupName: ptr(g.Name), Strategy: ec2types.PlacementStrategy(g.Strategy),
			State: ec2types.PlacementGroupState(g.State), Tags: mapToTags(g.Tags),
			GroupArn: ptr(fmt.Sprintf("arn:aws:ec2:%s:%s:placement-group/%s", f.opts.Region, f.opts.AccountID, g.Name)),
		}
		if g.PartitionCount > 0 {
			pg.PartitionCount = ptr(g.PartitionCount)
		}
		out.PlacementGroups = append(out.PlacementGroups, pg)
	}
	return out, nil
}

func (f *AWS) placementGroupByName(name string) *PlacementGroup {
	for _, id := range sortedKeys(f.placementGroups) {
		if g := f.placementGroups[id]; g.Name == name {
			return g
		}
	}
	return nil
}

// place puts a new instance into its launch template's placement group. In
// a partition group without a pinned partition EC2 picks one; here it is the
// next in turn, by the instance's sequence number, so that runs repeat.
func (f *AWS) place(inst *instance, p *ec2types.LaunchTemplatePlacementRequest) {
	if p == nil {
		return
	}
	g := f.placementGroups[deref(p.GroupId)]
	if g == nil && p.GroupName != nil {
		g = f.placementGroupByName(*p.GroupName)
	}
	if g == nil {
		return
	}
	inst.placementGroupID = g.ID
	if g.Strategy == "partition" {
		inst.partition = deref(p.PartitionNumber)
		if inst.partition == 0 {
			inst.partition = int32(inst.seq%int64(g.PartitionCount)) + 1
		}
	}
}

// instancePlacement is the Placement DescribeInstances reports.
func (f *AWS) instancePlacement(inst *instance) *ec2types.Placement {
	p := &ec2types.Placement{AvailabilityZone: ptr(inst.zone), AvailabilityZoneId: ptr(f.zoneID(inst.zone)), Tenancy: ec2types.TenancyDefault}
	if g := f.placementGroups[inst.placementGroupID]; g != nil {
		p.GroupId, p.GroupName = ptr(g.ID), ptr(g.Name)
		if inst.partition > 0 {
			p.PartitionNumber = ptr(inst.partition)
		}
	}
	return p
}
