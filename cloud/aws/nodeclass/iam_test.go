package nodeclass

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/iampolicy"
)

// TestResolveIsAdmittedByKarpentersPolicy resolves a node class (creating
// its instance profile and running the dry-run launch probes), then adds a
// tag to it so the profile is re-tagged, and checks every request the
// in-memory AWS received against Karpenter's controller policy and
// stevedore's generated one.
func TestResolveIsAdmittedByKarpentersPolicy(t *testing.T) {
	w := newWorld(t)
	clients, log := iampolicy.Record(w.aws.Clients(), w.aws.Authorization())
	r := NewResolver(clients, Options{ClusterName: cluster, Region: w.aws.Region(), Clock: w.clk})
	nc := nodeClass(w)
	st, err := r.Resolve(context.Background(), nc, version)
	if err != nil {
		t.Fatal(err)
	}
	nc.Status = st
	nc.Spec.Tags = map[string]string{"team": "platform"}
	if _, err := r.Resolve(context.Background(), nc, version); err != nil {
		t.Fatal(err)
	}
	calls := log.Take()
	ops := map[string]int{}
	for _, c := range calls {
		ops[c.Operation]++
	}
	for _, op := range []string{"CreateInstanceProfile", "AddRoleToInstanceProfile", "TagInstanceProfile", "CreateFleet", "RunInstances"} {
		if ops[op] == 0 {
			t.Errorf("no %s call recorded (%v); the test no longer covers it", op, ops)
		}
	}
	queue := fmt.Sprintf("arn:aws:sqs:%s:%s:%s", w.aws.Region(), w.aws.AccountID(), w.setup.QueueName)
	for name, pol := range map[string]iampolicy.Policy{
		"karpenter": iampolicy.KarpenterReference("aws", w.aws.Region(), w.aws.AccountID(), cluster, w.setup.NodeRoleARN, queue),
		"stevedore": iampolicy.ControllerPolicy(iampolicy.Params{ClusterName: cluster, AccountID: w.aws.AccountID(), Region: w.aws.Region(), NodeRoleName: w.setup.NodeRole, QueueName: w.setup.QueueName}),
	} {
		for _, d := range iampolicy.Denied(pol, calls) {
			t.Errorf("%s policy refuses %s", name, d)
		}
	}
}

// TestFinalizeDeletesWhatStevedoreCreated: deleting a node class deletes
// its launch templates and the instance profile stevedore made for it, and
// nothing else: not another node class's or cluster's templates, not a
// profile the user manages. Every request passes Karpenter's policy.
func TestFinalizeDeletesWhatStevedoreCreated(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	clients, log := iampolicy.Record(w.aws.Clients(), w.aws.Authorization())
	r := NewResolver(clients, Options{ClusterName: cluster, Region: w.aws.Region(), Clock: w.clk})
	nc := nodeClass(w)
	st, err := r.Resolve(ctx, nc, version)
	if err != nil {
		t.Fatal(err)
	}
	nc.Status = st
	profile := st.InstanceProfile
	if _, ok := w.aws.InstanceProfileRoles(profile); !ok {
		t.Fatalf("managed profile %q was not created", profile)
	}
	if err := w.aws.AddInstanceProfile("users-own", w.setup.NodeRole); err != nil {
		t.Fatal(err)
	}
	lt := func(name, clusterName, nodeClass string) {
		tags := []ec2types.Tag{
			{Key: aws.String("kubernetes.io/cluster/" + clusterName), Value: aws.String("owned")},
			{Key: aws.String(wellknown.TagEKSClusterName), Value: aws.String(clusterName)},
			{Key: aws.String(wellknown.TagEC2NodeClass), Value: aws.String(nodeClass)},
			{Key: aws.String(wellknown.TagNodePool), Value: aws.String("default")},
		}
		if _, err := w.aws.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
			LaunchTemplateName: aws.String(name), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-1")},
			TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: tags}},
		}); err != nil {
			t.Fatal(err)
		}
	}
	lt("stevedore/my-cluster/a", cluster, nc.Name)
	lt("stevedore/my-cluster/b", cluster, nc.Name)
	lt("stevedore/my-cluster/other-class", cluster, "other")
	lt("stevedore/other-cluster/a", "other-cluster", nc.Name)
	log.Take()

	if err := r.Finalize(ctx, nc); err != nil {
		t.Fatal(err)
	}
	if got, want := w.aws.LaunchTemplateNames(), []string{"stevedore/my-cluster/other-class", "stevedore/other-cluster/a"}; !slices.Equal(got, want) {
		t.Errorf("launch templates left = %v, want %v", got, want)
	}
	if _, ok := w.aws.InstanceProfileRoles(profile); ok {
		t.Errorf("managed instance profile %s still exists", profile)
	}
	if _, ok := w.aws.InstanceProfileRoles("users-own"); !ok {
		t.Error("the user's own instance profile was deleted")
	}
	calls := log.Take()
	queue := fmt.Sprintf("arn:aws:sqs:%s:%s:%s", w.aws.Region(), w.aws.AccountID(), w.setup.QueueName)
	for _, d := range iampolicy.Denied(iampolicy.KarpenterReference("aws", w.aws.Region(), w.aws.AccountID(), cluster, w.setup.NodeRoleARN, queue), calls) {
		t.Errorf("karpenter policy refuses %s", d)
	}
	// A second pass finds nothing to do and succeeds.
	if err := r.Finalize(ctx, nc); err != nil {
		t.Fatalf("second Finalize: %v", err)
	}

	// A node class with a user-managed profile leaves it alone.
	user := nodeClass(w)
	user.Spec.Role = ""
	user.Spec.InstanceProfile = aws.String("users-own")
	user.Status.InstanceProfile = "users-own"
	if err := r.Finalize(ctx, user); err != nil {
		t.Fatal(err)
	}
	if _, ok := w.aws.InstanceProfileRoles("users-own"); !ok {
		t.Error("Finalize deleted the profile named in spec.instanceProfile")
	}
}
