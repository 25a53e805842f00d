package launch

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud"
)

// MaxOverrides caps the (instance type, subnet) overrides of one CreateFleet
// request; the cheapest are kept.
const MaxOverrides = 60

// Allocation strategies of the fleet requests.
const (
	SpotAllocationStrategy     = ec2types.SpotAllocationStrategyPriceCapacityOptimized
	OnDemandAllocationStrategy = ec2types.FleetOnDemandAllocationStrategyLowestPrice
)

// CapacityTypeOrder is the order capacity types are tried in, Karpenter's:
// capacity reservations first (they are paid for already), then spot, which
// is cheaper than on-demand; on-demand is what a spot shortage falls back
// to, on the next launch.
var CapacityTypeOrder = []string{wellknown.CapacityTypeReserved, wellknown.CapacityTypeSpot, wellknown.CapacityTypeOnDemand}

// ErrNoOffering is returned by Select when no offering can be launched.
var ErrNoOffering = errors.New("no launchable offering")

// ErrTemplateNotFound is wrapped by the error of a launch whose launch
// template disappeared; the caller invalidates the template and retries.
var ErrTemplateNotFound = errors.New("launch template not found")

// Subnet is a subnet a launch may use.
type Subnet struct {
	ID           string
	Zone         string
	AvailableIPs int32
}

// Candidate is an offering a NodeClaim may be launched as: its requirements
// allow the instance type, the zone and the capacity type.
type Candidate struct {
	InstanceType string
	Zone         string
	CapacityType string
	Price        float64
	// Reservation is the capacity reservation of a reserved candidate.
	Reservation *Reservation
}

// Reservation is the capacity reservation a reserved offering launches into.
type Reservation struct {
	ID string
	// Type is default (an on-demand capacity reservation) or
	// capacity-block.
	Type string
	// Interruptible reservations may be reclaimed by EC2.
	Interruptible bool
}

// Override is one (instance type, subnet) choice of a fleet request.
type Override struct {
	InstanceType string
	Zone         string
	SubnetID     string
	Price        float64
	// Template and ImageID are the launch template the type launches with
	// and its image; the caller fills them in after Select.
	Template string
	ImageID  string
	// Reservation is the capacity reservation a reserved override launches
	// into; its launch template targets it.
	Reservation *Reservation
}

// Selection is what one CreateFleet call tries: a single capacity type and
// the overrides, cheapest first. A reserved selection's overrides are all of
// one reservation type.
type Selection struct {
	CapacityType string
	Overrides    []Override
}

// ReservationType is the reservation type of a reserved selection (empty
// for other capacity types).
func (s Selection) ReservationType() string {
	if s.CapacityType != wellknown.CapacityTypeReserved || len(s.Overrides) == 0 || s.Overrides[0].Reservation == nil {
		return ""
	}
	return s.Overrides[0].Reservation.Type
}

// InstanceTypes returns the distinct instance types of the selection, in
// override order.
func (s Selection) InstanceTypes() []string {
	seen := map[string]bool{}
	var out []string
	for _, o := range s.Overrides {
		if !seen[o.InstanceType] {
			seen[o.InstanceType] = true
			out = append(out, o.InstanceType)
		}
	}
	return out
}

// ZonalSubnets returns one subnet per zone: the one with the most free
// addresses, the lower ID on a tie.
func ZonalSubnets(subnets []Subnet) map[string]Subnet {
	out := map[string]Subnet{}
	for _, s := range subnets {
		cur, ok := out[s.Zone]
		if !ok || s.AvailableIPs > cur.AvailableIPs || (s.AvailableIPs == cur.AvailableIPs && s.ID < cur.ID) {
			out[s.Zone] = s
		}
	}
	return out
}

