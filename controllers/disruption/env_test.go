package disruption

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/settings"
	"github.com/stevedore-autoscaler/stevedore/controllers/metrics"
	"github.com/stevedore-autoscaler/stevedore/controllers/nodeclaim/lifecycle"
	"github.com/stevedore-autoscaler/stevedore/state"
	"github.com/stevedore-autoscaler/stevedore/test/apiserver"
	"github.com/stevedore-autoscaler/stevedore/test/kubelet"
)

const clusterName = "test"

var (
	kube    client.Client
	kubeCfg *rest.Config
	scheme  = apiserver.Scheme()
	runs    atomic.Int64
)

func TestMain(m *testing.M) {
	os.Exit(apiserver.RunTests(m, func(cfg *rest.Config, c client.Client) { kubeCfg, kube = cfg, c }))
}

// event is one recorded event.
type event struct {
	kind, name, eventType, reason, note string
}

// recorder keeps the events recorded.
type recorder struct {
	mu     sync.Mutex
	events []event
}

func (r *recorder) Eventf(regarding runtime.Object, _ runtime.Object, eventType, reason, _, note string, args ...any) {
	o := regarding.(client.Object)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, event{kind: fmt.Sprintf("%T", o), name: o.GetName(), eventType: eventType, reason: reason, note: fmt.Sprintf(note, args...)})
}

// about returns the events about the object named with the reason given.
func (r *recorder) about(name, reason string) []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []event
	for _, e := range r.events {
		if e.name == name && e.reason == reason {
			out = append(out, e)
		}
	}
	return out
}

