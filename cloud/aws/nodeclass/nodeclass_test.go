package nodeclass

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/launch"
)

const (
	cluster = "my-cluster"
	version = "1.33"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

type world struct {
	aws      *fake.AWS
	clk      *clocktesting.FakeClock
	setup    *fake.ClusterWorld
	resolver *Resolver
}

func newWorld(t *testing.T) *world {
	t.Helper()
	clk := clocktesting.NewFakeClock(t0)
	f := fake.New(fake.Options{Seed: 3, Clock: clk})
	w, err := f.StandardCluster(cluster, version)
	if err != nil {
		t.Fatal(err)
	}
	r := NewResolver(f.Clients(), Options{ClusterName: cluster, Region: f.Region(), Clock: clk})
	return &world{aws: f, clk: clk, setup: w, resolver: r}
}

func discovery(value string) map[string]string {
	return map[string]string{fake.DiscoveryTag: value}
}

func nodeClass(w *world) *awsv1.EC2NodeClass {
	return &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default", UID: types.UID("0f6c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b"), Generation: 1},
		Spec: awsv1.EC2NodeClassSpec{
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: discovery(cluster)}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: discovery(cluster)}},
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			Role:                       w.setup.NodeRole,
		},
	}
}

func cond(st awsv1.EC2NodeClassStatus, t string) metav1.Condition {
	if c := meta.FindStatusCondition(st.Conditions, t); c != nil {
		return *c
	}
	return metav1.Condition{Type: t, Status: "<missing>"}
}

func TestResolveReady(t *testing.T) {
	w := newWorld(t)
	nc := nodeClass(w)
	if err := w.aws.SetSubnetAvailableIPs(w.setup.SubnetIDs[1], 5000); err != nil {
		t.Fatal(err)
	}
	st, err := w.resolver.Resolve(context.Background(), nc, version)
	if err != nil {
		t.Fatal(err)
	}
	for _, ct := range append(readyDependencies, awsv1.ConditionTypeReady) {
		c := cond(st, ct)
		if c.Status != metav1.ConditionTrue || c.ObservedGeneration != 1 || !c.LastTransitionTime.Time.Equal(t0) {
			t.Errorf("%s = %+v, want True at generation 1, transition %v", ct, c, t0)
		}
	}
	if len(st.Subnets) != 3 || st.Subnets[0].ID != w.setup.SubnetIDs[1] {
		t.Errorf("subnets %+v, want 3 with %s (most free addresses) first", st.Subnets, w.setup.SubnetIDs[1])
	}
	for i := 2; i < len(st.Subnets); i++ {
		if st.Subnets[i-1].ID > st.Subnets[i].ID {
			t.Errorf("subnets with equal free addresses not sorted by ID: %+v", st.Subnets)
		}
	}
	if st.Subnets[0].Zone == "" || st.Subnets[0].ZoneID == "" {
		t.Errorf("subnet without zone: %+v", st.Subnets[0])
	}
	if len(st.SecurityGroups) != 1 || st.SecurityGroups[0].ID != w.setup.SecurityGroupID || st.SecurityGroups[0].Name == "" {
		t.Errorf("security groups %+v", st.SecurityGroups)
	}
	if len(st.AMIs) == 0 {
		t.Fatal("no AMIs")
	}
	wantProfile := ProfileName(w.aws.Region(), cluster, string(nc.UID), w.setup.NodeRole)
	if st.InstanceProfile != wantProfile {
		t.Errorf("instance profile %q, want %q", st.InstanceProfile, wantProfile)
	}
	roles, ok := w.aws.InstanceProfileRoles(wantProfile)
	if !ok || len(roles) != 1 || roles[0] != w.setup.NodeRole {
		t.Errorf("profile roles %v (exists %v), want [%s]", roles, ok, w.setup.NodeRole)
	}

	// A second pass changes nothing and creates nothing.
	w.clk.Step(time.Minute)
	w.aws.ResetCalls()
	nc.Status = st
	again, err := w.resolver.Resolve(context.Background(), nc, version)
	if err != nil {
		t.Fatal(err)
	}
	if got := cond(again, awsv1.ConditionTypeReady); got.Status != metav1.ConditionTrue || !got.LastTransitionTime.Time.Equal(t0) {
		t.Errorf("Ready after a no-op pass = %+v, want True since %v", got, t0)
	}
	for _, api := range []string{"CreateInstanceProfile", "AddRoleToInstanceProfile", "TagInstanceProfile"} {
		if n := w.aws.Calls(api); n != 0 {
			t.Errorf("%s called %d times on a no-op pass", api, n)
		}
	}
}

