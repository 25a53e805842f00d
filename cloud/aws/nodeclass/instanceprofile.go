package nodeclass

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/sdk"
)

// profile is the resolved instance profile.
type profile struct {
	name    string
	role    string // the role it carries, if known
	roleARN string
	managed bool // created and owned by stevedore (spec.role)
}

// ProfilePath returns the IAM path of the instance profiles stevedore manages
// for a node class: /stevedore/<region>/<cluster>/<nodeclass-uid>/. Cleanup
// lists profiles by this path.
func ProfilePath(region, cluster, nodeClassUID string) string {
	return fmt.Sprintf("/stevedore/%s/%s/%s/", region, cluster, nodeClassUID)
}

// ProfilePathPrefixes are the IAM path prefixes under which the managed
// instance profiles of a cluster's node classes live: stevedore's, and
// Karpenter's (/karpenter/<region>/<cluster>/), whose profiles stevedore
// takes over with the cluster. Garbage collection lists these.
func ProfilePathPrefixes(region, cluster string) []string {
	return []string{
		fmt.Sprintf("/stevedore/%s/%s/", region, cluster),
		fmt.Sprintf("/karpenter/%s/%s/", region, cluster),
	}
}

// ProfileName returns the name of the instance profile stevedore manages for
// a node class and role: <cluster>_<hash>. The role is part of the hash, so a
// role change creates a new profile and running nodes keep theirs until they
// are replaced.
func ProfileName(region, cluster, nodeClassUID, role string) string {
	h := fnv.New64a()
	for _, s := range []string{region, cluster, nodeClassUID, role} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	prefix := cluster
	if len(prefix) > 100 {
		prefix = prefix[:100]
	}
	return fmt.Sprintf("%s_%016x", prefix, h.Sum64())
}

// DeleteInstanceProfile removes roles from the instance profile called name
// and deletes it, as IAM requires. A profile or role already gone is not an
// error. The EC2NodeClass clean-up and the collection of unused profiles
// both delete through it.
func DeleteInstanceProfile(ctx context.Context, client sdk.IAM, name string, roles []string) error {
	for _, role := range roles {
		_, err := client.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: aws.String(name), RoleName: aws.String(role)})
		if err != nil && !isNoSuchEntity(err) {
			return fmt.Errorf("removing role %s from instance profile %s: %w", role, name, err)
		}
	}
	if _, err := client.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: aws.String(name)}); err != nil && !isNoSuchEntity(err) {
		return fmt.Errorf("deleting instance profile %s: %w", name, err)
	}
	return nil
}

func isNoSuchEntity(err error) bool {
	var nse *iamtypes.NoSuchEntityException
	return errors.As(err, &nse) || apiErrorCode(err) == "NoSuchEntity"
}

func isAlreadyExists(err error) bool {
	var ae *iamtypes.EntityAlreadyExistsException
	return errors.As(err, &ae) || apiErrorCode(err) == "EntityAlreadyExists"
}

func (r *Resolver) resolveInstanceProfile(ctx context.Context, nc *awsv1.EC2NodeClass) (profile, outcome, error) {
	if nc.Spec.InstanceProfile != nil {
		return r.userProfile(ctx, *nc.Spec.InstanceProfile)
	}
	if nc.Spec.Role == "" {
		return profile{}, failed(ReasonRoleNotFound, "neither spec.role nor spec.instanceProfile is set; set spec.role to the node IAM role"), nil
	}
	return r.managedProfile(ctx, nc)
}

// userProfile checks a profile the user manages.
func (r *Resolver) userProfile(ctx context.Context, name string) (profile, outcome, error) {
	out, err := r.iam.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
	switch {
	case err == nil:
	case isNoSuchEntity(err):
		return profile{}, failed(ReasonInstanceProfileNotFound,
			"instance profile %s does not exist; create it and add the node role to it, or set spec.role instead and stevedore will manage a profile", name), nil
	case isUnauthorized(err):
		return profile{}, unauthorized("iam:GetInstanceProfile", err), nil
	default:
		return profile{}, outcome{}, err
	}
	p := profile{name: name}
	if out.InstanceProfile == nil || len(out.InstanceProfile.Roles) == 0 {
		return profile{}, failed(ReasonInstanceProfileNoRole,
			"instance profile %s has no role, so nodes would have no credentials to join the cluster; add the node role with aws iam add-role-to-instance-profile", name), nil
	}
	p.role = aws.ToString(out.InstanceProfile.Roles[0].RoleName)
	p.roleARN = aws.ToString(out.InstanceProfile.Roles[0].Arn)
	return p, ok(awsv1.ConditionTypeInstanceProfileReady), nil
}

