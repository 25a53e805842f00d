package fake

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	corev1 "k8s.io/api/core/v1"

	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/catalog"
)

// typeEntry is one catalog instance type with its derived network layout.
type typeEntry struct {
	it        *catalog.InstanceType
	enis      int32
	ipv4PerIf int32
	// described is info(), built on first use: the catalog does not change
	// while the fake runs.
	described *ec2types.InstanceTypeInfo
}

type offeringKey struct{ instanceType, zone string }

type poolKey struct{ instanceType, zone, capacityType string }

type priceRecord struct {
	price float64
	at    time.Time
}

func (f *AWS) loadCatalog(restrict []string) {
	all, err := catalog.All()
	if err != nil {
		panic(fmt.Sprintf("fake: loading the instance-type catalog: %v", err))
	}
	want := map[string]bool{}
	for _, n := range restrict {
		if _, ok := catalog.Lookup(n); !ok {
			panic(fmt.Sprintf("fake: Options.InstanceTypes names %q, which is not in the catalog", n))
		}
		want[n] = true
	}
	f.typeIndex = map[string]int{}
	for i := range all {
		it := &all[i]
		if len(want) > 0 && !want[it.Name] {
			continue
		}
		pods := it.Capacity[corev1.ResourcePods]
		enis, ipv4 := ENILayout(int(pods.Value()))
		if l, ok := eniLimits()[it.Name]; ok && int64(l.enis)*int64(l.ipv4-1)+2 == pods.Value() {
			enis, ipv4 = l.enis, l.ipv4
		}
		f.typeIndex[it.Name] = len(f.types)
		f.types = append(f.types, typeEntry{it: it, enis: enis, ipv4PerIf: ipv4})
	}
}

// enisTSV holds the network-interface limits EC2 describes for the types
// whose limits give the catalog's max pods (hack/fake-enis.py writes it).
//
//go:embed enis.tsv
var enisTSV string

type eniLimit struct{ enis, ipv4 int32 }

// eniLimits parses enisTSV once.
var eniLimits = sync.OnceValue(func() map[string]eniLimit {
	out := map[string]eniLimit{}
	for line := range strings.Lines(enisTSV) {
		if strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			panic(fmt.Sprintf("fake: enis.tsv: malformed line %q", line))
		}
		enis, err1 := strconv.ParseInt(f[1], 10, 32)
		ipv4, err2 := strconv.ParseInt(f[2], 10, 32)
		if err1 != nil || err2 != nil || enis < 1 || ipv4 < 1 {
			panic(fmt.Sprintf("fake: enis.tsv: malformed line %q", line))
		}
		out[f[0]] = eniLimit{int32(enis), int32(ipv4)}
	}
	return out
})

// ENILayout returns a network-interface count and IPv4 addresses per interface
// whose ENI-limited pod density, ENIs × (IPv4 per ENI − 1) + 2 (the formula the
// VPC CNI and the provider use), equals pods exactly. The catalog records max
// pods, not the ENI limits, so for a type whose limits enis.tsv does not give
// DescribeInstanceTypes inverts the formula: it
// prefers the per-interface address counts real instance types have
// (50, 30, 15, 10, 6, 4, 3, 2) with at most 16 interfaces, then any per-interface
// count up to 50 with at most 64 interfaces, and finally (pods − 2) interfaces
// of 2 addresses, which always satisfies the formula.
func ENILayout(pods int) (enis, ipv4PerENI int32) {
	n := pods - 2
	if n <= 0 {
		return 1, 1
	}
	for _, ips := range []int{50, 30, 15, 10, 6, 4, 3, 2} {
		if n%(ips-1) == 0 && n/(ips-1) <= 16 {
			return int32(n / (ips - 1)), int32(ips)
		}
	}
	for ips := 50; ips >= 2; ips-- {
		if n%(ips-1) == 0 && n/(ips-1) <= 64 {
			return int32(n / (ips - 1)), int32(ips)
		}
	}
	return int32(n), 2
}

func (f *AWS) lookupType(name string) (*typeEntry, bool) {
	i, ok := f.typeIndex[name]
	if !ok {
		return nil, false
	}
	return &f.types[i], true
}

