package wellknown

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// API groups and label domains.
const (
	// GroupCore is the API group of NodePool and NodeClaim and the domain of
	// the core labels, annotations, taints and finalizers.
	GroupCore = "karpenter.sh"
	// GroupAWS is the API group of EC2NodeClass and the domain of the AWS
	// instance labels and annotations.
	GroupAWS = "karpenter.k8s.aws"
	// GroupCompatibility is the domain of annotations that record which
	// provider created an object, for compatibility checks.
	GroupCompatibility = "compatibility.karpenter.sh"
)

// Labels that stevedore sets on NodeClaims and Nodes.
const (
	// LabelNodePool names the NodePool that owns a NodeClaim and its Node.
	// Pods may select it; users may not set it on a NodePool.
	LabelNodePool = GroupCore + "/nodepool"
	// LabelCapacityType is the purchase option of the instance: one of
	// CapacityTypeSpot, CapacityTypeOnDemand or CapacityTypeReserved.
	LabelCapacityType = GroupCore + "/capacity-type"
	// LabelRegistered is set to "true" once the Node has joined the cluster
	// and been matched to its NodeClaim.
	LabelRegistered = GroupCore + "/registered"
	// LabelInitialized is set to "true" once the Node is Ready, its startup
	// taints are gone and every requested resource is allocatable.
	LabelInitialized = GroupCore + "/initialized"
	// LabelDoNotSyncTaints, set to "true" on a Node, tells stevedore that the
	// node registered with its taints already (they were passed to the kubelet)
	// and must not have them copied from the NodeClaim again.
	LabelDoNotSyncTaints = GroupCore + "/do-not-sync-taints"
	// LabelEC2NodeClass names the EC2NodeClass a NodeClaim and its Node were
	// launched from. It follows the "<group>/<lower-case kind>" form used for
	// every node class.
	LabelEC2NodeClass = GroupAWS + "/ec2nodeclass"
	// LabelExcludeFromExternalLoadBalancers is added to a Node while it is
	// being terminated so that cloud load balancers stop sending it traffic.
	LabelExcludeFromExternalLoadBalancers = corev1.LabelNodeExcludeBalancers
)

// Standard Kubernetes node labels that stevedore sets and that NodePool
// requirements and pods may use.
const (
	// LabelTopologyZone is the availability zone, for example us-east-1a.
	LabelTopologyZone = corev1.LabelTopologyZone
	// LabelTopologyRegion is the cloud region, for example us-east-1.
	LabelTopologyRegion = corev1.LabelTopologyRegion
	// LabelInstanceType is the instance type, for example m6i.xlarge.
	LabelInstanceType = corev1.LabelInstanceTypeStable
	// LabelArch is the CPU architecture: ArchAMD64 or ArchARM64.
	LabelArch = corev1.LabelArchStable
	// LabelOS is the operating system: OSLinux or OSWindows.
	LabelOS = corev1.LabelOSStable
	// LabelWindowsBuild is the Windows build number of Windows nodes.
	LabelWindowsBuild = corev1.LabelWindowsBuild
	// LabelHostname is the node's host name. stevedore sets it to the node
	// name; users may not constrain or set it on a NodePool.
	LabelHostname = corev1.LabelHostname
)

// Deprecated beta label keys that pods and manifests still use. NormalizeLabel
// maps each one to its stable key.
const (
	LabelBetaZone         = corev1.LabelFailureDomainBetaZone   // stable: LabelTopologyZone
	LabelBetaRegion       = corev1.LabelFailureDomainBetaRegion // stable: LabelTopologyRegion
	LabelBetaInstanceType = corev1.LabelInstanceType            // stable: LabelInstanceType
	LabelBetaArch         = "beta.kubernetes.io/arch"           // stable: LabelArch
	LabelBetaOS           = "beta.kubernetes.io/os"             // stable: LabelOS
)

