package fake

import (
	"context"
	"encoding/base64"
	"fmt"
	"regexp"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// MaxUserDataBytes is EC2's limit on user data before base64 encoding.
const MaxUserDataBytes = 16384

var launchTemplateNameRE = regexp.MustCompile(`^[a-zA-Z0-9().\-/_]{3,128}$`)

type launchTemplate struct {
	id, name string
	created  time.Time
	tags     map[string]string
	data     ec2types.RequestLaunchTemplateData
}

// profileName is the instance profile the template names (by name or ARN).
func (lt *launchTemplate) profileName() string {
	if p := lt.data.IamInstanceProfile; p != nil {
		if p.Name != nil {
			return *p.Name
		}
		return profileNameFromARN(deref(p.Arn))
	}
	return ""
}

func (lt *launchTemplate) securityGroupIDs() []string {
	ids := append([]string(nil), lt.data.SecurityGroupIds...)
	for _, ni := range lt.data.NetworkInterfaces {
		if deref(ni.DeviceIndex) == 0 && deref(ni.NetworkCardIndex) == 0 {
			ids = append(ids, ni.Groups...)
		}
	}
	sort.Strings(ids)
	out := ids[:0]
	for i, id := range ids {
		if i == 0 || id != ids[i-1] {
			out = append(out, id)
		}
	}
	return out
}

// LaunchTemplateData returns a copy of what a launch template (by name or
// ID) was created with: user data (base64), AMI, block devices, metadata
// options, instance profile, security groups, tag specifications.
func (f *AWS) LaunchTemplateData(nameOrID string) (*ec2types.RequestLaunchTemplateData, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	lt := f.findLaunchTemplate(nameOrID, nameOrID)
	if lt == nil {
		return nil, false
	}
	d := clone(lt.data)
	return &d, true
}

// LaunchTemplateNames returns the names of all launch templates, sorted.
func (f *AWS) LaunchTemplateNames() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var names []string
	for _, lt := range f.launchTemplates {
		names = append(names, lt.name)
	}
	sort.Strings(names)
	return names
}

func (f *AWS) findLaunchTemplate(id, name string) *launchTemplate {
	if lt, ok := f.launchTemplates[id]; ok {
		return lt
	}
	for _, lt := range f.launchTemplates {
		if name != "" && lt.name == name {
			return lt
		}
	}
	return nil
}

func (f *AWS) launchTemplateOutput(lt *launchTemplate) *ec2types.LaunchTemplate {
	return &ec2types.LaunchTemplate{
		LaunchTemplateId: ptr(lt.id), LaunchTemplateName: ptr(lt.name), CreateTime: ptr(lt.created),
		CreatedBy:            ptr(f.opts.CallerARN),
		DefaultVersionNumber: ptr(int64(1)), LatestVersionNumber: ptr(int64(1)),
		Tags: mapToTags(lt.tags),
	}
}

// CreateLaunchTemplate implements sdk.EC2.
func (f *AWS) CreateLaunchTemplate(_ context.Context, in *ec2.CreateLaunchTemplateInput, _ ...func(*ec2.Options)) (*ec2.CreateLaunchTemplateOutput, error) {
	const api = "CreateLaunchTemplate"
	unlock, err := f.lock(api, in)
	defer unlock()
	if err != nil {
		return nil, err
	}
	name := deref(in.LaunchTemplateName)
	if name == "" {
		return nil, ec2Error(api, "MissingParameter", "The request must contain the parameter LaunchTemplateName")
	}
	if !launchTemplateNameRE.MatchString(name) {
		return nil, ec2Error(api, "InvalidLaunchTemplateName.MalformedException", "A launch template name must be between 3 and 128 characters, and may contain letters, numbers, and the following characters: - ( ) . / _.'")
	}
	if in.LaunchTemplateData == nil {
		return nil, ec2Error(api, "MissingParameter", "The request must contain the parameter LaunchTemplateData")
	}
	if ud := in.LaunchTemplateData.UserData; ud != nil {
		raw, err := base64.StdEncoding.DecodeString(*ud)
		if err != nil {
			return nil, ec2Error(api, "InvalidUserData.Malformed", "Invalid BASE64 encoding of user data.")
		}
		if len(raw) > MaxUserDataBytes {
			return nil, ec2Error(api, "InvalidParameterValue", "User data is limited to %d bytes", MaxUserDataBytes)
		}
	}
	if f.findLaunchTemplate("", name) != nil {
		return nil, ec2Error(api, "InvalidLaunchTemplateName.AlreadyExistsException", "Launch template name already in use.")
	}
	if err := f.dryRun(api, in.DryRun); err != nil {
		return nil, err
	}
	lt := &launchTemplate{
		id: "lt-" + f.hex(17), name: name, created: f.now(),
		tags: tagsFor(in.TagSpecifications, "launch-template"),
		data: clone(*in.LaunchTemplateData),
	}
	f.launchTemplates[lt.id] = lt
	return &ec2.CreateLaunchTemplateOutput{LaunchTemplate: f.launchTemplateOutput(lt)}, nil
}

