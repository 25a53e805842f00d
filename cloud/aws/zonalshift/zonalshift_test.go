package zonalshift_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/arczonalshift"
	arctypes "github.com/aws/aws-sdk-go-v2/service/arczonalshift/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/zonalshift"
)

var epoch = time.Date(2025, 7, 1, 12, 0, 0, 0, time.UTC)

func TestApplied(t *testing.T) {
	shift := func(zone string, status arctypes.AppliedStatus, expiry time.Duration) arctypes.ZonalShiftInResource {
		return arctypes.ZonalShiftInResource{AwayFrom: aws.String(zone), AppliedStatus: status, ExpiryTime: aws.Time(epoch.Add(expiry))}
	}
	for _, tc := range []struct {
		name string
		out  *arczonalshift.GetManagedResourceOutput
		want map[string]time.Time
	}{
		{"no answer", nil, map[string]time.Time{}},
		{"no shifts", &arczonalshift.GetManagedResourceOutput{}, map[string]time.Time{}},
		{"applied", &arczonalshift.GetManagedResourceOutput{ZonalShifts: []arctypes.ZonalShiftInResource{
			shift("use1-az1", arctypes.AppliedStatusApplied, time.Hour),
		}}, map[string]time.Time{"use1-az1": epoch.Add(time.Hour)}},
		{"not applied is ignored", &arczonalshift.GetManagedResourceOutput{ZonalShifts: []arctypes.ZonalShiftInResource{
			shift("use1-az1", arctypes.AppliedStatusNotApplied, time.Hour),
			shift("use1-az2", arctypes.AppliedStatusApplied, time.Hour),
		}}, map[string]time.Time{"use1-az2": epoch.Add(time.Hour)}},
		{"the later expiry of one zone counts", &arczonalshift.GetManagedResourceOutput{ZonalShifts: []arctypes.ZonalShiftInResource{
			shift("use1-az1", arctypes.AppliedStatusApplied, 2*time.Hour),
			shift("use1-az1", arctypes.AppliedStatusApplied, time.Hour),
		}}, map[string]time.Time{"use1-az1": epoch.Add(2 * time.Hour)}},
		{"autoshifts are not read, as in Karpenter", &arczonalshift.GetManagedResourceOutput{Autoshifts: []arctypes.AutoshiftInResource{
			{AwayFrom: aws.String("use1-az1"), AppliedStatus: arctypes.AutoshiftAppliedStatusApplied, StartTime: aws.Time(epoch)},
		}}, map[string]time.Time{}},
	} {
		if got := zonalshift.Applied(tc.out); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestTracker(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(epoch)
	f := fake.New(fake.Options{Clock: clk, InstanceTypes: []string{"m5.large"}})
	if _, err := f.AddCluster(fake.Cluster{Name: "demo"}); err != nil {
		t.Fatal(err)
	}
	zoneA, _ := f.ZoneID(fake.DefaultRegion + "a")
	zoneB, _ := f.ZoneID(fake.DefaultRegion + "b")
	tr, err := zonalshift.New(f, f, "demo", clk)
	if err != nil {
		t.Fatal(err)
	}
	update := func() {
		t.Helper()
		if err := tr.Update(ctx); err != nil {
			t.Fatal(err)
		}
	}
	check := func(step string, want ...string) {
		t.Helper()
		if got := tr.ShiftedZoneIDs(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: shifted %v, want %v", step, got, want)
		}
		for _, z := range []string{zoneA, zoneB} {
			wantShifted := false
			for _, w := range want {
				wantShifted = wantShifted || w == z
			}
			if tr.Shifted(z) != wantShifted {
				t.Errorf("%s: Shifted(%s)=%v, want %v", step, z, !wantShifted, wantShifted)
			}
		}
	}

	update()
	check("no shift")

	id, err := f.StartZonalShift("demo", fake.DefaultRegion+"b", 20*time.Minute, "")
	if err != nil {
		t.Fatal(err)
	}
	check("shift started, not yet read")
	update()
	check("shift read", zoneB)

	// The cache holds between polls, and a failed poll keeps it.
	f.InjectError("GetManagedResource", fake.APIError("InternalServerException", "boom"), 1)
	if err := tr.Update(ctx); err == nil {
		t.Fatal("Update hid an ARC error")
	}
	check("failed poll", zoneB)

	// A shift ends at its expiry even before the next poll.
	clk.Step(20 * time.Minute)
	check("expired")

	update()
	id, err = f.StartZonalShift("demo", zoneA, time.Hour, "")
	if err != nil {
		t.Fatal(err)
	}
	update()
	check("second shift", zoneA)
	if err := f.CancelZonalShift(id); err != nil {
		t.Fatal(err)
	}
	update()
	check("cancelled")
	if n := f.Calls("DescribeCluster"); n != 1 {
		t.Errorf("DescribeCluster called %d times, want once (the ARN is kept)", n)
	}

	var off *zonalshift.Tracker
	if off.Shifted(zoneA) || off.ShiftedZoneIDs() != nil || off.Update(ctx) != nil {
		t.Error("a nil Tracker must report nothing shifted and do nothing")
	}
}

func TestNewNeedsClientsAndCluster(t *testing.T) {
	f := fake.New(fake.Options{InstanceTypes: []string{"m5.large"}})
	for name, build := range map[string]func() error{
		"no ARC client": func() error { _, err := zonalshift.New(nil, f, "demo", nil); return err },
		"no EKS client": func() error { _, err := zonalshift.New(f, nil, "demo", nil); return err },
		"no cluster":    func() error { _, err := zonalshift.New(f, f, "", nil); return err },
	} {
		if build() == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
}
