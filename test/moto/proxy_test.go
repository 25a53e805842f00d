package moto_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/iampolicy"
	"github.com/stevedore-autoscaler/stevedore/test/moto"
	"github.com/stevedore-autoscaler/stevedore/test/moto/wire"
)

const region = "us-west-2"

// throughProxy is cfg with its calls sent to the proxy instead of moto.
func throughProxy(cfg aws.Config, p *moto.Proxy) aws.Config {
	cfg.BaseEndpoint = aws.String(p.URL)
	return cfg
}

func startProxy(t *testing.T) (*moto.Server, *moto.Proxy, aws.Config) {
	t.Helper()
	s := moto.Start(t)
	p, err := s.StartProxy(region)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return s, p, throughProxy(s.Config(region), p)
}

// TestProxyFails checks that an injected error reaches the SDK with its
// code, in each protocol's error document, for as many calls as asked,
// and that the next call reaches moto again.
func TestProxyFails(t *testing.T) {
	_, p, cfg := startProxy(t)
	ctx := context.Background()
	for _, tc := range []struct {
		service, op, code string
		status            int
		call              func() error
	}{
		{"EC2", "DescribeVpcs", "RequestLimitExceeded", http.StatusServiceUnavailable, func() error {
			_, err := ec2.NewFromConfig(cfg).DescribeVpcs(ctx, &ec2.DescribeVpcsInput{})
			return err
		}},
		{"IAM", "ListRoles", "Throttling", http.StatusBadRequest, func() error {
			_, err := iam.NewFromConfig(cfg).ListRoles(ctx, &iam.ListRolesInput{})
			return err
		}},
		{"SSM", "DescribeParameters", "ThrottlingException", http.StatusBadRequest, func() error {
			_, err := ssm.NewFromConfig(cfg).DescribeParameters(ctx, &ssm.DescribeParametersInput{})
			return err
		}},
		{"SQS", "ListQueues", "RequestThrottled", http.StatusForbidden, func() error {
			_, err := sqs.NewFromConfig(cfg).ListQueues(ctx, &sqs.ListQueuesInput{})
			return err
		}},
		{"EKS", "DescribeCluster", "ServerException", http.StatusInternalServerError, func() error {
			_, err := eks.NewFromConfig(cfg).DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String("absent")})
			return err
		}},
	} {
		t.Run(tc.service, func(t *testing.T) {
			p.Fail(moto.Fault{Service: tc.service, Operation: tc.op, Code: tc.code, Status: tc.status, Times: 2})
			for i := range 2 {
				var api smithy.APIError
				if err := tc.call(); !errors.As(err, &api) || api.ErrorCode() != tc.code {
					t.Fatalf("call %d: %v, want the injected %s", i+1, err, tc.code)
				}
			}
			if err := tc.call(); err != nil {
				var api smithy.APIError
				if errors.As(err, &api) && api.ErrorCode() == tc.code {
					t.Fatalf("the third call failed with %s, but the fault was for two", tc.code)
				}
				// EKS answers DescribeCluster of a cluster that does not
				// exist with its own error: moto answered.
				if tc.service != "EKS" {
					t.Fatalf("third call: %v", err)
				}
			}
			injected := 0
			for _, c := range p.Calls() {
				if c.Service == tc.service && c.Operation == tc.op && c.Injected == tc.code {
					injected++
					if c.Status != tc.status {
						t.Errorf("injected answer recorded with status %d, want %d", c.Status, tc.status)
					}
				}
			}
			if injected != 2 {
				t.Errorf("%d injected %s calls recorded, want 2", injected, tc.op)
			}
		})
	}
}

