//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/iampolicy"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/interruption"
	"github.com/stevedore-autoscaler/stevedore/test/moto"
)

// motoWorld is a moto server with a cluster's account in it, the proxy the
// controller reaches it through, and the kubelets of its instances.
type motoWorld struct {
	acc   *moto.Account
	proxy *moto.Proxy
	authz *moto.Authorizer
	ec2   *ec2.Client
	iam   *iam.Client
	sqs   *sqs.Client
	// version is the cluster's Kubernetes version, for the image aliases.
	version string
	// nextRole is the node role the test moves a class to, if it has.
	nextRole string
}

func newMotoWorld(t *testing.T, cluster, region string) *motoWorld {
	t.Helper()
	server := moto.Start(t)
	cfg := server.Config(region)
	acc, err := moto.SetUpAccount(t.Context(), cfg, cluster)
	if err != nil {
		t.Fatalf("writing the account into moto: %v\n%s", err, server.Output())
	}
	proxy, err := server.StartProxy(region)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// A fleet the proxy could not complete would leave its instances
		// with moto's default security group: say so rather than let the
		// node drift for a reason of moto's.
		for _, err := range proxy.FleetErrors() {
			t.Errorf("the proxy could not complete a CreateFleet answer: %v", err)
		}
		_ = proxy.Close()
	})
	v, err := discovery.NewDiscoveryClientForConfigOrDie(testCluster.Config).ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	w := &motoWorld{acc: acc, proxy: proxy, authz: moto.NewAuthorizer(cfg, proxy),
		ec2: ec2.NewFromConfig(cfg), iam: iam.NewFromConfig(cfg), sqs: sqs.NewFromConfig(cfg),
		version: v.Major + "." + strings.TrimSuffix(v.Minor, "+")}
	if err := moto.PublishImages(proxy, w.version, acc.ImageAMD64, acc.ImageARM64); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		moto.RunKubelets(ctx, w.ec2, cluster, kube, func(err error) { t.Errorf("kubelets: %v", err) })
	}()
	t.Cleanup(func() { cancel(); <-done })
	return w
}

// instance returns moto's instance by ID.
func (w *motoWorld) instance(ctx context.Context, id string) (ec2types.Instance, error) {
	out, err := w.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		return ec2types.Instance{}, err
	}
	if len(out.Reservations) != 1 || len(out.Reservations[0].Instances) != 1 {
		return ec2types.Instance{}, fmt.Errorf("instance %s: %d reservations", id, len(out.Reservations))
	}
	return out.Reservations[0].Instances[0], nil
}

// templates returns the cluster's launch templates in moto, by name, with
// the image of their latest version.
func (w *motoWorld) templates(ctx context.Context) (map[string]string, error) {
	out, err := w.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:" + wellknown.TagEKSClusterName), Values: []string{w.acc.Cluster}}}})
	if err != nil {
		return nil, err
	}
	images := map[string]string{}
	for _, lt := range out.LaunchTemplates {
		v, err := w.ec2.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{
			LaunchTemplateId: lt.LaunchTemplateId, Versions: []string{"$Latest"}})
		if err != nil {
			return nil, err
		}
		if len(v.LaunchTemplateVersions) > 0 && v.LaunchTemplateVersions[0].LaunchTemplateData != nil {
			images[aws.ToString(lt.LaunchTemplateName)] = aws.ToString(v.LaunchTemplateVersions[0].LaunchTemplateData.ImageId)
		}
	}
	return images, nil
}

// injected counts the calls of an operation the proxy failed, and those
// moto answered after the first failure.
func (w *motoWorld) injected(service, op string) (failed, answeredAfter int) {
	for _, c := range w.proxy.Calls() {
		if c.Service != service || c.Operation != op {
			continue
		}
		if c.Injected != "" {
			failed++
		} else if failed > 0 && c.Status == http.StatusOK {
			answeredAfter++
		}
	}
	return failed, answeredAfter
}

// instanceOf returns the instance ID of a NodeClaim.
func instanceOf(nc *karpv1.NodeClaim) string {
	id := nc.Status.ProviderID
	return id[strings.LastIndex(id, "/")+1:]
}

