// Package sdk declares the narrow slice of the AWS SDK that the provider uses.
//
// Each interface lists exactly the calls the provider makes against one AWS
// service, with the SDK's own input and output types and the SDK's method
// shape, so that the real clients (*ec2.Client, *ssm.Client, ...) satisfy them
// directly and the in-memory AWS implements the very same contract. Keeping
// the interfaces narrow has three purposes:
//
//   - the provider that runs in production is the one that runs in tests and
//     in the simulator; only the value behind these interfaces changes;
//   - the list below is the complete inventory of AWS calls (and therefore
//     IAM actions) the controller needs, which reviewers can audit at a glance;
//   - the in-memory implementation only has to model what is listed here, and
//     adding a call is a deliberate, visible change to both sides.
package sdk

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/arczonalshift"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

// EC2 is the subset of the EC2 API the provider calls.
type EC2 interface {
	DescribeSubnets(ctx context.Context, in *ec2.DescribeSubnetsInput, optFns ...func(*ec2.Options)) (*ec2.DescribeSubnetsOutput, error)
	DescribeSecurityGroups(ctx context.Context, in *ec2.DescribeSecurityGroupsInput, optFns ...func(*ec2.Options)) (*ec2.DescribeSecurityGroupsOutput, error)
	DescribeImages(ctx context.Context, in *ec2.DescribeImagesInput, optFns ...func(*ec2.Options)) (*ec2.DescribeImagesOutput, error)
	DescribeInstanceTypes(ctx context.Context, in *ec2.DescribeInstanceTypesInput, optFns ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error)
	DescribeInstanceTypeOfferings(ctx context.Context, in *ec2.DescribeInstanceTypeOfferingsInput, optFns ...func(*ec2.Options)) (*ec2.DescribeInstanceTypeOfferingsOutput, error)
	DescribeSpotPriceHistory(ctx context.Context, in *ec2.DescribeSpotPriceHistoryInput, optFns ...func(*ec2.Options)) (*ec2.DescribeSpotPriceHistoryOutput, error)
	DescribeCapacityReservations(ctx context.Context, in *ec2.DescribeCapacityReservationsInput, optFns ...func(*ec2.Options)) (*ec2.DescribeCapacityReservationsOutput, error)
	CreateFleet(ctx context.Context, in *ec2.CreateFleetInput, optFns ...func(*ec2.Options)) (*ec2.CreateFleetOutput, error)
	// RunInstances is only used with DryRun set, as an authorization probe.
	RunInstances(ctx context.Context, in *ec2.RunInstancesInput, optFns ...func(*ec2.Options)) (*ec2.RunInstancesOutput, error)
	CreateLaunchTemplate(ctx context.Context, in *ec2.CreateLaunchTemplateInput, optFns ...func(*ec2.Options)) (*ec2.CreateLaunchTemplateOutput, error)
	DescribeLaunchTemplates(ctx context.Context, in *ec2.DescribeLaunchTemplatesInput, optFns ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplatesOutput, error)
	DeleteLaunchTemplate(ctx context.Context, in *ec2.DeleteLaunchTemplateInput, optFns ...func(*ec2.Options)) (*ec2.DeleteLaunchTemplateOutput, error)
	DescribeInstances(ctx context.Context, in *ec2.DescribeInstancesInput, optFns ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error)
	TerminateInstances(ctx context.Context, in *ec2.TerminateInstancesInput, optFns ...func(*ec2.Options)) (*ec2.TerminateInstancesOutput, error)
	// DescribeInstanceStatus finds instances whose EC2 status checks fail.
	DescribeInstanceStatus(ctx context.Context, in *ec2.DescribeInstanceStatusInput, optFns ...func(*ec2.Options)) (*ec2.DescribeInstanceStatusOutput, error)
	CreateTags(ctx context.Context, in *ec2.CreateTagsInput, optFns ...func(*ec2.Options)) (*ec2.CreateTagsOutput, error)
	// DescribePlacementGroups resolves an EC2NodeClass's placementGroupSelector.
	DescribePlacementGroups(ctx context.Context, in *ec2.DescribePlacementGroupsInput, optFns ...func(*ec2.Options)) (*ec2.DescribePlacementGroupsOutput, error)
}

