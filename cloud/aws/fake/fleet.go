package fake

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// Capacity types of pools.
const (
	CapacityTypeSpot     = "spot"
	CapacityTypeOnDemand = "on-demand"
)

type iceRule struct {
	types, zones map[string]bool
	capacityType string
	until        time.Time
}

func (r iceRule) matches(k poolKey, now time.Time) bool {
	if !now.Before(r.until) {
		return false
	}
	if len(r.types) > 0 && !r.types[k.instanceType] {
		return false
	}
	if len(r.zones) > 0 && !r.zones[k.zone] {
		return false
	}
	return r.capacityType == "" || r.capacityType == k.capacityType
}

// InjectInsufficientCapacity makes launches into the matching pools fail with
// InsufficientInstanceCapacity until the clock reaches until. Empty types or
// zones match all; capacityType is spot, on-demand or empty for both.
func (f *AWS) InjectInsufficientCapacity(types, zones []string, capacityType string, until time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := iceRule{types: map[string]bool{}, zones: map[string]bool{}, capacityType: capacityType, until: until}
	for _, t := range types {
		r.types[t] = true
	}
	for _, z := range zones {
		r.zones[z] = true
	}
	f.iceRules = append(f.iceRules, r)
}

// ClearInsufficientCapacity removes every insufficient-capacity injection.
func (f *AWS) ClearInsufficientCapacity() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.iceRules = nil
}

// SetCapacity limits how many more instances a pool (type, zone, capacity
// type) can launch; terminations give capacity back. n < 0 removes the limit
// (pools are unlimited by default). A pool at 0 answers
// InsufficientInstanceCapacity.
func (f *AWS) SetCapacity(instanceType, zone, capacityType string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := poolKey{instanceType, zone, capacityType}
	if n < 0 {
		delete(f.capacity, k)
		return
	}
	f.capacity[k] = n
}

// candidate is one launch-template override CreateFleet may launch into.
type candidate struct {
	order        int
	lt           *launchTemplate
	spec         ec2types.FleetLaunchTemplateSpecification
	override     ec2types.FleetLaunchTemplateOverrides
	instanceType string
	zone         string
	subnet       *subnet
	img          *image
	groups       []string
	price        float64
	priority     float64
	tie          uint64
	reservation  *capacityReservation
}

func (c *candidate) response() *ec2types.LaunchTemplateAndOverridesResponse {
	spec, ov := c.spec, c.override
	return &ec2types.LaunchTemplateAndOverridesResponse{LaunchTemplateSpecification: &spec, Overrides: &ov}
}

type fleetErr struct {
	code, message string
	where         *ec2types.LaunchTemplateAndOverridesResponse
}

