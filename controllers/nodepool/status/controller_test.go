package status

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/validation"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/controllers/metrics"
	"github.com/stevedore-autoscaler/stevedore/test/apiserver"
)

var (
	kube   client.Client
	scheme = apiserver.Scheme()
)

func TestMain(m *testing.M) {
	os.Exit(apiserver.RunTests(m, func(_ *rest.Config, c client.Client) { kube = c }))
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

type env struct {
	t   *testing.T
	ctx context.Context
	clk *clocktesting.FakeClock
	rec *recorder
	reg *prometheus.Registry
	m   *metrics.Metrics
	r   *Reconciler
}

func newEnv(t *testing.T) *env {
	t.Helper()
	v, err := validation.Default()
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	e := &env{t: t, ctx: context.Background(), clk: clk, rec: &recorder{}, reg: reg, m: m}
	e.r = New(kube, clk, e.rec, v, m)
	return e
}

// nodePool creates a NodePool named name that references the EC2NodeClass
// nodeClass, and deletes it when the test ends.
func (e *env) nodePool(name, nodeClass string, mutate func(*karpv1.NodePool)) *karpv1.NodePool {
	e.t.Helper()
	np := &karpv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: karpv1.NodePoolSpec{
			Template: karpv1.NodeClaimTemplate{
				Spec: karpv1.NodeClaimTemplateSpec{
					Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{
						Key: wellknown.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"},
					}},
					NodeClassRef: &karpv1.NodeClassReference{Group: wellknown.GroupAWS, Kind: "EC2NodeClass", Name: nodeClass},
				},
			},
			Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100")},
		},
	}
	if mutate != nil {
		mutate(np)
	}
	if err := kube.Create(e.ctx, np); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = kube.Delete(context.Background(), np) })
	return np
}

// nodeClass creates an EC2NodeClass whose Ready condition is ready (for its
// current generation) with the given reason and message.
func (e *env) nodeClass(name string, ready metav1.ConditionStatus, reason, message string) *awsv1.EC2NodeClass {
	e.t.Helper()
	nc := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: awsv1.EC2NodeClassSpec{
			Role:                       "node-role",
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "test"}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "test"}}},
		},
	}
	if err := kube.Create(e.ctx, nc); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = kube.Delete(context.Background(), nc) })
	e.setNodeClassReady(nc, ready, reason, message)
	return nc
}

func (e *env) setNodeClassReady(nc *awsv1.EC2NodeClass, ready metav1.ConditionStatus, reason, message string) {
	e.t.Helper()
	meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{
		Type: awsv1.ConditionTypeReady, Status: ready, Reason: reason, Message: message,
		ObservedGeneration: nc.Generation, LastTransitionTime: metav1.NewTime(e.clk.Now()),
	})
	if err := kube.Status().Update(e.ctx, nc); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) reconcile(name string) *karpv1.NodePool {
	e.t.Helper()
	if _, err := e.r.Reconcile(e.ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: name}}); err != nil {
		e.t.Fatalf("Reconcile: %v", err)
	}
	np := &karpv1.NodePool{}
	if err := kube.Get(e.ctx, client.ObjectKey{Name: name}, np); err != nil {
		e.t.Fatal(err)
	}
	return np
}

func condition(t *testing.T, np *karpv1.NodePool, typ string) metav1.Condition {
	t.Helper()
	c := meta.FindStatusCondition(np.Status.Conditions, typ)
	if c == nil {
		t.Fatalf("NodePool %s has no %s condition: %+v", np.Name, typ, np.Status.Conditions)
	}
	return *c
}

