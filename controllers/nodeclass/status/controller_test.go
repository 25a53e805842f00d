package status

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/drift"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/nodeclass"
	"github.com/stevedore-autoscaler/stevedore/test/environment"
)

const (
	clusterName = environment.ClusterName
	k8sVersion  = environment.KubernetesVersion
	caBundle    = "Q0E="
)

func TestMain(m *testing.M) { environment.Main(m) }

// env is one test's world, the resolver over its AWS and the status
// controller.
type env struct {
	*environment.Env
	resolver *nodeclass.Resolver
	r        *Reconciler
}

func newEnv(t *testing.T, seed uint64) *env {
	t.Helper()
	e := &env{Env: environment.New(t, environment.Options{Seed: seed, InstanceTypes: []string{"c6i.large", "m6i.large", "m6g.large"}})}
	e.resolver = nodeclass.NewResolver(e.AWS.Clients(), nodeclass.Options{ClusterName: clusterName, Region: "us-east-1", Clock: e.Clock})
	e.r = New(e.Kube, e.resolver, e.Events, Options{KubernetesVersion: k8sVersion, CABundle: caBundle})
	return e
}

// nodeClass creates an EC2NodeClass, not resolved yet, whose subnets are
// selected by the discovery tag value subnetTag.
func (e *env) nodeClass(name, subnetTag string) *awsv1.EC2NodeClass {
	e.T.Helper()
	nc := e.NewEC2NodeClass(name)
	nc.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{Tags: map[string]string{fake.DiscoveryTag: subnetTag}}}
	nc.Status = awsv1.EC2NodeClassStatus{}
	e.Create(nc)
	return nc
}

func (e *env) reconcile(name string) (reconcile.Result, *awsv1.EC2NodeClass, error) {
	e.T.Helper()
	res, err := e.r.Reconcile(e.Ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: name}})
	nc := &awsv1.EC2NodeClass{}
	if getErr := e.Kube.Get(e.Ctx, client.ObjectKey{Name: name}, nc); getErr != nil {
		if apierrors.IsNotFound(getErr) {
			return res, nil, err
		}
		e.T.Fatal(getErr)
	}
	return res, nc, err
}

func condition(t *testing.T, nc *awsv1.EC2NodeClass, typ string) metav1.Condition {
	t.Helper()
	c := meta.FindStatusCondition(nc.Status.Conditions, typ)
	if c == nil {
		t.Fatalf("EC2NodeClass %s has no %s condition: %+v", nc.Name, typ, nc.Status.Conditions)
	}
	return *c
}

func TestReady(t *testing.T) {
	e := newEnv(t, 1)
	e.nodeClass("ready", clusterName)
	res, nc, err := e.reconcile("ready")
	if err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	if c := condition(t, nc, awsv1.ConditionTypeReady); c.Status != metav1.ConditionTrue {
		t.Fatalf("Ready = %+v, want True; conditions %+v", c, nc.Status.Conditions)
	}
	if res.RequeueAfter != ReadyRequeue {
		t.Errorf("RequeueAfter = %v, want %v", res.RequeueAfter, ReadyRequeue)
	}
	if len(nc.Status.Subnets) != len(e.World.SubnetIDs) || len(nc.Status.SecurityGroups) != 1 || len(nc.Status.AMIs) == 0 {
		t.Errorf("status = %+v, want the world's subnets, security group and images", nc.Status)
	}
	if !slices.Contains(nc.Finalizers, wellknown.FinalizerEC2NodeClassTermination) {
		t.Errorf("finalizers = %v", nc.Finalizers)
	}
	if got, want := nc.Annotations[wellknown.AnnotationEC2NodeClassHash], drift.Hash(nc, caBundle); got != want {
		t.Errorf("hash annotation = %q, want %q", got, want)
	}
	if got := nc.Annotations[wellknown.AnnotationEC2NodeClassHashVersion]; got != drift.HashVersion {
		t.Errorf("hash version annotation = %q, want %q", got, drift.HashVersion)
	}

	// A spec change changes the hash.
	old := nc.Annotations[wellknown.AnnotationEC2NodeClassHash]
	nc.Spec.Tags = map[string]string{"team": "a"}
	if err := e.Kube.Update(e.Ctx, nc); err != nil {
		t.Fatal(err)
	}
	if _, nc, err = e.reconcile("ready"); err != nil {
		t.Fatal(err)
	}
	if nc.Annotations[wellknown.AnnotationEC2NodeClassHash] == old {
		t.Errorf("hash %s did not change with spec.tags", old)
	}
}