// CreateFleet implements sdk.EC2 for instant fleets.
//
// Each override becomes a candidate pool; overrides that cannot launch at all
// (unknown launch template, instance profile, subnet, AMI or security group,
// a role the controller may not pass, an instance type not offered in the
// zone, an architecture mismatch) are reported in Errors. The remaining pools
// are tried in allocation-strategy order — on-demand lowest-price by price,
// prioritized by Priority; spot price-capacity-optimized and lowest-price by
// spot price with ties broken by the seed, capacity-optimized(-prioritized) by
// Priority — and each pool that has no capacity (an injected
// insufficient-capacity window, an exhausted pool count, a subnet without
// free addresses, an exhausted capacity reservation) adds an Errors entry, as
// the real API does, until the target capacity is launched or the pools run
// out.
func (f *AWS) CreateFleet(_ context.Context, in *ec2.CreateFleetInput, _ ...func(*ec2.Options)) (*ec2.CreateFleetOutput, error) {
	const api = "CreateFleet"
	unlock, err := f.lock(api, in)
	defer unlock()
	if err != nil {
		return nil, err
	}
	if in.Type != ec2types.FleetTypeInstant {
		return nil, ec2Error(api, "InvalidParameterValue", "Fleet type %q is not supported; the fleet type must be instant", in.Type)
	}
	if len(in.LaunchTemplateConfigs) == 0 {
		return nil, ec2Error(api, "MissingParameter", "The request must contain the parameter LaunchTemplateConfigs")
	}
	tcs := in.TargetCapacitySpecification
	if tcs == nil || deref(tcs.TotalTargetCapacity) < 1 {
		return nil, ec2Error(api, "InvalidTargetCapacitySpecification", "TotalTargetCapacity must be at least 1")
	}
	capType := string(tcs.DefaultTargetCapacityType)
	switch capType {
	case "spot", "on-demand", "capacity-block", "reserved-capacity":
	default:
		return nil, ec2Error(api, "InvalidParameterValue", "Value (%s) for parameter DefaultTargetCapacityType is invalid.", capType)
	}
	lifecycle := CapacityTypeOnDemand
	if capType == "spot" {
		lifecycle = CapacityTypeSpot
	}
	spotStrategy := "lowest-price"
	if in.SpotOptions != nil && in.SpotOptions.AllocationStrategy != "" {
		spotStrategy = string(in.SpotOptions.AllocationStrategy)
	}
	odStrategy := "lowest-price"
	if in.OnDemandOptions != nil && in.OnDemandOptions.AllocationStrategy != "" {
		odStrategy = string(in.OnDemandOptions.AllocationStrategy)
	}
	switch spotStrategy {
	case "lowest-price", "diversified", "capacity-optimized", "capacity-optimized-prioritized", "price-capacity-optimized":
	default:
		return nil, ec2Error(api, "InvalidParameterValue", "Value (%s) for parameter SpotOptions.AllocationStrategy is invalid.", spotStrategy)
	}
	switch odStrategy {
	case "lowest-price", "prioritized":
	default:
		return nil, ec2Error(api, "InvalidParameterValue", "Value (%s) for parameter OnDemandOptions.AllocationStrategy is invalid.", odStrategy)
	}

	if deref(in.DryRun) {
		for _, cfg := range in.LaunchTemplateConfigs {
			lt, err := f.fleetLaunchTemplate(api, cfg.LaunchTemplateSpecification)
			if err != nil {
				return nil, err
			}
			if code, msg := f.passRoleError(lt.profileName()); code != "" {
				return nil, ec2Error(api, code, "%s", msg)
			}
		}
		return nil, f.dryRun(api, in.DryRun)
	}

	var errs []fleetErr
	var cands []*candidate
	for _, cfg := range in.LaunchTemplateConfigs {
		spec := ec2types.FleetLaunchTemplateSpecification{Version: ptr("1")}
		if s := cfg.LaunchTemplateSpecification; s != nil {
			spec.LaunchTemplateId, spec.LaunchTemplateName = s.LaunchTemplateId, s.LaunchTemplateName
			if s.Version != nil {
				spec.Version = s.Version
			}
		}
		overrides := cfg.Overrides
		if len(overrides) == 0 {
			overrides = []ec2types.FleetLaunchTemplateOverridesRequest{{}}
		}
		lt, ltErr := f.fleetLaunchTemplate(api, cfg.LaunchTemplateSpecification)
		for _, o := range overrides {
			c := &candidate{order: len(cands) + len(errs), lt: lt, spec: spec, override: ec2types.FleetLaunchTemplateOverrides{
				InstanceType: o.InstanceType, SubnetId: o.SubnetId, AvailabilityZone: o.AvailabilityZone,
				ImageId: o.ImageId, Priority: o.Priority, WeightedCapacity: o.WeightedCapacity, MaxPrice: o.MaxPrice,
			}}
			if ltErr != nil {
				errs = append(errs, fleetErr{errorCode(ltErr), errorMessage(ltErr), c.response()})
				continue
			}
			spec.LaunchTemplateId, spec.LaunchTemplateName = ptr(lt.id), ptr(lt.name)
			c.spec = spec
			if code, msg := f.resolveCandidate(c, o, lifecycle); code != "" {
				errs = append(errs, fleetErr{code, msg, c.response()})
				continue
			}
			cands = append(cands, c)
		}
	}

	prioritized := (lifecycle == CapacityTypeOnDemand && odStrategy == "prioritized") ||
		(lifecycle == CapacityTypeSpot && strings.HasPrefix(spotStrategy, "capacity-optimized"))
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if prioritized && a.priority != b.priority {
			return a.priority < b.priority
		}
		if a.price != b.price {
			return a.price < b.price
		}
		if lifecycle == CapacityTypeSpot && a.tie != b.tie {
			return a.tie < b.tie
		}
		if a.priority != b.priority {
			return a.priority < b.priority
		}
		return a.order < b.order
	})

	out := &ec2.CreateFleetOutput{FleetId: ptr("fleet-" + f.uuid())}
	remaining := int(*tcs.TotalTargetCapacity)
	now := f.now()
	fleetTags := tagsFor(in.TagSpecifications, "instance")
	for _, c := range cands {
		if remaining == 0 {
			break
		}
		n, code, msg := f.poolRoom(c, lifecycle, remaining, now)
		if n == 0 {
			errs = append(errs, fleetErr{code, msg, c.response()})
			continue
		}
		reservationID := "r-" + f.hex(17)
		fi := ec2types.CreateFleetInstance{
			InstanceType: ec2types.InstanceType(c.instanceType), LaunchTemplateAndOverrides: c.response(),
			Lifecycle: ec2types.InstanceLifecycle(lifecycle), SubnetId: ptr(c.subnet.ID),
			AvailabilityZone: ptr(c.zone), AvailabilityZoneId: ptr(f.zoneID(c.zone)),
		}
		if c.img.Windows {
			fi.Platform = ec2types.PlatformValuesWindows
		}
		for range n {
			inst := f.launch(c, lifecycle, reservationID, fleetTags, now)
			fi.InstanceIds = append(fi.InstanceIds, inst.id)
		}
		out.Instances = append(out.Instances, fi)
		remaining -= n
	}
	for _, e := range errs {
		out.Errors = append(out.Errors, ec2types.CreateFleetError{
			ErrorCode: ptr(e.code), ErrorMessage: ptr(e.message), LaunchTemplateAndOverrides: e.where,
			Lifecycle: ec2types.InstanceLifecycle(lifecycle),
		})
	}
	return out, nil
}

