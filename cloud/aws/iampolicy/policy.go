package iampolicy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Params fill in the policy's ARNs and conditions. Empty fields keep the
// shell-style placeholders of DefaultParams, so that the printed policy can
// be filled in later with envsubst.
type Params struct {
	ClusterName  string
	Partition    string
	AccountID    string
	Region       string
	NodeRoleName string
	QueueName    string
	// ZonalShift adds the statement that lets the controller read the
	// cluster's ARC zonal shifts; set it when the controller runs with
	// --enable-zonal-shift.
	ZonalShift bool
}

// DefaultParams are the placeholders used for unset parameters; the
// partition defaults to "aws".
var DefaultParams = Params{
	ClusterName:  "${CLUSTER_NAME}",
	Partition:    "aws",
	AccountID:    "${AWS_ACCOUNT_ID}",
	Region:       "${AWS_REGION}",
	NodeRoleName: "${NODE_ROLE_NAME}",
	QueueName:    "${QUEUE_NAME}",
}

func (p Params) withDefaults() Params {
	d := DefaultParams
	for _, f := range []struct{ v, def *string }{
		{&p.ClusterName, &d.ClusterName}, {&p.Partition, &d.Partition}, {&p.AccountID, &d.AccountID},
		{&p.Region, &d.Region}, {&p.NodeRoleName, &d.NodeRoleName}, {&p.QueueName, &d.QueueName},
	} {
		if *f.v == "" {
			*f.v = *f.def
		}
	}
	return p
}

// Policy is an IAM policy document.
type Policy struct {
	Version   string      `json:"Version"`
	Statement []Statement `json:"Statement"`
}

// Statement is one statement of a Policy. Conditions map an operator
// (StringEquals, StringLike, StringEqualsIfExists,
// ForAllValues:StringEquals) to condition keys and their allowed values.
type Statement struct {
	Sid       string                         `json:"Sid"`
	Effect    string                         `json:"Effect"`
	Action    []string                       `json:"Action"`
	Resource  []string                       `json:"Resource"`
	Condition map[string]map[string][]string `json:"Condition,omitempty"`
}

// scope is a statement without its actions: those come from the inventory.
type scope struct {
	sid       string
	resources []string
	condition map[string]map[string][]string
	// zonalShift marks the statement only a controller with
	// --enable-zonal-shift needs (Params.ZonalShift).
	zonalShift bool
}