// TestMotoLifecycle runs the controller with its production AWS clients
// (aws-sdk-go-v2, request signing, the EC2 and IAM query protocols, SSM's
// and SQS's JSON protocols, EKS's REST protocol) against moto, an AWS
// emulator, on loopback, through a proxy that records every call. One
// NodePool of spot amd64 capacity with an al2023@latest EC2NodeClass goes
// through a node's whole life:
//
//  1. the EC2NodeClass resolves its subnets, security group, image (through
//     the alias's SSM parameters) and instance profile, and becomes Ready; a
//     Bottlerocket class resolves its images as well;
//  2. a pending pod gets a NodeClaim launched with CreateFleet from a
//     launch template carrying the image and instance profile, while the
//     first two CreateFleet calls are throttled (the SDK retries them);
//  3. a malformed message and a spot interruption warning arrive on the SQS
//     queue: the first is dropped, the second replaces the node;
//  4. the alias's parameter moves to a new image: the node drifts and is
//     replaced on the new image, and the old image's launch template is
//     collected once unused;
//  5. the pod goes, the empty node is consolidated, and its instance is
//     terminated although the first four TerminateInstances calls fail;
//  6. the NodePool and EC2NodeClasses are deleted: their instance profiles
//     and launch templates are deleted in moto.
//
// Every call the controller made is then evaluated, request by request with
// its resources and condition keys, against the policy `stevedore
// iam-policy` prints.
//
// moto's gaps it works around, each in the test's code: no instance boots,
// so moto.RunKubelets makes the Nodes; moto has no EKS-optimized image
// parameters and refuses to store any under /aws/, so the proxy answers
// them (moto.PublishImages); moto cannot throttle or fail a call, so the
// proxy does (moto.Proxy.Fail); EC2 does not send spot interruptions in
// moto, so the test writes the EventBridge message to the queue itself;
// moto has no Price List API, so the controller runs on its built-in prices
// and says so.
func TestMotoLifecycle(t *testing.T) {
	const region = "us-west-2"
	w := newMotoWorld(t, "e2e-moto", region)
	acc := w.acc
	c := startController(t, controllerOptions{name: "stevedore-moto", leaderElectionID: "stevedore-e2e-moto-" + suffix(),
		cloud: []string{"--cloud=aws", "--cluster-name=" + acc.Cluster, "--interruption-queue=" + acc.Queue},
		env: []string{"AWS_ENDPOINT_URL=" + w.proxy.URL, "AWS_REGION=" + region,
			"AWS_ACCESS_KEY_ID=testing", "AWS_SECRET_ACCESS_KEY=testing", "AWS_EC2_METADATA_DISABLED=true"}})
	t.Cleanup(func() {
		if t.Failed() {
			logEvents(t, "NodeClaim", "Node", "NodePool", "EC2NodeClass")
		}
	})
	pool := "moto-" + suffix()
	createPool(t, poolSpec{Name: pool, Cluster: acc.Cluster, Alias: "al2023@latest", CapacityType: wellknown.CapacityTypeSpot,
		Requirements: []string{"{key: kubernetes.io/arch, operator: In, values: [amd64]}"},
		Disruption:   "    consolidationPolicy: WhenEmpty\n    consolidateAfter: 5s"})
	bottlerocket := "moto-br-" + suffix()
	create(t, `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: {{.Name}}}
spec:
  role: KarpenterNodeRole-{{.Cluster}}
  amiSelectorTerms: [{alias: bottlerocket@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: {{.Cluster}}}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: {{.Cluster}}}}]
`, poolSpec{Name: bottlerocket, Cluster: acc.Cluster})

	t.Log("1. the EC2NodeClasses resolve through moto and become Ready")
	profiles := map[string]string{}
	for name, want := range map[string][]string{pool: {acc.ImageAMD64, acc.ImageARM64}, bottlerocket: {acc.ImageAMD64, acc.ImageARM64}} {
		eventually(t, 2*time.Minute, "EC2NodeClass "+name+" Ready with its alias's images", func(ctx context.Context) error {
			nc := &awsv1.EC2NodeClass{}
			if err := kube.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
				return err
			}
			if !nodeClassReady(nc) {
				return fmt.Errorf("not Ready: %+v", nc.Status.Conditions)
			}
			var got []string
			for _, ami := range nc.Status.AMIs {
				got = append(got, ami.ID)
			}
			slices.Sort(got)
			if got = slices.Compact(got); !slices.Equal(got, sorted(want)) {
				return fmt.Errorf("status.amis %v, want %v", got, sorted(want))
			}
			if len(nc.Status.Subnets) != 3 || len(nc.Status.SecurityGroups) != 1 || nc.Status.InstanceProfile == "" {
				return fmt.Errorf("subnets %v, security groups %v, instance profile %q", nc.Status.Subnets, nc.Status.SecurityGroups, nc.Status.InstanceProfile)
			}
			profiles[name] = nc.Status.InstanceProfile
			return nil
		})
		p, err := w.iam.GetInstanceProfile(t.Context(), &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(profiles[name])})
		if err != nil || len(p.InstanceProfile.Roles) != 1 || aws.ToString(p.InstanceProfile.Roles[0].RoleName) != acc.NodeRole {
			t.Fatalf("instance profile %s of %s in moto: %v", profiles[name], name, err)
		}
	}

	t.Log("2. a pending pod is launched for with CreateFleet, through two throttled calls")
	w.proxy.Fail(moto.Fault{Service: "EC2", Operation: "CreateFleet", Code: "RequestLimitExceeded", Status: http.StatusServiceUnavailable, Times: 2})
	ns := newNamespace(t, "moto")
	create(t, workloadYAML, workloadSpec{Name: "web", Namespace: ns, Pool: pool, Replicas: 1, CPU: "1", Memory: "1Gi"})
	waitRunning(t, 3*time.Minute, ns, "web", 1)
	if failed, after := w.injected("EC2", "CreateFleet"); failed != 2 || after == 0 {
		t.Errorf("CreateFleet: %d calls throttled and %d answered after them, want 2 and at least 1", failed, after)
	}
	first := onlyClaim(t, pool)
	in, err := w.instance(t.Context(), instanceOf(first))
	if err != nil {
		t.Fatal(err)
	}
	tags := map[string]string{}
	for _, tg := range in.Tags {
		tags[aws.ToString(tg.Key)] = aws.ToString(tg.Value)
	}
	if tags[wellknown.LabelNodePool] != pool || tags[wellknown.TagEKSClusterName] != acc.Cluster || tags[wellknown.TagNodeClaim] != first.Name ||
		aws.ToString(in.ImageId) != acc.ImageAMD64 || in.InstanceLifecycle != ec2types.InstanceLifecycleTypeSpot {
		t.Errorf("instance %s: image %s, lifecycle %s, tags %v", aws.ToString(in.InstanceId), aws.ToString(in.ImageId), in.InstanceLifecycle, tags)
	}
	checkLaunchTemplates(t, w, acc.ImageAMD64, profiles[pool])
	t.Logf("NodeClaim %s runs moto's spot instance %s (%s)", first.Name, aws.ToString(in.InstanceId), in.InstanceType)

	t.Log("3. a malformed message is dropped and a spot interruption replaces the node")
	interrupted := instanceOf(first)
	sendMessage(t, w, "this is not an EventBridge event")
	sendMessage(t, w, spotInterruption(acc, interrupted))
	second := waitReplaced(t, w, pool, ns, first.Name, interrupted)
	eventually(t, time.Minute, "the interruption queue emptied", func(ctx context.Context) error {
		out, err := w.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(acc.QueueURL),
			AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
		if err != nil {
			return err
		}
		for k, v := range out.Attributes {
			if v != "0" {
				return fmt.Errorf("%s = %s", k, v)
			}
		}
		return nil
	})

	t.Log("4. a new image release drifts the node onto it; the old launch template is collected")
	if err := moto.PublishImages(w.proxy, w.version, acc.ImageAMD64Next, acc.ImageARM64); err != nil {
		t.Fatal(err)
	}
	// The class is resolved again every five minutes; any change to it
	// wakes its controller sooner.
	touch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"e2e.stevedore.dev/release":"next"}}}`))
	if err := kube.Patch(t.Context(), &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: pool}}, touch); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "the new release in the EC2NodeClass's status.amis", func(ctx context.Context) error {
		nc := &awsv1.EC2NodeClass{}
		if err := kube.Get(ctx, client.ObjectKey{Name: pool}, nc); err != nil {
			return err
		}
		for _, ami := range nc.Status.AMIs {
			if ami.ID == acc.ImageAMD64 {
				return fmt.Errorf("status.amis still has %s: %+v", ami.ID, nc.Status.AMIs)
			}
		}
		return nil
	})
	third := waitReplaced(t, w, pool, ns, second.Name, instanceOf(second))
	if in, err := w.instance(t.Context(), instanceOf(third)); err != nil || aws.ToString(in.ImageId) != acc.ImageAMD64Next {
		t.Errorf("the replacement of the drifted node runs image %s (%v), want the new release %s", aws.ToString(in.ImageId), err, acc.ImageAMD64Next)
	}
	eventually(t, 5*time.Minute, "the old image's launch templates deleted", func(ctx context.Context) error {
		images, err := w.templates(ctx)
		if err != nil {
			return err
		}
		for name, img := range images {
			if img == acc.ImageAMD64 {
				return fmt.Errorf("launch template %s of the old image %s is still there", name, img)
			}
		}
		return nil
	})

	t.Log("5. a new node role: the node drifts onto a new instance profile, and the old profile is collected once unused")
	nextRole := acc.NodeRole + "-next"
	if _, err := w.iam.CreateRole(t.Context(), &iam.CreateRoleInput{RoleName: aws.String(nextRole), AssumeRolePolicyDocument: aws.String(moto.EC2TrustPolicy)}); err != nil {
		t.Fatal(err)
	}
	// A user who changes the role lets the controller pass the new one
	// too (the Bottlerocket class keeps the old): the policies checked
	// below grant iam:PassRole on both.
	w.nextRole = nextRole
	setRole := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"role":%q}}`, nextRole))
	if err := kube.Patch(t.Context(), &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: pool}}, setRole); err != nil {
		t.Fatal(err)
	}
	oldProfile := profiles[pool]
	fourth := waitReplaced(t, w, pool, ns, third.Name, instanceOf(third))
	nc := &awsv1.EC2NodeClass{}
	if err := kube.Get(t.Context(), client.ObjectKey{Name: pool}, nc); err != nil {
		t.Fatal(err)
	}
	profiles[pool] = nc.Status.InstanceProfile
	if got := fourth.Annotations[wellknown.AnnotationInstanceProfileName]; got == oldProfile || got != nc.Status.InstanceProfile {
		t.Errorf("the replacement was launched with instance profile %q; the class's is now %q, the old one %q", got, nc.Status.InstanceProfile, oldProfile)
	}
	eventually(t, 5*time.Minute, "the old role's instance profile "+oldProfile+" deleted", func(ctx context.Context) error {
		_, err := w.iam.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(oldProfile)})
		var nse *iamtypes.NoSuchEntityException
		if errors.As(err, &nse) {
			return nil
		}
		return fmt.Errorf("still there (%v)", err)
	})

	t.Log("6. the empty node is consolidated, through four failed TerminateInstances calls")
	w.proxy.Fail(moto.Fault{Service: "EC2", Operation: "TerminateInstances", Code: "InternalError", Status: http.StatusInternalServerError, Times: 4})
	if err := scale(t.Context(), ns, "web", 0); err != nil {
		t.Fatal(err)
	}
	last := instanceOf(fourth)
	eventually(t, 3*time.Minute, "the empty node consolidated and its instance terminated in moto", func(ctx context.Context) error {
		in, err := w.instance(ctx, last)
		if err != nil {
			return err
		}
		if st := in.State.Name; st != ec2types.InstanceStateNameTerminated {
			return fmt.Errorf("instance %s is %s", last, st)
		}
		return nil
	})
	if failed, after := w.injected("EC2", "TerminateInstances"); failed != 4 || after == 0 {
		t.Errorf("TerminateInstances: %d calls failed and %d answered after them, want 4 and at least 1", failed, after)
	}

	t.Log("7. deleting the NodePool and EC2NodeClasses deletes their instance profiles and launch templates")
	deletePool(t, pool)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	deleteNodeClass(ctx, t, bottlerocket)
	cancel()
	for name, profile := range profiles {
		_, err := w.iam.GetInstanceProfile(t.Context(), &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(profile)})
		var nse *iamtypes.NoSuchEntityException
		if !errors.As(err, &nse) {
			t.Errorf("instance profile %s of deleted EC2NodeClass %s: %v, want NoSuchEntity", profile, name, err)
		}
	}
	if images, err := w.templates(t.Context()); err != nil || len(images) != 0 {
		t.Errorf("launch templates left after the EC2NodeClass was deleted: %v (%v)", images, err)
	}

	checkCallsUnderPolicy(t, c, w)
}

