package fake

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// Instance states and their EC2 codes.
const (
	StatePending      = "pending"
	StateRunning      = "running"
	StateShuttingDown = "shutting-down"
	StateTerminated   = "terminated"
)

var stateCodes = map[string]int32{StatePending: 0, StateRunning: 16, StateShuttingDown: 32, StateTerminated: 48, "stopping": 64, "stopped": 80}

type instance struct {
	seq                      int64
	id, instanceType, zone   string
	subnetID, vpcID, imageID string
	arch, capacityType       string
	launchReservation        string
	capacityReservationID    string
	launchTemplateID, ltName string
	// launchData is what the instance was launched with (its launch
	// template's content), kept as EC2 keeps an instance's configuration
	// when the template is deleted later. Shared, never modified.
	launchData                   *ec2types.RequestLaunchTemplateData
	profileName                  string
	privateIP, dnsName, eniID    string
	spotRequestID                string
	securityGroups               []string
	tags                         map[string]string
	windows                      bool
	state                        string
	launchTime, runningAt        time.Time
	terminateAt, terminatedAt    time.Time
	goneAt                       time.Time
	stateReasonCode, stateReason string
	transitionReason             string
	pool                         poolKey
	poolLimited                  bool
	// placementGroupID and partition are the placement group the instance
	// was launched into (from its launch template), if any.
	placementGroupID string
	partition        int32
	// impaired holds, by status check (StatusCheckInstance,
	// StatusCheckSystem), when the check started failing.
	impaired map[string]time.Time
}

type stateEvent struct {
	at    time.Time
	seq   int64
	id    string
	state string
}

// InstanceInfo is a snapshot of one instance, for tests and the simulator.
type InstanceInfo struct {
	ID, InstanceType, Zone, SubnetID, ImageID string
	// CapacityType is spot or on-demand.
	CapacityType          string
	State                 string
	LaunchTime            time.Time
	PrivateDNSName        string
	PrivateIP             string
	SecurityGroupIDs      []string
	InstanceProfile       string
	Role                  string
	LaunchTemplateName    string
	CapacityReservationID string
	Tags                  map[string]string
	// UserData is the launch template's user data, base64 as sent.
	UserData string
	// LaunchTemplateData is a copy of the launch template content the
	// instance was launched with; it outlives the template.
	LaunchTemplateData *ec2types.RequestLaunchTemplateData
	// PlacementGroupID and PlacementPartition are the placement group (and
	// partition) the instance runs in, if any.
	PlacementGroupID   string
	PlacementPartition int32
	// TerminatesAt is when EC2 will end the instance by itself (a spot
	// interruption or a scheduled retirement); zero when it will not.
	TerminatesAt time.Time
}

// Instance returns a snapshot of an instance that DescribeInstances would
// still show.
func (f *AWS) Instance(id string) (InstanceInfo, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.advance()
	inst, ok := f.instances[id]
	if !ok {
		return InstanceInfo{}, false
	}
	info := InstanceInfo{
		ID: inst.id, InstanceType: inst.instanceType, Zone: inst.zone, SubnetID: inst.subnetID, ImageID: inst.imageID,
		CapacityType: inst.capacityType, State: inst.state, LaunchTime: inst.launchTime, PrivateDNSName: inst.dnsName,
		PrivateIP: inst.privateIP, SecurityGroupIDs: append([]string(nil), inst.securityGroups...),
		InstanceProfile: inst.profileName, LaunchTemplateName: inst.ltName, CapacityReservationID: inst.capacityReservationID,
		Tags: copyMap(inst.tags), PlacementGroupID: inst.placementGroupID, PlacementPartition: inst.partition,
		TerminatesAt: inst.terminateAt,
	}
	if p, ok := f.profiles[inst.profileName]; ok && len(p.roles) > 0 {
		info.Role = p.roles[0]
	}
	if d := inst.launchData; d != nil {
		info.UserData = deref(d.UserData)
		info.LaunchTemplateData = cloneLaunchData(d)
	}
	return info, true
}