func TestResolveFailures(t *testing.T) {
	tests := []struct {
		name        string
		breakIt     func(t *testing.T, w *world, nc *awsv1.EC2NodeClass)
		condition   string
		reason      string
		contains    []string
		readyReason string
	}{
		{
			name: "subnets tagged for another cluster",
			breakIt: func(t *testing.T, w *world, nc *awsv1.EC2NodeClass) {
				if _, err := w.aws.AddSubnet(fake.Subnet{Zone: w.aws.Zones()[0], Tags: discovery(cluster + "-prod")}); err != nil {
					t.Fatal(err)
				}
				nc.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{Tags: discovery("other-cluster")}}
				w.setup.SubnetIDs = nil
			},
			condition: awsv1.ConditionTypeSubnetsReady, reason: ReasonSubnetsNotFound,
			contains: []string{
				"no subnet matches subnetSelectorTerms (tag karpenter.sh/discovery=other-cluster)",
				"subnets carry karpenter.sh/discovery=my-cluster, karpenter.sh/discovery=my-cluster-prod",
				"tag your subnets or change subnetSelectorTerms",
			},
			readyReason: ReasonSubnetsNotFound,
		},
		{
			name: "subnet id that does not exist",
			breakIt: func(t *testing.T, w *world, nc *awsv1.EC2NodeClass) {
				nc.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{ID: "subnet-0000000000000000a"}}
			},
			condition: awsv1.ConditionTypeSubnetsReady, reason: ReasonSubnetsNotFound,
			contains: []string{"(id subnet-0000000000000000a)"}, readyReason: ReasonSubnetsNotFound,
		},
		{
			name: "no security group matches",
			breakIt: func(t *testing.T, w *world, nc *awsv1.EC2NodeClass) {
				nc.Spec.SecurityGroupSelectorTerms = []awsv1.SecurityGroupSelectorTerm{{Name: "does-not-exist"}}
			},
			condition: awsv1.ConditionTypeSecurityGroupsReady, reason: ReasonSecurityGroupsNotFound,
			contains: []string{"name does-not-exist", "securityGroupSelectorTerms"}, readyReason: ReasonSecurityGroupsNotFound,
		},
		{
			name: "AL2 alias on a version without AL2",
			breakIt: func(t *testing.T, w *world, nc *awsv1.EC2NodeClass) {
				nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "al2@latest"}}
			},
			condition: awsv1.ConditionTypeAMIsReady, reason: ReasonUnsupportedAlias,
			contains: []string{"al2023@latest"}, readyReason: ReasonUnsupportedAlias,
		},
		{
			name: "alias without released images",
			breakIt: func(t *testing.T, w *world, nc *awsv1.EC2NodeClass) {
				nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "windows2022@latest"}}
			},
			condition: awsv1.ConditionTypeAMIsReady, reason: ReasonAMINotFound,
			contains: []string{"windows2022@latest", "SSM parameters"}, readyReason: ReasonAMINotFound,
		},
		{
			name: "image id that does not exist",
			breakIt: func(t *testing.T, w *world, nc *awsv1.EC2NodeClass) {
				al := awsv1.AMIFamilyAL2023
				nc.Spec.AMIFamily = &al
				nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{ID: "ami-0000000000000000a"}}
			},
			condition: awsv1.ConditionTypeAMIsReady, reason: ReasonAMINotFound,
			contains: []string{"id ami-0000000000000000a"}, readyReason: ReasonAMINotFound,
		},
		{
			name: "role does not exist",
			breakIt: func(t *testing.T, w *world, nc *awsv1.EC2NodeClass) {
				nc.Spec.Role = "NoSuchRole"
			},
			condition: awsv1.ConditionTypeInstanceProfileReady, reason: ReasonRoleNotFound,
			contains: []string{"NoSuchRole", "spec.role"}, readyReason: ReasonRoleNotFound,
		},
		{
			name: "user instance profile does not exist",
			breakIt: func(t *testing.T, w *world, nc *awsv1.EC2NodeClass) {
				nc.Spec.Role = ""
				nc.Spec.InstanceProfile = new("KarpenterNodeInstanceProfile")
			},
			condition: awsv1.ConditionTypeInstanceProfileReady, reason: ReasonInstanceProfileNotFound,
			contains: []string{"KarpenterNodeInstanceProfile does not exist"}, readyReason: ReasonInstanceProfileNotFound,
		},
		{
			name: "controller may not pass the node role",
			breakIt: func(t *testing.T, w *world, nc *awsv1.EC2NodeClass) {
				w.aws.DenyPassRole(w.setup.NodeRole)
			},
			condition: awsv1.ConditionTypeValidationSucceeded, reason: ReasonPassRoleAuthCheckFailed,
			contains:    []string{"KarpenterNodeRole-my-cluster", "grant iam:PassRole on arn:aws:iam::123456789012:role/KarpenterNodeRole-my-cluster"},
			readyReason: ReasonPassRoleAuthCheckFailed,
		},
		{
			name: "controller may not pass the role of a user profile",
			breakIt: func(t *testing.T, w *world, nc *awsv1.EC2NodeClass) {
				if err := w.aws.AddInstanceProfile("NodeProfile", w.setup.NodeRole); err != nil {
					t.Fatal(err)
				}
				nc.Spec.Role = ""
				nc.Spec.InstanceProfile = new("NodeProfile")
				w.aws.RestrictPassRole("SomeOtherRole")
			},
			condition: awsv1.ConditionTypeValidationSucceeded, reason: ReasonPassRoleAuthCheckFailed,
			contains: []string{"KarpenterNodeRole-my-cluster", "iam:PassRole"}, readyReason: ReasonPassRoleAuthCheckFailed,
		},
		{
			name: "CreateFleet denied",
			breakIt: func(t *testing.T, w *world, nc *awsv1.EC2NodeClass) {
				w.aws.DenyAction("ec2:CreateFleet")
			},
			condition: awsv1.ConditionTypeValidationSucceeded, reason: ReasonCreateFleetAuthCheckFailed,
			contains: []string{"ec2:CreateFleet"}, readyReason: ReasonCreateFleetAuthCheckFailed,
		},
		{
			name: "RunInstances denied",
			breakIt: func(t *testing.T, w *world, nc *awsv1.EC2NodeClass) {
				w.aws.DenyAction("ec2:RunInstances")
			},
			condition: awsv1.ConditionTypeValidationSucceeded, reason: ReasonRunInstancesAuthCheckFailed,
			contains: []string{"ec2:RunInstances"}, readyReason: ReasonRunInstancesAuthCheckFailed,
		},
		{
			name: "DescribeSubnets denied",
			breakIt: func(t *testing.T, w *world, nc *awsv1.EC2NodeClass) {
				w.aws.DenyAction("ec2:DescribeSubnets")
			},
			condition: awsv1.ConditionTypeSubnetsReady, reason: ReasonUnauthorized,
			contains: []string{"grant ec2:DescribeSubnets"}, readyReason: ReasonUnauthorized,
		},
		{
			name: "restricted tag in spec.tags",
			breakIt: func(t *testing.T, w *world, nc *awsv1.EC2NodeClass) {
				nc.Spec.Tags = map[string]string{"karpenter.sh/nodepool": "x", "team": "a"}
			},
			condition: awsv1.ConditionTypeValidationSucceeded, reason: ReasonTagValidationFailed,
			contains: []string{"karpenter.sh/nodepool"}, readyReason: ReasonTagValidationFailed,
		},
		{
			name: "user data within EC2's limit alone, over it once merged",
			breakIt: func(t *testing.T, w *world, nc *awsv1.EC2NodeClass) {
				nc.Spec.UserData = new("#!/bin/bash\n" + strings.Repeat("echo padding the user data\n", 600))
			},
			condition: awsv1.ConditionTypeValidationSucceeded, reason: ReasonUserDataTooLarge,
			contains:    []string{"spec.userData is 16212 bytes", "AL2023", "over EC2's limit of 16384 bytes", "S3 or SSM Parameter Store"},
			readyReason: ReasonUserDataTooLarge,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			nc := nodeClass(w)
			tt.breakIt(t, w, nc)
			st, err := w.resolver.Resolve(context.Background(), nc, version)
			if err != nil {
				t.Fatal(err)
			}
			c := cond(st, tt.condition)
			if c.Status != metav1.ConditionFalse || c.Reason != tt.reason {
				t.Fatalf("%s = %s/%s (%s), want False/%s", tt.condition, c.Status, c.Reason, c.Message, tt.reason)
			}
			for _, s := range tt.contains {
				if !strings.Contains(c.Message, s) {
					t.Errorf("message %q does not contain %q", c.Message, s)
				}
			}
			t.Logf("%s=%s %s: %s", tt.condition, c.Status, c.Reason, c.Message)
			ready := cond(st, awsv1.ConditionTypeReady)
			if ready.Status != metav1.ConditionFalse || ready.Reason != tt.readyReason || !strings.Contains(ready.Message, c.Message) {
				t.Errorf("Ready = %s/%s (%s), want False/%s carrying the message", ready.Status, ready.Reason, ready.Message, tt.readyReason)
			}
			if tt.condition != awsv1.ConditionTypeValidationSucceeded {
				if v := cond(st, awsv1.ConditionTypeValidationSucceeded); v.Status != metav1.ConditionFalse || v.Reason != ReasonDependenciesNotReady {
					t.Errorf("ValidationSucceeded = %s/%s, want False/%s", v.Status, v.Reason, ReasonDependenciesNotReady)
				}
			}
		})
	}
}

