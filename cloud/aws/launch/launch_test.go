package launch

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	"github.com/stevedore-autoscaler/stevedore/cloud"
)

func TestICECache(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c := NewICECache(clk)
	c.MarkUnavailable("m6i.large", "us-east-1b", "spot")
	c.MarkUnavailable("c6i.large", "us-east-1a", "spot")
	if c.Available("m6i.large", "us-east-1b", "spot") || !c.Available("m6i.large", "us-east-1b", "on-demand") {
		t.Error("availability wrong")
	}
	if l := c.List(); len(l) != 2 || l[0].InstanceType != "c6i.large" {
		t.Errorf("List = %v", l)
	}
	clk.Step(UnavailableTTL)
	if !c.Available("m6i.large", "us-east-1b", "spot") || len(c.List()) != 0 {
		t.Error("mark did not expire")
	}
}

func TestICECacheVersion(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c := NewICECache(clk)
	if seq, next := c.Version(); seq != 0 || !next.IsZero() {
		t.Fatalf("empty cache: Version = %d, %v", seq, next)
	}
	c.MarkUnavailable("m6i.large", "us-east-1b", "spot")
	first := clk.Now().Add(UnavailableTTL)
	clk.Step(time.Minute)
	c.MarkUnavailable("c6i.large", "us-east-1a", "spot")
	seq, next := c.Version()
	if seq != 2 || !next.Equal(first) {
		t.Errorf("Version = %d, %v; want 2, %v (the earlier mark's expiry)", seq, next, first)
	}
	// Once the first mark has expired, the next expiry is the second mark's,
	// whether or not a read has dropped the first one yet.
	clk.Step(UnavailableTTL - time.Minute)
	if seq, next := c.Version(); seq != 2 || !next.Equal(first.Add(time.Minute)) {
		t.Errorf("after the first expiry: Version = %d, %v", seq, next)
	}
	clk.Step(time.Minute)
	if _, next := c.Version(); !next.IsZero() {
		t.Errorf("all expired: next expiry %v, want none", next)
	}
}

func TestSelect(t *testing.T) {
	subnets := []Subnet{{"subnet-a1", "a", 10}, {"subnet-a2", "a", 50}, {"subnet-b", "b", 5}}
	cand := func(it, zone, ct string, price float64) Candidate {
		return Candidate{InstanceType: it, Zone: zone, CapacityType: ct, Price: price}
	}
	cands := []Candidate{
		cand("m", "a", "on-demand", 0.10), cand("m", "b", "on-demand", 0.10),
		cand("m", "a", "spot", 0.04), cand("c", "b", "spot", 0.03), cand("c", "z", "spot", 0.01),
	}
	tests := []struct {
		name   string
		cands  []Candidate
		marked [][3]string
		max    int
		wantCT string
		want   []string // type/zone/subnet
	}{
		{"spot before on-demand, cheapest first, no subnet zone dropped", cands, nil, 0, "spot", []string{"c/b/subnet-b", "m/a/subnet-a2"}},
		{"ICE'd pools skipped", cands, [][3]string{{"c", "b", "spot"}}, 0, "spot", []string{"m/a/subnet-a2"}},
		{"all spot ICE'd falls to on-demand", cands, [][3]string{{"c", "b", "spot"}, {"m", "a", "spot"}}, 0, "on-demand", []string{"m/a/subnet-a2", "m/b/subnet-b"}},
		{"capped", cands, nil, 1, "spot", []string{"c/b/subnet-b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ice := NewICECache(clocktesting.NewFakeClock(time.Unix(0, 0)))
			for _, m := range tt.marked {
				ice.MarkUnavailable(m[0], m[1], m[2])
			}
			sel, err := Select(tt.cands, subnets, ice, tt.max)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range sel.Overrides {
				got = append(got, o.InstanceType+"/"+o.Zone+"/"+o.SubnetID)
			}
			if sel.CapacityType != tt.wantCT || strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("Select = %s %v, want %s %v", sel.CapacityType, got, tt.wantCT, tt.want)
			}
		})
	}
	if _, err := Select(nil, subnets, nil, 0); err != ErrNoOffering {
		t.Errorf("empty Select = %v", err)
	}
}

