package fake_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
)

// TestAddRunningInstance: an instance that existed before the account was
// built is running at once, in the subnet asked for (or its zone's), and
// DescribeInstances shows it with its tags, image and groups; what does
// not fit the account is refused, naming the part.
func TestAddRunningInstance(t *testing.T) {
	e := newEnv(t, 1)
	f, w := e.f, e.w
	zone := "us-east-1a"
	ok := fake.RunningInstance{
		ID: "i-0aaaaaaaaaaaaaaa1", InstanceType: "m5.large", Zone: zone, CapacityType: fake.CapacityTypeSpot,
		ImageID: w.Images["al2023/x86_64/standard"], PrivateDNSName: "ip-10-0-1-5.ec2.internal",
		SecurityGroups: []string{w.SecurityGroupID}, LaunchTime: epoch.Add(-24 * 3600e9), Tags: map[string]string{"karpenter.sh/nodeclaim": "default-x7k2p"},
	}
	info, err := f.AddRunningInstance(ok)
	if err != nil {
		t.Fatal(err)
	}
	if info.State != fake.StateRunning || info.Zone != zone || info.SubnetID == "" || !info.LaunchTime.Equal(ok.LaunchTime) {
		t.Errorf("added instance = %+v, want running in a subnet of %s since its launch time", info, zone)
	}
	out, err := f.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{ok.ID}})
	if err != nil {
		t.Fatal(err)
	}
	inst := out.Reservations[0].Instances[0]
	if aws.ToString(inst.PrivateDnsName) != ok.PrivateDNSName || aws.ToString(inst.ImageId) != ok.ImageID ||
		len(inst.SecurityGroups) != 1 || aws.ToString(inst.SecurityGroups[0].GroupId) != w.SecurityGroupID ||
		inst.InstanceLifecycle != "spot" || !hasTag(inst.Tags, "karpenter.sh/nodeclaim", "default-x7k2p") {
		t.Errorf("DescribeInstances shows %+v", inst)
	}

	for _, tc := range []struct {
		name string
		edit func(*fake.RunningInstance)
		err  string
	}{
		{"a second time", func(*fake.RunningInstance) {}, "exists already"},
		{"a malformed ID", func(r *fake.RunningInstance) { r.ID = "i-xyz" }, "not an instance ID"},
		{"an unknown type", func(r *fake.RunningInstance) { r.ID, r.InstanceType = "i-0aaaaaaaaaaaaaaa2", "m9.huge" }, "not in the account's catalog"},
		{"an unknown zone", func(r *fake.RunningInstance) { r.ID, r.Zone = "i-0aaaaaaaaaaaaaaa2", "eu-west-1a" }, "not one of the account's zones"},
		{"a reserved capacity type", func(r *fake.RunningInstance) { r.ID, r.CapacityType = "i-0aaaaaaaaaaaaaaa2", "reserved" }, "neither spot nor on-demand"},
		{"a subnet of another zone", func(r *fake.RunningInstance) { r.ID, r.SubnetID = "i-0aaaaaaaaaaaaaaa2", "subnet-0000000000000000f" }, "is not a subnet of zone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ri := ok
			tc.edit(&ri)
			if _, err := f.AddRunningInstance(ri); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("error = %v, want one containing %q", err, tc.err)
			}
		})
	}
}

func hasTag(tags []ec2types.Tag, key, value string) bool {
	for _, t := range tags {
		if aws.ToString(t.Key) == key && aws.ToString(t.Value) == value {
			return true
		}
	}
	return false
}