// Select chooses what to launch from the candidates: it drops offerings in
// zones without a subnet and offerings the ICE cache (which may be nil) marks
// unavailable, takes the first capacity type of CapacityTypeOrder that has an
// offering left, and keeps at most max overrides of it (MaxOverrides when max
// is not positive), cheapest first, ties by instance type and zone. It is a
// pure function of its arguments and the cache.
func Select(cands []Candidate, subnets []Subnet, ice *ICECache, max int) (Selection, error) {
	if max <= 0 {
		max = MaxOverrides
	}
	zonal := ZonalSubnets(subnets)
	byType := map[string][]Override{}
	for _, c := range cands {
		s, ok := zonal[c.Zone]
		if !ok {
			continue
		}
		if ice != nil && !ice.Available(c.InstanceType, c.Zone, c.CapacityType) {
			continue
		}
		if c.CapacityType == wellknown.CapacityTypeReserved && c.Reservation == nil {
			continue // nothing to target
		}
		byType[c.CapacityType] = append(byType[c.CapacityType], Override{
			InstanceType: c.InstanceType, Zone: c.Zone, SubnetID: s.ID, Price: c.Price, Reservation: c.Reservation,
		})
	}
	for _, ct := range CapacityTypeOrder {
		ovs := byType[ct]
		if len(ovs) == 0 {
			continue
		}
		sort.Slice(ovs, func(i, j int) bool {
			a, b := ovs[i], ovs[j]
			if a.Price != b.Price {
				return a.Price < b.Price
			}
			if a.InstanceType != b.InstanceType {
				return a.InstanceType < b.InstanceType
			}
			if a.Zone != b.Zone {
				return a.Zone < b.Zone
			}
			return reservationID(a) < reservationID(b)
		})
		if ct == wellknown.CapacityTypeReserved {
			ovs = reservedOverrides(ovs)
		}
		if len(ovs) > max {
			ovs = ovs[:max]
		}
		return Selection{CapacityType: ct, Overrides: ovs}, nil
	}
	return Selection{}, ErrNoOffering
}

func reservationID(o Override) string {
	if o.Reservation == nil {
		return ""
	}
	return o.Reservation.ID
}

// reservedOverrides narrows sorted reserved overrides the way Karpenter
// filters reserved offerings before a launch: one reservation type per
// fleet (on-demand capacity reservations when there are any, else capacity
// blocks), only the cheapest capacity block, and one reservation per zone
// (the cheapest, the lower ID on a tie). A fleet request cannot say which
// of two overrides of the same type and zone it took, so the launched
// instance's reservation stays known.
func reservedOverrides(ovs []Override) []Override {
	typ := CapacityReservationTypeCapacityBlock
	for _, o := range ovs {
		if o.Reservation.Type != CapacityReservationTypeCapacityBlock {
			typ = o.Reservation.Type
			break
		}
	}
	var out []Override
	zones := map[string]bool{}
	for _, o := range ovs {
		if o.Reservation.Type != typ || zones[o.Zone] {
			continue
		}
		zones[o.Zone] = true
		out = append(out, o)
		if typ == CapacityReservationTypeCapacityBlock {
			break
		}
	}
	return out
}

// Reservation types, as EC2 and the capacity-reservation-type label write
// them.
const (
	CapacityReservationTypeDefault       = "default"
	CapacityReservationTypeCapacityBlock = "capacity-block"
)

// FleetSpec is a selection with everything else a CreateFleet request carries.
type FleetSpec struct {
	Selection
	// Tags go on the instance, its volumes and the fleet.
	Tags map[string]string
	// Context is the node class's spec.context.
	Context *string
}

// LaunchTags are the tags of an instance launched for a NodeClaim: the
// ownership tags (see OwnershipTags) plus the NodePool and the NodeClaim.
func LaunchTags(ownership map[string]string, nodePool, nodeClaim string) map[string]string {
	tags := make(map[string]string, len(ownership)+2)
	for k, v := range ownership {
		tags[k] = v
	}
	tags[wellknown.TagNodePool] = nodePool
	tags[wellknown.TagNodeClaim] = nodeClaim
	return tags
}