func (f *AWS) fleetLaunchTemplate(api string, s *ec2types.FleetLaunchTemplateSpecificationRequest) (*launchTemplate, error) {
	if s == nil || (deref(s.LaunchTemplateId) == "" && deref(s.LaunchTemplateName) == "") {
		return nil, ec2Error(api, "MissingParameter", "The request must contain the parameter LaunchTemplateSpecification")
	}
	if id := deref(s.LaunchTemplateId); id != "" {
		if lt, ok := f.launchTemplates[id]; ok {
			return lt, nil
		}
		return nil, ec2Error(api, "InvalidLaunchTemplateId.NotFound", "The specified launch template, with template ID %s, does not exist.", id)
	}
	if lt := f.findLaunchTemplate("", *s.LaunchTemplateName); lt != nil {
		return lt, nil
	}
	return nil, ec2Error(api, "InvalidLaunchTemplateName.NotFoundException", "The specified launch template, with template name %s, does not exist.", *s.LaunchTemplateName)
}

// resolveCandidate fills in a candidate from its override and template, or
// returns the error code and message that make it unlaunchable.
func (f *AWS) resolveCandidate(c *candidate, o ec2types.FleetLaunchTemplateOverridesRequest, lifecycle string) (string, string) {
	lt := c.lt
	c.instanceType = string(o.InstanceType)
	if c.instanceType == "" {
		c.instanceType = string(lt.data.InstanceType)
	}
	c.override.InstanceType = ec2types.InstanceType(c.instanceType)
	if c.instanceType == "" {
		return "MissingParameter", "The request must contain the parameter InstanceType"
	}
	t, ok := f.lookupType(c.instanceType)
	if !ok {
		return "InvalidParameterValue", fmt.Sprintf("Invalid value '%s' for InstanceType.", c.instanceType)
	}
	// Subnet and zone.
	subnetID := deref(o.SubnetId)
	if subnetID == "" {
		for _, ni := range lt.data.NetworkInterfaces {
			if deref(ni.DeviceIndex) == 0 && ni.SubnetId != nil {
				subnetID = *ni.SubnetId
			}
		}
	}
	zone := deref(o.AvailabilityZone)
	if subnetID == "" {
		subnetID = f.defaultSubnet(zone)
		if subnetID == "" {
			return "VPCIdNotSpecified", "No default VPC for this user. GroupName is only supported for EC2-Classic and default VPC."
		}
	}
	s, ok := f.subnets[subnetID]
	if !ok {
		return "InvalidSubnetID.NotFound", fmt.Sprintf("The subnet ID '%s' does not exist", subnetID)
	}
	if zone != "" && zone != s.Zone {
		return "InvalidParameterValue", fmt.Sprintf("The subnet '%s' is not in the requested availability zone '%s'.", subnetID, zone)
	}
	c.subnet, c.zone = s, s.Zone
	c.override.SubnetId, c.override.AvailabilityZone = ptr(s.ID), ptr(s.Zone)
	if !f.offered(c.instanceType, c.zone) {
		return "Unsupported", fmt.Sprintf("Your requested instance type (%s) is not supported in your requested Availability Zone (%s). Please retry your request by not specifying an Availability Zone or choosing %s.", c.instanceType, c.zone, f.zonesOffering(c.instanceType, c.zone))
	}
	// Image.
	imageID := deref(o.ImageId)
	if imageID == "" {
		imageID = deref(lt.data.ImageId)
	}
	if imageID == "" {
		return "MissingParameter", "The request must contain the parameter ImageId"
	}
	c.override.ImageId = ptr(imageID)
	img, ok := f.images[imageID]
	if !ok || img.State != "available" {
		return "InvalidAMIID.NotFound", fmt.Sprintf("The image id '[%s]' does not exist", imageID)
	}
	if img.Architecture != ec2Arch(t.it) {
		return "InvalidParameterValue", fmt.Sprintf("The architecture '%s' of the specified instance type does not match the architecture '%s' of the specified AMI. Specify an instance type and an AMI that have matching architectures, and try again. You can use 'describe-instance-types' or 'describe-images' to discover the architecture of the instance type or AMI.", ec2Arch(t.it), img.Architecture)
	}
	c.img = img
	// Security groups.
	c.groups = lt.securityGroupIDs()
	for _, g := range c.groups {
		sg, ok := f.securityGroups[g]
		if !ok {
			return "InvalidGroup.NotFound", fmt.Sprintf("The security group '%s' does not exist", g)
		}
		if sg.VPCID != s.VPCID {
			return "InvalidParameter", fmt.Sprintf("Security group %s and subnet %s belong to different networks.", g, s.ID)
		}
	}
	// Instance profile and PassRole.
	if name := lt.profileName(); name != "" {
		if code, msg := f.passRoleError(name); code != "" {
			return code, msg
		}
	}
	// Capacity reservation targeted by the template.
	if crs := lt.data.CapacityReservationSpecification; crs != nil && crs.CapacityReservationTarget != nil && crs.CapacityReservationTarget.CapacityReservationId != nil {
		id := *crs.CapacityReservationTarget.CapacityReservationId
		cr, ok := f.reservations[id]
		if !ok {
			return "InvalidCapacityReservationId.NotFound", fmt.Sprintf("The capacity reservation ID '%s' does not exist", id)
		}
		if cr.InstanceType != c.instanceType || cr.Zone != c.zone {
			return "InvalidParameterCombination", fmt.Sprintf("The instance type and Availability Zone of capacity reservation %s do not match the request.", id)
		}
		c.reservation = cr
	}
	// Price and ordering keys.
	if lifecycle == CapacityTypeSpot {
		price, _ := f.spotPrice(c.instanceType, c.zone)
		if price <= 0 {
			return "Unsupported", fmt.Sprintf("The requested instance type (%s) is not supported for Spot in %s.", c.instanceType, c.zone)
		}
		c.price = price
		c.tie = f.seededHash("fleet-tie", c.instanceType, c.zone)
	} else {
		c.price = f.onDemandPrice(c.instanceType)
	}
	c.priority = 1e18
	if o.Priority != nil {
		c.priority = *o.Priority
	}
	return "", ""
}

