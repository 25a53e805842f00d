package aws

import (
	"context"
	"math"
	"testing"
	"time"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/drift"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/settings"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
)

// reserve adds an on-demand capacity reservation of total m6i.large instances
// in the first zone to the account and selects it in the node class's status,
// as the node class controller would.
func (e *env) reserve(total int) awsv1.CapacityReservation {
	e.t.Helper()
	zone := e.aws.Zones()[0]
	id, err := e.aws.AddCapacityReservation(fake.CapacityReservation{InstanceType: "m6i.large", Zone: zone, Total: total})
	if err != nil {
		e.t.Fatal(err)
	}
	cr := awsv1.CapacityReservation{
		ID: id, AvailabilityZone: zone, InstanceType: "m6i.large", OwnerID: fake.DefaultAccountID, InstanceMatchCriteria: "targeted",
		ReservationType: awsv1.CapacityReservationTypeDefault, State: awsv1.CapacityReservationStateActive,
	}
	e.nc.Status.CapacityReservations = append(e.nc.Status.CapacityReservations, cr)
	return cr
}

func (e *env) reservedOfferings(name string) []packer.Offering {
	e.t.Helper()
	np := &karpv1.NodePool{Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{NodeClassRef: &karpv1.NodeClassReference{Name: "default"}}}}}
	types, err := e.p.GetInstanceTypes(e.ctx, np)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []packer.Offering
	for _, it := range types {
		for _, o := range it.Offerings {
			if o.CapacityType == wellknown.CapacityTypeReserved {
				if it.Name != name {
					e.t.Errorf("%s has a reserved offering %+v; only %s is reserved", it.Name, o, name)
				}
				out = append(out, o)
			}
		}
	}
	return out
}

func TestReservedOfferings(t *testing.T) {
	e := newEnv(t)
	cr := e.reserve(2)
	offs := e.reservedOfferings("m6i.large")
	od, _ := e.aws.OnDemandPrice("m6i.large")
	if len(offs) != 1 {
		t.Fatalf("reserved offerings %+v, want one", offs)
	}
	o := offs[0]
	if o.Zone != cr.AvailabilityZone || o.ReservationID != cr.ID || !o.Available || o.ReservationCapacity != 2 ||
		math.Abs(o.PricePerHour-od/ReservedPriceDivisor) > 1e-15 {
		t.Errorf("reserved offering %+v, want %s in %s, 2 left, at %v", o, cr.ID, cr.AvailabilityZone, od/ReservedPriceDivisor)
	}

	// Expiring capacity blocks and reservations in zones the node class
	// does not launch in are not available.
	for _, tt := range []struct {
		name string
		mod  func(*awsv1.EC2NodeClass)
	}{
		{"expiring", func(nc *awsv1.EC2NodeClass) {
			nc.Status.CapacityReservations[0].State = awsv1.CapacityReservationStateExpiring
		}},
		{"zone without subnet", func(nc *awsv1.EC2NodeClass) {
			var keep []awsv1.Subnet
			for _, s := range nc.Status.Subnets {
				if s.Zone != cr.AvailabilityZone {
					keep = append(keep, s)
				}
			}
			nc.Status.Subnets = keep
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			saved := e.nc.DeepCopy()
			defer func() { e.nc = saved }()
			tt.mod(e.nc)
			if offs := e.reservedOfferings("m6i.large"); len(offs) != 1 || offs[0].Available {
				t.Errorf("offerings %+v, want one unavailable", offs)
			}
		})
	}
}

func TestReservedOfferingsGateOff(t *testing.T) {
	e := newEnv(t)
	e.reserve(2)
	e.p.disableReserved = true
	if offs := e.reservedOfferings("m6i.large"); len(offs) != 0 {
		t.Errorf("ReservedCapacity off: reserved offerings %+v", offs)
	}
	if n := e.aws.Calls("DescribeCapacityReservations"); n != 0 {
		t.Errorf("ReservedCapacity off: DescribeCapacityReservations called %d times", n)
	}
	// A NodeClaim that only allows reserved capacity cannot launch.
	_, err := e.p.Create(e.ctx, claim("a", req(wellknown.LabelCapacityType, wellknown.CapacityTypeReserved)))
	if !cloud.IsInsufficientCapacityError(err) {
		t.Errorf("Create of a reserved-only NodeClaim with the gate off = %v, want insufficient capacity", err)
	}
}