// Labels that describe an EC2 instance type. stevedore sets them on every
// NodeClaim and Node it launches, and NodePool requirements may use them.
const (
	// LabelInstanceCategory is the letter(s) before the generation, for example "c" for c7g.xlarge.
	LabelInstanceCategory = GroupAWS + "/instance-category"
	// LabelInstanceFamily is the family, for example "c7g".
	LabelInstanceFamily = GroupAWS + "/instance-family"
	// LabelInstanceGeneration is the generation number, for example "7".
	LabelInstanceGeneration = GroupAWS + "/instance-generation"
	// LabelInstanceSize is the size, for example "xlarge".
	LabelInstanceSize = GroupAWS + "/instance-size"
	// LabelInstanceCPU is the number of vCPUs.
	LabelInstanceCPU = GroupAWS + "/instance-cpu"
	// LabelInstanceCPUManufacturer is the CPU maker: aws, intel or amd.
	LabelInstanceCPUManufacturer = GroupAWS + "/instance-cpu-manufacturer"
	// LabelInstanceCPUSustainedClockSpeedMhz is the sustained clock speed in MHz.
	LabelInstanceCPUSustainedClockSpeedMhz = GroupAWS + "/instance-cpu-sustained-clock-speed-mhz"
	// LabelInstanceMemory is the memory size in MiB.
	LabelInstanceMemory = GroupAWS + "/instance-memory"
	// LabelInstanceEBSBandwidth is the default EBS bandwidth in Mbps.
	LabelInstanceEBSBandwidth = GroupAWS + "/instance-ebs-bandwidth"
	// LabelInstanceNetworkBandwidth is the baseline network bandwidth in Mbps.
	LabelInstanceNetworkBandwidth = GroupAWS + "/instance-network-bandwidth"
	// LabelInstanceGPUName is the GPU model, in lower kebab case, when the type has one GPU kind.
	LabelInstanceGPUName = GroupAWS + "/instance-gpu-name"
	// LabelInstanceGPUManufacturer is the GPU maker, when the type has one GPU kind.
	LabelInstanceGPUManufacturer = GroupAWS + "/instance-gpu-manufacturer"
	// LabelInstanceGPUCount is the number of GPUs.
	LabelInstanceGPUCount = GroupAWS + "/instance-gpu-count"
	// LabelInstanceGPUMemory is the memory of one GPU in MiB.
	LabelInstanceGPUMemory = GroupAWS + "/instance-gpu-memory"
	// LabelInstanceAcceleratorName is the inference accelerator model (for example Neuron devices).
	LabelInstanceAcceleratorName = GroupAWS + "/instance-accelerator-name"
	// LabelInstanceAcceleratorManufacturer is the accelerator maker.
	LabelInstanceAcceleratorManufacturer = GroupAWS + "/instance-accelerator-manufacturer"
	// LabelInstanceAcceleratorCount is the number of accelerators.
	LabelInstanceAcceleratorCount = GroupAWS + "/instance-accelerator-count"
	// LabelInstanceHypervisor is the hypervisor: nitro, xen or empty for bare metal.
	LabelInstanceHypervisor = GroupAWS + "/instance-hypervisor"
	// LabelInstanceEncryptionInTransitSupported is "true" when the type encrypts traffic between instances.
	LabelInstanceEncryptionInTransitSupported = GroupAWS + "/instance-encryption-in-transit-supported"
	// LabelInstanceLocalNVMe is the total local NVMe instance storage in GB.
	LabelInstanceLocalNVMe = GroupAWS + "/instance-local-nvme"
	// LabelInstanceCapabilityFlex is "true" for the flexible (-flex) instance types.
	LabelInstanceCapabilityFlex = GroupAWS + "/instance-capability-flex"
	// LabelInstanceTenancy is the tenancy: TenancyDefault or TenancyDedicated.
	LabelInstanceTenancy = GroupAWS + "/instance-tenancy"
	// LabelCapacityReservationID is the ID of the capacity reservation a reserved instance runs in.
	LabelCapacityReservationID = GroupAWS + "/capacity-reservation-id"
	// LabelCapacityReservationType is the kind of that reservation:
	// CapacityReservationTypeDefault or CapacityReservationTypeCapacityBlock.
	LabelCapacityReservationType = GroupAWS + "/capacity-reservation-type"
	// LabelCapacityReservationInterruptible is "true" when the reservation may be reclaimed.
	LabelCapacityReservationInterruptible = GroupAWS + "/capacity-reservation-interruptible"
	// LabelPlacementGroupID is the placement group the instance was launched in.
	LabelPlacementGroupID = GroupAWS + "/placement-group-id"
	// LabelPlacementGroupPartition is the partition number within a partition placement group.
	LabelPlacementGroupPartition = GroupAWS + "/placement-group-partition"
	// LabelTopologyZoneID is the AWS zone ID, for example use1-az1, which is
	// the same physical zone in every account (zone names are not).
	LabelTopologyZoneID = "topology.k8s.aws/zone-id"
)