// defaultSubnet picks the subnet with the most free addresses in zone (any
// zone when empty), as EC2 picks one when a request names none.
func (f *AWS) defaultSubnet(zone string) string {
	best, bestIPs := "", -1
	for _, id := range sortedKeys(f.subnets) {
		s := f.subnets[id]
		if (zone == "" || s.Zone == zone) && s.AvailableIPs > bestIPs {
			best, bestIPs = id, s.AvailableIPs
		}
	}
	return best
}

func (f *AWS) zonesOffering(instanceType, except string) string {
	var zs []string
	for _, z := range f.zones {
		if z.name != except && f.offered(instanceType, z.name) {
			zs = append(zs, z.name)
		}
	}
	return strings.Join(zs, ", ")
}

// poolRoom returns how many of want instances the candidate's pool can take
// now, or 0 and the error the real API reports.
func (f *AWS) poolRoom(c *candidate, lifecycle string, want int, now time.Time) (int, string, string) {
	if c.subnet.AvailableIPs <= 0 {
		return 0, "InsufficientFreeAddressesInSubnet", fmt.Sprintf("There are not enough free addresses in subnet '%s' to satisfy the requested number of instances.", c.subnet.ID)
	}
	n := min(want, c.subnet.AvailableIPs)
	if c.reservation != nil {
		if c.reservation.state(now) != "active" || c.reservation.Available <= 0 {
			return 0, "ReservationCapacityExceeded", "The requested reservation does not have sufficient compatible and available capacity for this request."
		}
		return min(n, c.reservation.Available), "", ""
	}
	k := poolKey{c.instanceType, c.zone, lifecycle}
	ice := func() (int, string, string) {
		if lifecycle == CapacityTypeSpot {
			return 0, "InsufficientInstanceCapacity", "There is no Spot capacity available that matches your request."
		}
		return 0, "InsufficientInstanceCapacity", fmt.Sprintf("We currently do not have sufficient %s capacity in the Availability Zone you requested (%s). Our system will be working on provisioning additional capacity. You can currently get %s capacity by not specifying an Availability Zone in your request or choosing %s.", c.instanceType, c.zone, c.instanceType, f.zonesOffering(c.instanceType, c.zone))
	}
	for _, r := range f.iceRules {
		if r.matches(k, now) {
			return ice()
		}
	}
	if left, limited := f.capacity[k]; limited {
		if left <= 0 {
			return ice()
		}
		n = min(n, left)
	}
	return n, "", ""
}