func TestNodeClassReadiness(t *testing.T) {
	e := newEnv(t)
	e.nodePool("readiness", "readiness-nc", nil)

	// Missing node class.
	np := e.reconcile("readiness")
	c := condition(t, np, karpv1.ConditionTypeNodeClassReady)
	if c.Status != metav1.ConditionFalse || c.Reason != ReasonNodeClassNotFound || !strings.Contains(c.Message, `"readiness-nc"`) {
		t.Errorf("NodeClassReady = %+v, want False/%s naming the node class", c, ReasonNodeClassNotFound)
	}
	if r := condition(t, np, karpv1.ConditionTypeReady); r.Status != metav1.ConditionFalse {
		t.Errorf("Ready = %+v, want False", r)
	}
	if v := condition(t, np, karpv1.ConditionTypeValidationSucceeded); v.Status != metav1.ConditionTrue {
		t.Errorf("ValidationSucceeded = %+v, want True", v)
	}
	if !c.LastTransitionTime.Time.Equal(e.clk.Now()) {
		t.Errorf("transition time %v, want the clock's %v", c.LastTransitionTime, e.clk.Now())
	}

	// Not ready: reason and message copied.
	const msg = `no subnet matches subnetSelectorTerms [{tags: karpenter.sh/discovery=test}]: tag your subnets`
	nc := e.nodeClass("readiness-nc", metav1.ConditionFalse, "SubnetsNotFound", msg)
	e.clk.Step(time.Minute)
	np = e.reconcile("readiness")
	c = condition(t, np, karpv1.ConditionTypeNodeClassReady)
	if c.Status != metav1.ConditionFalse || c.Reason != "SubnetsNotFound" || c.Message != msg {
		t.Errorf("NodeClassReady = %+v, want False/SubnetsNotFound with the node class's message", c)
	}
	if r := condition(t, np, karpv1.ConditionTypeReady); r.Status != metav1.ConditionFalse || !strings.Contains(r.Message, msg) {
		t.Errorf("Ready = %+v, want False with the node class's message", r)
	}
	if np.Status.NodeClassObservedGeneration != nc.Generation {
		t.Errorf("nodeClassObservedGeneration = %d, want %d", np.Status.NodeClassObservedGeneration, nc.Generation)
	}

	// Ready.
	e.setNodeClassReady(nc, metav1.ConditionTrue, "Ready", "")
	e.clk.Step(time.Minute)
	np = e.reconcile("readiness")
	if c := condition(t, np, karpv1.ConditionTypeNodeClassReady); c.Status != metav1.ConditionTrue {
		t.Errorf("NodeClassReady = %+v, want True", c)
	}
	r := condition(t, np, karpv1.ConditionTypeReady)
	if r.Status != metav1.ConditionTrue || !r.LastTransitionTime.Time.Equal(e.clk.Now()) {
		t.Errorf("Ready = %+v, want True since %v", r, e.clk.Now())
	}

	// Spec changed, not yet resolved for the new generation: Unknown.
	nc.Spec.Tags = map[string]string{"team": "a"}
	if err := kube.Update(e.ctx, nc); err != nil {
		t.Fatal(err)
	}
	np = e.reconcile("readiness")
	if c := condition(t, np, karpv1.ConditionTypeNodeClassReady); c.Status != metav1.ConditionUnknown || c.Reason != ReasonNodeClassReadinessUnknown {
		t.Errorf("NodeClassReady = %+v, want Unknown/%s", c, ReasonNodeClassReadinessUnknown)
	}

	// Terminating.
	nc.Finalizers = []string{wellknown.FinalizerEC2NodeClassTermination}
	if err := kube.Update(e.ctx, nc); err != nil {
		t.Fatal(err)
	}
	if err := kube.Delete(e.ctx, nc); err != nil {
		t.Fatal(err)
	}
	np = e.reconcile("readiness")
	if c := condition(t, np, karpv1.ConditionTypeNodeClassReady); c.Status != metav1.ConditionFalse || c.Reason != ReasonNodeClassTerminating {
		t.Errorf("NodeClassReady = %+v, want False/%s", c, ReasonNodeClassTerminating)
	}
	if err := kube.Get(e.ctx, client.ObjectKeyFromObject(nc), nc); err != nil {
		t.Fatal(err)
	}
	nc.Finalizers = nil
	if err := kube.Update(e.ctx, nc); err != nil {
		t.Fatal(err)
	}
}

