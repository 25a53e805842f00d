package lifecycle

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/settings"
	"github.com/stevedore-autoscaler/stevedore/controllers/metrics"
	"github.com/stevedore-autoscaler/stevedore/test/apiserver"
	"github.com/stevedore-autoscaler/stevedore/test/kubelet"
)

const clusterName = "test"

var (
	kube    client.Client
	kubeCfg *rest.Config
	scheme  = apiserver.Scheme()
)

func TestMain(m *testing.M) {
	os.Exit(apiserver.RunTests(m, func(cfg *rest.Config, c client.Client) { kubeCfg, kube = cfg, c }))
}

// recorder keeps the events the reconciler records.
type recorder struct {
	mu     sync.Mutex
	events []string // "<reason>: <note>"
}

func (r *recorder) Eventf(_ runtime.Object, _ runtime.Object, _, reason, _, note string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, reason+": "+fmt.Sprintf(note, args...))
}

func (r *recorder) find(reason string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.events {
		if strings.HasPrefix(e, reason+": ") {
			return e, true
		}
	}
	return "", false
}

// env is one test's world: its own in-memory AWS and clock, sharing the API
// server with the other tests (so each test uses its own seed and names).
type env struct {
	t     *testing.T
	ctx   context.Context
	clk   *clocktesting.FakeClock
	aws   *fake.AWS
	world *fake.ClusterWorld
	nc    *awsv1.EC2NodeClass
	p     *aws.Provider
	rec   *recorder
	r     *Reconciler
	logs  *logLines
	reg   *prometheus.Registry
}

type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) add(prefix, args string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, args)
}

func (l *logLines) has(msg string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.ContainsFunc(l.lines, func(s string) bool { return strings.Contains(s, `"msg"="`+msg+`"`) })
}

