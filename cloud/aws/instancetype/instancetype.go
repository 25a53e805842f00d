package instancetype

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/catalog"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/scheduling/requirements"
	"github.com/stevedore-autoscaler/stevedore/scheduling/resources"
)

// Defaults of Options.
const (
	// DefaultVMMemoryOverheadPercent is the fraction (not a percentage) of an
	// instance's memory assumed lost to the hypervisor and firmware.
	DefaultVMMemoryOverheadPercent = 0.075
	// DefaultReservedENIs is the number of network interfaces kept from the
	// VPC CNI, as with custom networking.
	DefaultReservedENIs = 0
	// WindowsMaxPods is the pod limit on Windows nodes, which do not use the
	// ENI-derived limit.
	WindowsMaxPods = 110
)

// Extended resource names.
const (
	ResourceNVIDIAGPU          corev1.ResourceName = "nvidia.com/gpu"
	ResourceAMDGPU             corev1.ResourceName = "amd.com/gpu"
	ResourceHabanaGaudi        corev1.ResourceName = "habana.ai/gaudi"
	ResourceAWSNeuron          corev1.ResourceName = "aws.amazon.com/neuron"
	ResourceAWSNeuronCore      corev1.ResourceName = "aws.amazon.com/neuroncore"
	ResourceEFA                corev1.ResourceName = "vpc.amazonaws.com/efa"
	ResourcePodENI             corev1.ResourceName = "vpc.amazonaws.com/pod-eni"
	ResourcePrivateIPv4Address corev1.ResourceName = "vpc.amazonaws.com/PrivateIPv4Address"
)

// Eviction signals that reduce allocatable.
const (
	signalMemoryAvailable = "memory.available"
	signalNodeFSAvailable = "nodefs.available"
)

// Options are the settings and node class fields that shape an instance
// type's capacity and overhead. Start from DefaultOptions: the zero value
// means no VM memory overhead.
type Options struct {
	// AMIFamily is the resolved family of the node class; empty means AL2023.
	AMIFamily awsv1.AMIFamily
	// Kubelet is the node class's kubelet configuration, if any.
	Kubelet *awsv1.KubeletConfiguration
	// BlockDeviceMappings and InstanceStorePolicy of the node class decide the
	// ephemeral storage.
	BlockDeviceMappings []awsv1.BlockDeviceMapping
	InstanceStorePolicy *awsv1.InstanceStorePolicy
	// VMMemoryOverheadPercent is a fraction in [0, 1).
	VMMemoryOverheadPercent float64
	// ReservedENIs are network interfaces not available to the VPC CNI.
	ReservedENIs int
	// NetworkInterfaces are the node class's networkInterfaces: an efa-only
	// interface on network card 0 takes one of that card's interfaces from
	// the VPC CNI, as Karpenter counts it.
	NetworkInterfaces []awsv1.NetworkInterface
	// Region, if set, becomes the topology.kubernetes.io/region label.
	Region string
	// BranchInterfaces returns the number of branch network interfaces (pod
	// ENIs for security groups per pod) of an instance type; EC2 does not
	// describe them. Nil means none are advertised.
	BranchInterfaces func(instanceType string) (int64, bool)
}

// DefaultOptions returns the options of an AL2023 node class with no kubelet
// settings and the default provider settings, with branch interfaces looked
// up in the embedded catalog.
func DefaultOptions() Options {
	return Options{
		AMIFamily:               awsv1.AMIFamilyAL2023,
		VMMemoryOverheadPercent: DefaultVMMemoryOverheadPercent,
		ReservedENIs:            DefaultReservedENIs,
		BranchInterfaces:        CatalogBranchInterfaces,
	}
}

// CatalogBranchInterfaces returns the branch interfaces the embedded catalog
// records for an instance type.
func CatalogBranchInterfaces(instanceType string) (int64, bool) {
	it, ok := catalog.Lookup(instanceType)
	if !ok {
		return 0, false
	}
	q, ok := it.Allocatable[ResourcePodENI]
	if !ok {
		return 0, false
	}
	return q.Value(), true
}

