package fake_test

import (
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
)

// allSpotPrices pages through DescribeSpotPriceHistory.
func allSpotPrices(t *testing.T, f *fake.AWS, in *ec2.DescribeSpotPriceHistoryInput) []ec2types.SpotPrice {
	t.Helper()
	var out []ec2types.SpotPrice
	pg := ec2.NewDescribeSpotPriceHistoryPaginator(f, in)
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page.SpotPriceHistory...)
	}
	return out
}

// allInstanceTypes pages through DescribeInstanceTypes.
func allInstanceTypes(t *testing.T, f *fake.AWS) []ec2types.InstanceTypeInfo {
	t.Helper()
	var out []ec2types.InstanceTypeInfo
	pg := ec2.NewDescribeInstanceTypesPaginator(f, &ec2.DescribeInstanceTypesInput{})
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page.InstanceTypes...)
	}
	return out
}

func allOfferings(t *testing.T, f *fake.AWS, in *ec2.DescribeInstanceTypeOfferingsInput) []ec2types.InstanceTypeOffering {
	t.Helper()
	var out []ec2types.InstanceTypeOffering
	pg := ec2.NewDescribeInstanceTypeOfferingsPaginator(f, in)
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page.InstanceTypeOfferings...)
	}
	return out
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