func newEnv(t *testing.T, seed uint64) *env {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	f := fake.New(fake.Options{Seed: seed, Clock: clk, InstanceTypes: []string{"c6i.large", "m6i.large", "m6g.large"}})
	w, err := f.StandardCluster(clusterName, "1.33")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.AddInstanceProfile("test-profile", w.NodeRole); err != nil {
		t.Fatal(err)
	}
	logs := &logLines{}
	e := &env{t: t, clk: clk, aws: f, world: w, rec: &recorder{}, logs: logs}
	e.ctx = log.IntoContext(context.Background(), funcr.New(logs.add, funcr.Options{}))
	e.nc = nodeClass(t, e)
	s := settings.Default()
	s.ClusterName = clusterName
	p, err := aws.New(aws.Options{
		Clients:  f.Clients(),
		Settings: s,
		Clock:    clk,
		NodeClass: func(_ context.Context, name string) (*awsv1.EC2NodeClass, error) {
			if e.nc == nil || e.nc.Name != name {
				return nil, nil
			}
			return e.nc.DeepCopy(), nil
		},
		Cluster: aws.ClusterInfo{Endpoint: "https://example.eks.amazonaws.com", CABundle: "Q0E=", ServiceCIDR: "10.100.0.0/16", DNS: []string{"10.100.0.10"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	e.p = p
	e.reg = prometheus.NewRegistry()
	m, err := metrics.New(e.reg)
	if err != nil {
		t.Fatal(err)
	}
	e.r = New(kube, p, clk, e.rec, m)
	t.Cleanup(e.cleanup)
	return e
}

func nodeClass(t *testing.T, e *env) *awsv1.EC2NodeClass {
	t.Helper()
	var subnets []awsv1.Subnet
	for i, id := range e.world.SubnetIDs {
		z := e.aws.Zones()[i]
		zid, _ := e.aws.ZoneID(z)
		subnets = append(subnets, awsv1.Subnet{ID: id, Zone: z, ZoneID: zid})
	}
	arch := func(a string) []corev1.NodeSelectorRequirement {
		return []corev1.NodeSelectorRequirement{{Key: wellknown.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{a}}}
	}
	return &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default", Generation: 1},
		Spec: awsv1.EC2NodeClassSpec{
			AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			Role:             e.world.NodeRole,
		},
		Status: awsv1.EC2NodeClassStatus{
			Subnets:        subnets,
			SecurityGroups: []awsv1.SecurityGroup{{ID: e.world.SecurityGroupID}},
			AMIs: []awsv1.AMI{
				{ID: e.world.Images["al2023/x86_64/standard"], Requirements: arch(wellknown.ArchAMD64)},
				{ID: e.world.Images["al2023/arm64/standard"], Requirements: arch(wellknown.ArchARM64)},
			},
			InstanceProfile: "test-profile",
			Conditions: []metav1.Condition{{
				Type: awsv1.ConditionTypeReady, Status: metav1.ConditionTrue, ObservedGeneration: 1, Reason: "Ready",
				LastTransitionTime: metav1.NewTime(e.clk.Now()),
			}},
		},
	}
}

// cleanup removes what the test left in the shared API server.
func (e *env) cleanup() {
	ctx := context.Background()
	var nodes corev1.NodeList
	if err := kube.List(ctx, &nodes); err == nil {
		for i := range nodes.Items {
			n := &nodes.Items[i]
			if len(n.Finalizers) > 0 {
				base := n.DeepCopy()
				n.Finalizers = nil
				_ = kube.Patch(ctx, n, client.MergeFrom(base))
			}
			_ = kube.Delete(ctx, n)
		}
	}
	var ncs karpv1.NodeClaimList
	if err := kube.List(ctx, &ncs); err == nil {
		for i := range ncs.Items {
			n := &ncs.Items[i]
			if len(n.Finalizers) > 0 {
				base := n.DeepCopy()
				n.Finalizers = nil
				_ = kube.Patch(ctx, n, client.MergeFrom(base))
			}
			_ = kube.Delete(ctx, n)
		}
	}
}

func (e *env) create(name string, mutate ...func(*karpv1.NodeClaim)) *karpv1.NodeClaim {
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
	for _, m := range mutate {
		m(nc)
	}
	if err := kube.Create(e.ctx, nc); err != nil {
		e.t.Fatalf("creating NodeClaim %s: %v", name, err)
	}
	return nc
}

func (e *env) get(name string) (*karpv1.NodeClaim, bool) {
	e.t.Helper()
	nc := &karpv1.NodeClaim{}
	err := kube.Get(e.ctx, client.ObjectKey{Name: name}, nc)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return nc, true
}

// drive reconciles the NodeClaim with r until it stops changing or is gone,
// and returns it (nil when gone) with the last result. The clock does not
// move.
func (e *env) drive(r *Reconciler, name string) (*karpv1.NodeClaim, reconcile.Result) {
	e.t.Helper()
	last := ""
	for range 20 {
		res, err := r.Reconcile(e.ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: name}})
		nc, ok := e.get(name)
		if !ok {
			return nil, res
		}
		if err != nil {
			e.t.Logf("reconcile %s: %v", name, err)
		} else if nc.ResourceVersion == last {
			return nc, res
		}
		last = nc.ResourceVersion
	}
	e.t.Fatalf("NodeClaim %s kept changing", name)
	return nil, reconcile.Result{}
}

// driveUntilGone reconciles the NodeClaim, moving the clock on by the
// requested wait whenever it settles, until it is gone.
func (e *env) driveUntilGone(name string) {
	e.t.Helper()
	for range 30 {
		nc, res := e.drive(e.r, name)
		if nc == nil {
			return
		}
		wait := res.RequeueAfter
		if wait <= 0 {
			wait = time.Second
		}
		e.clk.Step(wait)
	}
	e.t.Fatalf("NodeClaim %s was not deleted", name)
}

func (e *env) node(name string) *corev1.Node {
	e.t.Helper()
	n := &corev1.Node{}
	if err := kube.Get(e.ctx, client.ObjectKey{Name: name}, n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

func instanceID(t *testing.T, providerID string) string {
	t.Helper()
	i := strings.LastIndex(providerID, "/")
	if i < 0 || !strings.HasPrefix(providerID[i+1:], "i-") {
		t.Fatalf("provider ID %q names no instance", providerID)
	}
	return providerID[i+1:]
}

func condition(nc *karpv1.NodeClaim, typ string) metav1.Condition {
	if c := meta.FindStatusCondition(nc.Status.Conditions, typ); c != nil {
		return *c
	}
	return metav1.Condition{Type: typ}
}

func wantCondition(t *testing.T, nc *karpv1.NodeClaim, typ string, status metav1.ConditionStatus) {
	t.Helper()
	if c := condition(nc, typ); c.Status != status {
		t.Fatalf("%s = %q (%s: %s), want %s", typ, c.Status, c.Reason, c.Message, status)
	}
}

// launched drives a new NodeClaim to Launched and returns it.
func (e *env) launched(name string, mutate ...func(*karpv1.NodeClaim)) *karpv1.NodeClaim {
	e.t.Helper()
	e.create(name, mutate...)
	nc, _ := e.drive(e.r, name)
	if nc == nil {
		e.t.Fatalf("NodeClaim %s was deleted: %v", name, e.rec.events)
	}
	wantCondition(e.t, nc, karpv1.ConditionTypeLaunched, metav1.ConditionTrue)
	return nc
}

func TestLaunchRegisterInitialize(t *testing.T) {
	e := newEnv(t, 101)
	teamTaint := corev1.Taint{Key: "example.com/team", Value: "a", Effect: corev1.TaintEffectNoSchedule}
	agentTaint := corev1.Taint{Key: "example.com/agent-not-ready", Effect: corev1.TaintEffectNoExecute}
	nc := e.launched("lifecycle-happy", func(nc *karpv1.NodeClaim) {
		nc.Spec.Taints = []corev1.Taint{teamTaint}
		nc.Spec.StartupTaints = []corev1.Taint{agentTaint}
	})

	// Launched: the instance exists and the NodeClaim says what it is.
	id := instanceID(t, nc.Status.ProviderID)
	info, ok := e.aws.Instance(id)
	if !ok {
		t.Fatalf("instance %s is not in the cloud", id)
	}
	if got := nc.Labels[wellknown.LabelInstanceType]; got != info.InstanceType {
		t.Errorf("instance-type label = %q, instance is %s", got, info.InstanceType)
	}
	if nc.Labels[wellknown.LabelTopologyZone] != info.Zone || nc.Labels[wellknown.LabelNodePool] != "default" {
		t.Errorf("labels = %v", nc.Labels)
	}
	if nc.Status.ImageID != info.ImageID || nc.Status.Capacity.Cpu().IsZero() || nc.Status.Allocatable.Memory().IsZero() {
		t.Errorf("status = %+v", nc.Status)
	}
	if nc.Annotations[wellknown.AnnotationEC2NodeClassHash] == "" {
		t.Errorf("annotations not copied: %v", nc.Annotations)
	}
	if !slices.Contains(nc.Finalizers, wellknown.FinalizerTermination) {
		t.Errorf("finalizers = %v", nc.Finalizers)
	}
	wantCondition(t, nc, karpv1.ConditionTypeRegistered, metav1.ConditionUnknown)
	wantCondition(t, nc, karpv1.ConditionTypeReady, metav1.ConditionUnknown)

	// The node boots and its kubelet registers it.
	e.clk.Step(fake.DefaultBootDelay + time.Second)
	names, err := kubelet.Sync(e.ctx, kube, e.aws, clusterName)
	if err != nil || len(names) != 1 {
		t.Fatalf("kubelet.Sync = %v, %v; want one node", names, err)
	}
	nc, _ = e.drive(e.r, nc.Name)
	wantCondition(t, nc, karpv1.ConditionTypeRegistered, metav1.ConditionTrue)
	if nc.Status.NodeName != names[0] {
		t.Errorf("status.nodeName = %q, want %q", nc.Status.NodeName, names[0])
	}
	node := e.node(names[0])
	if hasTaint(node.Spec.Taints, wellknown.UnregisteredTaint()) {
		t.Error("the unregistered taint is still on the node")
	}
	if !hasTaint(node.Spec.Taints, teamTaint) || !hasTaint(node.Spec.Taints, agentTaint) {
		t.Errorf("node taints = %v, want the NodeClaim's taints and startup taints", node.Spec.Taints)
	}
	for _, k := range []string{wellknown.LabelNodePool, wellknown.LabelCapacityType, wellknown.LabelInstanceFamily} {
		if node.Labels[k] == "" || node.Labels[k] != nc.Labels[k] {
			t.Errorf("node label %s = %q, NodeClaim has %q", k, node.Labels[k], nc.Labels[k])
		}
	}
	if node.Labels[wellknown.LabelRegistered] != "true" {
		t.Errorf("node labels = %v, want %s=true", node.Labels, wellknown.LabelRegistered)
	}
	if node.Annotations[wellknown.AnnotationEC2NodeClassHash] != nc.Annotations[wellknown.AnnotationEC2NodeClassHash] {
		t.Errorf("node annotations = %v", node.Annotations)
	}
	if !slices.Contains(node.Finalizers, wellknown.FinalizerTermination) {
		t.Errorf("node finalizers = %v", node.Finalizers)
	}
	if len(node.OwnerReferences) != 1 || node.OwnerReferences[0].UID != nc.UID || node.OwnerReferences[0].Kind != "NodeClaim" {
		t.Errorf("node owner references = %+v", node.OwnerReferences)
	}
	wantCondition(t, nc, karpv1.ConditionTypeInitialized, metav1.ConditionUnknown)

	// Ready, but the startup taint is still there.
	if err := kubelet.MarkReady(e.ctx, kube, node.Name); err != nil {
		t.Fatal(err)
	}
	nc, _ = e.drive(e.r, nc.Name)
	if c := condition(nc, karpv1.ConditionTypeInitialized); c.Status != metav1.ConditionUnknown || c.Reason != ReasonStartupTaintsPresent {
		t.Fatalf("Initialized = %s/%s (%s), want Unknown/%s", c.Status, c.Reason, c.Message, ReasonStartupTaintsPresent)
	}

	// The agent removes its startup taint.
	node = e.node(node.Name)
	base := node.DeepCopy()
	node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == agentTaint.Key })
	if err := kube.Patch(e.ctx, node, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	nc, res := e.drive(e.r, nc.Name)
	wantCondition(t, nc, karpv1.ConditionTypeInitialized, metav1.ConditionTrue)
	wantCondition(t, nc, karpv1.ConditionTypeReady, metav1.ConditionTrue)
	if res.RequeueAfter != 0 {
		t.Errorf("an initialized NodeClaim asks to be requeued after %s", res.RequeueAfter)
	}
	node = e.node(node.Name)
	if node.Labels[wellknown.LabelInitialized] != "true" {
		t.Errorf("node labels = %v, want %s=true", node.Labels, wellknown.LabelInitialized)
	}
	if !hasTaint(node.Spec.Taints, teamTaint) || hasTaint(node.Spec.Taints, agentTaint) {
		t.Errorf("node taints = %v: the startup taint came back or the NodeClaim taint went", node.Spec.Taints)
	}
	for _, msg := range []string{"launched nodeclaim", "registered nodeclaim", "initialized nodeclaim"} {
		if !e.logs.has(msg) {
			t.Errorf("no %q log line in %v", msg, e.logs.lines)
		}
	}
	if n := len(e.aws.InstanceIDs()); n != 1 {
		t.Errorf("%d instances, want 1", n)
	}
}

func TestInsufficientCapacityDeletesNodeClaim(t *testing.T) {
	e := newEnv(t, 102)
	e.aws.InjectInsufficientCapacity(nil, nil, "", e.clk.Now().Add(time.Hour))
	e.create("lifecycle-ice")
	if nc, _ := e.drive(e.r, "lifecycle-ice"); nc != nil {
		t.Fatalf("NodeClaim still exists: %+v", nc.Status.Conditions)
	}
	if _, ok := e.rec.find(ReasonInsufficientCapacity); !ok {
		t.Errorf("no %s event in %v", ReasonInsufficientCapacity, e.rec.events)
	}
	if ids := e.aws.InstanceIDs(); len(ids) != 0 {
		t.Errorf("instances %v exist", ids)
	}
}

func TestNodeClassNotReadyDeletesNodeClaim(t *testing.T) {
	e := newEnv(t, 103)
	e.nc.Status.Conditions[0].Status = metav1.ConditionFalse
	e.nc.Status.Conditions[0].Reason = "SubnetsNotFound"
	e.nc.Status.Conditions[0].Message = "no subnet matches the selector"
	e.create("lifecycle-ncnr")
	if nc, _ := e.drive(e.r, "lifecycle-ncnr"); nc != nil {
		t.Fatalf("NodeClaim still exists: %+v", nc.Status.Conditions)
	}
	if ev, ok := e.rec.find(ReasonNodeClassNotReady); !ok || !strings.Contains(ev, "SubnetsNotFound") {
		t.Errorf("no %s event naming the cause in %v", ReasonNodeClassNotReady, e.rec.events)
	}
}

func TestCreateErrorRetriesThenLaunchTimeout(t *testing.T) {
	e := newEnv(t, 104)
	e.nc.Status.Conditions[0].Status = metav1.ConditionUnknown // readiness not known yet: retried
	e.create("lifecycle-retry")
	nc, res := e.drive(e.r, "lifecycle-retry")
	if nc == nil {
		t.Fatal("NodeClaim deleted on a retriable error")
	}
	if c := condition(nc, karpv1.ConditionTypeLaunched); c.Status != metav1.ConditionUnknown || c.Reason != "NodeClassReadinessUnknown" {
		t.Fatalf("Launched = %s/%s, want Unknown/NodeClassReadinessUnknown", c.Status, c.Reason)
	}
	if res.RequeueAfter != CreateRetry {
		t.Errorf("RequeueAfter = %s, want %s", res.RequeueAfter, CreateRetry)
	}
	e.clk.Step(LaunchTimeout)
	e.driveUntilGone("lifecycle-retry")
	if _, ok := e.rec.find(ReasonLaunchTimeout); !ok {
		t.Errorf("no %s event in %v", ReasonLaunchTimeout, e.rec.events)
	}
}

func TestRegistrationTimeoutTerminatesInstance(t *testing.T) {
	e := newEnv(t, 105)
	e.aws.RemoveAccessEntry(clusterName, e.world.NodeRoleARN)
	nc := e.launched("lifecycle-noauth")
	id := instanceID(t, nc.Status.ProviderID)

	e.clk.Step(fake.DefaultBootDelay + time.Second)
	if names, err := kubelet.Sync(e.ctx, kube, e.aws, clusterName); err != nil || len(names) != 0 {
		t.Fatalf("kubelet.Sync = %v, %v; want no node without an access entry", names, err)
	}
	nc, res := e.drive(e.r, nc.Name)
	wantCondition(t, nc, karpv1.ConditionTypeRegistered, metav1.ConditionUnknown)
	if want := RegistrationTimeout - fake.DefaultBootDelay - time.Second; res.RequeueAfter != want {
		t.Errorf("RequeueAfter = %s, want %s", res.RequeueAfter, want)
	}

	e.clk.Step(RegistrationTimeout)
	e.driveUntilGone(nc.Name)
	ev, ok := e.rec.find(ReasonRegistrationTimeout)
	if !ok {
		t.Fatalf("no %s event in %v", ReasonRegistrationTimeout, e.rec.events)
	}
	for _, cause := range []string{"access entry", "API server", "user data"} {
		if !strings.Contains(ev, cause) {
			t.Errorf("event %q does not mention %q", ev, cause)
		}
	}
	if info, ok := e.aws.Instance(id); ok && info.State != fake.StateTerminated {
		t.Errorf("instance %s is %s, want terminated", id, info.State)
	}
	if !e.logs.has("deleted nodeclaim") {
		t.Errorf("no \"deleted nodeclaim\" log line")
	}
	want := fmt.Sprintf(`
# HELP %[1]s Number of NodeClaims terminated. Labeled by the owning nodepool, capacity type and zone.
# TYPE %[1]s counter
%[1]s{capacity_type="on-demand",nodepool="default",zone="%[2]s"} 1
`, metrics.NameNodeClaimsTerminated, nc.Labels[wellknown.LabelTopologyZone])
	if err := testutil.GatherAndCompare(e.reg, strings.NewReader(want), metrics.NameNodeClaimsTerminated); err != nil {
		t.Error(err)
	}
}

// nodePool creates a NodePool for the test and deletes it afterwards.
func (e *env) nodePool(name string) *karpv1.NodePool {
	e.t.Helper()
	np := &karpv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
				{Key: wellknown.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{wellknown.ArchAMD64}},
			},
			NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
		}}},
	}
	if err := kube.Create(e.ctx, np); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = kube.Delete(context.Background(), np) })
	return np
}