// cloneLaunchData returns a deep copy of launch template content. The user
// data, which is most of it and may be 20 KB of base64, is not run through
// the JSON round trip: strings cannot be changed, so the copy shares it.
// The simulated kubelets ask for their instance on every pass, and the
// round trip made each ask cost in proportion to the user data.
func cloneLaunchData(d *ec2types.RequestLaunchTemplateData) *ec2types.RequestLaunchTemplateData {
	rest := *d
	rest.UserData = nil
	c := clone(rest)
	if d.UserData != nil {
		c.UserData = ptr(*d.UserData)
	}
	return &c
}

// InstanceIDs returns the IDs of every instance DescribeInstances would show,
// in launch order.
func (f *AWS) InstanceIDs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.advance()
	var out []string
	for _, inst := range f.orderedInstances() {
		out = append(out, inst.id)
	}
	return out
}

// ScheduleTermination makes an instance begin shutting down at t (as an
// interruption or a scheduled retirement would).
func (f *AWS) ScheduleTermination(id string, at time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.advance()
	inst, ok := f.instances[id]
	if !ok {
		return fmt.Errorf("no instance %s", id)
	}
	f.scheduleTermination(inst, at, "Server.ScheduledStop", "Server.ScheduledStop: Stopped due to scheduled retirement")
	f.advance()
	return nil
}

func (f *AWS) scheduleTermination(inst *instance, at time.Time, code, reason string) {
	if inst.state != StatePending && inst.state != StateRunning {
		return
	}
	if inst.terminateAt.IsZero() || at.Before(inst.terminateAt) {
		inst.terminateAt = at
		inst.stateReasonCode, inst.stateReason = code, reason
		f.due = time.Time{}
	}
}

// orderedInstances returns the instances in launch order. The slice is
// the fake's own: it is valid until the next call, and callers must not
// change it. Launches append, so keeping the order costs no sorting.
func (f *AWS) orderedInstances() []*instance {
	live := f.order[:0]
	for _, inst := range f.order {
		if f.instances[inst.id] == inst {
			live = append(live, inst)
		}
	}
	clear(f.order[len(live):])
	f.order = live
	return live
}

// advance applies every state transition due by the clock's now, in time
// order, and delivers state-change events to Options.EventQueue. The caller
// holds f.mu.
func (f *AWS) advance() {
	now := f.now()
	if !f.due.IsZero() && now.Before(f.due) {
		return
	}
	var events []stateEvent
	// The next time anything is due is found in the same pass; with
	// nothing scheduled it is never, not "look again".
	due := never
	earlier := func(t time.Time) {
		if !t.IsZero() && t.Before(due) {
			due = t
		}
	}
	for _, inst := range f.orderedInstances() {
		for {
			switch {
			case inst.state == StatePending && !now.Before(inst.runningAt) && (inst.terminateAt.IsZero() || inst.runningAt.Before(inst.terminateAt) || inst.runningAt.Equal(inst.terminateAt)):
				inst.state = StateRunning
				events = append(events, stateEvent{inst.runningAt, inst.seq, inst.id, StateRunning})
				continue
			case (inst.state == StatePending || inst.state == StateRunning) && !inst.terminateAt.IsZero() && !now.Before(inst.terminateAt):
				f.beginShutdown(inst, inst.terminateAt)
				events = append(events, stateEvent{inst.terminateAt, inst.seq, inst.id, StateShuttingDown})
				continue
			case inst.state == StateShuttingDown && !now.Before(inst.terminatedAt):
				f.finishTermination(inst)
				events = append(events, stateEvent{inst.terminatedAt, inst.seq, inst.id, StateTerminated})
				continue
			case inst.state == StateTerminated && !now.Before(inst.goneAt):
				delete(f.instances, inst.id)
			}
			break
		}
		switch inst.state {
		case StatePending:
			earlier(inst.runningAt)
			earlier(inst.terminateAt)
		case StateRunning:
			earlier(inst.terminateAt)
		case StateShuttingDown:
			earlier(inst.terminatedAt)
		case StateTerminated:
			if _, kept := f.instances[inst.id]; kept {
				earlier(inst.goneAt)
			}
		}
	}
	sort.SliceStable(events, func(i, j int) bool {
		if !events[i].at.Equal(events[j].at) {
			return events[i].at.Before(events[j].at)
		}
		return events[i].seq < events[j].seq
	})
	f.deliver(events)
	f.due = due
}