// TestResolveUserDataSizeWithTheCluster: the user data is measured with
// the cluster's own identity, here a CA bundle far longer than EKS's.
func TestResolveUserDataSizeWithTheCluster(t *testing.T) {
	w := newWorld(t)
	nc := nodeClass(w)
	nc.Spec.UserData = new("#!/bin/bash\n" + strings.Repeat("echo padding the user data\n", 450))
	st, err := w.resolver.Resolve(context.Background(), nc, version)
	if err != nil {
		t.Fatal(err)
	}
	if c := cond(st, awsv1.ConditionTypeReady); c.Status != metav1.ConditionTrue {
		t.Fatalf("with the stand-in cluster Ready = %s/%s (%s), want True", c.Status, c.Reason, c.Message)
	}
	r := NewResolver(w.aws.Clients(), Options{ClusterName: cluster, Region: w.aws.Region(), Clock: w.clk,
		Cluster: launch.Cluster{CABundle: strings.Repeat("Q", 8000)}})
	st, err = r.Resolve(context.Background(), nc, version)
	if err != nil {
		t.Fatal(err)
	}
	if c := cond(st, awsv1.ConditionTypeValidationSucceeded); c.Status != metav1.ConditionFalse || c.Reason != ReasonUserDataTooLarge {
		t.Errorf("with an 8000-character CA bundle ValidationSucceeded = %s/%s (%s), want False/%s", c.Status, c.Reason, c.Message, ReasonUserDataTooLarge)
	}
}