// InstanceType is an instance type with its labels and resources computed.
type InstanceType struct {
	// Name is the instance type, for example m6i.large.
	Name string
	// Labels are the well-known labels the type defines, one value each.
	Labels map[string]string
	// Capacity is what the node reports as capacity.
	Capacity corev1.ResourceList
	// KubeReserved, SystemReserved and EvictionThreshold are what the kubelet
	// holds back; their sum is the overhead.
	KubeReserved      corev1.ResourceList
	SystemReserved    corev1.ResourceList
	EvictionThreshold corev1.ResourceList
	// Allocatable is Capacity minus the overhead, never below zero.
	Allocatable corev1.ResourceList
}

// New computes the labels and resources of info under opts.
func New(info ec2types.InstanceTypeInfo, opts Options) (*InstanceType, error) {
	name := string(info.InstanceType)
	if name == "" {
		return nil, fmt.Errorf("instance type info without a name")
	}
	if info.VCpuInfo == nil || info.VCpuInfo.DefaultVCpus == nil || *info.VCpuInfo.DefaultVCpus <= 0 {
		return nil, fmt.Errorf("instance type %s: EC2 reports no vCPU count", name)
	}
	if info.MemoryInfo == nil || info.MemoryInfo.SizeInMiB == nil || *info.MemoryInfo.SizeInMiB <= 0 {
		return nil, fmt.Errorf("instance type %s: EC2 reports no memory size", name)
	}
	if opts.VMMemoryOverheadPercent < 0 || opts.VMMemoryOverheadPercent >= 1 {
		return nil, fmt.Errorf("VM memory overhead %v: use a fraction in [0, 1), for example 0.075", opts.VMMemoryOverheadPercent)
	}
	capacity, err := Capacity(info, opts)
	if err != nil {
		return nil, fmt.Errorf("instance type %s: %w", name, err)
	}
	kube, err := KubeReserved(info, opts, capacity)
	if err != nil {
		return nil, fmt.Errorf("instance type %s: %w", name, err)
	}
	var system corev1.ResourceList
	if opts.Kubelet != nil {
		if system, err = parseReserved("systemReserved", opts.Kubelet.SystemReserved); err != nil {
			return nil, fmt.Errorf("instance type %s: %w", name, err)
		}
	}
	eviction, err := EvictionThreshold(capacity, opts.Kubelet)
	if err != nil {
		return nil, fmt.Errorf("instance type %s: %w", name, err)
	}
	return &InstanceType{
		Name:              name,
		Labels:            Labels(info, opts),
		Capacity:          capacity,
		KubeReserved:      kube,
		SystemReserved:    system,
		EvictionThreshold: eviction,
		Allocatable:       allocatable(capacity, kube, system, eviction),
	}, nil
}

// ToPacker returns the instance type as the packer consumes it, with the
// given offerings.
func (t *InstanceType) ToPacker(offerings []packer.Offering) *packer.InstanceType {
	return &packer.InstanceType{
		Name:         t.Name,
		Requirements: requirements.FromLabels(t.Labels),
		Capacity:     resources.NewVector(t.Capacity),
		Allocatable:  resources.NewVector(t.Allocatable),
		Offerings:    offerings,
	}
}

// ToPackerInstanceType computes info under opts and returns it as the packer
// consumes it, with the given offerings.
func ToPackerInstanceType(info ec2types.InstanceTypeInfo, opts Options, offerings []packer.Offering) (*packer.InstanceType, error) {
	it, err := New(info, opts)
	if err != nil {
		return nil, err
	}
	return it.ToPacker(offerings), nil
}

func allocatable(capacity corev1.ResourceList, overheads ...corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range capacity {
		a := q.DeepCopy()
		for _, o := range overheads {
			if v, ok := o[name]; ok {
				a.Sub(v)
			}
		}
		if a.Sign() < 0 {
			a = *resource.NewQuantity(0, q.Format)
		}
		out[name] = a
	}
	return out
}

// familyOrDefault returns the family, AL2023 when empty.
func familyOrDefault(f awsv1.AMIFamily) awsv1.AMIFamily {
	if f == "" {
		return awsv1.AMIFamilyAL2023
	}
	return f
}

// IsWindows reports whether the family runs Windows.
func IsWindows(f awsv1.AMIFamily) bool {
	switch f {
	case awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyWindows2025:
		return true
	}
	return false
}

