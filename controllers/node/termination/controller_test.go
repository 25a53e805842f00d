package termination

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

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
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
	"github.com/stevedore-autoscaler/stevedore/test/apiserver"
)

// The integration tests share one real API server; each test works in its
// own namespace and names its cluster-scoped objects after it.
var (
	kube       client.Client
	namespaceN atomic.Int64
)

func TestMain(m *testing.M) {
	os.Exit(apiserver.RunTests(m, func(_ *rest.Config, c client.Client) { kube = c }))
}

// recorder keeps events as "Type Reason: note".
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) Eventf(_ runtime.Object, _ runtime.Object, eventtype, reason, _ string, note string, args ...interface{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, eventtype+" "+reason+": "+fmt.Sprintf(note, args...))
}

func (r *recorder) count(reason string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.events {
		if strings.Contains(e, " "+reason+":") {
			n++
		}
	}
	return n
}

func (r *recorder) has(words string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.ContainsFunc(r.events, func(e string) bool { return strings.Contains(e, words) })
}

type env struct {
	t     *testing.T
	ctx   context.Context
	ns    string
	clk   *clocktesting.FakeClock
	aws   *fake.AWS
	cloud *aws.Provider
	rec   *recorder
	r     *Reconciler
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := log.IntoContext(context.Background(), testr.New(t))
	// The API server stamps deletion times with its own clock; starting the
	// fake clock at the real time keeps the two comparable.
	clk := clocktesting.NewFakeClock(time.Now().UTC().Truncate(time.Second))
	f := fake.New(fake.Options{Seed: 1, Clock: clk, InstanceTypes: []string{"m6i.large"}})
	w, err := f.StandardCluster("test", "1.33")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.AddInstanceProfile("test-profile", w.NodeRole); err != nil {
		t.Fatal(err)
	}
	out, err := f.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: w.SubnetIDs})
	if err != nil {
		t.Fatal(err)
	}
	var subnets []awsv1.Subnet
	for _, s := range out.Subnets {
		subnets = append(subnets, awsv1.Subnet{ID: *s.SubnetId, Zone: *s.AvailabilityZone})
	}
	nodeClass := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default", Generation: 1},
		Spec:       awsv1.EC2NodeClassSpec{AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}, Role: w.NodeRole},
		Status: awsv1.EC2NodeClassStatus{
			Subnets:         subnets,
			SecurityGroups:  []awsv1.SecurityGroup{{ID: w.SecurityGroupID}},
			AMIs:            []awsv1.AMI{{ID: w.Images["al2023/x86_64/standard"], Requirements: []corev1.NodeSelectorRequirement{{Key: wellknown.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{wellknown.ArchAMD64}}}}},
			InstanceProfile: "test-profile",
			Conditions:      []metav1.Condition{{Type: awsv1.ConditionTypeReady, Status: metav1.ConditionTrue, ObservedGeneration: 1, Reason: "Ready"}},
		},
	}
	s := settings.Default()
	s.ClusterName = "test"
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
	e := &env{t: t, ctx: ctx, ns: fmt.Sprintf("term-%d", namespaceN.Add(1)), clk: clk, aws: f, cloud: p, rec: &recorder{}}
	if err := kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}}); err != nil {
		t.Fatal(err)
	}
	e.r = New(kube, p, clk, e.rec)
	return e
}

