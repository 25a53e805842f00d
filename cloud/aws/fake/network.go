package fake

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// Subnet describes a subnet to add with AddSubnet.
type Subnet struct {
	// ID defaults to a generated subnet-<17 hex> ID.
	ID string
	// Zone is the availability zone name; required.
	Zone string
	// VPCID defaults to DefaultVPCID.
	VPCID string
	// CIDR defaults to a distinct /20 inside 10.0.0.0/8.
	CIDR string
	// AvailableIPs defaults to the CIDR's size minus the 5 addresses AWS
	// reserves. Each running instance uses one; termination frees it.
	AvailableIPs int
	Tags         map[string]string
}

type subnet struct {
	Subnet
	prefix   netip.Prefix
	nextHost uint32
}

// SecurityGroup describes a security group to add with AddSecurityGroup.
type SecurityGroup struct {
	// ID defaults to a generated sg-<17 hex> ID.
	ID string
	// Name is the group name (not the Name tag); defaults to the ID.
	Name        string
	VPCID       string
	Description string
	Tags        map[string]string
}

type securityGroup struct{ SecurityGroup }

// AddSubnet adds a subnet and returns its ID.
func (f *AWS) AddSubnet(s Subnet) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.hasZone(s.Zone) {
		return "", fmt.Errorf("subnet zone %q is not a zone of %s", s.Zone, f.opts.Region)
	}
	if s.ID == "" {
		s.ID = "subnet-" + f.hex(17)
	}
	if _, dup := f.subnets[s.ID]; dup {
		return "", fmt.Errorf("subnet %s already exists", s.ID)
	}
	if s.VPCID == "" {
		s.VPCID = DefaultVPCID
	}
	if s.CIDR == "" {
		n := len(f.subnets)
		s.CIDR = fmt.Sprintf("10.%d.%d.0/20", n/16, (n%16)*16)
	}
	prefix, err := netip.ParsePrefix(s.CIDR)
	if err != nil || !prefix.Addr().Is4() {
		return "", fmt.Errorf("subnet CIDR %q: want an IPv4 prefix", s.CIDR)
	}
	size := 1 << (32 - prefix.Bits())
	if s.AvailableIPs == 0 {
		s.AvailableIPs = max(size-5, 0)
	}
	s.Tags = copyMap(s.Tags)
	f.subnets[s.ID] = &subnet{Subnet: s, prefix: prefix.Masked(), nextHost: 4}
	return s.ID, nil
}

// SetSubnetAvailableIPs sets a subnet's free address count. At 0, launches
// into the subnet fail with InsufficientFreeAddressesInSubnet.
func (f *AWS) SetSubnetAvailableIPs(id string, n int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.subnets[id]
	if !ok {
		return fmt.Errorf("no subnet %s", id)
	}
	s.AvailableIPs = n
	return nil
}

// SubnetAvailableIPs returns a subnet's free address count.
func (f *AWS) SubnetAvailableIPs(id string) (int, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.advance()
	s, ok := f.subnets[id]
	if !ok {
		return 0, false
	}
	return s.AvailableIPs, true
}

// allocateIP takes a free address from the subnet.
func (s *subnet) allocateIP() netip.Addr {
	size := uint32(1) << (32 - s.prefix.Bits())
	base := s.prefix.Addr().As4()
	n := binary.BigEndian.Uint32(base[:])
	host := s.nextHost
	s.nextHost++
	if size > 5 && s.nextHost >= size-1 {
		s.nextHost = 4
	}
	var out [4]byte
	binary.BigEndian.PutUint32(out[:], n+host%max(size, 1))
	s.AvailableIPs--
	return netip.AddrFrom4(out)
}

// AddSecurityGroup adds a security group and returns its ID.
func (f *AWS) AddSecurityGroup(g SecurityGroup) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if g.ID == "" {
		g.ID = "sg-" + f.hex(17)
	}
	if _, dup := f.securityGroups[g.ID]; dup {
		return "", fmt.Errorf("security group %s already exists", g.ID)
	}
	if g.Name == "" {
		g.Name = g.ID
	}
	if g.VPCID == "" {
		g.VPCID = DefaultVPCID
	}
	g.Tags = copyMap(g.Tags)
	f.securityGroups[g.ID] = &securityGroup{SecurityGroup: g}
	return g.ID, nil
}

