package provisioning

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
	"github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
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
	"github.com/stevedore-autoscaler/stevedore/controllers/nodeclaim/lifecycle"
	"github.com/stevedore-autoscaler/stevedore/controllers/nodepool/hash"
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
	kind, namespace, name string
	eventType, reason     string
	note                  string
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
	r.events = append(r.events, event{
		kind: fmt.Sprintf("%T", o), namespace: o.GetNamespace(), name: o.GetName(),
		eventType: eventType, reason: reason, note: fmt.Sprintf(note, args...),
	})
}

// about returns the events about the object with the reason given.
func (r *recorder) about(namespace, name, reason string) []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []event
	for _, e := range r.events {
		if e.namespace == namespace && e.name == name && e.reason == reason {
			out = append(out, e)
		}
	}
	return out
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

// env is one test's world: its own in-memory AWS, clock, state, namespace,
// EC2NodeClass and NodePool, sharing the API server with the other tests.
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
	p     *Provisioner
	reg   *prometheus.Registry
	m     *metrics.Metrics
}

func newEnv(t *testing.T, name string, seed uint64) *env {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	f := fake.New(fake.Options{Seed: seed, Clock: clk, InstanceTypes: []string{"c6i.large", "m6i.large", "c6i.xlarge", "m6i.xlarge"}})
	w, err := f.StandardCluster(clusterName, "1.33")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.AddInstanceProfile("test-profile", w.NodeRole); err != nil {
		t.Fatal(err)
	}
	logs := &logLines{}
	// Namespaces are never finished deleting here (no namespace
	// controller runs), so each run of a test takes fresh names.
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
	// The node gauges describe the cluster state, as the controller wiring
	// sets them up.
	e.m.WatchState(metrics.StateOptions{State: e.st, Clock: clk})
	e.p = New(kube, e.st, e.cloud, clk, e.rec, Options{}, e.m)
	t.Cleanup(e.cleanup)
	if err := kube.Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	return e
}

// nodeClass creates the test's EC2NodeClass with the given Ready condition.
func (e *env) nodeClass(ready metav1.ConditionStatus, reason, message string) {
	e.t.Helper()
	var subnets []awsv1.Subnet
	for i, id := range e.world.SubnetIDs {
		z := e.aws.Zones()[i]
		zid, _ := e.aws.ZoneID(z)
		subnets = append(subnets, awsv1.Subnet{ID: id, Zone: z, ZoneID: zid})
	}
	arch := func(a string) []corev1.NodeSelectorRequirement {
		return []corev1.NodeSelectorRequirement{{Key: wellknown.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{a}}}
	}
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
		Subnets:        subnets,
		SecurityGroups: []awsv1.SecurityGroup{{ID: e.world.SecurityGroupID}},
		AMIs: []awsv1.AMI{
			{ID: e.world.Images["al2023/x86_64/standard"], Requirements: arch(wellknown.ArchAMD64)},
			{ID: e.world.Images["al2023/arm64/standard"], Requirements: arch(wellknown.ArchARM64)},
		},
		InstanceProfile: "test-profile",
		Conditions: []metav1.Condition{{
			Type: awsv1.ConditionTypeReady, Status: ready, ObservedGeneration: nc.Generation, Reason: reason, Message: message,
			LastTransitionTime: metav1.NewTime(e.clk.Now()),
		}},
	}
	if err := kube.Status().Update(e.ctx, nc); err != nil {
		e.t.Fatal(err)
	}
}

var (
	teamTaint  = corev1.Taint{Key: "example.com/team", Value: "a", Effect: corev1.TaintEffectNoSchedule}
	agentTaint = corev1.Taint{Key: "example.com/agent-not-ready", Effect: corev1.TaintEffectNoExecute}
)

