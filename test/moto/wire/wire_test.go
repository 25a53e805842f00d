package wire_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/arczonalshift"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/stevedore-autoscaler/stevedore/test/moto/wire"
)

// captured is one request as a server received it.
type captured struct {
	r    *http.Request
	body []byte
}

// send makes the call op of service with input in through the real SDK
// client, against a loopback server that records the request and answers
// every request with an error, and returns what the server received. The
// call's own error is of no interest: only what went on the wire is.
func send(t *testing.T, service, op string, in any) captured {
	t.Helper()
	got := make(chan captured, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("reading the request body: %v", err)
		}
		select {
		case got <- captured{r.Clone(context.Background()), body}:
		default:
			t.Errorf("more than one request for %s %s", service, op)
		}
		http.Error(w, `{"__type":"Refused","message":"refused"}`, http.StatusBadRequest)
	}))
	defer srv.Close()
	cfg := aws.Config{
		Region:           "us-west-2",
		Credentials:      credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
		RetryMaxAttempts: 1,
		BaseEndpoint:     aws.String(srv.URL),
	}
	method := reflect.ValueOf(client(t, service, cfg)).MethodByName(op)
	if !method.IsValid() {
		t.Fatalf("the %s client has no method %s", service, op)
	}
	out := method.Call([]reflect.Value{reflect.ValueOf(context.Background()), reflect.ValueOf(in)})
	select {
	case c := <-got:
		return c
	default:
		t.Fatalf("%s %s sent no request: %v", service, op, out[1].Interface())
		return captured{}
	}
}

func client(t *testing.T, service string, cfg aws.Config) any {
	switch service {
	case "EC2":
		return ec2.NewFromConfig(cfg)
	case "IAM":
		return iam.NewFromConfig(cfg)
	case "SSM":
		return ssm.NewFromConfig(cfg)
	case "SQS":
		return sqs.NewFromConfig(cfg)
	case "EKS":
		return eks.NewFromConfig(cfg)
	case "Pricing":
		return pricing.NewFromConfig(cfg)
	case "STS":
		return sts.NewFromConfig(cfg)
	case "ARCZonalShift":
		return arczonalshift.NewFromConfig(cfg)
	case "EventBridge":
		return eventbridge.NewFromConfig(cfg)
	}
	t.Fatalf("no client for %s", service)
	return nil
}

// roundTrip sends in and reads it back, and requires the same service,
// operation and input.
func roundTrip(t *testing.T, service, op string, in any) {
	t.Helper()
	c := send(t, service, op, in)
	call, err := wire.Read(c.r, c.body)
	if err != nil {
		t.Fatalf("Read: %v\nbody: %s", err, c.body)
	}
	if call.Service != service || call.Operation != op {
		t.Fatalf("Read = %s %s, want %s %s", call.Service, call.Operation, service, op)
	}
	if !reflect.DeepEqual(call.Input, in) {
		t.Fatalf("decoded input differs from the one sent\n%s\nbody: %s", diff(in, call.Input), c.body)
	}
}

// diff shows the first line where want and got differ, as indented JSON.
func diff(want, got any) string {
	w, _ := json.MarshalIndent(want, "", " ")
	g, _ := json.MarshalIndent(got, "", " ")
	wl, gl := strings.Split(string(w), "\n"), strings.Split(string(g), "\n")
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var a, b string
		if i < len(wl) {
			a = wl[i]
		}
		if i < len(gl) {
			b = gl[i]
		}
		if a != b {
			return fmt.Sprintf("line %d: want %s\n        got  %s", i+1, a, b)
		}
	}
	return fmt.Sprintf("same JSON, different values: want %#v, got %#v", want, got)
}

func tags(kv ...string) []ec2types.Tag {
	var out []ec2types.Tag
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, ec2types.Tag{Key: aws.String(kv[i]), Value: aws.String(kv[i+1])})
	}
	return out
}

