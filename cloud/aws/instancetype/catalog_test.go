package instancetype

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"

	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/catalog"
)

// infoFromCatalog rebuilds a DescribeInstanceTypes answer from a catalog
// entry. The catalog records labels and allocatable, not ENI data, so the
// network is modelled as one ENI with pods-1 addresses, which yields the
// catalog's pod count through the ENI formula.
func infoFromCatalog(t *testing.T, ct *catalog.InstanceType) ec2types.InstanceTypeInfo {
	t.Helper()
	atoi := func(key string) int64 {
		v, err := strconv.ParseInt(ct.Labels[key], 10, 64)
		if err != nil {
			t.Fatalf("%s: label %s: %v", ct.Name, key, err)
		}
		return v
	}
	has := func(key string) bool { _, ok := ct.Labels[key]; return ok }
	alloc := func(name corev1.ResourceName) (int32, bool) {
		q, ok := ct.Allocatable[name]
		return int32(q.Value()), ok
	}
	arch := ec2types.ArchitectureTypeX8664
	if ct.Labels[wellknown.LabelArch] == wellknown.ArchARM64 {
		arch = ec2types.ArchitectureTypeArm64
	}
	pods := ct.Allocatable.Pods().Value()
	info := ec2types.InstanceTypeInfo{
		InstanceType: ec2types.InstanceType(ct.Name),
		VCpuInfo:     &ec2types.VCpuInfo{DefaultVCpus: aws.Int32(int32(atoi(wellknown.LabelInstanceCPU)))},
		MemoryInfo:   &ec2types.MemoryInfo{SizeInMiB: aws.Int64(atoi(wellknown.LabelInstanceMemory))},
		ProcessorInfo: &ec2types.ProcessorInfo{
			SupportedArchitectures:   []ec2types.ArchitectureType{arch},
			Manufacturer:             aws.String(ct.Labels[wellknown.LabelInstanceCPUManufacturer]),
			SustainedClockSpeedInGhz: aws.Float64(float64(atoi(wellknown.LabelInstanceCPUSustainedClockSpeedMhz)) / 1000),
		},
		NetworkInfo: &ec2types.NetworkInfo{
			MaximumNetworkInterfaces:     aws.Int32(1),
			Ipv4AddressesPerInterface:    aws.Int32(int32(pods - 1)),
			DefaultNetworkCardIndex:      aws.Int32(0),
			NetworkCards:                 []ec2types.NetworkCardInfo{{NetworkCardIndex: aws.Int32(0), MaximumNetworkInterfaces: aws.Int32(1)}},
			EncryptionInTransitSupported: aws.Bool(ct.Labels[wellknown.LabelInstanceEncryptionInTransitSupported] == "true"),
		},
		Hypervisor: ec2types.InstanceTypeHypervisor(ct.Labels[wellknown.LabelInstanceHypervisor]),
	}
	if has(wellknown.LabelInstanceNetworkBandwidth) {
		info.NetworkInfo.NetworkCards[0].BaselineBandwidthInGbps = aws.Float64(float64(atoi(wellknown.LabelInstanceNetworkBandwidth)) / 1000)
	}
	if n, ok := alloc(ResourceEFA); ok {
		info.NetworkInfo.EfaInfo = &ec2types.EfaInfo{MaximumEfaInterfaces: aws.Int32(n)}
	}
	if has(wellknown.LabelInstanceEBSBandwidth) {
		info.EbsInfo = &ec2types.EbsInfo{
			EbsOptimizedSupport: ec2types.EbsOptimizedSupportDefault,
			EbsOptimizedInfo:    &ec2types.EbsOptimizedInfo{MaximumBandwidthInMbps: aws.Int32(int32(atoi(wellknown.LabelInstanceEBSBandwidth)))},
		}
	}
	if has(wellknown.LabelInstanceLocalNVMe) {
		info.InstanceStorageInfo = &ec2types.InstanceStorageInfo{NvmeSupport: ec2types.EphemeralNvmeSupportRequired, TotalSizeInGB: aws.Int64(atoi(wellknown.LabelInstanceLocalNVMe))}
	}
	if has(wellknown.LabelInstanceGPUCount) {
		info.GpuInfo = &ec2types.GpuInfo{Gpus: []ec2types.GpuDeviceInfo{{
			Name:         aws.String(ct.Labels[wellknown.LabelInstanceGPUName]),
			Manufacturer: aws.String(ct.Labels[wellknown.LabelInstanceGPUManufacturer]),
			Count:        aws.Int32(int32(atoi(wellknown.LabelInstanceGPUCount))),
			MemoryInfo:   &ec2types.GpuDeviceMemoryInfo{SizeInMiB: aws.Int32(int32(atoi(wellknown.LabelInstanceGPUMemory)))},
		}}}
	}
	if n, ok := alloc(ResourceAWSNeuron); ok {
		cores, _ := alloc(ResourceAWSNeuronCore)
		info.NeuronInfo = &ec2types.NeuronInfo{NeuronDevices: []ec2types.NeuronDeviceInfo{{
			Name:     aws.String(ct.Labels[wellknown.LabelInstanceAcceleratorName]),
			Count:    aws.Int32(n),
			CoreInfo: &ec2types.NeuronDeviceCoreInfo{Count: aws.Int32(cores / n)},
		}}}
	} else if has(wellknown.LabelInstanceAcceleratorCount) {
		info.InferenceAcceleratorInfo = &ec2types.InferenceAcceleratorInfo{Accelerators: []ec2types.InferenceDeviceInfo{{
			Name:         aws.String(ct.Labels[wellknown.LabelInstanceAcceleratorName]),
			Manufacturer: aws.String(ct.Labels[wellknown.LabelInstanceAcceleratorManufacturer]),
			Count:        aws.Int32(int32(atoi(wellknown.LabelInstanceAcceleratorCount))),
		}}}
	}
	return info
}

