package drift

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud"
)

func ptr[T any](v T) *T { return &v }

func nodeClass() *awsv1.EC2NodeClass {
	nc := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: awsv1.EC2NodeClassSpec{
			AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			Role:             "nodes",
			Tags:             map[string]string{"team": "a", "env": "prod"},
		},
		Status: awsv1.EC2NodeClassStatus{
			AMIs: []awsv1.AMI{
				{ID: "ami-arm", Requirements: []corev1.NodeSelectorRequirement{{Key: wellknown.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}}}},
				{ID: "ami-x86", Requirements: []corev1.NodeSelectorRequirement{{Key: wellknown.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}},
			},
			Subnets:        []awsv1.Subnet{{ID: "subnet-a", Zone: "us-east-1a"}, {ID: "subnet-b", Zone: "us-east-1b"}},
			SecurityGroups: []awsv1.SecurityGroup{{ID: "sg-1"}, {ID: "sg-2"}},
		},
	}
	nc.Annotations = map[string]string{
		wellknown.AnnotationEC2NodeClassHash:        Hash(nc, "ca"),
		wellknown.AnnotationEC2NodeClassHashVersion: HashVersion,
	}
	return nc
}

func nodeClaim(nc *awsv1.EC2NodeClass) *karpv1.NodeClaim {
	return &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "default-abc", Annotations: map[string]string{
			wellknown.AnnotationEC2NodeClassHash:        nc.Annotations[wellknown.AnnotationEC2NodeClassHash],
			wellknown.AnnotationEC2NodeClassHashVersion: HashVersion,
		}, Labels: map[string]string{wellknown.LabelInstanceType: "m6i.large"}},
		Status: karpv1.NodeClaimStatus{ImageID: "ami-x86"},
	}
}