// Timestamps go on the wire as ISO 8601 in UTC with milliseconds at most.
var when = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// TestRoundTrip sends a richly populated input of every decoded operation
// through its real SDK client and requires Read to give it back, compared
// with reflect.DeepEqual and nothing ignored: the SDK serializes every
// exported field of these inputs (TestRoundTripEveryField checks it). What
// the wire cannot carry is not used: EC2's protocol drops empty lists and
// both query protocols a structure with nothing set, which would come back
// nil. AWS query does send an empty list, as "Tags=" (the second
// TagInstanceProfile).
func TestRoundTrip(t *testing.T) {
	tests := []struct {
		service, op string
		in          any
	}{
		{"EC2", "CreateFleet", &ec2.CreateFleetInput{
			ClientToken: aws.String("token-1"),
			Context:     aws.String("stevedore-context"),
			Type:        ec2types.FleetTypeInstant,
			ValidFrom:   aws.Time(when),
			LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{
				{
					LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String("stevedore/default/abc"), Version: aws.String("$Latest")},
					Overrides: []ec2types.FleetLaunchTemplateOverridesRequest{
						{SubnetId: aws.String("subnet-a"), InstanceType: ec2types.InstanceTypeM5Large, ImageId: aws.String("ami-1"), Priority: aws.Float64(0), MaxPrice: aws.String("0.096"), AvailabilityZone: aws.String("us-west-2a")},
						{SubnetId: aws.String("subnet-b"), InstanceType: ec2types.InstanceTypeM5Xlarge, ImageId: aws.String("ami-1"), Priority: aws.Float64(1.5), MaxPrice: aws.String("0.192"), WeightedCapacity: aws.Float64(2)},
						{SubnetId: aws.String("subnet-c"), InstanceType: ec2types.InstanceTypeC6iLarge, ImageId: aws.String("ami-2"), Priority: aws.Float64(2), Placement: &ec2types.Placement{GroupName: aws.String("pg")}},
					},
				},
				{
					LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateId: aws.String("lt-0123"), Version: aws.String("3")},
					Overrides: []ec2types.FleetLaunchTemplateOverridesRequest{
						{SubnetId: aws.String("subnet-a"), ImageId: aws.String("ami-arm"), InstanceRequirements: &ec2types.InstanceRequirementsRequest{
							VCpuCount:            &ec2types.VCpuCountRangeRequest{Min: aws.Int32(2), Max: aws.Int32(8)},
							MemoryMiB:            &ec2types.MemoryMiBRequest{Min: aws.Int32(4096)},
							CpuManufacturers:     []ec2types.CpuManufacturer{ec2types.CpuManufacturerAmazonWebServices, ec2types.CpuManufacturerIntel},
							AllowedInstanceTypes: []string{"m7g.*", "c7g.*"},
						}},
						{SubnetId: aws.String("subnet-b"), InstanceType: ec2types.InstanceTypeM7gLarge, BlockDeviceMappings: []ec2types.FleetBlockDeviceMappingRequest{
							{DeviceName: aws.String("/dev/xvda"), Ebs: &ec2types.FleetEbsBlockDeviceRequest{VolumeSize: aws.Int32(20), VolumeType: ec2types.VolumeTypeGp3, Encrypted: aws.Bool(true)}},
						}},
					},
				},
			},
			TagSpecifications: []ec2types.TagSpecification{
				{ResourceType: ec2types.ResourceTypeFleet, Tags: tags("stevedore.io/nodepool", "default", "Name", "fleet")},
				{ResourceType: ec2types.ResourceTypeInstance, Tags: tags("stevedore.io/nodepool", "default", "kubernetes.io/cluster/c", "owned", "Name", "a b&c=d")},
				{ResourceType: ec2types.ResourceTypeVolume, Tags: tags("stevedore.io/nodepool", "default", "empty", "")},
			},
			TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(3), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeSpot, SpotTargetCapacity: aws.Int32(3), OnDemandTargetCapacity: aws.Int32(0)},
			OnDemandOptions: &ec2types.OnDemandOptionsRequest{
				AllocationStrategy:         ec2types.FleetOnDemandAllocationStrategyLowestPrice,
				CapacityReservationOptions: &ec2types.CapacityReservationOptionsRequest{UsageStrategy: ec2types.FleetCapacityReservationUsageStrategyUseCapacityReservationsFirst},
				MinTargetCapacity:          aws.Int32(1),
				SingleInstanceType:         aws.Bool(false),
			},
			SpotOptions: &ec2types.SpotOptionsRequest{
				AllocationStrategy:           ec2types.SpotAllocationStrategyPriceCapacityOptimized,
				InstanceInterruptionBehavior: ec2types.SpotInstanceInterruptionBehaviorTerminate,
				MaintenanceStrategies:        &ec2types.FleetSpotMaintenanceStrategiesRequest{CapacityRebalance: &ec2types.FleetSpotCapacityRebalanceRequest{ReplacementStrategy: ec2types.FleetReplacementStrategyLaunch}},
			},
		}},
		{"EC2", "CreateLaunchTemplate", &ec2.CreateLaunchTemplateInput{
			ClientToken:        aws.String("token-2"),
			LaunchTemplateName: aws.String("stevedore/default/abc"),
			VersionDescription: aws.String("v1"),
			TagSpecifications:  []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: tags("stevedore.io/cluster", "c", "stevedore.io/nodeclass", "default")}},
			LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
				ImageId:            aws.String("ami-1"),
				IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String("c_123")},
				SecurityGroupIds:   []string{"sg-1", "sg-2"},
				NetworkInterfaces: []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{
					{DeviceIndex: aws.Int32(0), Groups: []string{"sg-1", "sg-2"}, AssociatePublicIpAddress: aws.Bool(false), InterfaceType: aws.String("interface")},
					{DeviceIndex: aws.Int32(1), NetworkCardIndex: aws.Int32(1), Groups: []string{"sg-3"}, Ipv6AddressCount: aws.Int32(1)},
				},
				BlockDeviceMappings: []ec2types.LaunchTemplateBlockDeviceMappingRequest{
					{DeviceName: aws.String("/dev/xvda"), Ebs: &ec2types.LaunchTemplateEbsBlockDeviceRequest{VolumeSize: aws.Int32(20), VolumeType: ec2types.VolumeTypeGp3, Iops: aws.Int32(3000), Throughput: aws.Int32(125), Encrypted: aws.Bool(true), DeleteOnTermination: aws.Bool(true), KmsKeyId: aws.String("arn:aws:kms:us-west-2:123456789012:key/k")}},
					{DeviceName: aws.String("/dev/xvdb"), Ebs: &ec2types.LaunchTemplateEbsBlockDeviceRequest{SnapshotId: aws.String("snap-1"), VolumeSize: aws.Int32(100)}},
				},
				MetadataOptions: &ec2types.LaunchTemplateInstanceMetadataOptionsRequest{
					HttpTokens:              ec2types.LaunchTemplateHttpTokensStateRequired,
					HttpPutResponseHopLimit: aws.Int32(1),
					HttpEndpoint:            ec2types.LaunchTemplateInstanceMetadataEndpointStateEnabled,
					HttpProtocolIpv6:        ec2types.LaunchTemplateInstanceMetadataProtocolIpv6Disabled,
				},
				UserData: aws.String(base64.StdEncoding.EncodeToString([]byte("#!/bin/bash\necho 'a+b=c&d'\n"))),
				TagSpecifications: []ec2types.LaunchTemplateTagSpecificationRequest{
					{ResourceType: ec2types.ResourceTypeInstance, Tags: tags("Name", "node", "stevedore.io/nodepool", "default")},
					{ResourceType: ec2types.ResourceTypeVolume, Tags: tags("stevedore.io/nodepool", "default")},
					{ResourceType: ec2types.ResourceTypeNetworkInterface, Tags: tags("stevedore.io/nodepool", "default")},
				},
				Monitoring:     &ec2types.LaunchTemplatesMonitoringRequest{Enabled: aws.Bool(true)},
				EbsOptimized:   aws.Bool(true),
				InstanceType:   ec2types.InstanceTypeM5Large,
				KeyName:        aws.String("key"),
				Placement:      &ec2types.LaunchTemplatePlacementRequest{AvailabilityZone: aws.String("us-west-2a"), Tenancy: ec2types.TenancyDefault},
				CpuOptions:     &ec2types.LaunchTemplateCpuOptionsRequest{CoreCount: aws.Int32(2), ThreadsPerCore: aws.Int32(1)},
				SecurityGroups: []string{"default"},
				InstanceMarketOptions: &ec2types.LaunchTemplateInstanceMarketOptionsRequest{
					MarketType:  ec2types.MarketTypeSpot,
					SpotOptions: &ec2types.LaunchTemplateSpotMarketOptionsRequest{MaxPrice: aws.String("0.1"), SpotInstanceType: ec2types.SpotInstanceTypeOneTime, ValidUntil: aws.Time(when)},
				},
			},
		}},
		{"EC2", "RunInstances", &ec2.RunInstancesInput{
			ClientToken:        aws.String("token-3"),
			MinCount:           aws.Int32(1),
			MaxCount:           aws.Int32(2),
			ImageId:            aws.String("ami-1"),
			InstanceType:       ec2types.InstanceTypeT3Micro,
			SubnetId:           aws.String("subnet-a"),
			SecurityGroupIds:   []string{"sg-1", "sg-2", "sg-3"},
			IamInstanceProfile: &ec2types.IamInstanceProfileSpecification{Name: aws.String("c_123"), Arn: aws.String("arn:aws:iam::123456789012:instance-profile/c_123")},
			LaunchTemplate:     &ec2types.LaunchTemplateSpecification{LaunchTemplateName: aws.String("stevedore/default/abc"), Version: aws.String("$Default")},
			UserData:           aws.String("dXNlcmRhdGE="),
			NetworkInterfaces: []ec2types.InstanceNetworkInterfaceSpecification{{
				DeviceIndex:        aws.Int32(0),
				Groups:             []string{"sg-1", "sg-4"},
				PrivateIpAddresses: []ec2types.PrivateIpAddressSpecification{{PrivateIpAddress: aws.String("10.0.0.5"), Primary: aws.Bool(true)}, {PrivateIpAddress: aws.String("10.0.0.6")}},
				Ipv6Addresses:      []ec2types.InstanceIpv6Address{{Ipv6Address: aws.String("2600::1")}},
				Ipv4Prefixes:       []ec2types.Ipv4PrefixSpecificationRequest{{Ipv4Prefix: aws.String("10.0.1.0/28")}},
			}},
			BlockDeviceMappings: []ec2types.BlockDeviceMapping{
				{DeviceName: aws.String("/dev/xvda"), Ebs: &ec2types.EbsBlockDevice{VolumeSize: aws.Int32(8), VolumeType: ec2types.VolumeTypeGp3, DeleteOnTermination: aws.Bool(true)}},
				{DeviceName: aws.String("/dev/sdb"), VirtualName: aws.String("ephemeral0")},
			},
			MetadataOptions: &ec2types.InstanceMetadataOptionsRequest{HttpTokens: ec2types.HttpTokensStateRequired, HttpPutResponseHopLimit: aws.Int32(2)},
			TagSpecifications: []ec2types.TagSpecification{
				{ResourceType: ec2types.ResourceTypeInstance, Tags: tags("Name", "probe", "stevedore.io/cluster", "c")},
				{ResourceType: ec2types.ResourceTypeVolume, Tags: tags("stevedore.io/cluster", "c")},
				{ResourceType: ec2types.ResourceTypeNetworkInterface, Tags: tags("stevedore.io/cluster", "c")},
			},
			InstanceMarketOptions: &ec2types.InstanceMarketOptionsRequest{MarketType: ec2types.MarketTypeSpot, SpotOptions: &ec2types.SpotMarketOptions{MaxPrice: aws.String("0.01"), ValidUntil: aws.Time(when)}},
			Monitoring:            &ec2types.RunInstancesMonitoringEnabled{Enabled: aws.Bool(false)},
			Placement:             &ec2types.Placement{AvailabilityZone: aws.String("us-west-2b"), PartitionNumber: aws.Int32(3)},
			CreditSpecification:   &ec2types.CreditSpecificationRequest{CpuCredits: aws.String("unlimited")},
			DryRun:                aws.Bool(true),
		}},
		{"EC2", "DeleteLaunchTemplate", &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: aws.String("stevedore/default/abc"), DryRun: aws.Bool(false)}},
		{"EC2", "TerminateInstances", &ec2.TerminateInstancesInput{InstanceIds: []string{"i-1", "i-2", "i-3"}, Force: aws.Bool(true)}},
		{"EC2", "CreateTags", &ec2.CreateTagsInput{Resources: []string{"i-1", "i-2"}, Tags: tags("stevedore.io/nodeclaim", "default-abcde", "Name", "ip-10-0-0-1.us-west-2.compute.internal")}},
		{"IAM", "CreateInstanceProfile", &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String("c_123"), Path: aws.String("/stevedore/"), Tags: []iamtypes.Tag{
			{Key: aws.String("stevedore.io/cluster"), Value: aws.String("c")}, {Key: aws.String("topology.kubernetes.io/region"), Value: aws.String("us-west-2")},
		}}},
		{"IAM", "TagInstanceProfile", &iam.TagInstanceProfileInput{InstanceProfileName: aws.String("c_123"), Tags: []iamtypes.Tag{{Key: aws.String("k"), Value: aws.String("v=1&2")}}}},
		{"IAM", "TagInstanceProfile", &iam.TagInstanceProfileInput{InstanceProfileName: aws.String("c_123"), Tags: []iamtypes.Tag{}}},
		{"IAM", "AddRoleToInstanceProfile", &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String("c_123"), RoleName: aws.String("NodeRole")}},
		{"IAM", "RemoveRoleFromInstanceProfile", &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: aws.String("c_123"), RoleName: aws.String("NodeRole")}},
		{"IAM", "DeleteInstanceProfile", &iam.DeleteInstanceProfileInput{InstanceProfileName: aws.String("c_123")}},
		{"IAM", "GetInstanceProfile", &iam.GetInstanceProfileInput{InstanceProfileName: aws.String("c_123")}},
		{"IAM", "GetRole", &iam.GetRoleInput{RoleName: aws.String("NodeRole")}},
		{"SSM", "GetParameter", &ssm.GetParameterInput{Name: aws.String("/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/standard/recommended/image_id"), WithDecryption: aws.Bool(false)}},
		{"SQS", "GetQueueUrl", &sqs.GetQueueUrlInput{QueueName: aws.String("interruptions"), QueueOwnerAWSAccountId: aws.String("123456789012")}},
		{"SQS", "ReceiveMessage", &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String("https://sqs.us-west-2.amazonaws.com/123456789012/interruptions"),
			MaxNumberOfMessages:         10,
			WaitTimeSeconds:             20,
			VisibilityTimeout:           30,
			AttributeNames:              []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll},
			MessageAttributeNames:       []string{"All", "x"},
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameSentTimestamp, sqstypes.MessageSystemAttributeNameApproximateReceiveCount},
			ReceiveRequestAttemptId:     aws.String("attempt"),
		}},
		{"SQS", "DeleteMessage", &sqs.DeleteMessageInput{QueueUrl: aws.String("https://sqs.us-west-2.amazonaws.com/123456789012/interruptions"), ReceiptHandle: aws.String("handle+/=")}},
		{"SQS", "SendMessage", &sqs.SendMessageInput{
			QueueUrl:     aws.String("https://sqs.us-west-2.amazonaws.com/123456789012/interruptions"),
			MessageBody:  aws.String(`{"detail-type":"EC2 Spot Instance Interruption Warning"}`),
			DelaySeconds: 5,
			MessageAttributes: map[string]sqstypes.MessageAttributeValue{
				"s": {DataType: aws.String("String"), StringValue: aws.String("v")},
				"b": {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1, 2, 255}},
			},
			MessageSystemAttributes: map[string]sqstypes.MessageSystemAttributeValue{
				"AWSTraceHeader": {DataType: aws.String("String"), StringValue: aws.String("Root=1-abc")},
			},
		}},
		{"SQS", "GetQueueAttributes", &sqs.GetQueueAttributesInput{QueueUrl: aws.String("https://sqs.us-west-2.amazonaws.com/123456789012/interruptions"), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn, sqstypes.QueueAttributeNamePolicy}}},
		{"EKS", "DescribeCluster", &eks.DescribeClusterInput{Name: aws.String("my-cluster")}},
		{"ARCZonalShift", "GetManagedResource", &arczonalshift.GetManagedResourceInput{ResourceIdentifier: aws.String("arn:aws:eks:us-west-2:123456789012:cluster/my-cluster")}},
	}
	for _, tt := range tests {
		t.Run(tt.service+"/"+tt.op, func(t *testing.T) {
			roundTrip(t, tt.service, tt.op, tt.in)
		})
	}
}

