package iampolicy

import "testing"

func TestAllows(t *testing.T) {
	pol := KarpenterReference("aws", "us-east-1", "111122223333", "c", "arn:aws:iam::111122223333:role/Node", "arn:aws:sqs:us-east-1:111122223333:c")
	owned := map[string][]string{
		"aws:RequestTag/kubernetes.io/cluster/c": {"owned"},
		"aws:RequestTag/eks:eks-cluster-name":    {"c"},
		"aws:RequestTag/karpenter.sh/nodepool":   {"default"},
	}
	tests := []struct {
		name string
		r    Request
		sid  string // "" when refused
	}{
		{"launch into a tagged instance", Request{"ec2:RunInstances", "arn:aws:ec2:us-east-1:111122223333:instance/new", owned}, "AllowScopedEC2InstanceActionsWithTags"},
		{"action names are case-insensitive", Request{"EC2:runinstances", "arn:aws:ec2:us-east-1:111122223333:instance/new", owned}, "AllowScopedEC2InstanceActionsWithTags"},
		{"untagged instance", Request{"ec2:RunInstances", "arn:aws:ec2:us-east-1:111122223333:instance/new", nil}, ""},
		{"another cluster's tag", Request{"ec2:RunInstances", "arn:aws:ec2:us-east-1:111122223333:instance/new", map[string][]string{
			"aws:RequestTag/kubernetes.io/cluster/d": {"owned"}, "aws:RequestTag/eks:eks-cluster-name": {"c"}, "aws:RequestTag/karpenter.sh/nodepool": {"x"},
		}}, ""},
		{"another region", Request{"ec2:RunInstances", "arn:aws:ec2:eu-west-1:111122223333:instance/new", owned}, ""},
		{"shared subnet of another account", Request{"ec2:CreateFleet", "arn:aws:ec2:us-east-1:999999999999:subnet/subnet-1", nil}, "AllowScopedEC2InstanceAccessActions"},
		{"pass the node role to EC2", Request{"iam:PassRole", "arn:aws:iam::111122223333:role/Node", map[string][]string{"iam:PassedToService": {"ec2.amazonaws.com"}}}, "AllowPassingInstanceRole"},
		{"pass the node role to Lambda", Request{"iam:PassRole", "arn:aws:iam::111122223333:role/Node", map[string][]string{"iam:PassedToService": {"lambda.amazonaws.com"}}}, ""},
		{"pass another role", Request{"iam:PassRole", "arn:aws:iam::111122223333:role/Admin", map[string][]string{"iam:PassedToService": {"ec2.amazonaws.com"}}}, ""},
		{"tag an owned instance with Name", Request{"ec2:CreateTags", "arn:aws:ec2:us-east-1:111122223333:instance/i-1", map[string][]string{
			"aws:ResourceTag/kubernetes.io/cluster/c": {"owned"}, "aws:ResourceTag/karpenter.sh/nodepool": {"default"}, "aws:TagKeys": {"Name"},
		}}, "AllowScopedResourceTagging"},
		{"tag an owned instance with another key", Request{"ec2:CreateTags", "arn:aws:ec2:us-east-1:111122223333:instance/i-1", map[string][]string{
			"aws:ResourceTag/kubernetes.io/cluster/c": {"owned"}, "aws:ResourceTag/karpenter.sh/nodepool": {"default"}, "aws:TagKeys": {"Name", "karpenter.sh/nodepool"},
		}}, ""},
		{"regional read in the region", Request{"ec2:DescribeSubnets", "*", map[string][]string{"aws:RequestedRegion": {"us-east-1"}}}, "AllowRegionalReadActions"},
		{"regional read elsewhere", Request{"ec2:DescribeSubnets", "*", map[string][]string{"aws:RequestedRegion": {"eu-west-1"}}}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sid, ok := pol.Allows(tc.r)
			if ok != (tc.sid != "") || sid != tc.sid {
				t.Errorf("Allows = %q, %v; want %q", sid, ok, tc.sid)
			}
		})
	}
}

// TestGeneratedPolicyMatchesKarpentersConditions: every statement of the
// generated policy that Karpenter's reference also has carries the same
// conditions, so a request one admits through it the other admits too.
func TestGeneratedPolicyMatchesKarpentersConditions(t *testing.T) {
	gen := ControllerPolicy(Params{ClusterName: "c", AccountID: "111122223333", Region: "us-east-1", NodeRoleName: "Node", QueueName: "c"})
	ref := KarpenterReference("aws", "us-east-1", "111122223333", "c", "arn:aws:iam::111122223333:role/Node", "arn:aws:sqs:us-east-1:111122223333:c")
	refs := map[string]Statement{}
	for _, s := range ref.Statement {
		refs[s.Sid] = s
	}
	for _, s := range gen.Statement {
		r, ok := refs[s.Sid]
		if !ok {
			continue
		}
		if string(Policy{Statement: []Statement{{Condition: s.Condition}}}.JSON()) != string(Policy{Statement: []Statement{{Condition: r.Condition}}}.JSON()) {
			t.Errorf("%s: conditions differ from Karpenter's:\n%v\n%v", s.Sid, s.Condition, r.Condition)
		}
	}
}