func labelInt(it *catalog.InstanceType, key string) (int64, bool) {
	v, ok := it.Labels[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}

func ec2Arch(it *catalog.InstanceType) string {
	if it.Arch() == "arm64" {
		return "arm64"
	}
	return "x86_64"
}

func isMetal(it *catalog.InstanceType) bool {
	return strings.Contains(it.Labels[wellknown.LabelInstanceSize], "metal")
}

func manufacturerName(m string) string {
	switch strings.ToLower(m) {
	case "aws":
		return "AWS"
	case "intel":
		return "Intel"
	case "amd":
		return "AMD"
	case "nvidia":
		return "NVIDIA"
	case "apple":
		return "Apple"
	}
	return m
}

// description returns the entry's DescribeInstanceTypes shape. Every call
// returns a copy of one struct built once, sharing its nested values: like
// an SDK output they are for reading. The sharing also lets a caller that
// compares today's description with the last one (the provider's refresh)
// see at the first pointer that nothing changed, and saves building some
// thirty small values per type on every call.
func (t *typeEntry) description() ec2types.InstanceTypeInfo {
	if t.described == nil {
		info := t.info()
		t.described = &info
	}
	return *t.described
}

// info maps a catalog entry to the DescribeInstanceTypes shape.
func (t *typeEntry) info() ec2types.InstanceTypeInfo {
	it := t.it
	vcpu, _ := labelInt(it, wellknown.LabelInstanceCPU)
	mem, _ := labelInt(it, wellknown.LabelInstanceMemory)
	threads := int32(2)
	if it.Arch() == "arm64" || vcpu == 1 {
		threads = 1
	}
	info := ec2types.InstanceTypeInfo{
		InstanceType:                  ec2types.InstanceType(it.Name),
		CurrentGeneration:             ptr(true),
		BareMetal:                     ptr(isMetal(it)),
		BurstablePerformanceSupported: ptr(it.Labels[wellknown.LabelInstanceCategory] == "t"),
		AutoRecoverySupported:         ptr(true),
		DedicatedHostsSupported:       ptr(true),
		HibernationSupported:          ptr(false),
		FreeTierEligible:              ptr(false),
		SupportedInRegion:             ptr(true),
		SupportedRootDeviceTypes:      []ec2types.RootDeviceType{ec2types.RootDeviceTypeEbs},
		SupportedVirtualizationTypes:  []ec2types.VirtualizationType{ec2types.VirtualizationTypeHvm},
		SupportedUsageClasses:         []ec2types.UsageClassType{ec2types.UsageClassTypeOnDemand, ec2types.UsageClassTypeSpot},
		VCpuInfo: &ec2types.VCpuInfo{
			DefaultVCpus:          ptr(int32(vcpu)),
			DefaultCores:          ptr(max(int32(vcpu)/threads, 1)),
			DefaultThreadsPerCore: ptr(threads),
		},
		MemoryInfo: &ec2types.MemoryInfo{SizeInMiB: ptr(mem)},
		ProcessorInfo: &ec2types.ProcessorInfo{
			SupportedArchitectures: []ec2types.ArchitectureType{ec2types.ArchitectureType(ec2Arch(it))},
			Manufacturer:           ptr(manufacturerName(it.Labels[wellknown.LabelInstanceCPUManufacturer])),
		},
		PlacementGroupInfo: &ec2types.PlacementGroupInfo{SupportedStrategies: []ec2types.PlacementGroupStrategy{"cluster", "partition", "spread"}},
	}
	if it.Arch() == "arm64" {
		info.SupportedBootModes = []ec2types.BootModeType{"uefi"}
	} else {
		info.SupportedBootModes = []ec2types.BootModeType{"legacy-bios", "uefi"}
	}
	// Nested virtualization is offered on the eighth-generation Intel
	// Nitro types (c8i, m8i, r8i and their variants), not on bare metal.
	if gen, _ := labelInt(it, wellknown.LabelInstanceGeneration); gen >= 8 && it.Labels[wellknown.LabelInstanceCPUManufacturer] == "intel" && !isMetal(it) {
		info.ProcessorInfo.SupportedFeatures = []ec2types.SupportedAdditionalProcessorFeature{ec2types.SupportedAdditionalProcessorFeatureNestedVirtualization}
	}
	if mhz, ok := labelInt(it, wellknown.LabelInstanceCPUSustainedClockSpeedMhz); ok {
		info.ProcessorInfo.SustainedClockSpeedInGhz = ptr(float64(mhz) / 1000)
	}
	if h := it.Labels[wellknown.LabelInstanceHypervisor]; h != "" && !isMetal(it) {
		info.Hypervisor = ec2types.InstanceTypeHypervisor(h)
	}
	nitro := it.Labels[wellknown.LabelInstanceHypervisor] == "nitro" || isMetal(it)

	// Network. Max pods = ENIs × (IPv4 per ENI − 1) + 2; see ENILayout.
	net := &ec2types.NetworkInfo{
		MaximumNetworkInterfaces:     ptr(t.enis),
		Ipv4AddressesPerInterface:    ptr(t.ipv4PerIf),
		Ipv6AddressesPerInterface:    ptr(t.ipv4PerIf),
		Ipv6Supported:                ptr(nitro),
		MaximumNetworkCards:          ptr(int32(1)),
		DefaultNetworkCardIndex:      ptr(int32(0)),
		EncryptionInTransitSupported: ptr(it.Labels[wellknown.LabelInstanceEncryptionInTransitSupported] == "true"),
		EnaSupport:                   ec2types.EnaSupportRequired,
		EfaSupported:                 ptr(false),
	}
	card := ec2types.NetworkCardInfo{NetworkCardIndex: ptr(int32(0)), MaximumNetworkInterfaces: ptr(t.enis)}
	if bw, ok := labelInt(it, wellknown.LabelInstanceNetworkBandwidth); ok {
		gbps := float64(bw) / 1000
		net.NetworkPerformance = ptr(fmt.Sprintf("%s Gigabit", strconv.FormatFloat(gbps, 'f', -1, 64)))
		card.BaselineBandwidthInGbps = ptr(gbps)
		card.PeakBandwidthInGbps = ptr(gbps)
		card.NetworkPerformance = net.NetworkPerformance
	}
	net.NetworkCards = []ec2types.NetworkCardInfo{card}
	if efa, ok := it.Capacity[corev1.ResourceName("vpc.amazonaws.com/efa")]; ok && efa.Value() > 0 {
		net.EfaSupported = ptr(true)
		net.EfaInfo = &ec2types.EfaInfo{MaximumEfaInterfaces: ptr(int32(efa.Value()))}
		// Types with several EFA interfaces spread them over as many
		// network cards (p5.48xlarge: 32 of each); the catalog does not
		// say how many interfaces the other cards take, two stands in.
		for i := int32(1); i < int32(efa.Value()); i++ {
			net.NetworkCards = append(net.NetworkCards, ec2types.NetworkCardInfo{NetworkCardIndex: ptr(i), MaximumNetworkInterfaces: ptr(int32(2))})
		}
		net.MaximumNetworkCards = ptr(int32(len(net.NetworkCards)))
	}
	info.NetworkInfo = net

	// EBS.
	ebs := &ec2types.EbsInfo{EncryptionSupport: ec2types.EbsEncryptionSupportSupported, EbsOptimizedSupport: ec2types.EbsOptimizedSupportSupported, NvmeSupport: ec2types.EbsNvmeSupportUnsupported}
	if nitro {
		ebs.NvmeSupport = ec2types.EbsNvmeSupportRequired
	}
	if bw, ok := labelInt(it, wellknown.LabelInstanceEBSBandwidth); ok {
		ebs.EbsOptimizedSupport = ec2types.EbsOptimizedSupportDefault
		ebs.EbsOptimizedInfo = &ec2types.EbsOptimizedInfo{BaselineBandwidthInMbps: ptr(int32(bw)), MaximumBandwidthInMbps: ptr(int32(bw))}
	}
	info.EbsInfo = ebs

	// Instance store.
	info.InstanceStorageSupported = ptr(false)
	if gb, ok := labelInt(it, wellknown.LabelInstanceLocalNVMe); ok && gb > 0 {
		info.InstanceStorageSupported = ptr(true)
		info.InstanceStorageInfo = &ec2types.InstanceStorageInfo{
			TotalSizeInGB:     ptr(gb),
			Disks:             []ec2types.DiskInfo{{Count: ptr(int32(1)), SizeInGB: ptr(gb), Type: ec2types.DiskTypeSsd}},
			NvmeSupport:       ec2types.EphemeralNvmeSupportRequired,
			EncryptionSupport: ec2types.InstanceStorageEncryptionSupportRequired,
		}
	}

	// GPUs.
	if n, ok := labelInt(it, wellknown.LabelInstanceGPUCount); ok && n > 0 {
		memMiB, _ := labelInt(it, wellknown.LabelInstanceGPUMemory)
		info.GpuInfo = &ec2types.GpuInfo{
			Gpus: []ec2types.GpuDeviceInfo{{
				Name:         ptr(it.Labels[wellknown.LabelInstanceGPUName]),
				Manufacturer: ptr(manufacturerName(it.Labels[wellknown.LabelInstanceGPUManufacturer])),
				Count:        ptr(int32(n)),
				MemoryInfo:   &ec2types.GpuDeviceMemoryInfo{SizeInMiB: ptr(int32(memMiB))},
			}},
			TotalGpuMemoryInMiB: ptr(int32(n * memMiB)),
		}
	}

	// Accelerators: Neuron devices (manufacturer aws) or inference accelerators.
	if n, ok := labelInt(it, wellknown.LabelInstanceAcceleratorCount); ok && n > 0 {
		name := it.Labels[wellknown.LabelInstanceAcceleratorName]
		manu := it.Labels[wellknown.LabelInstanceAcceleratorManufacturer]
		if manu == "aws" {
			dev := ec2types.NeuronDeviceInfo{Name: ptr(name), Count: ptr(int32(n))}
			if cores, ok := it.Capacity[corev1.ResourceName("aws.amazon.com/neuroncore")]; ok && cores.Value() > 0 {
				dev.CoreInfo = &ec2types.NeuronDeviceCoreInfo{Count: ptr(int32(cores.Value() / n))}
			}
			info.NeuronInfo = &ec2types.NeuronInfo{NeuronDevices: []ec2types.NeuronDeviceInfo{dev}}
		} else {
			info.InferenceAcceleratorInfo = &ec2types.InferenceAcceleratorInfo{Accelerators: []ec2types.InferenceDeviceInfo{{
				Name: ptr(name), Manufacturer: ptr(manufacturerName(manu)), Count: ptr(int32(n)),
			}}}
		}
	}
	return info
}

// DescribeInstanceTypes implements sdk.EC2. Like the real API it pages at 100
// types when MaxResults is not set.
func (f *AWS) DescribeInstanceTypes(_ context.Context, in *ec2.DescribeInstanceTypesInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error) {
	const api = "DescribeInstanceTypes"
	unlock, err := f.lock(api, in)
	defer unlock()
	if err != nil {
		return nil, err
	}
	if in == nil {
		in = &ec2.DescribeInstanceTypesInput{}
	}
	if err := f.dryRun(api, in.DryRun); err != nil {
		return nil, err
	}
	if err := checkFilters(api, in.Filters, "instance-type", "supported-virtualization-type", "processor-info.supported-architecture",
		"current-generation", "bare-metal", "hypervisor", "burstable-performance-supported", "vcpu-info.default-vcpus",
		"memory-info.size-in-mib", "instance-storage-supported", "network-info.efa-supported", "supported-usage-class"); err != nil {
		return nil, err
	}
	var missing []string
	for _, n := range in.InstanceTypes {
		if _, ok := f.lookupType(string(n)); !ok {
			missing = append(missing, string(n))
		}
	}
	if len(missing) > 0 {
		return nil, ec2Error(api, "InvalidInstanceType", "The following supplied instance types do not exist: [%s]", joinIDs(missing))
	}
	key := (&requestKey{}).types(in.InstanceTypes).filters(in.Filters).String()
	selected, _ := listed(f, api, key, func() ([]*typeEntry, error) { return f.selectTypes(in), nil })
	page, next, err := paginate(api, selected, in.NextToken, in.MaxResults, pageSpec{def: 100, min: 5, max: 100})
	if err != nil {
		return nil, err
	}
	out := &ec2.DescribeInstanceTypesOutput{NextToken: next, InstanceTypes: make([]ec2types.InstanceTypeInfo, 0, len(page))}
	for _, t := range page {
		out.InstanceTypes = append(out.InstanceTypes, t.description())
	}
	return out, nil
}

// selectTypes returns the types a DescribeInstanceTypes request selects.
func (f *AWS) selectTypes(in *ec2.DescribeInstanceTypesInput) []*typeEntry {
	var selected []*typeEntry
	for i := range f.types {
		t := &f.types[i]
		if len(in.InstanceTypes) > 0 && !contains(instanceTypeStrings(in.InstanceTypes), t.it.Name) {
			continue
		}
		attr := func(name string) []string {
			it := t.it
			switch name {
			case "instance-type":
				return one(it.Name)
			case "supported-virtualization-type":
				return one("hvm")
			case "processor-info.supported-architecture":
				return one(ec2Arch(it))
			case "current-generation":
				return one("true")
			case "bare-metal":
				return one(strconv.FormatBool(isMetal(it)))
			case "hypervisor":
				if !isMetal(it) {
					return one(it.Labels[wellknown.LabelInstanceHypervisor])
				}
			case "burstable-performance-supported":
				return one(strconv.FormatBool(it.Labels[wellknown.LabelInstanceCategory] == "t"))
			case "vcpu-info.default-vcpus":
				return one(it.Labels[wellknown.LabelInstanceCPU])
			case "memory-info.size-in-mib":
				return one(it.Labels[wellknown.LabelInstanceMemory])
			case "instance-storage-supported":
				_, ok := it.Labels[wellknown.LabelInstanceLocalNVMe]
				return one(strconv.FormatBool(ok))
			case "network-info.efa-supported":
				efa := it.Capacity[corev1.ResourceName("vpc.amazonaws.com/efa")]
				return one(strconv.FormatBool(efa.Value() > 0))
			case "supported-usage-class":
				return []string{"on-demand", "spot"}
			}
			return nil
		}
		if matchFilters(in.Filters, nil, attr) {
			selected = append(selected, t)
		}
	}
	return selected
}

func instanceTypeStrings(in []ec2types.InstanceType) []string {
	out := make([]string, len(in))
	for i, t := range in {
		out[i] = string(t)
	}
	return out
}

// SetOffered adds or removes the offering of an instance type in a zone
// (every catalog type is offered in every zone by default).
func (f *AWS) SetOffered(instanceType, zone string, offered bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := offeringKey{instanceType, zone}
	if offered {
		delete(f.offeringRemoved, k)
	} else {
		f.offeringRemoved[k] = true
	}
	f.catalogChanged()
}

func (f *AWS) offered(instanceType, zone string) bool {
	_, ok := f.lookupType(instanceType)
	return ok && f.hasZone(zone) && !f.offeringRemoved[offeringKey{instanceType, zone}]
}

// DescribeInstanceTypeOfferings implements sdk.EC2.
func (f *AWS) DescribeInstanceTypeOfferings(_ context.Context, in *ec2.DescribeInstanceTypeOfferingsInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstanceTypeOfferingsOutput, error) {
	const api = "DescribeInstanceTypeOfferings"
	unlock, err := f.lock(api, in)
	defer unlock()
	if err != nil {
		return nil, err
	}
	if in == nil {
		in = &ec2.DescribeInstanceTypeOfferingsInput{}
	}
	if err := f.dryRun(api, in.DryRun); err != nil {
		return nil, err
	}
	if err := checkFilters(api, in.Filters, "instance-type", "location"); err != nil {
		return nil, err
	}
	lt := in.LocationType
	if lt == "" {
		lt = ec2types.LocationTypeRegion
	}
	key := (&requestKey{}).add(string(lt)).filters(in.Filters).String()
	all, err := listed(f, api, key, func() ([]offeringRecord, error) { return f.listOfferings(api, lt, in.Filters) })
	if err != nil {
		return nil, err
	}
	records, next, err := paginate(api, all, in.NextToken, in.MaxResults, pageSpec{def: 1000, min: 5, max: 1000})
	if err != nil {
		return nil, err
	}
	page := make([]ec2types.InstanceTypeOffering, 0, len(records))
	for _, r := range records {
		page = append(page, ec2types.InstanceTypeOffering{InstanceType: ec2types.InstanceType(r.instanceType), Location: ptr(r.location), LocationType: lt})
	}
	return &ec2.DescribeInstanceTypeOfferingsOutput{InstanceTypeOfferings: page, NextToken: next}, nil
}

// listOfferings returns every offering of the catalog at location type lt
// that the filters select.
func (f *AWS) listOfferings(api string, lt ec2types.LocationType, filters []ec2types.Filter) ([]offeringRecord, error) {
	var out []offeringRecord
	for _, t := range f.types {
		name := t.it.Name
		var locations []string
		switch lt {
		case ec2types.LocationTypeRegion:
			for _, z := range f.zones {
				if f.offered(name, z.name) {
					locations = []string{f.opts.Region}
					break
				}
			}
		case ec2types.LocationTypeAvailabilityZone, ec2types.LocationTypeAvailabilityZoneId:
			for _, z := range f.zones {
				if !f.offered(name, z.name) {
					continue
				}
				if lt == ec2types.LocationTypeAvailabilityZone {
					locations = append(locations, z.name)
				} else {
					locations = append(locations, z.id)
				}
			}
		default:
			return nil, ec2Error(api, "InvalidParameterValue", "Value (%s) for parameter locationType is invalid.", lt)
		}
		for _, loc := range locations {
			attr := func(n string) []string {
				switch n {
				case "instance-type":
					return one(name)
				case "location":
					return one(loc)
				}
				return nil
			}
			if matchFilters(filters, nil, attr) {
				out = append(out, offeringRecord{instanceType: name, location: loc})
			}
		}
	}
	return out, nil
}

// seededHash is a deterministic hash of the seed and the given strings.
func (f *AWS) seededHash(parts ...string) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d", f.opts.Seed)
	for _, p := range parts {
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	return h.Sum64()
}

// OnDemandPrice returns the on-demand price of a type (the catalog's, or the
// one set with SetOnDemandPrice); false when the type is not sold on demand.
func (f *AWS) OnDemandPrice(instanceType string) (float64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.onDemandPrice(instanceType)
	return p, p > 0
}

func (f *AWS) onDemandPrice(instanceType string) float64 {
	if p, ok := f.onDemandPrices[instanceType]; ok {
		return p
	}
	t, ok := f.lookupType(instanceType)
	if !ok {
		return 0
	}
	return t.it.OnDemandPricePerHour
}

// SetOnDemandPrice overrides the on-demand price of a type.
func (f *AWS) SetOnDemandPrice(instanceType string, price float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.onDemandPrices[instanceType] = price
	f.catalogChanged()
}

// SpotPrice returns the current spot price of a pool; false when the type is
// not priced (no on-demand price and none set) or not offered in the zone.
func (f *AWS) SpotPrice(instanceType, zone string) (float64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, _ := f.spotPrice(instanceType, zone)
	return p, p > 0
}

// spotPrice is SpotFraction × on-demand × a per-pool factor in [0.9, 1.1]
// derived from the seed, unless set with SetSpotPrice.
func (f *AWS) spotPrice(instanceType, zone string) (float64, time.Time) {
	if !f.offered(instanceType, zone) {
		return 0, time.Time{}
	}
	if r, ok := f.spotPrices[offeringKey{instanceType, zone}]; ok {
		return r.price, r.at
	}
	od := f.onDemandPrice(instanceType)
	if od <= 0 {
		return 0, time.Time{}
	}
	variation := float64(int(f.seededHash("spot", instanceType, zone)%2001)-1000) / 10000
	p := od * f.opts.SpotFraction * (1 + variation)
	return float64(int64(p*1e6+0.5)) / 1e6, time.Unix(0, 0).UTC()
}

// SetSpotPrice sets the spot price of a pool from now on.
func (f *AWS) SetSpotPrice(instanceType, zone string, price float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.spotPrices[offeringKey{instanceType, zone}] = priceRecord{price: price, at: f.now()}
	f.catalogChanged()
}

// DescribeSpotPriceHistory implements sdk.EC2. It returns the current price of
// every selected pool (one entry per pool and product description).
func (f *AWS) DescribeSpotPriceHistory(_ context.Context, in *ec2.DescribeSpotPriceHistoryInput, _ ...func(*ec2.Options)) (*ec2.DescribeSpotPriceHistoryOutput, error) {
	const api = "DescribeSpotPriceHistory"
	unlock, err := f.lock(api, in)
	defer unlock()
	if err != nil {
		return nil, err
	}
	if in == nil {
		in = &ec2.DescribeSpotPriceHistoryInput{}
	}
	if err := f.dryRun(api, in.DryRun); err != nil {
		return nil, err
	}
	if err := checkFilters(api, in.Filters, "instance-type", "availability-zone", "product-description"); err != nil {
		return nil, err
	}
	descriptions := in.ProductDescriptions
	if len(descriptions) == 0 {
		descriptions = []string{"Linux/UNIX"}
	}
	descriptions = append([]string(nil), descriptions...)
	sort.Strings(descriptions)
	key := (&requestKey{}).types(in.InstanceTypes).ptr(in.AvailabilityZone).ptr(in.AvailabilityZoneId).
		filters(in.Filters).add(descriptions...).String()
	all, _ := listed(f, api, key, func() ([]spotRecord, error) { return f.listSpotPrices(in, descriptions), nil })
	records, next, err := paginate(api, all, in.NextToken, in.MaxResults, pageSpec{def: 1000, max: 1000})
	if err != nil {
		return nil, err
	}
	page := make([]ec2types.SpotPrice, 0, len(records))
	for _, r := range records {
		page = append(page, r.render())
	}
	return &ec2.DescribeSpotPriceHistoryOutput{SpotPriceHistory: page, NextToken: next}, nil
}

// listSpotPrices returns the current price of every pool the request
// selects, once per product description.
func (f *AWS) listSpotPrices(in *ec2.DescribeSpotPriceHistoryInput, descriptions []string) []spotRecord {
	types := instanceTypeStrings(in.InstanceTypes)
	var out []spotRecord
	for _, t := range f.types {
		name := t.it.Name
		if len(types) > 0 && !contains(types, name) {
			continue
		}
		for _, z := range f.zones {
			if in.AvailabilityZone != nil && *in.AvailabilityZone != z.name {
				continue
			}
			if in.AvailabilityZoneId != nil && *in.AvailabilityZoneId != z.id {
				continue
			}
			price, at := f.spotPrice(name, z.name)
			if price <= 0 {
				continue
			}
			for _, d := range descriptions {
				if d != "Linux/UNIX" && d != "Linux/UNIX (Amazon VPC)" {
					continue
				}
				attr := func(n string) []string {
					switch n {
					case "instance-type":
						return one(name)
					case "availability-zone":
						return one(z.name)
					case "product-description":
						return one(d)
					}
					return nil
				}
				if !matchFilters(in.Filters, nil, attr) {
					continue
				}
				out = append(out, spotRecord{instanceType: name, zone: z.name, zoneID: z.id, description: d,
					price: strconv.FormatFloat(price, 'f', 6, 64), at: at})
			}
		}
	}
	return out
}

var regionLocations = map[string]string{
	"us-east-1": "US East (N. Virginia)", "us-east-2": "US East (Ohio)",
	"us-west-1": "US West (N. California)", "us-west-2": "US West (Oregon)",
	"eu-west-1": "EU (Ireland)", "eu-central-1": "EU (Frankfurt)",
	"ap-northeast-1": "Asia Pacific (Tokyo)", "ap-southeast-1": "Asia Pacific (Singapore)",
	"ap-south-1": "Asia Pacific (Mumbai)",
}

// GetProducts implements sdk.Pricing for service code AmazonEC2: one Linux,
// on-demand, pre-installed-software-free product per priced instance type of
// the fake's region, in the Price List JSON shape (shared tenancy and product
// family "Compute Instance"; bare-metal types as dedicated "Compute Instance
// (bare metal)"). Filters are TERM_MATCH on product attributes.
func (f *AWS) GetProducts(_ context.Context, in *pricing.GetProductsInput, _ ...func(*pricing.Options)) (*pricing.GetProductsOutput, error) {
	const api = "GetProducts"
	unlock, err := f.lock(api, in)
	defer unlock()
	if err != nil {
		return nil, err
	}
	if in == nil || deref(in.ServiceCode) == "" {
		return nil, newAPIError(svcPricing, api, "InvalidParameterException", "Input parameters ServiceCode is invalid", 400)
	}
	key := (&requestKey{}).ptr(in.ServiceCode).pricingFilters(in.Filters).String()
	out, _ := listed(f, api, key, func() ([]string, error) { return f.listProducts(in), nil })
	page, next, err := paginate(api, out, in.NextToken, in.MaxResults, pageSpec{def: 100, min: 1, max: 100})
	if err != nil {
		return nil, err
	}
	return &pricing.GetProductsOutput{FormatVersion: ptr("aws_v1"), PriceList: page, NextToken: next}, nil
}

// listProducts returns the Price List documents a GetProducts request
// selects.
func (f *AWS) listProducts(in *pricing.GetProductsInput) []string {
	var out []string
	if deref(in.ServiceCode) == "AmazonEC2" {
		for _, t := range f.types {
			price := f.onDemandPrice(t.it.Name)
			if price <= 0 {
				continue
			}
			pr := f.product(t.it)
			ok := true
			for _, flt := range in.Filters {
				field, value := deref(flt.Field), deref(flt.Value)
				var have string
				switch field {
				case "productFamily":
					have = pr.family
				case "ServiceCode", "servicecode":
					have = "AmazonEC2"
				default:
					have = pr.attrs[field]
				}
				if have != value {
					ok = false
					break
				}
			}
			if ok {
				out = append(out, f.productDocument(pr, price))
			}
		}
	}
	return out
}

// product is one instance type's Price List product. Its attributes depend
// only on the type and the region, and its document also on the price, so
// both are kept: a client pages through the whole list on every price
// refresh, and rendering 1,000-odd documents each time was most of the
// in-memory AWS's work. The document is rendered again when the price
// changes (SetOnDemandPrice).
type product struct {
	name   string
	family string
	attrs  map[string]string
	price  float64 // of doc; 0 before it is first rendered
	doc    string
}

// product returns the type's product, computing its attributes the first
// time. The caller holds f.mu.
func (f *AWS) product(it *catalog.InstanceType) *product {
	if pr, ok := f.products[it.Name]; ok {
		return pr
	}
	pr := &product{name: it.Name, family: "Compute Instance", attrs: f.productAttributes(it)}
	if isMetal(it) {
		pr.family = "Compute Instance (bare metal)"
	}
	if f.products == nil {
		f.products = map[string]*product{}
	}
	f.products[it.Name] = pr
	return pr
}

// productDocument returns the product's document at price, rendering it
// when the price differs from the last one. The caller holds f.mu.
func (f *AWS) productDocument(pr *product, price float64) string {
	if pr.doc == "" || pr.price != price {
		pr.doc, pr.price = f.productJSON(pr.name, pr.family, pr.attrs, price), price
	}
	return pr.doc
}

func (f *AWS) productAttributes(it *catalog.InstanceType) map[string]string {
	loc := regionLocations[f.opts.Region]
	if loc == "" {
		loc = f.opts.Region
	}
	tenancy := "Shared"
	if isMetal(it) {
		tenancy = "Dedicated"
	}
	mem, _ := labelInt(it, wellknown.LabelInstanceMemory)
	return map[string]string{
		"instanceType":    it.Name,
		"instanceFamily":  "General purpose",
		"regionCode":      f.opts.Region,
		"location":        loc,
		"locationType":    "AWS Region",
		"operatingSystem": "Linux",
		"tenancy":         tenancy,
		"capacitystatus":  "Used",
		"preInstalledSw":  "NA",
		"marketoption":    "OnDemand",
		"licenseModel":    "No License required",
		"operation":       "RunInstances",
		"servicecode":     "AmazonEC2",
		"usagetype":       "BoxUsage:" + it.Name,
		"vcpu":            it.Labels[wellknown.LabelInstanceCPU],
		"memory":          strconv.FormatFloat(float64(mem)/1024, 'f', -1, 64) + " GiB",
	}
}

func (f *AWS) productJSON(name, family string, attrs map[string]string, price float64) string {
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	h := f.seededHash("sku", f.opts.Region, name)
	sku := make([]byte, 16)
	for i := range sku {
		sku[i] = alnum[h%uint64(len(alnum))]
		h = h/uint64(len(alnum)) + uint64(i)*2654435761
	}
	s := string(sku)
	const offer, rate = "JRTCKXETXF", "6YS6EN2CT7"
	doc := map[string]any{
		"product": map[string]any{
			"productFamily": family,
			"attributes":    attrs,
			"sku":           s,
		},
		"serviceCode": "AmazonEC2",
		"terms": map[string]any{
			"OnDemand": map[string]any{
				s + "." + offer: map[string]any{
					"priceDimensions": map[string]any{
						s + "." + offer + "." + rate: map[string]any{
							"unit":         "Hrs",
							"endRange":     "Inf",
							"description":  fmt.Sprintf("$%s per On Demand Linux %s Instance Hour", strconv.FormatFloat(price, 'f', -1, 64), name),
							"appliesTo":    []string{},
							"rateCode":     s + "." + offer + "." + rate,
							"beginRange":   "0",
							"pricePerUnit": map[string]string{"USD": strconv.FormatFloat(price, 'f', 10, 64)},
						},
					},
					"sku":            s,
					"effectiveDate":  "2026-07-01T00:00:00Z",
					"offerTermCode":  offer,
					"termAttributes": map[string]string{},
				},
			},
		},
		"version":         "20260701000000",
		"publicationDate": "2026-07-01T00:00:00Z",
	}
	b, err := json.Marshal(doc)
	if err != nil {
		panic(err)
	}
	return string(b)
}
