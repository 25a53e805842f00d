package wire

import (
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

// decoded lists, by service and operation, the calls whose input Read
// decodes: the inputs iampolicy.Account.Requests looks into. Any other call
// is read as its service and operation only, which is all Requests needs
// for it. The REST operations build their input from the path (rest.go).
var decoded = map[string]map[string]func() any{
	"EC2": {
		"CreateLaunchTemplate": alloc[ec2.CreateLaunchTemplateInput],
		"CreateFleet":          alloc[ec2.CreateFleetInput],
		"RunInstances":         alloc[ec2.RunInstancesInput],
		"DeleteLaunchTemplate": alloc[ec2.DeleteLaunchTemplateInput],
		"TerminateInstances":   alloc[ec2.TerminateInstancesInput],
		"CreateTags":           alloc[ec2.CreateTagsInput],
	},
	"IAM": {
		"CreateInstanceProfile":         alloc[iam.CreateInstanceProfileInput],
		"TagInstanceProfile":            alloc[iam.TagInstanceProfileInput],
		"AddRoleToInstanceProfile":      alloc[iam.AddRoleToInstanceProfileInput],
		"RemoveRoleFromInstanceProfile": alloc[iam.RemoveRoleFromInstanceProfileInput],
		"DeleteInstanceProfile":         alloc[iam.DeleteInstanceProfileInput],
		"GetInstanceProfile":            alloc[iam.GetInstanceProfileInput],
		"GetRole":                       alloc[iam.GetRoleInput],
	},
	"SSM": {
		"GetParameter": alloc[ssm.GetParameterInput],
	},
	"SQS": {
		"GetQueueUrl":        alloc[sqs.GetQueueUrlInput],
		"ReceiveMessage":     alloc[sqs.ReceiveMessageInput],
		"DeleteMessage":      alloc[sqs.DeleteMessageInput],
		"SendMessage":        alloc[sqs.SendMessageInput],
		"GetQueueAttributes": alloc[sqs.GetQueueAttributesInput],
	},
}

func alloc[T any]() any { return new(T) }

// newInput returns a new zero input for the operation, or nil when Read
// does not decode it.
func newInput(service, op string) any {
	if f := decoded[service][op]; f != nil {
		return f()
	}
	return nil
}