// TestRoundTripEveryField fills every field reachable from each decoded
// operation's input and round-trips it, so that a member whose wire name
// the decoder does not know fails here rather than in an end-to-end test.
func TestRoundTripEveryField(t *testing.T) {
	ops := map[string][]string{
		"EC2":           {"CreateLaunchTemplate", "CreateFleet", "RunInstances", "DeleteLaunchTemplate", "TerminateInstances", "CreateTags"},
		"IAM":           {"CreateInstanceProfile", "TagInstanceProfile", "AddRoleToInstanceProfile", "RemoveRoleFromInstanceProfile", "DeleteInstanceProfile", "GetInstanceProfile", "GetRole"},
		"SSM":           {"GetParameter"},
		"SQS":           {"GetQueueUrl", "ReceiveMessage", "DeleteMessage", "SendMessage", "GetQueueAttributes"},
		"EKS":           {"DescribeCluster"},
		"ARCZonalShift": {"GetManagedResource"},
	}
	for service, names := range ops {
		for _, op := range names {
			t.Run(service+"/"+op, func(t *testing.T) {
				cfg := aws.Config{Region: "us-west-2"}
				method, ok := reflect.TypeOf(client(t, service, cfg)).MethodByName(op)
				if !ok {
					t.Fatalf("no method %s", op)
				}
				in := reflect.New(method.Type.In(2).Elem())
				fill(in.Elem(), op, new(int))
				roundTrip(t, service, op, in.Interface())
			})
		}
	}
}