// BuildCreateFleet returns the CreateFleet request of spec: an instant fleet
// of one instance of spec.CapacityType, with one launch template config per
// template (in name order) whose overrides keep the selection's order.
func BuildCreateFleet(spec FleetSpec) *ec2.CreateFleetInput {
	byTemplate := map[string][]ec2types.FleetLaunchTemplateOverridesRequest{}
	var names []string
	for _, o := range spec.Overrides {
		if _, ok := byTemplate[o.Template]; !ok {
			names = append(names, o.Template)
		}
		r := ec2types.FleetLaunchTemplateOverridesRequest{
			InstanceType:     ec2types.InstanceType(o.InstanceType),
			SubnetId:         ptr(o.SubnetID),
			AvailabilityZone: ptr(o.Zone),
			Priority:         ptr(o.Price),
		}
		if o.ImageID != "" {
			r.ImageId = ptr(o.ImageID)
		}
		byTemplate[o.Template] = append(byTemplate[o.Template], r)
	}
	sort.Strings(names)
	in := &ec2.CreateFleetInput{
		Type:    ec2types.FleetTypeInstant,
		Context: spec.Context,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			DefaultTargetCapacityType: targetCapacityType(spec.Selection),
			TotalTargetCapacity:       ptr(int32(1)),
		},
	}
	for _, n := range names {
		in.LaunchTemplateConfigs = append(in.LaunchTemplateConfigs, ec2types.FleetLaunchTemplateConfigRequest{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{
				LaunchTemplateName: ptr(n), Version: ptr("$Latest"),
			},
			Overrides: byTemplate[n],
		})
	}
	switch {
	case spec.CapacityType == wellknown.CapacityTypeSpot:
		in.SpotOptions = &ec2types.SpotOptionsRequest{AllocationStrategy: SpotAllocationStrategy}
	case spec.ReservationType() == CapacityReservationTypeCapacityBlock:
		// Capacity blocks take no on-demand allocation strategy.
	default:
		in.OnDemandOptions = &ec2types.OnDemandOptionsRequest{AllocationStrategy: OnDemandAllocationStrategy}
	}
	tags := toTags(spec.Tags)
	for _, rt := range []ec2types.ResourceType{ec2types.ResourceTypeInstance, ec2types.ResourceTypeVolume, ec2types.ResourceTypeFleet} {
		in.TagSpecifications = append(in.TagSpecifications, ec2types.TagSpecification{ResourceType: rt, Tags: tags})
	}
	return in
}

// targetCapacityType is the fleet's DefaultTargetCapacityType: a launch into
// an on-demand capacity reservation is an on-demand launch whose launch
// template targets the reservation; one into a capacity block is a
// capacity-block launch.
func targetCapacityType(s Selection) ec2types.DefaultTargetCapacityType {
	if s.CapacityType != wellknown.CapacityTypeReserved {
		return ec2types.DefaultTargetCapacityType(s.CapacityType)
	}
	if s.ReservationType() == CapacityReservationTypeCapacityBlock {
		return ec2types.DefaultTargetCapacityTypeCapacityBlock
	}
	return ec2types.DefaultTargetCapacityTypeOnDemand
}

// Launched is the instance a fleet request started.
type Launched struct {
	InstanceID   string
	InstanceType string
	Zone         string
	SubnetID     string
	ImageID      string
	CapacityType string
	// Reservation is the capacity reservation of a reserved launch.
	Reservation *Reservation
}

// iceCodes are the fleet error codes that mean "no capacity in this pool".
var iceCodes = map[string]bool{
	"InsufficientInstanceCapacity":      true,
	"MaxSpotInstanceCountExceeded":      true,
	"VcpuLimitExceeded":                 true,
	"UnfulfillableCapacity":             true,
	"Unsupported":                       true,
	"InsufficientFreeAddressesInSubnet": true,
	"MaxFleetCountExceeded":             true,
	"ReservationCapacityExceeded":       true,
}

// IsICECode reports whether a fleet error code means that a capacity pool is
// out of capacity.
func IsICECode(code string) bool { return iceCodes[code] }