// never is the due time of a world in which nothing is scheduled.
var never = time.Unix(1<<62, 0)

func (f *AWS) deliver(events []stateEvent) {
	if f.opts.EventQueue == "" {
		return
	}
	q, ok := f.queues[f.opts.EventQueue]
	if !ok {
		return
	}
	for _, e := range events {
		m := f.enqueue(q, f.stateChangeBody(e.id, e.state, e.at), 0)
		m.sent = e.at
		m.visibleAt = e.at
	}
	f.expire(q)
}

func (f *AWS) beginShutdown(inst *instance, at time.Time) {
	f.due = time.Time{}
	inst.state = StateShuttingDown
	inst.terminateAt = at
	inst.terminatedAt = at.Add(f.opts.ShutdownDelay)
	if inst.stateReasonCode == "" {
		inst.stateReasonCode = "Client.UserInitiatedShutdown"
		inst.stateReason = "Client.UserInitiatedShutdown: User initiated shutdown"
	}
	inst.transitionReason = fmt.Sprintf("User initiated (%s)", at.UTC().Format("2006-01-02 15:04:05 MST"))
}

// finishTermination releases what the instance held: its address, its
// capacity-pool slot and its capacity-reservation slot.
func (f *AWS) finishTermination(inst *instance) {
	inst.state = StateTerminated
	inst.goneAt = inst.terminatedAt.Add(f.opts.TerminatedRetention)
	if s, ok := f.subnets[inst.subnetID]; ok {
		s.AvailableIPs++
	}
	if inst.poolLimited {
		if n, ok := f.capacity[inst.pool]; ok {
			f.capacity[inst.pool] = n + 1
		}
	}
	if c, ok := f.reservations[inst.capacityReservationID]; ok {
		c.Available = min(c.Available+1, c.Total)
	}
}

