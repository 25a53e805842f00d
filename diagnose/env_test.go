package diagnose

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	fakeclient "sigs.k8s.io/controller-runtime/pkg/client/fake"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/nodeclass"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/settings"
)

const (
	cluster   = "demo"
	k8sMinor  = "1.33"
	ctrlNS    = "stevedore"
	ctrlSA    = "stevedore"
	nodeClass = "default"
)

// now is when every world is diagnosed: a Tuesday morning.
var now = time.Date(2026, 3, 3, 10, 0, 0, 0, time.UTC)

var ctx = context.Background()

// env is a cluster and an AWS account set up correctly — the in-memory AWS
// with the standard cluster, an EC2NodeClass resolved against it by the
// production resolver, a NodePool, one initialized node with a pod, the
// controller with IRSA and an interruption queue — which each test breaks
// in one place.
type env struct {
	t        *testing.T
	aws      *fake.AWS
	cw       *fake.ClusterWorld
	clk      *clocktesting.FakeClock
	objs     []client.Object
	settings settings.Settings
	nodes    int
}

func newEnv(t *testing.T) *env {
	t.Helper()
	// The account is set up an hour before the diagnosis, so that instances
	// launched during setup are running by then.
	clk := clocktesting.NewFakeClock(now.Add(-time.Hour))
	f := fake.New(fake.Options{Seed: 1, Clock: clk, InstanceTypes: []string{"m6i.large", "m6i.xlarge", "m6i.2xlarge", "c6i.large", "c6i.xlarge"}})
	cw, err := f.StandardCluster(cluster, k8sMinor)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, aws: f, cw: cw, clk: clk, settings: settings.Default()}
	// The controller runs on a node of its own, tainted for system pods.
	e.add(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "system-1", Labels: map[string]string{wellknown.LabelHostname: "system-1"}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "CriticalAddonsOnly", Value: "true", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}})
	e.add(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ctrlNS, Name: ctrlSA,
		Annotations: map[string]string{AnnotationIRSARole: "arn:aws:iam::123456789012:role/stevedore-controller"}}})
	e.add(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ctrlNS, Name: "stevedore-7d9f8-abcde", Labels: map[string]string{ControllerLabel: "stevedore"}},
		Spec: corev1.PodSpec{NodeName: "system-1", ServiceAccountName: ctrlSA, Containers: []corev1.Container{{Name: "controller",
			Env: []corev1.EnvVar{{Name: "CLUSTER_NAME", Value: cluster}, {Name: "INTERRUPTION_QUEUE", Value: cw.QueueName}, {Name: "FEATURE_GATES", Value: "SpotToSpotConsolidation=false"}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	})
	e.nodeClass()
	e.nodePool("default")
	n := e.node("default", 24*time.Hour)
	e.pod("web-1", n, "1", "1Gi")
	return e
}

func (e *env) add(o client.Object) { e.objs = append(e.objs, o) }

// replace swaps the object of the same kind and name for o.
func (e *env) replace(o client.Object) {
	for i, old := range e.objs {
		if fmt.Sprintf("%T", old) == fmt.Sprintf("%T", o) && old.GetName() == o.GetName() && old.GetNamespace() == o.GetNamespace() {
			e.objs[i] = o
			return
		}
	}
	e.add(o)
}

func (e *env) get(kind client.Object, name string) client.Object {
	for _, o := range e.objs {
		if fmt.Sprintf("%T", o) == fmt.Sprintf("%T", kind) && o.GetName() == name {
			return o
		}
	}
	e.t.Fatalf("no %T %s", kind, name)
	return nil
}

// pinnedAlias is the AL2023 release StandardCluster published, by version.
func pinnedAlias() string { return "al2023@v" + now.Format("20060102") }

// nodeClass (re)creates the EC2NodeClass from spec changes, with the status
// the production resolver computes for it against the in-memory AWS.
func (e *env) nodeClass(mutate ...func(*awsv1.EC2NodeClass)) *awsv1.EC2NodeClass {
	e.t.Helper()
	nc := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: nodeClass, UID: types.UID("8d0f5c3e-1b2a-4c5d-9e8f-7a6b5c4d3e2f"), Generation: 1},
		Spec: awsv1.EC2NodeClassSpec{
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{fake.DiscoveryTag: cluster}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{fake.DiscoveryTag: cluster}}},
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: pinnedAlias()}},
			Role:                       e.cw.NodeRole,
		},
	}
	for _, m := range mutate {
		m(nc)
	}
	r := nodeclass.NewResolver(e.aws.Clients(), nodeclass.Options{ClusterName: cluster, Region: e.aws.Region(), Clock: e.clk})
	st, err := r.Resolve(ctx, nc, k8sMinor)
	if err != nil {
		e.t.Fatal(err)
	}
	nc.Status = st
	e.replace(nc)
	return nc
}