// Interpret reads a CreateFleet answer. Every pool that failed for lack of
// capacity is marked in ice (which may be nil), whatever the outcome, except
// in a reserved launch: there the reservation ran out, not the pool (see
// ExhaustedReservations). An
// instance means success. Otherwise: if every error was a capacity error,
// the result is a cloud.InsufficientCapacityError; else a cloud.CreateError
// for the first other error (see ClassifyError).
func Interpret(out *ec2.CreateFleetOutput, spec FleetSpec, ice *ICECache, instanceProfile string) (Launched, error) {
	zoneOfSubnet := map[string]string{}
	imageOf := map[string]string{}
	reservationOf := map[string]*Reservation{}
	for _, o := range spec.Overrides {
		zoneOfSubnet[o.SubnetID] = o.Zone
		imageOf[o.InstanceType+"/"+o.Zone] = o.ImageID
		reservationOf[o.InstanceType+"/"+o.Zone] = o.Reservation
	}
	reserved := spec.CapacityType == wellknown.CapacityTypeReserved
	var iceErrs []string
	var other []ec2types.CreateFleetError
	for _, e := range out.Errors {
		code := deref(e.ErrorCode)
		if !IsICECode(code) {
			other = append(other, e)
			continue
		}
		it, zone := overrideOf(e.LaunchTemplateAndOverrides, zoneOfSubnet)
		ct := string(e.Lifecycle)
		if ct == "" {
			ct = spec.CapacityType
		}
		if reserved {
			ct = wellknown.CapacityTypeReserved
		} else if it != "" && zone != "" && ice != nil {
			ice.MarkUnavailable(it, zone, ct)
		}
		iceErrs = append(iceErrs, fmt.Sprintf("%s (%s %s in %s)", code, ct, it, zone))
	}
	for _, inst := range out.Instances {
		if len(inst.InstanceIds) == 0 {
			continue
		}
		it, zone := overrideOf(inst.LaunchTemplateAndOverrides, zoneOfSubnet)
		if it == "" {
			it = string(inst.InstanceType)
		}
		if zone == "" {
			zone = deref(inst.AvailabilityZone)
		}
		l := Launched{
			InstanceID: inst.InstanceIds[0], InstanceType: it, Zone: zone,
			SubnetID: deref(inst.SubnetId), CapacityType: string(inst.Lifecycle),
		}
		if o := inst.LaunchTemplateAndOverrides; o != nil && o.Overrides != nil {
			if l.SubnetID == "" {
				l.SubnetID = deref(o.Overrides.SubnetId)
			}
			l.ImageID = deref(o.Overrides.ImageId)
		}
		if l.ImageID == "" {
			l.ImageID = imageOf[it+"/"+zone]
		}
		if l.CapacityType == "" || reserved {
			// EC2 reports a reserved instance's lifecycle as on-demand.
			l.CapacityType = spec.CapacityType
		}
		if reserved {
			l.Reservation = reservationOf[it+"/"+zone]
		}
		return l, nil
	}
	if len(other) > 0 {
		e := other[0]
		return Launched{}, ClassifyError(deref(e.ErrorCode), deref(e.ErrorMessage), instanceProfile, nil)
	}
	if len(iceErrs) > 0 {
		return Launched{}, cloud.NewInsufficientCapacityError(fmt.Errorf("CreateFleet launched nothing: %s", strings.Join(iceErrs, "; ")))
	}
	return Launched{}, cloud.NewCreateError(nil, cloud.ReasonLaunchFailed, "CreateFleet returned neither an instance nor an error; retrying")
}