func (f *AWS) instanceOutput(inst *instance) ec2types.Instance {
	groups := make([]ec2types.GroupIdentifier, 0, len(inst.securityGroups))
	for _, id := range inst.securityGroups {
		g := ec2types.GroupIdentifier{GroupId: ptr(id)}
		if sg, ok := f.securityGroups[id]; ok {
			g.GroupName = ptr(sg.Name)
		}
		groups = append(groups, g)
	}
	out := ec2types.Instance{
		InstanceId:            ptr(inst.id),
		InstanceType:          ec2types.InstanceType(inst.instanceType),
		ImageId:               ptr(inst.imageID),
		Architecture:          ec2types.ArchitectureValues(inst.arch),
		State:                 &ec2types.InstanceState{Name: ec2types.InstanceStateName(inst.state), Code: ptr(stateCodes[inst.state])},
		LaunchTime:            ptr(inst.launchTime),
		Placement:             f.instancePlacement(inst),
		PrivateDnsName:        ptr(inst.dnsName),
		PrivateIpAddress:      ptr(inst.privateIP),
		SubnetId:              ptr(inst.subnetID),
		VpcId:                 ptr(inst.vpcID),
		SecurityGroups:        groups,
		Tags:                  mapToTags(inst.tags),
		RootDeviceName:        ptr("/dev/xvda"),
		RootDeviceType:        ec2types.DeviceTypeEbs,
		VirtualizationType:    ec2types.VirtualizationTypeHvm,
		Hypervisor:            ec2types.HypervisorTypeXen,
		EnaSupport:            ptr(true),
		EbsOptimized:          ptr(true),
		AmiLaunchIndex:        ptr(int32(0)),
		Monitoring:            &ec2types.Monitoring{State: ec2types.MonitoringStateDisabled},
		StateTransitionReason: ptr(inst.transitionReason),
		NetworkInterfaces: []ec2types.InstanceNetworkInterface{{
			NetworkInterfaceId: ptr(inst.eniID), SubnetId: ptr(inst.subnetID), VpcId: ptr(inst.vpcID),
			PrivateIpAddress: ptr(inst.privateIP), PrivateDnsName: ptr(inst.dnsName), Groups: groups,
			Status: ec2types.NetworkInterfaceStatusInUse, OwnerId: ptr(f.opts.AccountID),
		}},
	}
	if inst.state == StateTerminated {
		out.NetworkInterfaces = nil
		out.PrivateIpAddress = nil
		out.PrivateDnsName = ptr("")
	}
	if inst.capacityType == "spot" {
		out.InstanceLifecycle = ec2types.InstanceLifecycleTypeSpot
		out.SpotInstanceRequestId = ptr(inst.spotRequestID)
	}
	if inst.capacityReservationID != "" {
		out.CapacityReservationId = ptr(inst.capacityReservationID)
	}
	// The preference the instance launched with, as EC2 reports it: the
	// launch template's, else open.
	out.CapacityReservationSpecification = &ec2types.CapacityReservationSpecificationResponse{CapacityReservationPreference: ec2types.CapacityReservationPreferenceOpen}
	if d := inst.launchData; d != nil && d.CapacityReservationSpecification != nil {
		crs := d.CapacityReservationSpecification
		if crs.CapacityReservationPreference != "" {
			out.CapacityReservationSpecification.CapacityReservationPreference = crs.CapacityReservationPreference
		}
		if t := crs.CapacityReservationTarget; t != nil && t.CapacityReservationId != nil {
			out.CapacityReservationSpecification.CapacityReservationTarget = &ec2types.CapacityReservationTargetResponse{CapacityReservationId: ptr(*t.CapacityReservationId)}
		}
	}
	if p, ok := f.profiles[inst.profileName]; ok {
		out.IamInstanceProfile = &ec2types.IamInstanceProfile{Arn: ptr(p.arn), Id: ptr(p.id)}
	}
	if d := inst.launchData; d != nil && d.MetadataOptions != nil {
		m := d.MetadataOptions
		out.MetadataOptions = &ec2types.InstanceMetadataOptionsResponse{
			HttpEndpoint:            ec2types.InstanceMetadataEndpointState(m.HttpEndpoint),
			HttpProtocolIpv6:        ec2types.InstanceMetadataProtocolState(m.HttpProtocolIpv6),
			HttpPutResponseHopLimit: m.HttpPutResponseHopLimit,
			HttpTokens:              ec2types.HttpTokensState(m.HttpTokens),
			InstanceMetadataTags:    ec2types.InstanceMetadataTagsState(m.InstanceMetadataTags),
			State:                   ec2types.InstanceMetadataOptionsStateApplied,
		}
	}
	if inst.windows {
		out.Platform = ec2types.PlatformValuesWindows
	}
	if inst.stateReasonCode != "" && (inst.state == StateShuttingDown || inst.state == StateTerminated) {
		out.StateReason = &ec2types.StateReason{Code: ptr(inst.stateReasonCode), Message: ptr(inst.stateReason)}
	}
	return out
}

func checkInstanceIDs(api string, ids []string, exists func(string) bool) error {
	var missing []string
	for _, id := range ids {
		if !strings.HasPrefix(id, "i-") {
			return ec2Error(api, "InvalidInstanceID.Malformed", "Invalid id: \"%s\"", id)
		}
		if !exists(id) {
			missing = append(missing, id)
		}
	}
	switch len(missing) {
	case 0:
		return nil
	case 1:
		return ec2Error(api, "InvalidInstanceID.NotFound", "The instance ID '%s' does not exist", missing[0])
	}
	return ec2Error(api, "InvalidInstanceID.NotFound", "The instance IDs '%s' do not exist", joinIDs(missing))
}