func TestCheck(t *testing.T) {
	x86 := map[string]string{wellknown.LabelArch: "amd64"}
	instance := Instance{ImageID: "ami-x86", SubnetID: "subnet-b", SecurityGroupIDs: []string{"sg-2", "sg-1"}}
	tests := []struct {
		name    string
		mutate  func(*Input)
		want    cloud.DriftReason
		wantErr string
	}{
		{name: "not drifted", mutate: func(*Input) {}},
		{name: "hash changed", mutate: func(in *Input) { in.NodeClass.Annotations[wellknown.AnnotationEC2NodeClassHash] = "1" }, want: NodeClassDrift},
		{name: "hash version differs", mutate: func(in *Input) {
			in.NodeClaim.Annotations[wellknown.AnnotationEC2NodeClassHashVersion] = "v4"
			in.NodeClaim.Annotations[wellknown.AnnotationEC2NodeClassHash] = "1"
		}},
		{name: "hash wins over AMI", mutate: func(in *Input) {
			in.NodeClass.Annotations[wellknown.AnnotationEC2NodeClassHash] = "1"
			in.Instance.ImageID = "ami-old"
		}, want: NodeClassDrift},
		{name: "new image", mutate: func(in *Input) { in.NodeClass.Status.AMIs[1].ID = "ami-x86-new" }, want: AMIDrift},
		{name: "no image fits", mutate: func(in *Input) { in.InstanceTypeLabels = map[string]string{wellknown.LabelArch: "s390x"} }, want: AMIDrift},
		{name: "image from status when instance unknown", mutate: func(in *Input) { in.Instance.ImageID = "" }},
		{name: "AMI wins over security groups", mutate: func(in *Input) {
			in.Instance.ImageID = "ami-old"
			in.Instance.SecurityGroupIDs = nil
		}, want: AMIDrift},
		{name: "security group removed", mutate: func(in *Input) { in.Instance.SecurityGroupIDs = []string{"sg-1"} }, want: SecurityGroupDrift},
		{name: "security group added", mutate: func(in *Input) { in.Instance.SecurityGroupIDs = []string{"sg-1", "sg-2", "sg-3"} }, want: SecurityGroupDrift},
		{name: "security groups wins over subnet", mutate: func(in *Input) {
			in.Instance.SecurityGroupIDs = []string{"sg-1"}
			in.Instance.SubnetID = "subnet-z"
		}, want: SecurityGroupDrift},
		{name: "subnet", mutate: func(in *Input) { in.Instance.SubnetID = "subnet-z" }, want: SubnetDrift},
		{name: "reservation still selected", mutate: func(in *Input) {
			in.Instance.CapacityReservationID = "cr-1"
			in.NodeClass.Status.CapacityReservations = []awsv1.CapacityReservation{{ID: "cr-2"}, {ID: "cr-1"}}
		}},
		{name: "reservation no longer selected", mutate: func(in *Input) {
			in.Instance.CapacityReservationID = "cr-1"
			in.NodeClass.Status.CapacityReservations = []awsv1.CapacityReservation{{ID: "cr-2"}}
		}, want: CapacityReservationDrift},
		{name: "subnet wins over reservation", mutate: func(in *Input) {
			in.Instance.CapacityReservationID = "cr-1"
			in.Instance.SubnetID = "subnet-z"
		}, want: SubnetDrift},
		{name: "not in a reservation", mutate: func(in *Input) { in.NodeClass.Status.CapacityReservations = nil }},
		{name: "placement group unchanged", mutate: func(in *Input) {
			in.NodeClass.Spec.PlacementGroupSelector = &awsv1.PlacementGroupSelector{Name: "g"}
			in.PlacementGroupID = "pg-1"
			in.NodeClaim.Labels[wellknown.LabelPlacementGroupID] = "pg-1"
		}},
		{name: "placement group changed", mutate: func(in *Input) {
			in.NodeClass.Spec.PlacementGroupSelector = &awsv1.PlacementGroupSelector{Name: "g"}
			in.PlacementGroupID = "pg-2"
			in.NodeClaim.Labels[wellknown.LabelPlacementGroupID] = "pg-1"
		}, want: PlacementGroupDrift},
		{name: "placement group newly selected", mutate: func(in *Input) {
			in.NodeClass.Spec.PlacementGroupSelector = &awsv1.PlacementGroupSelector{ID: "pg-2"}
			in.PlacementGroupID = "pg-2"
		}, want: PlacementGroupDrift},
		{name: "placement group no longer selected", mutate: func(in *Input) {
			in.NodeClaim.Labels[wellknown.LabelPlacementGroupID] = "pg-1"
		}, want: PlacementGroupDrift},
		{name: "placement group selected but unresolved is not judged", mutate: func(in *Input) {
			in.NodeClass.Spec.PlacementGroupSelector = &awsv1.PlacementGroupSelector{Name: "gone"}
			in.NodeClaim.Labels[wellknown.LabelPlacementGroupID] = "pg-1"
		}},
		{name: "subnet wins over placement group", mutate: func(in *Input) {
			in.Instance.SubnetID = "subnet-z"
			in.NodeClaim.Labels[wellknown.LabelPlacementGroupID] = "pg-1"
		}, want: SubnetDrift},
		{name: "no AMIs", mutate: func(in *Input) { in.NodeClass.Status.AMIs = nil }, wantErr: "status.amis"},
		{name: "no subnets", mutate: func(in *Input) { in.NodeClass.Status.Subnets = nil }, wantErr: "status.subnets"},
		{name: "no security groups", mutate: func(in *Input) { in.NodeClass.Status.SecurityGroups = nil }, wantErr: "status.securityGroups"},
		{name: "type no longer offered", mutate: func(in *Input) { in.InstanceTypeLabels = nil }, wantErr: "no longer offered"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nc := nodeClass()
			in := Input{NodeClass: nc, NodeClaim: nodeClaim(nc), Instance: instance, InstanceTypeLabels: x86}
			in.Instance.SecurityGroupIDs = append([]string(nil), instance.SecurityGroupIDs...)
			tt.mutate(&in)
			got, err := Check(in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Check = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestHash(t *testing.T) {
	base := nodeClass()
	h := Hash(base, "ca")
	tests := []struct {
		name   string
		mutate func(*awsv1.EC2NodeClass)
		ca     string
		same   bool
	}{
		{"identical", func(*awsv1.EC2NodeClass) {}, "ca", true},
		{"selector terms are not hashed", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{ID: "subnet-x"}}
			nc.Spec.SecurityGroupSelectorTerms = []awsv1.SecurityGroupSelectorTerm{{Name: "x"}}
		}, "ca", true},
		{"status is not hashed", func(nc *awsv1.EC2NodeClass) { nc.Status.AMIs = nil }, "ca", true},
		// The hash tells an empty kubelet, list or map from an absent one,
		// as Karpenter's does.
		{"empty kubelet is not absent", func(nc *awsv1.EC2NodeClass) { nc.Spec.Kubelet = &awsv1.KubeletConfiguration{} }, "ca", false},
		{"empty block devices are not absent", func(nc *awsv1.EC2NodeClass) { nc.Spec.BlockDeviceMappings = []awsv1.BlockDeviceMapping{} }, "ca", false},
		{"tag order", func(nc *awsv1.EC2NodeClass) { nc.Spec.Tags = map[string]string{"env": "prod", "team": "a"} }, "ca", true},
		{"explicit family equal to alias", func(nc *awsv1.EC2NodeClass) { nc.Spec.AMIFamily = ptr(awsv1.AMIFamilyAL2023) }, "ca", true},
		{"Custom family", func(nc *awsv1.EC2NodeClass) { nc.Spec.AMIFamily = ptr(awsv1.AMIFamilyCustom) }, "ca", false},
		{"CA bundle", func(*awsv1.EC2NodeClass) {}, "other", false},
		{"role", func(nc *awsv1.EC2NodeClass) { nc.Spec.Role = "other" }, "ca", false},
		{"tag value", func(nc *awsv1.EC2NodeClass) { nc.Spec.Tags["team"] = "b" }, "ca", false},
		{"user data", func(nc *awsv1.EC2NodeClass) { nc.Spec.UserData = ptr("echo hi") }, "ca", false},
		{"kubelet", func(nc *awsv1.EC2NodeClass) { nc.Spec.Kubelet = &awsv1.KubeletConfiguration{MaxPods: ptr[int32](20)} }, "ca", false},
		{"volume size", func(nc *awsv1.EC2NodeClass) {
			q := resource.MustParse("100Gi")
			nc.Spec.BlockDeviceMappings = []awsv1.BlockDeviceMapping{{DeviceName: ptr("/dev/xvda"), EBS: &awsv1.BlockDevice{VolumeSize: &q}}}
		}, "ca", false},
		{"metadata options", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.MetadataOptions = &awsv1.MetadataOptions{HTTPTokens: ptr("optional")}
		}, "ca", false},
		{"monitoring", func(nc *awsv1.EC2NodeClass) { nc.Spec.DetailedMonitoring = ptr(true) }, "ca", false},
		{"ipPrefixCount is not hashed", func(nc *awsv1.EC2NodeClass) { nc.Spec.IPPrefixCount = ptr[int32](4) }, "ca", true},
		{"empty networkInterfaces are not absent", func(nc *awsv1.EC2NodeClass) { nc.Spec.NetworkInterfaces = []awsv1.NetworkInterface{} }, "ca", false},
		{"networkInterfaces", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.NetworkInterfaces = []awsv1.NetworkInterface{{InterfaceType: awsv1.InterfaceTypeInterface}}
		}, "ca", false},
		{"placementGroupSelector", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.PlacementGroupSelector = &awsv1.PlacementGroupSelector{Name: "g"}
		}, "ca", false},
		{"connectionTracking", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.ConnectionTracking = &awsv1.ConnectionTracking{UDPTimeout: ptr[int32](30)}
		}, "ca", false},
		{"cpuOptions", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.CPUOptions = &awsv1.CPUOptions{NestedVirtualization: ptr("enabled")}
		}, "ca", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nc := nodeClass()
			tt.mutate(nc)
			if got := Hash(nc, tt.ca); (got == h) != tt.same {
				t.Errorf("Hash = %s, base %s, want same=%v", got, h, tt.same)
			}
		})
	}
}