// launch starts an instance in the fake cloud and creates its NodeClaim (with
// the termination finalizer, as the lifecycle controller would) and its
// Node, Ready, with the finalizer.
func (e *env) launch(ready bool) (*corev1.Node, *karpv1.NodeClaim) {
	e.t.Helper()
	name := e.ns + "-node"
	nc := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:       name,
			Labels:     map[string]string{wellknown.LabelNodePool: "default"},
			Finalizers: []string{wellknown.FinalizerTermination},
		},
		Spec: karpv1.NodeClaimSpec{
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{Key: wellknown.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{wellknown.CapacityTypeOnDemand}}},
			NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
		},
	}
	launched, err := e.cloud.Create(e.ctx, nc)
	if err != nil {
		e.t.Fatalf("launching: %v", err)
	}
	if err := kube.Create(e.ctx, nc); err != nil {
		e.t.Fatal(err)
	}
	nc.Status.ProviderID = launched.Status.ProviderID
	nc.Status.NodeName = name
	if err := kube.Status().Update(e.ctx, nc); err != nil {
		e.t.Fatal(err)
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{wellknown.FinalizerTermination}},
		Spec:       corev1.NodeSpec{ProviderID: launched.Status.ProviderID},
	}
	if err := kube.Create(e.ctx, node); err != nil {
		e.t.Fatal(err)
	}
	if ready {
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
		if err := kube.Status().Update(e.ctx, node); err != nil {
			e.t.Fatal(err)
		}
	}
	e.t.Cleanup(func() {
		// Let the NodeClaim go so that the shared server does not collect
		// leftovers; the node is gone or deleting already.
		ctx := context.Background()
		got := &karpv1.NodeClaim{}
		if kube.Get(ctx, client.ObjectKeyFromObject(nc), got) == nil {
			got.Finalizers = nil
			_ = kube.Update(ctx, got)
			_ = kube.Delete(ctx, got)
		}
		n := &corev1.Node{}
		if kube.Get(ctx, client.ObjectKeyFromObject(node), n) == nil {
			n.Finalizers = nil
			_ = kube.Update(ctx, n)
			_ = kube.Delete(ctx, n)
		}
	})
	return node, nc
}

type podOpt func(*corev1.Pod)

func labels(kv ...string) podOpt {
	return func(p *corev1.Pod) {
		p.Labels = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			p.Labels[kv[i]] = kv[i+1]
		}
	}
}

func critical(p *corev1.Pod) { p.Spec.PriorityClassName = priorityClusterCritical }

func daemon(p *corev1.Pod) {
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", UID: types.UID("ds-uid")}}
}

func doNotDisruptPod(p *corev1.Pod) {
	p.Annotations = map[string]string{wellknown.AnnotationDoNotDisrupt: "true"}
}

func tolerateAll(p *corev1.Pod) {
	p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
}

// pod creates a running, ready pod bound to the node.
func (e *env) pod(node *corev1.Node, name string, opts ...podOpt) *corev1.Pod {
	e.t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: corev1.PodSpec{
			NodeName:   node.Name,
			Containers: []corev1.Container{{Name: "c", Image: "example.com/app:1"}},
		},
	}
	for _, o := range opts {
		o(p)
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

// pdb creates a PodDisruptionBudget and plays the disruption controller by
// writing its status with the given number of allowed disruptions.
func (e *env) pdb(name string, maxUnavailable int, allowed int32, selector map[string]string) *policyv1.PodDisruptionBudget {
	e.t.Helper()
	mu := intstr.FromInt32(int32(maxUnavailable))
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &mu, Selector: &metav1.LabelSelector{MatchLabels: selector}},
	}
	if err := kube.Create(e.ctx, pdb); err != nil {
		e.t.Fatal(err)
	}
	e.allow(pdb, allowed)
	return pdb
}

// allow sets the PDB's status as the disruption controller would.
func (e *env) allow(pdb *policyv1.PodDisruptionBudget, allowed int32) {
	e.t.Helper()
	if err := kube.Get(e.ctx, client.ObjectKeyFromObject(pdb), pdb); err != nil {
		e.t.Fatal(err)
	}
	pdb.Status = policyv1.PodDisruptionBudgetStatus{
		ObservedGeneration: pdb.Generation,
		DisruptionsAllowed: allowed,
		CurrentHealthy:     10,
		DesiredHealthy:     10 - allowed,
		ExpectedPods:       10,
	}
	if err := kube.Status().Update(e.ctx, pdb); err != nil {
		e.t.Fatal(err)
	}
}