func TestResources(t *testing.T) {
	e := newEnv(t)
	e.nodePool("resources", "resources-nc", nil)
	claim := func(name, cpu, mem string, deleting bool) {
		t.Helper()
		nc := &karpv1.NodeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{wellknown.LabelNodePool: "resources"}},
			Spec: karpv1.NodeClaimSpec{
				Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{
					Key: wellknown.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"},
				}},
				NodeClassRef: &karpv1.NodeClassReference{Group: wellknown.GroupAWS, Kind: "EC2NodeClass", Name: "resources-nc"},
			},
		}
		if deleting {
			nc.Finalizers = []string{wellknown.FinalizerTermination}
		}
		if err := kube.Create(e.ctx, nc); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			nc.Finalizers = nil
			_ = kube.Update(context.Background(), nc)
			_ = kube.Delete(context.Background(), nc)
		})
		nc.Status.Capacity = corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem), corev1.ResourcePods: resource.MustParse("29"),
		}
		if err := kube.Status().Update(e.ctx, nc); err != nil {
			t.Fatal(err)
		}
		if deleting {
			if err := kube.Delete(e.ctx, nc); err != nil {
				t.Fatal(err)
			}
			if err := kube.Get(e.ctx, client.ObjectKeyFromObject(nc), nc); err != nil {
				t.Fatal(err)
			}
		}
	}
	claim("resources-a", "2", "8Gi", false)
	claim("resources-b", "4", "16Gi", false)
	claim("resources-c", "8", "32Gi", true)

	np := e.reconcile("resources")
	if np.Status.Nodes != 2 {
		t.Errorf("nodes = %d, want 2", np.Status.Nodes)
	}
	want := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("6"), corev1.ResourceMemory: resource.MustParse("24Gi"), corev1.ResourcePods: resource.MustParse("58"),
	}
	for name, q := range want {
		if got := np.Status.Resources[name]; got.Cmp(q) != 0 {
			t.Errorf("resources[%s] = %s, want %s", name, got.String(), q.String())
		}
	}
	if len(np.Status.Resources) != len(want) {
		t.Errorf("resources = %v, want %v", np.Status.Resources, want)
	}

	wantMetrics := `
# HELP karpenter_nodepools_limit Limits specified on the NodePool that restrict the quantity of resources provisioned. Labeled by nodepool name and resource type.
# TYPE karpenter_nodepools_limit gauge
karpenter_nodepools_limit{nodepool="resources",resource_type="cpu"} 100
# HELP karpenter_nodepools_usage Resources of the NodeClaims a NodePool owns that are not being deleted. Labeled by nodepool name and resource type.
# TYPE karpenter_nodepools_usage gauge
karpenter_nodepools_usage{nodepool="resources",resource_type="cpu"} 6
karpenter_nodepools_usage{nodepool="resources",resource_type="memory"} 2.5769803776e+10
karpenter_nodepools_usage{nodepool="resources",resource_type="pods"} 58
`
	if err := testutil.GatherAndCompare(e.reg, strings.NewReader(wantMetrics), metrics.NameNodePoolUsage, metrics.NameNodePoolLimit); err != nil {
		t.Error(err)
	}

	// A second reconcile with nothing changed writes nothing.
	rv := np.ResourceVersion
	if np = e.reconcile("resources"); np.ResourceVersion != rv {
		t.Errorf("resource version %s -> %s on a no-op reconcile", rv, np.ResourceVersion)
	}

	// Once the NodePool is gone its gauges go too.
	if err := kube.Delete(e.ctx, np); err != nil {
		t.Fatal(err)
	}
	if _, err := e.r.Reconcile(e.ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: "resources"}}); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(e.reg, metrics.NameNodePoolUsage, metrics.NameNodePoolLimit); n != 0 {
		t.Errorf("%d series left after the NodePool was deleted", n)
	}
}