// compare returns the differences between what New computed and the catalog.
func compare(got *InstanceType, ct *catalog.InstanceType) []string {
	var diffs []string
	for name, want := range ct.Allocatable {
		g, ok := got.Allocatable[name]
		if !ok || g.Cmp(want) != 0 {
			diffs = append(diffs, fmt.Sprintf("allocatable %s = %s, catalog %s", name, g.String(), want.String()))
		}
	}
	for name, g := range got.Allocatable {
		if _, ok := ct.Allocatable[name]; !ok {
			diffs = append(diffs, fmt.Sprintf("allocatable %s = %s, not in catalog", name, g.String()))
		}
	}
	for k, want := range ct.Labels {
		if got.Labels[k] != want {
			diffs = append(diffs, fmt.Sprintf("label %s = %q, catalog %q", k, got.Labels[k], want))
		}
	}
	for k, v := range got.Labels {
		if _, ok := ct.Labels[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("label %s = %q, not in catalog", k, v))
		}
	}
	return diffs
}

// TestCatalogRepresentative checks a hand-picked set of types exactly: the
// catalog was computed for AL2023 with default settings.
func TestCatalogRepresentative(t *testing.T) {
	for _, name := range []string{
		"m6i.large", "c7g.xlarge", "r6i.2xlarge", "p4d.24xlarge", "t3.micro", "a1.medium",
		"m5.metal", "g4ad.xlarge", "inf2.xlarge", "trn1.32xlarge", "c7i-flex.large", "u-6tb1.112xlarge",
	} {
		t.Run(name, func(t *testing.T) {
			ct, ok := catalog.Lookup(name)
			if !ok {
				t.Fatalf("%s is not in the catalog: the representative set names types the embedded catalog must hold", name)
			}
			got, err := New(infoFromCatalog(t, ct), DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range compare(got, ct) {
				t.Error(d)
			}
		})
	}
}

// TestCatalogAll runs the cross-check over the whole catalog and requires
// every type to match.
func TestCatalogAll(t *testing.T) {
	all, err := catalog.All()
	if err != nil {
		t.Fatal(err)
	}
	matched := 0
	var failures []string
	for i := range all {
		ct := &all[i]
		got, err := New(infoFromCatalog(t, ct), DefaultOptions())
		if err != nil {
			failures = append(failures, fmt.Sprintf("%s: %v", ct.Name, err))
			continue
		}
		if d := compare(got, ct); len(d) > 0 {
			failures = append(failures, fmt.Sprintf("%s: %v", ct.Name, d))
			continue
		}
		matched++
	}
	t.Logf("%d of %d catalog types match exactly (labels and allocatable)", matched, len(all))
	for i, f := range failures {
		if i == 20 {
			t.Errorf("… and %d more", len(failures)-20)
			break
		}
		t.Error(f)
	}
}