// anyCapacity allows every capacity type and pins m6i.large, the reserved
// type, so that the launches below compete for the reservation.
var anyCapacity = []karpv1.NodeSelectorRequirementWithMinValues{
	req(wellknown.LabelCapacityType, wellknown.CapacityTypeReserved, wellknown.CapacityTypeSpot, wellknown.CapacityTypeOnDemand),
	req(wellknown.LabelInstanceType, "m6i.large"),
}

func TestCreateReservedThenFallsBack(t *testing.T) {
	e := newEnv(t)
	cr := e.reserve(2)
	var reserved []*karpv1.NodeClaim
	for _, name := range []string{"a", "b"} {
		out := e.create(claim(name, anyCapacity...))
		if out.Labels[wellknown.LabelCapacityType] != wellknown.CapacityTypeReserved ||
			out.Labels[wellknown.LabelCapacityReservationID] != cr.ID ||
			out.Labels[wellknown.LabelCapacityReservationType] != "default" ||
			out.Labels[wellknown.LabelCapacityReservationInterruptible] != "false" ||
			out.Labels[wellknown.LabelTopologyZone] != cr.AvailabilityZone {
			t.Fatalf("%s: labels %v, want reserved in %s", name, out.Labels, cr.ID)
		}
		info, _ := e.aws.Instance(instanceID(t, out))
		if info.CapacityReservationID != cr.ID {
			t.Errorf("%s: instance in reservation %q, want %s", name, info.CapacityReservationID, cr.ID)
		}
		reserved = append(reserved, out)
	}
	// The launch template targets the reservation, and only it.
	data, ok := e.aws.LaunchTemplateData(info(t, e, reserved[0]).LaunchTemplateName)
	if !ok {
		t.Fatal("launch template not found")
	}
	if s := data.CapacityReservationSpecification; s == nil || s.CapacityReservationPreference != ec2types.CapacityReservationPreferenceCapacityReservationsOnly ||
		s.CapacityReservationTarget == nil || *s.CapacityReservationTarget.CapacityReservationId != cr.ID {
		t.Errorf("launch template reservation %+v, want capacity-reservations-only targeting %s", s, cr.ID)
	}
	// The reservation is full: the next launch is spot, without a failed
	// call first (the provider counted its own launches).
	fleets := e.aws.Calls("CreateFleet")
	c := e.create(claim("c", anyCapacity...))
	if c.Labels[wellknown.LabelCapacityType] != wellknown.CapacityTypeSpot || c.Labels[wellknown.LabelCapacityReservationID] != "" {
		t.Errorf("third launch: labels %v, want spot outside the reservation", c.Labels)
	}
	if n := e.aws.Calls("CreateFleet") - fleets; n != 1 {
		t.Errorf("third launch made %d CreateFleet calls, want 1", n)
	}
	if s := info(t, e, c).LaunchTemplateName; s == info(t, e, reserved[0]).LaunchTemplateName {
		t.Error("the spot launch used the reserved launch template")
	}

	// Get and List report the reserved instances as reserved.
	got, err := e.p.Get(e.ctx, reserved[0].Status.ProviderID)
	if err != nil || got.Labels[wellknown.LabelCapacityType] != wellknown.CapacityTypeReserved || got.Labels[wellknown.LabelCapacityReservationID] != cr.ID {
		t.Errorf("Get = %v, %v; want reserved in %s", got.Labels, err, cr.ID)
	}
	if got, _ := e.p.Get(e.ctx, c.Status.ProviderID); got.Labels[wellknown.LabelCapacityType] != wellknown.CapacityTypeSpot {
		t.Errorf("Get of the spot instance = %v", got.Labels)
	}

	// Deleting a reserved instance frees its slot for the next launch.
	if err := e.p.Delete(e.ctx, reserved[0]); err != nil {
		t.Fatal(err)
	}
	if offs := e.reservedOfferings("m6i.large"); len(offs) != 1 || !offs[0].Available || offs[0].ReservationCapacity != 1 {
		t.Errorf("after a termination: %+v, want one instance left", offs)
	}
	e.clk.Step(fake.DefaultShutdownDelay + time.Second)
	d := e.create(claim("d", anyCapacity...))
	if d.Labels[wellknown.LabelCapacityType] != wellknown.CapacityTypeReserved {
		t.Errorf("launch after a termination: labels %v, want reserved", d.Labels)
	}
}

// info returns the fake's view of a NodeClaim's instance.
func info(t *testing.T, e *env, nc *karpv1.NodeClaim) fake.InstanceInfo {
	t.Helper()
	i, ok := e.aws.Instance(instanceID(t, nc))
	if !ok {
		t.Fatalf("instance of %s not found", nc.Name)
	}
	return i
}