func (r *recorder) count(reason string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.events {
		if e.reason == reason {
			n++
		}
	}
	return n
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

// find returns the log lines whose message contains msg.
func (l *logLines) find(msg string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, s := range l.lines {
		if i := strings.Index(s, `"msg"="`); i >= 0 && strings.Contains(s[i:], msg) {
			out = append(out, s)
		}
	}
	return out
}

// env is one test's world: its own in-memory AWS, clock, state, namespace,
// EC2NodeClass and NodePool, sharing the API server with the other tests.
// The test plays the informers (sync), the kubelets and the controllers
// other than the one under test, each at the moment it chooses.
type env struct {
	t     *testing.T
	ctx   context.Context
	name  string // of the namespace, the EC2NodeClass and the NodePool
	clk   *clocktesting.FakeClock
	aws   *fake.AWS
	world *fake.ClusterWorld
	cloud *aws.Provider
	st    *state.Cluster
	rec   *recorder
	logs  *logLines
	reg   *prometheus.Registry
	m     *metrics.Metrics
	opts  Options
	c     *Controller
	lc    *lifecycle.Reconciler
}

func newEnv(t *testing.T, name string, seed uint64) *env {
	t.Helper()
	// The API server stamps creation and deletion times with its own clock;
	// starting the fake clock at the real time keeps the two comparable.
	clk := clocktesting.NewFakeClock(time.Now().UTC().Truncate(time.Second))
	f := fake.New(fake.Options{Seed: seed, Clock: clk, InstanceTypes: []string{"c6i.large", "m6i.large", "c6i.xlarge", "m6i.xlarge"}})
	w, err := f.StandardCluster(clusterName, "1.33")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.AddInstanceProfile("test-profile", w.NodeRole); err != nil {
		t.Fatal(err)
	}
	logs := &logLines{}
	name = fmt.Sprintf("%s-%d", name, runs.Add(1))
	e := &env{t: t, name: name, clk: clk, aws: f, world: w, st: state.NewCluster(), rec: &recorder{}, logs: logs}
	e.ctx = log.IntoContext(context.Background(), funcr.New(logs.add, funcr.Options{}))
	s := settings.Default()
	s.ClusterName = clusterName
	e.cloud, err = aws.New(aws.Options{
		Clients:  f.Clients(),
		Settings: s,
		Clock:    clk,
		NodeClass: func(ctx context.Context, name string) (*awsv1.EC2NodeClass, error) {
			nc := &awsv1.EC2NodeClass{}
			if err := kube.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
				return nil, client.IgnoreNotFound(err)
			}
			return nc, nil
		},
		Cluster: aws.ClusterInfo{Endpoint: "https://example.eks.amazonaws.com", CABundle: "Q0E=", ServiceCIDR: "10.100.0.0/16", DNS: []string{"10.100.0.10"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	e.reg = prometheus.NewRegistry()
	if e.m, err = metrics.New(e.reg); err != nil {
		t.Fatal(err)
	}
	e.c = New(kube, e.st, e.cloud, clk, e.rec, e.opts, e.m)
	e.lc = lifecycle.New(kube, e.cloud, clk, e.rec, e.m)
	t.Cleanup(e.cleanup)
	if err := kube.Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	e.nodeClass()
	return e
}

// restart replaces the controller and the cluster state with new ones, as a
// new process (or a new leader) would start: the state is rebuilt from the
// API server, and nothing the old controller remembered survives.
func (e *env) restart() {
	e.st = state.NewCluster()
	e.c = New(kube, e.st, e.cloud, e.clk, e.rec, e.opts, e.m)
}

// nodeClass creates the test's EC2NodeClass, Ready.
func (e *env) nodeClass() {
	e.t.Helper()
	var subnets []awsv1.Subnet
	for i, id := range e.world.SubnetIDs {
		z := e.aws.Zones()[i]
		zid, _ := e.aws.ZoneID(z)
		subnets = append(subnets, awsv1.Subnet{ID: id, Zone: z, ZoneID: zid})
	}
	arch := []corev1.NodeSelectorRequirement{{Key: wellknown.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{wellknown.ArchAMD64}}}
	nc := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: e.name},
		Spec: awsv1.EC2NodeClassSpec{
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": clusterName}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": clusterName}}},
			Role:                       e.world.NodeRole,
		},
	}
	if err := kube.Create(e.ctx, nc); err != nil {
		e.t.Fatal(err)
	}
	nc.Status = awsv1.EC2NodeClassStatus{
		Subnets:         subnets,
		SecurityGroups:  []awsv1.SecurityGroup{{ID: e.world.SecurityGroupID}},
		AMIs:            []awsv1.AMI{{ID: e.world.Images["al2023/x86_64/standard"], Requirements: arch}},
		InstanceProfile: "test-profile",
		Conditions: []metav1.Condition{{
			Type: awsv1.ConditionTypeReady, Status: metav1.ConditionTrue, ObservedGeneration: nc.Generation, Reason: "Ready",
			LastTransitionTime: metav1.NewTime(e.clk.Now()),
		}},
	}
	if err := kube.Status().Update(e.ctx, nc); err != nil {
		e.t.Fatal(err)
	}
}

// nodePool creates the test's NodePool: on-demand amd64 nodes, with the
// budgets given (none: the default 10%).
func (e *env) nodePool(mutate ...func(*karpv1.NodePool)) *karpv1.NodePool {
	e.t.Helper()
	np := &karpv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: e.name},
		Spec: karpv1.NodePoolSpec{
			Template: karpv1.NodeClaimTemplate{
				Spec: karpv1.NodeClaimTemplateSpec{
					Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
						{Key: wellknown.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{wellknown.ArchAMD64}},
						{Key: wellknown.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{wellknown.CapacityTypeOnDemand}},
					},
					NodeClassRef: &karpv1.NodeClassReference{Group: wellknown.GroupAWS, Kind: "EC2NodeClass", Name: e.name},
				},
			},
		},
	}
	for _, m := range mutate {
		m(np)
	}
	if err := kube.Create(e.ctx, np); err != nil {
		e.t.Fatal(err)
	}
	return np
}

