package fake

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

func TestDescribePlacementGroups(t *testing.T) {
	f := New(Options{Seed: 1})
	ctx := context.Background()
	part, err := f.AddPlacementGroup(PlacementGroup{Name: "training", Strategy: "partition"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.AddPlacementGroup(PlacementGroup{ID: "pg-0000000000000000a", Name: "tight", Strategy: "cluster", PartitionCount: 5}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.AddPlacementGroup(PlacementGroup{Name: "training", Strategy: "spread"}); err == nil {
		t.Error("a second group named training was accepted")
	}
	if _, err := f.AddPlacementGroup(PlacementGroup{Name: "odd", Strategy: "ring"}); err == nil {
		t.Error("an unknown strategy was accepted")
	}
	for _, tc := range []struct {
		name     string
		in       *ec2.DescribePlacementGroupsInput
		wantIDs  []string
		wantCode string
	}{
		{name: "all", in: nil, wantIDs: []string{"pg-0000000000000000a", part}},
		{name: "by name", in: &ec2.DescribePlacementGroupsInput{GroupNames: []string{"training"}}, wantIDs: []string{part}},
		{name: "by id", in: &ec2.DescribePlacementGroupsInput{GroupIds: []string{"pg-0000000000000000a"}}, wantIDs: []string{"pg-0000000000000000a"}},
		{name: "by strategy filter", in: &ec2.DescribePlacementGroupsInput{Filters: []ec2types.Filter{{Name: ptr("strategy"), Values: []string{"cluster"}}}}, wantIDs: []string{"pg-0000000000000000a"}},
		{name: "unknown name", in: &ec2.DescribePlacementGroupsInput{GroupNames: []string{"nope"}}, wantCode: "InvalidPlacementGroup.Unknown"},
		{name: "unknown id", in: &ec2.DescribePlacementGroupsInput{GroupIds: []string{"pg-1"}}, wantCode: "InvalidPlacementGroup.Unknown"},
		{name: "unknown filter", in: &ec2.DescribePlacementGroupsInput{Filters: []ec2types.Filter{{Name: ptr("spread-level"), Values: []string{"rack"}}}}, wantCode: "InvalidParameterValue"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := f.DescribePlacementGroups(ctx, tc.in)
			if tc.wantCode != "" {
				if code := errorCode(err); err == nil || code != tc.wantCode {
					t.Fatalf("err %v (%s), want %s", err, code, tc.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, g := range out.PlacementGroups {
				ids = append(ids, deref(g.GroupId))
			}
			if len(ids) != len(tc.wantIDs) {
				t.Fatalf("groups %v, want %v", ids, tc.wantIDs)
			}
			for i := range ids {
				if ids[i] != tc.wantIDs[i] {
					t.Errorf("groups %v, want %v", ids, tc.wantIDs)
				}
			}
		})
	}
	out, _ := f.DescribePlacementGroups(ctx, &ec2.DescribePlacementGroupsInput{GroupNames: []string{"training"}})
	if g := out.PlacementGroups[0]; deref(g.PartitionCount) != 2 || g.State != "available" || g.Strategy != "partition" {
		t.Errorf("training = %+v, want 2 partitions (the default), available", g)
	}
	out, _ = f.DescribePlacementGroups(ctx, &ec2.DescribePlacementGroupsInput{GroupNames: []string{"tight"}})
	if g := out.PlacementGroups[0]; g.PartitionCount != nil {
		t.Errorf("a cluster group reports %d partitions", *g.PartitionCount)
	}
}
