package nodeclass

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
)

// Finalize deletes what stevedore created in AWS for a node class that is
// being deleted, as Karpenter does when an EC2NodeClass goes: every launch
// template tagged with the cluster (eks:eks-cluster-name) and the node class
// (karpenter.k8s.aws/ec2nodeclass), and the instance profile stevedore
// manages for it (spec.role), after removing its role. A profile is deleted
// only if it lives under the node class's IAM path (ProfilePath), so a
// profile named in spec.instanceProfile, which the user manages, is never
// touched. Call it once no NodeClaim uses the node class; it is idempotent,
// and an error means the caller should retry before letting the node class
// go.
func (r *Resolver) Finalize(ctx context.Context, nc *awsv1.EC2NodeClass) error {
	var errs []error
	if err := r.deleteLaunchTemplates(ctx, nc); err != nil {
		errs = append(errs, err)
	}
	if err := r.deleteProfiles(ctx, nc); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (r *Resolver) deleteLaunchTemplates(ctx context.Context, nc *awsv1.EC2NodeClass) error {
	var names []string
	p := ec2.NewDescribeLaunchTemplatesPaginator(r.ec2, &ec2.DescribeLaunchTemplatesInput{
		Filters: []ec2types.Filter{
			{Name: aws.String("tag:" + wellknown.TagEKSClusterName), Values: []string{r.opts.ClusterName}},
			{Name: aws.String("tag:" + wellknown.TagEC2NodeClass), Values: []string{nc.Name}},
		},
		MaxResults: aws.Int32(200),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("listing the launch templates of EC2NodeClass %s: %w", nc.Name, err)
		}
		for _, lt := range page.LaunchTemplates {
			names = append(names, aws.ToString(lt.LaunchTemplateName))
		}
	}
	slices.Sort(names)
	for _, name := range names {
		_, err := r.ec2.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: aws.String(name)})
		if err != nil && apiErrorCode(err) != "InvalidLaunchTemplateName.NotFoundException" {
			return fmt.Errorf("deleting launch template %s of EC2NodeClass %s: %w", name, nc.Name, err)
		}
	}
	return nil
}

// deleteProfiles deletes the managed profile of the current spec.role and
// the one in status.instanceProfile (the previous role's, after a change),
// when they are stevedore's.
func (r *Resolver) deleteProfiles(ctx context.Context, nc *awsv1.EC2NodeClass) error {
	var names []string
	if nc.Spec.Role != "" {
		names = append(names, ProfileName(r.opts.Region, r.opts.ClusterName, string(nc.UID), nc.Spec.Role))
	}
	if s := nc.Status.InstanceProfile; s != "" && !slices.Contains(names, s) {
		names = append(names, s)
	}
	path := ProfilePath(r.opts.Region, r.opts.ClusterName, string(nc.UID))
	for _, name := range names {
		out, err := r.iam.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
		switch {
		case isNoSuchEntity(err):
			continue
		case err != nil:
			return fmt.Errorf("reading instance profile %s of EC2NodeClass %s: %w", name, nc.Name, err)
		}
		ip := out.InstanceProfile
		if ip == nil || aws.ToString(ip.Path) != path {
			continue // not ours
		}
		var roles []string
		for _, role := range ip.Roles {
			roles = append(roles, aws.ToString(role.RoleName))
		}
		if err := DeleteInstanceProfile(ctx, r.iam, name, roles); err != nil {
			return fmt.Errorf("EC2NodeClass %s: %w", nc.Name, err)
		}
	}
	return nil
}
