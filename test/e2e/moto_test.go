//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/catalog"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/iampolicy"
	"github.com/stevedore-autoscaler/stevedore/test/e2e/cluster"
	"github.com/stevedore-autoscaler/stevedore/test/moto"
)

// motoAccount is what a real account has for a cluster, written into moto
// through the AWS SDK: a VPC with three subnets and a security group tagged
// for discovery, the node role, the EKS cluster and the interruption queue.
type motoAccount struct {
	cluster, region, image string
	ec2                    *ec2.Client
}

func setUpMotoAccount(t *testing.T, cfg aws.Config, cluster string) motoAccount {
	t.Helper()
	ctx := t.Context()
	a := motoAccount{cluster: cluster, region: cfg.Region, ec2: ec2.NewFromConfig(cfg)}
	discovery := []ec2types.Tag{{Key: aws.String("karpenter.sh/discovery"), Value: aws.String(cluster)}}
	vpc, err := a.ec2.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: aws.String("10.0.0.0/16")})
	if err != nil {
		t.Fatal(err)
	}
	var subnets []string
	for i, zone := range []string{"a", "b", "c"} {
		s, err := a.ec2.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: vpc.Vpc.VpcId, AvailabilityZone: aws.String(cfg.Region + zone),
			CidrBlock:         aws.String(fmt.Sprintf("10.0.%d.0/19", i*32)),
			TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeSubnet, Tags: discovery}}})
		if err != nil {
			t.Fatal(err)
		}
		subnets = append(subnets, *s.Subnet.SubnetId)
	}
	if _, err := a.ec2.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String("nodes"), Description: aws.String("nodes"), VpcId: vpc.Vpc.VpcId,
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeSecurityGroup, Tags: discovery}}}); err != nil {
		t.Fatal(err)
	}
	// An image of moto's own (moto keeps AMIs of Amazon's account); the
	// EC2NodeClass selects it by ID.
	images, err := a.ec2.DescribeImages(ctx, &ec2.DescribeImagesInput{Owners: []string{"amazon"},
		Filters: []ec2types.Filter{{Name: aws.String("architecture"), Values: []string{"x86_64"}}}})
	if err != nil || len(images.Images) == 0 {
		t.Fatalf("moto's x86_64 images: %v (%d)", err, len(images.Images))
	}
	a.image = *images.Images[0].ImageId
	trust, _ := json.Marshal(map[string]any{"Version": "2012-10-17", "Statement": []any{map[string]any{
		"Effect": "Allow", "Principal": map[string]any{"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}}})
	role, err := iam.NewFromConfig(cfg).CreateRole(ctx, &iam.CreateRoleInput{RoleName: aws.String("KarpenterNodeRole-" + cluster), AssumeRolePolicyDocument: aws.String(string(trust))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eks.NewFromConfig(cfg).CreateCluster(ctx, &eks.CreateClusterInput{Name: aws.String(cluster), Version: aws.String("1.33"), RoleArn: role.Role.Arn,
		ResourcesVpcConfig: &ekstypes.VpcConfigRequest{SubnetIds: subnets}}); err != nil {
		t.Fatal(err)
	}
	if _, err := sqs.NewFromConfig(cfg).CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(cluster)}); err != nil {
		t.Fatal(err)
	}
	return a
}

// motoKubelets plays the kubelet of every instance of the cluster that moto
// runs: a KWOK Node with the instance's provider ID, name and labels, and
// the karpenter.sh/unregistered taint the node's bootstrap would give it;
// the Node goes once the instance is terminated. moto starts no machine, so
// this is the part of EC2 and the kubelet the test stands in for.
func motoKubelets(ctx context.Context, t *testing.T, a motoAccount) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(500 * time.Millisecond):
			}
			out, err := a.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
				{Name: aws.String("tag:" + wellknown.TagEKSClusterName), Values: []string{a.cluster}}}})
			if err != nil {
				continue
			}
			for _, r := range out.Reservations {
				for _, in := range r.Instances {
					syncNode(ctx, t, in)
				}
			}
		}
	})
	return func() { cancel(); wg.Wait() }
}

