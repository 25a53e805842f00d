package aws

import (
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/iampolicy"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/sdk"
)

// policies are the policies every controller request must pass: Karpenter's
// own reference policy and the one `stevedore iam-policy` prints.
func policies(f *fake.AWS, w *fake.ClusterWorld) map[string]iampolicy.Policy {
	queue := fmt.Sprintf("arn:aws:sqs:%s:%s:%s", f.Region(), f.AccountID(), w.QueueName)
	return map[string]iampolicy.Policy{
		"karpenter": iampolicy.KarpenterReference("aws", f.Region(), f.AccountID(), w.ClusterName, w.NodeRoleARN, queue),
		"stevedore": iampolicy.ControllerPolicy(iampolicy.Params{
			ClusterName: w.ClusterName, Partition: "aws", AccountID: f.AccountID(), Region: f.Region(),
			NodeRoleName: w.NodeRole, QueueName: w.QueueName,
		}),
	}
}

// checkAuthorized fails the test for every recorded request that one of the
// policies would refuse.
func checkAuthorized(t *testing.T, f *fake.AWS, w *fake.ClusterWorld, calls []iampolicy.Recorded) {
	t.Helper()
	for name, pol := range policies(f, w) {
		for _, d := range iampolicy.Denied(pol, calls) {
			t.Errorf("%s policy refuses %s", name, d)
		}
	}
}

// recordingEnv is newEnv with the EC2 and IAM calls recorded.
func recordingEnv(t *testing.T) (*env, *iampolicy.Log) {
	var log *iampolicy.Log
	e := newEnvWith(t, func(c sdk.Clients) sdk.Clients {
		c, log = iampolicy.Record(c, c.EC2.(*fake.AWS).Authorization())
		return c
	})
	return e, log
}

// TestLaunchIsAdmittedByKarpentersPolicy launches on-demand and spot nodes
// and checks every request the in-memory AWS received against the
// conditions of Karpenter's controller policy and of stevedore's generated
// one: the launch template carries the karpenter.sh/nodepool tag, and the
// network interfaces and spot requests are created with the ownership tags.
func TestLaunchIsAdmittedByKarpentersPolicy(t *testing.T) {
	e, log := recordingEnv(t)
	for _, ct := range []string{wellknown.CapacityTypeOnDemand, wellknown.CapacityTypeSpot} {
		e.create(claim("c-"+ct, req(wellknown.LabelInstanceType, "m6i.large"), req(wellknown.LabelCapacityType, ct)))
	}
	calls := log.Take()
	ops := map[string]int{}
	for _, c := range calls {
		ops[c.Operation]++
	}
	if ops["CreateLaunchTemplate"] != 2 || ops["CreateFleet"] != 2 {
		t.Errorf("recorded %v, want 2 launch templates (one per capacity type) and 2 fleets", ops)
	}
	checkAuthorized(t, e.aws, e.world, calls)

	for _, c := range calls {
		in, ok := c.Input.(*ec2.CreateLaunchTemplateInput)
		if !ok {
			continue
		}
		var nodePool string
		for _, s := range in.TagSpecifications {
			for _, tg := range s.Tags {
				if *tg.Key == wellknown.TagNodePool {
					nodePool = *tg.Value
				}
			}
		}
		if nodePool != "default" {
			t.Errorf("launch template %s: karpenter.sh/nodepool tag = %q, want the NodePool's name", *in.LaunchTemplateName, nodePool)
		}
	}
}