func TestUntaggedSubnets(t *testing.T) {
	e := newEnv(t, 2)
	e.nodeClass("untagged", "nobody-tagged-this")
	res, nc, err := e.reconcile("untagged")
	if err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	c := condition(t, nc, awsv1.ConditionTypeSubnetsReady)
	if c.Status != metav1.ConditionFalse || c.Reason != nodeclass.ReasonSubnetsNotFound {
		t.Fatalf("SubnetsReady = %+v, want False/%s", c, nodeclass.ReasonSubnetsNotFound)
	}
	// The message is the resolver's, unchanged.
	want, _ := e.resolver.Resolve(e.Ctx, nc, k8sVersion)
	if w := meta.FindStatusCondition(want.Conditions, awsv1.ConditionTypeSubnetsReady); w == nil || w.Message != c.Message || c.Message == "" {
		t.Errorf("SubnetsReady message = %q, want the resolver's %+v", c.Message, w)
	}
	if r := condition(t, nc, awsv1.ConditionTypeReady); r.Status == metav1.ConditionTrue {
		t.Errorf("Ready = %+v, want not True", r)
	}
	if res.RequeueAfter != NotReadyRequeue {
		t.Errorf("RequeueAfter = %v, want %v", res.RequeueAfter, NotReadyRequeue)
	}
	if !slices.Contains(nc.Finalizers, wellknown.FinalizerEC2NodeClassTermination) {
		t.Errorf("finalizers = %v, want %s", nc.Finalizers, wellknown.FinalizerEC2NodeClassTermination)
	}
}

// TestUserDataTooLarge: user data that EC2 would refuse, once merged with
// the AL2023 bootstrap configuration, makes the node class not Ready, with
// the field, the sizes and the fix in the condition.
func TestUserDataTooLarge(t *testing.T) {
	e := newEnv(t, 5)
	nc := e.nodeClass("big-user-data", clusterName)
	nc.Spec.UserData = new("#!/bin/bash\n" + strings.Repeat("echo padding the user data\n", 600))
	if err := e.Kube.Update(e.Ctx, nc); err != nil {
		t.Fatal(err)
	}
	res, nc, err := e.reconcile("big-user-data")
	if err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	v := condition(t, nc, awsv1.ConditionTypeValidationSucceeded)
	if v.Status != metav1.ConditionFalse || v.Reason != nodeclass.ReasonUserDataTooLarge {
		t.Fatalf("ValidationSucceeded = %+v, want False/%s", v, nodeclass.ReasonUserDataTooLarge)
	}
	r := condition(t, nc, awsv1.ConditionTypeReady)
	if r.Status != metav1.ConditionFalse || r.Reason != nodeclass.ReasonUserDataTooLarge {
		t.Fatalf("Ready = %+v, want False/%s", r, nodeclass.ReasonUserDataTooLarge)
	}
	for _, want := range []string{"spec.userData is 16212 bytes", "AL2023", "limit of 16384 bytes", "S3 or SSM Parameter Store"} {
		if !strings.Contains(r.Message, want) {
			t.Errorf("Ready message %q does not say %q", r.Message, want)
		}
	}
	if res.RequeueAfter != NotReadyRequeue {
		t.Errorf("RequeueAfter = %v, want %v", res.RequeueAfter, NotReadyRequeue)
	}

	// Shrunk, it is Ready again.
	nc.Spec.UserData = new("#!/bin/bash\necho hello\n")
	if err := e.Kube.Update(e.Ctx, nc); err != nil {
		t.Fatal(err)
	}
	if _, nc, err = e.reconcile("big-user-data"); err != nil {
		t.Fatal(err)
	}
	if r := condition(t, nc, awsv1.ConditionTypeReady); r.Status != metav1.ConditionTrue {
		t.Errorf("Ready after shrinking the user data = %+v, want True", r)
	}
}

