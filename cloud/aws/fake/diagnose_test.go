package fake_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
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

func TestInterruptionRules(t *testing.T) {
	e := newEnv(t, 1)
	const queueARN = "arn:aws:sqs:us-east-1:123456789012:demo"
	want := []string{"demo-rebalance", "demo-scheduled-change", "demo-spot-interruption", "demo-state-change"}
	if strings.Join(e.w.InterruptionRules, ",") != strings.Join(want, ",") {
		t.Fatalf("StandardCluster rules %v", e.w.InterruptionRules)
	}
	list := func(in *eventbridge.ListRuleNamesByTargetInput) []string {
		t.Helper()
		var names []string
		for {
			out, err := e.f.ListRuleNamesByTarget(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, out.RuleNames...)
			if out.NextToken == nil {
				return names
			}
			in.NextToken = out.NextToken
		}
	}
	if got := list(&eventbridge.ListRuleNamesByTargetInput{TargetArn: aws.String(queueARN), Limit: aws.Int32(3)}); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("paged rule names %v", got)
	}
	if got := list(&eventbridge.ListRuleNamesByTargetInput{TargetArn: aws.String(queueARN + "-other")}); len(got) != 0 {
		t.Errorf("rules of another queue: %v", got)
	}

	detailTypes := map[string]string{
		"demo-spot-interruption": fake.DetailTypeSpotInterruption, "demo-rebalance": fake.DetailTypeRebalanceRecommendation,
		"demo-state-change": fake.DetailTypeStateChange, "demo-scheduled-change": fake.DetailTypeHealthEvent,
	}
	for name, dt := range detailTypes {
		r, err := e.f.DescribeRule(ctx, &eventbridge.DescribeRuleInput{Name: aws.String(name)})
		if err != nil {
			t.Fatal(err)
		}
		var pattern struct {
			Source     []string `json:"source"`
			DetailType []string `json:"detail-type"`
		}
		if err := json.Unmarshal([]byte(aws.ToString(r.EventPattern)), &pattern); err != nil {
			t.Fatalf("%s: pattern %q: %v", name, aws.ToString(r.EventPattern), err)
		}
		wantSource := fake.SourceEC2
		if dt == fake.DetailTypeHealthEvent {
			wantSource = fake.SourceHealth
		}
		if r.State != ebtypes.RuleStateEnabled || aws.ToString(r.Arn) != "arn:aws:events:us-east-1:123456789012:rule/"+name ||
			len(pattern.Source) != 1 || pattern.Source[0] != wantSource || len(pattern.DetailType) != 1 || pattern.DetailType[0] != dt {
			t.Errorf("%s: %+v, pattern %+v", name, r, pattern)
		}
	}

	if err := e.f.SetRuleEnabled("demo-rebalance", false); err != nil {
		t.Fatal(err)
	}
	if r, err := e.f.DescribeRule(ctx, &eventbridge.DescribeRuleInput{Name: aws.String("demo-rebalance")}); err != nil || r.State != ebtypes.RuleStateDisabled {
		t.Errorf("disabled rule: %+v %v", r, err)
	}
	if err := e.f.RemoveRule("demo-spot-interruption"); err != nil {
		t.Fatal(err)
	}
	if got := list(&eventbridge.ListRuleNamesByTargetInput{TargetArn: aws.String(queueARN)}); len(got) != 3 || slices.Contains(got, "demo-spot-interruption") {
		t.Errorf("after RemoveRule: %v", got)
	}
	var nf *ebtypes.ResourceNotFoundException
	if _, err := e.f.DescribeRule(ctx, &eventbridge.DescribeRuleInput{Name: aws.String("demo-spot-interruption")}); !errors.As(err, &nf) {
		t.Errorf("removed rule: %v", err)
	}
	if err := e.f.RemoveRule("demo-spot-interruption"); err == nil {
		t.Error("removing a missing rule succeeded")
	}
	if _, err := e.f.ListRuleNamesByTarget(ctx, &eventbridge.ListRuleNamesByTargetInput{TargetArn: aws.String(queueARN), EventBusName: aws.String("custom")}); !errors.As(err, &nf) {
		t.Errorf("unknown event bus: %v", err)
	}
	if _, err := e.f.ListRuleNamesByTarget(ctx, &eventbridge.ListRuleNamesByTargetInput{}); code(err) != "ValidationException" {
		t.Errorf("no target: %v", err)
	}
	e.f.DenyAction("events:ListRuleNamesByTarget")
	if _, err := e.f.ListRuleNamesByTarget(ctx, &eventbridge.ListRuleNamesByTargetInput{TargetArn: aws.String(queueARN)}); code(err) != "AccessDeniedException" {
		t.Errorf("denied: %v", err)
	}
}
