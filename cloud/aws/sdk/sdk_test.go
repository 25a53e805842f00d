package sdk_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/arczonalshift"
	arctypes "github.com/aws/aws-sdk-go-v2/service/arczonalshift/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/sdk"
)

// The bodies below follow the AWS API reference shapes: EC2 speaks the EC2
// query protocol (form-encoded requests, XML responses), SSM JSON 1.1 and SQS
// JSON 1.0.

const describeSubnetsXML = `<?xml version="1.0" encoding="UTF-8"?>
<DescribeSubnetsResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">
    <requestId>7a62c49f-347e-4fc4-9331-6e8eEXAMPLE</requestId>
    <subnetSet>
        <item>
            <subnetId>subnet-0a1b2c3d4e5f60718</subnetId>
            <subnetArn>arn:aws:ec2:us-east-1:123456789012:subnet/subnet-0a1b2c3d4e5f60718</subnetArn>
            <state>available</state>
            <ownerId>123456789012</ownerId>
            <vpcId>vpc-0a1b2c3d4e5f60718</vpcId>
            <cidrBlock>10.0.16.0/20</cidrBlock>
            <availableIpAddressCount>4091</availableIpAddressCount>
            <availabilityZone>us-east-1b</availabilityZone>
            <availabilityZoneId>use1-az2</availabilityZoneId>
            <defaultForAz>false</defaultForAz>
            <mapPublicIpOnLaunch>false</mapPublicIpOnLaunch>
            <tagSet>
                <item><key>karpenter.sh/discovery</key><value>demo</value></item>
                <item><key>Name</key><value>demo-private-us-east-1b</value></item>
            </tagSet>
        </item>
    </subnetSet>
</DescribeSubnetsResponse>`

const describeInstanceTypesXML = `<?xml version="1.0" encoding="UTF-8"?>
<DescribeInstanceTypesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">
    <requestId>1d3c5a5e-2f5b-4c2e-9a53-EXAMPLE</requestId>
    <instanceTypeSet>
        <item>
            <instanceType>m5.large</instanceType>
            <currentGeneration>true</currentGeneration>
            <bareMetal>false</bareMetal>
            <hypervisor>nitro</hypervisor>
            <supportedUsageClasses><item>on-demand</item><item>spot</item></supportedUsageClasses>
            <supportedVirtualizationTypes><item>hvm</item></supportedVirtualizationTypes>
            <processorInfo>
                <supportedArchitectures><item>x86_64</item></supportedArchitectures>
                <sustainedClockSpeedInGhz>3.1</sustainedClockSpeedInGhz>
                <manufacturer>Intel</manufacturer>
            </processorInfo>
            <vCpuInfo>
                <defaultVCpus>2</defaultVCpus>
                <defaultCores>1</defaultCores>
                <defaultThreadsPerCore>2</defaultThreadsPerCore>
            </vCpuInfo>
            <memoryInfo><sizeInMiB>8192</sizeInMiB></memoryInfo>
            <instanceStorageSupported>false</instanceStorageSupported>
            <networkInfo>
                <networkPerformance>Up to 10 Gigabit</networkPerformance>
                <maximumNetworkInterfaces>3</maximumNetworkInterfaces>
                <maximumNetworkCards>1</maximumNetworkCards>
                <defaultNetworkCardIndex>0</defaultNetworkCardIndex>
                <networkCards>
                    <item>
                        <networkCardIndex>0</networkCardIndex>
                        <networkPerformance>Up to 10 Gigabit</networkPerformance>
                        <maximumNetworkInterfaces>3</maximumNetworkInterfaces>
                        <baselineBandwidthInGbps>0.75</baselineBandwidthInGbps>
                        <peakBandwidthInGbps>10.0</peakBandwidthInGbps>
                    </item>
                </networkCards>
                <ipv4AddressesPerInterface>10</ipv4AddressesPerInterface>
                <ipv6AddressesPerInterface>10</ipv6AddressesPerInterface>
                <ipv6Supported>true</ipv6Supported>
                <enaSupport>required</enaSupport>
                <efaSupported>false</efaSupported>
                <encryptionInTransitSupported>false</encryptionInTransitSupported>
            </networkInfo>
            <ebsInfo>
                <ebsOptimizedSupport>default</ebsOptimizedSupport>
                <encryptionSupport>supported</encryptionSupport>
                <ebsOptimizedInfo>
                    <baselineBandwidthInMbps>650</baselineBandwidthInMbps>
                    <maximumBandwidthInMbps>4750</maximumBandwidthInMbps>
                </ebsOptimizedInfo>
                <nvmeSupport>required</nvmeSupport>
            </ebsInfo>
        </item>
    </instanceTypeSet>
    <nextToken>AAEAAW0xEXAMPLE</nextToken>
</DescribeInstanceTypesResponse>`

