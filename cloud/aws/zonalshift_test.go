package aws

import (
	"errors"
	"testing"
	"time"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/settings"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
)

// availableZones returns, per zone, whether any offering of any type there
// is available, and fails when a zone mixes available and unavailable
// offerings of one capacity type (a shift covers the whole zone).
func (e *env) availableZones() map[string]bool {
	e.t.Helper()
	np := &karpv1.NodePool{Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{NodeClassRef: &karpv1.NodeClassReference{Name: "default"}}}}}
	types, err := e.p.GetInstanceTypes(e.ctx, np)
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]bool{}
	for _, it := range types {
		for _, o := range it.Offerings {
			out[o.Zone] = out[o.Zone] || o.Available
		}
	}
	return out
}

// TestZonalShiftMakesZoneUnavailable: with --enable-zonal-shift, once the
// shifts are read, every offering in the zone traffic is shifted away from
// is unavailable, so nothing is launched there, until the shift ends.
func TestZonalShiftMakesZoneUnavailable(t *testing.T) {
	e := newEnvWithSettings(t, testTypes, nil, func(s *settings.Settings) { s.EnableZonalShift = true })
	zones := e.aws.Zones()
	shifted := zones[1]
	if _, err := e.aws.StartZonalShift("test", shifted, 30*time.Minute, "gray failure"); err != nil {
		t.Fatal(err)
	}
	if got := e.availableZones(); !got[shifted] {
		t.Fatalf("zone %s unavailable before the shifts were read: %v", shifted, got)
	}
	if err := e.p.ZonalShifts().Update(e.ctx); err != nil {
		t.Fatal(err)
	}
	got := e.availableZones()
	for _, z := range zones {
		if got[z] == (z == shifted) {
			t.Errorf("zone %s available=%v during a shift away from %s", z, got[z], shifted)
		}
	}

	// A NodeClaim that can only go to the shifted zone cannot launch; one
	// that may go anywhere lands elsewhere.
	_, err := e.p.Create(e.ctx, claim("pinned", req(wellknown.LabelTopologyZone, shifted)))
	var ice *cloud.InsufficientCapacityError
	if !errors.As(err, &ice) {
		t.Fatalf("launch pinned to the shifted zone: got %v, want an insufficient capacity error", err)
	}
	for i := range 4 {
		out := e.create(claim("free-"+string(rune('a'+i)), req(wellknown.LabelCapacityType, wellknown.CapacityTypeSpot, wellknown.CapacityTypeOnDemand)))
		if z := out.Labels[wellknown.LabelTopologyZone]; z == shifted {
			t.Errorf("NodeClaim %s launched into the shifted zone %s", out.Name, z)
		}
	}

	// The shift ends at its expiry, before the next read.
	e.clk.Step(30 * time.Minute)
	if got := e.availableZones(); !got[shifted] {
		t.Errorf("zone %s still unavailable after the shift expired", shifted)
	}
	e.create(claim("pinned-after", req(wellknown.LabelTopologyZone, shifted)))
}

// TestZonalShiftOffByDefault: without the setting, as in Karpenter, shifts
// are not read and change nothing.
func TestZonalShiftOffByDefault(t *testing.T) {
	e := newEnv(t)
	if e.p.ZonalShifts() != nil {
		t.Fatal("zonal shift tracker built without --enable-zonal-shift")
	}
	if _, err := e.aws.StartZonalShift("test", e.aws.Zones()[0], time.Hour, ""); err != nil {
		t.Fatal(err)
	}
	if err := e.p.ZonalShifts().Update(e.ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.availableZones(); !got[e.aws.Zones()[0]] {
		t.Errorf("zone shifted away from is unavailable without --enable-zonal-shift: %v", got)
	}
	if n := e.aws.Calls("GetManagedResource"); n != 0 {
		t.Errorf("GetManagedResource called %d times without --enable-zonal-shift", n)
	}
}

// TestZonalShiftNeedsARCClient: the setting without an ARC client is a
// configuration error, not a silent no-op.
func TestZonalShiftNeedsARCClient(t *testing.T) {
	e := newEnv(t)
	s := settings.Default()
	s.ClusterName = "test"
	s.EnableZonalShift = true
	clients := e.aws.Clients()
	clients.ARCZonalShift = nil
	_, err := New(Options{Clients: clients, Region: e.aws.Region(), Settings: s, Clock: e.clk, NodeClass: e.p.nodeClass})
	if err == nil {
		t.Fatal("New accepted --enable-zonal-shift without an ARC zonal shift client")
	}
}

// TestWithoutShiftedZones: every capacity type in a shifted zone, reserved
// included, becomes unavailable; other zones and the cached input are left
// as they were.
func TestWithoutShiftedZones(t *testing.T) {
	in := []*resolvedType{{packer: &packer.InstanceType{Name: "m6i.large", Offerings: []packer.Offering{
		{Zone: "z1", CapacityType: wellknown.CapacityTypeOnDemand, Available: true},
		{Zone: "z1", CapacityType: wellknown.CapacityTypeSpot, Available: true},
		{Zone: "z1", CapacityType: wellknown.CapacityTypeReserved, ReservationID: "cr-1", Available: true},
		{Zone: "z2", CapacityType: wellknown.CapacityTypeOnDemand, Available: true},
		{Zone: "z2", CapacityType: wellknown.CapacityTypeSpot, Available: false},
	}}}}
	out := withoutShiftedZones(in, map[string]bool{"z1": true})
	want := []bool{false, false, false, true, false}
	for i, o := range out[0].packer.Offerings {
		if o.Available != want[i] {
			t.Errorf("offering %d (%s %s): available %v, want %v", i, o.Zone, o.CapacityType, o.Available, want[i])
		}
	}
	for i, o := range in[0].packer.Offerings {
		if o.Available != (i != 4) {
			t.Errorf("input offering %d was changed", i)
		}
	}
	if got := withoutShiftedZones(in, nil); got[0] != in[0] {
		t.Error("no shifted zone: the types must be returned as they are")
	}
}