// SSM is the subset of the Systems Manager API the provider calls (AMI alias
// resolution through public parameters).
type SSM interface {
	GetParameter(ctx context.Context, in *ssm.GetParameterInput, optFns ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
}

// SQS is the subset of the SQS API used for the interruption queue.
// SendMessage is not called by the controller; tests and the simulator use it
// to inject events through the same interface.
type SQS interface {
	GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	// GetQueueAttributes is only called by `stevedore diagnose`, to show that
	// the queue exists and lets EventBridge deliver to it.
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// IAM is the subset of the IAM API used to manage instance profiles.
type IAM interface {
	GetInstanceProfile(ctx context.Context, in *iam.GetInstanceProfileInput, optFns ...func(*iam.Options)) (*iam.GetInstanceProfileOutput, error)
	CreateInstanceProfile(ctx context.Context, in *iam.CreateInstanceProfileInput, optFns ...func(*iam.Options)) (*iam.CreateInstanceProfileOutput, error)
	AddRoleToInstanceProfile(ctx context.Context, in *iam.AddRoleToInstanceProfileInput, optFns ...func(*iam.Options)) (*iam.AddRoleToInstanceProfileOutput, error)
	RemoveRoleFromInstanceProfile(ctx context.Context, in *iam.RemoveRoleFromInstanceProfileInput, optFns ...func(*iam.Options)) (*iam.RemoveRoleFromInstanceProfileOutput, error)
	DeleteInstanceProfile(ctx context.Context, in *iam.DeleteInstanceProfileInput, optFns ...func(*iam.Options)) (*iam.DeleteInstanceProfileOutput, error)
	TagInstanceProfile(ctx context.Context, in *iam.TagInstanceProfileInput, optFns ...func(*iam.Options)) (*iam.TagInstanceProfileOutput, error)
	GetRole(ctx context.Context, in *iam.GetRoleInput, optFns ...func(*iam.Options)) (*iam.GetRoleOutput, error)
	ListInstanceProfiles(ctx context.Context, in *iam.ListInstanceProfilesInput, optFns ...func(*iam.Options)) (*iam.ListInstanceProfilesOutput, error)
}

// EKS is the subset of the EKS API used for cluster discovery and diagnosis.
type EKS interface {
	DescribeCluster(ctx context.Context, in *eks.DescribeClusterInput, optFns ...func(*eks.Options)) (*eks.DescribeClusterOutput, error)
	ListAccessEntries(ctx context.Context, in *eks.ListAccessEntriesInput, optFns ...func(*eks.Options)) (*eks.ListAccessEntriesOutput, error)
	// ListPodIdentityAssociations is only called by `stevedore diagnose`,
	// to find the controller's EKS Pod Identity association.
	ListPodIdentityAssociations(ctx context.Context, in *eks.ListPodIdentityAssociationsInput, optFns ...func(*eks.Options)) (*eks.ListPodIdentityAssociationsOutput, error)
}

// EventBridge is the subset of the EventBridge API that `stevedore diagnose`
// calls, to find the rules that route interruption events to the queue. The
// controller itself never calls it.
type EventBridge interface {
	// ListRuleNamesByTarget lists the rules of an event bus (the default
	// one when EventBusName is nil) that have the queue as a target.
	ListRuleNamesByTarget(ctx context.Context, in *eventbridge.ListRuleNamesByTargetInput, optFns ...func(*eventbridge.Options)) (*eventbridge.ListRuleNamesByTargetOutput, error)
	// DescribeRule returns a rule's state and event pattern.
	DescribeRule(ctx context.Context, in *eventbridge.DescribeRuleInput, optFns ...func(*eventbridge.Options)) (*eventbridge.DescribeRuleOutput, error)
}

// Pricing is the subset of the AWS Price List API used for on-demand prices.
type Pricing interface {
	GetProducts(ctx context.Context, in *pricing.GetProductsInput, optFns ...func(*pricing.Options)) (*pricing.GetProductsOutput, error)
}

// ARCZonalShift is the subset of the Application Recovery Controller zonal
// shift API the provider calls, with --enable-zonal-shift only: the zonal
// shifts and autoshifts active on the EKS cluster, so that no capacity is
// launched into an Availability Zone traffic has been shifted away from.
type ARCZonalShift interface {
	GetManagedResource(ctx context.Context, in *arczonalshift.GetManagedResourceInput, optFns ...func(*arczonalshift.Options)) (*arczonalshift.GetManagedResourceOutput, error)
}

// Clients bundles one client per service.
type Clients struct {
	EC2     EC2
	SSM     SSM
	SQS     SQS
	IAM     IAM
	EKS     EKS
	Pricing Pricing
	// EventBridge is only called by `stevedore diagnose`.
	EventBridge EventBridge
	// ARCZonalShift is only called with --enable-zonal-shift; nil turns
	// zonal shift handling off.
	ARCZonalShift ARCZonalShift
}

// NewFromConfig builds the real SDK clients from cfg.
//
// The Price List API is only served from a few regions (us-east-1,
// eu-central-1, ap-south-1); the pricing client is built for cfg as given and
// callers that need a different pricing region should pass a copy of cfg with
// that region.
func NewFromConfig(cfg aws.Config) Clients {
	return Clients{
		EC2:           ec2.NewFromConfig(cfg),
		SSM:           ssm.NewFromConfig(cfg),
		SQS:           sqs.NewFromConfig(cfg),
		IAM:           iam.NewFromConfig(cfg),
		EKS:           eks.NewFromConfig(cfg),
		Pricing:       pricing.NewFromConfig(cfg),
		EventBridge:   eventbridge.NewFromConfig(cfg),
		ARCZonalShift: arczonalshift.NewFromConfig(cfg),
	}
}

var (
	_ EC2           = (*ec2.Client)(nil)
	_ SSM           = (*ssm.Client)(nil)
	_ SQS           = (*sqs.Client)(nil)
	_ IAM           = (*iam.Client)(nil)
	_ EKS           = (*eks.Client)(nil)
	_ Pricing       = (*pricing.Client)(nil)
	_ EventBridge   = (*eventbridge.Client)(nil)
	_ ARCZonalShift = (*arczonalshift.Client)(nil)
)
