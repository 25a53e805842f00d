package fake_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
)

// pager is what the SDK's paginators have in common.
type pager[O, Opt any] interface {
	HasMorePages() bool
	NextPage(context.Context, ...func(Opt)) (O, error)
}

// pageAll reads every page of p and returns what items finds on each, in
// order.
func pageAll[O, T any](t *testing.T, p pager[O, *ec2.Options], items func(O) []T) []T {
	t.Helper()
	var out []T
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, items(page)...)
	}
	return out
}

func allSpotPrices(t *testing.T, f *fake.AWS, in *ec2.DescribeSpotPriceHistoryInput) []ec2types.SpotPrice {
	return pageAll(t, ec2.NewDescribeSpotPriceHistoryPaginator(f, in),
		func(o *ec2.DescribeSpotPriceHistoryOutput) []ec2types.SpotPrice { return o.SpotPriceHistory })
}

func allInstanceTypes(t *testing.T, f *fake.AWS) []ec2types.InstanceTypeInfo {
	return pageAll(t, ec2.NewDescribeInstanceTypesPaginator(f, &ec2.DescribeInstanceTypesInput{}),
		func(o *ec2.DescribeInstanceTypesOutput) []ec2types.InstanceTypeInfo { return o.InstanceTypes })
}

func allOfferings(t *testing.T, f *fake.AWS, in *ec2.DescribeInstanceTypeOfferingsInput) []ec2types.InstanceTypeOffering {
	return pageAll(t, ec2.NewDescribeInstanceTypeOfferingsPaginator(f, in),
		func(o *ec2.DescribeInstanceTypeOfferingsOutput) []ec2types.InstanceTypeOffering {
			return o.InstanceTypeOfferings
		})
}

// Paginated catalog reads are cut from one listing; whatever the page size,
// the pages add up to the same result, later reads see changes to prices
// and offerings, and no read hands out values another read shares.
func TestPaginatedListingsFollowChanges(t *testing.T) {
	f := fake.New(fake.Options{Seed: 3})
	spot := func(size int32) []ec2types.SpotPrice {
		in := &ec2.DescribeSpotPriceHistoryInput{ProductDescriptions: []string{"Linux/UNIX"}}
		if size > 0 {
			in.MaxResults = aws.Int32(size)
		}
		return allSpotPrices(t, f, in)
	}
	whole := spot(0)
	if len(whole) < 1000 {
		t.Fatalf("%d spot prices; want one per pool of the catalog", len(whole))
	}
	if small := spot(300); !reflect.DeepEqual(small, whole) {
		t.Error("pages of 300 differ from pages of 1000")
	}
	first := whole[0]
	*whole[0].SpotPrice = "999" // a caller changing what it was given
	zone := aws.ToString(first.AvailabilityZone)
	name := string(first.InstanceType)
	again := spot(0)
	if aws.ToString(again[0].SpotPrice) == "999" {
		t.Fatal("a read shares values with an earlier one")
	}
	f.SetSpotPrice(name, zone, 0.0421)
	if got := aws.ToString(spot(0)[0].SpotPrice); got != "0.042100" {
		t.Errorf("after SetSpotPrice: %s, want 0.042100", got)
	}

	in := &ec2.DescribeInstanceTypeOfferingsInput{LocationType: ec2types.LocationTypeAvailabilityZone}
	before := allOfferings(t, f, in)
	f.SetOffered(name, zone, false)
	after := allOfferings(t, f, in)
	if len(after) != len(before)-1 {
		t.Errorf("after SetOffered(false): %d offerings, want %d", len(after), len(before)-1)
	}
	for _, o := range after {
		if string(o.InstanceType) == name && aws.ToString(o.Location) == zone {
			t.Error("removed offering still listed")
		}
	}
	f.SetOffered(name, zone, true)
	if got := allOfferings(t, f, in); !reflect.DeepEqual(got, before) {
		t.Error("offering not listed again after SetOffered(true)")
	}
}