func TestBuildCreateFleet(t *testing.T) {
	for _, ct := range []string{"spot", "on-demand"} {
		in := BuildCreateFleet(FleetSpec{
			Selection: Selection{CapacityType: ct, Overrides: []Override{
				{InstanceType: "c", Zone: "b", SubnetID: "s-b", Price: 1, Template: "t2", ImageID: "ami-2"},
				{InstanceType: "m", Zone: "a", SubnetID: "s-a", Price: 2, Template: "t1", ImageID: "ami-1"},
				{InstanceType: "r", Zone: "a", SubnetID: "s-a", Price: 3, Template: "t2", ImageID: "ami-2"},
			}},
			Tags: map[string]string{"k": "v"},
		})
		if in.Type != ec2types.FleetTypeInstant || *in.TargetCapacitySpecification.TotalTargetCapacity != 1 ||
			string(in.TargetCapacitySpecification.DefaultTargetCapacityType) != ct {
			t.Errorf("%s: target %+v", ct, in.TargetCapacitySpecification)
		}
		if len(in.LaunchTemplateConfigs) != 2 || *in.LaunchTemplateConfigs[0].LaunchTemplateSpecification.LaunchTemplateName != "t1" ||
			len(in.LaunchTemplateConfigs[1].Overrides) != 2 || in.LaunchTemplateConfigs[1].Overrides[1].InstanceType != "r" {
			t.Errorf("%s: configs %+v", ct, in.LaunchTemplateConfigs)
		}
		if ct == "spot" && (in.SpotOptions == nil || in.SpotOptions.AllocationStrategy != SpotAllocationStrategy || in.OnDemandOptions != nil) {
			t.Errorf("spot options %+v", in.SpotOptions)
		}
		if ct == "on-demand" && (in.OnDemandOptions == nil || in.OnDemandOptions.AllocationStrategy != OnDemandAllocationStrategy || in.SpotOptions != nil) {
			t.Errorf("on-demand options %+v", in.OnDemandOptions)
		}
		if len(in.TagSpecifications) != 3 {
			t.Errorf("tag specs %+v", in.TagSpecifications)
		}
	}
}

func TestInterpret(t *testing.T) {
	spec := FleetSpec{Selection: Selection{CapacityType: "spot", Overrides: []Override{{InstanceType: "m", Zone: "a", SubnetID: "s-a", ImageID: "ami-1"}}}}
	ltor := func(it, zone string) *ec2types.LaunchTemplateAndOverridesResponse {
		return &ec2types.LaunchTemplateAndOverridesResponse{Overrides: &ec2types.FleetLaunchTemplateOverrides{InstanceType: ec2types.InstanceType(it), AvailabilityZone: ptr(zone)}}
	}
	ice := NewICECache(clocktesting.NewFakeClock(time.Unix(0, 0)))
	_, err := Interpret(ec2CreateFleetOutput{Errors: []ec2types.CreateFleetError{
		{ErrorCode: ptr("InsufficientInstanceCapacity"), LaunchTemplateAndOverrides: ltor("m", "a"), Lifecycle: "spot"},
	}}.out(), spec, ice, "p")
	if !cloud.IsInsufficientCapacityError(err) || ice.Available("m", "a", "spot") {
		t.Errorf("ICE: %v", err)
	}
	_, err = Interpret(ec2CreateFleetOutput{Errors: []ec2types.CreateFleetError{
		{ErrorCode: ptr("UnauthorizedOperation"), ErrorMessage: ptr("User: x is not authorized to perform: iam:PassRole on resource: role"), LaunchTemplateAndOverrides: ltor("m", "a")},
	}}.out(), spec, ice, "my-profile")
	if ce, ok := cloud.AsCreateError(err); !ok || ce.Reason != cloud.ReasonUnauthorized || !strings.Contains(ce.Message, "iam:PassRole") || !strings.Contains(ce.Message, "my-profile") {
		t.Errorf("PassRole: %v", err)
	}
	l, err := Interpret(ec2CreateFleetOutput{Instances: []ec2types.CreateFleetInstance{
		{InstanceIds: []string{"i-1"}, LaunchTemplateAndOverrides: ltor("m", "a"), Lifecycle: "spot"},
	}}.out(), spec, ice, "p")
	if err != nil || l.InstanceID != "i-1" || l.Zone != "a" || l.ImageID != "ami-1" || l.CapacityType != "spot" {
		t.Errorf("success: %+v %v", l, err)
	}
}