// DescribeInstances implements sdk.EC2. Instances are grouped into the
// reservations they were launched in and listed in launch order; terminated
// instances remain visible for Options.TerminatedRetention.
func (f *AWS) DescribeInstances(_ context.Context, in *ec2.DescribeInstancesInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error) {
	const api = "DescribeInstances"
	unlock, err := f.lock(api, in)
	defer unlock()
	if err != nil {
		return nil, err
	}
	if in == nil {
		in = &ec2.DescribeInstancesInput{}
	}
	if err := f.dryRun(api, in.DryRun); err != nil {
		return nil, err
	}
	if len(in.InstanceIds) > 0 && in.MaxResults != nil {
		return nil, ec2Error(api, "InvalidParameterCombination", "The parameter instancesSet cannot be used with the parameter maxResults")
	}
	if err := checkFilters(api, in.Filters, "instance-id", "instance-state-name", "instance-state-code", "instance-type",
		"availability-zone", "subnet-id", "vpc-id", "image-id", "private-dns-name", "instance-lifecycle", "iam-instance-profile.arn"); err != nil {
		return nil, err
	}
	if err := checkInstanceIDs(api, in.InstanceIds, func(id string) bool { _, ok := f.instances[id]; return ok }); err != nil {
		return nil, err
	}
	// Asked for by ID (the provider's usual question), only those are
	// looked at, still in launch order.
	var candidates []*instance
	if len(in.InstanceIds) == 0 {
		candidates = f.orderedInstances()
	} else {
		candidates = make([]*instance, 0, len(in.InstanceIds))
		for _, id := range in.InstanceIds {
			if inst, ok := f.instances[id]; ok && !slices.Contains(candidates, inst) {
				candidates = append(candidates, inst)
			}
		}
		slices.SortFunc(candidates, func(a, b *instance) int { return cmp.Compare(a.seq, b.seq) })
	}
	var selected []*instance
	for _, inst := range candidates {
		attr := func(n string) []string {
			switch n {
			case "instance-id":
				return one(inst.id)
			case "instance-state-name":
				return one(inst.state)
			case "instance-state-code":
				return one(strconv.Itoa(int(stateCodes[inst.state])))
			case "instance-type":
				return one(inst.instanceType)
			case "availability-zone":
				return one(inst.zone)
			case "subnet-id":
				return one(inst.subnetID)
			case "vpc-id":
				return one(inst.vpcID)
			case "image-id":
				return one(inst.imageID)
			case "private-dns-name":
				return one(inst.dnsName)
			case "instance-lifecycle":
				if inst.capacityType == "spot" {
					return one("spot")
				}
			case "iam-instance-profile.arn":
				if p, ok := f.profiles[inst.profileName]; ok {
					return one(p.arn)
				}
			}
			return nil
		}
		if matchFilters(in.Filters, inst.tags, attr) {
			selected = append(selected, inst)
		}
	}
	page, next, err := paginate(api, selected, in.NextToken, in.MaxResults, pageSpec{min: 5, max: 1000})
	if err != nil {
		return nil, err
	}
	out := &ec2.DescribeInstancesOutput{NextToken: next}
	index := map[string]int{}
	for _, inst := range page {
		i, ok := index[inst.launchReservation]
		if !ok {
			i = len(out.Reservations)
			index[inst.launchReservation] = i
			out.Reservations = append(out.Reservations, ec2types.Reservation{ReservationId: ptr(inst.launchReservation), OwnerId: ptr(f.opts.AccountID)})
		}
		out.Reservations[i].Instances = append(out.Reservations[i].Instances, f.instanceOutput(inst))
	}
	return out, nil
}