// deleteNode deletes the node; its finalizer keeps it.
func (e *env) deleteNode(node *corev1.Node) {
	e.t.Helper()
	if err := kube.Delete(e.ctx, node); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) reconcile(node *corev1.Node) reconcile.Result {
	e.t.Helper()
	res, err := e.r.Reconcile(e.ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: node.Name}})
	if err != nil {
		e.t.Fatalf("reconcile: %v", err)
	}
	return res
}

// finishTerminating plays the kubelet: pods being deleted are removed.
func (e *env) finishTerminating() {
	e.t.Helper()
	list := &corev1.PodList{}
	if err := kube.List(e.ctx, list, client.InNamespace(e.ns)); err != nil {
		e.t.Fatal(err)
	}
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp != nil {
			if err := kube.Delete(e.ctx, &list.Items[i], client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
				e.t.Fatal(err)
			}
		}
	}
}

// pods returns the names of the namespace's pods that are not terminating,
// and of those that are.
func (e *env) pods() (running, terminating []string) {
	e.t.Helper()
	list := &corev1.PodList{}
	if err := kube.List(e.ctx, list, client.InNamespace(e.ns)); err != nil {
		e.t.Fatal(err)
	}
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			running = append(running, p.Name)
		} else {
			terminating = append(terminating, p.Name)
		}
	}
	slices.Sort(running)
	slices.Sort(terminating)
	return running, terminating
}

func (e *env) getPod(name string) *corev1.Pod {
	e.t.Helper()
	p := &corev1.Pod{}
	if err := kube.Get(e.ctx, types.NamespacedName{Namespace: e.ns, Name: name}, p); err != nil {
		e.t.Fatal(err)
	}
	return p
}

func (e *env) nodeClaim(nc *karpv1.NodeClaim) *karpv1.NodeClaim {
	e.t.Helper()
	got := &karpv1.NodeClaim{}
	if err := kube.Get(e.ctx, client.ObjectKeyFromObject(nc), got); err != nil {
		e.t.Fatal(err)
	}
	return got
}

func (e *env) condition(nc *karpv1.NodeClaim, condType string) metav1.ConditionStatus {
	e.t.Helper()
	c := meta.FindStatusCondition(e.nodeClaim(nc).Status.Conditions, condType)
	if c == nil {
		return ""
	}
	return c.Status
}

// setDeadline writes the termination timestamp annotation on the NodeClaim.
func (e *env) setDeadline(nc *karpv1.NodeClaim, at time.Time) {
	e.t.Helper()
	got := e.nodeClaim(nc)
	patch := client.MergeFrom(got.DeepCopy())
	if got.Annotations == nil {
		got.Annotations = map[string]string{}
	}
	got.Annotations[wellknown.AnnotationNodeClaimTerminationTimestamp] = at.UTC().Format(time.RFC3339)
	if err := kube.Patch(e.ctx, got, patch); err != nil {
		e.t.Fatal(err)
	}
}