const createFleetXML = `<?xml version="1.0" encoding="UTF-8"?>
<CreateFleetResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">
    <requestId>b3c1c1a0-4f4e-4d5a-9f77-EXAMPLE</requestId>
    <fleetId>fleet-8a4f1c2e-1b7d-4c3e-a9f0-0123456789ab</fleetId>
    <errorSet>
        <item>
            <errorCode>InsufficientInstanceCapacity</errorCode>
            <errorMessage>There is no Spot capacity available that matches your request.</errorMessage>
            <launchTemplateAndOverrides>
                <launchTemplateSpecification>
                    <launchTemplateId>lt-0123456789abcdef0</launchTemplateId>
                    <version>1</version>
                </launchTemplateSpecification>
                <overrides>
                    <instanceType>m5.large</instanceType>
                    <subnetId>subnet-0a1b2c3d4e5f60718</subnetId>
                    <availabilityZone>us-east-1b</availabilityZone>
                    <priority>0.0312</priority>
                </overrides>
            </launchTemplateAndOverrides>
            <lifecycle>spot</lifecycle>
        </item>
    </errorSet>
    <fleetInstanceSet>
        <item>
            <launchTemplateAndOverrides>
                <launchTemplateSpecification>
                    <launchTemplateId>lt-0123456789abcdef0</launchTemplateId>
                    <version>1</version>
                </launchTemplateSpecification>
                <overrides>
                    <instanceType>m5a.large</instanceType>
                    <subnetId>subnet-0a1b2c3d4e5f60718</subnetId>
                    <availabilityZone>us-east-1b</availabilityZone>
                </overrides>
            </launchTemplateAndOverrides>
            <lifecycle>spot</lifecycle>
            <instanceIds><item>i-0abcdef1234567890</item></instanceIds>
            <instanceType>m5a.large</instanceType>
        </item>
    </fleetInstanceSet>
</CreateFleetResponse>`

const describeCapacityReservationsXML = `<?xml version="1.0" encoding="UTF-8"?>
<DescribeCapacityReservationsResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">
    <requestId>6a5f7e2c-8c1d-4d4b-9b7e-EXAMPLE</requestId>
    <capacityReservationSet>
        <item>
            <capacityReservationId>cr-0a1b2c3d4e5f60718</capacityReservationId>
            <ownerId>123456789012</ownerId>
            <capacityReservationArn>arn:aws:ec2:us-east-1:123456789012:capacity-reservation/cr-0a1b2c3d4e5f60718</capacityReservationArn>
            <availabilityZoneId>use1-az1</availabilityZoneId>
            <instanceType>m6i.large</instanceType>
            <instancePlatform>Linux/UNIX</instancePlatform>
            <availabilityZone>us-east-1a</availabilityZone>
            <tenancy>default</tenancy>
            <totalInstanceCount>3</totalInstanceCount>
            <availableInstanceCount>1</availableInstanceCount>
            <ebsOptimized>true</ebsOptimized>
            <ephemeralStorage>false</ephemeralStorage>
            <state>active</state>
            <startDate>2026-03-01T00:00:00.000Z</startDate>
            <endDateType>unlimited</endDateType>
            <instanceMatchCriteria>targeted</instanceMatchCriteria>
            <createDate>2026-03-01T00:00:00.000Z</createDate>
            <tagSet>
                <item><key>team</key><value>web</value></item>
            </tagSet>
            <reservationType>default</reservationType>
            <interruptible>false</interruptible>
        </item>
        <item>
            <capacityReservationId>cr-0fedcba9876543210</capacityReservationId>
            <ownerId>123456789012</ownerId>
            <availabilityZone>us-east-1b</availabilityZone>
            <instanceType>p5.48xlarge</instanceType>
            <totalInstanceCount>1</totalInstanceCount>
            <availableInstanceCount>1</availableInstanceCount>
            <state>active</state>
            <endDate>2026-03-02T11:30:00.000Z</endDate>
            <endDateType>limited</endDateType>
            <instanceMatchCriteria>targeted</instanceMatchCriteria>
            <reservationType>capacity-block</reservationType>
        </item>
    </capacityReservationSet>
</DescribeCapacityReservationsResponse>`