// driftBudget is the seeds' rollout budget: drifted nodes one at a time.
func driftBudget(np *karpv1.NodePool) {
	np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "1", Reasons: []karpv1.DisruptionReason{karpv1.DisruptionReasonDrifted}}}
}

// node launches an instance of the given type for a new NodeClaim of the
// test's NodePool and brings it up: launched, registered, initialized. It
// returns the NodeClaim.
func (e *env) node(instanceType string) *karpv1.NodeClaim {
	e.t.Helper()
	nc := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{GenerateName: e.name + "-", Labels: map[string]string{wellknown.LabelNodePool: e.name}},
		Spec: karpv1.NodeClaimSpec{
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
				{Key: wellknown.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{instanceType}},
				{Key: wellknown.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{wellknown.CapacityTypeOnDemand}},
				{Key: wellknown.LabelNodePool, Operator: corev1.NodeSelectorOpIn, Values: []string{e.name}},
			},
			NodeClassRef: &karpv1.NodeClassReference{Group: wellknown.GroupAWS, Kind: "EC2NodeClass", Name: e.name},
		},
	}
	if err := kube.Create(e.ctx, nc); err != nil {
		e.t.Fatal(err)
	}
	e.bringUp(nc.Name)
	return e.nodeClaim(nc.Name)
}

// drive reconciles a NodeClaim with the lifecycle controller a few times.
func (e *env) drive(name string) {
	e.t.Helper()
	for range 4 {
		if _, err := e.lc.Reconcile(e.ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}); err != nil {
			e.t.Fatalf("lifecycle %s: %v", name, err)
		}
	}
}

// bringUp takes a NodeClaim from created to initialized, playing the
// lifecycle controller and the kubelet.
func (e *env) bringUp(name string) {
	e.t.Helper()
	e.drive(name)
	if !meta.IsStatusConditionTrue(e.nodeClaim(name).Status.Conditions, karpv1.ConditionTypeLaunched) {
		e.t.Fatalf("NodeClaim %s did not launch: %+v", name, e.nodeClaim(name).Status.Conditions)
	}
	e.clk.Step(fake.DefaultBootDelay + time.Second)
	if _, err := kubelet.Sync(e.ctx, kube, e.aws, clusterName); err != nil {
		e.t.Fatal(err)
	}
	e.drive(name)
	nc := e.nodeClaim(name)
	if nc.Status.NodeName == "" {
		e.t.Fatalf("NodeClaim %s did not register: %+v", name, nc.Status.Conditions)
	}
	if err := kubelet.MarkReady(e.ctx, kube, nc.Status.NodeName); err != nil {
		e.t.Fatal(err)
	}
	e.drive(name)
	if !meta.IsStatusConditionTrue(e.nodeClaim(name).Status.Conditions, karpv1.ConditionTypeInitialized) {
		e.t.Fatalf("NodeClaim %s did not initialize: %+v", name, e.nodeClaim(name).Status.Conditions)
	}
}

func (e *env) nodeClaim(name string) *karpv1.NodeClaim {
	e.t.Helper()
	nc := &karpv1.NodeClaim{}
	if err := kube.Get(e.ctx, client.ObjectKey{Name: name}, nc); err != nil {
		e.t.Fatalf("getting NodeClaim %s: %v", name, err)
	}
	return nc
}

func (e *env) getNode(name string) *corev1.Node {
	e.t.Helper()
	n := &corev1.Node{}
	if err := kube.Get(e.ctx, client.ObjectKey{Name: name}, n); err != nil {
		e.t.Fatalf("getting Node %s: %v", name, err)
	}
	return n
}

// setCondition sets a condition on a NodeClaim, playing the controllers
// that own it (Drifted and Consolidatable are the NodeClaim disruption
// controller's).
func (e *env) setCondition(name, typ string, status metav1.ConditionStatus, reason string) {
	e.t.Helper()
	nc := e.nodeClaim(name)
	base := nc.DeepCopy()
	meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, ObservedGeneration: nc.Generation, LastTransitionTime: metav1.NewTime(e.clk.Now()),
	})
	if err := kube.Status().Patch(e.ctx, nc, client.MergeFrom(base)); err != nil {
		e.t.Fatal(err)
	}
}