// windowsBuild returns the Windows build label value of a family.
func windowsBuild(f awsv1.AMIFamily) string {
	switch f {
	case awsv1.AMIFamilyWindows2019:
		return wellknown.WindowsBuild2019
	case awsv1.AMIFamilyWindows2022:
		return wellknown.WindowsBuild2022
	case awsv1.AMIFamilyWindows2025:
		return wellknown.WindowsBuild2025
	}
	return ""
}

// instanceTypeScheme splits an instance type name into category, an
// optional "-<n>tb" memory marker (high-memory u-* types), and generation.
var instanceTypeScheme = regexp.MustCompile(`^([a-z]+)(-[0-9]+tb)?([0-9]+).*\.`)

// Labels returns the well-known labels of an instance type: name parts,
// cpu, memory, bandwidth, accelerators, hypervisor, architecture and
// operating system. Labels whose value EC2 does not report are left out.
func Labels(info ec2types.InstanceTypeInfo, opts Options) map[string]string {
	family := familyOrDefault(opts.AMIFamily)
	name := string(info.InstanceType)
	l := map[string]string{wellknown.LabelInstanceType: name}
	if m := instanceTypeScheme.FindStringSubmatch(name); m != nil {
		l[wellknown.LabelInstanceCategory] = m[1]
		l[wellknown.LabelInstanceGeneration] = m[3]
	}
	if fam, size, ok := strings.Cut(name, "."); ok {
		l[wellknown.LabelInstanceFamily] = fam
		l[wellknown.LabelInstanceSize] = size
		l[wellknown.LabelInstanceCapabilityFlex] = strconv.FormatBool(strings.HasSuffix(fam, "-flex"))
	}
	if info.VCpuInfo != nil && info.VCpuInfo.DefaultVCpus != nil {
		l[wellknown.LabelInstanceCPU] = fmt.Sprint(*info.VCpuInfo.DefaultVCpus)
	}
	if info.MemoryInfo != nil && info.MemoryInfo.SizeInMiB != nil {
		l[wellknown.LabelInstanceMemory] = fmt.Sprint(*info.MemoryInfo.SizeInMiB)
	}
	if arch := Arch(info); arch != "" {
		l[wellknown.LabelArch] = arch
	}
	if p := info.ProcessorInfo; p != nil {
		if p.Manufacturer != nil && *p.Manufacturer != "" {
			l[wellknown.LabelInstanceCPUManufacturer] = strings.ToLower(*p.Manufacturer)
		}
		if p.SustainedClockSpeedInGhz != nil {
			l[wellknown.LabelInstanceCPUSustainedClockSpeedMhz] = fmt.Sprintf("%.0f", *p.SustainedClockSpeedInGhz*1000)
		}
	}
	if e := info.EbsInfo; e != nil && e.EbsOptimizedSupport == ec2types.EbsOptimizedSupportDefault &&
		e.EbsOptimizedInfo != nil && e.EbsOptimizedInfo.MaximumBandwidthInMbps != nil {
		l[wellknown.LabelInstanceEBSBandwidth] = fmt.Sprint(*e.EbsOptimizedInfo.MaximumBandwidthInMbps)
	}
	if n := info.NetworkInfo; n != nil {
		var gbps float64
		found := false
		for _, card := range n.NetworkCards {
			if card.BaselineBandwidthInGbps != nil {
				gbps += *card.BaselineBandwidthInGbps
				found = true
			}
		}
		if found {
			l[wellknown.LabelInstanceNetworkBandwidth] = fmt.Sprintf("%.0f", gbps*1000)
		}
		if n.EncryptionInTransitSupported != nil {
			l[wellknown.LabelInstanceEncryptionInTransitSupported] = strconv.FormatBool(*n.EncryptionInTransitSupported)
		}
	}
	if g := info.GpuInfo; g != nil && len(g.Gpus) == 1 {
		gpu := g.Gpus[0]
		l[wellknown.LabelInstanceGPUName] = lowerKebab(deref(gpu.Name))
		l[wellknown.LabelInstanceGPUManufacturer] = lowerKebab(deref(gpu.Manufacturer))
		l[wellknown.LabelInstanceGPUCount] = fmt.Sprint(deref(gpu.Count))
		if gpu.MemoryInfo != nil && gpu.MemoryInfo.SizeInMiB != nil {
			l[wellknown.LabelInstanceGPUMemory] = fmt.Sprint(*gpu.MemoryInfo.SizeInMiB)
		}
	}
	if a := info.InferenceAcceleratorInfo; a != nil && len(a.Accelerators) == 1 {
		acc := a.Accelerators[0]
		l[wellknown.LabelInstanceAcceleratorName] = lowerKebab(deref(acc.Name))
		l[wellknown.LabelInstanceAcceleratorManufacturer] = lowerKebab(deref(acc.Manufacturer))
		l[wellknown.LabelInstanceAcceleratorCount] = fmt.Sprint(deref(acc.Count))
	}
	if nr := info.NeuronInfo; nr != nil && len(nr.NeuronDevices) == 1 {
		dev := nr.NeuronDevices[0]
		l[wellknown.LabelInstanceAcceleratorName] = lowerKebab(deref(dev.Name))
		l[wellknown.LabelInstanceAcceleratorManufacturer] = "aws"
		l[wellknown.LabelInstanceAcceleratorCount] = fmt.Sprint(deref(dev.Count))
	}
	if info.Hypervisor != "" {
		l[wellknown.LabelInstanceHypervisor] = string(info.Hypervisor)
	}
	if s := info.InstanceStorageInfo; s != nil && s.NvmeSupport != "" && s.NvmeSupport != ec2types.EphemeralNvmeSupportUnsupported && s.TotalSizeInGB != nil {
		l[wellknown.LabelInstanceLocalNVMe] = fmt.Sprint(*s.TotalSizeInGB)
	}
	if IsWindows(family) {
		l[wellknown.LabelOS] = wellknown.OSWindows
		l[wellknown.LabelWindowsBuild] = windowsBuild(family)
	} else {
		l[wellknown.LabelOS] = wellknown.OSLinux
	}
	if opts.Region != "" {
		l[wellknown.LabelTopologyRegion] = opts.Region
	}
	return l
}