// Label values.
const (
	// LabelValueTrue is the value of the boolean labels (registered,
	// initialized, do-not-sync-taints).
	LabelValueTrue = "true"

	CapacityTypeSpot     = "spot"      // value of LabelCapacityType: spot instance
	CapacityTypeOnDemand = "on-demand" // value of LabelCapacityType: on-demand instance
	CapacityTypeReserved = "reserved"  // value of LabelCapacityType: instance in a capacity reservation

	ArchAMD64 = "amd64" // value of LabelArch
	ArchARM64 = "arm64" // value of LabelArch

	OSLinux   = "linux"   // value of LabelOS
	OSWindows = "windows" // value of LabelOS

	WindowsBuild2019 = "10.0.17763" // value of LabelWindowsBuild for Windows Server 2019
	WindowsBuild2022 = "10.0.20348" // value of LabelWindowsBuild for Windows Server 2022
	WindowsBuild2025 = "10.0.26100" // value of LabelWindowsBuild for Windows Server 2025

	TenancyDefault   = "default"   // value of LabelInstanceTenancy
	TenancyDedicated = "dedicated" // value of LabelInstanceTenancy

	CapacityReservationTypeDefault       = "default"        // value of LabelCapacityReservationType: an on-demand capacity reservation
	CapacityReservationTypeCapacityBlock = "capacity-block" // value of LabelCapacityReservationType: a capacity block for ML

	// ExcludeFromExternalLoadBalancersValue is the value stevedore gives
	// LabelExcludeFromExternalLoadBalancers. It is the value Karpenter uses, so
	// that tooling that looks for it keeps working.
	ExcludeFromExternalLoadBalancersValue = "karpenter"
)

// wellKnownLabels are the label keys that stevedore understands when it
// schedules: NodePool requirements and pods may constrain them, including the
// keys inside restricted domains listed here.
var wellKnownLabels = map[string]bool{
	LabelNodePool:       true,
	LabelCapacityType:   true,
	LabelTopologyZone:   true,
	LabelTopologyRegion: true,
	LabelInstanceType:   true,
	LabelArch:           true,
	LabelOS:             true,
	LabelWindowsBuild:   true,

	LabelBetaZone:         true,
	LabelBetaRegion:       true,
	LabelBetaInstanceType: true,
	LabelBetaArch:         true,
	LabelBetaOS:           true,

	LabelInstanceCategory:                     true,
	LabelInstanceFamily:                       true,
	LabelInstanceGeneration:                   true,
	LabelInstanceSize:                         true,
	LabelInstanceCPU:                          true,
	LabelInstanceCPUManufacturer:              true,
	LabelInstanceCPUSustainedClockSpeedMhz:    true,
	LabelInstanceMemory:                       true,
	LabelInstanceEBSBandwidth:                 true,
	LabelInstanceNetworkBandwidth:             true,
	LabelInstanceGPUName:                      true,
	LabelInstanceGPUManufacturer:              true,
	LabelInstanceGPUCount:                     true,
	LabelInstanceGPUMemory:                    true,
	LabelInstanceAcceleratorName:              true,
	LabelInstanceAcceleratorManufacturer:      true,
	LabelInstanceAcceleratorCount:             true,
	LabelInstanceHypervisor:                   true,
	LabelInstanceEncryptionInTransitSupported: true,
	LabelInstanceLocalNVMe:                    true,
	LabelInstanceCapabilityFlex:               true,
	LabelInstanceTenancy:                      true,
	LabelCapacityReservationID:                true,
	LabelCapacityReservationType:              true,
	LabelCapacityReservationInterruptible:     true,
	LabelPlacementGroupID:                     true,
	LabelPlacementGroupPartition:              true,
	LabelTopologyZoneID:                       true,
}

// normalizedLabels maps deprecated label keys to the stable key stevedore
// uses internally.
var normalizedLabels = map[string]string{
	LabelBetaZone:         LabelTopologyZone,
	LabelBetaRegion:       LabelTopologyRegion,
	LabelBetaInstanceType: LabelInstanceType,
	LabelBetaArch:         LabelArch,
	LabelBetaOS:           LabelOS,
}

