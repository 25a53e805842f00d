package launch

import (
	"net/netip"
	"slices"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
)

// Placement is the placement group a launch goes into.
type Placement struct {
	// GroupID is the resolved placement group (pg-...); empty means none.
	GroupID string
	// Partition, when positive, pins the partition of a partition placement
	// group; zero lets EC2 choose one.
	Partition int32
}

// networkInterfaces returns the network interfaces of a launch template, or
// nil when the instance needs none beyond EC2's default primary interface
// (then the security groups go on the template itself).
//
// With spec.networkInterfaces, each listed interface is created, ordered by
// network card and device index: efa-only interfaces carry the security
// groups only (EC2 gives them no IP address, so no prefixes, public address
// or connection tracking), the others carry the security groups, the IP
// prefix count and the connection tracking timeouts, and the primary
// interface (card 0, device 0) also the public-address choice. Without it,
// a single primary interface is written when something must be set on it:
// a public-address choice, a prefix count or connection tracking.
func networkInterfaces(spec *awsv1.EC2NodeClassSpec, sgs []string, ipv6 bool) []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest {
	list := spec.NetworkInterfaces
	if len(list) == 0 {
		if spec.AssociatePublicIPAddress == nil && spec.IPPrefixCount == nil && spec.ConnectionTracking == nil {
			return nil
		}
		list = []awsv1.NetworkInterface{{NetworkCardIndex: 0, DeviceIndex: 0, InterfaceType: awsv1.InterfaceTypeInterface}}
	}
	list = slices.Clone(list)
	slices.SortFunc(list, func(a, b awsv1.NetworkInterface) int {
		if a.NetworkCardIndex != b.NetworkCardIndex {
			return int(a.NetworkCardIndex - b.NetworkCardIndex)
		}
		return int(a.DeviceIndex - b.DeviceIndex)
	})
	out := make([]ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest, 0, len(list))
	for _, ni := range list {
		r := ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{
			DeviceIndex: ptr(ni.DeviceIndex),
			Groups:      slices.Clone(sgs),
		}
		// The implied primary interface names no card or type, as before
		// networkInterfaces existed, so that its templates keep their names.
		if len(spec.NetworkInterfaces) > 0 {
			r.NetworkCardIndex = ptr(ni.NetworkCardIndex)
			r.InterfaceType = ptr(string(ni.InterfaceType))
		}
		if ni.InterfaceType == awsv1.InterfaceTypeEFAOnly {
			out = append(out, r)
			continue
		}
		if ni.NetworkCardIndex == 0 && ni.DeviceIndex == 0 && spec.AssociatePublicIPAddress != nil {
			r.AssociatePublicIpAddress = ptr(*spec.AssociatePublicIPAddress)
		}
		if n := spec.IPPrefixCount; n != nil {
			if ipv6 {
				r.Ipv6PrefixCount = ptr(*n)
			} else {
				r.Ipv4PrefixCount = ptr(*n)
			}
		}
		if ct := spec.ConnectionTracking; ct != nil {
			r.ConnectionTrackingSpecification = &ec2types.ConnectionTrackingSpecificationRequest{
				TcpEstablishedTimeout: ct.TCPEstablishedTimeout,
				UdpStreamTimeout:      ct.UDPStreamTimeout,
				UdpTimeout:            ct.UDPTimeout,
			}
		}
		out = append(out, r)
	}
	return out
}

// cpuOptions returns the template's CPU options: nil unless the node class
// sets a processor feature.
func cpuOptions(o *awsv1.CPUOptions) *ec2types.LaunchTemplateCpuOptionsRequest {
	if o == nil || o.NestedVirtualization == nil {
		return nil
	}
	return &ec2types.LaunchTemplateCpuOptionsRequest{NestedVirtualization: ec2types.NestedVirtualizationSpecification(*o.NestedVirtualization)}
}

// placement returns the template's placement: nil without a placement group.
func placement(p Placement) *ec2types.LaunchTemplatePlacementRequest {
	if p.GroupID == "" {
		return nil
	}
	out := &ec2types.LaunchTemplatePlacementRequest{GroupId: ptr(p.GroupID)}
	if p.Partition > 0 {
		out.PartitionNumber = ptr(p.Partition)
	}
	return out
}

// ipv6Cluster reports whether the cluster's DNS address, and so its pod
// network, is IPv6: prefixes are then IPv6 prefixes.
func ipv6Cluster(dns []string) bool {
	if len(dns) == 0 {
		return false
	}
	a, err := netip.ParseAddr(dns[0])
	return err == nil && a.Is6() && !a.Is4In6()
}