func TestCreateReservedExhaustedElsewhere(t *testing.T) {
	e := newEnv(t)
	cr := e.reserve(1)
	// The provider learns of one free instance...
	if offs := e.reservedOfferings("m6i.large"); len(offs) != 1 || offs[0].ReservationCapacity != 1 {
		t.Fatalf("offerings %+v", offs)
	}
	// ...which another launcher takes before the next description.
	s := settings.Default()
	s.ClusterName = "test"
	other, err := New(Options{Clients: e.aws.Clients(), Region: e.aws.Region(), Settings: s, Clock: e.clk, Cluster: e.p.cluster,
		NodeClass: func(context.Context, string) (*awsv1.EC2NodeClass, error) { return e.nc.DeepCopy(), nil }})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := other.Create(e.ctx, claim("elsewhere", anyCapacity...)); err != nil || out.Labels[wellknown.LabelCapacityReservationID] != cr.ID {
		t.Fatalf("the other launch: %v, %v", out, err)
	}
	// EC2 refuses the launch for lack of reservation capacity: the
	// NodeClaim fails with insufficient capacity, as Karpenter's does...
	_, err = e.p.Create(e.ctx, claim("a", anyCapacity...))
	if !cloud.IsInsufficientCapacityError(err) {
		t.Fatalf("launch into the exhausted reservation = %v, want insufficient capacity", err)
	}
	// ...and its next launch is on-demand or spot, not in the reservation,
	// while the on-demand pool stays available.
	out := e.create(claim("a", anyCapacity...))
	if out.Labels[wellknown.LabelCapacityType] == wellknown.CapacityTypeReserved {
		t.Errorf("relaunch: labels %v, want outside the reservation", out.Labels)
	}
	if !e.p.ice.Available("m6i.large", cr.AvailabilityZone, wellknown.CapacityTypeOnDemand) {
		t.Error("the exhausted reservation marked the on-demand pool unavailable")
	}
}

func TestReservationCountsSync(t *testing.T) {
	e := newEnv(t)
	e.reserve(3)
	e.reservedOfferings("m6i.large")
	calls := e.aws.Calls("DescribeCapacityReservations")
	e.reservedOfferings("m6i.large")
	if e.aws.Calls("DescribeCapacityReservations") != calls {
		t.Error("reservations described again within a minute")
	}
	e.clk.Step(ReservationSyncInterval)
	e.reservedOfferings("m6i.large")
	if e.aws.Calls("DescribeCapacityReservations") == calls {
		t.Error("reservations not described again after a minute")
	}
	// A selected reservation that no longer exists offers nothing, and does
	// not hide the others.
	e.nc.Status.CapacityReservations = append(e.nc.Status.CapacityReservations, awsv1.CapacityReservation{
		ID: "cr-0123456789abcdef0", AvailabilityZone: e.aws.Zones()[1], InstanceType: "m6i.large",
		ReservationType: awsv1.CapacityReservationTypeDefault, State: awsv1.CapacityReservationStateActive,
	})
	e.clk.Step(ReservationSyncInterval)
	offs := e.reservedOfferings("m6i.large")
	if len(offs) != 2 || !offs[0].Available || offs[0].ReservationCapacity != 3 || offs[1].Available {
		t.Errorf("offerings %+v, want the existing reservation available with 3 and the gone one not", offs)
	}
}

func TestIsDriftedCapacityReservation(t *testing.T) {
	e := newEnv(t)
	e.reserve(1)
	reserved := e.create(claim("a", anyCapacity...))
	spot := e.create(claim("b", anyCapacity...))
	for _, nc := range []*karpv1.NodeClaim{reserved, spot} {
		if r, err := e.p.IsDrifted(e.ctx, nc); err != nil || r != cloud.NoDrift {
			t.Fatalf("%s: IsDrifted = %q, %v; want no drift", nc.Name, r, err)
		}
	}
	// The node class stops selecting the reservation.
	e.nc.Status.CapacityReservations = nil
	if r, err := e.p.IsDrifted(e.ctx, reserved); err != nil || r != drift.CapacityReservationDrift {
		t.Errorf("reserved: IsDrifted = %q, %v; want CapacityReservationDrift", r, err)
	}
	if r, err := e.p.IsDrifted(e.ctx, spot); err != nil || r != cloud.NoDrift {
		t.Errorf("spot: IsDrifted = %q, %v; want no drift", r, err)
	}
	e.p.disableReserved = true
	if r, err := e.p.IsDrifted(e.ctx, reserved); err != nil || r != cloud.NoDrift {
		t.Errorf("ReservedCapacity off: IsDrifted = %q, %v; want no drift", r, err)
	}
}
