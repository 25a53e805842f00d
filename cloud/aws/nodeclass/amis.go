package nodeclass

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/amifamily"
)

// resolveAMIs returns status.amis.
func (r *Resolver) resolveAMIs(ctx context.Context, nc *awsv1.EC2NodeClass, kubernetesVersion string) ([]awsv1.AMI, outcome, error) {
	terms := nc.Spec.AMISelectorTerms
	alias, isAlias, err := amifamily.AliasOf(terms)
	if err != nil {
		return nil, failed(ReasonInvalidAMISelector, "amiSelectorTerms: %v; fix the alias (for example al2023@latest)", err), nil
	}
	var queries []amifamily.Query
	var known map[string][][]corev1.NodeSelectorRequirement
	if isAlias {
		params, err := amifamily.Parameters(alias, kubernetesVersion)
		if err != nil {
			var unsupported *amifamily.UnsupportedAliasError
			if errors.As(err, &unsupported) {
				return nil, failed(ReasonUnsupportedAlias, "amiSelectorTerms: %v", err), nil
			}
			return nil, failed(ReasonInvalidAMISelector, "amiSelectorTerms: %v", err), nil
		}
		known = map[string][][]corev1.NodeSelectorRequirement{}
		var ids, paths []string
		var denied error
		for _, p := range params {
			paths = append(paths, p.Path)
			id, err := r.parameter(ctx, p.Path)
			switch {
			case err == nil:
			case isParameterNotFound(err):
				continue // not every variant exists for every version
			case isUnauthorized(err):
				denied = err
				continue
			default:
				return nil, outcome{}, err
			}
			if !strings.HasPrefix(id, "ami-") {
				continue
			}
			if _, seen := known[id]; !seen {
				ids = append(ids, id)
			}
			known[id] = append(known[id], p.Requirements...)
		}
		if len(ids) == 0 {
			if denied != nil {
				return nil, failed(ReasonUnauthorized, "alias %s: the controller is not allowed to read the SSM parameters of the EKS-optimized images (%s); grant ssm:GetParameter on arn:aws:ssm:*::parameter/aws/service/* to the controller's IAM role",
					alias, apiErrorCode(denied)), nil
			}
			return nil, failed(ReasonAMINotFound, "alias %s has no image for Kubernetes %s: none of its SSM parameters exists (%s); pin a release that exists for this version or use another family",
				alias, kubernetesVersion, paths[0]), nil
		}
		queries = []amifamily.Query{{Filters: []ec2types.Filter{{Name: aws.String("image-id"), Values: ids}}}}
	} else {
		values := map[string]string{}
		for _, name := range amifamily.SSMParameterNames(terms) {
			id, err := r.parameter(ctx, name)
			switch {
			case err == nil:
				values[name] = id
			case isParameterNotFound(err):
				return nil, failed(ReasonAMINotFound, "amiSelectorTerms: SSM parameter %s does not exist in this region; fix ssmParameter or create the parameter", name), nil
			case isUnauthorized(err):
				return nil, failed(ReasonUnauthorized, "amiSelectorTerms: the controller is not allowed to read SSM parameter %s (%s); grant ssm:GetParameter on it to the controller's IAM role", name, apiErrorCode(err)), nil
			default:
				return nil, outcome{}, err
			}
		}
		queries, err = amifamily.Queries(terms, values)
		if err != nil {
			return nil, failed(ReasonInvalidAMISelector, "amiSelectorTerms: %v", err), nil
		}
	}

	now := r.opts.Clock.Now()
	var images []amifamily.Image
	seen := map[string]bool{}
	for _, q := range queries {
		p := ec2.NewDescribeImagesPaginator(r.ec2, q.Input())
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				if isUnauthorized(err) {
					return nil, unauthorized("ec2:DescribeImages", err), nil
				}
				return nil, outcome{}, err
			}
			for _, img := range page.Images {
				if id := aws.ToString(img.ImageId); !seen[id] {
					seen[id] = true
					images = append(images, amifamily.ImageFromEC2(img, now))
				}
			}
		}
	}
	amis := amifamily.Select(images, known)
	if len(amis) == 0 {
		if isAlias {
			return nil, failed(ReasonAMINotFound, "alias %s resolved to images that are not available in this region; try again later or pin another release", alias), nil
		}
		return nil, failed(ReasonAMINotFound, "no image matches amiSelectorTerms (%s); check the IDs, names, owners and tags, and that the images exist and are available in this region",
			describeAMITerms(terms)), nil
	}
	return amis, ok(awsv1.ConditionTypeAMIsReady), nil
}

// parameter reads one SSM parameter.
func (r *Resolver) parameter(ctx context.Context, name string) (string, error) {
	out, err := r.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name)})
	if err != nil {
		return "", err
	}
	if out.Parameter == nil {
		return "", nil
	}
	return aws.ToString(out.Parameter.Value), nil
}

func isParameterNotFound(err error) bool {
	switch apiErrorCode(err) {
	case "ParameterNotFound", "ParameterVersionNotFound":
		return true
	}
	return false
}

func describeAMITerms(terms []awsv1.AMISelectorTerm) string {
	var out []string
	for _, t := range terms {
		var parts []string
		for _, f := range []struct{ name, value string }{
			{"id", t.ID}, {"name", t.Name}, {"owner", t.Owner}, {"ssmParameter", t.SSMParameter},
		} {
			if f.value != "" {
				parts = append(parts, f.name+" "+f.value)
			}
		}
		keys := make([]string, 0, len(t.Tags))
		for k := range t.Tags {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("tag %s=%s", k, t.Tags[k]))
		}
		out = append(out, strings.Join(parts, " and "))
	}
	return strings.Join(out, " or ")
}