// WellKnownLabels returns, sorted, the label keys that stevedore understands
// when it schedules. NodePool requirements and pods may constrain each of
// them, even those inside a restricted domain. The result is a new slice.
func WellKnownLabels() []string {
	keys := make([]string, 0, len(wellKnownLabels))
	for k := range wellKnownLabels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// IsWellKnownLabel reports whether key is one of WellKnownLabels.
func IsWellKnownLabel(key string) bool {
	return wellKnownLabels[key]
}

// RestrictedLabelDomains returns the label domains that users may not use on
// NodePool templates or in requirements, except for the keys that
// UserLabelsInRestrictedDomains lists. As in Karpenter's CRDs, a key is in a
// domain when its prefix (the part before "/", or the whole key without one)
// ends with the domain: a subdomain such as x.karpenter.sh is in it, and so
// is mykarpenter.sh. The result is a new slice.
//
// karpenter.sh and karpenter.k8s.aws are stevedore's own. kubernetes.io and
// k8s.io are not restricted: Karpenter v1.14 dropped those restrictions, so
// labels such as node-role.kubernetes.io/worker are allowed.
func RestrictedLabelDomains() []string {
	return []string{GroupAWS, GroupCore}
}

// UserLabelsInRestrictedDomains returns the keys of RestrictedLabelDomains
// that users may use after all, in labels and requirements, exactly as
// Karpenter v1.14.1's CRDs allow them. The result is a new slice.
func UserLabelsInRestrictedDomains() []string {
	return []string{
		LabelCapacityType,
		LabelInstanceTenancy, LabelCapacityReservationType, LabelCapacityReservationID, LabelEC2NodeClass,
		LabelInstanceEncryptionInTransitSupported, LabelInstanceCategory, LabelInstanceHypervisor,
		LabelInstanceFamily, LabelInstanceGeneration, LabelInstanceLocalNVMe, LabelInstanceSize,
		LabelInstanceCPU, LabelInstanceCPUManufacturer, LabelInstanceCPUSustainedClockSpeedMhz,
		LabelInstanceMemory, LabelInstanceEBSBandwidth, LabelInstanceNetworkBandwidth,
		LabelInstanceGPUName, LabelInstanceGPUManufacturer, LabelInstanceGPUCount, LabelInstanceGPUMemory,
		LabelInstanceAcceleratorName, LabelInstanceAcceleratorManufacturer, LabelInstanceAcceleratorCount,
		LabelInstanceCapabilityFlex,
	}
}

// IsRestrictedLabel reports whether users are barred from using key as a
// label in a NodePool template or as the key of a NodePool requirement. That
// is the case for:
//
//   - LabelHostname: every node has its own, so no NodePool can promise one;
//   - LabelNodePool: stevedore sets it to the owning NodePool's name;
//   - any other key in one of RestrictedLabelDomains, unless
//     UserLabelsInRestrictedDomains lists it.
//
// NodeClaims that stevedore creates do carry a LabelNodePool requirement; the
// NodeClaim schema allows it there.
func IsRestrictedLabel(key string) bool {
	if key == LabelHostname || key == LabelNodePool {
		return true
	}
	if slices.Contains(UserLabelsInRestrictedDomains(), key) {
		return false
	}
	domain, _, _ := strings.Cut(key, "/")
	for _, d := range RestrictedLabelDomains() {
		if strings.HasSuffix(domain, d) {
			return true
		}
	}
	return false
}

// InCoreDomain reports whether key is in the karpenter.sh domain as the CRDs'
// rules judge it: its prefix, the part before the slash, ends with
// karpenter.sh (so sub.karpenter.sh/x is in it too).
func InCoreDomain(key string) bool {
	prefix, _, _ := strings.Cut(key, "/")
	return strings.HasSuffix(prefix, GroupCore)
}

// NormalizeLabel returns the stable key for a deprecated beta label key (for
// example topology.kubernetes.io/zone for failure-domain.beta.kubernetes.io/zone)
// and any other key unchanged.
func NormalizeLabel(key string) string {
	if stable, ok := normalizedLabels[key]; ok {
		return stable
	}
	return key
}
