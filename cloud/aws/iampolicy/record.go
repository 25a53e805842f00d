package iampolicy

import (
	"context"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/iam"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/sdk"
)

// Recorded is a call and the authorizations it needed, expanded when the
// call was made (so that the tags of a resource it deletes are still known).
type Recorded struct {
	Service, Operation string
	Input              any
	Requests           []Request
}

// Log collects Recorded calls. It is safe for concurrent use.
type Log struct {
	acct  Account
	mu    sync.Mutex
	calls []Recorded
}

// Take returns the calls recorded since the last Take.
func (l *Log) Take() []Recorded {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.calls
	l.calls = nil
	return out
}

func (l *Log) add(service, op string, in any) {
	reqs := l.acct.Requests(service, op, in)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, Recorded{service, op, in, reqs})
}

// Denied returns, for each recorded call, the requests pol refuses, as
// "Operation: action on resource" lines.
func Denied(pol Policy, calls []Recorded) []string {
	var out []string
	for _, c := range calls {
		for _, r := range c.Requests {
			if _, ok := pol.Allows(r); !ok {
				out = append(out, c.Operation+": "+r.Action+" on "+r.Resource)
			}
		}
	}
	return out
}

// Record wraps the EC2 and IAM clients so that every call whose
// authorization depends on tags (launches, launch templates, tagging,
// termination, instance profiles) is recorded with the requests acct
// expands it into. Other clients pass through unchanged.
func Record(clients sdk.Clients, acct Account) (sdk.Clients, *Log) {
	l := &Log{acct: acct}
	clients.EC2 = recEC2{clients.EC2, l}
	clients.IAM = recIAM{clients.IAM, l}
	return clients, l
}

type recEC2 struct {
	sdk.EC2
	l *Log
}

func (r recEC2) CreateLaunchTemplate(ctx context.Context, in *ec2.CreateLaunchTemplateInput, o ...func(*ec2.Options)) (*ec2.CreateLaunchTemplateOutput, error) {
	r.l.add("EC2", "CreateLaunchTemplate", in)
	return r.EC2.CreateLaunchTemplate(ctx, in, o...)
}

func (r recEC2) CreateFleet(ctx context.Context, in *ec2.CreateFleetInput, o ...func(*ec2.Options)) (*ec2.CreateFleetOutput, error) {
	r.l.add("EC2", "CreateFleet", in)
	return r.EC2.CreateFleet(ctx, in, o...)
}

func (r recEC2) RunInstances(ctx context.Context, in *ec2.RunInstancesInput, o ...func(*ec2.Options)) (*ec2.RunInstancesOutput, error) {
	r.l.add("EC2", "RunInstances", in)
	return r.EC2.RunInstances(ctx, in, o...)
}

func (r recEC2) DeleteLaunchTemplate(ctx context.Context, in *ec2.DeleteLaunchTemplateInput, o ...func(*ec2.Options)) (*ec2.DeleteLaunchTemplateOutput, error) {
	r.l.add("EC2", "DeleteLaunchTemplate", in)
	return r.EC2.DeleteLaunchTemplate(ctx, in, o...)
}

func (r recEC2) TerminateInstances(ctx context.Context, in *ec2.TerminateInstancesInput, o ...func(*ec2.Options)) (*ec2.TerminateInstancesOutput, error) {
	r.l.add("EC2", "TerminateInstances", in)
	return r.EC2.TerminateInstances(ctx, in, o...)
}

func (r recEC2) CreateTags(ctx context.Context, in *ec2.CreateTagsInput, o ...func(*ec2.Options)) (*ec2.CreateTagsOutput, error) {
	r.l.add("EC2", "CreateTags", in)
	return r.EC2.CreateTags(ctx, in, o...)
}

type recIAM struct {
	sdk.IAM
	l *Log
}

func (r recIAM) CreateInstanceProfile(ctx context.Context, in *iam.CreateInstanceProfileInput, o ...func(*iam.Options)) (*iam.CreateInstanceProfileOutput, error) {
	r.l.add("IAM", "CreateInstanceProfile", in)
	return r.IAM.CreateInstanceProfile(ctx, in, o...)
}

func (r recIAM) AddRoleToInstanceProfile(ctx context.Context, in *iam.AddRoleToInstanceProfileInput, o ...func(*iam.Options)) (*iam.AddRoleToInstanceProfileOutput, error) {
	r.l.add("IAM", "AddRoleToInstanceProfile", in)
	return r.IAM.AddRoleToInstanceProfile(ctx, in, o...)
}

func (r recIAM) RemoveRoleFromInstanceProfile(ctx context.Context, in *iam.RemoveRoleFromInstanceProfileInput, o ...func(*iam.Options)) (*iam.RemoveRoleFromInstanceProfileOutput, error) {
	r.l.add("IAM", "RemoveRoleFromInstanceProfile", in)
	return r.IAM.RemoveRoleFromInstanceProfile(ctx, in, o...)
}

func (r recIAM) DeleteInstanceProfile(ctx context.Context, in *iam.DeleteInstanceProfileInput, o ...func(*iam.Options)) (*iam.DeleteInstanceProfileOutput, error) {
	r.l.add("IAM", "DeleteInstanceProfile", in)
	return r.IAM.DeleteInstanceProfile(ctx, in, o...)
}

func (r recIAM) TagInstanceProfile(ctx context.Context, in *iam.TagInstanceProfileInput, o ...func(*iam.Options)) (*iam.TagInstanceProfileOutput, error) {
	r.l.add("IAM", "TagInstanceProfile", in)
	return r.IAM.TagInstanceProfile(ctx, in, o...)
}