// nodePool creates the test's NodePool.
func (e *env) nodePool(mutate ...func(*karpv1.NodePool)) *karpv1.NodePool {
	e.t.Helper()
	np := &karpv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: e.name},
		Spec: karpv1.NodePoolSpec{
			Template: karpv1.NodeClaimTemplate{
				Metadata: karpv1.NodeClaimTemplateMetadata{
					Labels:      map[string]karpv1.LabelValue{"example.com/team": "a"},
					Annotations: map[string]string{"example.com/owner": "team-a"},
				},
				Spec: karpv1.NodeClaimTemplateSpec{
					Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
						{Key: wellknown.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{wellknown.ArchAMD64}},
						{Key: wellknown.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{wellknown.CapacityTypeOnDemand}},
					},
					Taints:                 []corev1.Taint{teamTaint},
					StartupTaints:          []corev1.Taint{agentTaint},
					NodeClassRef:           &karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: e.name},
					ExpireAfter:            karpv1.NewNillableDuration(24 * time.Hour),
					TerminationGracePeriod: &karpv1.Duration{Duration: time.Hour},
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

// pod creates a pending pod and marks it unschedulable, as kube-scheduler
// would.
func (e *env) pod(name string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	e.t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.name, Name: name},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:  "app",
				Image: "registry.example/app:1",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU:    resource.MustParse("500m"),
					corev1.ResourceMemory: resource.MustParse("512Mi"),
				}},
			}},
			Tolerations: []corev1.Toleration{{Key: teamTaint.Key, Operator: corev1.TolerationOpEqual, Value: teamTaint.Value, Effect: teamTaint.Effect}},
		},
	}
	for _, m := range mutate {
		m(pod)
	}
	if err := kube.Create(e.ctx, pod); err != nil {
		e.t.Fatal(err)
	}
	pod.Status.Conditions = []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: "0/0 nodes are available", LastTransitionTime: metav1.NewTime(e.clk.Now()),
	}}
	if err := kube.Status().Update(e.ctx, pod); err != nil {
		e.t.Fatal(err)
	}
	return pod
}

// sync feeds the state what the API server holds, as the informers would.
func (e *env) sync() {
	e.t.Helper()
	var nps karpv1.NodePoolList
	var ncls awsv1.EC2NodeClassList
	var ncs karpv1.NodeClaimList
	var nodes corev1.NodeList
	var pods corev1.PodList
	var daemonSets appsv1.DaemonSetList
	var limitRanges corev1.LimitRangeList
	for _, l := range []client.ObjectList{&nps, &ncls, &ncs, &nodes} {
		if err := kube.List(e.ctx, l); err != nil {
			e.t.Fatal(err)
		}
	}
	for _, l := range []client.ObjectList{&pods, &daemonSets, &limitRanges} {
		if err := kube.List(e.ctx, l, client.InNamespace(e.name)); err != nil {
			e.t.Fatal(err)
		}
	}
	for i := range nps.Items {
		e.st.UpdateNodePool(&nps.Items[i])
	}
	for i := range ncls.Items {
		e.st.UpdateEC2NodeClass(&ncls.Items[i])
	}
	for i := range ncs.Items {
		e.st.UpdateNodeClaim(&ncs.Items[i])
	}
	for i := range nodes.Items {
		e.st.UpdateNode(&nodes.Items[i])
	}
	for i := range pods.Items {
		e.st.UpdatePod(&pods.Items[i])
	}
	for i := range daemonSets.Items {
		e.st.UpdateDaemonSet(&daemonSets.Items[i])
	}
	for i := range limitRanges.Items {
		e.st.UpdateLimitRange(&limitRanges.Items[i])
	}
}

// batch reconciles the provisioner, syncing the state and moving the clock
// on by the wait it asks for, until it has provisioned once.
func (e *env) batch() {
	e.t.Helper()
	for range 20 {
		e.sync()
		res, err := e.p.Reconcile(e.ctx, Request())
		if err != nil {
			e.t.Fatalf("reconcile: %v", err)
		}
		if res.RequeueAfter == Period {
			return
		}
		if res.RequeueAfter <= 0 {
			e.t.Fatalf("reconcile asked for no requeue")
		}
		e.clk.Step(res.RequeueAfter)
	}
	e.t.Fatal("the provisioner never provisioned")
}