func TestAWSErrorKeepsConditions(t *testing.T) {
	e := newEnv(t, 3)
	e.nodeClass("throttled", clusterName)
	if _, _, err := e.reconcile("throttled"); err != nil {
		t.Fatal(err)
	}
	e.AWS.InjectError("DescribeSubnets", fake.ThrottlingError("DescribeSubnets"), -1)
	defer e.AWS.ClearErrors()
	e.Clock.Step(ReadyRequeue)
	_, nc, err := e.reconcile("throttled")
	if err == nil {
		t.Fatal("Reconcile succeeded with DescribeSubnets throttled; want an error to retry with backoff")
	}
	if c := condition(t, nc, awsv1.ConditionTypeSubnetsReady); c.Status != metav1.ConditionTrue {
		t.Errorf("SubnetsReady = %+v, want it kept True", c)
	}
	if len(nc.Status.Subnets) != len(e.World.SubnetIDs) {
		t.Errorf("subnets = %v, want them kept", nc.Status.Subnets)
	}
}

func TestDeletionWaitsForNodeClaims(t *testing.T) {
	e := newEnv(t, 4)
	e.nodeClass("deleting", clusterName)
	_, resolved, err := e.reconcile("deleting")
	if err != nil {
		t.Fatal(err)
	}
	profile := resolved.Status.InstanceProfile
	if _, ok := e.AWS.InstanceProfileRoles(profile); !ok {
		t.Fatalf("managed instance profile %q was not created", profile)
	}
	if _, err := e.AWS.CreateLaunchTemplate(e.Ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String("stevedore/" + clusterName + "/deleting"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-1")},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: []ec2types.Tag{
			{Key: aws.String(wellknown.TagEKSClusterName), Value: aws.String(clusterName)},
			{Key: aws.String(wellknown.TagEC2NodeClass), Value: aws.String("deleting")},
		}}},
	}); err != nil {
		t.Fatal(err)
	}
	claim := environment.NewNodeClaim("deleting-claim", "", "deleting")
	e.Create(claim)

	if err := e.Kube.Delete(e.Ctx, &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "deleting"}}); err != nil {
		t.Fatal(err)
	}
	calls := e.AWS.Calls("DescribeSubnets")
	res, nc, err := e.reconcile("deleting")
	if err != nil {
		t.Fatal(err)
	}
	if nc == nil || !slices.Contains(nc.Finalizers, wellknown.FinalizerEC2NodeClassTermination) {
		t.Fatalf("EC2NodeClass = %+v, want it kept with its finalizer", nc)
	}
	if res.RequeueAfter != DeletionPoll {
		t.Errorf("RequeueAfter = %v, want %v", res.RequeueAfter, DeletionPoll)
	}
	if ev := e.Events.String(); !strings.Contains(ev, ReasonWaitingOnNodeClaims+": waiting on NodeClaims [deleting-claim]") {
		t.Errorf("events = %q, want the waiting event naming the NodeClaim", ev)
	}
	if n := e.AWS.Calls("DescribeSubnets"); n != calls {
		t.Errorf("a deleting node class was resolved (%d DescribeSubnets calls)", n-calls)
	}
	if _, ok := e.AWS.InstanceProfileRoles(profile); !ok {
		t.Error("the instance profile was deleted while NodeClaims still use the node class")
	}

	// A failing clean-up keeps the finalizer.
	if err := e.Kube.Delete(e.Ctx, claim); err != nil {
		t.Fatal(err)
	}
	e.AWS.InjectError("DeleteInstanceProfile", fake.APIError("ServiceFailure", "boom"), 1)
	if _, nc, err = e.reconcile("deleting"); err == nil || nc == nil {
		t.Fatalf("reconcile with a failing clean-up: err %v, node class %v; want an error and the node class kept", err, nc)
	}

	if _, nc, err = e.reconcile("deleting"); err != nil {
		t.Fatal(err)
	}
	if nc != nil {
		t.Errorf("EC2NodeClass still exists with finalizers %v after its NodeClaims went", nc.Finalizers)
	}
	if _, ok := e.AWS.InstanceProfileRoles(profile); ok {
		t.Errorf("managed instance profile %s outlived its EC2NodeClass", profile)
	}
	if names := e.AWS.LaunchTemplateNames(); len(names) != 0 {
		t.Errorf("launch templates %v outlived their EC2NodeClass", names)
	}
}