func syncNode(ctx context.Context, t *testing.T, in ec2types.Instance) {
	name := aws.ToString(in.PrivateDnsName)
	node := &corev1.Node{}
	err := kube.Get(ctx, client.ObjectKey{Name: name}, node)
	switch state := in.State.Name; {
	case state == ec2types.InstanceStateNameTerminated || state == ec2types.InstanceStateNameShuttingDown:
		if err == nil {
			_ = kube.Delete(ctx, node)
		}
	case apierrors.IsNotFound(err):
		it, ok := catalog.Lookup(string(in.InstanceType))
		if !ok {
			t.Errorf("moto launched %s, which is not in the catalog", in.InstanceType)
			return
		}
		zone := aws.ToString(in.Placement.AvailabilityZone)
		labels := map[string]string{wellknown.LabelHostname: name, wellknown.LabelTopologyZone: zone, wellknown.LabelTopologyRegion: zone[:len(zone)-1]}
		for k, v := range it.Labels {
			labels[k] = v
		}
		n := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: map[string]string{cluster.KWOKNodeAnnotation: cluster.KWOKNodeValue}},
			Spec: corev1.NodeSpec{ProviderID: "aws:///" + zone + "/" + aws.ToString(in.InstanceId),
				Taints: []corev1.Taint{wellknown.UnregisteredTaint()}},
			Status: corev1.NodeStatus{Capacity: it.Capacity.DeepCopy(), Allocatable: it.Allocatable.DeepCopy(),
				NodeInfo: corev1.NodeSystemInfo{Architecture: it.Arch(), OperatingSystem: "linux"}},
		}
		if err := kube.Create(ctx, n); err != nil && !apierrors.IsAlreadyExists(err) && ctx.Err() == nil {
			t.Errorf("creating the Node of %s: %v", aws.ToString(in.InstanceId), err)
		}
	}
}

// TestMotoProvisioning runs the controller with its production AWS clients
// (aws-sdk-go-v2, request signing, the EC2 query and JSON protocols) against
// moto, an AWS emulator, on loopback: the EC2NodeClass resolves its subnets,
// security groups, image and instance profile and becomes Ready; pending
// pods get a NodeClaim launched with CreateFleet from a launch template;
// once the pods are gone the empty node is consolidated and its instance
// terminated in moto.
//
// moto's gaps it works around: no instance boots, so motoKubelets makes the
// Nodes; moto has no Price List API, so the controller runs on its
// built-in prices (its log says so once); moto refuses parameters under
// /aws/ and has none for EKS images, so the EC2NodeClass selects its image
// by ID rather than by an alias.
func TestMotoProvisioning(t *testing.T) {
	server := moto.Start(t)
	cfg := server.Config("us-west-2")
	acc := setUpMotoAccount(t, cfg, "e2e-moto")
	stop := motoKubelets(t.Context(), t, acc)
	t.Cleanup(stop)

	c := startController(t, controllerOptions{name: "stevedore-moto", leaderElectionID: "stevedore-e2e-moto-" + suffix(),
		cloud: []string{"--cloud=aws", "--cluster-name=" + acc.cluster, "--interruption-queue=" + acc.cluster},
		env: []string{"AWS_ENDPOINT_URL=" + server.URL, "AWS_REGION=" + acc.region,
			"AWS_ACCESS_KEY_ID=testing", "AWS_SECRET_ACCESS_KEY=testing", "AWS_EC2_METADATA_DISABLED=true"}})
	pool := "moto-" + suffix()
	createPool(t, poolSpec{Name: pool, Cluster: acc.cluster, AMI: acc.image,
		Disruption: "    consolidationPolicy: WhenEmpty\n    consolidateAfter: 5s"})
	ns := newNamespace(t, "moto")
	create(t, workloadYAML, workloadSpec{Name: "web", Namespace: ns, Pool: pool, Replicas: 2, CPU: "1", Memory: "1Gi"})
	waitRunning(t, 3*time.Minute, ns, "web", 2)

	s, err := readPool(t.Context(), pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.claims) == 0 {
		t.Fatal("no NodeClaim")
	}
	id := s.claims[0].Status.ProviderID
	instance := id[strings.LastIndex(id, "/")+1:]
	out, err := acc.ec2.DescribeInstances(t.Context(), &ec2.DescribeInstancesInput{InstanceIds: []string{instance}})
	if err != nil || len(out.Reservations) != 1 {
		t.Fatalf("the NodeClaim's instance %s in moto: %v", instance, err)
	}
	in := out.Reservations[0].Instances[0]
	tags := map[string]string{}
	for _, tg := range in.Tags {
		tags[aws.ToString(tg.Key)] = aws.ToString(tg.Value)
	}
	if tags[wellknown.LabelNodePool] != pool || tags[wellknown.TagEKSClusterName] != acc.cluster || aws.ToString(in.ImageId) != acc.image {
		t.Errorf("instance %s: image %s, tags %v", instance, aws.ToString(in.ImageId), tags)
	}
	t.Logf("NodeClaim %s runs moto's instance %s (%s)", s.claims[0].Name, instance, in.InstanceType)

	if err := scale(t.Context(), ns, "web", 0); err != nil {
		t.Fatal(err)
	}
	eventually(t, 3*time.Minute, "the empty node consolidated and its instance terminated in moto", func(ctx context.Context) error {
		out, err := acc.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{instance}})
		if err != nil {
			return err
		}
		if st := out.Reservations[0].Instances[0].State.Name; st != ec2types.InstanceStateNameTerminated {
			return fmt.Errorf("instance %s is %s", instance, st)
		}
		return nil
	})
	checkCallsInPolicy(t, c, acc)
}

