package account

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/arczonalshift"
	arctypes "github.com/aws/aws-sdk-go-v2/service/arczonalshift/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/sdk"
)

// Remote is an account served by another process (Serve), reached over
// loopback.
type Remote struct {
	Info
	base   string
	client *http.Client
}

// IsURL reports whether spec, a --simulated-account value, names a served
// account (http://...) rather than a Scenario file.
func IsURL(spec string) bool { return strings.HasPrefix(spec, "http://") }

// Dial connects to the account served at rawURL (http://127.0.0.1:PORT) and
// reads its Info.
func Dial(ctx context.Context, rawURL string) (*Remote, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" || u.Host == "" || !isLoopback(u.Hostname()) {
		return nil, fmt.Errorf("%q: a served simulated account is reached at http://127.0.0.1:PORT (loopback only)", rawURL)
	}
	r := &Remote{
		base:   strings.TrimSuffix(u.String(), "/"),
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32, Proxy: nil}},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.base+pathAccount, nil)
	if err != nil {
		return nil, err
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reaching the simulated account at %s: %w", r.base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("reaching the simulated account at %s: %s", r.base, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&r.Info); err != nil {
		return nil, fmt.Errorf("reading the simulated account's description at %s: %w", r.base, err)
	}
	return r, nil
}

// Clients returns clients of the served account, for the AWS provider.
func (r *Remote) Clients() sdk.Clients {
	return sdk.Clients{EC2: remoteEC2{r}, SSM: remoteSSM{r}, SQS: remoteSQS{r}, IAM: remoteIAM{r}, EKS: remoteEKS{r}, Pricing: remotePricing{r}, ARCZonalShift: remoteARC{r}}
}

// call sends one operation and decodes its output into O, or rebuilds its
// error.
func call[O any](ctx context.Context, r *Remote, service, operation string, in any) (*O, error) {
	body, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.base+pathAWS+service+"/"+operation, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: the simulated account at %s: %w", service, operation, r.base, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: reading the answer: %w", service, operation, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s %s: the simulated account answered %s: %s", service, operation, resp.Status, strings.TrimSpace(string(raw)))
	}
	var rep reply
	if err := json.Unmarshal(raw, &rep); err != nil {
		return nil, fmt.Errorf("%s %s: reading the answer: %w", service, operation, err)
	}
	if rep.Error != nil {
		return nil, fromWire(rep.Error)
	}
	out := new(O)
	if err := json.Unmarshal(rep.Output, out); err != nil {
		return nil, fmt.Errorf("%s %s: reading the output: %w", service, operation, err)
	}
	return out, nil
}

// typedErrors are the SDK's error types the provider looks for with
// errors.As, by "{service ID}/{error code}".
var typedErrors = map[string]func(msg *string) smithy.APIError{}

func init() {
	for _, e := range []struct {
		service string
		build   func(msg *string) smithy.APIError
	}{
		{"IAM", func(m *string) smithy.APIError { return &iamtypes.NoSuchEntityException{Message: m} }},
		{"IAM", func(m *string) smithy.APIError { return &iamtypes.EntityAlreadyExistsException{Message: m} }},
		{"IAM", func(m *string) smithy.APIError { return &iamtypes.InvalidInputException{Message: m} }},
		{"IAM", func(m *string) smithy.APIError { return &iamtypes.LimitExceededException{Message: m} }},
		{"IAM", func(m *string) smithy.APIError { return &iamtypes.DeleteConflictException{Message: m} }},
		{"EKS", func(m *string) smithy.APIError { return &ekstypes.ResourceNotFoundException{Message: m} }},
		{"ARC Zonal Shift", func(m *string) smithy.APIError { return &arctypes.ResourceNotFoundException{Message: m} }},
		// SQS reports its query-protocol code for a missing queue, as the
		// in-memory AWS does.
		{"SQS", func(m *string) smithy.APIError {
			return &sqstypes.QueueDoesNotExist{Message: m, ErrorCodeOverride: aws.String("AWS.SimpleQueueService.NonExistentQueue")}
		}},
	} {
		typedErrors[e.service+"/"+e.build(nil).ErrorCode()] = e.build
	}
}