// Arch returns the Kubernetes architecture of the type, amd64 or arm64, or
// "" when it supports neither.
func Arch(info ec2types.InstanceTypeInfo) string {
	if info.ProcessorInfo == nil {
		return ""
	}
	for _, a := range info.ProcessorInfo.SupportedArchitectures {
		switch a {
		case ec2types.ArchitectureTypeX8664:
			return wellknown.ArchAMD64
		case ec2types.ArchitectureTypeArm64:
			return wellknown.ArchARM64
		}
	}
	return ""
}

// Capacity returns the resources a node of the type reports as capacity.
func Capacity(info ec2types.InstanceTypeInfo, opts Options) (corev1.ResourceList, error) {
	storage, err := EphemeralStorage(info, opts)
	if err != nil {
		return nil, err
	}
	c := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(int64(deref(info.VCpuInfo.DefaultVCpus)), resource.DecimalSI),
		corev1.ResourceMemory:           Memory(info, opts.VMMemoryOverheadPercent),
		corev1.ResourceEphemeralStorage: storage,
		corev1.ResourcePods:             *resource.NewQuantity(MaxPods(info, opts), resource.DecimalSI),
	}
	add := func(name corev1.ResourceName, n int64) {
		if n > 0 {
			c[name] = *resource.NewQuantity(n, resource.DecimalSI)
		}
	}
	if g := info.GpuInfo; g != nil {
		for _, gpu := range g.Gpus {
			switch strings.ToLower(deref(gpu.Manufacturer)) {
			case "nvidia":
				add(ResourceNVIDIAGPU, c.Name(ResourceNVIDIAGPU, resource.DecimalSI).Value()+int64(deref(gpu.Count)))
			case "amd":
				add(ResourceAMDGPU, c.Name(ResourceAMDGPU, resource.DecimalSI).Value()+int64(deref(gpu.Count)))
			case "habana":
				add(ResourceHabanaGaudi, c.Name(ResourceHabanaGaudi, resource.DecimalSI).Value()+int64(deref(gpu.Count)))
			}
		}
	}
	var neuron, cores int64
	if nr := info.NeuronInfo; nr != nil {
		for _, d := range nr.NeuronDevices {
			neuron += int64(deref(d.Count))
			if d.CoreInfo != nil {
				cores += int64(deref(d.Count)) * int64(deref(d.CoreInfo.Count))
			}
		}
	}
	add(ResourceAWSNeuron, neuron)
	add(ResourceAWSNeuronCore, cores)
	if n := info.NetworkInfo; n != nil {
		if n.EfaInfo != nil && n.EfaInfo.MaximumEfaInterfaces != nil {
			add(ResourceEFA, int64(*n.EfaInfo.MaximumEfaInterfaces))
		}
		if IsWindows(familyOrDefault(opts.AMIFamily)) && n.Ipv4AddressesPerInterface != nil {
			add(ResourcePrivateIPv4Address, int64(*n.Ipv4AddressesPerInterface)-1)
		}
	}
	if opts.BranchInterfaces != nil {
		if n, ok := opts.BranchInterfaces(string(info.InstanceType)); ok {
			add(ResourcePodENI, n)
		}
	}
	return c, nil
}

