package iampolicy

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/arczonalshift"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

// Account describes where requests are made and answers what Requests
// cannot read from a call's input: the tags of existing resources and the
// role of an instance profile. Nil functions answer "nothing".
type Account struct {
	Partition, Region, AccountID string
	// LaunchTemplate returns a launch template's tags and content, by name.
	LaunchTemplate func(name string) (tags map[string]string, data *ec2types.RequestLaunchTemplateData, ok bool)
	// InstanceTags returns an instance's tags.
	InstanceTags func(id string) map[string]string
	// ProfileTags returns an instance profile's tags; ProfileRole the ARN of
	// the role it carries.
	ProfileTags func(name string) map[string]string
	ProfileRole func(name string) string
	// RoleARN returns a role's ARN by name.
	RoleARN func(name string) string
}

func (a Account) ec2ARN(kind, id string) string {
	account := a.AccountID
	if kind == "image" || kind == "snapshot" {
		account = ""
	}
	return fmt.Sprintf("arn:%s:ec2:%s:%s:%s/%s", a.Partition, a.Region, account, kind, id)
}

func tagContext(prefix string, tags map[string]string) map[string][]string {
	ctx := map[string][]string{}
	for k, v := range tags {
		ctx[prefix+k] = []string{v}
	}
	return ctx
}

func specTags(specs []ec2types.TagSpecification, rt ec2types.ResourceType) (map[string]string, bool) {
	for _, s := range specs {
		if s.ResourceType == rt {
			return tagMap(s.Tags), true
		}
	}
	return nil, false
}

func tagMap(tags []ec2types.Tag) map[string]string {
	out := map[string]string{}
	for _, t := range tags {
		if t.Key != nil {
			out[*t.Key] = deref(t.Value)
		}
	}
	return out
}

func deref[T any](p *T) T {
	var z T
	if p == nil {
		return z
	}
	return *p
}

// created is one resource a launch creates, with the tags it is created with.
type created struct {
	kind string
	tags map[string]string
}

