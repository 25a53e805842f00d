package launch

import (
	"context"
	"fmt"
	"hash/fnv"

	"github.com/aws/aws-sdk-go-v2/service/ec2"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/sdk"
)

// PlacementGroup is a placement group as an EC2NodeClass's
// placementGroupSelector resolves it.
type PlacementGroup struct {
	ID, Name string
	// Strategy is cluster, partition or spread.
	Strategy string
	// Partitions is the partition count of a partition group, else 0.
	Partitions int32
	// State is EC2's: pending, available, deleting or deleted.
	State string
}

// DescribePlacementGroup resolves a selector by name or by ID with
// DescribePlacementGroups. It returns nil, nil when no group matches (EC2
// answers an unknown name or ID with InvalidPlacementGroup.Unknown), and an
// error only when the call itself fails.
func DescribePlacementGroup(ctx context.Context, client sdk.EC2, sel *awsv1.PlacementGroupSelector) (*PlacementGroup, error) {
	in := &ec2.DescribePlacementGroupsInput{}
	if sel.ID != "" {
		in.GroupIds = []string{sel.ID}
	} else {
		in.GroupNames = []string{sel.Name}
	}
	out, err := client.DescribePlacementGroups(ctx, in)
	switch {
	case ErrorCode(err) == "InvalidPlacementGroup.Unknown":
		return nil, nil
	case err != nil:
		return nil, err
	}
	for _, g := range out.PlacementGroups {
		if sel.ID != "" && deref(g.GroupId) != sel.ID || sel.ID == "" && deref(g.GroupName) != sel.Name {
			continue
		}
		return &PlacementGroup{ID: deref(g.GroupId), Name: deref(g.GroupName), Strategy: string(g.Strategy), Partitions: deref(g.PartitionCount), State: string(g.State)}, nil
	}
	return nil, nil
}

// Selector names the selector for messages: its name, or its ID.
func Selector(sel *awsv1.PlacementGroupSelector) string {
	if sel.Name != "" {
		return sel.Name
	}
	return sel.ID
}

// Partition returns the partition a NodeClaim's instance goes into in a
// partition placement group: the one its requirements pin (wanted, when
// positive), or else one picked from the NodeClaim's name, so that the
// NodeClaims of a pool spread over the partitions and a retried launch goes
// to the same one. Other strategies have no partitions: 0.
func (g *PlacementGroup) Partition(nodeClaim string, wanted int32) (int32, error) {
	if g.Strategy != "partition" || g.Partitions <= 0 {
		return 0, nil
	}
	if wanted > 0 {
		if wanted > g.Partitions {
			return 0, fmt.Errorf("placement group %s has %d partitions and partition %d was required", g.Name, g.Partitions, wanted)
		}
		return wanted, nil
	}
	h := fnv.New32a()
	h.Write([]byte(nodeClaim))
	return int32(h.Sum32()%uint32(g.Partitions)) + 1, nil
}