// fromWire rebuilds an error as the SDK (and the in-memory AWS) shapes it:
// an OperationError wrapping an HTTP response error wrapping the API error.
func fromWire(we *wireError) error {
	if we.Code == "" {
		return errors.New(we.Message)
	}
	var apiErr error
	if build, ok := typedErrors[we.Service+"/"+we.Code]; ok {
		msg := we.Message
		apiErr = build(&msg)
	} else {
		fault := smithy.FaultUnknown
		switch we.Fault {
		case "client":
			fault = smithy.FaultClient
		case "server":
			fault = smithy.FaultServer
		}
		apiErr = &smithy.GenericAPIError{Code: we.Code, Message: we.Message, Fault: fault}
	}
	status := we.Status
	if status == 0 {
		status = http.StatusBadRequest
	}
	resp := &http.Response{StatusCode: status, Status: fmt.Sprintf("%d %s", status, http.StatusText(status)), Header: http.Header{}}
	return &smithy.OperationError{
		ServiceID:     we.Service,
		OperationName: we.Operation,
		Err: &awshttp.ResponseError{
			ResponseError: &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: resp}, Err: apiErr},
			RequestID:     we.RequestID,
		},
	}
}

// The clients: each method is one call of the same name.

type remoteEC2 struct{ r *Remote }

func (c remoteEC2) DescribeSubnets(ctx context.Context, in *ec2.DescribeSubnetsInput, _ ...func(*ec2.Options)) (*ec2.DescribeSubnetsOutput, error) {
	return call[ec2.DescribeSubnetsOutput](ctx, c.r, "EC2", "DescribeSubnets", in)
}

func (c remoteEC2) DescribeSecurityGroups(ctx context.Context, in *ec2.DescribeSecurityGroupsInput, _ ...func(*ec2.Options)) (*ec2.DescribeSecurityGroupsOutput, error) {
	return call[ec2.DescribeSecurityGroupsOutput](ctx, c.r, "EC2", "DescribeSecurityGroups", in)
}

func (c remoteEC2) DescribeImages(ctx context.Context, in *ec2.DescribeImagesInput, _ ...func(*ec2.Options)) (*ec2.DescribeImagesOutput, error) {
	return call[ec2.DescribeImagesOutput](ctx, c.r, "EC2", "DescribeImages", in)
}

func (c remoteEC2) DescribeInstanceTypes(ctx context.Context, in *ec2.DescribeInstanceTypesInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error) {
	return call[ec2.DescribeInstanceTypesOutput](ctx, c.r, "EC2", "DescribeInstanceTypes", in)
}

func (c remoteEC2) DescribeInstanceTypeOfferings(ctx context.Context, in *ec2.DescribeInstanceTypeOfferingsInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstanceTypeOfferingsOutput, error) {
	return call[ec2.DescribeInstanceTypeOfferingsOutput](ctx, c.r, "EC2", "DescribeInstanceTypeOfferings", in)
}

func (c remoteEC2) DescribeSpotPriceHistory(ctx context.Context, in *ec2.DescribeSpotPriceHistoryInput, _ ...func(*ec2.Options)) (*ec2.DescribeSpotPriceHistoryOutput, error) {
	return call[ec2.DescribeSpotPriceHistoryOutput](ctx, c.r, "EC2", "DescribeSpotPriceHistory", in)
}

func (c remoteEC2) DescribeCapacityReservations(ctx context.Context, in *ec2.DescribeCapacityReservationsInput, _ ...func(*ec2.Options)) (*ec2.DescribeCapacityReservationsOutput, error) {
	return call[ec2.DescribeCapacityReservationsOutput](ctx, c.r, "EC2", "DescribeCapacityReservations", in)
}

func (c remoteEC2) CreateFleet(ctx context.Context, in *ec2.CreateFleetInput, _ ...func(*ec2.Options)) (*ec2.CreateFleetOutput, error) {
	return call[ec2.CreateFleetOutput](ctx, c.r, "EC2", "CreateFleet", in)
}

func (c remoteEC2) RunInstances(ctx context.Context, in *ec2.RunInstancesInput, _ ...func(*ec2.Options)) (*ec2.RunInstancesOutput, error) {
	return call[ec2.RunInstancesOutput](ctx, c.r, "EC2", "RunInstances", in)
}