// launch creates one instance in the candidate's pool.
func (f *AWS) launch(c *candidate, lifecycle, reservationID string, fleetTags map[string]string, now time.Time) *instance {
	ip := c.subnet.allocateIP()
	a := ip.As4()
	domain := "ec2.internal"
	if f.opts.Region != "us-east-1" {
		domain = f.opts.Region + ".compute.internal"
	}
	tags := map[string]string{}
	for _, spec := range c.lt.data.TagSpecifications {
		if spec.ResourceType == ec2types.ResourceTypeInstance {
			for _, t := range spec.Tags {
				tags[deref(t.Key)] = deref(t.Value)
			}
		}
	}
	for k, v := range fleetTags {
		tags[k] = v
	}
	t, _ := f.lookupType(c.instanceType)
	inst := &instance{
		seq: f.nextSeq(), id: "i-" + f.hex(17), instanceType: c.instanceType, zone: c.zone,
		subnetID: c.subnet.ID, vpcID: c.subnet.VPCID, imageID: c.img.ID, arch: ec2Arch(t.it),
		capacityType: lifecycle, launchReservation: reservationID,
		launchTemplateID: c.lt.id, ltName: c.lt.name, launchData: &c.lt.data, profileName: c.lt.profileName(),
		privateIP: ip.String(), dnsName: fmt.Sprintf("ip-%d-%d-%d-%d.%s", a[0], a[1], a[2], a[3], domain),
		eniID: "eni-" + f.hex(17), securityGroups: append([]string(nil), c.groups...), tags: tags,
		windows: c.img.Windows, state: StatePending, launchTime: now, runningAt: now.Add(f.opts.BootDelay),
		pool: poolKey{c.instanceType, c.zone, lifecycle},
	}
	if lifecycle == CapacityTypeSpot {
		inst.spotRequestID = "sir-" + f.hex(8)
	}
	f.place(inst, c.lt.data.Placement)
	if c.reservation != nil {
		c.reservation.Available--
		inst.capacityReservationID = c.reservation.ID
	} else if left, limited := f.capacity[inst.pool]; limited {
		f.capacity[inst.pool] = left - 1
		inst.poolLimited = true
	}
	f.instances[inst.id] = inst
	f.order = append(f.order, inst)
	f.due = time.Time{}
	f.deliver([]stateEvent{{now, inst.seq, inst.id, StatePending}})
	return inst
}

func errorCode(err error) string {
	if ae, ok := asAPIError(err); ok {
		return ae.ErrorCode()
	}
	return "InternalError"
}

func errorMessage(err error) string {
	if ae, ok := asAPIError(err); ok {
		return ae.ErrorMessage()
	}
	return err.Error()
}