// Memory returns the memory capacity: the type's memory, less 64 MiB that
// Graviton kernels keep for CMA, less the VM overhead rounded up to a MiB.
func Memory(info ec2types.InstanceTypeInfo, overheadPercent float64) resource.Quantity {
	mib := deref(info.MemoryInfo.SizeInMiB)
	if Arch(info) == wellknown.ArchARM64 {
		mib -= 64
	}
	mib -= int64(math.Ceil(float64(mib) * overheadPercent))
	return *resource.NewQuantity(mib*1024*1024, resource.BinarySI)
}

// ENILimitedPods returns the pods the VPC CNI can give addresses to: the
// ENIs of the default network card, less the reserved ones, times the IPv4
// addresses per ENI less the ENI's own, plus 2 for host-network pods.
func ENILimitedPods(info ec2types.InstanceTypeInfo, reservedENIs int) int64 {
	n := info.NetworkInfo
	if n == nil || n.Ipv4AddressesPerInterface == nil {
		return 0
	}
	enis := int64(deref(n.MaximumNetworkInterfaces))
	defaultCard := deref(n.DefaultNetworkCardIndex)
	for _, card := range n.NetworkCards {
		if deref(card.NetworkCardIndex) == defaultCard && card.MaximumNetworkInterfaces != nil {
			enis = int64(*card.MaximumNetworkInterfaces)
			break
		}
	}
	usable := enis - int64(reservedENIs)
	if usable <= 0 {
		return 0
	}
	return usable*(int64(*n.Ipv4AddressesPerInterface)-1) + 2
}

// MaxPods returns the pod capacity of the type under opts.
func MaxPods(info ec2types.InstanceTypeInfo, opts Options) int64 {
	family := familyOrDefault(opts.AMIFamily)
	var count int64
	switch {
	case opts.Kubelet != nil && opts.Kubelet.MaxPods != nil:
		count = int64(*opts.Kubelet.MaxPods)
	case IsWindows(family):
		count = WindowsMaxPods
	default:
		count = ENILimitedPods(info, opts.ReservedENIs+efaOnlyOnPrimaryCard(opts.NetworkInterfaces))
	}
	if family != awsv1.AMIFamilyBottlerocket && opts.Kubelet != nil && opts.Kubelet.PodsPerCore != nil && *opts.Kubelet.PodsPerCore > 0 {
		count = min(count, int64(*opts.Kubelet.PodsPerCore)*int64(deref(info.VCpuInfo.DefaultVCpus)))
	}
	return count
}

// Default devices and sizes of the volume that holds the kubelet's data.
var (
	defaultEphemeralDevice = map[awsv1.AMIFamily]string{
		awsv1.AMIFamilyAL2:          "/dev/xvda",
		awsv1.AMIFamilyAL2023:       "/dev/xvda",
		awsv1.AMIFamilyBottlerocket: "/dev/xvdb",
		awsv1.AMIFamilyWindows2019:  "/dev/sda1",
		awsv1.AMIFamilyWindows2022:  "/dev/sda1",
		awsv1.AMIFamilyWindows2025:  "/dev/sda1",
	}
	defaultVolumeSize        = resource.MustParse("20Gi")
	defaultWindowsVolumeSize = resource.MustParse("50Gi")
)

