package fake

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/iampolicy"
)

// service describes one AWS service as errors name it.
type service struct {
	id       string // smithy service ID, as in OperationError.ServiceID
	throttle string // throttling error code
}

// name is the service's name in iampolicy.Inventory and sdk.Clients: its
// ID without spaces.
func (s service) name() string { return strings.ReplaceAll(s.id, " ", "") }

// iamPrefix is the service's IAM action prefix.
func (s service) iamPrefix() string { return iampolicy.ActionPrefix(s.name()) }

var (
	svcEC2     = service{id: "EC2", throttle: "RequestLimitExceeded"}
	svcSSM     = service{id: "SSM", throttle: "ThrottlingException"}
	svcSQS     = service{id: "SQS", throttle: "ThrottlingException"}
	svcIAM     = service{id: "IAM", throttle: "Throttling"}
	svcEKS     = service{id: "EKS", throttle: "ThrottlingException"}
	svcPricing = service{id: "Pricing", throttle: "ThrottlingException"}
	svcEvents  = service{id: "EventBridge", throttle: "ThrottlingException"}
	svcARC     = service{id: "ARC Zonal Shift", throttle: "ThrottlingException"}
)

var apiServices = map[string]service{
	"DescribeSubnets": svcEC2, "DescribeSecurityGroups": svcEC2, "DescribeImages": svcEC2,
	"DescribeInstanceTypes": svcEC2, "DescribeInstanceTypeOfferings": svcEC2,
	"DescribeSpotPriceHistory": svcEC2, "DescribeCapacityReservations": svcEC2,
	"CreateFleet": svcEC2, "RunInstances": svcEC2, "CreateLaunchTemplate": svcEC2,
	"DescribeLaunchTemplates": svcEC2, "DeleteLaunchTemplate": svcEC2, "DescribeInstances": svcEC2,
	"TerminateInstances": svcEC2, "CreateTags": svcEC2,
	"DescribePlacementGroups": svcEC2, "DescribeInstanceStatus": svcEC2,
	"GetParameter": svcSSM,
	"GetQueueUrl":  svcSQS, "ReceiveMessage": svcSQS, "DeleteMessage": svcSQS, "SendMessage": svcSQS,
	"GetQueueAttributes": svcSQS,
	"GetInstanceProfile": svcIAM, "CreateInstanceProfile": svcIAM, "AddRoleToInstanceProfile": svcIAM,
	"RemoveRoleFromInstanceProfile": svcIAM, "DeleteInstanceProfile": svcIAM,
	"TagInstanceProfile": svcIAM, "GetRole": svcIAM, "ListInstanceProfiles": svcIAM,
	"DescribeCluster": svcEKS, "ListAccessEntries": svcEKS, "ListPodIdentityAssociations": svcEKS,
	"GetProducts":           svcPricing,
	"ListRuleNamesByTarget": svcEvents, "DescribeRule": svcEvents,
	"GetManagedResource": svcARC,
}

// Operations returns the names of the operations the fake serves, sorted:
// the names InjectError, Throttle and Calls take.
func Operations() []string { return sortedKeys(apiServices) }

func serviceOf(api string) service {
	if s, ok := apiServices[api]; ok {
		return s
	}
	return service{id: "Unknown", throttle: "ThrottlingException"}
}

// APIError returns an API error with the given code and message, as the
// service would send it. Pass it to InjectError.
func APIError(code, message string) error {
	fault := smithy.FaultClient
	if isServerCode(code) {
		fault = smithy.FaultServer
	}
	return &smithy.GenericAPIError{Code: code, Message: message, Fault: fault}
}

func throttlingError(svc service) error {
	msg := "Rate exceeded"
	if svc.id == "EC2" {
		msg = "Request limit exceeded."
	}
	return &smithy.GenericAPIError{Code: svc.throttle, Message: msg, Fault: smithy.FaultClient}
}

// ThrottlingError returns the throttling error that the service serving api
// (an operation name such as "CreateFleet") sends: RequestLimitExceeded for
// EC2, ThrottlingException or Throttling elsewhere.
func ThrottlingError(api string) error { return throttlingError(serviceOf(api)) }

func isServerCode(code string) bool {
	switch code {
	case "InternalError", "InternalFailure", "ServiceUnavailable", "Unavailable", "ServiceFailure", "ServerException":
		return true
	}
	return false
}

func statusFor(err error) int {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return http.StatusBadRequest
	}
	switch ae.ErrorCode() {
	case "RequestLimitExceeded", "ServiceUnavailable", "Unavailable":
		return http.StatusServiceUnavailable
	case "UnauthorizedOperation", "AccessDenied":
		return http.StatusForbidden
	}
	if ae.ErrorFault() == smithy.FaultServer {
		return http.StatusInternalServerError
	}
	return http.StatusBadRequest
}

// wrapOperationError wraps err the way the SDK wraps a service error:
// OperationError → awshttp.ResponseError → smithyhttp.ResponseError → err.
func wrapOperationError(svc service, api string, err error) error {
	var oe *smithy.OperationError
	if errors.As(err, &oe) {
		return err
	}
	return wrapWithStatus(svc, api, err, statusFor(err))
}

func wrapWithStatus(svc service, api string, err error, status int) error {
	resp := &http.Response{StatusCode: status, Status: fmt.Sprintf("%d %s", status, http.StatusText(status)), Header: http.Header{}}
	return &smithy.OperationError{
		ServiceID:     svc.id,
		OperationName: api,
		Err: &awshttp.ResponseError{
			ResponseError: &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: resp}, Err: err},
			RequestID:     "00000000-0000-4000-8000-000000000000",
		},
	}
}

// newAPIError builds a generic API error for svc and wraps it.
func newAPIError(svc service, api, code, message string, status int) error {
	fault := smithy.FaultClient
	if status >= 500 {
		fault = smithy.FaultServer
	}
	return wrapWithStatus(svc, api, &smithy.GenericAPIError{Code: code, Message: message, Fault: fault}, status)
}

// ec2Error is the common EC2 client error.
func ec2Error(api, code, format string, args ...any) error {
	return newAPIError(svcEC2, api, code, fmt.Sprintf(format, args...), http.StatusBadRequest)
}

// typed wraps one of the SDK's typed errors.
func typed(svc service, api string, err error) error {
	return wrapWithStatus(svc, api, err, statusFor(err))
}

func invalidFilter(api, name string) error {
	return ec2Error(api, "InvalidParameterValue", "The filter '%s' is invalid", name)
}

// joinIDs formats IDs the way EC2 error messages list them.
func joinIDs(ids []string) string { return strings.Join(ids, ", ") }

func asAPIError(err error) (smithy.APIError, bool) {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae, true
	}
	return nil, false
}
