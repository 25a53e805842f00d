package nodeclass

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/launch"
)

// dryRunLaunchTemplate is the launch template the CreateFleet authorization
// probe names. It need not exist: EC2 checks authorization before it looks
// the template up, so "not found" means the call was allowed.
const dryRunLaunchTemplate = "stevedore-dry-run"

// dryRunNodePool is the nodepool tag value of the dry-run launches; IAM
// policies scoped on the tag's presence need one.
const dryRunNodePool = "dry-run"

var validationDependencies = []string{
	awsv1.ConditionTypeAMIsReady,
	awsv1.ConditionTypeSubnetsReady,
	awsv1.ConditionTypeSecurityGroupsReady,
	awsv1.ConditionTypeInstanceProfileReady,
}

// validate decides ValidationSucceeded: the node class's user data fits
// EC2's limit, its tags are allowed, and the controller may launch with
// what the other parts resolved.
func (r *Resolver) validate(ctx context.Context, nc *awsv1.EC2NodeClass, st *awsv1.EC2NodeClassStatus, p profile) (outcome, error) {
	// Every launch would fail on it, whatever the other parts resolve to.
	if se := launch.CheckUserData(nc, r.opts.Cluster, r.userData); se != nil {
		return failed(ReasonUserDataTooLarge, "%s; %s", se.Message(), se.Fix()), nil
	}
	var notReady, unknown []string
	for _, t := range validationDependencies {
		switch c := meta.FindStatusCondition(st.Conditions, t); {
		case c == nil || c.Status == metav1.ConditionUnknown:
			unknown = append(unknown, t)
		case c.Status == metav1.ConditionFalse:
			notReady = append(notReady, t)
		}
	}
	if len(notReady) > 0 {
		return failed(ReasonDependenciesNotReady, "launches cannot be validated until %s are True", strings.Join(notReady, ", ")), nil
	}
	if len(unknown) > 0 {
		return outcome{status: metav1.ConditionUnknown, reason: ReasonDependenciesNotReady,
			message: fmt.Sprintf("waiting for %s", strings.Join(unknown, ", "))}, nil
	}
	var restricted []string
	for k := range nc.Spec.Tags {
		if wellknown.IsRestrictedTag(k) {
			restricted = append(restricted, k)
		}
	}
	if len(restricted) > 0 {
		slices.Sort(restricted)
		return failed(ReasonTagValidationFailed, "spec.tags sets %s, which stevedore sets itself to mark ownership; remove them from spec.tags",
			strings.Join(restricted, ", ")), nil
	}
	if r.opts.DisableDryRun {
		return outcome{status: metav1.ConditionTrue, reason: ReasonDryRunDisabled,
			message: "dry-run launch checks are disabled; permission problems show up only when a launch fails"}, nil
	}
	if len(st.AMIs) == 0 || len(st.Subnets) == 0 || len(st.SecurityGroups) == 0 {
		return failed(ReasonDependenciesNotReady, "launches cannot be validated without images, subnets and security groups"), nil
	}

	image := st.AMIs[0]
	instanceType := dryRunInstanceType(image)
	tags := r.launchTags(nc)
	groups := make([]string, len(st.SecurityGroups))
	for i, g := range st.SecurityGroups {
		groups[i] = g.ID
	}

	// CreateFleet is how nodes are launched.
	_, err := r.ec2.CreateFleet(ctx, &ec2.CreateFleetInput{
		DryRun: aws.Bool(true),
		Type:   ec2types.FleetTypeInstant,
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(dryRunLaunchTemplate), Version: aws.String("$Latest")},
			Overrides:                   []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: instanceType, SubnetId: aws.String(st.Subnets[0].ID), ImageId: aws.String(image.ID)}},
		}},
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand},
		TagSpecifications:           tagSpecs(tags, ec2types.ResourceTypeFleet, ec2types.ResourceTypeInstance, ec2types.ResourceTypeVolume),
	})
	switch code := apiErrorCode(err); {
	case code == "DryRunOperation", code == "InvalidLaunchTemplateName.NotFoundException", code == "InvalidLaunchTemplateId.NotFound":
	case isUnauthorized(err):
		return failed(ReasonCreateFleetAuthCheckFailed, "the controller is not allowed to call ec2:CreateFleet with the node class's tags (%s); grant ec2:CreateFleet and ec2:CreateTags on fleets, instances, volumes and network interfaces to the controller's IAM role", code), nil
	case err == nil:
		// Not a dry run answer; nothing was launched either way.
	default:
		return outcome{}, err
	}

	// RunInstances carries the instance profile, so its dry run also checks
	// iam:PassRole. Policies may be scoped by subnet: one allowed subnet is
	// enough.
	run := func(subnetID string, withProfile bool) error {
		in := &ec2.RunInstancesInput{
			DryRun: aws.Bool(true), MinCount: aws.Int32(1), MaxCount: aws.Int32(1),
			ImageId: aws.String(image.ID), InstanceType: instanceType, SubnetId: aws.String(subnetID),
			SecurityGroupIds: groups,
			// The network interface is tagged too: Karpenter's policy admits
			// only tagged interfaces, as it does instances and volumes.
			TagSpecifications: tagSpecs(tags, ec2types.ResourceTypeInstance, ec2types.ResourceTypeVolume, ec2types.ResourceTypeNetworkInterface),
		}
		if withProfile {
			in.IamInstanceProfile = &ec2types.IamInstanceProfileSpecification{Name: aws.String(p.name)}
		}
		_, err := r.ec2.RunInstances(ctx, in)
		return err
	}
	var denied error
	for _, s := range st.Subnets {
		err := run(s.ID, true)
		switch code := apiErrorCode(err); {
		case code == "DryRunOperation":
			return ok(awsv1.ConditionTypeValidationSucceeded), nil
		case isUnauthorized(err):
			denied = err
			continue
		case code == "InvalidParameterValue" && strings.Contains(apiErrorMessage(err), "iamInstanceProfile"):
			if p.managed {
				// IAM is eventually consistent: a profile created a moment
				// ago is not yet visible to EC2.
				return outcome{}, fmt.Errorf("instance profile %s is not yet visible to EC2: %w", p.name, err)
			}
			return failed(ReasonInstanceProfileNotFound, "EC2 does not accept instance profile %s (%s); check that it exists in this account and carries the node role", p.name, apiErrorMessage(err)), nil
		case err == nil:
			return ok(awsv1.ConditionTypeValidationSucceeded), nil
		default:
			return outcome{}, err
		}
	}
	// Every subnet was refused. If the same launch without the profile is
	// allowed, the profile's role is what the controller may not pass.
	passRole := strings.Contains(apiErrorMessage(denied), "iam:PassRole")
	if !passRole {
		err := run(st.Subnets[0].ID, false)
		switch code := apiErrorCode(err); {
		case code == "DryRunOperation" || err == nil:
			passRole = true
		case isUnauthorized(err):
		default:
			return outcome{}, err
		}
	}
	if passRole {
		role, roleARN := p.role, p.roleARN
		if roleARN == "" {
			roleARN = role
		}
		if role == "" {
			return failed(ReasonPassRoleAuthCheckFailed, "the controller is not allowed to pass the role of instance profile %s (iam:PassRole denied); grant iam:PassRole on the node role to the controller's IAM role", p.name), nil
		}
		return failed(ReasonPassRoleAuthCheckFailed, "the controller is not allowed to pass node role %s to EC2 (iam:PassRole denied), so no node can launch; grant iam:PassRole on %s to the controller's IAM role", role, roleARN), nil
	}
	return failed(ReasonRunInstancesAuthCheckFailed, "the controller is not allowed to call ec2:RunInstances in any selected subnet with the node class's image, security groups and tags (%s); grant ec2:RunInstances on them to the controller's IAM role", apiErrorCode(denied)), nil
}