// launchRequests are the authorizations of one launch (action is
// ec2:CreateFleet or ec2:RunInstances): the shared inputs, the launch
// template, every created resource with its request tags and the tagging at
// creation, and passing the instance profile's role.
func (a Account) launchRequests(actions []string, createAction string, shared []string, template string, res []created, profile string) []Request {
	var out []Request
	for _, act := range actions {
		for _, arn := range shared {
			out = append(out, Request{Action: act, Resource: arn})
		}
		if template != "" {
			var tags map[string]string
			if a.LaunchTemplate != nil {
				tags, _, _ = a.LaunchTemplate(template)
			}
			out = append(out, Request{Action: act, Resource: a.ec2ARN("launch-template", "lt-00000000000000000"), Context: tagContext("aws:ResourceTag/", tags)})
		}
		for _, r := range res {
			out = append(out, Request{Action: act, Resource: a.ec2ARN(r.kind, "new"), Context: tagContext("aws:RequestTag/", r.tags)})
		}
	}
	for _, r := range res {
		if len(r.tags) == 0 {
			continue
		}
		ctx := tagContext("aws:RequestTag/", r.tags)
		ctx["ec2:CreateAction"] = []string{createAction}
		ctx["aws:TagKeys"] = sortedKeys(r.tags)
		out = append(out, Request{Action: "ec2:CreateTags", Resource: a.ec2ARN(r.kind, "new"), Context: ctx})
	}
	if profile != "" && a.ProfileRole != nil {
		if role := a.ProfileRole(profile); role != "" {
			out = append(out, Request{Action: "iam:PassRole", Resource: role, Context: map[string][]string{"iam:PassedToService": {"ec2.amazonaws.com"}}})
		}
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// templateResources are the resources a launch template's own tag
// specifications tag: network interfaces and spot requests.
func templateResources(data *ec2types.RequestLaunchTemplateData, spot bool) []created {
	var out []created
	var eni, sir map[string]string
	if data != nil {
		for _, s := range data.TagSpecifications {
			switch s.ResourceType {
			case ec2types.ResourceTypeNetworkInterface:
				eni = tagMap(s.Tags)
			case ec2types.ResourceTypeSpotInstancesRequest:
				sir = tagMap(s.Tags)
			}
		}
	}
	out = append(out, created{"network-interface", eni})
	if spot {
		out = append(out, created{"spot-instances-request", sir})
	}
	return out
}

// Requests expands one call into the authorizations AWS evaluates for it,
// as far as the controller's policy depends on them. Calls it does not
// model give one request for the operation's action on "*" in the region.
func (a Account) Requests(service, operation string, input any) []Request {
	switch in := input.(type) {
	case *ec2.CreateLaunchTemplateInput:
		tags, _ := specTags(in.TagSpecifications, ec2types.ResourceTypeLaunchTemplate)
		return a.launchRequests([]string{"ec2:CreateLaunchTemplate"}, "CreateLaunchTemplate", nil, "",
			[]created{{"launch-template", tags}}, "")
	case *ec2.CreateFleetInput:
		spot := in.TargetCapacitySpecification != nil && in.TargetCapacitySpecification.DefaultTargetCapacityType == ec2types.DefaultTargetCapacityTypeSpot
		var res []created
		for _, rt := range []ec2types.ResourceType{ec2types.ResourceTypeFleet, ec2types.ResourceTypeInstance, ec2types.ResourceTypeVolume} {
			tags, _ := specTags(in.TagSpecifications, rt)
			res = append(res, created{string(rt), tags})
		}
		var out []Request
		for _, cfg := range in.LaunchTemplateConfigs {
			name := deref(cfg.LaunchTemplateSpecification.LaunchTemplateName)
			var data *ec2types.RequestLaunchTemplateData
			found := false
			if a.LaunchTemplate != nil {
				_, data, found = a.LaunchTemplate(name)
			}
			var shared []string
			for _, o := range cfg.Overrides {
				shared = append(shared, a.ec2ARN("subnet", deref(o.SubnetId)))
				if o.ImageId != nil {
					shared = append(shared, a.ec2ARN("image", *o.ImageId))
				}
			}
			profile := ""
			if data != nil {
				for _, g := range append(append([]string(nil), data.SecurityGroupIds...), niGroups(data)...) {
					shared = append(shared, a.ec2ARN("security-group", g))
				}
				if data.IamInstanceProfile != nil {
					profile = deref(data.IamInstanceProfile.Name)
				}
			}
			if !found {
				// EC2 answers that the launch template does not exist before
				// it authorizes what the template would create; the node
				// class validation probe relies on it, as Karpenter's does.
				out = append(out, a.launchRequests([]string{"ec2:CreateFleet", "ec2:RunInstances"}, "CreateFleet", shared, "", res, "")...)
				continue
			}
			out = append(out, a.launchRequests([]string{"ec2:CreateFleet", "ec2:RunInstances"}, "CreateFleet", shared, name,
				append(slices.Clone(res), templateResources(data, spot)...), profile)...)
		}
		return out
	case *ec2.RunInstancesInput:
		var res []created
		for _, rt := range []ec2types.ResourceType{ec2types.ResourceTypeInstance, ec2types.ResourceTypeVolume, ec2types.ResourceTypeNetworkInterface} {
			tags, _ := specTags(in.TagSpecifications, rt)
			res = append(res, created{string(rt), tags})
		}
		shared := []string{a.ec2ARN("subnet", deref(in.SubnetId)), a.ec2ARN("image", deref(in.ImageId))}
		for _, g := range in.SecurityGroupIds {
			shared = append(shared, a.ec2ARN("security-group", g))
		}
		profile := ""
		if in.IamInstanceProfile != nil {
			profile = deref(in.IamInstanceProfile.Name)
		}
		return a.launchRequests([]string{"ec2:RunInstances"}, "RunInstances", shared, "", res, profile)
	case *ec2.DeleteLaunchTemplateInput:
		var tags map[string]string
		if a.LaunchTemplate != nil {
			tags, _, _ = a.LaunchTemplate(deref(in.LaunchTemplateName))
		}
		return []Request{{Action: "ec2:DeleteLaunchTemplate", Resource: a.ec2ARN("launch-template", "lt"), Context: tagContext("aws:ResourceTag/", tags)}}
	case *ec2.TerminateInstancesInput:
		var out []Request
		for _, id := range in.InstanceIds {
			out = append(out, Request{Action: "ec2:TerminateInstances", Resource: a.ec2ARN("instance", id), Context: a.instanceContext(id)})
		}
		return out
	case *ec2.CreateTagsInput:
		var out []Request
		tags := tagMap(in.Tags)
		for _, id := range in.Resources {
			ctx := a.instanceContext(id)
			for k, v := range tagContext("aws:RequestTag/", tags) {
				ctx[k] = v
			}
			ctx["aws:TagKeys"] = sortedKeys(tags)
			out = append(out, Request{Action: "ec2:CreateTags", Resource: a.ec2ARN("instance", id), Context: ctx})
		}
		return out
	case *iam.CreateInstanceProfileInput:
		return []Request{{Action: "iam:CreateInstanceProfile", Resource: a.profileARN(deref(in.InstanceProfileName)), Context: iamTagContext("aws:RequestTag/", in.Tags)}}
	case *iam.TagInstanceProfileInput:
		ctx := a.profileContext(deref(in.InstanceProfileName))
		for k, v := range iamTagContext("aws:RequestTag/", in.Tags) {
			ctx[k] = v
		}
		return []Request{{Action: "iam:TagInstanceProfile", Resource: a.profileARN(deref(in.InstanceProfileName)), Context: ctx}}
	case *iam.AddRoleToInstanceProfileInput:
		out := []Request{{Action: "iam:AddRoleToInstanceProfile", Resource: a.profileARN(deref(in.InstanceProfileName)), Context: a.profileContext(deref(in.InstanceProfileName))}}
		if a.RoleARN != nil {
			out = append(out, Request{Action: "iam:PassRole", Resource: a.RoleARN(deref(in.RoleName)), Context: map[string][]string{"iam:PassedToService": {"ec2.amazonaws.com"}}})
		}
		return out
	case *iam.RemoveRoleFromInstanceProfileInput:
		return []Request{{Action: "iam:RemoveRoleFromInstanceProfile", Resource: a.profileARN(deref(in.InstanceProfileName)), Context: a.profileContext(deref(in.InstanceProfileName))}}
	case *iam.DeleteInstanceProfileInput:
		return []Request{{Action: "iam:DeleteInstanceProfile", Resource: a.profileARN(deref(in.InstanceProfileName)), Context: a.profileContext(deref(in.InstanceProfileName))}}
	case *arczonalshift.GetManagedResourceInput:
		// ARC authorizes on the resource's identifier, not on the Resource
		// element: policies scope the call with a condition key.
		return []Request{{Action: "arc-zonal-shift:GetManagedResource", Resource: "*", Context: map[string][]string{
			"arc-zonal-shift:ResourceIdentifier": {deref(in.ResourceIdentifier)}, "aws:RequestedRegion": {a.Region},
		}}}
	case *iam.GetInstanceProfileInput:
		return []Request{{Action: "iam:GetInstanceProfile", Resource: a.profileARN(deref(in.InstanceProfileName))}}
	case *iam.GetRoleInput:
		arn := fmt.Sprintf("arn:%s:iam::%s:role/%s", a.Partition, a.AccountID, deref(in.RoleName))
		if a.RoleARN != nil {
			if got := a.RoleARN(deref(in.RoleName)); got != "" {
				arn = got
			}
		}
		return []Request{{Action: "iam:GetRole", Resource: arn}}
	case *ssm.GetParameterInput:
		return []Request{{Action: "ssm:GetParameter", Resource: a.parameterARN(deref(in.Name)), Context: a.regional()}}
	case *eks.DescribeClusterInput:
		return []Request{{Action: "eks:DescribeCluster", Resource: fmt.Sprintf("arn:%s:eks:%s:%s:cluster/%s", a.Partition, a.Region, a.AccountID, deref(in.Name)), Context: a.regional()}}
	case *sqs.GetQueueUrlInput:
		account := a.AccountID
		if in.QueueOwnerAWSAccountId != nil {
			account = *in.QueueOwnerAWSAccountId
		}
		return []Request{{Action: "sqs:GetQueueUrl", Resource: fmt.Sprintf("arn:%s:sqs:%s:%s:%s", a.Partition, a.Region, account, deref(in.QueueName)), Context: a.regional()}}
	case *sqs.ReceiveMessageInput:
		return []Request{{Action: "sqs:ReceiveMessage", Resource: a.queueARN(deref(in.QueueUrl)), Context: a.regional()}}
	case *sqs.DeleteMessageInput:
		return []Request{{Action: "sqs:DeleteMessage", Resource: a.queueARN(deref(in.QueueUrl)), Context: a.regional()}}
	case *sqs.SendMessageInput:
		return []Request{{Action: "sqs:SendMessage", Resource: a.queueARN(deref(in.QueueUrl)), Context: a.regional()}}
	case *sqs.GetQueueAttributesInput:
		return []Request{{Action: "sqs:GetQueueAttributes", Resource: a.queueARN(deref(in.QueueUrl)), Context: a.regional()}}
	}
	c, ok := Lookup(service, operation)
	if !ok || len(c.Grants) == 0 {
		// Not the controller's call (diagnose, injection): the action of
		// the same name, so that a policy enforced on every call sees it.
		c.Grants = []Grant{{Action: ActionPrefix(service) + ":" + operation}}
	}
	var out []Request
	for _, g := range c.Grants {
		out = append(out, Request{Action: g.Action, Resource: "*", Context: a.regional()})
	}
	return out
}

func (a Account) regional() map[string][]string {
	return map[string][]string{"aws:RequestedRegion": {a.Region}}
}

// ActionPrefix is the IAM action prefix of an Inventory service name (a
// field of sdk.Clients): ec2, iam, events, arc-zonal-shift, ...
func ActionPrefix(service string) string {
	switch service {
	case "EventBridge":
		return "events"
	case "ARCZonalShift":
		return "arc-zonal-shift"
	}
	return strings.ToLower(service)
}

// parameterARN is an SSM parameter's ARN. AWS's public parameters
// (/aws/service/...) have no account in theirs.
func (a Account) parameterARN(name string) string {
	account := a.AccountID
	if strings.HasPrefix(name, "/aws/") {
		account = ""
	}
	return fmt.Sprintf("arn:%s:ssm:%s:%s:parameter/%s", a.Partition, a.Region, account, strings.TrimPrefix(name, "/"))
}

// queueARN is the ARN of the queue at an SQS queue URL,
// https://sqs.<region>.amazonaws.com/<account>/<name> (or any host with
// the account and name as the path).
func (a Account) queueARN(queueURL string) string {
	account, name := a.AccountID, queueURL
	if u, err := url.Parse(queueURL); err == nil {
		parts := strings.Split(strings.Trim(u.Path, "/"), "/")
		if len(parts) >= 2 {
			account, name = parts[len(parts)-2], parts[len(parts)-1]
		} else if len(parts) == 1 {
			name = parts[0]
		}
	}
	return fmt.Sprintf("arn:%s:sqs:%s:%s:%s", a.Partition, a.Region, account, name)
}

func niGroups(data *ec2types.RequestLaunchTemplateData) []string {
	var out []string
	for _, ni := range data.NetworkInterfaces {
		out = append(out, ni.Groups...)
	}
	return out
}

func (a Account) instanceContext(id string) map[string][]string {
	var tags map[string]string
	if a.InstanceTags != nil {
		tags = a.InstanceTags(id)
	}
	return tagContext("aws:ResourceTag/", tags)
}

func (a Account) profileARN(name string) string {
	return fmt.Sprintf("arn:%s:iam::%s:instance-profile/%s", a.Partition, a.AccountID, name)
}

func (a Account) profileContext(name string) map[string][]string {
	var tags map[string]string
	if a.ProfileTags != nil {
		tags = a.ProfileTags(name)
	}
	return tagContext("aws:ResourceTag/", tags)
}

func iamTagContext(prefix string, tags []iamtypes.Tag) map[string][]string {
	ctx := map[string][]string{}
	for _, t := range tags {
		ctx[prefix+deref(t.Key)] = []string{deref(t.Value)}
	}
	return ctx
}