// logEvents logs the cluster's recent events about objects of the kinds,
// oldest first, to explain a failure.
func logEvents(t *testing.T, kinds ...string) {
	list := &corev1.EventList{}
	if err := kube.List(context.Background(), list); err != nil {
		t.Logf("listing events: %v", err)
		return
	}
	evs := slices.DeleteFunc(list.Items, func(e corev1.Event) bool { return !slices.Contains(kinds, e.InvolvedObject.Kind) })
	slices.SortFunc(evs, func(a, b corev1.Event) int { return a.LastTimestamp.Compare(b.LastTimestamp.Time) })
	if len(evs) > 60 {
		evs = evs[len(evs)-60:]
	}
	for _, e := range evs {
		t.Logf("event %s %s/%s %s: %s (x%d)", e.LastTimestamp.Format(time.TimeOnly), e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message, e.Count)
	}
}

// passRoleToo is pol with iam:PassRole granted on roleARN as well, as a
// user grants it before moving an EC2NodeClass to a new node role.
func passRoleToo(pol iampolicy.Policy, roleARN string) iampolicy.Policy {
	out := pol
	out.Statement = slices.Clone(pol.Statement)
	for i, st := range out.Statement {
		if slices.Contains(st.Action, "iam:PassRole") {
			out.Statement[i].Resource = append(slices.Clone(st.Resource), roleARN)
		}
	}
	return out
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}