func TestPDBBlocksEvictionUntilDeadline(t *testing.T) {
	e := newEnv(t)
	node, nc := e.launch(true)
	e.pod(node, "web-0", labels("app", "web"))
	e.pdb("web", 0, 0, map[string]string{"app": "web"})
	e.deleteNode(node)

	var last time.Duration
	for i := range 5 {
		res := e.reconcile(node)
		if res.RequeueAfter <= 0 {
			t.Fatalf("reconcile %d: no requeue while the pod is blocked", i)
		}
		if i > 0 && res.RequeueAfter < last {
			t.Errorf("reconcile %d: backoff shrank from %v to %v", i, last, res.RequeueAfter)
		}
		last = res.RequeueAfter
		e.clk.Step(res.RequeueAfter)
	}
	if running, _ := e.pods(); !slices.Equal(running, []string{"web-0"}) {
		t.Fatalf("pods running = %v, want the pod kept by its budget", running)
	}
	if got := e.rec.count(ReasonEvictionBlocked); got != 1 {
		t.Errorf("%d eviction-blocked events, want 1 (first refusal only)", got)
	}
	if got := e.condition(nc, karpv1.ConditionTypeDrained); got != metav1.ConditionFalse {
		t.Errorf("Drained = %q, want False", got)
	}
	n := &corev1.Node{}
	if err := kube.Get(e.ctx, client.ObjectKeyFromObject(node), n); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(n.Spec.Taints, func(tn corev1.Taint) bool { return tn.Key == wellknown.TaintKeyDisrupted }) ||
		n.Labels[wellknown.LabelExcludeFromExternalLoadBalancers] != wellknown.ExcludeFromExternalLoadBalancersValue {
		t.Errorf("node not tainted and labelled: taints %v labels %v", n.Spec.Taints, n.Labels)
	}
	if !e.rec.has("tainted node") {
		t.Errorf("no tainted-node event in %v", e.rec.events)
	}

	// The deadline arrives: the pod is deleted regardless of its budget,
	// with the grace period clamped to at least a second.
	deadline := e.clk.Now().Add(time.Minute)
	e.setDeadline(nc, deadline)
	e.reconcile(node)
	if _, terminating := e.pods(); len(terminating) != 0 {
		t.Fatalf("pod deleted %v before deadline minus its grace period", terminating)
	}
	e.clk.SetTime(deadline.Add(time.Second))
	e.reconcile(node)
	p := e.getPod("web-0")
	if p.DeletionTimestamp == nil {
		t.Fatal("pod not deleted after the termination deadline")
	}
	if p.DeletionGracePeriodSeconds == nil || *p.DeletionGracePeriodSeconds != 1 {
		t.Errorf("deletion grace = %v, want 1s", p.DeletionGracePeriodSeconds)
	}
	if e.rec.count(ReasonDeletedPod) != 1 {
		t.Errorf("want one deleted-pod event: %v", e.rec.events)
	}
}

func TestPDBAllowsOneAtATime(t *testing.T) {
	e := newEnv(t)
	node, nc := e.launch(true)
	for i := range 3 {
		e.pod(node, fmt.Sprintf("web-%d", i), labels("app", "web"))
	}
	pdb := e.pdb("web", 1, 1, map[string]string{"app": "web"})
	e.deleteNode(node)

	for round := range 3 {
		res := e.reconcile(node)
		running, terminating := e.pods()
		if len(terminating) != 1 || len(running) != 2-round {
			t.Fatalf("round %d: running %v terminating %v, want exactly one evicted", round, running, terminating)
		}
		// A second reconcile while the budget is spent evicts nothing.
		e.clk.Step(res.RequeueAfter)
		e.reconcile(node)
		if _, terminating := e.pods(); len(terminating) != 1 {
			t.Fatalf("round %d: %v terminating after the budget was spent", round, terminating)
		}
		// The pod goes; the disruption controller restores the budget.
		e.finishTerminating()
		e.allow(pdb, 1)
		e.clk.Step(EvictionMaxDelay)
	}
	e.reconcile(node)
	if got := e.condition(nc, karpv1.ConditionTypeDrained); got != metav1.ConditionTrue {
		t.Errorf("Drained = %q after every pod left, want True", got)
	}
	if got := e.rec.count(ReasonEvictedPod); got != 3 {
		t.Errorf("%d evicted-pod events, want 3", got)
	}
}