func (e *env) nodePool(name string, mutate ...func(*karpv1.NodePool)) *karpv1.NodePool {
	np := &karpv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec: karpv1.NodePoolSpec{
			Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
				NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: nodeClass},
				Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
					{Key: wellknown.LabelInstanceFamily, Operator: corev1.NodeSelectorOpIn, Values: []string{"m6i"}},
					{Key: wellknown.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{wellknown.CapacityTypeOnDemand}},
				},
				ExpireAfter: karpv1.NewNillableDuration(720 * time.Hour),
			}},
			Disruption: karpv1.Disruption{
				ConsolidationPolicy: karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized,
				ConsolidateAfter:    karpv1.NewNillableDuration(30 * time.Second),
				Budgets:             []karpv1.Budget{{Nodes: "10%"}},
			},
		},
	}
	for _, m := range mutate {
		m(np)
	}
	e.replace(np)
	return np
}

// node adds an initialized node of pool, registered age ago, and its
// NodeClaim; it returns the node's name.
func (e *env) node(pool string, age time.Duration) string {
	e.nodes++
	name := fmt.Sprintf("ip-10-0-1-%d.ec2.internal", e.nodes)
	nc, n := e.claim(pool, name, age)
	e.add(nc)
	e.add(n)
	return name
}

func (e *env) claim(pool, name string, age time.Duration) (*karpv1.NodeClaim, *corev1.Node) {
	at := now.Add(-age)
	pid := fmt.Sprintf("aws:///us-east-1a/i-%017d", e.nodes)
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3920m"), corev1.ResourceMemory: resource.MustParse("14Gi"), corev1.ResourcePods: resource.MustParse("58")}
	labels := map[string]string{wellknown.LabelNodePool: pool, wellknown.LabelInstanceType: "m6i.xlarge", wellknown.LabelTopologyZone: "us-east-1a",
		wellknown.LabelCapacityType: wellknown.CapacityTypeOnDemand, wellknown.LabelArch: "amd64", corev1.LabelOSStable: "linux"}
	nc := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%05d", pool, e.nodes), Labels: labels, CreationTimestamp: metav1.NewTime(at)},
		Spec: karpv1.NodeClaimSpec{NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: nodeClass},
			ExpireAfter: karpv1.NewNillableDuration(720 * time.Hour)},
		Status: karpv1.NodeClaimStatus{NodeName: name, ProviderID: pid, Capacity: alloc, Allocatable: alloc, Conditions: []metav1.Condition{
			{Type: karpv1.ConditionTypeLaunched, Status: metav1.ConditionTrue, Reason: "Launched", LastTransitionTime: metav1.NewTime(at)},
			{Type: karpv1.ConditionTypeRegistered, Status: metav1.ConditionTrue, Reason: "Registered", LastTransitionTime: metav1.NewTime(at)},
			{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue, Reason: "Initialized", LastTransitionTime: metav1.NewTime(at)},
			{Type: karpv1.ConditionTypeConsolidatable, Status: metav1.ConditionFalse, Reason: "ConsolidateAfterNotElapsed", LastTransitionTime: metav1.NewTime(at)},
		}},
	}
	nodeLabels := map[string]string{wellknown.LabelHostname: name, wellknown.LabelInitialized: "true"}
	for k, v := range labels {
		nodeLabels[k] = v
	}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: nodeLabels, CreationTimestamp: metav1.NewTime(at)},
		Spec:       corev1.NodeSpec{ProviderID: pid},
		Status:     corev1.NodeStatus{Allocatable: alloc, Capacity: alloc, Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
	return nc, n
}

