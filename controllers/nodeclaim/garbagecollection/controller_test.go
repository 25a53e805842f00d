package garbagecollection

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/settings"
	"github.com/stevedore-autoscaler/stevedore/test/apiserver"
	"github.com/stevedore-autoscaler/stevedore/test/kubelet"
)

const clusterName = "test"

var (
	kube   client.Client
	scheme = apiserver.Scheme()
)

func TestMain(m *testing.M) {
	os.Exit(apiserver.RunTests(m, func(_ *rest.Config, c client.Client) { kube = c }))
}

// recorder keeps the events the reconciler records, as "<object>/<reason>".
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) Eventf(regarding runtime.Object, _ runtime.Object, _, reason, _, _ string, _ ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, regarding.(client.Object).GetName()+"/"+reason)
}

type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) add(_, args string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, args)
}

func (l *logLines) count(msg string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.lines {
		if strings.Contains(s, `"msg"="`+msg+`"`) {
			n++
		}
	}
	return n
}

// env is the test's world: an in-memory AWS and the AWS provider over it.
type env struct {
	t   *testing.T
	ctx context.Context
	clk *clocktesting.FakeClock
	aws *fake.AWS
	p   *aws.Provider
}

func newEnv(t *testing.T, seed uint64) *env {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	f := fake.New(fake.Options{Seed: seed, Clock: clk, InstanceTypes: []string{"c6i.large", "m6i.large"}})
	w, err := f.StandardCluster(clusterName, "1.33")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.AddInstanceProfile("test-profile", w.NodeRole); err != nil {
		t.Fatal(err)
	}
	var subnets []awsv1.Subnet
	for i, id := range w.SubnetIDs {
		z := f.Zones()[i]
		zid, _ := f.ZoneID(z)
		subnets = append(subnets, awsv1.Subnet{ID: id, Zone: z, ZoneID: zid})
	}
	nodeClass := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default", Generation: 1},
		Spec:       awsv1.EC2NodeClassSpec{AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}, Role: w.NodeRole},
		Status: awsv1.EC2NodeClassStatus{
			Subnets:         subnets,
			SecurityGroups:  []awsv1.SecurityGroup{{ID: w.SecurityGroupID}},
			AMIs:            []awsv1.AMI{{ID: w.Images["al2023/x86_64/standard"]}},
			InstanceProfile: "test-profile",
			Conditions: []metav1.Condition{{
				Type: awsv1.ConditionTypeReady, Status: metav1.ConditionTrue, ObservedGeneration: 1, Reason: "Ready",
				LastTransitionTime: metav1.NewTime(clk.Now()),
			}},
		},
	}
	s := settings.Default()
	s.ClusterName = clusterName
	p, err := aws.New(aws.Options{
		Clients:  f.Clients(),
		Settings: s,
		Clock:    clk,
		NodeClass: func(_ context.Context, name string) (*awsv1.EC2NodeClass, error) {
			if name != nodeClass.Name {
				return nil, nil
			}
			return nodeClass.DeepCopy(), nil
		},
		Cluster: aws.ClusterInfo{Endpoint: "https://example.eks.amazonaws.com", CABundle: "Q0E=", ServiceCIDR: "10.100.0.0/16", DNS: []string{"10.100.0.10"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, ctx: context.Background(), clk: clk, aws: f, p: p}
	t.Cleanup(e.cleanup)
	return e
}

func (e *env) cleanup() {
	ctx := context.Background()
	_ = kube.DeleteAllOf(ctx, &karpv1.NodeClaim{})
	_ = kube.DeleteAllOf(ctx, &corev1.Node{})
}

// registered creates a NodeClaim, launches its instance and marks it
// Registered, as the lifecycle controller would.
func (e *env) registered(name string) *karpv1.NodeClaim {
	e.t.Helper()
	nc := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{wellknown.LabelNodePool: "default"}},
		Spec: karpv1.NodeClaimSpec{
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
				{Key: wellknown.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{wellknown.CapacityTypeOnDemand}},
				{Key: wellknown.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{wellknown.ArchAMD64}},
			},
			Resources:    karpv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
			NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
		},
	}
	if err := kube.Create(e.ctx, nc); err != nil {
		e.t.Fatal(err)
	}
	launched, err := e.p.Create(e.ctx, nc)
	if err != nil {
		e.t.Fatalf("launching %s: %v", name, err)
	}
	now := metav1.NewTime(e.clk.Now())
	nc.Status.ProviderID = launched.Status.ProviderID
	nc.Status.NodeName = name
	nc.Status.Conditions = []metav1.Condition{
		{Type: karpv1.ConditionTypeLaunched, Status: metav1.ConditionTrue, Reason: "Launched", LastTransitionTime: now},
		{Type: karpv1.ConditionTypeRegistered, Status: metav1.ConditionTrue, Reason: "Registered", LastTransitionTime: now},
	}
	if err := kube.Status().Update(e.ctx, nc); err != nil {
		e.t.Fatal(err)
	}
	return nc
}