func TestDoNotDisruptWaitsUntilDeadline(t *testing.T) {
	e := newEnv(t)
	node, nc := e.launch(true)
	e.pod(node, "batch", doNotDisruptPod)
	e.deleteNode(node)

	for range 3 {
		res := e.reconcile(node)
		if res.RequeueAfter <= 0 {
			t.Fatal("no requeue while waiting for a do-not-disrupt pod")
		}
		e.clk.Step(time.Minute)
	}
	if _, terminating := e.pods(); len(terminating) != 0 {
		t.Fatalf("do-not-disrupt pod evicted: %v", terminating)
	}
	deadline := e.clk.Now().Add(10 * time.Minute)
	e.setDeadline(nc, deadline)
	// The pod's default grace period is 30 s: it is deleted 30 s before the
	// deadline, with all of that grace.
	e.clk.SetTime(deadline.Add(-31 * time.Second))
	res := e.reconcile(node)
	if _, terminating := e.pods(); len(terminating) != 0 {
		t.Fatal("do-not-disrupt pod deleted too early")
	}
	if res.RequeueAfter > 2*time.Second {
		t.Errorf("requeue %v, want to come back at the force-delete time (1 s away)", res.RequeueAfter)
	}
	e.clk.SetTime(deadline.Add(-30 * time.Second))
	e.reconcile(node)
	p := e.getPod("batch")
	if p.DeletionTimestamp == nil {
		t.Fatal("do-not-disrupt pod not deleted at deadline minus its grace period")
	}
	if g := p.DeletionGracePeriodSeconds; g == nil || *g != 30 {
		t.Errorf("deletion grace = %v, want 30", g)
	}
	e.finishTerminating()
	e.reconcile(node)
	if got := e.condition(nc, karpv1.ConditionTypeDrained); got != metav1.ConditionTrue {
		t.Errorf("Drained = %q, want True", got)
	}
}

func TestTierOrder(t *testing.T) {
	e := newEnv(t)
	node, _ := e.launch(true)
	e.pod(node, "a-critical-ds", critical, daemon)
	e.pod(node, "b-critical", critical)
	e.pod(node, "c-ds", daemon)
	e.pod(node, "d-app", labels("app", "d"))
	e.pod(node, "e-blocked", labels("app", "e"))
	e.pod(node, "f-tolerates", tolerateAll)
	e.pdb("e", 0, 0, map[string]string{"app": "e"})
	e.deleteNode(node)

	step := func(wantTerminating ...string) {
		t.Helper()
		e.reconcile(node)
		_, terminating := e.pods()
		if !slices.Equal(terminating, wantTerminating) {
			t.Fatalf("terminating %v, want %v", terminating, wantTerminating)
		}
		e.finishTerminating()
		e.clk.Step(time.Second)
	}
	// Tier 1: d-app goes, e-blocked is held by its budget, so tier 2 waits.
	step("d-app")
	step()
	step()
	// The budget opens: e-blocked goes, then the daemon, then the critical
	// pod, then the critical daemon. The pod tolerating everything stays.
	e.allow(&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: e.ns}}, 1)
	e.clk.Step(EvictionMaxDelay)
	step("e-blocked")
	step("c-ds")
	step("b-critical")
	step("a-critical-ds")
	step()
	if running, _ := e.pods(); !slices.Equal(running, []string{"f-tolerates"}) {
		t.Errorf("running %v, want only the pod tolerating the disrupted taint", running)
	}
}

func TestInstanceGoneSkipsDrain(t *testing.T) {
	e := newEnv(t)
	node, nc := e.launch(false)
	e.pod(node, "app")
	if err := e.cloud.Delete(e.ctx, nc); err != nil {
		t.Fatal(err)
	}
	e.clk.Step(2 * time.Minute) // past the fake's shutdown delay
	e.deleteNode(node)
	if res := e.reconcile(node); res.RequeueAfter != 0 {
		t.Errorf("requeue %v, want none", res.RequeueAfter)
	}
	if err := kube.Get(e.ctx, client.ObjectKeyFromObject(node), &corev1.Node{}); !apierrors.IsNotFound(err) {
		t.Fatalf("node still there (err %v), want finalizer removed and node gone", err)
	}
	if running, _ := e.pods(); !slices.Equal(running, []string{"app"}) {
		t.Errorf("running %v: pods were drained from a node whose instance is gone", running)
	}
	if e.rec.count(ReasonTaintedNode) != 0 || e.rec.count(ReasonEvictedPod) != 0 {
		t.Errorf("unexpected events %v", e.rec.events)
	}
}

