package iampolicy

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// NodeRole is the IAM role nodes run as, shaped like Karpenter's
// KarpenterNodeRole: who may assume it and the AWS managed policies it
// carries.
type NodeRole struct {
	RoleName                 string      `json:"RoleName"`
	AssumeRolePolicyDocument TrustPolicy `json:"AssumeRolePolicyDocument"`
	ManagedPolicyArns        []string    `json:"ManagedPolicyArns"`
}

// TrustPolicy is a role's trust (assume-role) policy.
type TrustPolicy struct {
	Version   string           `json:"Version"`
	Statement []TrustStatement `json:"Statement"`
}

// TrustStatement lets a service principal assume the role.
type TrustStatement struct {
	Effect    string              `json:"Effect"`
	Principal map[string][]string `json:"Principal"`
	Action    []string            `json:"Action"`
}

// NodeRolePolicy returns the node role as Karpenter's reference template
// makes it: only EC2 may assume it (the instances), and it carries the
// worker-node, CNI, registry pull and SSM managed policies.
func NodeRolePolicy(p Params) NodeRole {
	p = p.withDefaults()
	suffix := "amazonaws.com"
	if p.Partition == "aws-cn" {
		suffix = "amazonaws.com.cn"
	}
	managed := func(name string) string { return fmt.Sprintf("arn:%s:iam::aws:policy/%s", p.Partition, name) }
	return NodeRole{
		RoleName: p.NodeRoleName,
		AssumeRolePolicyDocument: TrustPolicy{Version: "2012-10-17", Statement: []TrustStatement{
			{Effect: "Allow", Principal: map[string][]string{"Service": {"ec2." + suffix}}, Action: []string{"sts:AssumeRole"}},
		}},
		ManagedPolicyArns: []string{
			managed("AmazonEKS_CNI_Policy"),
			managed("AmazonEKSWorkerNodePolicy"),
			managed("AmazonEC2ContainerRegistryPullOnly"),
			managed("AmazonSSMManagedInstanceCore"),
		},
	}
}

// JSON renders the role indented by two spaces, with a final newline.
func (r NodeRole) JSON() []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		panic(fmt.Sprintf("encoding node role: %v", err))
	}
	return buf.Bytes()
}
