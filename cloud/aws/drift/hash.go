package drift

import (
	"fmt"
	"strconv"

	"github.com/mitchellh/hashstructure/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/amifamily"
)

// HashVersion is the value of the ec2nodeclass-hash-version annotation
// written next to Hash. A hash is only compared with another of the same
// version.
//
// The hash is the one Karpenter's AWS provider computes under hash version
// v5, so that NodeClaims stamped by either controller compare equal and a
// cluster can move from Karpenter to stevedore and back without drifting.
const HashVersion = wellknown.EC2NodeClassHashVersion

// The static hash covers the spec fields whose change only a new instance
// can apply: role, instanceProfile, userData, tags, kubelet,
// blockDeviceMappings, instanceStorePolicy, networkInterfaces,
// detailedMonitoring, metadataOptions, associatePublicIPAddress, context,
// placementGroupSelector, connectionTracking and cpuOptions, together with
// the resolved AMI family and the cluster CA bundle. The selector terms are
// left out (what they select drifts through status, see Check), as are the
// literal amiFamily (the resolved family is hashed instead, so writing out
// the family an alias implies changes nothing) and ipPrefixCount (it
// changes launch templates, not running nodes).
//
// The value is hashstructure's FormatV2 hash of a list of three: the spec,
// the family and the CA bundle, with lists taken as sets, zero-valued fields
// skipped and nil pointers hashed like zero values. FormatV2 hashes Go type
// and field names, and folds fields in in declaration order, so the spec is
// first copied into the types below, whose names, field order and shapes
// are those the hash was defined over. Renaming, reordering or retyping
// anything in them changes every node class's hash. They are exported only
// because their names, which the hash reads, start with a capital.
//
// Consequences of that definition, kept because the other side of a move
// computes them too: the order of tags, block devices, network interfaces
// and kubelet clusterDNS does not matter; an empty map, list or kubelet
// hashes differently from an absent one; a volume size counts by its
// canonical form ("20480Mi" is "20Gi", "21474836480" is not).

// EC2NodeClassSpec is the hashed form of an EC2NodeClass's spec.
type EC2NodeClassSpec struct {
	PlacementGroupSelector   *PlacementGroupSelector
	AssociatePublicIPAddress *bool
	UserData                 *string
	Role                     string
	InstanceProfile          *string
	Tags                     map[string]string
	Kubelet                  *KubeletConfiguration
	BlockDeviceMappings      []*BlockDeviceMapping
	InstanceStorePolicy      *string
	NetworkInterfaces        []*NetworkInterface
	DetailedMonitoring       *bool
	MetadataOptions          *MetadataOptions
	ConnectionTracking       *ConnectionTracking
	Context                  *string
	CPUOptions               *CPUOptions
}

// PlacementGroupSelector is the hashed form of placementGroupSelector.
type PlacementGroupSelector struct {
	Name *string
	ID   *string
}

// KubeletConfiguration is the hashed form of kubelet.
type KubeletConfiguration struct {
	ClusterDNS                  []string
	MaxPods                     *int32
	PodsPerCore                 *int32
	SystemReserved              map[string]string
	KubeReserved                map[string]string
	EvictionHard                map[string]string
	EvictionSoft                map[string]string
	EvictionSoftGracePeriod     map[string]metav1.Duration
	EvictionMaxPodGracePeriod   *int32
	ImageGCHighThresholdPercent *int32
	ImageGCLowThresholdPercent  *int32
	CPUCFSQuota                 *bool
}

// MetadataOptions is the hashed form of metadataOptions.
type MetadataOptions struct {
	HTTPEndpoint            *string
	HTTPProtocolIPv6        *string
	HTTPPutResponseHopLimit *int64
	HTTPTokens              *string
}

// CPUOptions is the hashed form of cpuOptions.
type CPUOptions struct {
	NestedVirtualization *string
}

// ConnectionTracking is the hashed form of connectionTracking.
type ConnectionTracking struct {
	TCPEstablishedTimeout *int32
	UDPStreamTimeout      *int32
	UDPTimeout            *int32
}

// BlockDeviceMapping is the hashed form of a blockDeviceMappings entry.
type BlockDeviceMapping struct {
	DeviceName *string
	EBS        *BlockDevice
	RootVolume bool
}

// BlockDevice is the hashed form of a block device's ebs. VolumeSize is the
// quantity's canonical string: the hash was defined over its String form.
type BlockDevice struct {
	DeleteOnTermination      *bool
	Encrypted                *bool
	IOPS                     *int64
	KMSKeyID                 *string
	SnapshotID               *string
	Throughput               *int64
	VolumeInitializationRate *int32
	VolumeSize               *string
	VolumeType               *string
}

// NetworkInterface is the hashed form of a networkInterfaces entry.
type NetworkInterface struct {
	NetworkCardIndex int32
	DeviceIndex      int32
	InterfaceType    string
}

// hashOptions returns the hashstructure options that the hash is defined
// with, new for every hash: hashstructure keeps its hasher in the options it
// is given, so options shared between callers would share one hasher, and
// two hashes computed at the same time (by the node class status controller
// and a launch, say) would interleave on it and come out wrong.
func hashOptions() *hashstructure.HashOptions {
	return &hashstructure.HashOptions{
		SlicesAsSets:    true,
		IgnoreZeroValue: true,
		ZeroNil:         true,
	}
}