func TestRegistrationHealthOnNodePool(t *testing.T) {
	e := newEnv(t, 112)
	np := e.nodePool("lifecycle-health")
	inPool := func(nc *karpv1.NodeClaim) { nc.Labels[wellknown.LabelNodePool] = np.Name }
	health := func() (*karpv1.NodePool, metav1.Condition) {
		t.Helper()
		got := &karpv1.NodePool{}
		if err := kube.Get(e.ctx, client.ObjectKey{Name: np.Name}, got); err != nil {
			t.Fatal(err)
		}
		c := meta.FindStatusCondition(got.Status.Conditions, karpv1.ConditionTypeNodeRegistrationHealthy)
		if c == nil {
			t.Fatalf("NodePool %s has no %s condition: %+v", np.Name, karpv1.ConditionTypeNodeRegistrationHealthy, got.Status.Conditions)
		}
		return got, *c
	}

	// Two nodes in a row cannot join: the node role has no access entry.
	e.aws.RemoveAccessEntry(clusterName, e.world.NodeRoleARN)
	for _, name := range []string{"lifecycle-health-a", "lifecycle-health-b"} {
		e.launched(name, inPool)
		e.clk.Step(RegistrationTimeout + time.Second)
		e.driveUntilGone(name)
	}
	got, c := health()
	if c.Status != metav1.ConditionFalse || c.Reason != ReasonRegistrationFailed {
		t.Fatalf("%s = %s/%s (%s), want False/%s", c.Type, c.Status, c.Reason, c.Message, ReasonRegistrationFailed)
	}
	for _, s := range []string{"2 of the last 2", "access entry"} {
		if !strings.Contains(c.Message, s) {
			t.Errorf("message %q does not say %q", c.Message, s)
		}
	}
	if a := got.Annotations[AnnotationRegistrationOutcomes]; a != "0/FF" {
		t.Errorf("%s = %q, want 0/FF", AnnotationRegistrationOutcomes, a)
	}

	// The access entry is fixed and the next node joins; the failures are
	// still remembered.
	if err := e.aws.AddAccessEntry(clusterName, e.world.NodeRoleARN); err != nil {
		t.Fatal(err)
	}
	nc := e.launched("lifecycle-health-c", inPool)
	e.clk.Step(fake.DefaultBootDelay + time.Second)
	if names, err := kubelet.Sync(e.ctx, kube, e.aws, clusterName); err != nil || len(names) != 1 {
		t.Fatalf("kubelet.Sync = %v, %v; want one node", names, err)
	}
	nc, _ = e.drive(e.r, nc.Name)
	wantCondition(t, nc, karpv1.ConditionTypeRegistered, metav1.ConditionTrue)
	got, c = health()
	if a := got.Annotations[AnnotationRegistrationOutcomes]; a != "0/FFS" {
		t.Errorf("%s = %q, want 0/FFS", AnnotationRegistrationOutcomes, a)
	}
	if c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "2 of the last 3") {
		t.Errorf("%s = %s (%s), want False with 2 of the last 3 failed", c.Type, c.Status, c.Message)
	}
}