const unauthorizedXML = `<?xml version="1.0" encoding="UTF-8"?>
<Response><Errors><Error><Code>UnauthorizedOperation</Code><Message>You are not authorized to perform this operation. User: arn:aws:sts::123456789012:assumed-role/stevedore-controller/controller is not authorized to perform: iam:PassRole on resource: arn:aws:iam::123456789012:role/KarpenterNodeRole-demo because no identity-based policy allows the iam:PassRole action. Encoded authorization failure message: EXAMPLE</Message></Error></Errors><RequestID>f3b2a8e4-EXAMPLE</RequestID></Response>`

const getParameterJSON = `{"Parameter":{"ARN":"arn:aws:ssm:us-east-1::parameter/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/standard/recommended/image_id","DataType":"text","LastModifiedDate":1.7514144E9,"Name":"/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/standard/recommended/image_id","Type":"String","Value":"ami-0123456789abcdef0","Version":42}}`

const spotBody = `{"version":"0","id":"1e5527d7-bb36-4607-3370-4164db56a40e","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","account":"123456789012","time":"2026-07-01T12:00:00Z","region":"us-east-1","resources":["arn:aws:ec2:us-east-1b:instance/i-0abcdef1234567890"],"detail":{"instance-id":"i-0abcdef1234567890","instance-action":"terminate"}}`

const describePlacementGroupsXML = `<?xml version="1.0" encoding="UTF-8"?>
<DescribePlacementGroupsResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">
    <requestId>d4904fd9-82c2-4ea5-adfe-a9cc3EXAMPLE</requestId>
    <placementGroupSet>
        <item>
            <groupName>training</groupName>
            <state>available</state>
            <strategy>partition</strategy>
            <partitionCount>3</partitionCount>
            <groupId>pg-0123456789abcdef0</groupId>
            <groupArn>arn:aws:ec2:us-east-1:123456789012:placement-group/training</groupArn>
            <tagSet/>
        </item>
    </placementGroupSet>
</DescribePlacementGroupsResponse>`

type recorded struct {
	method string
	path   string
	target string
	form   url.Values
	body   string
}

// newServer answers EC2 query requests by Action and JSON requests by
// X-Amz-Target, and records what it received.
func newServer(t *testing.T, got *[]recorded) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		rec := recorded{method: r.Method, path: r.URL.EscapedPath(), target: r.Header.Get("X-Amz-Target"), body: string(raw)}
		if rec.target == "" && r.Method == http.MethodPost {
			rec.form, _ = url.ParseQuery(string(raw))
		}
		*got = append(*got, rec)
		switch {
		case rec.method == http.MethodGet && strings.HasPrefix(rec.path, "/managedresources/"):
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, getManagedResourceJSON)
		case rec.target == "AmazonSSM.GetParameter":
			w.Header().Set("Content-Type", "application/x-amz-json-1.1")
			io.WriteString(w, getParameterJSON)
		case rec.target == "AmazonSQS.ReceiveMessage":
			sum := md5.Sum([]byte(spotBody))
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			body := `{"Messages":[{"MessageId":"0e3a5b4c-EXAMPLE","ReceiptHandle":"AQEBexample==","MD5OfBody":"` + hex.EncodeToString(sum[:]) + `","Body":` + jsonString(spotBody) + `,"Attributes":{"SentTimestamp":"1751371200000"}}]}`
			io.WriteString(w, body)
		case rec.target == "AmazonSQS.GetQueueUrl":
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			w.Header().Set("x-amzn-query-error", "AWS.SimpleQueueService.NonExistentQueue;Sender")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"__type":"com.amazonaws.sqs#QueueDoesNotExist","message":"The specified queue does not exist."}`)
		case rec.form.Get("Action") == "DescribeSubnets":
			w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
			io.WriteString(w, describeSubnetsXML)
		case rec.form.Get("Action") == "DescribePlacementGroups":
			w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
			io.WriteString(w, describePlacementGroupsXML)
		case rec.form.Get("Action") == "DescribeInstanceTypes":
			w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
			io.WriteString(w, describeInstanceTypesXML)
		case rec.form.Get("Action") == "DescribeCapacityReservations":
			w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
			io.WriteString(w, describeCapacityReservationsXML)
		case rec.form.Get("Action") == "CreateFleet":
			w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
			io.WriteString(w, createFleetXML)
		case rec.form.Get("Action") == "RunInstances":
			w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, unauthorizedXML)
		default:
			t.Errorf("unexpected request: target %q form %v", rec.target, rec.form)
			w.WriteHeader(http.StatusNotImplemented)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func jsonString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(s) + `"`
}