func (c remoteEC2) CreateLaunchTemplate(ctx context.Context, in *ec2.CreateLaunchTemplateInput, _ ...func(*ec2.Options)) (*ec2.CreateLaunchTemplateOutput, error) {
	return call[ec2.CreateLaunchTemplateOutput](ctx, c.r, "EC2", "CreateLaunchTemplate", in)
}

func (c remoteEC2) DescribeLaunchTemplates(ctx context.Context, in *ec2.DescribeLaunchTemplatesInput, _ ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplatesOutput, error) {
	return call[ec2.DescribeLaunchTemplatesOutput](ctx, c.r, "EC2", "DescribeLaunchTemplates", in)
}

func (c remoteEC2) DeleteLaunchTemplate(ctx context.Context, in *ec2.DeleteLaunchTemplateInput, _ ...func(*ec2.Options)) (*ec2.DeleteLaunchTemplateOutput, error) {
	return call[ec2.DeleteLaunchTemplateOutput](ctx, c.r, "EC2", "DeleteLaunchTemplate", in)
}

func (c remoteEC2) DescribeInstances(ctx context.Context, in *ec2.DescribeInstancesInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error) {
	return call[ec2.DescribeInstancesOutput](ctx, c.r, "EC2", "DescribeInstances", in)
}

func (c remoteEC2) DescribeInstanceStatus(ctx context.Context, in *ec2.DescribeInstanceStatusInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstanceStatusOutput, error) {
	return call[ec2.DescribeInstanceStatusOutput](ctx, c.r, "EC2", "DescribeInstanceStatus", in)
}

func (c remoteEC2) TerminateInstances(ctx context.Context, in *ec2.TerminateInstancesInput, _ ...func(*ec2.Options)) (*ec2.TerminateInstancesOutput, error) {
	return call[ec2.TerminateInstancesOutput](ctx, c.r, "EC2", "TerminateInstances", in)
}

func (c remoteEC2) CreateTags(ctx context.Context, in *ec2.CreateTagsInput, _ ...func(*ec2.Options)) (*ec2.CreateTagsOutput, error) {
	return call[ec2.CreateTagsOutput](ctx, c.r, "EC2", "CreateTags", in)
}

func (c remoteEC2) DescribePlacementGroups(ctx context.Context, in *ec2.DescribePlacementGroupsInput, _ ...func(*ec2.Options)) (*ec2.DescribePlacementGroupsOutput, error) {
	return call[ec2.DescribePlacementGroupsOutput](ctx, c.r, "EC2", "DescribePlacementGroups", in)
}

type remoteSSM struct{ r *Remote }

func (c remoteSSM) GetParameter(ctx context.Context, in *ssm.GetParameterInput, _ ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
	return call[ssm.GetParameterOutput](ctx, c.r, "SSM", "GetParameter", in)
}

type remoteSQS struct{ r *Remote }

func (c remoteSQS) GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, _ ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) { //nolint:revive // SDK name
	return call[sqs.GetQueueUrlOutput](ctx, c.r, "SQS", "GetQueueUrl", in)
}

func (c remoteSQS) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	return call[sqs.ReceiveMessageOutput](ctx, c.r, "SQS", "ReceiveMessage", in)
}

func (c remoteSQS) DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	return call[sqs.DeleteMessageOutput](ctx, c.r, "SQS", "DeleteMessage", in)
}

func (c remoteSQS) SendMessage(ctx context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	return call[sqs.SendMessageOutput](ctx, c.r, "SQS", "SendMessage", in)
}

func (c remoteSQS) GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	return call[sqs.GetQueueAttributesOutput](ctx, c.r, "SQS", "GetQueueAttributes", in)
}

type remoteIAM struct{ r *Remote }

func (c remoteIAM) GetInstanceProfile(ctx context.Context, in *iam.GetInstanceProfileInput, _ ...func(*iam.Options)) (*iam.GetInstanceProfileOutput, error) {
	return call[iam.GetInstanceProfileOutput](ctx, c.r, "IAM", "GetInstanceProfile", in)
}

func (c remoteIAM) CreateInstanceProfile(ctx context.Context, in *iam.CreateInstanceProfileInput, _ ...func(*iam.Options)) (*iam.CreateInstanceProfileOutput, error) {
	return call[iam.CreateInstanceProfileOutput](ctx, c.r, "IAM", "CreateInstanceProfile", in)
}

