package iampolicy

import (
	"reflect"
	"testing"
)

// TestNodeRoleIsKarpenters: the node role `stevedore iam-policy --node-role`
// prints trusts exactly what the KarpenterNodeRole of Karpenter's reference
// template trusts (the EC2 service principal of the partition, for
// sts:AssumeRole, and nothing else) and carries the same managed policies.
func TestNodeRoleIsKarpenters(t *testing.T) {
	for _, tc := range []struct {
		partition, ec2Principal string
	}{
		{"aws", "ec2.amazonaws.com"},
		{"aws-cn", "ec2.amazonaws.com.cn"},
		{"aws-us-gov", "ec2.amazonaws.com"},
	} {
		t.Run(tc.partition, func(t *testing.T) {
			r := NodeRolePolicy(Params{Partition: tc.partition, NodeRoleName: "KarpenterNodeRole-demo"})
			want := []TrustStatement{{Effect: "Allow", Principal: map[string][]string{"Service": {tc.ec2Principal}}, Action: []string{"sts:AssumeRole"}}}
			if !reflect.DeepEqual(r.AssumeRolePolicyDocument.Statement, want) {
				t.Errorf("trust statements = %+v\nwant %+v", r.AssumeRolePolicyDocument.Statement, want)
			}
			var managed []string
			for _, name := range []string{"AmazonEKS_CNI_Policy", "AmazonEKSWorkerNodePolicy", "AmazonEC2ContainerRegistryPullOnly", "AmazonSSMManagedInstanceCore"} {
				managed = append(managed, "arn:"+tc.partition+":iam::aws:policy/"+name)
			}
			if !reflect.DeepEqual(r.ManagedPolicyArns, managed) {
				t.Errorf("managed policies = %v\nwant %v", r.ManagedPolicyArns, managed)
			}
		})
	}
}