func TestRestamp(t *testing.T) {
	nc := nodeClass()
	tests := []struct {
		name                  string
		version               string
		drifted               metav1.ConditionStatus
		wantVersion, wantHash bool
	}{
		{"same version", HashVersion, "", false, false},
		{"same version, drifted", HashVersion, metav1.ConditionTrue, false, false},
		{"another version", "v4", "", true, true},
		{"no version", "", "", true, true},
		{"already drifted", "v4", metav1.ConditionTrue, true, false},
		{"not drifted", "v4", metav1.ConditionFalse, true, true},
	}
	for _, tt := range tests {
		nclaim := nodeClaim(nc)
		if tt.version == "" {
			delete(nclaim.Annotations, wellknown.AnnotationEC2NodeClassHashVersion)
		} else {
			nclaim.Annotations[wellknown.AnnotationEC2NodeClassHashVersion] = tt.version
		}
		if tt.drifted != "" {
			nclaim.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeDrifted, Status: tt.drifted}}
		}
		v, h := Restamp(nclaim, HashVersion)
		if v != tt.wantVersion || h != tt.wantHash {
			t.Errorf("%s: Restamp = (version %v, hash %v), want (%v, %v)", tt.name, v, h, tt.wantVersion, tt.wantHash)
		}
	}
}

// The order of networkInterfaces does not change what is launched, so it
// does not change the hash.
func TestHashNetworkInterfacesOrder(t *testing.T) {
	a, b := nodeClass(), nodeClass()
	primary := awsv1.NetworkInterface{InterfaceType: awsv1.InterfaceTypeInterface}
	efa := awsv1.NetworkInterface{NetworkCardIndex: 1, InterfaceType: awsv1.InterfaceTypeEFAOnly}
	a.Spec.NetworkInterfaces = []awsv1.NetworkInterface{primary, efa}
	b.Spec.NetworkInterfaces = []awsv1.NetworkInterface{efa, primary}
	if Hash(a, "ca") != Hash(b, "ca") {
		t.Error("the hash depends on the order of networkInterfaces")
	}
	if a.Spec.NetworkInterfaces[0] != primary {
		t.Error("Hash reordered the node class's networkInterfaces")
	}
}