func (e *env) nodeClaims() []karpv1.NodeClaim {
	e.t.Helper()
	var list karpv1.NodeClaimList
	if err := kube.List(e.ctx, &list, client.MatchingLabels{wellknown.LabelNodePool: e.name}); err != nil {
		e.t.Fatal(err)
	}
	return list.Items
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
	_ = kube.Delete(ctx, &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: e.name}})
	_ = kube.Delete(ctx, &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: e.name}})
	_ = kube.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.name}})
}

// TestPendingPodsToReadyNodes takes ten unschedulable pods to NodeClaims and
// on to registered, initialized Nodes.
func TestPendingPodsToReadyNodes(t *testing.T) {
	e := newEnv(t, "prov-e2e", 201)
	e.nodeClass(metav1.ConditionTrue, "Ready", "")
	np := e.nodePool()
	var pods []string
	for i := range 10 {
		pods = append(pods, e.pod(fmt.Sprintf("app-%d", i)).Name)
	}
	// A DaemonSet's pod follows nodes; it never asks for one.
	e.pod("ds-pod", func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "0d5e1a2b-0000-4000-8000-000000000001", Controller: ptr.To(true)}}
	})

	e.batch()
	claims := e.nodeClaims()
	if len(claims) == 0 {
		t.Fatalf("no NodeClaim created; events %+v", e.rec.events)
	}
	for _, nc := range claims {
		checkNodeClaim(t, np, &nc)
	}
	if n := e.logs.count("created nodeclaim"); n != len(claims) {
		t.Errorf("%d \"created nodeclaim\" log lines for %d NodeClaims", n, len(claims))
	}
	if got := testutil.ToFloat64(createdCounter(t, e.reg, ReasonProvisioning, e.name)); got != float64(len(claims)) {
		t.Errorf("%s{reason=%s,nodepool=%s} = %v, want %d", metrics.NameNodeClaimsCreated, ReasonProvisioning, e.name, got, len(claims))
	}

	// Every pod is nominated for one of the new NodeClaims, once.
	onClaim := map[string]int{}
	for _, name := range pods {
		evs := e.rec.about(e.name, name, ReasonNominated)
		if len(evs) != 1 || evs[0].eventType != corev1.EventTypeNormal {
			t.Fatalf("pod %s: Nominated events %+v, want one", name, evs)
		}
		onClaim[strings.TrimPrefix(evs[0].note, "Pod should schedule on: nodeclaim/")]++
	}
	for _, nc := range claims {
		if onClaim[nc.Name] == 0 {
			t.Errorf("NodeClaim %s has no pod nominated for it: %v", nc.Name, onClaim)
		}
		if !e.st.IsNominated(nc.Name, e.clk.Now()) {
			t.Errorf("NodeClaim %s is not nominated in the state", nc.Name)
		}
	}
	if len(onClaim) != len(claims) {
		t.Errorf("pods nominated for %v, NodeClaims %d", onClaim, len(claims))
	}
	for _, r := range []string{ReasonNominated, ReasonFailedScheduling} {
		if evs := e.rec.about(e.name, "ds-pod", r); len(evs) != 0 {
			t.Errorf("the DaemonSet pod got events %+v", evs)
		}
	}

	// Right after, and a batch later, the same pods launch nothing more.
	if _, err := e.p.Reconcile(e.ctx, Request()); err != nil {
		t.Fatal(err)
	}
	e.batch()
	if got := e.nodeClaims(); len(got) != len(claims) {
		t.Fatalf("%d NodeClaims after a second batch, want %d", len(got), len(claims))
	}
	for _, name := range pods {
		if evs := e.rec.about(e.name, name, ReasonFailedScheduling); len(evs) != 0 {
			t.Errorf("pod %s: %+v", name, evs)
		}
	}

	// The NodeClaims launch, their nodes register and initialize.
	lc := lifecycle.New(kube, e.cloud, e.clk, e.rec, e.m)
	drive := func(name string) *karpv1.NodeClaim {
		t.Helper()
		for range 10 {
			if _, err := lc.Reconcile(e.ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}); err != nil {
				t.Fatalf("lifecycle %s: %v", name, err)
			}
		}
		nc := &karpv1.NodeClaim{}
		if err := kube.Get(e.ctx, client.ObjectKey{Name: name}, nc); err != nil {
			t.Fatal(err)
		}
		return nc
	}
	for _, nc := range claims {
		if got := drive(nc.Name); !meta.IsStatusConditionTrue(got.Status.Conditions, karpv1.ConditionTypeLaunched) {
			t.Fatalf("NodeClaim %s not launched: %+v", nc.Name, got.Status.Conditions)
		}
	}
	e.clk.Step(fake.DefaultBootDelay + time.Second)
	names, err := kubelet.Sync(e.ctx, kube, e.aws, clusterName)
	if err != nil || len(names) != len(claims) {
		t.Fatalf("kubelet.Sync = %v, %v; want %d nodes", names, err, len(claims))
	}
	for _, nc := range claims {
		drive(nc.Name)
	}
	for _, name := range names {
		if err := kubelet.MarkReady(e.ctx, kube, name); err != nil {
			t.Fatal(err)
		}
		// The agent the startup taint waits for comes up.
		node := &corev1.Node{}
		if err := kube.Get(e.ctx, client.ObjectKey{Name: name}, node); err != nil {
			t.Fatal(err)
		}
		base := node.DeepCopy()
		node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == agentTaint.Key })
		if err := kube.Patch(e.ctx, node, client.MergeFrom(base)); err != nil {
			t.Fatal(err)
		}
	}
	for _, nc := range claims {
		drive(nc.Name)
	}
	e.sync() // the node gauges read the cluster state
	for _, nc := range claims {
		got := drive(nc.Name)
		for _, c := range []string{karpv1.ConditionTypeRegistered, karpv1.ConditionTypeInitialized, karpv1.ConditionTypeReady} {
			if !meta.IsStatusConditionTrue(got.Status.Conditions, c) {
				t.Errorf("NodeClaim %s: %s is not True: %+v", nc.Name, c, got.Status.Conditions)
			}
		}
		node := &corev1.Node{}
		if err := kube.Get(e.ctx, client.ObjectKey{Name: got.Status.NodeName}, node); err != nil {
			t.Fatal(err)
		}
		if node.Labels[wellknown.LabelInitialized] != "true" || node.Labels["example.com/team"] != "a" || node.Labels[wellknown.LabelNodePool] != e.name {
			t.Errorf("node %s labels = %v", node.Name, node.Labels)
		}
		if got, want := allocatable(t, e.reg, node.Name, corev1.ResourceCPU), node.Status.Allocatable.Cpu().AsApproximateFloat64(); got != want || got == 0 {
			t.Errorf("%s{node_name=%s,resource_type=cpu} = %v, want %v", metrics.NameNodesAllocatable, node.Name, got, want)
		}
	}

	// With the nodes up, the state synced and the pods still pending (nobody
	// binds them here), the provisioner still launches nothing.
	e.batch()
	if got := e.nodeClaims(); len(got) != len(claims) {
		t.Errorf("%d NodeClaims once the nodes are up, want %d", len(got), len(claims))
	}
}