// DescribeLaunchTemplates implements sdk.EC2.
func (f *AWS) DescribeLaunchTemplates(_ context.Context, in *ec2.DescribeLaunchTemplatesInput, _ ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplatesOutput, error) {
	const api = "DescribeLaunchTemplates"
	unlock, err := f.lock(api, in)
	defer unlock()
	if err != nil {
		return nil, err
	}
	if in == nil {
		in = &ec2.DescribeLaunchTemplatesInput{}
	}
	if err := f.dryRun(api, in.DryRun); err != nil {
		return nil, err
	}
	if err := checkFilters(api, in.Filters, "launch-template-name", "create-time"); err != nil {
		return nil, err
	}
	for _, id := range in.LaunchTemplateIds {
		if _, ok := f.launchTemplates[id]; !ok {
			return nil, ec2Error(api, "InvalidLaunchTemplateId.NotFound", "The specified launch template, with template ID %s, does not exist.", id)
		}
	}
	for _, n := range in.LaunchTemplateNames {
		if f.findLaunchTemplate("", n) == nil {
			return nil, ec2Error(api, "InvalidLaunchTemplateName.NotFoundException", "At least one of the launch templates specified in the request does not exist.")
		}
	}
	var all []*launchTemplate
	for _, lt := range f.launchTemplates {
		all = append(all, lt)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].name < all[j].name })
	var out []ec2types.LaunchTemplate
	for _, lt := range all {
		if len(in.LaunchTemplateIds) > 0 && !contains(in.LaunchTemplateIds, lt.id) {
			continue
		}
		if len(in.LaunchTemplateNames) > 0 && !contains(in.LaunchTemplateNames, lt.name) {
			continue
		}
		attr := func(n string) []string {
			switch n {
			case "launch-template-name":
				return one(lt.name)
			case "create-time":
				return one(lt.created.Format(ec2Time))
			}
			return nil
		}
		if matchFilters(in.Filters, lt.tags, attr) {
			out = append(out, *f.launchTemplateOutput(lt))
		}
	}
	page, next, err := paginate(api, out, in.NextToken, in.MaxResults, pageSpec{min: 1, max: 200})
	if err != nil {
		return nil, err
	}
	return &ec2.DescribeLaunchTemplatesOutput{LaunchTemplates: page, NextToken: next}, nil
}

// DeleteLaunchTemplate implements sdk.EC2.
func (f *AWS) DeleteLaunchTemplate(_ context.Context, in *ec2.DeleteLaunchTemplateInput, _ ...func(*ec2.Options)) (*ec2.DeleteLaunchTemplateOutput, error) {
	const api = "DeleteLaunchTemplate"
	unlock, err := f.lock(api, in)
	defer unlock()
	if err != nil {
		return nil, err
	}
	id, name := deref(in.LaunchTemplateId), deref(in.LaunchTemplateName)
	if id == "" && name == "" {
		return nil, ec2Error(api, "MissingParameter", "The request must contain the parameter LaunchTemplateName or LaunchTemplateId")
	}
	var lt *launchTemplate
	if id != "" {
		lt = f.launchTemplates[id]
		if lt == nil {
			return nil, ec2Error(api, "InvalidLaunchTemplateId.NotFound", "The specified launch template, with template ID %s, does not exist.", id)
		}
	} else {
		lt = f.findLaunchTemplate("", name)
		if lt == nil {
			return nil, ec2Error(api, "InvalidLaunchTemplateName.NotFoundException", "The specified launch template, with template name %s, does not exist.", name)
		}
	}
	if err := f.dryRun(api, in.DryRun); err != nil {
		return nil, err
	}
	delete(f.launchTemplates, lt.id)
	return &ec2.DeleteLaunchTemplateOutput{LaunchTemplate: f.launchTemplateOutput(lt)}, nil
}

// CapacityReservation describes an on-demand capacity reservation or capacity
// block to add with AddCapacityReservation.
type CapacityReservation struct {
	// ID defaults to a generated cr-<17 hex> ID.
	ID           string
	InstanceType string
	Zone         string
	// Total and Available instance counts; Available defaults to Total.
	Total, Available int
	// MatchCriteria is open or targeted (default targeted).
	MatchCriteria string
	// ReservationType is default or capacity-block (default "default").
	ReservationType string
	// EndDate is when the reservation expires; zero is never.
	EndDate       time.Time
	Interruptible bool
	OwnerID       string
	Tags          map[string]string
}

type capacityReservation struct {
	CapacityReservation
	created time.Time
}

