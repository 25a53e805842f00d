package fake_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/arczonalshift"
	arctypes "github.com/aws/aws-sdk-go-v2/service/arczonalshift/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
)

func TestZonalShifts(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2025, 7, 1, 12, 0, 0, 0, time.UTC))
	f := fake.New(fake.Options{Clock: clk, InstanceTypes: []string{"m5.large"}})
	if _, err := f.AddCluster(fake.Cluster{Name: "demo"}); err != nil {
		t.Fatal(err)
	}
	arn := "arn:aws:eks:" + fake.DefaultRegion + ":" + fake.DefaultAccountID + ":cluster/demo"
	shifted := func() []string {
		t.Helper()
		out, err := f.GetManagedResource(ctx, &arczonalshift.GetManagedResourceInput{ResourceIdentifier: aws.String(arn)})
		if err != nil {
			t.Fatal(err)
		}
		var zones []string
		for _, z := range out.ZonalShifts {
			if z.AppliedStatus != arctypes.AppliedStatusApplied || aws.ToString(z.ResourceIdentifier) != arn {
				t.Errorf("shift %+v is not applied to %s", z, arn)
			}
			if out.AppliedWeights[aws.ToString(z.AwayFrom)] != 0 {
				t.Errorf("zone %s shifted away from keeps weight %v", aws.ToString(z.AwayFrom), out.AppliedWeights)
			}
			zones = append(zones, aws.ToString(z.AwayFrom))
		}
		return zones
	}
	zoneB, _ := f.ZoneID(fake.DefaultRegion + "b")

	if got := shifted(); len(got) != 0 {
		t.Fatalf("shifts before any started: %v", got)
	}
	id, err := f.StartZonalShift("demo", fake.DefaultRegion+"b", 30*time.Minute, "gray failure")
	if err != nil {
		t.Fatal(err)
	}
	if got := shifted(); len(got) != 1 || got[0] != zoneB {
		t.Fatalf("shifts %v, want one away from %s (the zone ID, not the name)", got, zoneB)
	}

	// Invalid starts, each with the reason.
	for name, start := range map[string]func() error{
		"second active shift": func() error { _, err := f.StartZonalShift("demo", zoneB, time.Hour, ""); return err },
		"unknown cluster":     func() error { _, err := f.StartZonalShift("other", zoneB, time.Hour, ""); return err },
		"unknown zone":        func() error { _, err := f.StartZonalShift("demo", "mars-1a", time.Hour, ""); return err },
		"too long":            func() error { _, err := f.StartZonalShift("demo", zoneB, 73*time.Hour, ""); return err },
	} {
		if start() == nil {
			t.Errorf("%s: StartZonalShift succeeded", name)
		}
	}

	clk.Step(30 * time.Minute)
	if got := shifted(); len(got) != 0 {
		t.Fatalf("shifts after expiry: %v", got)
	}
	if err := f.CancelZonalShift(id); err == nil {
		t.Error("cancelling an expired shift succeeded")
	}

	id, err = f.StartZonalShift("demo", zoneB, time.Hour, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.CancelZonalShift(id); err != nil {
		t.Fatal(err)
	}
	if got := shifted(); len(got) != 0 {
		t.Fatalf("shifts after cancel: %v", got)
	}

	_, err = f.GetManagedResource(ctx, &arczonalshift.GetManagedResourceInput{ResourceIdentifier: aws.String(arn + "-other")})
	var nf *arctypes.ResourceNotFoundException
	if !errors.As(err, &nf) {
		t.Errorf("unregistered resource: got %v, want ResourceNotFoundException", err)
	}
	if f.Calls("GetManagedResource") != 5 {
		t.Errorf("GetManagedResource calls %d, want 5", f.Calls("GetManagedResource"))
	}
}