// testConfig points the real SDK clients at srv: static credentials (no
// credential chain, no instance metadata), a fixed region and no retries.
func testConfig(srv *httptest.Server) aws.Config {
	return aws.Config{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		HTTPClient:   srv.Client(),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "secret", Source: "test"}, nil
		}),
		Retryer: func() aws.Retryer { return aws.NopRetryer{} },
	}
}

func TestEC2ThroughInterface(t *testing.T) {
	var got []recorded
	srv := newServer(t, &got)
	clients := sdk.NewFromConfig(testConfig(srv))
	ctx := context.Background()

	t.Run("DescribeSubnets", func(t *testing.T) {
		out, err := clients.EC2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{
			Filters: []ec2types.Filter{{Name: aws.String("tag:karpenter.sh/discovery"), Values: []string{"demo"}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Subnets) != 1 {
			t.Fatalf("got %d subnets", len(out.Subnets))
		}
		s := out.Subnets[0]
		if aws.ToString(s.SubnetId) != "subnet-0a1b2c3d4e5f60718" || aws.ToString(s.AvailabilityZone) != "us-east-1b" ||
			aws.ToString(s.AvailabilityZoneId) != "use1-az2" || aws.ToInt32(s.AvailableIpAddressCount) != 4091 || len(s.Tags) != 2 {
			t.Errorf("unexpected subnet %+v", s)
		}
		form := got[len(got)-1].form
		if form.Get("Filter.1.Name") != "tag:karpenter.sh/discovery" || form.Get("Filter.1.Value.1") != "demo" {
			t.Errorf("filter not serialized as expected: %v", form)
		}
	})

	t.Run("DescribeInstanceTypes", func(t *testing.T) {
		out, err := clients.EC2.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{MaxResults: aws.Int32(100)})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.InstanceTypes) != 1 || aws.ToString(out.NextToken) != "AAEAAW0xEXAMPLE" {
			t.Fatalf("unexpected output %+v", out)
		}
		it := out.InstanceTypes[0]
		n := it.NetworkInfo
		if it.InstanceType != "m5.large" || aws.ToInt32(it.VCpuInfo.DefaultVCpus) != 2 || aws.ToInt64(it.MemoryInfo.SizeInMiB) != 8192 ||
			aws.ToInt32(n.MaximumNetworkInterfaces) != 3 || aws.ToInt32(n.Ipv4AddressesPerInterface) != 10 ||
			it.ProcessorInfo.SupportedArchitectures[0] != ec2types.ArchitectureTypeX8664 || it.Hypervisor != "nitro" {
			t.Errorf("unexpected instance type %+v", it)
		}
		// ENI-limited max pods of m5.large: 3 × (10 − 1) + 2 = 29.
		if pods := aws.ToInt32(n.MaximumNetworkInterfaces)*(aws.ToInt32(n.Ipv4AddressesPerInterface)-1) + 2; pods != 29 {
			t.Errorf("max pods %d, want 29", pods)
		}
	})

	t.Run("DescribeCapacityReservations", func(t *testing.T) {
		out, err := clients.EC2.DescribeCapacityReservations(ctx, &ec2.DescribeCapacityReservationsInput{
			Filters: []ec2types.Filter{
				{Name: aws.String("state"), Values: []string{"active"}},
				{Name: aws.String("tag:team"), Values: []string{"web"}},
			},
			MaxResults: aws.Int32(1000),
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.CapacityReservations) != 2 {
			t.Fatalf("got %d reservations", len(out.CapacityReservations))
		}
		od, cb := out.CapacityReservations[0], out.CapacityReservations[1]
		if aws.ToString(od.CapacityReservationId) != "cr-0a1b2c3d4e5f60718" || aws.ToString(od.InstanceType) != "m6i.large" ||
			aws.ToString(od.AvailabilityZone) != "us-east-1a" || aws.ToString(od.OwnerId) != "123456789012" ||
			aws.ToInt32(od.TotalInstanceCount) != 3 || aws.ToInt32(od.AvailableInstanceCount) != 1 ||
			od.State != ec2types.CapacityReservationStateActive || od.InstanceMatchCriteria != ec2types.InstanceMatchCriteriaTargeted ||
			od.ReservationType != ec2types.CapacityReservationTypeDefault || aws.ToBool(od.Interruptible) || od.EndDate != nil || len(od.Tags) != 1 {
			t.Errorf("unexpected on-demand reservation %+v", od)
		}
		if cb.ReservationType != ec2types.CapacityReservationTypeCapacityBlock || cb.EndDate == nil ||
			!cb.EndDate.Equal(time.Date(2026, 3, 2, 11, 30, 0, 0, time.UTC)) {
			t.Errorf("unexpected capacity block %+v", cb)
		}
		form := got[len(got)-1].form
		if form.Get("Filter.1.Name") != "state" || form.Get("Filter.2.Name") != "tag:team" || form.Get("Filter.2.Value.1") != "web" || form.Get("MaxResults") != "1000" {
			t.Errorf("request not serialized as expected: %v", form)
		}
		// An ID goes in its own parameter.
		if _, err := clients.EC2.DescribeCapacityReservations(ctx, &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{"cr-0a1b2c3d4e5f60718"}}); err != nil {
			t.Fatal(err)
		}
		if form := got[len(got)-1].form; form.Get("CapacityReservationId.1") != "cr-0a1b2c3d4e5f60718" {
			t.Errorf("ID not serialized as expected: %v", form)
		}
	})

	t.Run("DescribePlacementGroups", func(t *testing.T) {
		out, err := clients.EC2.DescribePlacementGroups(ctx, &ec2.DescribePlacementGroupsInput{GroupNames: []string{"training"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.PlacementGroups) != 1 {
			t.Fatalf("got %d placement groups", len(out.PlacementGroups))
		}
		g := out.PlacementGroups[0]
		if aws.ToString(g.GroupId) != "pg-0123456789abcdef0" || aws.ToString(g.GroupName) != "training" ||
			g.Strategy != ec2types.PlacementStrategyPartition || aws.ToInt32(g.PartitionCount) != 3 || g.State != ec2types.PlacementGroupStateAvailable {
			t.Errorf("unexpected placement group %+v", g)
		}
		if form := got[len(got)-1].form; form.Get("GroupName.1") != "training" {
			t.Errorf("group name not serialized as expected: %v", form)
		}
	})

	t.Run("CreateFleet with an ICE error", func(t *testing.T) {
		out, err := clients.EC2.CreateFleet(ctx, &ec2.CreateFleetInput{
			Type: ec2types.FleetTypeInstant,
			TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
				TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeSpot,
			},
			LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
				LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateId: aws.String("lt-0123456789abcdef0"), Version: aws.String("$Latest")},
				Overrides: []ec2types.FleetLaunchTemplateOverridesRequest{
					{InstanceType: "m5.large", SubnetId: aws.String("subnet-0a1b2c3d4e5f60718")},
					{InstanceType: "m5a.large", SubnetId: aws.String("subnet-0a1b2c3d4e5f60718")},
				},
			}},
			SpotOptions: &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyPriceCapacityOptimized},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Errors) != 1 || aws.ToString(out.Errors[0].ErrorCode) != "InsufficientInstanceCapacity" ||
			out.Errors[0].LaunchTemplateAndOverrides.Overrides.InstanceType != "m5.large" ||
			aws.ToString(out.Errors[0].LaunchTemplateAndOverrides.Overrides.AvailabilityZone) != "us-east-1b" {
			t.Errorf("unexpected errors %+v", out.Errors)
		}
		if len(out.Instances) != 1 || out.Instances[0].InstanceIds[0] != "i-0abcdef1234567890" || out.Instances[0].Lifecycle != ec2types.InstanceLifecycleSpot {
			t.Errorf("unexpected instances %+v", out.Instances)
		}
		form := got[len(got)-1].form
		if form.Get("Type") != "instant" || form.Get("LaunchTemplateConfigs.1.Overrides.2.InstanceType") != "m5a.large" {
			t.Errorf("request not serialized as expected: %v", form)
		}
	})

	t.Run("UnauthorizedOperation", func(t *testing.T) {
		_, err := clients.EC2.RunInstances(ctx, &ec2.RunInstancesInput{DryRun: aws.Bool(true), MinCount: aws.Int32(1), MaxCount: aws.Int32(1)})
		var ae smithy.APIError
		if !errors.As(err, &ae) || ae.ErrorCode() != "UnauthorizedOperation" || !strings.Contains(ae.ErrorMessage(), "iam:PassRole") {
			t.Fatalf("got %v, want UnauthorizedOperation naming iam:PassRole", err)
		}
		var oe *smithy.OperationError
		if !errors.As(err, &oe) || oe.OperationName != "RunInstances" {
			t.Errorf("error is not an OperationError for RunInstances: %v", err)
		}
	})
}