func TestOutcomes(t *testing.T) {
	var o outcomes
	for range 12 {
		o = o.add(1, false)
	}
	if o.String() != "1/FFFFFFFFFF" {
		t.Errorf("history = %s, want ten failures", o)
	}
	o = parseOutcomes(o.add(1, true).String())
	if o.history != "FFFFFFFFFS" || o.generation != 1 {
		t.Errorf("parsed %+v", o)
	}
	if o = o.add(2, true); o.String() != "2/S" {
		t.Errorf("a new node class generation kept %s", o)
	}
	for _, tt := range []struct {
		history string
		want    metav1.ConditionStatus
	}{
		{"", metav1.ConditionTrue},
		{"F", metav1.ConditionTrue},
		{"FS", metav1.ConditionFalse},
		{"SFS", metav1.ConditionTrue},
		{"SFFS", metav1.ConditionFalse},
	} {
		if got, _, _ := (outcomes{history: tt.history}).health("p"); got != tt.want {
			t.Errorf("health(%q) = %s, want %s", tt.history, got, tt.want)
		}
	}
	if o := parseOutcomes("garbage"); o.history != "" {
		t.Errorf("parsed garbage as %+v", o)
	}
}

func TestDeleteLaunchedNodeClaimWithoutNode(t *testing.T) {
	e := newEnv(t, 106)
	nc := e.launched("lifecycle-delete", func(nc *karpv1.NodeClaim) {
		nc.Spec.TerminationGracePeriod = &karpv1.Duration{Duration: time.Hour}
	})
	id := instanceID(t, nc.Status.ProviderID)
	if err := kube.Delete(e.ctx, nc); err != nil {
		t.Fatal(err)
	}
	nc, _ = e.drive(e.r, nc.Name)
	if nc == nil {
		t.Fatal("NodeClaim gone before its instance terminated")
	}
	wantCondition(t, nc, karpv1.ConditionTypeInstanceTerminating, metav1.ConditionTrue)
	want := nc.DeletionTimestamp.Add(time.Hour).UTC().Format(time.RFC3339)
	if got := nc.Annotations[wellknown.AnnotationNodeClaimTerminationTimestamp]; got != want {
		t.Errorf("termination timestamp = %q, want %q", got, want)
	}
	e.driveUntilGone(nc.Name)
	if info, ok := e.aws.Instance(id); ok && info.State != fake.StateTerminated {
		t.Errorf("instance %s is %s, want terminated", id, info.State)
	}
}