// TestProxyParameters checks that parameters set on the proxy are answered
// with a version that rises on each release, and that other names reach
// moto.
func TestProxyParameters(t *testing.T) {
	_, p, cfg := startProxy(t)
	ctx := context.Background()
	c := ssm.NewFromConfig(cfg)
	name := "/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/standard/recommended/image_id"
	for i, v := range []string{"ami-0000000000000000a", "ami-0000000000000000b"} {
		p.SetParameter(name, v)
		out, err := c.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name)})
		if err != nil {
			t.Fatal(err)
		}
		if got := aws.ToString(out.Parameter.Value); got != v || out.Parameter.Version != int64(i+1) || !strings.HasSuffix(aws.ToString(out.Parameter.ARN), ":parameter"+name) {
			t.Errorf("release %d: %s version %d ARN %s, want %s version %d", i+1, got, out.Parameter.Version, aws.ToString(out.Parameter.ARN), v, i+1)
		}
	}
	_, err := c.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/aws/service/eks/none")})
	var api smithy.APIError
	if !errors.As(err, &api) || api.ErrorCode() != "ParameterNotFound" {
		t.Errorf("a parameter the proxy does not hold: %v, want moto's ParameterNotFound", err)
	}
}

// TestProxyCompletesFleets launches from a launch template with a security
// group and an instance profile through the proxy: the instance has both,
// which moto alone does not give it.
func TestProxyCompletesFleets(t *testing.T) {
	s, p, cfg := startProxy(t)
	ctx := context.Background()
	direct := ec2.NewFromConfig(s.Config(region))
	acc, err := moto.SetUpAccount(ctx, s.Config(region), "fleet")
	if err != nil {
		t.Fatal(err)
	}
	profile := "fleet-profile"
	iamc := iam.NewFromConfig(s.Config(region))
	if _, err := iamc.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String(profile)}); err != nil {
		t.Fatal(err)
	}
	c := ec2.NewFromConfig(cfg)
	for i, data := range []*ec2types.RequestLaunchTemplateData{
		{ImageId: aws.String(acc.ImageAMD64), SecurityGroupIds: []string{acc.SecurityGroup}, IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String(profile)}},
		{ImageId: aws.String(acc.ImageAMD64), NetworkInterfaces: []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{{DeviceIndex: aws.Int32(0), Groups: []string{acc.SecurityGroup}}}},
	} {
		name := "fleet-template-" + string(rune('a'+i))
		if _, err := c.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String(name), LaunchTemplateData: data}); err != nil {
			t.Fatal(err)
		}
		out, err := c.CreateFleet(ctx, &ec2.CreateFleetInput{Type: ec2types.FleetTypeInstant,
			TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand},
			LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
				LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(name), Version: aws.String("$Latest")},
				Overrides:                   []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: ec2types.InstanceTypeM5Large, SubnetId: aws.String(acc.Subnets[0])}}}}})
		if err != nil || len(out.Instances) != 1 || len(out.Instances[0].InstanceIds) != 1 {
			t.Fatalf("CreateFleet from %s: %v", name, err)
		}
		id := out.Instances[0].InstanceIds[0]
		desc, err := direct.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
		if err != nil {
			t.Fatal(err)
		}
		in := desc.Reservations[0].Instances[0]
		var groups []string
		for _, g := range in.SecurityGroups {
			groups = append(groups, aws.ToString(g.GroupId))
		}
		if len(groups) != 1 || groups[0] != acc.SecurityGroup {
			t.Errorf("instance %s from %s has security groups %v, want [%s]", id, name, groups, acc.SecurityGroup)
		}
		hasProfile := in.IamInstanceProfile != nil && strings.HasSuffix(aws.ToString(in.IamInstanceProfile.Arn), "/"+profile)
		if want := data.IamInstanceProfile != nil; hasProfile != want {
			t.Errorf("instance %s from %s: instance profile %+v, want one: %v", id, name, in.IamInstanceProfile, want)
		}
	}
	if errs := p.FleetErrors(); len(errs) > 0 {
		t.Errorf("fleets not completed: %v", errs)
	}
}