// checkNodeClaim checks what the provisioner wrote on a NodeClaim.
func checkNodeClaim(t *testing.T, np *karpv1.NodePool, nc *karpv1.NodeClaim) {
	t.Helper()
	if !strings.HasPrefix(nc.Name, np.Name+"-") {
		t.Errorf("name %q lacks the prefix %s-", nc.Name, np.Name)
	}
	if len(nc.OwnerReferences) != 1 {
		t.Fatalf("owner references = %+v", nc.OwnerReferences)
	}
	if o := nc.OwnerReferences[0]; o.Kind != "NodePool" || o.APIVersion != "karpenter.sh/v1" || o.Name != np.Name || o.UID != np.UID {
		t.Errorf("owner reference = %+v, want NodePool %s/%s", o, np.Name, np.UID)
	}
	if nc.Labels[wellknown.LabelNodePool] != np.Name || nc.Labels["example.com/team"] != "a" || nc.Labels[wellknown.LabelEC2NodeClass] != np.Name {
		t.Errorf("labels = %v", nc.Labels)
	}
	if nc.Annotations["example.com/owner"] != "team-a" {
		t.Errorf("annotations = %v", nc.Annotations)
	}
	if got, want := nc.Annotations[wellknown.AnnotationNodePoolHash], hash.Hash(np); got != want || got == "" {
		t.Errorf("%s = %q, want the NodePool's hash %q", wellknown.AnnotationNodePoolHash, got, want)
	}
	if got := nc.Annotations[wellknown.AnnotationNodePoolHashVersion]; got != hash.Version {
		t.Errorf("%s = %q, want %q", wellknown.AnnotationNodePoolHashVersion, got, hash.Version)
	}
	reqs := map[string]karpv1.NodeSelectorRequirementWithMinValues{}
	for _, r := range nc.Spec.Requirements {
		reqs[r.Key] = r
	}
	it := reqs[wellknown.LabelInstanceType]
	if it.Operator != corev1.NodeSelectorOpIn || len(it.Values) == 0 {
		t.Errorf("instance type requirement = %+v", it)
	}
	for _, name := range it.Values {
		if !slices.Contains([]string{"c6i.large", "m6i.large", "c6i.xlarge", "m6i.xlarge"}, name) {
			t.Errorf("instance type %s is not offered", name)
		}
	}
	if it.Values[0] != "c6i.large" && it.Values[0] != "c6i.xlarge" {
		t.Errorf("instance types %v do not start with the cheapest", it.Values)
	}
	for key, want := range map[string][]string{
		wellknown.LabelCapacityType: {wellknown.CapacityTypeOnDemand},
		wellknown.LabelArch:         {wellknown.ArchAMD64},
		wellknown.LabelNodePool:     {np.Name},
	} {
		if r := reqs[key]; r.Operator != corev1.NodeSelectorOpIn || !slices.Equal(r.Values, want) {
			t.Errorf("%s requirement = %+v, want In %v", key, r, want)
		}
	}
	if z := reqs[wellknown.LabelTopologyZone]; z.Operator != corev1.NodeSelectorOpIn || len(z.Values) == 0 {
		t.Errorf("zone requirement = %+v", z)
	}
	if !slices.Equal(nc.Spec.Taints, []corev1.Taint{teamTaint}) || !slices.Equal(nc.Spec.StartupTaints, []corev1.Taint{agentTaint}) {
		t.Errorf("taints = %v, startup taints = %v", nc.Spec.Taints, nc.Spec.StartupTaints)
	}
	if ref := nc.Spec.NodeClassRef; ref == nil || *ref != *np.Spec.Template.Spec.NodeClassRef {
		t.Errorf("nodeClassRef = %+v", ref)
	}
	if nc.Spec.ExpireAfter == nil || nc.Spec.ExpireAfter.Duration == nil || *nc.Spec.ExpireAfter.Duration != 24*time.Hour {
		t.Errorf("expireAfter = %+v", nc.Spec.ExpireAfter)
	}
	if nc.Spec.TerminationGracePeriod == nil || nc.Spec.TerminationGracePeriod.Duration != time.Hour {
		t.Errorf("terminationGracePeriod = %+v", nc.Spec.TerminationGracePeriod)
	}
	cpu := nc.Spec.Resources.Requests[corev1.ResourceCPU]
	if cpu.MilliValue() < 500 || cpu.MilliValue()%500 != 0 {
		t.Errorf("cpu request = %s, want a multiple of the pods' 500m", cpu.String())
	}
	if mem := nc.Spec.Resources.Requests[corev1.ResourceMemory]; mem.Value() < 512<<20 {
		t.Errorf("memory request = %s", mem.String())
	}
}