// TerminateInstances implements sdk.EC2. Instances go to shutting-down now and
// to terminated Options.ShutdownDelay later.
func (f *AWS) TerminateInstances(_ context.Context, in *ec2.TerminateInstancesInput, _ ...func(*ec2.Options)) (*ec2.TerminateInstancesOutput, error) {
	const api = "TerminateInstances"
	unlock, err := f.lock(api, in)
	defer unlock()
	if err != nil {
		return nil, err
	}
	if len(in.InstanceIds) == 0 {
		return nil, ec2Error(api, "MissingParameter", "The request must contain the parameter InstanceId")
	}
	if err := checkInstanceIDs(api, in.InstanceIds, func(id string) bool { _, ok := f.instances[id]; return ok }); err != nil {
		return nil, err
	}
	if err := f.dryRun(api, in.DryRun); err != nil {
		return nil, err
	}
	now := f.now()
	out := &ec2.TerminateInstancesOutput{}
	var events []stateEvent
	for _, id := range in.InstanceIds {
		inst := f.instances[id]
		prev := inst.state
		if prev == StatePending || prev == StateRunning {
			inst.stateReasonCode, inst.stateReason = "", ""
			f.beginShutdown(inst, now)
			events = append(events, stateEvent{now, inst.seq, inst.id, StateShuttingDown})
		}
		out.TerminatingInstances = append(out.TerminatingInstances, ec2types.InstanceStateChange{
			InstanceId:    ptr(id),
			PreviousState: &ec2types.InstanceState{Name: ec2types.InstanceStateName(prev), Code: ptr(stateCodes[prev])},
			CurrentState:  &ec2types.InstanceState{Name: ec2types.InstanceStateName(inst.state), Code: ptr(stateCodes[inst.state])},
		})
	}
	f.deliver(events)
	f.advance()
	return out, nil
}

// CreateTags implements sdk.EC2 for instances, launch templates, subnets,
// security groups and images.
func (f *AWS) CreateTags(_ context.Context, in *ec2.CreateTagsInput, _ ...func(*ec2.Options)) (*ec2.CreateTagsOutput, error) {
	const api = "CreateTags"
	unlock, err := f.lock(api, in)
	defer unlock()
	if err != nil {
		return nil, err
	}
	if len(in.Resources) == 0 {
		return nil, ec2Error(api, "MissingParameter", "The request must contain the parameter ResourceId")
	}
	targets := make([]map[string]string, 0, len(in.Resources))
	for _, id := range in.Resources {
		var tags map[string]string
		switch {
		case strings.HasPrefix(id, "i-"):
			if inst, ok := f.instances[id]; ok {
				tags = inst.tags
			} else {
				return nil, ec2Error(api, "InvalidInstanceID.NotFound", "The instance ID '%s' does not exist", id)
			}
		case strings.HasPrefix(id, "lt-"):
			if lt, ok := f.launchTemplates[id]; ok {
				tags = lt.tags
			}
		case strings.HasPrefix(id, "subnet-"):
			if s, ok := f.subnets[id]; ok {
				tags = s.Tags
			}
		case strings.HasPrefix(id, "sg-"):
			if g, ok := f.securityGroups[id]; ok {
				tags = g.Tags
			}
		case strings.HasPrefix(id, "ami-"):
			if img, ok := f.images[id]; ok {
				tags = img.Tags
			}
		}
		if tags == nil {
			return nil, ec2Error(api, "InvalidID", "The ID '%s' is not valid", id)
		}
		targets = append(targets, tags)
	}
	if err := f.dryRun(api, in.DryRun); err != nil {
		return nil, err
	}
	for _, tags := range targets {
		for _, t := range in.Tags {
			tags[deref(t.Key)] = deref(t.Value)
		}
	}
	return &ec2.CreateTagsOutput{}, nil
}

// RunningInstance is an instance that was already running when the
// account was built, as a snapshot of a cluster records one: the
// simulator adds one per NodeClaim of the snapshot, so that the controllers
// find the instances of the nodes they manage.
type RunningInstance struct {
	// ID is the instance ID, i- followed by 8 or 17 hex digits.
	ID           string
	InstanceType string
	Zone         string
	// CapacityType is spot or on-demand (default).
	CapacityType string
	ImageID      string
	// SubnetID defaults to the zone's subnet with the most free addresses.
	SubnetID       string
	SecurityGroups []string
	// PrivateDNSName is the node's name; PrivateIP defaults to one of the
	// subnet's.
	PrivateDNSName string
	PrivateIP      string
	LaunchTime     time.Time
	Tags           map[string]string
}