// TestAuthorizer checks that calls through the proxy are expanded with the
// tags they carry and evaluated: a launch template created with the
// cluster's ownership tags is allowed by the controller's policy, one
// without them is refused, and a call the controller never makes is
// reported.
func TestAuthorizer(t *testing.T) {
	s, p, cfg := startProxy(t)
	z := moto.NewAuthorizer(s.Config(region), p)
	var seen []wire.Call
	ctx := context.Background()
	c := ec2.NewFromConfig(cfg)
	acc, err := moto.SetUpAccount(ctx, s.Config(region), "authz")
	if err != nil {
		t.Fatal(err)
	}
	owned := []ec2types.Tag{
		{Key: aws.String("kubernetes.io/cluster/authz"), Value: aws.String("owned")},
		{Key: aws.String("eks:eks-cluster-name"), Value: aws.String("authz")},
		{Key: aws.String("karpenter.sh/nodepool"), Value: aws.String("default")},
		{Key: aws.String("karpenter.k8s.aws/ec2nodeclass"), Value: aws.String("default")},
	}
	for name, tags := range map[string][]ec2types.Tag{"owned-template": owned, "stray-template": nil} {
		in := &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String(name), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String(acc.ImageAMD64)}}
		if tags != nil {
			in.TagSpecifications = []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: tags}}
		}
		if _, err := c.CreateLaunchTemplate(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	// A profile made with the ownership tags, deleted: the deletion is
	// authorized on the tags moto holds for it at the time of the call.
	ic := iam.NewFromConfig(cfg)
	profile := aws.String("authz_owned")
	if _, err := ic.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: profile, Tags: []iamtypes.Tag{
		{Key: aws.String("kubernetes.io/cluster/authz"), Value: aws.String("owned")},
		{Key: aws.String("eks:eks-cluster-name"), Value: aws.String("authz")},
		{Key: aws.String("topology.kubernetes.io/region"), Value: aws.String(region)},
		{Key: aws.String("karpenter.k8s.aws/ec2nodeclass"), Value: aws.String("default")},
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ic.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: profile}); err != nil {
		t.Fatal(err)
	}
	// A call the controller never makes; moto's answer does not matter,
	// the call is what is evaluated.
	_, _ = c.DeleteVpc(ctx, &ec2.DeleteVpcInput{VpcId: aws.String(acc.VPC)})
	for _, r := range p.Calls() {
		seen = append(seen, r.Call)
	}
	pol := iampolicy.ControllerPolicy(iampolicy.Params{ClusterName: "authz", AccountID: moto.AccountID, Region: region, NodeRoleName: acc.NodeRole, QueueName: acc.Queue})
	calls := z.Calls()
	problems, _ := moto.CheckCalls(pol, calls)
	if len(calls) != len(seen) || len(calls) != 5 {
		t.Errorf("%d calls expanded, %d seen by the proxy, want 5", len(calls), len(seen))
	}
	joined := strings.Join(problems, "\n")
	for _, want := range []string{"EC2 DeleteVpc is not a call", "CreateLaunchTemplate: ec2:CreateLaunchTemplate on arn:aws:ec2:us-west-2:123456789012:launch-template/"} {
		if !strings.Contains(joined, want) {
			t.Errorf("problems do not say %q:\n%s", want, joined)
		}
	}
	if n := strings.Count(joined, "CreateLaunchTemplate: "); n == 0 || n > 2 {
		t.Errorf("%d refusals of CreateLaunchTemplate, want those of the untagged template only:\n%s", n, joined)
	}
	if strings.Contains(joined, "InstanceProfile") {
		t.Errorf("the owned instance profile's calls were refused:\n%s", joined)
	}
	// The owned template alone, checked on its own, is allowed.
	owned1 := iampolicy.Recorded{}
	for _, c := range z.Calls() {
		if in, ok := c.Input.(*ec2.CreateLaunchTemplateInput); ok && aws.ToString(in.LaunchTemplateName) == "owned-template" {
			owned1 = c
		}
	}
	if denied := iampolicy.Denied(pol, []iampolicy.Recorded{owned1}); len(owned1.Requests) == 0 || len(denied) > 0 {
		t.Errorf("the owned template: %d authorizations, refused %v", len(owned1.Requests), denied)
	}
}
