package fake_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
)

// The calls below are the read-only ones `stevedore diagnose` adds to the
// narrow interfaces.

func TestListPodIdentityAssociations(t *testing.T) {
	e := newEnv(t, 1)
	role := e.f.AddRole("stevedore-controller")
	id, err := e.f.AddPodIdentityAssociation("demo", "stevedore", "stevedore", role)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.f.AddPodIdentityAssociation("demo", "kube-system", "aws-node", role); err != nil {
		t.Fatal(err)
	}
	if _, err := e.f.AddPodIdentityAssociation("demo", "stevedore", "stevedore", role); err == nil {
		t.Error("a second association for the same service account was accepted")
	}

	all, err := e.f.ListPodIdentityAssociations(ctx, &eks.ListPodIdentityAssociationsInput{ClusterName: aws.String("demo")})
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Associations) != 2 || aws.ToString(all.Associations[0].Namespace) != "kube-system" {
		t.Fatalf("associations not sorted by namespace: %+v", all.Associations)
	}
	got, err := e.f.ListPodIdentityAssociations(ctx, &eks.ListPodIdentityAssociationsInput{
		ClusterName: aws.String("demo"), Namespace: aws.String("stevedore"), ServiceAccount: aws.String("stevedore"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Associations) != 1 || aws.ToString(got.Associations[0].AssociationId) != id ||
		!strings.HasSuffix(aws.ToString(got.Associations[0].AssociationArn), "/demo/"+id) {
		t.Errorf("filtered associations %+v", got.Associations)
	}
	none, err := e.f.ListPodIdentityAssociations(ctx, &eks.ListPodIdentityAssociationsInput{ClusterName: aws.String("demo"), Namespace: aws.String("other")})
	if err != nil || len(none.Associations) != 0 {
		t.Errorf("other namespace: %+v %v", none, err)
	}
	if _, err := e.f.ListPodIdentityAssociations(ctx, &eks.ListPodIdentityAssociationsInput{ClusterName: aws.String("nope")}); code(err) != "ResourceNotFoundException" {
		t.Errorf("missing cluster: %v", err)
	}
	e.f.DenyAction("eks:ListPodIdentityAssociations")
	if _, err := e.f.ListPodIdentityAssociations(ctx, &eks.ListPodIdentityAssociationsInput{ClusterName: aws.String("demo")}); code(err) != "AccessDeniedException" {
		t.Errorf("denied: %v", err)
	}
}

func TestGetQueueAttributes(t *testing.T) {
	e := newEnv(t, 1)
	attrs := func(names ...sqstypes.QueueAttributeName) (map[string]string, error) {
		out, err := e.f.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(e.w.QueueURL), AttributeNames: names})
		if err != nil {
			return nil, err
		}
		return out.Attributes, nil
	}
	all, err := attrs(sqstypes.QueueAttributeNameAll)
	if err != nil {
		t.Fatal(err)
	}
	if all["QueueArn"] != "arn:aws:sqs:us-east-1:123456789012:demo" || all["MessageRetentionPeriod"] != "300" ||
		all["ApproximateNumberOfMessages"] != "0" || !strings.Contains(all["Policy"], "events.amazonaws.com") {
		t.Errorf("attributes of the standard queue: %v", all)
	}
	if err := e.f.SendMessageBody("demo", "{}"); err != nil {
		t.Fatal(err)
	}
	one, err := attrs(sqstypes.QueueAttributeNameApproximateNumberOfMessages)
	if err != nil || len(one) != 1 || one["ApproximateNumberOfMessages"] != "1" {
		t.Errorf("one attribute: %v %v", one, err)
	}

	e.f.CreateQueue("bare", 0)
	bare, err := e.f.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String("https://sqs.us-east-1.amazonaws.com/123456789012/bare"),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNamePolicy, sqstypes.QueueAttributeNameMessageRetentionPeriod},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, has := bare.Attributes["Policy"]; has || bare.Attributes["MessageRetentionPeriod"] != "345600" {
		t.Errorf("a queue without a policy: %v", bare.Attributes)
	}

	if _, err := attrs("NoSuchAttribute"); code(err) != "InvalidAttributeName" {
		t.Errorf("unknown attribute: %v", err)
	}
	e.f.DeleteQueue("demo")
	if _, err := attrs(sqstypes.QueueAttributeNameAll); code(err) != "QueueDoesNotExist" && code(err) != "AWS.SimpleQueueService.NonExistentQueue" {
		t.Errorf("deleted queue: %v", err)
	}
	if err := e.f.SetQueuePolicy("demo", "{}"); err == nil {
		t.Error("policy set on a deleted queue")
	}
	if p := fake.QueuePolicyEventBridge("arn:q"); !strings.Contains(p, `"Resource":"arn:q"`) {
		t.Errorf("policy %s", p)
	}
}
