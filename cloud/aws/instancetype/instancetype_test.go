package instancetype

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
)

// m5xlarge is m5.xlarge as DescribeInstanceTypes reports it (4 ENIs with 15
// addresses each: 58 pods).
func m5xlarge() ec2types.InstanceTypeInfo {
	return ec2types.InstanceTypeInfo{
		InstanceType:  "m5.xlarge",
		VCpuInfo:      &ec2types.VCpuInfo{DefaultVCpus: aws.Int32(4)},
		MemoryInfo:    &ec2types.MemoryInfo{SizeInMiB: aws.Int64(16384)},
		ProcessorInfo: &ec2types.ProcessorInfo{SupportedArchitectures: []ec2types.ArchitectureType{"i386", "x86_64"}, Manufacturer: aws.String("Intel")},
		NetworkInfo: &ec2types.NetworkInfo{
			MaximumNetworkInterfaces:  aws.Int32(4),
			Ipv4AddressesPerInterface: aws.Int32(15),
			DefaultNetworkCardIndex:   aws.Int32(0),
			NetworkCards:              []ec2types.NetworkCardInfo{{NetworkCardIndex: aws.Int32(0), MaximumNetworkInterfaces: aws.Int32(4), BaselineBandwidthInGbps: aws.Float64(1.25)}},
		},
		InstanceStorageInfo: &ec2types.InstanceStorageInfo{NvmeSupport: ec2types.EphemeralNvmeSupportRequired, TotalSizeInGB: aws.Int64(150)},
		Hypervisor:          ec2types.InstanceTypeHypervisorNitro,
	}
}

func q(s string) resource.Quantity { return resource.MustParse(s) }

