package nodeclass

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/launch"
)

// ConditionTypePlacementGroupReady says whether the placementGroupSelector
// resolved to an available placement group. It is present only while a
// selector is set, and counts towards Ready then, as in Karpenter.
const ConditionTypePlacementGroupReady = "PlacementGroupReady"

// Reasons of a False PlacementGroupReady, Karpenter's.
const (
	ReasonPlacementGroupResolutionFailed = "PlacementGroupResolutionFailed"
	ReasonPlacementGroupNotFound         = "PlacementGroupNotFound"
	ReasonPlacementGroupNotAvailable     = "PlacementGroupNotAvailable"
)

// resolvePlacementGroup decides PlacementGroupReady for a selector. A failed
// DescribePlacementGroups call is False with PlacementGroupResolutionFailed
// and returned as an error too (the caller retries), as Karpenter does.
func (r *Resolver) resolvePlacementGroup(ctx context.Context, sel *awsv1.PlacementGroupSelector) (outcome, error) {
	name := launch.Selector(sel)
	pg, err := launch.DescribePlacementGroup(ctx, r.ec2, sel)
	switch {
	case err != nil && isUnauthorized(err):
		return unauthorized("ec2:DescribePlacementGroups", err), nil
	case err != nil:
		return failed(ReasonPlacementGroupResolutionFailed, "failed to resolve placement group %q: %s", name, apiErrorMessage(err)), err
	case pg == nil:
		return failed(ReasonPlacementGroupNotFound, "placement group %q not found: create it, or fix spec.placementGroupSelector", name), nil
	case pg.State != "available":
		return failed(ReasonPlacementGroupNotAvailable, "placement group %q is in state %q, expected %q", name, pg.State, "available"), nil
	}
	return outcome{status: metav1.ConditionTrue, reason: ConditionTypePlacementGroupReady,
		message: fmt.Sprintf("placement group %s (%s, %s strategy)", pg.Name, pg.ID, pg.Strategy)}, nil
}