func TestSSMThroughInterface(t *testing.T) {
	var got []recorded
	srv := newServer(t, &got)
	clients := sdk.NewFromConfig(testConfig(srv))
	name := "/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/standard/recommended/image_id"
	out, err := clients.SSM.GetParameter(context.Background(), &ssm.GetParameterInput{Name: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(out.Parameter.Value) != "ami-0123456789abcdef0" || out.Parameter.Version != 42 || aws.ToString(out.Parameter.Name) != name {
		t.Errorf("unexpected parameter %+v", out.Parameter)
	}
	if !strings.Contains(got[0].body, `"Name":"`+name+`"`) {
		t.Errorf("request body %s does not carry the name", got[0].body)
	}
}

func TestSQSThroughInterface(t *testing.T) {
	var got []recorded
	srv := newServer(t, &got)
	clients := sdk.NewFromConfig(testConfig(srv))
	ctx := context.Background()

	out, err := clients.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(srv.URL + "/123456789012/demo"), MaxNumberOfMessages: 10, WaitTimeSeconds: 20, VisibilityTimeout: 20,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameSentTimestamp},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) != 1 || aws.ToString(out.Messages[0].Body) != spotBody || out.Messages[0].Attributes["SentTimestamp"] != "1751371200000" {
		t.Fatalf("unexpected messages %+v", out.Messages)
	}
	if got[0].target != "AmazonSQS.ReceiveMessage" || !strings.Contains(got[0].body, `"MaxNumberOfMessages":10`) {
		t.Errorf("SQS did not use the JSON 1.0 protocol as expected: target %q body %s", got[0].target, got[0].body)
	}

	_, err = clients.SQS.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("missing")})
	var qdne *sqstypes.QueueDoesNotExist
	if !errors.As(err, &qdne) {
		t.Fatalf("got %v, want QueueDoesNotExist", err)
	}
}