func TestResolveAPIErrorKeepsCondition(t *testing.T) {
	tests := []struct {
		name      string
		inject    func(f *fake.AWS)
		condition string
	}{
		{"DescribeSubnets throttled", func(f *fake.AWS) { f.Throttle("DescribeSubnets", 1) }, awsv1.ConditionTypeSubnetsReady},
		{"DescribeSecurityGroups 5xx", func(f *fake.AWS) {
			f.InjectError("DescribeSecurityGroups", fake.APIError("InternalError", "An internal error has occurred"), 1)
		}, awsv1.ConditionTypeSecurityGroupsReady},
		{"GetParameter throttled", func(f *fake.AWS) { f.Throttle("GetParameter", 1) }, awsv1.ConditionTypeAMIsReady},
		{"DescribeImages throttled", func(f *fake.AWS) { f.Throttle("DescribeImages", 1) }, awsv1.ConditionTypeAMIsReady},
		{"GetInstanceProfile throttled", func(f *fake.AWS) { f.Throttle("GetInstanceProfile", 1) }, awsv1.ConditionTypeInstanceProfileReady},
		{"RunInstances throttled", func(f *fake.AWS) { f.Throttle("RunInstances", 1) }, awsv1.ConditionTypeValidationSucceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			nc := nodeClass(w)
			first, err := w.resolver.Resolve(context.Background(), nc, version)
			if err != nil {
				t.Fatal(err)
			}
			nc.Status = first
			// The world breaks, but the AWS call fails before it can tell.
			if tt.condition == awsv1.ConditionTypeSubnetsReady {
				nc.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{Tags: discovery("gone")}}
			}
			w.clk.Step(time.Minute)
			tt.inject(w.aws)
			st, err := w.resolver.Resolve(context.Background(), nc, version)
			if err == nil {
				t.Fatal("Resolve hid the AWS error")
			}
			before, after := cond(first, tt.condition), cond(st, tt.condition)
			if after != before {
				t.Fatalf("%s changed on an API error:\nbefore %+v\nafter  %+v", tt.condition, before, after)
			}
			if len(st.Subnets) != len(first.Subnets) || len(st.SecurityGroups) != len(first.SecurityGroups) || len(st.AMIs) != len(first.AMIs) {
				t.Fatalf("resolved values changed on an API error: %+v", st)
			}
			if r := cond(st, awsv1.ConditionTypeReady); r.Status != metav1.ConditionTrue {
				t.Fatalf("Ready = %+v, want still True", r)
			}
		})
	}
}