func nodeClassReady(nc *awsv1.EC2NodeClass) bool {
	for _, c := range nc.Status.Conditions {
		if c.Type == "Ready" {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

// onlyClaim returns the pool's one NodeClaim.
func onlyClaim(t *testing.T, pool string) *karpv1.NodeClaim {
	t.Helper()
	s, err := readPool(t.Context(), pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.claims) != 1 {
		t.Fatalf("pool %s has %d NodeClaims, want 1", pool, len(s.claims))
	}
	return &s.claims[0]
}

// waitReplaced waits until the pool's one NodeClaim is another than old,
// launched and running the workload's pod, and old's instance is
// terminated in moto.
func waitReplaced(t *testing.T, w *motoWorld, pool, ns, old, oldInstance string) *karpv1.NodeClaim {
	t.Helper()
	var out *karpv1.NodeClaim
	eventually(t, 3*time.Minute, "NodeClaim "+old+" replaced and its instance "+oldInstance+" terminated", func(ctx context.Context) error {
		s, err := readPool(ctx, pool)
		if err != nil {
			return err
		}
		if len(s.claims) != 1 || s.claims[0].Name == old || s.claims[0].Status.ProviderID == "" {
			var names []string
			for _, c := range s.claims {
				names = append(names, c.Name)
			}
			return fmt.Errorf("NodeClaims %v", names)
		}
		in, err := w.instance(ctx, oldInstance)
		if err != nil {
			return err
		}
		if in.State.Name != ec2types.InstanceStateNameTerminated {
			return fmt.Errorf("instance %s is %s", oldInstance, in.State.Name)
		}
		out = &s.claims[0]
		return nil
	})
	waitRunning(t, 3*time.Minute, ns, "web", 1)
	return out
}

// checkLaunchTemplates checks what the controller created its launch
// templates with, as the proxy read it off the wire: the alias's image and
// the class's instance profile.
func checkLaunchTemplates(t *testing.T, w *motoWorld, image, profile string) {
	t.Helper()
	n := 0
	for _, c := range w.authz.Calls() {
		in, ok := c.Input.(*ec2.CreateLaunchTemplateInput)
		if !ok {
			continue
		}
		n++
		d := in.LaunchTemplateData
		if aws.ToString(d.ImageId) != image || d.IamInstanceProfile == nil || aws.ToString(d.IamInstanceProfile.Name) != profile {
			t.Errorf("launch template %s created with image %s and profile %+v, want %s and %s",
				aws.ToString(in.LaunchTemplateName), aws.ToString(d.ImageId), d.IamInstanceProfile, image, profile)
		}
	}
	if n == 0 {
		t.Error("no CreateLaunchTemplate call went through the proxy")
	}
}

func sendMessage(t *testing.T, w *motoWorld, body string) {
	t.Helper()
	if _, err := w.sqs.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(w.acc.QueueURL), MessageBody: aws.String(body)}); err != nil {
		t.Fatal(err)
	}
}

// spotInterruption is the EventBridge event EC2 sends two minutes before it
// reclaims a spot instance.
func spotInterruption(acc *moto.Account, instance string) string {
	b, _ := json.Marshal(map[string]any{
		"version": "0", "id": "e2e-" + instance, "detail-type": interruption.DetailTypeSpotInterruption, "source": interruption.SourceEC2,
		"account": moto.AccountID, "time": time.Now().UTC().Format(time.RFC3339), "region": acc.Region,
		"resources": []string{fmt.Sprintf("arn:aws:ec2:%s:%s:instance/%s", acc.Region, moto.AccountID, instance)},
		"detail":    map[string]string{"instance-id": instance, "instance-action": "terminate"},
	})
	return string(b)
}

// checkCallsUnderPolicy evaluates every call the controller made through
// the proxy against the policy `stevedore iam-policy` prints for the
// cluster, and against Karpenter's reference policy: each call is one the provider's inventory gives the controller,
// and each authorization it needs (its action on its resource's ARN, with
// the request and resource tags as condition keys) is allowed. It also
// checks that the proxy could read every request, that the calls the
// lifecycle needs were made, and that the controller says it runs on its
// built-in prices, as moto has no Price List API.
func checkCallsUnderPolicy(t *testing.T, c *controller, w *motoWorld) {
	t.Helper()
	made := map[string]int{}
	for _, r := range w.proxy.Calls() {
		if r.Unread != "" {
			t.Errorf("the proxy could not read a request: %s", r.Unread)
			continue
		}
		made[r.Service+" "+r.Operation]++
	}
	for _, must := range []string{"EC2 CreateFleet", "EC2 CreateLaunchTemplate", "EC2 DeleteLaunchTemplate", "EC2 TerminateInstances",
		"EC2 CreateTags", "IAM CreateInstanceProfile", "IAM AddRoleToInstanceProfile", "IAM RemoveRoleFromInstanceProfile",
		"IAM DeleteInstanceProfile", "SSM GetParameter", "SQS ReceiveMessage", "SQS DeleteMessage"} {
		if made[must] == 0 {
			t.Errorf("no %s among the calls the controller made: %v", must, made)
		}
	}
	a := w.acc
	roleARN := func(name string) string { return fmt.Sprintf("arn:aws:iam::%s:role/%s", moto.AccountID, name) }
	calls := w.authz.Calls()
	for _, pol := range []struct {
		name   string
		policy iampolicy.Policy
	}{
		{"the generated policy", iampolicy.ControllerPolicy(iampolicy.Params{ClusterName: a.Cluster, AccountID: moto.AccountID, Region: a.Region,
			NodeRoleName: a.NodeRole, QueueName: a.Queue})},
		// A user who swaps Karpenter for stevedore keeps Karpenter's role.
		{"Karpenter's reference policy", iampolicy.KarpenterReference("aws", a.Region, moto.AccountID, a.Cluster,
			roleARN(a.NodeRole), fmt.Sprintf("arn:aws:sqs:%s:%s:%s", a.Region, moto.AccountID, a.Queue))},
	} {
		if w.nextRole != "" {
			pol.policy = passRoleToo(pol.policy, roleARN(w.nextRole))
		}
		problems, requests := moto.CheckCalls(pol.policy, calls)
		for _, p := range problems {
			t.Errorf("under %s: %s", pol.name, p)
		}
		t.Logf("%d calls of %d kinds made, expanded into %d authorizations; %d refused by %s", len(calls), len(made), requests, len(problems), pol.name)
	}
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
	if !regexp.MustCompile(`(?m)^stevedore_pricing_fallback 1$`).Match(body) {
		t.Error("stevedore_pricing_fallback is not 1 against moto, which has no Price List API")
	}
}
