package sdk_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

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