func TestLimitsPreventLaunch(t *testing.T) {
	e := newEnv(t, "prov-limits", 202)
	e.nodeClass(metav1.ConditionTrue, "Ready", "")
	e.nodePool(func(np *karpv1.NodePool) {
		np.Spec.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	})
	e.pod("app")
	e.batch()
	if claims := e.nodeClaims(); len(claims) != 0 {
		t.Fatalf("%d NodeClaims created past the limit", len(claims))
	}
	evs := e.rec.about(e.name, "app", ReasonFailedScheduling)
	if len(evs) != 1 || evs[0].eventType != corev1.EventTypeWarning {
		t.Fatalf("FailedScheduling events = %+v, want one warning", evs)
	}
	if note := evs[0].note; !strings.Contains(note, "limit") || !strings.Contains(note, "cpu") || !strings.Contains(note, e.name) {
		t.Errorf("event %q does not name the NodePool's cpu limit", note)
	}

	// The event is not repeated within the minute, but is after it.
	e.clk.Step(10 * time.Second)
	e.batch()
	if evs := e.rec.about(e.name, "app", ReasonFailedScheduling); len(evs) != 1 {
		t.Errorf("%d FailedScheduling events within a minute, want 1", len(evs))
	}
	e.clk.Step(EventInterval)
	e.batch()
	if evs := e.rec.about(e.name, "app", ReasonFailedScheduling); len(evs) != 2 {
		t.Errorf("%d FailedScheduling events after a minute, want 2", len(evs))
	}
}