// managedProfile creates or adopts the profile stevedore manages for
// spec.role.
func (r *Resolver) managedProfile(ctx context.Context, nc *awsv1.EC2NodeClass) (profile, outcome, error) {
	cluster, region, role := r.opts.ClusterName, r.opts.Region, nc.Spec.Role
	name := ProfileName(region, cluster, string(nc.UID), role)
	p := profile{name: name, role: role, managed: true}
	want := r.profileTags(nc)

	out, err := r.iam.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
	var existing *iamtypes.InstanceProfile
	switch {
	case err == nil:
		existing = out.InstanceProfile
	case isNoSuchEntity(err):
	case isUnauthorized(err):
		return profile{}, unauthorized("iam:GetInstanceProfile", err), nil
	default:
		return profile{}, outcome{}, err
	}

	var roles []iamtypes.Role
	have := map[string]string{}
	if existing != nil {
		roles = existing.Roles
		for _, t := range existing.Tags {
			have[aws.ToString(t.Key)] = aws.ToString(t.Value)
		}
	}
	hasRole := slices.ContainsFunc(roles, func(x iamtypes.Role) bool { return aws.ToString(x.RoleName) == role })
	if existing == nil {
		_, err := r.iam.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{
			InstanceProfileName: aws.String(name),
			Path:                aws.String(ProfilePath(region, cluster, string(nc.UID))),
			Tags:                iamTags(want),
		})
		switch {
		case err == nil, isAlreadyExists(err):
			have = want
		case isUnauthorized(err):
			return profile{}, unauthorized("iam:CreateInstanceProfile", err), nil
		default:
			return profile{}, outcome{}, err
		}
	}
	if !hasRole {
		// A profile holds one role; one of ours with another role can only
		// be left over from an interrupted change.
		for _, other := range roles {
			_, err := r.iam.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: aws.String(name), RoleName: other.RoleName})
			if err != nil && !isNoSuchEntity(err) {
				if isUnauthorized(err) {
					return profile{}, unauthorized("iam:RemoveRoleFromInstanceProfile", err), nil
				}
				return profile{}, outcome{}, err
			}
		}
		// There is no iam:GetRole before this (Karpenter's controller policy
		// does not grant it): a role that does not exist is found here.
		_, err := r.iam.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String(name), RoleName: aws.String(role)})
		switch {
		case err == nil:
			// The role's ARN (with its path) for the PassRole check's
			// message; a failure here only leaves the message with the name.
			if out, err := r.iam.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)}); err == nil && out.InstanceProfile != nil {
				for _, x := range out.InstanceProfile.Roles {
					if aws.ToString(x.RoleName) == role {
						p.roleARN = aws.ToString(x.Arn)
					}
				}
			}
		case isNoSuchEntity(err):
			r.deleteEmptyProfile(ctx, name)
			return profile{}, failed(ReasonRoleNotFound, "IAM role %s (spec.role) does not exist; create the node role or fix spec.role", role), nil
		case isUnauthorized(err):
			r.deleteEmptyProfile(ctx, name)
			// Adding a role passes it: the policy may grant
			// iam:AddRoleToInstanceProfile but iam:PassRole only on another
			// role, which is also what a misspelt role meets, as IAM
			// authorizes before it looks the role up.
			return profile{}, failed(ReasonUnauthorized, "the controller may not add role %s (spec.role) to its instance profile (%s): either the role does not exist and the controller's policy does not name it, or the policy does not grant iam:AddRoleToInstanceProfile, or iam:PassRole on this role; check spec.role, then grant iam:PassRole on the role (to ec2.amazonaws.com) and iam:AddRoleToInstanceProfile", role, apiErrorCode(err)), nil
		default:
			return profile{}, outcome{}, err
		}
	} else {
		for _, x := range roles {
			if aws.ToString(x.RoleName) == role {
				p.roleARN = aws.ToString(x.Arn)
			}
		}
	}
	if missing := missingTags(have, want); len(missing) > 0 {
		// All the tags, not just the missing ones: the policy allows
		// tagging only requests that carry the ownership tags.
		_, err := r.iam.TagInstanceProfile(ctx, &iam.TagInstanceProfileInput{InstanceProfileName: aws.String(name), Tags: iamTags(want)})
		switch {
		case err == nil:
		case isUnauthorized(err):
			return profile{}, unauthorized("iam:TagInstanceProfile", err), nil
		default:
			return profile{}, outcome{}, err
		}
	}
	return p, ok(awsv1.ConditionTypeInstanceProfileReady), nil
}

// deleteEmptyProfile deletes a managed profile that could not take its
// role: it is named after that role, so once spec.role or the policy is
// fixed nothing would use or delete it. It is tagged as stevedore's, which
// the policy's scoped deletion requires; should the deletion fail, the next
// reconcile finds it empty and tries again.
func (r *Resolver) deleteEmptyProfile(ctx context.Context, name string) {
	_, _ = r.iam.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: aws.String(name)})
}

// profileTags are the tags of a managed profile: the node class's own, then
// the ownership tags, which win.
func (r *Resolver) profileTags(nc *awsv1.EC2NodeClass) map[string]string {
	tags := map[string]string{}
	for k, v := range nc.Spec.Tags {
		if !wellknown.IsRestrictedTag(k) {
			tags[k] = v
		}
	}
	tags[wellknown.TagClusterPrefix+r.opts.ClusterName] = "owned"
	tags[wellknown.TagEKSClusterName] = r.opts.ClusterName
	tags[wellknown.TagEC2NodeClass] = nc.Name
	tags[wellknown.LabelTopologyRegion] = r.opts.Region
	return tags
}

func missingTags(have, want map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			out[k] = v
		}
	}
	return out
}

func iamTags(m map[string]string) []iamtypes.Tag {
	out := make([]iamtypes.Tag, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, iamtypes.Tag{Key: aws.String(k), Value: aws.String(m[k])})
	}
	return out
}