// EphemeralStorage returns the ephemeral-storage capacity: with RAID0 the
// instance store total; else the size of the block device mapping marked
// rootVolume; else, for Custom, the last mapping; else the mapping on the
// family's kubelet device; else the family default (20Gi, 50Gi on Windows).
func EphemeralStorage(info ec2types.InstanceTypeInfo, opts Options) (resource.Quantity, error) {
	family := familyOrDefault(opts.AMIFamily)
	if opts.InstanceStorePolicy != nil && *opts.InstanceStorePolicy == awsv1.InstanceStorePolicyRAID0 &&
		info.InstanceStorageInfo != nil && info.InstanceStorageInfo.TotalSizeInGB != nil && *info.InstanceStorageInfo.TotalSizeInGB > 0 {
		return *resource.NewQuantity(*info.InstanceStorageInfo.TotalSizeInGB*1000*1000*1000, resource.DecimalSI), nil
	}
	size := func(m awsv1.BlockDeviceMapping) (resource.Quantity, bool) {
		if m.EBS == nil || m.EBS.VolumeSize == nil {
			return resource.Quantity{}, false
		}
		return m.EBS.VolumeSize.DeepCopy(), true
	}
	for _, m := range opts.BlockDeviceMappings {
		if m.RootVolume {
			if q, ok := size(m); ok {
				return q, nil
			}
		}
	}
	if n := len(opts.BlockDeviceMappings); n > 0 && family == awsv1.AMIFamilyCustom {
		if q, ok := size(opts.BlockDeviceMappings[n-1]); ok {
			return q, nil
		}
	}
	if dev, ok := defaultEphemeralDevice[family]; ok {
		for _, m := range opts.BlockDeviceMappings {
			if m.DeviceName != nil && *m.DeviceName == dev {
				if q, ok := size(m); ok {
					return q, nil
				}
			}
		}
	}
	if IsWindows(family) {
		return defaultWindowsVolumeSize.DeepCopy(), nil
	}
	return defaultVolumeSize.DeepCopy(), nil
}

// usesENILimitedMemoryOverhead reports whether the family's bootstrap sizes
// kube-reserved memory from the ENI-limited pod count rather than the
// configured maximum.
func usesENILimitedMemoryOverhead(f awsv1.AMIFamily) bool {
	switch f {
	case awsv1.AMIFamilyAL2, awsv1.AMIFamilyAL2023, awsv1.AMIFamilyCustom:
		return true
	}
	return false
}

// cpuReservedTiers are the kube-reserved cpu tiers, in millicores, with the
// share reserved in parts per ten thousand.
var cpuReservedTiers = []struct{ from, to, perTenThousand int64 }{
	{0, 1000, 600},
	{1000, 2000, 100},
	{2000, 4000, 50},
	{4000, math.MaxInt64, 25},
}

// KubeReservedCPU returns the EKS default kube-reserved cpu for a number of
// vCPUs: 6% of the first core, 1% of the second, 0.5% of the next two and
// 0.25% of the rest.
func KubeReservedCPU(vcpus int64) resource.Quantity {
	milli := vcpus * 1000
	var reserved int64
	for _, t := range cpuReservedTiers {
		if milli <= t.from {
			break
		}
		r := min(milli, t.to) - t.from
		reserved += r * t.perTenThousand / 10000
	}
	return *resource.NewMilliQuantity(reserved, resource.DecimalSI)
}

// KubeReservedMemory returns the EKS default kube-reserved memory for a pod
// count: 11 MiB per pod plus 255 MiB.
func KubeReservedMemory(pods int64) resource.Quantity {
	return *resource.NewQuantity((11*pods+255)*1024*1024, resource.BinarySI)
}