// fill sets every exported field under v to a distinct value: strings
// carry the field's path and characters that need escaping, lists and maps
// get two items.
func fill(v reflect.Value, path string, n *int) {
	*n++
	switch {
	case v.Type() == reflect.TypeFor[time.Time]():
		v.Set(reflect.ValueOf(when.Add(time.Duration(*n) * time.Second)))
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), path, n)
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				fill(v.Field(i), path+"."+f.Name, n)
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes([]byte(path))
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fill(v.Index(i), fmt.Sprintf("%s.%d", path, i+1), n)
		}
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		for i := range 2 {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			fill(k, fmt.Sprintf("%s.key%d", path, i+1), n)
			fill(e, fmt.Sprintf("%s.value%d", path, i+1), n)
			v.SetMapIndex(k, e)
		}
	case reflect.String:
		v.SetString(fmt.Sprintf("%s /&=+%%é:%d", path, *n))
	case reflect.Bool:
		v.SetBool(*n%2 == 0)
	case reflect.Int32, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Float64:
		v.SetFloat(float64(*n) + 0.25)
	default:
		panic(fmt.Sprintf("fill: %s has kind %s", path, v.Kind()))
	}
}

// sigv4 is an Authorization header for signing name service; Read does
// not check the signature.
func sigv4(service string) string {
	return "AWS4-HMAC-SHA256 Credential=AKID/20300102/us-west-2/" + service + "/aws4_request, SignedHeaders=host;x-amz-date, Signature=0123"
}