func TestBuildTemplate(t *testing.T) {
	nc := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec:       awsv1.EC2NodeClassSpec{AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}, Tags: map[string]string{"team": "x"}},
		Status:     awsv1.EC2NodeClassStatus{InstanceProfile: "p", SecurityGroups: []awsv1.SecurityGroup{{ID: "sg-2"}, {ID: "sg-1"}}},
	}
	params := TemplateParams{ClusterName: "c", ClusterEndpoint: "https://e", CABundle: "Q0E=", ClusterCIDR: "10.0.0.0/16", NodeClass: nc, ImageID: "ami-1", MaxPods: 29}
	a, err := BuildTemplate(params)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := BuildTemplate(params)
	params.MaxPods = 58
	c, _ := BuildTemplate(params)
	if a.Name != b.Name || a.Name == c.Name || !strings.HasPrefix(a.Name, "stevedore/c/") {
		t.Errorf("names %s %s %s", a.Name, b.Name, c.Name)
	}
	if strings.Join(a.Data.SecurityGroupIds, ",") != "sg-1,sg-2" || *a.Data.IamInstanceProfile.Name != "p" ||
		a.Tags["karpenter.k8s.aws/ec2nodeclass"] != "default" || a.Tags["team"] != "x" || a.Tags["kubernetes.io/cluster/c"] != "owned" {
		t.Errorf("template %+v tags %v", a.Data, a.Tags)
	}
	if bd := a.Data.BlockDeviceMappings; len(bd) != 1 || *bd[0].Ebs.VolumeSize != 20 || *bd[0].DeviceName != "/dev/xvda" {
		t.Errorf("block devices %+v", bd)
	}
}

func TestSelectReserved(t *testing.T) {
	subnets := []Subnet{{"subnet-a", "a", 10}, {"subnet-b", "b", 10}}
	res := func(it, zone, id, typ string, price float64) Candidate {
		return Candidate{InstanceType: it, Zone: zone, CapacityType: "reserved", Price: price, Reservation: &Reservation{ID: id, Type: typ}}
	}
	spot := Candidate{InstanceType: "m", Zone: "a", CapacityType: "spot", Price: 0.04}
	tests := []struct {
		name   string
		cands  []Candidate
		wantCT string
		want   []string // type/zone/reservation
	}{
		{"reserved before spot", []Candidate{spot, res("m", "a", "cr-1", "default", 1e-8)}, "reserved", []string{"m/a/cr-1"}},
		{"one reservation per zone, the cheapest", []Candidate{
			res("r", "a", "cr-3", "default", 3e-8), res("m", "a", "cr-2", "default", 1e-8), res("m", "b", "cr-1", "default", 1e-8),
		}, "reserved", []string{"m/a/cr-2", "m/b/cr-1"}},
		{"on-demand reservations before capacity blocks", []Candidate{
			res("p", "a", "cr-cb", "capacity-block", 1e-9), res("m", "b", "cr-od", "default", 1e-8),
		}, "reserved", []string{"m/b/cr-od"}},
		{"the cheapest capacity block only", []Candidate{
			res("p", "a", "cr-cb1", "capacity-block", 2e-8), res("q", "b", "cr-cb2", "capacity-block", 1e-8),
		}, "reserved", []string{"q/b/cr-cb2"}},
		{"a reserved candidate without a reservation is dropped", []Candidate{spot, {InstanceType: "m", Zone: "a", CapacityType: "reserved"}}, "spot", []string{"m/a/"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sel, err := Select(tt.cands, subnets, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range sel.Overrides {
				got = append(got, o.InstanceType+"/"+o.Zone+"/"+reservationID(o))
			}
			if sel.CapacityType != tt.wantCT || strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("Select = %s %v, want %s %v", sel.CapacityType, got, tt.wantCT, tt.want)
			}
		})
	}
}