func TestFullTermination(t *testing.T) {
	e := newEnv(t)
	node, nc := e.launch(true)
	e.pod(node, "app")
	e.pod(node, "mirror", func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}}
	})
	pvName := e.ns + "-pv"
	va := &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-va"},
		Spec: storagev1.VolumeAttachmentSpec{
			Attacher: "ebs.csi.aws.com",
			NodeName: node.Name,
			Source:   storagev1.VolumeAttachmentSource{PersistentVolumeName: &pvName},
		},
	}
	if err := kube.Create(e.ctx, va); err != nil {
		t.Fatal(err)
	}
	e.deleteNode(node)

	// Drain.
	e.reconcile(node)
	if _, terminating := e.pods(); !slices.Equal(terminating, []string{"app"}) {
		t.Fatalf("terminating %v, want app (the mirror pod stays)", terminating)
	}
	e.finishTerminating()
	res := e.reconcile(node)
	if got := e.condition(nc, karpv1.ConditionTypeDrained); got != metav1.ConditionTrue {
		t.Fatalf("Drained = %q, want True", got)
	}
	// Volumes.
	if got := e.condition(nc, karpv1.ConditionTypeVolumesDetached); got != metav1.ConditionFalse {
		t.Fatalf("VolumesDetached = %q while an attachment exists, want False", got)
	}
	if res.RequeueAfter <= 0 {
		t.Fatal("no requeue while waiting for the volume attachment")
	}
	if err := kube.Delete(e.ctx, va); err != nil {
		t.Fatal(err)
	}
	// Instance.
	res = e.reconcile(node)
	if got := e.condition(nc, karpv1.ConditionTypeVolumesDetached); got != metav1.ConditionTrue {
		t.Fatalf("VolumesDetached = %q, want True", got)
	}
	if got := e.condition(nc, karpv1.ConditionTypeInstanceTerminating); got != metav1.ConditionTrue {
		t.Fatalf("InstanceTerminating = %q, want True", got)
	}
	if res.RequeueAfter != InstanceDeleteInterval {
		t.Errorf("requeue %v while the instance shuts down, want %v", res.RequeueAfter, InstanceDeleteInterval)
	}
	if err := kube.Get(e.ctx, client.ObjectKeyFromObject(node), &corev1.Node{}); err != nil {
		t.Fatalf("node gone before its instance terminated: %v", err)
	}
	for i := 0; i < 20; i++ {
		e.clk.Step(res.RequeueAfter)
		res = e.reconcile(node)
		if err := kube.Get(e.ctx, client.ObjectKeyFromObject(node), &corev1.Node{}); apierrors.IsNotFound(err) {
			break
		}
	}
	if err := kube.Get(e.ctx, client.ObjectKeyFromObject(node), &corev1.Node{}); !apierrors.IsNotFound(err) {
		t.Fatalf("node still there after the instance terminated (err %v)", err)
	}
	got := &karpv1.NodeClaim{}
	if err := kube.Get(e.ctx, client.ObjectKeyFromObject(nc), got); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cloud.Get(e.ctx, got.Status.ProviderID); err == nil {
		t.Error("instance still exists in the fake cloud")
	}
	if got.DeletionTimestamp.IsZero() {
		t.Error("the NodeClaim of the deleted node was not deleted")
	}
	for _, words := range []string{"tainted node", "evicted pod", "deleted node"} {
		if !e.rec.has(words) {
			t.Errorf("no %q event in %v", words, e.rec.events)
		}
	}
}
