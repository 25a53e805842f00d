package aws

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
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
	e := newEnvWith(t, testTypes, func(c sdk.Clients) sdk.Clients {
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

// TestUnusedLaunchTemplatesAreDeleted: a launch template no launch used for
// longer than the TTL is deleted (and recreated by its next launch); one
// used recently, a new one, and templates of other clusters or tools stay.
// The deletions pass Karpenter's policy.
func TestUnusedLaunchTemplatesAreDeleted(t *testing.T) {
	e, log := recordingEnv(t)
	pin := []karpv1.NodeSelectorRequirementWithMinValues{req(wellknown.LabelInstanceType, "m6i.large"), req(wellknown.LabelCapacityType, wellknown.CapacityTypeOnDemand)}
	e.create(claim("a", pin...))
	old := e.aws.LaunchTemplateNames()
	for _, name := range []string{"other-tool", "stevedore/other-cluster/x"} {
		if _, err := e.aws.CreateLaunchTemplate(e.ctx, &ec2.CreateLaunchTemplateInput{
			LaunchTemplateName: aws.String(name), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-1")},
			TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: []ec2types.Tag{
				{Key: aws.String(wellknown.TagEKSClusterName), Value: aws.String("test")},
			}}},
		}); err != nil {
			t.Fatal(err)
		}
	}
	e.clk.Step(2 * time.Minute)
	b := claim("b", pin...)
	b.Labels[wellknown.LabelNodePool] = "other"
	e.create(b)
	e.clk.Step(30 * time.Second)
	log.Take()

	deleted, err := e.p.CollectLaunchTemplates(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(deleted, old) {
		t.Errorf("deleted %v, want the unused %v", deleted, old)
	}
	left := e.aws.LaunchTemplateNames()
	if len(left) != 3 || slices.Contains(left, old[0]) {
		t.Errorf("launch templates left = %v, want other-tool, the other cluster's and pool other's", left)
	}
	checkAuthorized(t, e.aws, e.world, log.Take())

	creates := e.aws.Calls("CreateLaunchTemplate")
	e.create(claim("c", pin...))
	if e.aws.Calls("CreateLaunchTemplate") != creates+1 {
		t.Error("the deleted template was not recreated by its next launch")
	}
}