// pod creates a running, ready pod bound to the node, requesting cpu.
func (e *env) pod(name, node, cpu string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	e.t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.name, Name: name, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			NodeName: node,
			Containers: []corev1.Container{{
				Name:  "app",
				Image: "registry.example/app:1",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU:    resource.MustParse(cpu),
					corev1.ResourceMemory: resource.MustParse("256Mi"),
				}},
			}},
		},
	}
	for _, m := range mutate {
		m(p)
	}
	if err := kube.Create(e.ctx, p); err != nil {
		e.t.Fatal(err)
	}
	p.Status = corev1.PodStatus{
		Phase:      corev1.PodRunning,
		StartTime:  &metav1.Time{Time: e.clk.Now()},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
	}
	if err := kube.Status().Update(e.ctx, p); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// pdb creates a PodDisruptionBudget over the app=web pods and plays the
// disruption controller by writing its status with allowed disruptions.
func (e *env) pdb(maxUnavailable int32, allowed int32) *policyv1.PodDisruptionBudget {
	e.t.Helper()
	mu := intstr.FromInt32(maxUnavailable)
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: e.name},
		Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &mu, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
	}
	if err := kube.Create(e.ctx, pdb); err != nil {
		e.t.Fatal(err)
	}
	e.allow(pdb, allowed)
	return pdb
}

func (e *env) allow(pdb *policyv1.PodDisruptionBudget, allowed int32) {
	e.t.Helper()
	if err := kube.Get(e.ctx, client.ObjectKeyFromObject(pdb), pdb); err != nil {
		e.t.Fatal(err)
	}
	pdb.Status = policyv1.PodDisruptionBudgetStatus{
		ObservedGeneration: pdb.Generation,
		DisruptionsAllowed: allowed,
		CurrentHealthy:     2,
		DesiredHealthy:     2 - allowed,
		ExpectedPods:       2,
	}
	if err := kube.Status().Update(e.ctx, pdb); err != nil {
		e.t.Fatal(err)
	}
}

// sync feeds the state what the API server holds, as the informers would,
// forgetting what it no longer holds.
func (e *env) sync() {
	e.t.Helper()
	var nps karpv1.NodePoolList
	var ncls awsv1.EC2NodeClassList
	var ncs karpv1.NodeClaimList
	var nodes corev1.NodeList
	var pods corev1.PodList
	var pdbs policyv1.PodDisruptionBudgetList
	for _, l := range []client.ObjectList{&nps, &ncls, &ncs, &nodes, &pods} {
		if err := kube.List(e.ctx, l); err != nil {
			e.t.Fatal(err)
		}
	}
	if err := kube.List(e.ctx, &pdbs, client.InNamespace(e.name)); err != nil {
		e.t.Fatal(err)
	}
	for i := range nps.Items {
		e.st.UpdateNodePool(&nps.Items[i])
	}
	for i := range ncls.Items {
		e.st.UpdateEC2NodeClass(&ncls.Items[i])
	}
	seen := map[string]bool{}
	for i := range ncs.Items {
		e.st.UpdateNodeClaim(&ncs.Items[i])
		seen["nc/"+ncs.Items[i].Name] = true
	}
	for i := range nodes.Items {
		e.st.UpdateNode(&nodes.Items[i])
		seen["node/"+nodes.Items[i].Name] = true
	}
	for i := range pods.Items {
		e.st.UpdatePod(&pods.Items[i])
		seen["pod/"+pods.Items[i].Namespace+"/"+pods.Items[i].Name] = true
	}
	for i := range pdbs.Items {
		e.st.UpdatePodDisruptionBudget(&pdbs.Items[i])
	}
	snap := e.st.Snapshot(e.clk.Now())
	for _, n := range snap.Nodes {
		if n.NodeClaim != nil && !seen["nc/"+n.NodeClaim.Name] {
			e.st.DeleteNodeClaim(n.NodeClaim.Name)
		}
		if n.Node != nil && !seen["node/"+n.Node.Name] {
			e.st.DeleteNode(n.Node.Name)
		}
		for _, p := range n.Pods {
			if !seen["pod/"+p.Namespace+"/"+p.Name] {
				e.st.DeletePod(p.Namespace, p.Name)
			}
		}
	}
	for _, p := range snap.PendingPods {
		if !seen["pod/"+p.Namespace+"/"+p.Name] {
			e.st.DeletePod(p.Namespace, p.Name)
		}
	}
}