func TestHashAnnotations(t *testing.T) {
	e := newEnv(t)
	e.nodePool("hash", "hash-nc", nil)
	np := e.reconcile("hash")
	h := np.Annotations[wellknown.AnnotationNodePoolHash]
	if h == "" || np.Annotations[wellknown.AnnotationNodePoolHashVersion] != wellknown.NodePoolHashVersion {
		t.Fatalf("annotations = %v, want the hash and version %s", np.Annotations, wellknown.NodePoolHashVersion)
	}
	if np = e.reconcile("hash"); np.Annotations[wellknown.AnnotationNodePoolHash] != h {
		t.Errorf("hash changed across reconciles: %s -> %s", h, np.Annotations[wellknown.AnnotationNodePoolHash])
	}

	np.Spec.Template.Spec.Requirements[0].Values = []string{"arm64"}
	np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "5"}}
	if err := kube.Update(e.ctx, np); err != nil {
		t.Fatal(err)
	}
	if np = e.reconcile("hash"); np.Annotations[wellknown.AnnotationNodePoolHash] != h {
		t.Errorf("hash changed with requirements and disruption: %s -> %s", h, np.Annotations[wellknown.AnnotationNodePoolHash])
	}

	np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "example.com/dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
	if err := kube.Update(e.ctx, np); err != nil {
		t.Fatal(err)
	}
	if np = e.reconcile("hash"); np.Annotations[wellknown.AnnotationNodePoolHash] == h {
		t.Errorf("hash %s did not change with the taints", h)
	}
}

func TestInvalidBudgetSchedule(t *testing.T) {
	e := newEnv(t)
	e.nodeClass("invalid-nc", metav1.ConditionTrue, "Ready", "")
	e.nodePool("invalid", "invalid-nc", func(np *karpv1.NodePool) {
		schedule := "0 25 * * *" // hour 25: the CRD's pattern accepts it, cron does not
		np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "10%", Schedule: &schedule, Duration: &metav1.Duration{Duration: time.Hour}}}
	})
	np := e.reconcile("invalid")
	c := condition(t, np, karpv1.ConditionTypeValidationSucceeded)
	if c.Status != metav1.ConditionFalse || c.Reason != ReasonValidationFailed ||
		!strings.Contains(c.Message, "spec.disruption.budgets[0].schedule") || !strings.Contains(c.Message, `"0 25 * * *"`) {
		t.Errorf("ValidationSucceeded = %+v, want False naming the schedule", c)
	}
	if r := condition(t, np, karpv1.ConditionTypeReady); r.Status != metav1.ConditionFalse || r.Reason != "Not"+karpv1.ConditionTypeValidationSucceeded {
		t.Errorf("Ready = %+v, want False because of validation", r)
	}
	if n := condition(t, np, karpv1.ConditionTypeNodeClassReady); n.Status != metav1.ConditionTrue {
		t.Errorf("NodeClassReady = %+v, want True", n)
	}
	e.rec.mu.Lock()
	events := strings.Join(e.rec.events, "\n")
	e.rec.mu.Unlock()
	if !strings.Contains(events, ReasonValidationFailed+": NodePool invalid is invalid") {
		t.Errorf("events = %q, want a %s warning", events, ReasonValidationFailed)
	}

	// Fixing the schedule makes the NodePool valid again.
	fixed := "0 23 * * *"
	np.Spec.Disruption.Budgets[0].Schedule = &fixed
	if err := kube.Update(e.ctx, np); err != nil {
		t.Fatal(err)
	}
	np = e.reconcile("invalid")
	if c := condition(t, np, karpv1.ConditionTypeValidationSucceeded); c.Status != metav1.ConditionTrue {
		t.Errorf("ValidationSucceeded = %+v, want True", c)
	}
	if r := condition(t, np, karpv1.ConditionTypeReady); r.Status != metav1.ConditionTrue {
		t.Errorf("Ready = %+v, want True", r)
	}
}