func TestNodeClassNotReady(t *testing.T) {
	e := newEnv(t, "prov-ncnr", 203)
	e.nodeClass(metav1.ConditionFalse, "SubnetsNotFound", "no subnet matches the selector")
	e.nodePool()
	e.pod("app")
	e.batch()
	if claims := e.nodeClaims(); len(claims) != 0 {
		t.Fatalf("%d NodeClaims created from a NodeClass that is not ready", len(claims))
	}
	evs := e.rec.about("", e.name, ReasonNodeClassNotReady)
	want := fmt.Sprintf("NodeClass %s is not ready: no subnet matches the selector", e.name)
	if len(evs) != 1 || evs[0].note != want || evs[0].kind != "*v1.NodePool" || evs[0].eventType != corev1.EventTypeWarning {
		t.Errorf("NodePool events = %+v, want one warning %q", evs, want)
	}
	evs = e.rec.about(e.name, "app", ReasonFailedScheduling)
	if len(evs) != 1 {
		t.Fatalf("pod events = %+v, want one FailedScheduling", evs)
	}
	// The pod's event names the NodePool left out and why.
	if want := fmt.Sprintf("nodepool %s: left out: NodeClass %s is not ready: no subnet matches the selector (%s)", e.name, e.name, ReasonNodeClassNotReady); !strings.Contains(evs[0].note, want) {
		t.Errorf("FailedScheduling %q does not say %q", evs[0].note, want)
	}
}

// TestNodeClassUnreportedGetsNoEvent: a node class whose Ready condition
// has not been reported yet is left out without an event, so that the event
// that says what is wrong goes out as soon as the condition is reported
// rather than a minute later (the event interval).
func TestNodeClassUnreportedGetsNoEvent(t *testing.T) {
	e := newEnv(t, "prov-ncunrep", 205)
	e.nodeClass(metav1.ConditionFalse, "SubnetsNotFound", "no subnet matches the selector")
	nc := &awsv1.EC2NodeClass{}
	if err := kube.Get(e.ctx, client.ObjectKey{Name: e.name}, nc); err != nil {
		t.Fatal(err)
	}
	reported := nc.Status.Conditions
	nc.Status.Conditions = nil
	if err := kube.Status().Update(e.ctx, nc); err != nil {
		t.Fatal(err)
	}
	e.nodePool()
	e.pod("app")
	e.batch()
	if claims := e.nodeClaims(); len(claims) != 0 {
		t.Fatalf("%d NodeClaims created from a NodeClass that is not ready", len(claims))
	}
	if evs := e.rec.about("", e.name, ReasonNodeClassNotReady); len(evs) != 0 {
		t.Fatalf("NodePool events before the node class was reconciled = %+v, want none", evs)
	}

	nc.Status.Conditions = reported
	if err := kube.Status().Update(e.ctx, nc); err != nil {
		t.Fatal(err)
	}
	e.clk.Step(10 * time.Second)
	e.batch()
	want := fmt.Sprintf("NodeClass %s is not ready: no subnet matches the selector", e.name)
	if evs := e.rec.about("", e.name, ReasonNodeClassNotReady); len(evs) != 1 || evs[0].note != want {
		t.Errorf("NodePool events once Ready was reported = %+v, want one saying %q", evs, want)
	}
}