func (c remoteIAM) AddRoleToInstanceProfile(ctx context.Context, in *iam.AddRoleToInstanceProfileInput, _ ...func(*iam.Options)) (*iam.AddRoleToInstanceProfileOutput, error) {
	return call[iam.AddRoleToInstanceProfileOutput](ctx, c.r, "IAM", "AddRoleToInstanceProfile", in)
}

func (c remoteIAM) RemoveRoleFromInstanceProfile(ctx context.Context, in *iam.RemoveRoleFromInstanceProfileInput, _ ...func(*iam.Options)) (*iam.RemoveRoleFromInstanceProfileOutput, error) {
	return call[iam.RemoveRoleFromInstanceProfileOutput](ctx, c.r, "IAM", "RemoveRoleFromInstanceProfile", in)
}

func (c remoteIAM) DeleteInstanceProfile(ctx context.Context, in *iam.DeleteInstanceProfileInput, _ ...func(*iam.Options)) (*iam.DeleteInstanceProfileOutput, error) {
	return call[iam.DeleteInstanceProfileOutput](ctx, c.r, "IAM", "DeleteInstanceProfile", in)
}

func (c remoteIAM) TagInstanceProfile(ctx context.Context, in *iam.TagInstanceProfileInput, _ ...func(*iam.Options)) (*iam.TagInstanceProfileOutput, error) {
	return call[iam.TagInstanceProfileOutput](ctx, c.r, "IAM", "TagInstanceProfile", in)
}

func (c remoteIAM) GetRole(ctx context.Context, in *iam.GetRoleInput, _ ...func(*iam.Options)) (*iam.GetRoleOutput, error) {
	return call[iam.GetRoleOutput](ctx, c.r, "IAM", "GetRole", in)
}

func (c remoteIAM) ListInstanceProfiles(ctx context.Context, in *iam.ListInstanceProfilesInput, _ ...func(*iam.Options)) (*iam.ListInstanceProfilesOutput, error) {
	return call[iam.ListInstanceProfilesOutput](ctx, c.r, "IAM", "ListInstanceProfiles", in)
}

type remoteARC struct{ r *Remote }

func (c remoteARC) GetManagedResource(ctx context.Context, in *arczonalshift.GetManagedResourceInput, _ ...func(*arczonalshift.Options)) (*arczonalshift.GetManagedResourceOutput, error) {
	return call[arczonalshift.GetManagedResourceOutput](ctx, c.r, "ARCZonalShift", "GetManagedResource", in)
}

type remoteEKS struct{ r *Remote }

func (c remoteEKS) DescribeCluster(ctx context.Context, in *eks.DescribeClusterInput, _ ...func(*eks.Options)) (*eks.DescribeClusterOutput, error) {
	return call[eks.DescribeClusterOutput](ctx, c.r, "EKS", "DescribeCluster", in)
}

func (c remoteEKS) ListAccessEntries(ctx context.Context, in *eks.ListAccessEntriesInput, _ ...func(*eks.Options)) (*eks.ListAccessEntriesOutput, error) {
	return call[eks.ListAccessEntriesOutput](ctx, c.r, "EKS", "ListAccessEntries", in)
}

func (c remoteEKS) ListPodIdentityAssociations(ctx context.Context, in *eks.ListPodIdentityAssociationsInput, _ ...func(*eks.Options)) (*eks.ListPodIdentityAssociationsOutput, error) {
	return call[eks.ListPodIdentityAssociationsOutput](ctx, c.r, "EKS", "ListPodIdentityAssociations", in)
}

type remotePricing struct{ r *Remote }

func (c remotePricing) GetProducts(ctx context.Context, in *pricing.GetProductsInput, _ ...func(*pricing.Options)) (*pricing.GetProductsOutput, error) {
	return call[pricing.GetProductsOutput](ctx, c.r, "Pricing", "GetProducts", in)
}

var (
	_ sdk.EC2     = remoteEC2{}
	_ sdk.SSM     = remoteSSM{}
	_ sdk.SQS     = remoteSQS{}
	_ sdk.IAM     = remoteIAM{}
	_ sdk.EKS     = remoteEKS{}
	_ sdk.Pricing = remotePricing{}
)
