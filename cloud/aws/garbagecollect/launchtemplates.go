package garbagecollect

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/sdk"
)

// UnusedTemplateTTL is how long a launch template may go unused before it
// is deleted: Karpenter's launch template cache TTL, whose eviction deletes
// the template in EC2. A template is recreated on its next launch.
const UnusedTemplateTTL = time.Minute

// LaunchTemplates deletes the launch templates stevedore made for
// clusterName (named prefix<cluster>/..., tagged eks:eks-cluster-name) that
// were created more than ttl before now and that inUse does not name, that
// is no launch used within ttl. Templates of other clusters, other tools,
// and templates younger than ttl (a launch may be about to use one it just
// created) are left alone. It returns the names deleted, sorted; a template
// that is gone already counts as deleted.
func LaunchTemplates(ctx context.Context, client sdk.EC2, clusterName, prefix string, inUse func(name string) bool, now time.Time, ttl time.Duration) ([]string, error) {
	if clusterName == "" {
		return nil, errors.New("launch template collection needs the cluster name")
	}
	own := prefix + clusterName + "/"
	var candidates []string
	p := ec2.NewDescribeLaunchTemplatesPaginator(client, &ec2.DescribeLaunchTemplatesInput{
		Filters:    []ec2types.Filter{{Name: aws.String("tag:" + wellknown.TagEKSClusterName), Values: []string{clusterName}}},
		MaxResults: aws.Int32(200),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing the launch templates of cluster %s: %w", clusterName, err)
		}
		for _, lt := range page.LaunchTemplates {
			name := aws.ToString(lt.LaunchTemplateName)
			if !strings.HasPrefix(name, own) || inUse(name) {
				continue
			}
			// Without a creation time the age is unknown; leave it.
			if lt.CreateTime == nil || now.Sub(*lt.CreateTime) <= ttl {
				continue
			}
			candidates = append(candidates, name)
		}
	}
	slices.Sort(candidates)
	var done []string
	for _, name := range candidates {
		_, err := client.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: aws.String(name)})
		if err != nil && errorCode(err) != "InvalidLaunchTemplateName.NotFoundException" {
			return done, fmt.Errorf("deleting unused launch template %s: %w", name, err)
		}
		done = append(done, name)
	}
	return done, nil
}

func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}
