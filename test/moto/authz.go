package moto

import (
	"context"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/iampolicy"
	"github.com/stevedore-autoscaler/stevedore/test/moto/wire"
)

// Authorizer expands every call that passes a Proxy into the
// authorizations AWS would evaluate for it (iampolicy.Account.Requests):
// the action, the resource's ARN, and the condition keys the controller's
// policy tests, such as the request tags of what a launch creates and the
// resource tags of what a call deletes. It reads those tags from moto at the
// moment of the call, before the call changes them, so that a policy can be
// checked afterwards against exactly what was asked.
type Authorizer struct {
	account iampolicy.Account

	mu        sync.Mutex
	templates map[string]*ec2.CreateLaunchTemplateInput
	calls     []iampolicy.Recorded
}

// NewAuthorizer starts expanding the calls that pass p; cfg reaches moto
// directly (not through p), for the tags of existing resources.
func NewAuthorizer(cfg aws.Config, p *Proxy) *Authorizer {
	z := &Authorizer{templates: map[string]*ec2.CreateLaunchTemplateInput{}}
	ec2c, iamc := ec2.NewFromConfig(cfg), iam.NewFromConfig(cfg)
	ctx := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), lookupTimeout)
	}
	z.account = iampolicy.Account{
		Partition: "aws", Region: cfg.Region, AccountID: AccountID,
		// A launch template's content is what the controller created it
		// with; every template it launches from was created through p.
		LaunchTemplate: func(name string) (map[string]string, *ec2types.RequestLaunchTemplateData, bool) {
			z.mu.Lock()
			in, ok := z.templates[name]
			z.mu.Unlock()
			if !ok {
				return nil, nil, false
			}
			tags := map[string]string{}
			for _, s := range in.TagSpecifications {
				if s.ResourceType == ec2types.ResourceTypeLaunchTemplate {
					for _, t := range s.Tags {
						tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
					}
				}
			}
			return tags, in.LaunchTemplateData, true
		},
		InstanceTags: func(id string) map[string]string {
			c, cancel := ctx()
			defer cancel()
			out, err := ec2c.DescribeInstances(c, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
			if err != nil || len(out.Reservations) == 0 || len(out.Reservations[0].Instances) == 0 {
				return nil
			}
			tags := map[string]string{}
			for _, t := range out.Reservations[0].Instances[0].Tags {
				tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
			}
			return tags
		},
		ProfileTags: func(name string) map[string]string {
			c, cancel := ctx()
			defer cancel()
			// GetInstanceProfile carries the tags; moto answers
			// ListInstanceProfileTags with HTTP 500.
			out, err := iamc.GetInstanceProfile(c, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
			if err != nil {
				return nil
			}
			tags := map[string]string{}
			for _, t := range out.InstanceProfile.Tags {
				tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
			}
			return tags
		},
		ProfileRole: func(name string) string {
			c, cancel := ctx()
			defer cancel()
			out, err := iamc.GetInstanceProfile(c, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
			if err != nil || len(out.InstanceProfile.Roles) == 0 {
				return ""
			}
			return aws.ToString(out.InstanceProfile.Roles[0].Arn)
		},
		RoleARN: func(name string) string {
			c, cancel := ctx()
			defer cancel()
			out, err := iamc.GetRole(c, &iam.GetRoleInput{RoleName: aws.String(name)})
			if err != nil {
				return ""
			}
			return aws.ToString(out.Role.Arn)
		},
	}
	p.OnCall(z.expand)
	return z
}

func (z *Authorizer) expand(call wire.Call) {
	if in, ok := call.Input.(*ec2.CreateLaunchTemplateInput); ok {
		z.mu.Lock()
		z.templates[aws.ToString(in.LaunchTemplateName)] = in
		z.mu.Unlock()
	}
	reqs := z.account.Requests(call.Service, call.Operation, call.Input)
	z.mu.Lock()
	defer z.mu.Unlock()
	z.calls = append(z.calls, iampolicy.Recorded{Service: call.Service, Operation: call.Operation, Input: call.Input, Requests: reqs})
}

// Calls returns every call expanded so far.
func (z *Authorizer) Calls() []iampolicy.Recorded {
	z.mu.Lock()
	defer z.mu.Unlock()
	return append([]iampolicy.Recorded(nil), z.calls...)
}

// CheckCalls evaluates calls (as Authorizer.Calls returns them) against pol, as
// the controller's: each call must be one the provider's inventory gives
// the controller, and each of its authorizations must be allowed. It
// returns one line per problem, and how many authorizations it checked.
func CheckCalls(pol iampolicy.Policy, calls []iampolicy.Recorded) (problems []string, requests int) {
	for _, c := range calls {
		requests += len(c.Requests)
		if inv, ok := iampolicy.Lookup(c.Service, c.Operation); !ok || inv.Caller != iampolicy.CallerController {
			problems = append(problems, fmt.Sprintf("%s %s is not a call the provider's inventory gives the controller", c.Service, c.Operation))
		}
	}
	return append(problems, iampolicy.Denied(pol, calls)...), requests
}