func TestNew(t *testing.T) {
	raid0 := awsv1.InstanceStorePolicyRAID0
	withOpts := func(f func(*Options)) Options {
		o := DefaultOptions()
		o.BranchInterfaces = nil
		f(&o)
		return o
	}
	tests := []struct {
		name        string
		opts        Options
		capacity    map[corev1.ResourceName]string
		allocatable map[corev1.ResourceName]string
		labels      map[string]string
	}{
		{
			name:        "AL2023 defaults",
			opts:        withOpts(func(*Options) {}),
			capacity:    map[corev1.ResourceName]string{"cpu": "4", "memory": "15155Mi", "pods": "58", "ephemeral-storage": "20Gi"},
			allocatable: map[corev1.ResourceName]string{"cpu": "3920m", "memory": "14162Mi", "pods": "58", "ephemeral-storage": "17Gi"},
			labels:      map[string]string{wellknown.LabelOS: "linux", wellknown.LabelArch: "amd64", wellknown.LabelInstanceCPUManufacturer: "intel", wellknown.LabelInstanceNetworkBandwidth: "1250", wellknown.LabelInstanceLocalNVMe: "150", wellknown.LabelInstanceGeneration: "5", wellknown.LabelInstanceCategory: "m"},
		},
		{
			name: "maxPods keeps ENI-limited kube-reserved memory on AL2023",
			opts: withOpts(func(o *Options) { o.Kubelet = &awsv1.KubeletConfiguration{MaxPods: aws.Int32(20)} }),
			// 15155 − (11×58+255) − 100
			allocatable: map[corev1.ResourceName]string{"memory": "14162Mi", "pods": "20"},
		},
		{
			name: "maxPods sizes kube-reserved memory on Bottlerocket",
			opts: withOpts(func(o *Options) {
				o.AMIFamily = awsv1.AMIFamilyBottlerocket
				o.Kubelet = &awsv1.KubeletConfiguration{MaxPods: aws.Int32(20)}
			}),
			allocatable: map[corev1.ResourceName]string{"memory": "14580Mi", "pods": "20"},
		},
		{
			name:        "podsPerCore caps pods",
			opts:        withOpts(func(o *Options) { o.Kubelet = &awsv1.KubeletConfiguration{PodsPerCore: aws.Int32(2)} }),
			allocatable: map[corev1.ResourceName]string{"pods": "8"},
		},
		{
			name: "Bottlerocket ignores podsPerCore",
			opts: withOpts(func(o *Options) {
				o.AMIFamily = awsv1.AMIFamilyBottlerocket
				o.Kubelet = &awsv1.KubeletConfiguration{PodsPerCore: aws.Int32(2)}
			}),
			allocatable: map[corev1.ResourceName]string{"pods": "58"},
		},
		{
			name:        "reserved ENIs",
			opts:        withOpts(func(o *Options) { o.ReservedENIs = 1 }),
			allocatable: map[corev1.ResourceName]string{"pods": "44", "memory": "14316Mi"},
		},
		{
			name:        "Windows",
			opts:        withOpts(func(o *Options) { o.AMIFamily = awsv1.AMIFamilyWindows2022 }),
			capacity:    map[corev1.ResourceName]string{"pods": "110", "ephemeral-storage": "50Gi", ResourcePrivateIPv4Address: "14"},
			allocatable: map[corev1.ResourceName]string{"memory": "13590Mi"},
			labels:      map[string]string{wellknown.LabelOS: "windows", wellknown.LabelWindowsBuild: "10.0.20348"},
		},
		{
			name: "kubelet reservations and eviction",
			opts: withOpts(func(o *Options) {
				o.Kubelet = &awsv1.KubeletConfiguration{
					KubeReserved:   map[string]string{"cpu": "200m", "pid": "100"},
					SystemReserved: map[string]string{"memory": "1Gi", "cpu": "100m"},
					EvictionHard:   map[string]string{"memory.available": "5%", "nodefs.available": "100%"},
					EvictionSoft:   map[string]string{"memory.available": "2Gi"},
				}
			}),
			// memory: 15155Mi − 893Mi − 1Gi − 5% of 15155Mi
			allocatable: map[corev1.ResourceName]string{"cpu": "3700m", "memory": "12779776Ki", "ephemeral-storage": "19Gi"},
		},
		{
			name:        "zero VM overhead",
			opts:        withOpts(func(o *Options) { o.VMMemoryOverheadPercent = 0 }),
			capacity:    map[corev1.ResourceName]string{"memory": "16Gi"},
			allocatable: map[corev1.ResourceName]string{},
		},
		{
			name:        "RAID0 instance store",
			opts:        withOpts(func(o *Options) { o.InstanceStorePolicy = &raid0 }),
			capacity:    map[corev1.ResourceName]string{"ephemeral-storage": "150G"},
			allocatable: map[corev1.ResourceName]string{"ephemeral-storage": "133926258176"},
		},
		{
			name: "root volume mapping",
			opts: withOpts(func(o *Options) {
				size := q("100Gi")
				o.BlockDeviceMappings = []awsv1.BlockDeviceMapping{{DeviceName: aws.String("/dev/xvdb"), EBS: &awsv1.BlockDevice{VolumeSize: &size}, RootVolume: true}}
			}),
			capacity: map[corev1.ResourceName]string{"ephemeral-storage": "100Gi"},
		},
		{
			name: "family device mapping",
			opts: withOpts(func(o *Options) {
				o.AMIFamily = awsv1.AMIFamilyBottlerocket
				small, big := q("4Gi"), q("80Gi")
				o.BlockDeviceMappings = []awsv1.BlockDeviceMapping{
					{DeviceName: aws.String("/dev/xvda"), EBS: &awsv1.BlockDevice{VolumeSize: &small}},
					{DeviceName: aws.String("/dev/xvdb"), EBS: &awsv1.BlockDevice{VolumeSize: &big}},
				}
			}),
			capacity: map[corev1.ResourceName]string{"ephemeral-storage": "80Gi"},
		},
		{
			name:     "region label",
			opts:     withOpts(func(o *Options) { o.Region = "eu-west-1" }),
			labels:   map[string]string{wellknown.LabelTopologyRegion: "eu-west-1"},
			capacity: map[corev1.ResourceName]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := New(m5xlarge(), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			check := func(what string, list corev1.ResourceList, want map[corev1.ResourceName]string) {
				for name, w := range want {
					if g := list[name]; g.Cmp(q(w)) != 0 {
						t.Errorf("%s %s = %s, want %s", what, name, g.String(), w)
					}
				}
			}
			check("capacity", got.Capacity, tt.capacity)
			check("allocatable", got.Allocatable, tt.allocatable)
			for k, w := range tt.labels {
				if got.Labels[k] != w {
					t.Errorf("label %s = %q, want %q", k, got.Labels[k], w)
				}
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name string
		info func(*ec2types.InstanceTypeInfo)
		opts func(*Options)
	}{
		{name: "no vcpu", info: func(i *ec2types.InstanceTypeInfo) { i.VCpuInfo = nil }},
		{name: "no memory", info: func(i *ec2types.InstanceTypeInfo) { i.MemoryInfo.SizeInMiB = nil }},
		{name: "bad overhead", opts: func(o *Options) { o.VMMemoryOverheadPercent = 7.5 }},
		{name: "bad reserved", opts: func(o *Options) {
			o.Kubelet = &awsv1.KubeletConfiguration{KubeReserved: map[string]string{"cpu": "lots"}}
		}},
		{name: "bad eviction", opts: func(o *Options) {
			o.Kubelet = &awsv1.KubeletConfiguration{EvictionHard: map[string]string{"memory.available": "120%"}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, opts := m5xlarge(), DefaultOptions()
			if tt.info != nil {
				tt.info(&info)
			}
			if tt.opts != nil {
				tt.opts(&opts)
			}
			if _, err := New(info, opts); err == nil {
				t.Fatal("New succeeded, want an error")
			}
		})
	}
}

func TestKubeReservedCPU(t *testing.T) {
	for _, tt := range []struct {
		vcpus int64
		want  string
	}{{1, "60m"}, {2, "70m"}, {3, "75m"}, {4, "80m"}, {8, "90m"}, {96, "310m"}, {192, "550m"}} {
		if got := KubeReservedCPU(tt.vcpus); got.Cmp(q(tt.want)) != 0 {
			t.Errorf("KubeReservedCPU(%d) = %s, want %s", tt.vcpus, got.String(), tt.want)
		}
	}
}

func TestENILimitedPods(t *testing.T) {
	multiCard := m5xlarge()
	multiCard.NetworkInfo.MaximumNetworkInterfaces = aws.Int32(60)
	multiCard.NetworkInfo.Ipv4AddressesPerInterface = aws.Int32(50)
	multiCard.NetworkInfo.NetworkCards = []ec2types.NetworkCardInfo{
		{NetworkCardIndex: aws.Int32(0), MaximumNetworkInterfaces: aws.Int32(15)},
		{NetworkCardIndex: aws.Int32(1), MaximumNetworkInterfaces: aws.Int32(15)},
	}
	noNet := m5xlarge()
	noNet.NetworkInfo = nil
	for _, tt := range []struct {
		name     string
		info     ec2types.InstanceTypeInfo
		reserved int
		want     int64
	}{
		{"m5.xlarge", m5xlarge(), 0, 58},
		{"default card only", multiCard, 0, 737},
		{"all reserved", m5xlarge(), 4, 0},
		{"no network info", noNet, 0, 0},
	} {
		if got := ENILimitedPods(tt.info, tt.reserved); got != tt.want {
			t.Errorf("%s: ENILimitedPods = %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestToPackerInstanceType(t *testing.T) {
	offerings := []packer.Offering{{Zone: "us-east-1a", CapacityType: packer.CapacityTypeSpot, PricePerHour: 0.1, Available: true}}
	opts := DefaultOptions()
	opts.BranchInterfaces = nil
	it, err := ToPackerInstanceType(m5xlarge(), opts, offerings)
	if err != nil {
		t.Fatal(err)
	}
	if it.Name != "m5.xlarge" || len(it.Offerings) != 1 {
		t.Fatalf("got %+v", it)
	}
	r, ok := it.Requirements.Get(wellknown.LabelInstanceFamily)
	if !ok || !r.Allows("m5") || r.Allows("m6i") {
		t.Errorf("instance-family requirement = %v", r)
	}
	if l := it.Requirements.Labels(); l[wellknown.LabelArch] != "amd64" || l[wellknown.LabelInstanceType] != "m5.xlarge" {
		t.Errorf("requirement labels = %v", l)
	}
}