func TestDeleteRegisteredNodeClaimDeletesNodeFirst(t *testing.T) {
	e := newEnv(t, 107)
	nc := e.launched("lifecycle-delete-node")
	e.clk.Step(fake.DefaultBootDelay + time.Second)
	names, err := kubelet.Sync(e.ctx, kube, e.aws, clusterName)
	if err != nil || len(names) != 1 {
		t.Fatalf("kubelet.Sync = %v, %v", names, err)
	}
	nc, _ = e.drive(e.r, nc.Name)
	wantCondition(t, nc, karpv1.ConditionTypeRegistered, metav1.ConditionTrue)
	calls := e.aws.Calls("TerminateInstances")

	if err := kube.Delete(e.ctx, nc); err != nil {
		t.Fatal(err)
	}
	nc, _ = e.drive(e.r, nc.Name)
	if nc == nil {
		t.Fatal("NodeClaim gone while its node exists")
	}
	node := e.node(names[0])
	if node.DeletionTimestamp.IsZero() {
		t.Fatal("the node was not deleted")
	}
	if got := e.aws.Calls("TerminateInstances"); got != calls {
		t.Errorf("the instance was terminated while its node was draining")
	}
	// The node's termination controller drains it and lets it go.
	base := node.DeepCopy()
	node.Finalizers = nil
	if err := kube.Patch(e.ctx, node, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	e.driveUntilGone(nc.Name)
	if info, ok := e.aws.Instance(instanceID(t, nc.Status.ProviderID)); ok && info.State != fake.StateTerminated {
		t.Errorf("instance is %s, want terminated", info.State)
	}
}

func TestRestartDoesNotLaunchAgain(t *testing.T) {
	e := newEnv(t, 108)
	nc := e.launched("lifecycle-restart")
	ids, fleets := e.aws.InstanceIDs(), e.aws.Calls("CreateFleet")

	fresh := New(kube, e.p, e.clk, e.rec, nil)
	got, _ := e.drive(fresh, nc.Name)
	if got.Status.ProviderID != nc.Status.ProviderID {
		t.Errorf("provider ID changed from %s to %s", nc.Status.ProviderID, got.Status.ProviderID)
	}
	if after := e.aws.InstanceIDs(); !slices.Equal(after, ids) || e.aws.Calls("CreateFleet") != fleets {
		t.Errorf("instances %v -> %v, CreateFleet calls %d -> %d", ids, after, fleets, e.aws.Calls("CreateFleet"))
	}
}

// crashAfterCreate leaves a NodeClaim as a controller that crashed between
// launching the instance and recording it would: finalizer and Launched
// condition set, an instance tagged with its name, no provider ID.
func (e *env) crashAfterCreate(name string) (*karpv1.NodeClaim, string) {
	e.t.Helper()
	nc := e.create(name)
	base := nc.DeepCopy()
	addFinalizer(&nc.ObjectMeta)
	if err := kube.Patch(e.ctx, nc, client.MergeFrom(base)); err != nil {
		e.t.Fatal(err)
	}
	base = nc.DeepCopy()
	e.r.initConditions(nc)
	if err := kube.Status().Patch(e.ctx, nc, client.MergeFrom(base)); err != nil {
		e.t.Fatal(err)
	}
	created, err := e.p.Create(e.ctx, nc)
	if err != nil {
		e.t.Fatal(err)
	}
	return nc, created.Status.ProviderID
}

func TestCrashAfterCreateAdoptsInstance(t *testing.T) {
	e := newEnv(t, 109)
	nc, providerID := e.crashAfterCreate("lifecycle-adopt")
	fleets := e.aws.Calls("CreateFleet")
	got, _ := e.drive(New(kube, e.p, e.clk, e.rec, nil), nc.Name)
	wantCondition(t, got, karpv1.ConditionTypeLaunched, metav1.ConditionTrue)
	if got.Status.ProviderID != providerID {
		t.Errorf("provider ID = %q, want the launched %q", got.Status.ProviderID, providerID)
	}
	if e.aws.Calls("CreateFleet") != fleets || len(e.aws.InstanceIDs()) != 1 {
		t.Errorf("launched again: %d CreateFleet calls, instances %v", e.aws.Calls("CreateFleet")-fleets, e.aws.InstanceIDs())
	}
}

func TestDeleteDuringLaunchTerminatesUnrecordedInstance(t *testing.T) {
	e := newEnv(t, 110)
	nc, providerID := e.crashAfterCreate("lifecycle-leak")
	if err := kube.Delete(e.ctx, nc); err != nil {
		t.Fatal(err)
	}
	e.driveUntilGone(nc.Name)
	id := instanceID(t, providerID)
	if info, ok := e.aws.Instance(id); ok && info.State != fake.StateTerminated {
		t.Errorf("instance %s is %s: leaked", id, info.State)
	}
}

// TestUnderManager runs the Reconciler as the controller binary does: under a
// manager whose cache serves the provider-ID indexes, woken by NodeClaim and
// Node events rather than driven by hand.
func TestUnderManager(t *testing.T) {
	e := newEnv(t, 111)
	mgr, err := manager.New(kubeCfg, manager.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	r := New(mgr.GetClient(), e.p, e.clk, mgr.GetEventRecorder(Name), nil)
	if err := r.Register(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})

	e.create("lifecycle-manager")
	waitFor := func(what string, ok func(*karpv1.NodeClaim) bool) *karpv1.NodeClaim {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if nc, found := e.get("lifecycle-manager"); found && ok(nc) {
				return nc
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("timed out waiting for %s", what)
		return nil
	}
	waitFor("launch", func(nc *karpv1.NodeClaim) bool { return isTrue(nc, karpv1.ConditionTypeLaunched) })
	e.clk.Step(fake.DefaultBootDelay + time.Second)
	names, err := kubelet.Sync(e.ctx, kube, e.aws, clusterName)
	if err != nil || len(names) != 1 {
		t.Fatalf("kubelet.Sync = %v, %v", names, err)
	}
	// Only the Node's creation can wake the controller now.
	waitFor("registration", func(nc *karpv1.NodeClaim) bool { return isTrue(nc, karpv1.ConditionTypeRegistered) })
	if err := kubelet.MarkReady(e.ctx, kube, names[0]); err != nil {
		t.Fatal(err)
	}
	waitFor("initialization", func(nc *karpv1.NodeClaim) bool { return isTrue(nc, karpv1.ConditionTypeInitialized) })
}