// DescribeSubnets implements sdk.EC2.
func (f *AWS) DescribeSubnets(_ context.Context, in *ec2.DescribeSubnetsInput, _ ...func(*ec2.Options)) (*ec2.DescribeSubnetsOutput, error) {
	const api = "DescribeSubnets"
	unlock, err := f.lock(api, in)
	defer unlock()
	if err != nil {
		return nil, err
	}
	if in == nil {
		in = &ec2.DescribeSubnetsInput{}
	}
	if err := f.dryRun(api, in.DryRun); err != nil {
		return nil, err
	}
	if err := checkFilters(api, in.Filters, "subnet-id", "vpc-id", "availability-zone", "availability-zone-id", "cidr-block", "state", "owner-id"); err != nil {
		return nil, err
	}
	for _, id := range in.SubnetIds {
		if _, ok := f.subnets[id]; !ok {
			return nil, ec2Error(api, "InvalidSubnetID.NotFound", "The subnet ID '%s' does not exist", id)
		}
	}
	var out []ec2types.Subnet
	for _, id := range sortedKeys(f.subnets) {
		s := f.subnets[id]
		if len(in.SubnetIds) > 0 && !contains(in.SubnetIds, id) {
			continue
		}
		attr := func(name string) []string {
			switch name {
			case "subnet-id":
				return one(s.ID)
			case "vpc-id":
				return one(s.VPCID)
			case "availability-zone":
				return one(s.Zone)
			case "availability-zone-id":
				return one(f.zoneID(s.Zone))
			case "cidr-block":
				return one(s.CIDR)
			case "state":
				return one("available")
			case "owner-id":
				return one(f.opts.AccountID)
			}
			return nil
		}
		if !matchFilters(in.Filters, s.Tags, attr) {
			continue
		}
		out = append(out, ec2types.Subnet{
			SubnetId:                ptr(s.ID),
			SubnetArn:               ptr(fmt.Sprintf("arn:aws:ec2:%s:%s:subnet/%s", f.opts.Region, f.opts.AccountID, s.ID)),
			AvailabilityZone:        ptr(s.Zone),
			AvailabilityZoneId:      ptr(f.zoneID(s.Zone)),
			AvailableIpAddressCount: ptr(int32(max(s.AvailableIPs, 0))),
			CidrBlock:               ptr(s.CIDR),
			VpcId:                   ptr(s.VPCID),
			OwnerId:                 ptr(f.opts.AccountID),
			State:                   ec2types.SubnetStateAvailable,
			DefaultForAz:            ptr(false),
			MapPublicIpOnLaunch:     ptr(false),
			Tags:                    mapToTags(s.Tags),
		})
	}
	page, next, err := paginate(api, out, in.NextToken, in.MaxResults, pageSpec{min: 5, max: 1000})
	if err != nil {
		return nil, err
	}
	return &ec2.DescribeSubnetsOutput{Subnets: page, NextToken: next}, nil
}

// DescribeSecurityGroups implements sdk.EC2.
func (f *AWS) DescribeSecurityGroups(_ context.Context, in *ec2.DescribeSecurityGroupsInput, _ ...func(*ec2.Options)) (*ec2.DescribeSecurityGroupsOutput, error) {
	const api = "DescribeSecurityGroups"
	unlock, err := f.lock(api, in)
	defer unlock()
	if err != nil {
		return nil, err
	}
	if in == nil {
		in = &ec2.DescribeSecurityGroupsInput{}
	}
	if err := f.dryRun(api, in.DryRun); err != nil {
		return nil, err
	}
	if err := checkFilters(api, in.Filters, "group-id", "group-name", "vpc-id", "description", "owner-id"); err != nil {
		return nil, err
	}
	for _, id := range in.GroupIds {
		if _, ok := f.securityGroups[id]; !ok {
			return nil, ec2Error(api, "InvalidGroup.NotFound", "The security group '%s' does not exist", id)
		}
	}
	for _, name := range in.GroupNames {
		found := false
		for _, g := range f.securityGroups {
			found = found || g.Name == name
		}
		if !found {
			return nil, ec2Error(api, "InvalidGroup.NotFound", "The security group '%s' does not exist in default VPC '%s'", name, DefaultVPCID)
		}
	}
	var out []ec2types.SecurityGroup
	for _, id := range sortedKeys(f.securityGroups) {
		g := f.securityGroups[id]
		if len(in.GroupIds) > 0 && !contains(in.GroupIds, id) {
			continue
		}
		if len(in.GroupNames) > 0 && !contains(in.GroupNames, g.Name) {
			continue
		}
		attr := func(name string) []string {
			switch name {
			case "group-id":
				return one(g.ID)
			case "group-name":
				return one(g.Name)
			case "vpc-id":
				return one(g.VPCID)
			case "description":
				return one(g.Description)
			case "owner-id":
				return one(f.opts.AccountID)
			}
			return nil
		}
		if !matchFilters(in.Filters, g.Tags, attr) {
			continue
		}
		out = append(out, ec2types.SecurityGroup{
			GroupId:          ptr(g.ID),
			GroupName:        ptr(g.Name),
			Description:      ptr(g.Description),
			VpcId:            ptr(g.VPCID),
			OwnerId:          ptr(f.opts.AccountID),
			SecurityGroupArn: ptr(fmt.Sprintf("arn:aws:ec2:%s:%s:security-group/%s", f.opts.Region, f.opts.AccountID, g.ID)),
			Tags:             mapToTags(g.Tags),
		})
	}
	page, next, err := paginate(api, out, in.NextToken, in.MaxResults, pageSpec{min: 5, max: 1000})
	if err != nil {
		return nil, err
	}
	return &ec2.DescribeSecurityGroupsOutput{SecurityGroups: page, NextToken: next}, nil
}

// dryRun answers an EC2 call with DryRun set: DryRunOperation when the caller
// is authorized (begin already rejected unauthorized callers).
func (f *AWS) dryRun(api string, dry *bool) error {
	if deref(dry) {
		return ec2Error(api, "DryRunOperation", "Request would have succeeded, but DryRun flag is set.")
	}
	return nil
}