// TestWaitsForBatchAndSync checks the order of the gates: the batch window
// first, then the state catching up with the API server.
func TestWaitsForBatchAndSync(t *testing.T) {
	e := newEnv(t, "prov-gates", 204)
	e.nodeClass(metav1.ConditionTrue, "Ready", "")
	e.nodePool()

	// Nothing pending: the periodic look.
	e.sync()
	if res, err := e.p.Reconcile(e.ctx, Request()); err != nil || res.RequeueAfter != Period {
		t.Fatalf("Reconcile = %+v, %v; want a requeue after %s", res, err, Period)
	}

	e.pod("app")
	e.sync()
	e.p.Trigger()
	e.clk.Step(400 * time.Millisecond)
	if res, _ := e.p.Reconcile(e.ctx, Request()); res.RequeueAfter != 600*time.Millisecond {
		t.Fatalf("RequeueAfter = %s, want the rest of the idle window", res.RequeueAfter)
	}

	// A NodeClaim the state has not seen yet holds the batch back.
	stranger := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "prov-gates-stranger", Labels: map[string]string{wellknown.LabelNodePool: "elsewhere"}},
		Spec: karpv1.NodeClaimSpec{
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{Key: wellknown.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{wellknown.ArchAMD64}}},
			NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: e.name},
		},
	}
	if err := kube.Create(e.ctx, stranger); err != nil {
		t.Fatal(err)
	}
	e.clk.Step(600 * time.Millisecond)
	if res, err := e.p.Reconcile(e.ctx, Request()); err != nil || res.RequeueAfter != SyncRetry {
		t.Fatalf("Reconcile = %+v, %v; want a retry after %s while unsynced", res, err, SyncRetry)
	}
	if claims := e.nodeClaims(); len(claims) != 0 {
		t.Fatalf("launched from a state that is not synced")
	}
	e.batch()
	if claims := e.nodeClaims(); len(claims) != 1 {
		t.Fatalf("%d NodeClaims once synced, want 1", len(claims))
	}
}

// TestRegister checks that the Provisioner can be wired into a manager, and
// that a provisionable pod triggers it while others do not.
func TestRegister(t *testing.T) {
	mgr, err := manager.New(kubeCfg, manager.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	p := New(mgr.GetClient(), state.NewCluster(), nil, clk, nil, Options{}, nil)
	if err := p.Register(mgr); err != nil {
		t.Fatal(err)
	}
	pending := &corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
	}}}}
	if got := p.podTrigger(context.Background(), &corev1.Pod{}); len(got) != 0 || p.batcher.Open() {
		t.Fatalf("a pod that is not provisionable triggered the provisioner")
	}
	if got := p.podTrigger(context.Background(), pending); len(got) != 1 || got[0] != Request() || !p.batcher.Open() {
		t.Fatalf("a provisionable pod did not trigger the provisioner: %v", got)
	}
}

// createdCounter returns the karpenter_nodeclaims_created_total series of
// reason and nodePool, with minValues not relaxed.
func createdCounter(t *testing.T, reg *prometheus.Registry, reason, nodePool string) prometheus.Collector {
	t.Helper()
	return gathered(t, reg, metrics.NameNodeClaimsCreated, map[string]string{
		metrics.LabelReason: reason, metrics.LabelNodePool: nodePool, metrics.LabelMinValuesRelaxed: "false",
	})
}

// allocatable returns the karpenter_nodes_allocatable value of a node's
// resource, or 0 when there is none.
func allocatable(t *testing.T, reg *prometheus.Registry, node string, res corev1.ResourceName) float64 {
	t.Helper()
	return testutil.ToFloat64(gathered(t, reg, metrics.NameNodesAllocatable, map[string]string{
		metrics.LabelNodeName: node, metrics.LabelResourceType: string(res),
	}))
}

// gathered returns, as a collector of one gauge, the value of the series of
// metric name whose labels include want (0 when there is none).
func gathered(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) prometheus.Collector {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "gathered"})
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue series
				}
			}
			switch {
			case m.GetCounter() != nil:
				g.Set(m.GetCounter().GetValue())
			case m.GetGauge() != nil:
				g.Set(m.GetGauge().GetValue())
			}
			return g
		}
	}
	return g
}