// pod adds a running pod on node, or a pending one kube-scheduler gave up on
// age ago when node is "".
func (e *env) pod(name, node, cpu, mem string, mutate ...func(*corev1.Pod)) {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{"app": name},
			CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: ptr.To(metav1.NewTime(now.Add(-time.Hour)))},
	}
	if node == "" {
		p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, LastTransitionTime: metav1.NewTime(now.Add(-time.Minute))}}}
	}
	for _, m := range mutate {
		m(p)
	}
	e.add(p)
}

// launch starts a real instance in the in-memory AWS with the node role's
// instance profile and returns its provider ID.
func (e *env) launch() string {
	e.t.Helper()
	f := e.aws
	if err := f.AddInstanceProfile("demo-node-profile", e.cw.NodeRole); err != nil {
		e.t.Fatal(err)
	}
	_, err := f.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String("stevedore/test"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
			ImageId:            aws.String(e.cw.Images["al2023/x86_64/standard"]),
			IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String("demo-node-profile")},
			SecurityGroupIds:   []string{e.cw.SecurityGroupID},
			UserData:           aws.String(base64.StdEncoding.EncodeToString([]byte("#!/bin/bash\n"))),
		},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	out, err := f.CreateFleet(ctx, &ec2.CreateFleetInput{
		Type:                        ec2types.FleetTypeInstant,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand},
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String("stevedore/test"), Version: aws.String("$Latest")},
			Overrides:                   []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: "m6i.xlarge", SubnetId: aws.String(e.cw.SubnetIDs[0])}},
		}},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	if len(out.Instances) != 1 {
		e.t.Fatalf("fleet launched nothing: %+v", out.Errors)
	}
	id := out.Instances[0].InstanceIds[0]
	return "aws:///us-east-1a/" + id
}

// world loads the env through a fake API client, as the live command does
// through the API server.
func (e *env) world() *World {
	e.t.Helper()
	e.clk.SetTime(now)
	w, err := Load(ctx, Source{Reader: readerOf(e.t, e), AWS: e.aws.Clients(), Settings: e.settings, Region: e.aws.Region(), Now: now})
	if err != nil {
		e.t.Fatal(err)
	}
	return w
}

var errNoCredentials = errors.New("no credentials: the default credential chain found none")

// readerOf serves the env's objects as an API client would.
func readerOf(t *testing.T, e *env) client.Reader {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, karpv1.AddToScheme, awsv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	objs := make([]client.Object, len(e.objs))
	for i, o := range e.objs {
		objs[i] = o.DeepCopyObject().(client.Object)
	}
	return fakeclient.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
}

// run runs one check on the env's world.
func (e *env) run(id string) []Result {
	e.t.Helper()
	w := e.world()
	for _, c := range Checks() {
		if c.ID == id {
			r := Run(ctx, w, []Check{c})
			return r.Results
		}
	}
	e.t.Fatalf("no check %s", id)
	return nil
}

// expect asserts that the results of a check include one of status whose
// object and evidence contain the given strings.
func expect(t *testing.T, results []Result, status Status, contains ...string) Result {
	t.Helper()
	for _, r := range results {
		if r.Status != status {
			continue
		}
		text := r.Object + " " + r.Evidence + " " + r.Fix
		ok := true
		for _, s := range contains {
			if !strings.Contains(text, s) {
				ok = false
			}
		}
		if ok {
			return r
		}
	}
	t.Fatalf("no %s result containing %q among:\n%s", status, contains, dump(results))
	return Result{}
}

func dump(results []Result) string {
	var b strings.Builder
	for _, r := range results {
		fmt.Fprintf(&b, "  %s %s %s: %s | fix: %s\n", r.Status, r.ID, r.Object, r.Evidence, r.Fix)
	}
	return b.String()
}