func TestBuildCreateFleetReserved(t *testing.T) {
	for _, tt := range []struct {
		typ      string
		want     ec2types.DefaultTargetCapacityType
		onDemand bool
	}{
		{"default", ec2types.DefaultTargetCapacityTypeOnDemand, true},
		{"capacity-block", ec2types.DefaultTargetCapacityTypeCapacityBlock, false},
	} {
		in := BuildCreateFleet(FleetSpec{Selection: Selection{CapacityType: "reserved", Overrides: []Override{
			{InstanceType: "m", Zone: "a", SubnetID: "s-a", Template: "t-cr", Reservation: &Reservation{ID: "cr-1", Type: tt.typ}},
		}}})
		if got := in.TargetCapacitySpecification.DefaultTargetCapacityType; got != tt.want {
			t.Errorf("%s: DefaultTargetCapacityType %s, want %s", tt.typ, got, tt.want)
		}
		if (in.OnDemandOptions != nil) != tt.onDemand || in.SpotOptions != nil {
			t.Errorf("%s: on-demand options %+v, spot options %+v", tt.typ, in.OnDemandOptions, in.SpotOptions)
		}
	}
}

func TestInterpretReserved(t *testing.T) {
	r := &Reservation{ID: "cr-1", Type: "default"}
	spec := FleetSpec{Selection: Selection{CapacityType: "reserved", Overrides: []Override{{InstanceType: "m", Zone: "a", SubnetID: "s-a", Reservation: r}}}}
	ltor := &ec2types.LaunchTemplateAndOverridesResponse{Overrides: &ec2types.FleetLaunchTemplateOverrides{InstanceType: "m", AvailabilityZone: ptr("a")}}
	ice := NewICECache(clocktesting.NewFakeClock(time.Unix(0, 0)))
	out := ec2CreateFleetOutput{Errors: []ec2types.CreateFleetError{
		{ErrorCode: ptr("ReservationCapacityExceeded"), LaunchTemplateAndOverrides: ltor, Lifecycle: "on-demand"},
	}}.out()
	_, err := Interpret(out, spec, ice, "p")
	if !cloud.IsInsufficientCapacityError(err) {
		t.Errorf("exhausted reservation: %v, want an insufficient capacity error", err)
	}
	// The reservation ran out, not the on-demand pool.
	if !ice.Available("m", "a", "on-demand") || !ice.Available("m", "a", "reserved") {
		t.Error("an exhausted reservation marked the pool unavailable")
	}
	if got := ExhaustedReservations(out, spec); len(got) != 1 || got[0] != "cr-1" {
		t.Errorf("ExhaustedReservations = %v, want [cr-1]", got)
	}
	l, err := Interpret(ec2CreateFleetOutput{Instances: []ec2types.CreateFleetInstance{
		{InstanceIds: []string{"i-1"}, LaunchTemplateAndOverrides: ltor, Lifecycle: "on-demand"},
	}}.out(), spec, ice, "p")
	if err != nil || l.CapacityType != "reserved" || l.Reservation != r {
		t.Errorf("reserved launch: %+v %v, want capacity type reserved in cr-1", l, err)
	}
}

func TestBuildTemplateReservation(t *testing.T) {
	nc := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec:       awsv1.EC2NodeClassSpec{AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}},
		Status:     awsv1.EC2NodeClassStatus{InstanceProfile: "p"},
	}
	base := TemplateParams{ClusterName: "c", ClusterEndpoint: "https://e", CABundle: "Q0E=", ClusterCIDR: "10.0.0.0/16", NodeClass: nc, ImageID: "ami-1"}
	build := func(mod func(*TemplateParams)) *Template {
		p := base
		mod(&p)
		tmpl, err := BuildTemplate(p)
		if err != nil {
			t.Fatal(err)
		}
		return tmpl
	}
	plain := build(func(*TemplateParams) {})
	optOut := build(func(p *TemplateParams) { p.OptOutOfReservations = true })
	cr1 := build(func(p *TemplateParams) { p.Reservation = &Reservation{ID: "cr-1", Type: "default"} })
	cr2 := build(func(p *TemplateParams) { p.Reservation = &Reservation{ID: "cr-2", Type: "default"} })
	block := build(func(p *TemplateParams) { p.Reservation = &Reservation{ID: "cr-3", Type: "capacity-block"} })
	if plain.Data.CapacityReservationSpecification != nil {
		t.Errorf("no reservation, no opt-out: %+v", plain.Data.CapacityReservationSpecification)
	}
	if s := optOut.Data.CapacityReservationSpecification; s == nil || s.CapacityReservationPreference != ec2types.CapacityReservationPreferenceNone || s.CapacityReservationTarget != nil {
		t.Errorf("opt-out: %+v, want preference none", s)
	}
	if s := cr1.Data.CapacityReservationSpecification; s == nil || s.CapacityReservationPreference != ec2types.CapacityReservationPreferenceCapacityReservationsOnly ||
		*s.CapacityReservationTarget.CapacityReservationId != "cr-1" || cr1.Data.InstanceMarketOptions != nil {
		t.Errorf("reservation: %+v, want capacity-reservations-only targeting cr-1", s)
	}
	if m := block.Data.InstanceMarketOptions; m == nil || m.MarketType != ec2types.MarketTypeCapacityBlock {
		t.Errorf("capacity block market options %+v", m)
	}
	names := map[string]bool{plain.Name: true, optOut.Name: true, cr1.Name: true, cr2.Name: true, block.Name: true}
	if len(names) != 5 {
		t.Errorf("templates of different reservations share a name: %v", names)
	}
}