// checkCallsInPolicy reads which AWS calls the controller made from its
// aws_sdk_go_request_total series (one per service and action) and checks
// each against the policy `stevedore iam-policy` prints for the cluster: the
// call is in the provider's inventory as the controller's, and each IAM
// action it needs is allowed by a statement of the policy. This is the
// action-level part of the evaluation; the resource and condition part is
// made on the in-memory AWS (TestControllerCallsUnderKarpentersPolicy),
// where every request is recorded with its input.
func checkCallsInPolicy(t *testing.T, c *controller, acc motoAccount) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, c.metrics, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	pol := iampolicy.ControllerPolicy(iampolicy.Params{ClusterName: acc.cluster, AccountID: "123456789012", Region: acc.region,
		NodeRoleName: "KarpenterNodeRole-" + acc.cluster, QueueName: acc.cluster})
	allowed := func(action string) bool {
		for _, s := range pol.Statement {
			for _, a := range s.Action {
				if s.Effect == "Allow" && strings.EqualFold(a, action) {
					return true
				}
			}
		}
		return false
	}
	series := regexp.MustCompile(`(?m)^aws_sdk_go_request_total\{([^}]*)\}`).FindAllStringSubmatch(string(body), -1)
	label := func(set, name string) string {
		m := regexp.MustCompile(name + `="([^"]*)"`).FindStringSubmatch(set)
		if m == nil {
			return ""
		}
		return m[1]
	}
	calls := map[string]bool{}
	for _, s := range series {
		service, action := label(s[1], "service"), label(s[1], "action")
		key := service + " " + action
		if calls[key] {
			continue
		}
		calls[key] = true
		call, ok := iampolicy.Lookup(service, action)
		if !ok || call.Caller != iampolicy.CallerController {
			t.Errorf("the controller called %s %s, which the provider's inventory does not give it (%v, %s)", service, action, ok, call.Caller)
			continue
		}
		for _, g := range call.Grants {
			if !allowed(g.Action) {
				t.Errorf("%s %s needs %s, which the generated policy does not allow", service, action, g.Action)
			}
		}
	}
	for _, must := range []string{"EC2 CreateFleet", "EC2 CreateLaunchTemplate", "EC2 TerminateInstances", "IAM CreateInstanceProfile", "SQS ReceiveMessage"} {
		if !calls[must] {
			t.Errorf("no %s among the calls the controller made: %v", must, calls)
		}
	}
	t.Logf("%d kinds of AWS call made, all in the generated policy's actions", len(calls))
	// moto has no Price List API: the controller says it runs on its
	// built-in prices.
	if !regexp.MustCompile(`(?m)^stevedore_pricing_fallback 1$`).Match(body) {
		t.Error("stevedore_pricing_fallback is not 1 against moto, which has no Price List API")
	}
}