func TestResolveStaleGenerationIsNotReady(t *testing.T) {
	w := newWorld(t)
	nc := nodeClass(w)
	first, err := w.resolver.Resolve(context.Background(), nc, version)
	if err != nil {
		t.Fatal(err)
	}
	nc.Status = first
	nc.Generation = 2
	w.aws.Throttle("DescribeSubnets", 1)
	st, err := w.resolver.Resolve(context.Background(), nc, version)
	if err == nil {
		t.Fatal("Resolve hid the AWS error")
	}
	r := cond(st, awsv1.ConditionTypeReady)
	if r.Status != metav1.ConditionUnknown || r.ObservedGeneration != 2 || !strings.Contains(r.Message, "SubnetsReady was last evaluated for generation 1") {
		t.Fatalf("Ready = %+v, want Unknown for generation 2 naming the stale SubnetsReady", r)
	}
	// The next pass succeeds and everything is current again.
	nc.Status = st
	st, err = w.resolver.Resolve(context.Background(), nc, version)
	if err != nil {
		t.Fatal(err)
	}
	if r := cond(st, awsv1.ConditionTypeReady); r.Status != metav1.ConditionTrue || r.ObservedGeneration != 2 {
		t.Fatalf("Ready = %+v, want True for generation 2", r)
	}
}

// TestMissingRoleLeavesNoProfile: a spec.role that does not exist is
// reported (RoleNotFound when the policy may pass any role; under the
// controller policy of Karpenter's reference template, which has no
// iam:GetRole and passes only the node role, AddRoleToInstanceProfile is
// refused and the message says both causes), and the instance profile made
// for it is gone again, so that fixing spec.role, which names a new
// profile, leaves nothing behind. The right role then resolves with no
// other call refused.
func TestMissingRoleLeavesNoProfile(t *testing.T) {
	for _, tc := range []struct {
		name      string
		karpenter bool
		reason    string
		contains  string
	}{
		{"any role may be passed", false, ReasonRoleNotFound, "NoSuchRole (spec.role) does not exist"},
		{"Karpenter's policy", true, ReasonUnauthorized, "either the role does not exist and the controller's policy does not name it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			if tc.karpenter {
				pol := w.aws.KarpenterPolicy(w.setup.ClusterName, w.setup.QueueName)
				w.aws.EnforcePolicy(&pol)
			}
			nc := nodeClass(w)
			nc.Spec.Role = "NoSuchRole"
			st, err := w.resolver.Resolve(context.Background(), nc, version)
			if err != nil {
				t.Fatal(err)
			}
			c := meta.FindStatusCondition(st.Conditions, awsv1.ConditionTypeInstanceProfileReady)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != tc.reason || !strings.Contains(c.Message, tc.contains) {
				t.Fatalf("InstanceProfileReady = %+v, want False with %s saying %q", c, tc.reason, tc.contains)
			}
			typo := ProfileName(w.aws.Region(), cluster, string(nc.UID), "NoSuchRole")
			if _, ok := w.aws.InstanceProfileRoles(typo); ok {
				t.Errorf("instance profile %s for the missing role is left in the account", typo)
			}
			refused := len(w.aws.Denials())

			nc.Spec.Role = w.setup.NodeRole
			st, err = w.resolver.Resolve(context.Background(), nc, version)
			if err != nil {
				t.Fatal(err)
			}
			if c := meta.FindStatusCondition(st.Conditions, awsv1.ConditionTypeInstanceProfileReady); c == nil || c.Status != metav1.ConditionTrue {
				t.Errorf("InstanceProfileReady with the node role = %+v, want True", c)
			}
			if d := w.aws.Denials()[refused:]; len(d) > 0 {
				t.Errorf("Karpenter's policy refused %q", d)
			}
		})
	}
}