// getManagedResourceJSON is an ARC zonal shift GetManagedResource response
// (REST JSON) for an EKS cluster with one applied zonal shift away from
// use1-az1 and one autoshift that a customer shift overrides.
const getManagedResourceJSON = `{
  "arn": "arn:aws:eks:us-east-1:123456789012:cluster/demo",
  "name": "demo",
  "appliedWeights": {"use1-az1": 0, "use1-az2": 1, "use1-az4": 1},
  "zonalShifts": [{
    "appliedStatus": "APPLIED",
    "awayFrom": "use1-az1",
    "comment": "gray failure",
    "expiryTime": 1751374800,
    "resourceIdentifier": "arn:aws:eks:us-east-1:123456789012:cluster/demo",
    "startTime": 1751371200,
    "zonalShiftId": "91d4ff0c-EXAMPLE"
  }],
  "autoshifts": [{"appliedStatus": "NOT_APPLIED", "awayFrom": "use1-az2", "startTime": 1751371000}],
  "zonalAutoshiftStatus": "ENABLED"
}`

func TestARCZonalShiftThroughInterface(t *testing.T) {
	var got []recorded
	srv := newServer(t, &got)
	clients := sdk.NewFromConfig(testConfig(srv))
	arn := "arn:aws:eks:us-east-1:123456789012:cluster/demo"
	out, err := clients.ARCZonalShift.GetManagedResource(context.Background(), &arczonalshift.GetManagedResourceInput{ResourceIdentifier: aws.String(arn)})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].method != http.MethodGet || got[0].path != "/managedresources/"+url.QueryEscape(arn) {
		t.Fatalf("requests %+v, want one GET of /managedresources/<escaped cluster ARN>", got)
	}
	if len(out.ZonalShifts) != 1 {
		t.Fatalf("zonal shifts %+v, want one", out.ZonalShifts)
	}
	zs := out.ZonalShifts[0]
	if aws.ToString(zs.AwayFrom) != "use1-az1" || zs.AppliedStatus != arctypes.AppliedStatusApplied ||
		!aws.ToTime(zs.ExpiryTime).Equal(time.Unix(1751374800, 0)) {
		t.Errorf("unexpected zonal shift %+v", zs)
	}
	if len(out.Autoshifts) != 1 || out.Autoshifts[0].AppliedStatus != arctypes.AutoshiftAppliedStatusNotApplied || aws.ToString(out.Autoshifts[0].AwayFrom) != "use1-az2" {
		t.Errorf("unexpected autoshifts %+v", out.Autoshifts)
	}
}