// pass syncs the state and runs one pass of the controller.
func (e *env) pass() reconcile.Result {
	e.t.Helper()
	e.sync()
	res, err := e.c.Reconcile(e.ctx, Request())
	if err != nil {
		e.t.Fatalf("Reconcile: %v", err)
	}
	return res
}

// replacements returns the NodeClaims launched for the command with ID id.
func (e *env) replacements(id string) []karpv1.NodeClaim {
	e.t.Helper()
	var list karpv1.NodeClaimList
	if err := kube.List(e.ctx, &list); err != nil {
		e.t.Fatal(err)
	}
	return slices.DeleteFunc(list.Items, func(nc karpv1.NodeClaim) bool { return nc.Annotations[AnnotationReplacementFor] != id || id == "" })
}

// tainted reports whether the node carries the disrupted taint.
func (e *env) tainted(node string) bool {
	e.t.Helper()
	return hasDisruptedTaint(e.getNode(node))
}

// disruptionReason returns the reason of the NodeClaim's DisruptionReason
// condition, "" when it has none.
func (e *env) disruptionReason(name string) string {
	e.t.Helper()
	c := meta.FindStatusCondition(e.nodeClaim(name).Status.Conditions, karpv1.ConditionTypeDisruptionReason)
	if c == nil || c.Status != metav1.ConditionTrue {
		return ""
	}
	return c.Reason
}

// deleting reports whether the NodeClaim is being deleted (or gone).
func (e *env) deleting(name string) bool {
	e.t.Helper()
	nc := &karpv1.NodeClaim{}
	if err := kube.Get(e.ctx, client.ObjectKey{Name: name}, nc); err != nil {
		return client.IgnoreNotFound(err) == nil
	}
	return !nc.DeletionTimestamp.IsZero()
}

// marked reports whether the state has the node marked for deletion.
func (e *env) marked(name string) bool {
	n, ok := e.st.Snapshot(e.clk.Now()).Node(name)
	return ok && n.MarkedForDeletion
}

// cleanup removes what the test left in the shared API server.
func (e *env) cleanup() {
	ctx := context.Background()
	strip := func(o client.Object) {
		if len(o.GetFinalizers()) > 0 {
			_ = kube.Patch(ctx, o, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
		}
		_ = kube.Delete(ctx, o)
	}
	var nodes corev1.NodeList
	if err := kube.List(ctx, &nodes); err == nil {
		for i := range nodes.Items {
			strip(&nodes.Items[i])
		}
	}
	var ncs karpv1.NodeClaimList
	if err := kube.List(ctx, &ncs); err == nil {
		for i := range ncs.Items {
			strip(&ncs.Items[i])
		}
	}
	_ = kube.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(e.name), client.GracePeriodSeconds(0))
	_ = kube.DeleteAllOf(ctx, &policyv1.PodDisruptionBudget{}, client.InNamespace(e.name))
	_ = kube.Delete(ctx, &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: e.name}})
	_ = kube.Delete(ctx, &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: e.name}})
	_ = kube.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.name}})
}
