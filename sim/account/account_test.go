package account

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/arczonalshift"
	arctypes "github.com/aws/aws-sdk-go-v2/service/arczonalshift/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/sdk"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/settings"
)

var epoch = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)

const image = "ami-0123456789abcdef0"

// scenarioYAML is an account with a queue, a short boot, a delay to Ready,
// and an access entry for one of its two roles.
const scenarioYAML = `apiVersion: stevedore.io/v1alpha1
kind: Scenario
metadata: {name: account-test}
spec:
  seed: 3
  cluster: {name: demo, kubernetesVersion: "1.33"}
  aws:
    region: eu-west-1
    zones: [eu-west-1a, eu-west-1b]
    images: [{id: ` + image + `, name: test-image}]
    roles: [KarpenterNodeRole-demo, Outsider]
    accessEntries: [KarpenterNodeRole-demo]
    interruptionQueue: demo-queue
    instanceTypes: [m6i.large, c6i.large]
    bootTime: 20s
    readyTime: 5s
  events:
    - {at: 5m, scale: {kind: Deployment, namespace: web, name: web, replicas: 3}}
`

const deploymentYAML = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: registry.invalid/web:1}]
`

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func loadTest(t *testing.T, clk *clocktesting.FakeClock) *Account {
	t.Helper()
	dir := writeFiles(t, map[string]string{"scenario.yaml": scenarioYAML, "web.yaml": deploymentYAML})
	acc, err := Load(dir, Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return acc
}

func TestLoadBuildsTheScenarioAccount(t *testing.T) {
	acc := loadTest(t, clocktesting.NewFakeClock(epoch))
	want := Info{ClusterName: "demo", Region: "eu-west-1", KubernetesVersion: "1.33", InterruptionQueue: "demo-queue"}
	if acc.Info != want {
		t.Errorf("info %+v, want %+v", acc.Info, want)
	}
	if acc.BootTime != 20*time.Second || acc.ReadyTime != 5*time.Second {
		t.Errorf("boot %s, ready %s", acc.BootTime, acc.ReadyTime)
	}
	ctx := context.Background()
	c := acc.Clients()
	subnets, err := c.EC2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{{Name: aws.String("tag:karpenter.sh/discovery"), Values: []string{"demo"}}}})
	if err != nil || len(subnets.Subnets) != 2 {
		t.Errorf("discoverable subnets: %v, %v", subnets, err)
	}
	if _, err := c.SQS.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("demo-queue")}); err != nil {
		t.Errorf("interruption queue: %v", err)
	}
	if imgs, err := c.EC2.DescribeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{image}}); err != nil || len(imgs.Images) != 1 {
		t.Errorf("scenario image: %v, %v", imgs, err)
	}
	if !acc.AWS.AccessEntryAllows("KarpenterNodeRole-demo") || acc.AWS.AccessEntryAllows("Outsider") {
		t.Error("access entries do not follow spec.aws.accessEntries")
	}
	if got := strings.Join(acc.Ignored, "; "); !strings.Contains(got, "1 events") || !strings.Contains(got, "1 Deployment") {
		t.Errorf("ignored: %q", got)
	}
}

func TestLoadErrors(t *testing.T) {
	for _, tc := range []struct {
		name, content, want string
	}{
		{"no scenario", deploymentYAML, "holds no Scenario"},
		{"unknown field", strings.Replace(scenarioYAML, "bootTime:", "bootTme:", 1), "spec.aws.bootTme"},
		{"bad duration", strings.Replace(scenarioYAML, "bootTime: 20s", "bootTime: soon", 1), "spec.aws.bootTime"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeFiles(t, map[string]string{"a.yaml": tc.content})
			_, err := Load(filepath.Join(dir, "a.yaml"), Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.yaml"), Options{}); err == nil {
		t.Error("a missing file loaded")
	}
}

func TestApply(t *testing.T) {
	info := Info{ClusterName: "demo", InterruptionQueue: "q"}
	var s settings.Settings
	if err := Apply(info, &s); err != nil || s.ClusterName != "demo" || s.InterruptionQueue != "q" {
		t.Errorf("empty settings: %+v, %v", s, err)
	}
	s = settings.Settings{ClusterName: "demo", InterruptionQueue: "mine"}
	if err := Apply(info, &s); err != nil || s.InterruptionQueue != "mine" {
		t.Errorf("own queue: %+v, %v", s, err)
	}
	s = settings.Settings{ClusterName: "other"}
	if err := Apply(info, &s); err == nil || !strings.Contains(err.Error(), `"demo"`) {
		t.Errorf("another cluster's name: %v", err)
	}
}

// launch starts one instance of the node role through c, as the provider
// does: an instance profile, a launch template and an instant fleet.
func launch(t *testing.T, c sdk.Clients, role, capacityType string) string {
	t.Helper()
	ctx := context.Background()
	profile := "profile-" + role
	if _, err := c.IAM.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String(profile)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.IAM.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String(profile), RoleName: aws.String(role)}); err != nil {
		t.Fatal(err)
	}
	lt := "lt-" + role
	if _, err := c.EC2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(lt),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
			ImageId:            aws.String(image),
			IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String(profile)},
		},
	}); err != nil {
		t.Fatal(err)
	}
	out, err := c.EC2.CreateFleet(ctx, &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityType(capacityType),
		},
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(lt), Version: aws.String("$Latest")},
			Overrides:                   []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: "m6i.large", AvailabilityZone: aws.String("eu-west-1a")}},
		}},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: []ec2types.Tag{
			{Key: aws.String(wellknown.TagEKSClusterName), Value: aws.String("demo")},
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Instances) != 1 || len(out.Instances[0].InstanceIds) != 1 {
		t.Fatalf("fleet: %+v", out)
	}
	return out.Instances[0].InstanceIds[0]
}

func TestKubeletsHonourBootTimeAndAccessEntries(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	acc := loadTest(t, clk)
	kube := clientfake.NewClientBuilder().Build()
	k := acc.Kubelets(kube)
	ctx := context.Background()

	joins := launch(t, acc.Clients(), "KarpenterNodeRole-demo", "on-demand")
	refused := launch(t, acc.Clients(), "Outsider", "on-demand")
	sync := func() []Change {
		t.Helper()
		changes, err := k.Sync(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return changes
	}
	nodes := func() []corev1.Node {
		t.Helper()
		list := &corev1.NodeList{}
		if err := kube.List(ctx, list); err != nil {
			t.Fatal(err)
		}
		return list.Items
	}

	clk.Step(acc.BootTime - time.Second)
	if changes := sync(); len(changes) != 0 || len(nodes()) != 0 {
		t.Fatalf("before the boot time: %+v, %d nodes", changes, len(nodes()))
	}
	clk.Step(time.Second)
	changes := sync()
	if len(changes) != 2 {
		t.Fatalf("changes after boot: %+v", changes)
	}
	for _, c := range changes {
		if c.Instance == refused && (c.Registered || !strings.Contains(c.Message, "no access entry")) {
			t.Errorf("refused instance: %+v", c)
		}
	}
	got := nodes()
	if len(got) != 1 {
		t.Fatalf("%d nodes, want the admitted instance's", len(got))
	}
	n := got[0]
	info, _ := acc.AWS.Instance(joins)
	switch {
	case n.Name != info.PrivateDNSName:
		t.Errorf("node name %s, instance DNS name %s", n.Name, info.PrivateDNSName)
	case n.Spec.ProviderID != "aws:///eu-west-1a/"+joins:
		t.Errorf("provider ID %s", n.Spec.ProviderID)
	case n.Annotations[KWOKAnnotation] != KWOKValue || n.Annotations[ReadyDelayAnnotation] != "5s":
		t.Errorf("annotations %v", n.Annotations)
	case !slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == wellknown.UnregisteredTaint().Key }):
		t.Errorf("taints %v: no unregistered taint", n.Spec.Taints)
	case n.Labels[wellknown.LabelInstanceType] != "m6i.large" || n.Status.Allocatable.Cpu().IsZero():
		t.Errorf("labels %v, allocatable %v", n.Labels, n.Status.Allocatable)
	}
	if changes := sync(); len(changes) != 0 {
		t.Errorf("a second sync changed %+v", changes)
	}

	// Termination: the Node goes once the instance has terminated.
	if _, err := acc.Clients().EC2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{joins}}); err != nil {
		t.Fatal(err)
	}
	if changes := sync(); len(changes) != 0 || len(nodes()) != 1 {
		t.Errorf("shutting down: %+v, %d nodes", changes, len(nodes()))
	}
	clk.Step(time.Minute)
	if changes := sync(); len(changes) != 1 || changes[0].Registered || len(nodes()) != 0 {
		t.Errorf("terminated: %+v, %d nodes", changes, len(nodes()))
	}
	if err := kube.Get(ctx, client.ObjectKey{Name: n.Name}, &corev1.Node{}); !apierrors.IsNotFound(err) {
		t.Errorf("node of the terminated instance: %v", err)
	}
}

func TestLongPollWaitsForAMessage(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	acc := loadTest(t, clk)
	ctx := context.Background()
	c := acc.Clients()
	url, err := c.SQS.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("demo-queue")})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan int, 1)
	go func() {
		out, err := c.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url.QueueUrl, WaitTimeSeconds: 20})
		if err != nil {
			t.Error(err)
		}
		got <- len(out.Messages)
	}()
	waitForWaiter(t, clk)
	if err := acc.AWS.SendMessageBody("demo-queue", "{}"); err != nil {
		t.Fatal(err)
	}
	clk.Step(longPollInterval)
	if n := <-got; n != 1 {
		t.Errorf("received %d messages, want the one sent while waiting", n)
	}

	// Nothing arrives: the answer comes, empty, after the wait time.
	go func() {
		out, _ := c.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url.QueueUrl, WaitTimeSeconds: 1})
		got <- len(out.Messages)
	}()
	for range 5 {
		waitForWaiter(t, clk)
		clk.Step(longPollInterval)
	}
	if n := <-got; n != 0 {
		t.Errorf("received %d messages from an empty queue", n)
	}
}

func waitForWaiter(t *testing.T, clk *clocktesting.FakeClock) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("ReceiveMessage did not wait")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestServedAccount(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	acc := loadTest(t, clk)
	l, err := ListenLoopback("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- acc.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Error(err)
		}
	})

	remote, err := Dial(ctx, "http://"+l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if remote.Info != acc.Info {
		t.Errorf("remote info %+v, local %+v", remote.Info, acc.Info)
	}
	rc := remote.Clients()
	id := launch(t, rc, "KarpenterNodeRole-demo", "spot")
	if info, ok := acc.AWS.Instance(id); !ok || info.CapacityType != "spot" || info.Role != "KarpenterNodeRole-demo" {
		t.Fatalf("instance launched through the served account: %+v", info)
	}

	// The same answers as the account's own clients.
	in := &ec2.DescribeInstancesInput{InstanceIds: []string{id}}
	local, err := acc.Clients().EC2.DescribeInstances(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := rc.EC2.DescribeInstances(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	lj, _ := json.Marshal(local)
	gj, _ := json.Marshal(got)
	if string(lj) != string(gj) {
		t.Errorf("DescribeInstances differs:\nlocal  %s\nserved %s", lj, gj)
	}
	if got.Reservations[0].Instances[0].LaunchTime == nil || !got.Reservations[0].Instances[0].LaunchTime.Equal(epoch) {
		t.Errorf("launch time %v", got.Reservations[0].Instances[0].LaunchTime)
	}

	// Errors keep their code, service, operation, status and, where the
	// provider looks for one, their type.
	_, err = rc.EC2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{"i-0000000000000000f"}})
	var ae smithy.APIError
	var oe *smithy.OperationError
	var re *awshttp.ResponseError
	if !errors.As(err, &ae) || ae.ErrorCode() != "InvalidInstanceID.NotFound" || !errors.As(err, &oe) || oe.ServiceID != "EC2" ||
		oe.OperationName != "TerminateInstances" || !errors.As(err, &re) || re.HTTPStatusCode() != http.StatusBadRequest {
		t.Errorf("terminating an unknown instance: %v", err)
	}
	_, err = rc.IAM.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String("missing")})
	var nse *iamtypes.NoSuchEntityException
	if !errors.As(err, &nse) || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing instance profile: %v", err)
	}
	_, err = rc.SQS.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("nope")})
	var qne *sqstypes.QueueDoesNotExist
	if !errors.As(err, &qne) {
		t.Errorf("missing queue: %v", err)
	}
	// ARC zonal shifts are served too, for --enable-zonal-shift.
	if _, err := acc.AWS.StartZonalShift("demo", "eu-west-1a", time.Hour, ""); err != nil {
		t.Fatal(err)
	}
	arn := "arn:aws:eks:eu-west-1:" + fake.DefaultAccountID + ":cluster/demo"
	mr, err := rc.ARCZonalShift.GetManagedResource(ctx, &arczonalshift.GetManagedResourceInput{ResourceIdentifier: aws.String(arn)})
	if err != nil || len(mr.ZonalShifts) != 1 || aws.ToString(mr.ZonalShifts[0].AwayFrom) != "euw1-az1" {
		t.Errorf("zonal shifts through the served account: %+v, %v", mr, err)
	}
	_, err = rc.ARCZonalShift.GetManagedResource(ctx, &arczonalshift.GetManagedResourceInput{ResourceIdentifier: aws.String(arn + "x")})
	var rnf *arctypes.ResourceNotFoundException
	if !errors.As(err, &rnf) {
		t.Errorf("unregistered resource: %v", err)
	}
	acc.AWS.Throttle("DescribeSubnets", 1)
	_, err = rc.EC2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
	if !errors.As(err, &ae) || ae.ErrorCode() != "RequestLimitExceeded" || ae.ErrorFault() != smithy.FaultClient {
		t.Errorf("throttled: %v", err)
	}
}

func TestLoopbackOnly(t *testing.T) {
	if _, err := ListenLoopback("0.0.0.0:0"); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("listening on every address: %v", err)
	}
	for _, u := range []string{"http://10.0.0.1:8080", "https://127.0.0.1:8080", "file:///account.yaml"} {
		if _, err := Dial(context.Background(), u); err == nil || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("Dial(%s): %v", u, err)
		}
	}
	if !IsURL("http://127.0.0.1:1") || IsURL("examples/drift-upgrade") {
		t.Error("IsURL")
	}
}
