package sdk_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	eventbridgetypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/sdk"
)

// The read-only calls of `stevedore diagnose`, through the real clients:
// SQS speaks JSON 1.0, EKS REST-JSON.

const getQueueAttributesJSON = `{"Attributes":{"QueueArn":"arn:aws:sqs:us-east-1:123456789012:demo","MessageRetentionPeriod":"300","Policy":"{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":{\"Service\":[\"events.amazonaws.com\",\"sqs.amazonaws.com\"]},\"Action\":\"sqs:SendMessage\",\"Resource\":\"arn:aws:sqs:us-east-1:123456789012:demo\"}]}"}}`

const listPodIdentityAssociationsJSON = `{"associations":[{"clusterName":"demo","namespace":"stevedore","serviceAccount":"stevedore","associationArn":"arn:aws:eks:us-east-1:123456789012:podidentityassociation/demo/a-0123456789abcdef0","associationId":"a-0123456789abcdef0"}]}`

func TestDiagnoseCallsThroughInterface(t *testing.T) {
	type request struct{ method, path, query, target, body string }
	var got []request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		got = append(got, request{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("X-Amz-Target"), string(raw)})
		switch {
		case r.Header.Get("X-Amz-Target") == "AmazonSQS.GetQueueAttributes":
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			io.WriteString(w, getQueueAttributesJSON)
		case r.Method == http.MethodGet && r.URL.Path == "/clusters/demo/pod-identity-associations":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, listPodIdentityAssociationsJSON)
		default:
			t.Errorf("unexpected request %s %s target %q", r.Method, r.URL, r.Header.Get("X-Amz-Target"))
			w.WriteHeader(http.StatusNotImplemented)
		}
	}))
	t.Cleanup(srv.Close)
	clients := sdk.NewFromConfig(testConfig(srv))
	ctx := context.Background()

	q, err := clients.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(srv.URL + "/123456789012/demo"),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll},
	})
	if err != nil {
		t.Fatal(err)
	}
	if q.Attributes["MessageRetentionPeriod"] != "300" || !strings.Contains(q.Attributes["Policy"], "events.amazonaws.com") {
		t.Errorf("attributes %v", q.Attributes)
	}
	if !strings.Contains(got[0].body, `"AttributeNames":["All"]`) {
		t.Errorf("request body %s", got[0].body)
	}

	a, err := clients.EKS.ListPodIdentityAssociations(ctx, &eks.ListPodIdentityAssociationsInput{
		ClusterName: aws.String("demo"), Namespace: aws.String("stevedore"), ServiceAccount: aws.String("stevedore"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Associations) != 1 || aws.ToString(a.Associations[0].AssociationId) != "a-0123456789abcdef0" || aws.ToString(a.Associations[0].ServiceAccount) != "stevedore" {
		t.Errorf("associations %+v", a.Associations)
	}
	if q := got[1].query; !strings.Contains(q, "namespace=stevedore") || !strings.Contains(q, "serviceAccount=stevedore") {
		t.Errorf("filters not sent as query parameters: %s", q)
	}
}

// EventBridge speaks JSON 1.1 with the target prefix AWSEvents. The responses
// are shaped as the service sends them for the rules docs/aws.md creates.

const listRuleNamesPage1JSON = `{"RuleNames":["demo-rebalance","demo-scheduled-change"],"NextToken":"AAAAAQ=="}`

const listRuleNamesPage2JSON = `{"RuleNames":["demo-spot-interruption"]}`

const describeRuleJSON = `{"Name":"demo-spot-interruption","Arn":"arn:aws:events:us-east-1:123456789012:rule/demo-spot-interruption",` +
	`"EventPattern":"{\"source\":[\"aws.ec2\"],\"detail-type\":[\"EC2 Spot Instance Interruption Warning\"]}",` +
	`"State":"ENABLED","EventBusName":"default","CreatedBy":"123456789012"}`

const eventsAccessDeniedJSON = `{"__type":"AccessDeniedException","message":"User: arn:aws:sts::123456789012:assumed-role/reader/me is not authorized to perform: events:DescribeRule on resource: arn:aws:events:us-east-1:123456789012:rule/demo-rebalance because no identity-based policy allows the events:DescribeRule action"}`

func TestEventBridgeThroughInterface(t *testing.T) {
	type request struct{ target, contentType, body string }
	var got []request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		body := string(raw)
		got = append(got, request{r.Header.Get("X-Amz-Target"), r.Header.Get("Content-Type"), body})
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		switch target := r.Header.Get("X-Amz-Target"); {
		case target == "AWSEvents.ListRuleNamesByTarget" && !strings.Contains(body, "NextToken"):
			io.WriteString(w, listRuleNamesPage1JSON)
		case target == "AWSEvents.ListRuleNamesByTarget":
			io.WriteString(w, listRuleNamesPage2JSON)
		case target == "AWSEvents.DescribeRule" && strings.Contains(body, "demo-spot-interruption"):
			io.WriteString(w, describeRuleJSON)
		case target == "AWSEvents.DescribeRule":
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, eventsAccessDeniedJSON)
		default:
			t.Errorf("unexpected request %s %s target %q", r.Method, r.URL, target)
			w.WriteHeader(http.StatusNotImplemented)
		}
	}))
	t.Cleanup(srv.Close)
	clients := sdk.NewFromConfig(testConfig(srv))
	ctx := context.Background()

	const queueARN = "arn:aws:sqs:us-east-1:123456789012:demo"
	var names []string
	var token *string
	for {
		out, err := clients.EventBridge.ListRuleNamesByTarget(ctx, &eventbridge.ListRuleNamesByTargetInput{TargetArn: aws.String(queueARN), NextToken: token})
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, out.RuleNames...)
		if out.NextToken == nil {
			break
		}
		token = out.NextToken
	}
	if strings.Join(names, ",") != "demo-rebalance,demo-scheduled-change,demo-spot-interruption" {
		t.Errorf("rule names %v", names)
	}
	if len(got) != 2 || got[0].contentType != "application/x-amz-json-1.1" ||
		!strings.Contains(got[0].body, `"TargetArn":"`+queueARN+`"`) || !strings.Contains(got[1].body, `"NextToken":"AAAAAQ=="`) {
		t.Errorf("requests %+v", got)
	}

	rule, err := clients.EventBridge.DescribeRule(ctx, &eventbridge.DescribeRuleInput{Name: aws.String("demo-spot-interruption")})
	if err != nil {
		t.Fatal(err)
	}
	if rule.State != eventbridgetypes.RuleStateEnabled || aws.ToString(rule.EventBusName) != "default" ||
		!strings.Contains(aws.ToString(rule.EventPattern), `"detail-type":["EC2 Spot Instance Interruption Warning"]`) {
		t.Errorf("rule %+v", rule)
	}
	if !strings.Contains(got[2].body, `"Name":"demo-spot-interruption"`) {
		t.Errorf("request body %s", got[2].body)
	}

	_, err = clients.EventBridge.DescribeRule(ctx, &eventbridge.DescribeRuleInput{Name: aws.String("demo-rebalance")})
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "AccessDeniedException" || !strings.Contains(ae.ErrorMessage(), "events:DescribeRule") {
		t.Errorf("denied DescribeRule: %v", err)
	}
}