// TestReadyRequeueFollowsRefreshInterval: a Ready node class is resolved
// again after the configured refresh interval (the smaller of
// AMI_REFRESH_INTERVAL and SUBNET_REFRESH_INTERVAL), not the fixed default.
func TestReadyRequeueFollowsRefreshInterval(t *testing.T) {
	for _, tc := range []struct {
		interval, want time.Duration
	}{
		{interval: 0, want: ReadyRequeue},
		{interval: time.Minute, want: time.Minute},
		{interval: 3 * time.Minute, want: 3 * time.Minute},
	} {
		e := newEnv(t, 1)
		e.r = New(e.Kube, e.resolver, e.Events, Options{KubernetesVersion: k8sVersion, CABundle: caBundle, RefreshInterval: tc.interval})
		name := fmt.Sprintf("refresh-%d", int(tc.interval.Seconds()))
		e.nodeClass(name, clusterName)
		res, nc, err := e.reconcile(name)
		if err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		if c := condition(t, nc, awsv1.ConditionTypeReady); c.Status != metav1.ConditionTrue {
			t.Fatalf("Ready = %+v", c)
		}
		if res.RequeueAfter != tc.want {
			t.Errorf("RefreshInterval %v: RequeueAfter = %v, want %v", tc.interval, res.RequeueAfter, tc.want)
		}
	}
}

// TestRestampsNodeClaimsOfAnotherHashVersion: when a node class's hash
// version is not the current one (here it has none yet), its NodeClaims of
// another version (from before an upgrade that changed the hash) are
// re-stamped before the node class is: the current version on all of them,
// the node class's hash on those that have not drifted, so that a later
// change of the node class drifts them; a drifted one keeps its old hash
// under the new version, and so stays drifted. A NodeClaim of another node
// class is left alone, and so is every NodeClaim once the node class
// carries the current version.
func TestRestampsNodeClaimsOfAnotherHashVersion(t *testing.T) {
	e := newEnv(t, 5)
	e.nodeClass("restamp", clusterName)
	const oldHash, oldVersion = "12239840453578113463", "v4"
	tests := []struct {
		name, class string
		drifted     bool
		wantRestamp bool
		wantOldHash bool
	}{
		{name: "restamp-adopted", class: "restamp", wantRestamp: true},
		{name: "restamp-drifted", class: "restamp", drifted: true, wantRestamp: true, wantOldHash: true},
		{name: "restamp-other-class", class: "other", wantOldHash: true},
	}
	for _, tc := range tests {
		claim := environment.NewNodeClaim(tc.name, "", tc.class)
		claim.Annotations = map[string]string{
			wellknown.AnnotationEC2NodeClassHash:        oldHash,
			wellknown.AnnotationEC2NodeClassHashVersion: oldVersion,
		}
		if tc.drifted {
			claim.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeDrifted, Status: metav1.ConditionTrue, Reason: "NodeClassDrift", LastTransitionTime: metav1.Now()}}
		}
		e.Create(claim)
	}
	_, nc, err := e.reconcile("restamp")
	if err != nil {
		t.Fatal(err)
	}
	check := func(t *testing.T, name, wantHash, wantVersion string) {
		t.Helper()
		got := e.NodeClaim(name)
		if h, v := got.Annotations[wellknown.AnnotationEC2NodeClassHash], got.Annotations[wellknown.AnnotationEC2NodeClassHashVersion]; h != wantHash || v != wantVersion {
			t.Errorf("hash %s version %s, want %s %s", h, v, wantHash, wantVersion)
		}
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantHash, wantVersion := nc.Annotations[wellknown.AnnotationEC2NodeClassHash], drift.HashVersion
			if tc.wantOldHash {
				wantHash = oldHash
			}
			if !tc.wantRestamp {
				wantVersion = oldVersion
			}
			check(t, tc.name, wantHash, wantVersion)
		})
	}

	// The node class is current now: a NodeClaim of another version is not
	// compared by hash, and not re-stamped either.
	claim := e.NodeClaim("restamp-adopted")
	claim.Annotations[wellknown.AnnotationEC2NodeClassHash] = oldHash
	claim.Annotations[wellknown.AnnotationEC2NodeClassHashVersion] = oldVersion
	if err := e.Kube.Update(e.Ctx, claim); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.reconcile("restamp"); err != nil {
		t.Fatal(err)
	}
	check(t, "restamp-adopted", oldHash, oldVersion)
}