// RunInstances implements sdk.EC2. The provider uses it only with DryRun set,
// as an authorization probe: the answer is DryRunOperation when the launch
// would be authorized, UnauthorizedOperation when the action is denied or the
// instance profile's role may not be passed, and the launch's validation
// error otherwise (unknown launch template, profile or subnet, no subnet
// without a default VPC). Without DryRun it launches MinCount..MaxCount
// on-demand instances like a one-pool fleet.
func (f *AWS) RunInstances(_ context.Context, in *ec2.RunInstancesInput, _ ...func(*ec2.Options)) (*ec2.RunInstancesOutput, error) {
	const api = "RunInstances"
	unlock, err := f.lock(api, in)
	defer unlock()
	if err != nil {
		return nil, err
	}
	if deref(in.MinCount) < 1 || deref(in.MaxCount) < deref(in.MinCount) {
		return nil, ec2Error(api, "InvalidParameterValue", "Invalid value for MinCount/MaxCount.")
	}
	lt := &launchTemplate{}
	if s := in.LaunchTemplate; s != nil {
		found, err := f.fleetLaunchTemplate(api, &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateId: s.LaunchTemplateId, LaunchTemplateName: s.LaunchTemplateName})
		if err != nil {
			return nil, err
		}
		copied := *found
		copied.data = clone(found.data)
		lt = &copied
	}
	// Request fields override the template's.
	if in.IamInstanceProfile != nil {
		lt.data.IamInstanceProfile = &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Arn: in.IamInstanceProfile.Arn, Name: in.IamInstanceProfile.Name}
	}
	if in.ImageId != nil {
		lt.data.ImageId = in.ImageId
	}
	if in.InstanceType != "" {
		lt.data.InstanceType = in.InstanceType
	}
	if len(in.SecurityGroupIds) > 0 {
		lt.data.SecurityGroupIds = in.SecurityGroupIds
		lt.data.NetworkInterfaces = nil
	}
	if name := lt.profileName(); name != "" {
		if code, msg := f.passRoleError(name); code != "" {
			return nil, ec2Error(api, code, "%s", msg)
		}
	}
	subnetID := deref(in.SubnetId)
	for _, ni := range in.NetworkInterfaces {
		if deref(ni.DeviceIndex) == 0 && ni.SubnetId != nil {
			subnetID = *ni.SubnetId
		}
	}
	if subnetID == "" {
		for _, ni := range lt.data.NetworkInterfaces {
			if deref(ni.DeviceIndex) == 0 && ni.SubnetId != nil {
				subnetID = *ni.SubnetId
			}
		}
	}
	if subnetID == "" {
		return nil, ec2Error(api, "VPCIdNotSpecified", "No default VPC for this user. GroupName is only supported for EC2-Classic and default VPC.")
	}
	if _, ok := f.subnets[subnetID]; !ok {
		return nil, ec2Error(api, "InvalidSubnetID.NotFound", "The subnet ID '%s' does not exist", subnetID)
	}
	if err := f.dryRun(api, in.DryRun); err != nil {
		return nil, err
	}
	if lt.id == "" {
		lt.id, lt.name = "", ""
	}
	c := &candidate{lt: lt}
	if code, msg := f.resolveCandidate(c, ec2types.FleetLaunchTemplateOverridesRequest{SubnetId: ptr(subnetID), InstanceType: lt.data.InstanceType, ImageId: lt.data.ImageId}, CapacityTypeOnDemand); code != "" {
		return nil, ec2Error(api, code, "%s", msg)
	}
	now := f.now()
	n, code, msg := f.poolRoom(c, CapacityTypeOnDemand, int(deref(in.MaxCount)), now)
	if n < int(deref(in.MinCount)) {
		if code == "" {
			code, msg = "InsufficientInstanceCapacity", "Insufficient capacity."
		}
		return nil, ec2Error(api, code, "%s", msg)
	}
	reservationID := "r-" + f.hex(17)
	out := &ec2.RunInstancesOutput{ReservationId: ptr(reservationID), OwnerId: ptr(f.opts.AccountID)}
	tags := tagsFor(in.TagSpecifications, "instance")
	for range n {
		inst := f.launch(c, CapacityTypeOnDemand, reservationID, tags, now)
		out.Instances = append(out.Instances, f.instanceOutput(inst))
	}
	return out, nil
}