type ec2CreateFleetOutput struct {
	Instances []ec2types.CreateFleetInstance
	Errors    []ec2types.CreateFleetError
}

func (o ec2CreateFleetOutput) out() *ec2.CreateFleetOutput {
	return &ec2.CreateFleetOutput{Instances: o.Instances, Errors: o.Errors}
}

func TestFailures(t *testing.T) {
	overrides := []Override{{InstanceType: "m", Zone: "a", SubnetID: "s-a"}, {InstanceType: "c", Zone: "b", SubnetID: "s-b"}}
	byZone := func(it, zone string) *ec2types.LaunchTemplateAndOverridesResponse {
		return &ec2types.LaunchTemplateAndOverridesResponse{Overrides: &ec2types.FleetLaunchTemplateOverrides{InstanceType: ec2types.InstanceType(it), AvailabilityZone: ptr(zone)}}
	}
	bySubnet := func(it, subnet string) *ec2types.LaunchTemplateAndOverridesResponse {
		return &ec2types.LaunchTemplateAndOverridesResponse{Overrides: &ec2types.FleetLaunchTemplateOverrides{InstanceType: ec2types.InstanceType(it), SubnetId: ptr(subnet)}}
	}
	tests := []struct {
		name         string
		capacityType string
		out          ec2CreateFleetOutput
		want         []Failure
	}{
		{name: "an instance and no error", capacityType: "spot",
			out: ec2CreateFleetOutput{Instances: []ec2types.CreateFleetInstance{{InstanceIds: []string{"i-1"}, LaunchTemplateAndOverrides: byZone("m", "a")}}}},
		{name: "every error, in EC2's order, capacity or not", capacityType: "spot",
			out: ec2CreateFleetOutput{Errors: []ec2types.CreateFleetError{
				{ErrorCode: ptr("InsufficientInstanceCapacity"), LaunchTemplateAndOverrides: byZone("m", "a"), Lifecycle: "spot"},
				{ErrorCode: ptr("UnfulfillableCapacity"), LaunchTemplateAndOverrides: bySubnet("c", "s-b")},
				{ErrorCode: ptr("InvalidParameterValue")},
			}},
			want: []Failure{
				{InstanceType: "m", Zone: "a", CapacityType: "spot", Code: "InsufficientInstanceCapacity"},
				{InstanceType: "c", Zone: "b", CapacityType: "spot", Code: "UnfulfillableCapacity"},
				{CapacityType: "spot", Code: "InvalidParameterValue"},
			}},
		{name: "a reserved launch is reported as reserved, not on-demand", capacityType: "reserved",
			out: ec2CreateFleetOutput{Errors: []ec2types.CreateFleetError{
				{ErrorCode: ptr("ReservationCapacityExceeded"), LaunchTemplateAndOverrides: byZone("m", "a"), Lifecycle: "on-demand"},
			}},
			want: []Failure{{InstanceType: "m", Zone: "a", CapacityType: "reserved", Code: "ReservationCapacityExceeded"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := FleetSpec{Selection: Selection{CapacityType: tt.capacityType, Overrides: overrides}}
			got := Failures(tt.out.out(), spec)
			if len(got) != len(tt.want) {
				t.Fatalf("Failures = %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("failure %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}
