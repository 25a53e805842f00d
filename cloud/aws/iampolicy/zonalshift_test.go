package iampolicy

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/arczonalshift"
)

// TestZonalShiftStatement: the statement that lets the controller read its
// cluster's ARC zonal shifts is in the policy only when asked for, and then
// admits GetManagedResource for this cluster's ARN and no other resource,
// as Karpenter's ZonalShiftPolicy does.
func TestZonalShiftStatement(t *testing.T) {
	params := Params{ClusterName: "demo", AccountID: "123456789012", Region: "us-east-1"}
	acct := Account{Partition: "aws", Region: "us-east-1", AccountID: "123456789012"}
	request := func(arn string) Request {
		rs := acct.Requests("ARCZonalShift", "GetManagedResource", &arczonalshift.GetManagedResourceInput{ResourceIdentifier: aws.String(arn)})
		if len(rs) != 1 {
			t.Fatalf("requests %+v, want one", rs)
		}
		return rs[0]
	}
	own := request("arn:aws:eks:us-east-1:123456789012:cluster/demo")
	other := request("arn:aws:eks:us-east-1:123456789012:cluster/other")

	withoutParam := ControllerPolicy(params)
	params.ZonalShift = true
	withParam := ControllerPolicy(params)
	karpenter := KarpenterReference("aws", "us-east-1", "123456789012", "demo", "arn:aws:iam::123456789012:role/node", "arn:aws:sqs:us-east-1:123456789012:q")

	for _, tc := range []struct {
		name   string
		policy Policy
		req    Request
		want   bool
	}{
		{"default policy has no zonal shift statement", withoutParam, own, false},
		{"own cluster", withParam, own, true},
		{"another cluster", withParam, other, false},
		{"Karpenter's policy, own cluster", karpenter, own, true},
		{"Karpenter's policy, another cluster", karpenter, other, false},
	} {
		sid, ok := tc.policy.Allows(tc.req)
		if ok != tc.want {
			t.Errorf("%s: allowed=%v (by %q), want %v", tc.name, ok, sid, tc.want)
		}
		if ok && sid != SidZonalShift {
			t.Errorf("%s: allowed by %q, want %s", tc.name, sid, SidZonalShift)
		}
	}
	for _, s := range withoutParam.Statement {
		if s.Sid == SidZonalShift {
			t.Errorf("the default policy carries %s", SidZonalShift)
		}
	}
}