// TestDetect reads the service and operation of calls of every protocol,
// sent by the real clients, including calls whose input is not decoded.
func TestDetect(t *testing.T) {
	tests := []struct {
		service, op string
		in          any
		decoded     bool
	}{
		{"EC2", "DescribeSubnets", &ec2.DescribeSubnetsInput{SubnetIds: []string{"subnet-a"}}, false},
		{"EC2", "CreateTags", &ec2.CreateTagsInput{Resources: []string{"i-1"}, Tags: tags("a", "b")}, true},
		{"IAM", "ListInstanceProfiles", &iam.ListInstanceProfilesInput{}, false},
		{"IAM", "GetRole", &iam.GetRoleInput{RoleName: aws.String("r")}, true},
		{"STS", "GetCallerIdentity", &sts.GetCallerIdentityInput{}, false},
		{"SSM", "GetParameter", &ssm.GetParameterInput{Name: aws.String("/p")}, true},
		{"SSM", "GetParametersByPath", &ssm.GetParametersByPathInput{Path: aws.String("/p")}, false},
		{"SQS", "ReceiveMessage", &sqs.ReceiveMessageInput{QueueUrl: aws.String("q")}, true},
		{"SQS", "ListQueues", &sqs.ListQueuesInput{}, false},
		{"Pricing", "GetProducts", &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), Filters: []pricingtypes.Filter{{Field: aws.String("regionCode"), Type: pricingtypes.FilterTypeTermMatch, Value: aws.String("us-west-2")}}}, false},
		{"EventBridge", "PutRule", &eventbridge.PutRuleInput{Name: aws.String("rule")}, false},
		{"EKS", "DescribeCluster", &eks.DescribeClusterInput{Name: aws.String("c")}, true},
		{"ARCZonalShift", "GetManagedResource", &arczonalshift.GetManagedResourceInput{ResourceIdentifier: aws.String("arn:aws:eks:us-west-2:1:cluster/c")}, true},
	}
	for _, tt := range tests {
		t.Run(tt.service+"/"+tt.op, func(t *testing.T) {
			c := send(t, tt.service, tt.op, tt.in)
			call, err := wire.Read(c.r, c.body)
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			if call.Service != tt.service || call.Operation != tt.op {
				t.Fatalf("Read = %s %s, want %s %s", call.Service, call.Operation, tt.service, tt.op)
			}
			if got := call.Input != nil; got != tt.decoded {
				t.Fatalf("Input = %#v, want decoded %v", call.Input, tt.decoded)
			}
		})
	}
}