// KubeReserved returns the kube-reserved resources of the type: the EKS
// defaults, overridden per key by kubelet kubeReserved.
func KubeReserved(info ec2types.InstanceTypeInfo, opts Options, capacity corev1.ResourceList) (corev1.ResourceList, error) {
	family := familyOrDefault(opts.AMIFamily)
	pods := capacity.Pods().Value()
	if usesENILimitedMemoryOverhead(family) {
		pods = ENILimitedPods(info, opts.ReservedENIs)
	}
	out := corev1.ResourceList{
		corev1.ResourceCPU:              KubeReservedCPU(int64(deref(info.VCpuInfo.DefaultVCpus))),
		corev1.ResourceMemory:           KubeReservedMemory(pods),
		corev1.ResourceEphemeralStorage: resource.MustParse("1Gi"),
	}
	if opts.Kubelet != nil {
		user, err := parseReserved("kubeReserved", opts.Kubelet.KubeReserved)
		if err != nil {
			return nil, err
		}
		for k, v := range user {
			out[k] = v
		}
	}
	return out, nil
}

// parseReserved parses a kubelet reserved map; pid and other non-resource
// keys do not affect allocatable and are skipped.
func parseReserved(field string, m map[string]string) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	for k, v := range m {
		name := corev1.ResourceName(k)
		switch name {
		case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
		default:
			continue
		}
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("kubelet %s[%s] is %q: use a quantity such as 100m or 1Gi", field, k, v)
		}
		if q.Sign() < 0 {
			return nil, fmt.Errorf("kubelet %s[%s] is %q: reservations cannot be negative", field, k, v)
		}
		out[name] = q
	}
	return out, nil
}

// EvictionThreshold returns the memory and ephemeral storage that the
// kubelet's hard eviction thresholds keep free: 100Mi of memory and 10% of
// ephemeral storage unless evictionHard sets memory.available or
// nodefs.available. Percentages are of capacity; 100% disables the signal.
func EvictionThreshold(capacity corev1.ResourceList, kubelet *awsv1.KubeletConfiguration) (corev1.ResourceList, error) {
	storage := capacity.StorageEphemeral()
	out := corev1.ResourceList{
		corev1.ResourceMemory:           resource.MustParse("100Mi"),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(ceilPercent(storage.Value(), 10), resource.BinarySI),
	}
	if kubelet == nil {
		return out, nil
	}
	for signal, name := range map[string]corev1.ResourceName{signalMemoryAvailable: corev1.ResourceMemory, signalNodeFSAvailable: corev1.ResourceEphemeralStorage} {
		v, ok := kubelet.EvictionHard[signal]
		if !ok {
			continue
		}
		q, err := evictionSignal(capacity[name], v)
		if err != nil {
			return nil, fmt.Errorf("kubelet evictionHard[%s] is %q: %w", signal, v, err)
		}
		out[name] = q
	}
	return out, nil
}

func evictionSignal(capacity resource.Quantity, v string) (resource.Quantity, error) {
	if p, ok := strings.CutSuffix(v, "%"); ok {
		f, err := strconv.ParseFloat(p, 64)
		if err != nil || f < 0 || f > 100 {
			return resource.Quantity{}, fmt.Errorf("use a percentage from 0 to 100, for example 10%%")
		}
		if f == 100 {
			return *resource.NewQuantity(0, resource.BinarySI), nil
		}
		return *resource.NewQuantity(int64(math.Ceil(float64(capacity.Value())*f/100)), resource.BinarySI), nil
	}
	q, err := resource.ParseQuantity(v)
	if err != nil || q.Sign() < 0 {
		return resource.Quantity{}, fmt.Errorf("use a non-negative quantity such as 100Mi or a percentage such as 10%%")
	}
	return q, nil
}

func ceilPercent(v, percent int64) int64 {
	return int64(math.Ceil(float64(v) / 100 * float64(percent)))
}

func lowerKebab(s string) string {
	return strings.ToLower(strings.ReplaceAll(strings.TrimSpace(s), " ", "-"))
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// efaOnlyOnPrimaryCard returns the number of efa-only interfaces on network
// card 0.
func efaOnlyOnPrimaryCard(list []awsv1.NetworkInterface) int {
	n := 0
	for _, ni := range list {
		if ni.NetworkCardIndex == 0 && ni.InterfaceType == awsv1.InterfaceTypeEFAOnly {
			n++
		}
	}
	return n
}