// Hash returns the static hash of a node class, with the cluster CA bundle
// caBundle (base64, as given to the controller), as a decimal string. It is
// safe for concurrent use.
func Hash(nodeClass *awsv1.EC2NodeClass, caBundle string) string {
	h, err := hashstructure.Hash([]any{
		hashedSpec(&nodeClass.Spec),
		string(resolvedFamily(&nodeClass.Spec)),
		caBundle,
	}, hashstructure.FormatV2, hashOptions())
	if err != nil {
		// The hashed types hold only strings, integers, booleans,
		// durations and maps and slices of those, all of which hash.
		panic(fmt.Sprintf("hashing EC2NodeClass %s: %v", nodeClass.Name, err))
	}
	return strconv.FormatUint(h, 10)
}

// resolvedFamily is the family the hash covers: the amiFamily field when it
// is set (even to a value the API would refuse), else the alias's family.
func resolvedFamily(spec *awsv1.EC2NodeClassSpec) awsv1.AMIFamily {
	if spec.AMIFamily != nil {
		return *spec.AMIFamily
	}
	return amifamily.ResolvedFamily(spec)
}

// hashedSpec returns the hashed form of spec. Maps and slices keep the nil
// or empty they had, since the hash tells the two apart.
func hashedSpec(spec *awsv1.EC2NodeClassSpec) EC2NodeClassSpec {
	out := EC2NodeClassSpec{
		AssociatePublicIPAddress: spec.AssociatePublicIPAddress,
		UserData:                 spec.UserData,
		Role:                     spec.Role,
		InstanceProfile:          spec.InstanceProfile,
		Tags:                     spec.Tags,
		InstanceStorePolicy:      (*string)(spec.InstanceStorePolicy),
		DetailedMonitoring:       spec.DetailedMonitoring,
		Context:                  spec.Context,
	}
	if p := spec.PlacementGroupSelector; p != nil {
		out.PlacementGroupSelector = &PlacementGroupSelector{Name: nonEmpty(p.Name), ID: nonEmpty(p.ID)}
	}
	if k := spec.Kubelet; k != nil {
		out.Kubelet = &KubeletConfiguration{
			ClusterDNS:                  k.ClusterDNS,
			MaxPods:                     k.MaxPods,
			PodsPerCore:                 k.PodsPerCore,
			SystemReserved:              k.SystemReserved,
			KubeReserved:                k.KubeReserved,
			EvictionHard:                k.EvictionHard,
			EvictionSoft:                k.EvictionSoft,
			EvictionSoftGracePeriod:     k.EvictionSoftGracePeriod,
			EvictionMaxPodGracePeriod:   k.EvictionMaxPodGracePeriod,
			ImageGCHighThresholdPercent: k.ImageGCHighThresholdPercent,
			ImageGCLowThresholdPercent:  k.ImageGCLowThresholdPercent,
			CPUCFSQuota:                 k.CPUCFSQuota,
		}
	}
	if spec.BlockDeviceMappings != nil {
		out.BlockDeviceMappings = make([]*BlockDeviceMapping, len(spec.BlockDeviceMappings))
		for i, m := range spec.BlockDeviceMappings {
			hm := &BlockDeviceMapping{DeviceName: m.DeviceName, RootVolume: m.RootVolume}
			if d := m.EBS; d != nil {
				hm.EBS = &BlockDevice{
					DeleteOnTermination:      d.DeleteOnTermination,
					Encrypted:                d.Encrypted,
					IOPS:                     d.IOPS,
					KMSKeyID:                 d.KMSKeyID,
					SnapshotID:               d.SnapshotID,
					Throughput:               d.Throughput,
					VolumeInitializationRate: d.VolumeInitializationRate,
					VolumeType:               d.VolumeType,
				}
				if q := d.VolumeSize; q != nil {
					size := q.String()
					hm.EBS.VolumeSize = &size
				}
			}
			out.BlockDeviceMappings[i] = hm
		}
	}
	if spec.NetworkInterfaces != nil {
		out.NetworkInterfaces = make([]*NetworkInterface, len(spec.NetworkInterfaces))
		for i, n := range spec.NetworkInterfaces {
			out.NetworkInterfaces[i] = &NetworkInterface{NetworkCardIndex: n.NetworkCardIndex, DeviceIndex: n.DeviceIndex, InterfaceType: string(n.InterfaceType)}
		}
	}
	if m := spec.MetadataOptions; m != nil {
		out.MetadataOptions = &MetadataOptions{
			HTTPEndpoint:            m.HTTPEndpoint,
			HTTPProtocolIPv6:        m.HTTPProtocolIPv6,
			HTTPPutResponseHopLimit: m.HTTPPutResponseHopLimit,
			HTTPTokens:              m.HTTPTokens,
		}
	}
	if c := spec.ConnectionTracking; c != nil {
		out.ConnectionTracking = &ConnectionTracking{
			TCPEstablishedTimeout: c.TCPEstablishedTimeout,
			UDPStreamTimeout:      c.UDPStreamTimeout,
			UDPTimeout:            c.UDPTimeout,
		}
	}
	if c := spec.CPUOptions; c != nil {
		out.CPUOptions = &CPUOptions{NestedVirtualization: c.NestedVirtualization}
	}
	return out
}

// nonEmpty returns a pointer to s, or nil for "": stevedore's placement
// group selector holds plain strings where an unset field is empty.
func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