// TestRead covers what the SDK does not send: requests written by hand,
// to check the errors and the less common ways of carrying a call.
func TestRead(t *testing.T) {
	form := "application/x-www-form-urlencoded"
	tests := []struct {
		name                string
		method, target      string
		header              map[string]string
		body                string
		wantService, wantOp string
		wantInput           any
		wantErr             []string // substrings of the error
	}{
		{
			name: "EC2 form key naming no field", method: "POST", target: "/",
			header:  map[string]string{"Authorization": sigv4("ec2"), "Content-Type": form},
			body:    "Action=CreateTags&Version=2016-11-15&ResourceId.1=i-1&Tag.1.Key=k&Tag.1.Value=v&Bogus.1=x",
			wantErr: []string{`"Bogus.1"`, "CreateTags"},
		},
		{
			name: "EC2 nested form key naming no field", method: "POST", target: "/",
			header:  map[string]string{"Authorization": sigv4("ec2"), "Content-Type": form},
			body:    "Action=CreateFleet&Version=2016-11-15&TagSpecification.1.ResourceType=fleet&TagSpecification.1.Tags.1.Key=k&TagSpecification.1.Tag.1.Colour=red",
			wantErr: []string{`"TagSpecification.1.Tag.1.Colour"`, "CreateFleet"},
		},
		{
			name: "EC2 list under both of its names", method: "POST", target: "/",
			header:  map[string]string{"Authorization": sigv4("ec2"), "Content-Type": form},
			body:    "Action=CreateTags&ResourceId.1=i-1&Tag.1.Key=a&Tags.1.Key=b",
			wantErr: []string{`"Tags.1.Key"`, "CreateTags"},
		},
		{
			name: "EC2 list with a missing index", method: "POST", target: "/",
			header:  map[string]string{"Authorization": sigv4("ec2"), "Content-Type": form},
			body:    "Action=TerminateInstances&InstanceId.1=i-1&InstanceId.3=i-3",
			wantErr: []string{`"InstanceId.3"`, "TerminateInstances"},
		},
		{
			name: "IAM list without member", method: "POST", target: "/",
			header:  map[string]string{"Authorization": sigv4("iam"), "Content-Type": form},
			body:    "Action=TagInstanceProfile&InstanceProfileName=p&Tags.1.Key=k",
			wantErr: []string{`"Tags.1.Key"`, "TagInstanceProfile"},
		},
		{
			name: "IAM repeated form key", method: "POST", target: "/",
			header:  map[string]string{"Authorization": sigv4("iam"), "Content-Type": form},
			body:    "Action=GetRole&RoleName=a&RoleName=b",
			wantErr: []string{`"RoleName"`, "GetRole"},
		},
		{
			name: "EC2 operation in the URL query", method: "GET", target: "/?Action=TerminateInstances&Version=2016-11-15&InstanceId.1=i-1",
			header:      map[string]string{"Authorization": sigv4("ec2")},
			wantService: "EC2", wantOp: "TerminateInstances", wantInput: &ec2.TerminateInstancesInput{InstanceIds: []string{"i-1"}},
		},
		{
			name: "presigned STS call", method: "GET", target: "/?Action=GetCallerIdentity&Version=2011-06-15&X-Amz-Credential=AKID%2F20300102%2Fus-east-1%2Fsts%2Faws4_request",
			wantService: "STS", wantOp: "GetCallerIdentity",
		},
		{
			name: "SigV4a credential scope", method: "POST", target: "/",
			header:      map[string]string{"Authorization": "AWS4-ECDSA-P256-SHA256 Credential=AKID/20300102/events/aws4_request, SignedHeaders=host, Signature=0", "X-Amz-Target": "AWSEvents.PutEvents"},
			body:        "{}",
			wantService: "EventBridge", wantOp: "PutEvents",
		},
		{
			name: "unknown signing name", method: "GET", target: "/bucket/key",
			header:  map[string]string{"Authorization": sigv4("s3")},
			wantErr: []string{`"s3"`},
		},
		{
			name: "unsigned request", method: "POST", target: "/", body: "Action=DescribeSubnets",
			wantErr: []string{"not signed"},
		},
		{
			name: "query call without Action", method: "POST", target: "/",
			header:  map[string]string{"Authorization": sigv4("ec2"), "Content-Type": form},
			body:    "Version=2016-11-15",
			wantErr: []string{"no Action"},
		},
		{
			name: "JSON call without X-Amz-Target", method: "POST", target: "/",
			header:  map[string]string{"Authorization": sigv4("ssm")},
			body:    `{"Name":"/p"}`,
			wantErr: []string{"X-Amz-Target"},
		},
		{
			name: "JSON member naming no field", method: "POST", target: "/",
			header:  map[string]string{"Authorization": sigv4("ssm"), "X-Amz-Target": "AmazonSSM.GetParameter"},
			body:    `{"Name":"/p","Colour":"red"}`,
			wantErr: []string{"GetParameter", "Colour"},
		},
		{
			name: "unknown EKS path", method: "GET", target: "/clusters/c/node-groups/ng",
			header:  map[string]string{"Authorization": sigv4("eks")},
			wantErr: []string{"GET /clusters/c/node-groups/ng"},
		},
		{
			name: "unknown ARC method", method: "DELETE", target: "/managedresources/x",
			header:  map[string]string{"Authorization": sigv4("arc-zonal-shift")},
			wantErr: []string{"DELETE /managedresources/x"},
		},
		{
			name: "ARC identifier with escaped slashes", method: "GET", target: "/managedresources/arn%3Aaws%3Aelasticloadbalancing%3Aus-west-2%3A1%3Aloadbalancer%2Fapp%2Flb%2F0",
			header:      map[string]string{"Authorization": sigv4("arc-zonal-shift")},
			wantService: "ARCZonalShift", wantOp: "GetManagedResource",
			wantInput: &arczonalshift.GetManagedResourceInput{ResourceIdentifier: aws.String("arn:aws:elasticloadbalancing:us-west-2:1:loadbalancer/app/lb/0")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, tt.target, nil)
			for k, v := range tt.header {
				r.Header.Set(k, v)
			}
			call, err := wire.Read(r, []byte(tt.body))
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("Read = %+v, want an error", call)
				}
				for _, s := range tt.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not contain %s", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			want := wire.Call{Service: tt.wantService, Operation: tt.wantOp, Input: tt.wantInput}
			if !reflect.DeepEqual(call, want) {
				t.Fatalf("Read = %+v, want %+v", call, want)
			}
		})
	}
}