// scopes are the controller policy's statements in the order they are
// printed, with the resources and conditions of each.
func scopes(p Params) []scope {
	ec2 := func(account, kind string) string {
		return fmt.Sprintf("arn:%s:ec2:%s:%s:%s/*", p.Partition, p.Region, account, kind)
	}
	cluster := "kubernetes.io/cluster/" + p.ClusterName
	clusterARN := fmt.Sprintf("arn:%s:eks:%s:%s:cluster/%s", p.Partition, p.Region, p.AccountID, p.ClusterName)
	profiles := fmt.Sprintf("arn:%s:iam::%s:instance-profile/*", p.Partition, p.AccountID)
	nodeRole := fmt.Sprintf("arn:%s:iam::%s:role/%s", p.Partition, p.AccountID, p.NodeRoleName)
	created := []string{
		ec2(p.AccountID, "fleet"), ec2(p.AccountID, "instance"), ec2(p.AccountID, "volume"),
		ec2(p.AccountID, "network-interface"), ec2(p.AccountID, "launch-template"), ec2(p.AccountID, "spot-instances-request"),
	}
	requestTags := map[string][]string{
		"aws:RequestTag/" + cluster:           {"owned"},
		"aws:RequestTag/eks:eks-cluster-name": {p.ClusterName},
	}
	owned := map[string]map[string][]string{
		"StringEquals": {"aws:ResourceTag/" + cluster: {"owned"}},
		"StringLike":   {"aws:ResourceTag/karpenter.sh/nodepool": {"*"}},
	}
	profileOwned := map[string][]string{
		"aws:ResourceTag/" + cluster:                    {"owned"},
		"aws:ResourceTag/topology.kubernetes.io/region": {p.Region},
	}
	profileRequest := map[string][]string{
		"aws:RequestTag/" + cluster:                    {"owned"},
		"aws:RequestTag/eks:eks-cluster-name":          {p.ClusterName},
		"aws:RequestTag/topology.kubernetes.io/region": {p.Region},
	}
	return []scope{
		{sid: SidInstanceAccess, resources: []string{
			fmt.Sprintf("arn:%s:ec2:%s::image/*", p.Partition, p.Region),
			fmt.Sprintf("arn:%s:ec2:%s::snapshot/*", p.Partition, p.Region),
			ec2("*", "security-group"), ec2("*", "subnet"), ec2("*", "capacity-reservation"), ec2("*", "placement-group"),
		}},
		{sid: SidLaunchTemplateAccess, resources: []string{ec2(p.AccountID, "launch-template")}, condition: owned},
		{sid: SidInstanceActionsWithTags, resources: created, condition: map[string]map[string][]string{
			"StringEquals": requestTags,
			"StringLike":   {"aws:RequestTag/karpenter.sh/nodepool": {"*"}},
		}},
		{sid: SidResourceCreationTagging, resources: created, condition: map[string]map[string][]string{
			"StringEquals": merge(requestTags, map[string][]string{"ec2:CreateAction": {"RunInstances", "CreateFleet", "CreateLaunchTemplate"}}),
			"StringLike":   {"aws:RequestTag/karpenter.sh/nodepool": {"*"}},
		}},
		{sid: SidResourceTagging, resources: []string{ec2(p.AccountID, "instance")}, condition: map[string]map[string][]string{
			"StringEquals":              owned["StringEquals"],
			"StringLike":                owned["StringLike"],
			"StringEqualsIfExists":      {"aws:RequestTag/eks:eks-cluster-name": {p.ClusterName}},
			"ForAllValues:StringEquals": {"aws:TagKeys": {"eks:eks-cluster-name", "karpenter.sh/nodeclaim", "Name"}},
		}},
		{sid: SidScopedDeletion, resources: []string{ec2(p.AccountID, "instance"), ec2(p.AccountID, "launch-template")}, condition: owned},
		{sid: SidRegionalRead, resources: []string{"*"}, condition: map[string]map[string][]string{
			"StringEquals": {"aws:RequestedRegion": {p.Region}},
		}},
		{sid: SidSSMRead, resources: []string{fmt.Sprintf("arn:%s:ssm:%s::parameter/aws/service/*", p.Partition, p.Region)}},
		{sid: SidPricingRead, resources: []string{"*"}},
		{sid: SidInterruptionQueue, resources: []string{fmt.Sprintf("arn:%s:sqs:%s:%s:%s", p.Partition, p.Region, p.AccountID, p.QueueName)}},
		{sid: SidPassNodeRole, resources: []string{nodeRole}, condition: map[string]map[string][]string{
			"StringEquals": {"iam:PassedToService": {"ec2.amazonaws.com", "ec2.amazonaws.com.cn"}},
		}},
		{sid: SidInstanceProfileCreation, resources: []string{profiles}, condition: map[string]map[string][]string{
			"StringEquals": profileRequest,
			"StringLike":   {"aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": {"*"}},
		}},
		{sid: SidInstanceProfileTagging, resources: []string{profiles}, condition: map[string]map[string][]string{
			"StringEquals": merge(profileOwned, profileRequest),
			"StringLike": {
				"aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": {"*"},
				"aws:RequestTag/karpenter.k8s.aws/ec2nodeclass":  {"*"},
			},
		}},
		{sid: SidInstanceProfileActions, resources: []string{profiles}, condition: map[string]map[string][]string{
			"StringEquals": profileOwned,
			"StringLike":   {"aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": {"*"}},
		}},
		{sid: SidInstanceProfileList, resources: []string{"*"}},
		{sid: SidInstanceProfileRead, resources: []string{profiles}},
		{sid: SidAPIServerEndpointDiscovery, resources: []string{clusterARN}},
		{sid: SidZonalShift, resources: []string{"*"}, zonalShift: true, condition: map[string]map[string][]string{
			"StringEquals": {"arc-zonal-shift:ResourceIdentifier": {clusterARN}},
		}},
	}
}

func merge(ms ...map[string][]string) map[string][]string {
	out := map[string][]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// ControllerPolicy generates the controller's policy from Inventory: every
// statement grants the actions of the controller's calls that name it.
// Statements no call names are left out, and so is the zonal shift
// statement unless p.ZonalShift asks for it.
func ControllerPolicy(p Params) Policy {
	return policyFrom(Inventory, p.withDefaults())
}

func policyFrom(inv []Call, p Params) Policy {
	actions := map[string][]string{}
	for _, c := range inv {
		if c.Caller != CallerController {
			continue
		}
		for _, g := range c.Grants {
			if !slices.Contains(actions[g.Statement], g.Action) {
				actions[g.Statement] = append(actions[g.Statement], g.Action)
			}
		}
	}
	pol := Policy{Version: "2012-10-17"}
	for _, s := range scopes(p) {
		acts := actions[s.sid]
		if len(acts) == 0 || (s.zonalShift && !p.ZonalShift) {
			continue
		}
		slices.SortFunc(acts, func(a, b string) int { return strings.Compare(strings.ToLower(a), strings.ToLower(b)) })
		pol.Statement = append(pol.Statement, Statement{
			Sid: s.sid, Effect: "Allow", Action: acts, Resource: s.resources, Condition: s.condition,
		})
	}
	return pol
}

// JSON renders the policy indented by two spaces, with a final newline.
// Map keys come out sorted, so the output is stable.
func (p Policy) JSON() []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(p); err != nil {
		// A Policy holds only strings.
		panic(fmt.Sprintf("encoding IAM policy: %v", err))
	}
	return buf.Bytes()
}