func (c *capacityReservation) state(now time.Time) string {
	if !c.EndDate.IsZero() && !now.Before(c.EndDate) {
		return "expired"
	}
	return "active"
}

// AddCapacityReservation adds a capacity reservation and returns its ID.
func (f *AWS) AddCapacityReservation(c CapacityReservation) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.lookupType(c.InstanceType); !ok {
		return "", fmt.Errorf("unknown instance type %q", c.InstanceType)
	}
	if !f.hasZone(c.Zone) {
		return "", fmt.Errorf("unknown zone %q", c.Zone)
	}
	if c.ID == "" {
		c.ID = "cr-" + f.hex(17)
	}
	if c.Available == 0 && c.Total > 0 {
		c.Available = c.Total
	}
	if c.MatchCriteria == "" {
		c.MatchCriteria = "targeted"
	}
	if c.ReservationType == "" {
		c.ReservationType = "default"
	}
	if c.OwnerID == "" {
		c.OwnerID = f.opts.AccountID
	}
	c.Tags = copyMap(c.Tags)
	f.reservations[c.ID] = &capacityReservation{CapacityReservation: c, created: f.now()}
	return c.ID, nil
}

// DescribeCapacityReservations implements sdk.EC2.
func (f *AWS) DescribeCapacityReservations(_ context.Context, in *ec2.DescribeCapacityReservationsInput, _ ...func(*ec2.Options)) (*ec2.DescribeCapacityReservationsOutput, error) {
	const api = "DescribeCapacityReservations"
	unlock, err := f.lock(api, in)
	defer unlock()
	if err != nil {
		return nil, err
	}
	if in == nil {
		in = &ec2.DescribeCapacityReservationsInput{}
	}
	if err := f.dryRun(api, in.DryRun); err != nil {
		return nil, err
	}
	if err := checkFilters(api, in.Filters, "instance-type", "availability-zone", "state", "owner-id", "instance-match-criteria", "reservation-type"); err != nil {
		return nil, err
	}
	for _, id := range in.CapacityReservationIds {
		if _, ok := f.reservations[id]; !ok {
			return nil, ec2Error(api, "InvalidCapacityReservationId.NotFound", "The capacity reservation ID '%s' does not exist", id)
		}
	}
	now := f.now()
	var out []ec2types.CapacityReservation
	for _, id := range sortedKeys(f.reservations) {
		c := f.reservations[id]
		if len(in.CapacityReservationIds) > 0 && !contains(in.CapacityReservationIds, id) {
			continue
		}
		attr := func(n string) []string {
			switch n {
			case "instance-type":
				return one(c.InstanceType)
			case "availability-zone":
				return one(c.Zone)
			case "state":
				return one(c.state(now))
			case "owner-id":
				return one(c.OwnerID)
			case "instance-match-criteria":
				return one(c.MatchCriteria)
			case "reservation-type":
				return one(c.ReservationType)
			}
			return nil
		}
		if !matchFilters(in.Filters, c.Tags, attr) {
			continue
		}
		cr := ec2types.CapacityReservation{
			CapacityReservationId:  ptr(c.ID),
			CapacityReservationArn: ptr(fmt.Sprintf("arn:aws:ec2:%s:%s:capacity-reservation/%s", f.opts.Region, c.OwnerID, c.ID)),
			InstanceType:           ptr(c.InstanceType),
			AvailabilityZone:       ptr(c.Zone),
			AvailabilityZoneId:     ptr(f.zoneID(c.Zone)),
			TotalInstanceCount:     ptr(int32(c.Total)),
			AvailableInstanceCount: ptr(int32(max(c.Available, 0))),
			InstanceMatchCriteria:  ec2types.InstanceMatchCriteria(c.MatchCriteria),
			ReservationType:        ec2types.CapacityReservationType(c.ReservationType),
			State:                  ec2types.CapacityReservationState(c.state(now)),
			OwnerId:                ptr(c.OwnerID),
			InstancePlatform:       ec2types.CapacityReservationInstancePlatformLinuxUnix,
			Tenancy:                ec2types.CapacityReservationTenancyDefault,
			CreateDate:             ptr(c.created),
			StartDate:              ptr(c.created),
			Interruptible:          ptr(c.Interruptible),
			Tags:                   mapToTags(c.Tags),
			EndDateType:            ec2types.EndDateTypeUnlimited,
		}
		if !c.EndDate.IsZero() {
			cr.EndDate = ptr(c.EndDate)
			cr.EndDateType = ec2types.EndDateTypeLimited
		}
		out = append(out, cr)
	}
	page, next, err := paginate(api, out, in.NextToken, in.MaxResults, pageSpec{min: 1, max: 1000})
	if err != nil {
		return nil, err
	}
	return &ec2.DescribeCapacityReservationsOutput{CapacityReservations: page, NextToken: next}, nil
}