// instanceID is the shape of an EC2 instance ID.
var instanceID = regexp.MustCompile(`^i-([0-9a-f]{8}|[0-9a-f]{17})$`)

// AddRunningInstance adds an instance that is running from the start: no
// boot, no launch template, in a subnet of its zone when the account has
// one. It is billed, described, tagged, interrupted and terminated like any
// other.
func (f *AWS) AddRunningInstance(ri RunningInstance) (InstanceInfo, error) {
	f.mu.Lock()
	if !instanceID.MatchString(ri.ID) {
		f.mu.Unlock()
		return InstanceInfo{}, fmt.Errorf("%q is not an instance ID (i- and 8 or 17 hex digits)", ri.ID)
	}
	if _, dup := f.instances[ri.ID]; dup {
		f.mu.Unlock()
		return InstanceInfo{}, fmt.Errorf("instance %s exists already", ri.ID)
	}
	t, ok := f.lookupType(ri.InstanceType)
	if !ok {
		f.mu.Unlock()
		return InstanceInfo{}, fmt.Errorf("instance %s: instance type %q is not in the account's catalog", ri.ID, ri.InstanceType)
	}
	if !f.hasZone(ri.Zone) {
		f.mu.Unlock()
		return InstanceInfo{}, fmt.Errorf("instance %s: zone %q is not one of the account's zones %v", ri.ID, ri.Zone, f.opts.Zones)
	}
	capacityType := ri.CapacityType
	switch capacityType {
	case "":
		capacityType = CapacityTypeOnDemand
	case CapacityTypeOnDemand, CapacityTypeSpot:
	default:
		f.mu.Unlock()
		return InstanceInfo{}, fmt.Errorf("instance %s: capacity type %q is neither %s nor %s", ri.ID, ri.CapacityType, CapacityTypeSpot, CapacityTypeOnDemand)
	}
	launched := ri.LaunchTime
	if launched.IsZero() || launched.After(f.now()) {
		launched = f.now()
	}
	inst := &instance{
		seq: f.nextSeq(), id: ri.ID, instanceType: ri.InstanceType, zone: ri.Zone, imageID: ri.ImageID,
		arch: ec2Arch(t.it), capacityType: capacityType, dnsName: ri.PrivateDNSName, privateIP: ri.PrivateIP,
		eniID: "eni-" + f.hex(17), tags: copyMap(ri.Tags), state: StateRunning, securityGroups: slices.Clone(ri.SecurityGroups),
		launchTime: launched, runningAt: launched, pool: poolKey{ri.InstanceType, ri.Zone, capacityType},
	}
	if inst.tags == nil {
		inst.tags = map[string]string{}
	}
	subnetID := ri.SubnetID
	if subnetID == "" {
		subnetID = f.defaultSubnet(ri.Zone)
	} else if s, ok := f.subnets[subnetID]; !ok || s.Zone != ri.Zone {
		f.mu.Unlock()
		return InstanceInfo{}, fmt.Errorf("instance %s: subnet %q is not a subnet of zone %s", ri.ID, subnetID, ri.Zone)
	}
	if s, ok := f.subnets[subnetID]; ok {
		id := subnetID
		inst.subnetID, inst.vpcID = id, s.VPCID
		if inst.privateIP == "" {
			inst.privateIP = s.allocateIP().String()
		}
	}
	if capacityType == CapacityTypeSpot {
		inst.spotRequestID = "sir-" + f.hex(8)
	}
	f.instances[inst.id] = inst
	f.order = append(f.order, inst)
	f.mu.Unlock()
	info, _ := f.Instance(inst.id)
	return info, nil
}