// dryRunInstanceType is a common instance type of the image's architecture.
func dryRunInstanceType(ami awsv1.AMI) ec2types.InstanceType {
	for _, req := range ami.Requirements {
		if req.Key == wellknown.LabelArch && slices.Contains(req.Values, "arm64") && !slices.Contains(req.Values, "amd64") {
			return ec2types.InstanceTypeM6gLarge
		}
	}
	return ec2types.InstanceTypeM5Large
}

// launchTags are the tags a launch from this node class carries.
func (r *Resolver) launchTags(nc *awsv1.EC2NodeClass) map[string]string {
	tags := map[string]string{}
	for k, v := range nc.Spec.Tags {
		if !wellknown.IsRestrictedTag(k) {
			tags[k] = v
		}
	}
	tags[wellknown.TagClusterPrefix+r.opts.ClusterName] = "owned"
	tags[wellknown.TagEKSClusterName] = r.opts.ClusterName
	tags[wellknown.TagNodePool] = dryRunNodePool
	tags[wellknown.TagEC2NodeClass] = nc.Name
	return tags
}

func tagSpecs(tags map[string]string, types ...ec2types.ResourceType) []ec2types.TagSpecification {
	list := make([]ec2types.Tag, 0, len(tags))
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		list = append(list, ec2types.Tag{Key: aws.String(k), Value: aws.String(tags[k])})
	}
	out := make([]ec2types.TagSpecification, len(types))
	for i, t := range types {
		out[i] = ec2types.TagSpecification{ResourceType: t, Tags: list}
	}
	return out
}