// ExhaustedReservations returns the IDs of the reservations a reserved
// launch failed on for lack of capacity, sorted: the caller stops launching
// into them until they are described again. For other launches it returns
// nothing.
func ExhaustedReservations(out *ec2.CreateFleetOutput, spec FleetSpec) []string {
	if spec.CapacityType != wellknown.CapacityTypeReserved || out == nil {
		return nil
	}
	zoneOfSubnet := map[string]string{}
	reservationOf := map[string]string{}
	for _, o := range spec.Overrides {
		zoneOfSubnet[o.SubnetID] = o.Zone
		reservationOf[o.InstanceType+"/"+o.Zone] = reservationID(o)
	}
	seen := map[string]bool{}
	var ids []string
	for _, e := range out.Errors {
		if !IsICECode(deref(e.ErrorCode)) {
			continue
		}
		it, zone := overrideOf(e.LaunchTemplateAndOverrides, zoneOfSubnet)
		if id := reservationOf[it+"/"+zone]; id != "" && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// Failure is one offering of a CreateFleet request that EC2 refused.
type Failure struct {
	InstanceType, Zone, CapacityType string
	// Code is EC2's error code, for example InsufficientInstanceCapacity.
	Code string
}

// Failures lists the offerings out reports as failed, in EC2's order, each
// with its zone and capacity type: capacity errors and every other error
// alike. An error that names no offering is listed with the zone and type
// left empty, so that it is still counted.
func Failures(out *ec2.CreateFleetOutput, spec FleetSpec) []Failure {
	if out == nil || len(out.Errors) == 0 {
		return nil
	}
	zoneOfSubnet := map[string]string{}
	for _, o := range spec.Overrides {
		zoneOfSubnet[o.SubnetID] = o.Zone
	}
	fs := make([]Failure, 0, len(out.Errors))
	for _, e := range out.Errors {
		it, zone := overrideOf(e.LaunchTemplateAndOverrides, zoneOfSubnet)
		ct := string(e.Lifecycle)
		if ct == "" || spec.CapacityType == wellknown.CapacityTypeReserved {
			// EC2 reports a reserved launch's lifecycle as on-demand.
			ct = spec.CapacityType
		}
		fs = append(fs, Failure{InstanceType: it, Zone: zone, CapacityType: ct, Code: deref(e.ErrorCode)})
	}
	return fs
}

func overrideOf(r *ec2types.LaunchTemplateAndOverridesResponse, zoneOfSubnet map[string]string) (instanceType, zone string) {
	if r == nil || r.Overrides == nil {
		return "", ""
	}
	o := r.Overrides
	zone = deref(o.AvailabilityZone)
	if zone == "" {
		zone = zoneOfSubnet[deref(o.SubnetId)]
	}
	return string(o.InstanceType), zone
}

var actionRE = regexp.MustCompile(`perform: ([A-Za-z0-9-]+:[A-Za-z0-9]+)`)

// ClassifyError turns an EC2 error code and message (from a fleet's Errors or
// from the call itself, then err is the call's error) into the error Create
// returns: capacity codes become cloud.InsufficientCapacityError, everything
// else a cloud.CreateError whose reason is stable and whose message says what
// to fix.
func ClassifyError(code, message, instanceProfile string, err error) error {
	if err == nil {
		err = fmt.Errorf("%s: %s", code, message)
	}
	switch {
	case IsICECode(code):
		return cloud.NewInsufficientCapacityError(err)
	case code == "UnauthorizedOperation" || code == "AccessDenied" || code == "AccessDeniedException" || code == "AuthFailure" || strings.HasPrefix(code, "AuthFailure."):
		action := "ec2:CreateFleet"
		if m := actionRE.FindStringSubmatch(message); m != nil {
			action = m[1]
		}
		if action == "iam:PassRole" {
			return cloud.NewCreateError(err, cloud.ReasonUnauthorized, fmt.Sprintf(
				"the controller is not allowed iam:PassRole on the node role of instance profile %q, so EC2 refused the launch: "+
					"add iam:PassRole on that role, with the condition iam:PassedToService=ec2.amazonaws.com, to the controller's IAM policy",
				instanceProfile))
		}
		return cloud.NewCreateError(err, cloud.ReasonUnauthorized, fmt.Sprintf(
			"the controller is not allowed %s, so EC2 refused the launch: add %s to the controller's IAM policy", action, action))
	case code == "InvalidLaunchTemplateName.NotFoundException" || code == "InvalidLaunchTemplateId.NotFound":
		return cloud.NewCreateError(fmt.Errorf("%w: %v", ErrTemplateNotFound, err), cloud.ReasonLaunchFailed,
			"the launch template was deleted outside stevedore; it is recreated on the next launch")
	case strings.HasPrefix(code, "InvalidAMIID."):
		return cloud.NewCreateError(err, cloud.ReasonImageNotFound,
			"the image selected by the EC2NodeClass's amiSelectorTerms no longer exists or is not available: check amiSelectorTerms")
	case code == "InvalidParameterValue" && strings.Contains(strings.ToLower(message), "instance profile"):
		return cloud.NewCreateError(err, cloud.ReasonInstanceProfileNotFound, fmt.Sprintf(
			"EC2 does not accept instance profile %q: it does not exist, or IAM has not propagated it yet (this clears within a minute); check the EC2NodeClass's role or instanceProfile",
			instanceProfile))
	case strings.Contains(message, "different networks") || strings.Contains(message, "belong to different VPCs"):
		return cloud.NewCreateError(err, cloud.ReasonSecurityGroupSubnetVPCMismatch,
			"the selected security groups and subnet are in different VPCs: make securityGroupSelectorTerms and subnetSelectorTerms select the same VPC")
	case code == "SpotMaxPriceTooLow" || code == "MaxSpotFleetRequestCountExceeded":
		return cloud.NewCreateError(err, cloud.ReasonSpotQuotaExceeded,
			"the account's spot limits refused the launch: raise the spot quota, or allow on-demand in the NodePool")
	}
	return cloud.NewCreateError(err, cloud.ReasonLaunchFailed, fmt.Sprintf("EC2 refused the launch with %s: %s", code, message))
}

func deref[T any](p *T) T {
	if p == nil {
		var z T
		return z
	}
	return *p
}