// node creates the Node of a NodeClaim.
func (e *env) node(nc *karpv1.NodeClaim) {
	e.t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nc.Status.NodeName}, Spec: corev1.NodeSpec{ProviderID: nc.Status.ProviderID}}
	if err := kube.Create(e.ctx, n); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) terminate(nc *karpv1.NodeClaim) {
	e.t.Helper()
	id := nc.Status.ProviderID[strings.LastIndex(nc.Status.ProviderID, "/")+1:]
	if _, err := e.aws.TerminateInstances(e.ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}}); err != nil {
		e.t.Fatal(err)
	}
}

func exists(t *testing.T, name string) bool {
	t.Helper()
	err := kube.Get(context.Background(), client.ObjectKey{Name: name}, &karpv1.NodeClaim{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

func TestCollectsNodeClaimsWithoutInstance(t *testing.T) {
	e := newEnv(t, 301)
	logs := &logLines{}
	e.ctx = log.IntoContext(e.ctx, funcr.New(logs.add, funcr.Options{}))
	rec := &recorder{}
	r := New(kube, e.p, e.clk, rec)

	alive := e.registered("gc-alive")
	gone := e.registered("gc-gone")
	goneNotReady := e.registered("gc-gone-notready")
	goneReady := e.registered("gc-gone-ready")
	e.node(goneNotReady)
	e.node(goneReady)
	if err := kubelet.MarkReady(e.ctx, kube, goneReady.Status.NodeName); err != nil {
		t.Fatal(err)
	}
	// Not registered: left to the lifecycle controller's timeouts.
	unregistered := e.registered("gc-unregistered")
	unregistered.Status.Conditions[1].Status = metav1.ConditionUnknown
	unregistered.Status.Conditions[1].Reason = "NodeNotFound"
	if err := kube.Status().Update(e.ctx, unregistered); err != nil {
		t.Fatal(err)
	}

	// Nothing is missing yet.
	res, err := r.Reconcile(e.ctx, Request())
	if err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter != Interval {
		t.Errorf("RequeueAfter = %s, want %s", res.RequeueAfter, Interval)
	}
	if len(rec.events) != 0 {
		t.Fatalf("collected with every instance alive: %v", rec.events)
	}

	for _, nc := range []*karpv1.NodeClaim{gone, goneNotReady, goneReady, unregistered} {
		e.terminate(nc)
	}
	if res, err = r.Reconcile(e.ctx, Request()); err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter != Interval {
		t.Errorf("RequeueAfter = %s, want %s", res.RequeueAfter, Interval)
	}
	for name, want := range map[string]bool{
		alive.Name:        true,
		gone.Name:         false,
		goneNotReady.Name: false,
		goneReady.Name:    true,
		unregistered.Name: true,
	} {
		if got := exists(t, name); got != want {
			t.Errorf("NodeClaim %s exists = %t, want %t", name, got, want)
		}
	}
	slices.Sort(rec.events)
	if want := []string{"gc-gone-notready/" + ReasonInstanceNotFound, "gc-gone/" + ReasonInstanceNotFound}; !slices.Equal(rec.events, want) {
		t.Errorf("events = %v, want %v", rec.events, want)
	}
	if n := logs.count("garbage collecting nodeclaim with no cloudprovider instance"); n != 2 {
		t.Errorf("%d log lines for 2 collected NodeClaims", n)
	}
}
