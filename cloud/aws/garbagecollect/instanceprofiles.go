package garbagecollect

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/nodeclass"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/sdk"
)

// ProfileGrace is the age below which an instance profile is never
// collected: an EC2NodeClass whose role just changed names its new profile
// in a status the collector may not have read yet (the status write is
// retried, and the informer catches up, within seconds).
const ProfileGrace = 2 * time.Minute

// ProfileInterval is the longest time between two collections of instance
// profiles, Karpenter's interval; the controller collects sooner when the
// profiles in use change (a role change, a node gone).
const ProfileInterval = 30 * time.Minute

// InstanceProfiles deletes the instance profiles under the IAM path
// prefixes (the managed profiles of one cluster, see
// nodeclass.ProfilePathPrefixes) that inUse does not name and that were
// created more than grace before now: the profiles of an EC2NodeClass's
// previous roles once no NodeClaim launched with them is left, and those
// of node classes deleted while the controller was not running. Each
// profile's roles are removed first, as IAM requires. It returns the names
// deleted, sorted; a profile that is gone already counts as deleted.
func InstanceProfiles(ctx context.Context, client sdk.IAM, prefixes []string, inUse func(name string) bool, now time.Time, grace time.Duration) ([]string, error) {
	if len(prefixes) == 0 {
		return nil, errors.New("instance profile collection needs the path prefixes of the cluster's profiles")
	}
	var stale []iamtypes.InstanceProfile
	for _, prefix := range prefixes {
		p := iam.NewListInstanceProfilesPaginator(client, &iam.ListInstanceProfilesInput{PathPrefix: aws.String(prefix)})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("listing the instance profiles under %s: %w", prefix, err)
			}
			for _, ip := range page.InstanceProfiles {
				name := aws.ToString(ip.InstanceProfileName)
				// The path is checked here too: an API that ignored
				// PathPrefix must not make another's profile look stale.
				if !strings.HasPrefix(aws.ToString(ip.Path), prefix) || inUse(name) || (ip.CreateDate != nil && now.Sub(*ip.CreateDate) < grace) {
					continue
				}
				stale = append(stale, ip)
			}
		}
	}
	slices.SortFunc(stale, func(a, b iamtypes.InstanceProfile) int {
		return cmp.Compare(aws.ToString(a.InstanceProfileName), aws.ToString(b.InstanceProfileName))
	})
	var deleted []string
	var errs []error
	for _, ip := range stale {
		var roles []string
		for _, r := range ip.Roles {
			roles = append(roles, aws.ToString(r.RoleName))
		}
		name := aws.ToString(ip.InstanceProfileName)
		if err := nodeclass.DeleteInstanceProfile(ctx, client, name, roles); err != nil {
			errs = append(errs, err)
			continue
		}
		deleted = append(deleted, name)
	}
	return deleted, errors.Join(errs...)
}
