package status

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/validation"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/controllers/metrics"
	"github.com/stevedore-autoscaler/stevedore/test/environment"
)

func TestMain(m *testing.M) { environment.Main(m) }

// env is one test's world and the status controller, without cluster state.
type env struct {
	*environment.Env
	r *Reconciler
}

func newEnv(t *testing.T) *env {
	t.Helper()
	v, err := validation.Default()
	if err != nil {
		t.Fatal(err)
	}
	e := &env{Env: environment.New(t, environment.Options{})}
	e.r = New(e.Kube, nil, e.Clock, e.Events, v, e.Metrics)
	return e
}

// nodePool creates a NodePool named name that references the EC2NodeClass
// nodeClass, limited to 100 CPUs.
func (e *env) nodePool(name, nodeClass string, mutate func(*karpv1.NodePool)) *karpv1.NodePool {
	e.T.Helper()
	np := environment.NewNodePool(name, nodeClass)
	np.Spec.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100")}
	if mutate != nil {
		mutate(np)
	}
	e.Create(np)
	return np
}

// nodeClass creates an EC2NodeClass whose Ready condition is ready (for its
// current generation) with the given reason and message.
func (e *env) nodeClass(name string, ready metav1.ConditionStatus, reason, message string) *awsv1.EC2NodeClass {
	e.T.Helper()
	nc := e.NewEC2NodeClass(name)
	e.Create(nc)
	e.setNodeClassReady(nc, ready, reason, message)
	return nc
}

func (e *env) setNodeClassReady(nc *awsv1.EC2NodeClass, ready metav1.ConditionStatus, reason, message string) {
	e.T.Helper()
	meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{
		Type: awsv1.ConditionTypeReady, Status: ready, Reason: reason, Message: message,
		ObservedGeneration: nc.Generation, LastTransitionTime: metav1.NewTime(e.Clock.Now()),
	})
	if err := e.Kube.Status().Update(e.Ctx, nc); err != nil {
		e.T.Fatal(err)
	}
}

// nodeClaim returns a NodeClaim of the NodePool pool and its EC2NodeClass
// (named after it, with "-nc").
func nodeClaim(name, pool string) *karpv1.NodeClaim {
	return environment.NewNodeClaim(name, pool, pool+"-nc")
}

func (e *env) reconcile(name string) *karpv1.NodePool {
	e.T.Helper()
	if _, err := e.r.Reconcile(e.Ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: name}}); err != nil {
		e.T.Fatalf("Reconcile: %v", err)
	}
	np := &karpv1.NodePool{}
	if err := e.Kube.Get(e.Ctx, client.ObjectKey{Name: name}, np); err != nil {
		e.T.Fatal(err)
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
	if !c.LastTransitionTime.Time.Equal(e.Clock.Now()) {
		t.Errorf("transition time %v, want the clock's %v", c.LastTransitionTime, e.Clock.Now())
	}

	// Not ready: reason and message copied.
	const msg = `no subnet matches subnetSelectorTerms [{tags: karpenter.sh/discovery=test}]: tag your subnets`
	nc := e.nodeClass("readiness-nc", metav1.ConditionFalse, "SubnetsNotFound", msg)
	e.Clock.Step(time.Minute)
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
	e.Clock.Step(time.Minute)
	np = e.reconcile("readiness")
	if c := condition(t, np, karpv1.ConditionTypeNodeClassReady); c.Status != metav1.ConditionTrue {
		t.Errorf("NodeClassReady = %+v, want True", c)
	}
	r := condition(t, np, karpv1.ConditionTypeReady)
	if r.Status != metav1.ConditionTrue || !r.LastTransitionTime.Time.Equal(e.Clock.Now()) {
		t.Errorf("Ready = %+v, want True since %v", r, e.Clock.Now())
	}

	// Spec changed, not yet resolved for the new generation: Unknown.
	nc.Spec.Tags = map[string]string{"team": "a"}
	if err := e.Kube.Update(e.Ctx, nc); err != nil {
		t.Fatal(err)
	}
	np = e.reconcile("readiness")
	if c := condition(t, np, karpv1.ConditionTypeNodeClassReady); c.Status != metav1.ConditionUnknown || c.Reason != ReasonNodeClassReadinessUnknown {
		t.Errorf("NodeClassReady = %+v, want Unknown/%s", c, ReasonNodeClassReadinessUnknown)
	}

	// Terminating.
	nc.Finalizers = []string{wellknown.FinalizerEC2NodeClassTermination}
	if err := e.Kube.Update(e.Ctx, nc); err != nil {
		t.Fatal(err)
	}
	if err := e.Kube.Delete(e.Ctx, nc); err != nil {
		t.Fatal(err)
	}
	np = e.reconcile("readiness")
	if c := condition(t, np, karpv1.ConditionTypeNodeClassReady); c.Status != metav1.ConditionFalse || c.Reason != ReasonNodeClassTerminating {
		t.Errorf("NodeClassReady = %+v, want False/%s", c, ReasonNodeClassTerminating)
	}
	if err := e.Kube.Get(e.Ctx, client.ObjectKeyFromObject(nc), nc); err != nil {
		t.Fatal(err)
	}
	nc.Finalizers = nil
	if err := e.Kube.Update(e.Ctx, nc); err != nil {
		t.Fatal(err)
	}
}

// TestEmptyPoolReportsZeroes: a pool without nodes reports Karpenter's base
// resources at 0, in its status and in the usage gauge, rather than
// nothing.
func TestEmptyPoolReportsZeroes(t *testing.T) {
	e := newEnv(t)
	e.nodePool("empty", "empty-nc", nil)
	np := e.reconcile("empty")
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage, ResourceNodes} {
		q, ok := np.Status.Resources[name]
		if !ok || !q.IsZero() {
			t.Errorf("resources[%s] = %s (present %t), want 0", name, q.String(), ok)
		}
	}
	want := usageExposition("empty", "0", "0", "0", "0", "0")
	if err := testutil.GatherAndCompare(e.Registry, strings.NewReader(want), metrics.NameNodePoolUsage); err != nil {
		t.Error(err)
	}
}

// usageExposition is karpenter_nodepools_usage as Prometheus prints it for
// one pool, with the base resources at the given values.
func usageExposition(pool, cpu, ephemeralStorage, memory, nodes, pods string) string {
	var b strings.Builder
	b.WriteString(`# HELP karpenter_nodepools_usage Resources of the NodeClaims a NodePool owns that are not being deleted. Labeled by nodepool name and resource type.
# TYPE karpenter_nodepools_usage gauge
`)
	for _, r := range [][2]string{{"cpu", cpu}, {"ephemeral-storage", ephemeralStorage}, {"memory", memory}, {"nodes", nodes}, {"pods", pods}} {
		fmt.Fprintf(&b, "karpenter_nodepools_usage{nodepool=%q,resource_type=%q} %s\n", pool, r[0], r[1])
	}
	return b.String()
}

func TestResources(t *testing.T) {
	e := newEnv(t)
	e.nodePool("resources", "resources-nc", nil)
	claim := func(name, cpu, mem string, deleting bool) {
		t.Helper()
		nc := nodeClaim(name, "resources")
		if deleting {
			nc.Finalizers = []string{wellknown.FinalizerTermination}
		}
		nc.Status.Capacity = corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem), corev1.ResourcePods: resource.MustParse("29"),
		}
		e.Create(nc)
		if deleting {
			if err := e.Kube.Delete(e.Ctx, nc); err != nil {
				t.Fatal(err)
			}
			if err := e.Kube.Get(e.Ctx, client.ObjectKeyFromObject(nc), nc); err != nil {
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
	// Karpenter's base resources are always there: ephemeral-storage at 0
	// (no capacity names it) and the node count.
	want := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("6"), corev1.ResourceMemory: resource.MustParse("24Gi"), corev1.ResourcePods: resource.MustParse("58"),
		corev1.ResourceEphemeralStorage: resource.MustParse("0"), ResourceNodes: resource.MustParse("2"),
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
` + usageExposition("resources", "6", "0", "2.5769803776e+10", "2", "58")
	if err := testutil.GatherAndCompare(e.Registry, strings.NewReader(wantMetrics), metrics.NameNodePoolUsage, metrics.NameNodePoolLimit); err != nil {
		t.Error(err)
	}

	// A second reconcile with nothing changed writes nothing.
	rv := np.ResourceVersion
	if np = e.reconcile("resources"); np.ResourceVersion != rv {
		t.Errorf("resource version %s -> %s on a no-op reconcile", rv, np.ResourceVersion)
	}

	// Once the NodePool is gone its gauges go too.
	if err := e.Kube.Delete(e.Ctx, np); err != nil {
		t.Fatal(err)
	}
	if _, err := e.r.Reconcile(e.Ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: "resources"}}); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(e.Registry, metrics.NameNodePoolUsage, metrics.NameNodePoolLimit); n != 0 {
		t.Errorf("%d series left after the NodePool was deleted", n)
	}
}

// conflictingStatus is a client whose status patches of NodePools all lose
// a conflict.
type conflictingStatus struct{ client.Client }

func (c conflictingStatus) Status() client.SubResourceWriter {
	return conflictingWriter{c.Client.Status()}
}

type conflictingWriter struct{ client.SubResourceWriter }

func (w conflictingWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if _, ok := obj.(*karpv1.NodePool); ok {
		return apierrors.NewConflict(schema.GroupResource{Group: wellknown.GroupCore, Resource: "nodepools"}, obj.GetName(), fmt.Errorf("the object has been modified"))
	}
	return w.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}

// TestUsageGaugeDespiteConflicts: the usage gauge follows the NodeClaims
// even while every status patch of the NodePool loses a conflict (another
// writer keeps changing it), so that dashboards do not go blank while the
// reconcile backs off.
func TestUsageGaugeDespiteConflicts(t *testing.T) {
	e := newEnv(t)
	conflicting := conflictingStatus{Client: e.Kube}
	e.r.client = conflicting
	e.nodePool("conflicted", "conflicted-nc", nil)
	nc := nodeClaim("conflicted-a", "conflicted")
	nc.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	e.Create(nc)
	if _, err := e.r.Reconcile(e.Ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: "conflicted"}}); !apierrors.IsConflict(err) {
		t.Fatalf("Reconcile = %v, want the conflict", err)
	}
	want := usageExposition("conflicted", "2", "0", "0", "1", "0")
	if err := testutil.GatherAndCompare(e.Registry, strings.NewReader(want), metrics.NameNodePoolUsage); err != nil {
		t.Error(err)
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
	if err := e.Kube.Update(e.Ctx, np); err != nil {
		t.Fatal(err)
	}
	if np = e.reconcile("hash"); np.Annotations[wellknown.AnnotationNodePoolHash] != h {
		t.Errorf("hash changed with requirements and disruption: %s -> %s", h, np.Annotations[wellknown.AnnotationNodePoolHash])
	}

	np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "example.com/dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
	if err := e.Kube.Update(e.Ctx, np); err != nil {
		t.Fatal(err)
	}
	if np = e.reconcile("hash"); np.Annotations[wellknown.AnnotationNodePoolHash] == h {
		t.Errorf("hash %s did not change with the taints", h)
	}
}

// TestHashVersionRestampsNodeClaims: a NodePool whose hash version is not
// the current one has its NodeClaims of another version re-stamped before
// its own annotations: the version on all of them, the NodePool's new hash
// on those that have not drifted. NodeClaims of the current version, of
// other NodePools and of another provider's node class are left alone; so
// are all NodeClaims once the NodePool carries the current version.
func TestHashVersionRestampsNodeClaims(t *testing.T) {
	e := newEnv(t)
	e.nodePool("restamp", "restamp-nc", func(np *karpv1.NodePool) {
		np.Annotations = map[string]string{
			wellknown.AnnotationNodePoolHash:        "1",
			wellknown.AnnotationNodePoolHashVersion: "old-version",
		}
	})
	claim := func(name, pool string, annotations map[string]string, drifted bool, change ...func(*karpv1.NodeClaim)) {
		t.Helper()
		nc := environment.NewNodeClaim(name, pool, "restamp-nc")
		nc.Annotations = annotations
		if drifted {
			meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{Type: karpv1.ConditionTypeDrifted, Status: metav1.ConditionTrue, Reason: "NodePoolDrifted"})
		}
		for _, c := range change {
			c(nc)
		}
		e.Create(nc)
	}
	stamped := func(hash, version string) map[string]string {
		return map[string]string{wellknown.AnnotationNodePoolHash: hash, wellknown.AnnotationNodePoolHashVersion: version}
	}
	claim("restamp-old", "restamp", stamped("1", "old-version"), false)
	claim("restamp-drifted", "restamp", stamped("1", "old-version"), true)
	claim("restamp-current", "restamp", stamped("2", wellknown.NodePoolHashVersion), false)
	claim("restamp-bare", "restamp", nil, false)
	claim("restamp-other-pool", "restamp-other", stamped("1", "old-version"), false)
	claim("restamp-kwok", "restamp", stamped("1", "old-version"), false, func(nc *karpv1.NodeClaim) {
		nc.Spec.NodeClassRef = environment.KWOKNodeClassRef()
	})

	np := e.reconcile("restamp")
	h := np.Annotations[wellknown.AnnotationNodePoolHash]
	if h == "1" || h == "" || np.Annotations[wellknown.AnnotationNodePoolHashVersion] != wellknown.NodePoolHashVersion {
		t.Fatalf("NodePool annotations = %v, want its hash under version %s", np.Annotations, wellknown.NodePoolHashVersion)
	}
	check := func(name, wantHash, wantVersion string) {
		t.Helper()
		nc := e.NodeClaim(name)
		if got := nc.Annotations[wellknown.AnnotationNodePoolHash]; got != wantHash {
			t.Errorf("%s: hash %q, want %q", name, got, wantHash)
		}
		if got := nc.Annotations[wellknown.AnnotationNodePoolHashVersion]; got != wantVersion {
			t.Errorf("%s: hash version %q, want %q", name, got, wantVersion)
		}
	}
	check("restamp-old", h, wellknown.NodePoolHashVersion)
	check("restamp-drifted", "1", wellknown.NodePoolHashVersion)
	check("restamp-current", "2", wellknown.NodePoolHashVersion)
	check("restamp-bare", h, wellknown.NodePoolHashVersion)
	check("restamp-other-pool", "1", "old-version")
	check("restamp-kwok", "1", "old-version")

	// The NodePool is current now: a NodeClaim of another version is not
	// compared by hash, and not re-stamped either.
	nc := e.NodeClaim("restamp-old")
	nc.Annotations = stamped("1", "old-version")
	if err := e.Kube.Update(e.Ctx, nc); err != nil {
		t.Fatal(err)
	}
	e.reconcile("restamp")
	check("restamp-old", "1", "old-version")
}

func TestInvalidBudgetSchedule(t *testing.T) {
	e := newEnv(t)
	e.nodeClass("invalid-nc", metav1.ConditionTrue, "Ready", "")
	e.nodePool("invalid", "invalid-nc", func(np *karpv1.NodePool) {
		schedule := "0 25 * * *" // hour 25: the CRD's pattern accepts it, cron does not
		np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "10%", Schedule: &schedule, Duration: &karpv1.Duration{Duration: time.Hour}}}
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
	if events := e.Events.String(); !strings.Contains(events, ReasonValidationFailed+": NodePool invalid is invalid") {
		t.Errorf("events = %q, want a %s warning", events, ReasonValidationFailed)
	}

	// Fixing the schedule makes the NodePool valid again.
	fixed := "0 23 * * *"
	np.Spec.Disruption.Budgets[0].Schedule = &fixed
	if err := e.Kube.Update(e.Ctx, np); err != nil {
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

// reconcileFor reconciles the NodePool name and returns it with the result.
func (e *env) reconcileFor(name string) (*karpv1.NodePool, reconcile.Result) {
	e.T.Helper()
	res, err := e.r.Reconcile(e.Ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: name}})
	if err != nil {
		e.T.Fatalf("Reconcile: %v", err)
	}
	np := &karpv1.NodePool{}
	if err := e.Kube.Get(e.Ctx, client.ObjectKey{Name: name}, np); err != nil {
		e.T.Fatal(err)
	}
	return np, res
}

// readyNode creates a NodeClaim of nodePool and its initialized, Ready
// Node, both named name, and deletes them when the test ends.
func (e *env) readyNode(nodePool, name string) {
	e.T.Helper()
	providerID := "aws:///us-east-1a/i-" + name
	nc := nodeClaim(name, nodePool)
	nc.Status.ProviderID = providerID
	meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{
		Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue, Reason: "Initialized", LastTransitionTime: metav1.NewTime(e.Clock.Now()),
	})
	e.Create(nc, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{wellknown.LabelNodePool: nodePool}},
		Spec:       corev1.NodeSpec{ProviderID: providerID},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	})
}

func allowed(np *karpv1.NodePool) string {
	var parts []string
	for _, a := range np.Status.AllowedDisruptions {
		parts = append(parts, fmt.Sprintf("%s=%d", a.Reason, a.Nodes))
	}
	return strings.Join(parts, " ")
}

func TestDisruptionBudgets(t *testing.T) {
	e := newEnv(t)
	e.r = New(e.Kube, e.State, e.Clock, e.Events, nil, e.Metrics)
	// At most 20%, and nothing during weekday business hours.
	e.nodePool("budgets", "budgets-nc", func(np *karpv1.NodePool) {
		schedule := "0 9 * * mon-fri"
		np.Spec.Disruption.Budgets = []karpv1.Budget{
			{Nodes: "20%"},
			{Nodes: "0", Schedule: &schedule, Duration: &karpv1.Duration{Duration: 8 * time.Hour}},
		}
	})
	for i := range 5 {
		e.readyNode("budgets", fmt.Sprintf("budgets-%d", i))
	}
	e.SyncState()

	gauge := func(want string) {
		t.Helper()
		if want != "" {
			want = `
# HELP karpenter_nodepools_allowed_disruptions Nodes of a NodePool that its disruption budgets allow to be disrupting at the same time, before subtracting those disrupting already. Labeled by nodepool name and disruption reason.
# TYPE karpenter_nodepools_allowed_disruptions gauge
karpenter_nodepools_allowed_disruptions{nodepool="budgets",reason="Drifted"} ` + want + `
karpenter_nodepools_allowed_disruptions{nodepool="budgets",reason="Empty"} ` + want + `
karpenter_nodepools_allowed_disruptions{nodepool="budgets",reason="Underutilized"} ` + want + `
`
		}
		if err := testutil.GatherAndCompare(e.Registry, strings.NewReader(want), metrics.NameNodePoolAllowedDisruptions); err != nil {
			t.Error(err)
		}
	}
	check := func(at time.Time, wantStatus string, wantRequeue time.Duration) *karpv1.NodePool {
		t.Helper()
		e.Clock.SetTime(at)
		np, res := e.reconcileFor("budgets")
		if got := allowed(np); got != wantStatus {
			t.Errorf("at %v: allowedDisruptions %s, want %s", at, got, wantStatus)
		}
		if res.RequeueAfter != wantRequeue {
			t.Errorf("at %v: requeue after %v, want %v", at, res.RequeueAfter, wantRequeue)
		}
		return np
	}

	// Tuesday evening: 20% of 5 nodes.
	check(time.Date(2026, 3, 3, 18, 0, 0, 0, time.UTC), "Drifted=1 Empty=1 Underutilized=1", MaxBudgetRequeue)
	gauge("1")
	consuming := func(want string) {
		t.Helper()
		exp := `
# HELP karpenter_nodepools_nodes_consuming_budgets Nodes of a NodePool that count against its disruption budgets now: not ready, marked for disruption or being deleted. Labeled by nodepool name and disruption reason.
# TYPE karpenter_nodepools_nodes_consuming_budgets gauge
karpenter_nodepools_nodes_consuming_budgets{nodepool="budgets",reason="Drifted"} ` + want + `
karpenter_nodepools_nodes_consuming_budgets{nodepool="budgets",reason="Empty"} ` + want + `
karpenter_nodepools_nodes_consuming_budgets{nodepool="budgets",reason="Underutilized"} ` + want + `
`
		if err := testutil.GatherAndCompare(e.Registry, strings.NewReader(exp), metrics.NameNodePoolConsumingBudgets); err != nil {
			t.Error(err)
		}
	}
	consuming("0")
	// A node being disrupted uses the allowance up; the budget still allows 1.
	e.State.MarkForDeletion("budgets-0")
	np := check(time.Date(2026, 3, 3, 18, 1, 0, 0, time.UTC), "Drifted=0 Empty=0 Underutilized=0", MaxBudgetRequeue)
	gauge("1")
	consuming("1")
	if ev := e.Events.Matching(environment.Event{Reason: ReasonDisruptionBlocked}); len(ev) != 0 {
		t.Errorf("events %q while only used up, not blocked", ev)
	}
	// Nothing changed: nothing written.
	rv := np.ResourceVersion
	if np = check(time.Date(2026, 3, 3, 18, 2, 0, 0, time.UTC), "Drifted=0 Empty=0 Underutilized=0", MaxBudgetRequeue); np.ResourceVersion != rv {
		t.Errorf("resource version %s -> %s on a no-op reconcile", rv, np.ResourceVersion)
	}
	e.State.UnmarkForDeletion("budgets-0")

	// Just before the window opens the requeue lands on its opening.
	check(time.Date(2026, 3, 4, 8, 58, 0, 0, time.UTC), "Drifted=1 Empty=1 Underutilized=1", 2*time.Minute)
	// Business hours: blocked, with one event per reason.
	check(time.Date(2026, 3, 4, 9, 0, 0, 0, time.UTC), "Drifted=0 Empty=0 Underutilized=0", MaxBudgetRequeue)
	gauge("0")
	ev := e.Events.Matching(environment.Event{Reason: ReasonDisruptionBlocked})
	if len(ev) != 3 {
		t.Fatalf("events %q, want one %s per reason", ev, ReasonDisruptionBlocked)
	}
	for i, reason := range []string{"Drifted", "Empty", "Underutilized"} {
		want := fmt.Sprintf(`NodePool budgets blocks %s disruption: spec.disruption.budgets[1] (nodes "0", schedule "0 9 * * mon-fri", duration 8h0m0s) allows none of its 5 nodes now`, reason)
		if ev[i].Note != want {
			t.Errorf("event %q, want %q", ev[i].Note, want)
		}
	}
	// Still blocked: no more events.
	check(time.Date(2026, 3, 4, 16, 57, 0, 0, time.UTC), "Drifted=0 Empty=0 Underutilized=0", 3*time.Minute)
	if n := len(e.Events.Matching(environment.Event{Reason: ReasonDisruptionBlocked})); n != 3 {
		t.Errorf("%d events, want still 3", n)
	}
	// The window closes.
	check(time.Date(2026, 3, 4, 17, 0, 0, 0, time.UTC), "Drifted=1 Empty=1 Underutilized=1", MaxBudgetRequeue)
	gauge("1")
	// And opens again the next morning: blocked again, events again.
	check(time.Date(2026, 3, 5, 9, 0, 0, 0, time.UTC), "Drifted=0 Empty=0 Underutilized=0", MaxBudgetRequeue)
	if n := len(e.Events.Matching(environment.Event{Reason: ReasonDisruptionBlocked})); n != 6 {
		t.Errorf("%d events, want 6 after the second opening", n)
	}

	// A NodeClaim the cluster state has not seen yet: the budgets are left
	// as they were and looked at again soon.
	e.readyNode("budgets", "budgets-late")
	check(time.Date(2026, 3, 5, 18, 0, 0, 0, time.UTC), "Drifted=0 Empty=0 Underutilized=0", unsyncedRequeue)
	e.SyncState()
	check(time.Date(2026, 3, 5, 18, 0, 0, 0, time.UTC), "Drifted=2 Empty=2 Underutilized=2", MaxBudgetRequeue)

	// Once the NodePool is gone its gauge goes too.
	if err := e.Kube.Delete(e.Ctx, np); err != nil {
		t.Fatal(err)
	}
	if _, err := e.r.Reconcile(e.Ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: "budgets"}}); err != nil {
		t.Fatal(err)
	}
	gauge("")
}

// Without cluster state the reconciler leaves the budgets alone.
func TestNoClusterStateLeavesBudgetsAlone(t *testing.T) {
	e := newEnv(t)
	e.nodePool("nostate", "nostate-nc", nil)
	np, res := e.reconcileFor("nostate")
	if len(np.Status.AllowedDisruptions) != 0 || res.RequeueAfter != 0 {
		t.Errorf("allowedDisruptions %v, requeue %v; want none", np.Status.AllowedDisruptions, res.RequeueAfter)
	}
	if n := testutil.CollectAndCount(e.Registry, metrics.NameNodePoolAllowedDisruptions); n != 0 {
		t.Errorf("%d allowed-disruption series, want 0", n)
	}
}

func TestNodeBudgetChanged(t *testing.T) {
	base := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{wellknown.LabelNodePool: "a"}},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
	tests := []struct {
		name   string
		change func(*corev1.Node)
		want   bool
	}{
		{"heartbeat", func(n *corev1.Node) { n.Status.Conditions[0].LastHeartbeatTime = metav1.Now() }, false},
		{"not ready", func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionUnknown }, true},
		{"other pool", func(n *corev1.Node) { n.Labels[wellknown.LabelNodePool] = "b" }, true},
		{"initialized", func(n *corev1.Node) { n.Labels[wellknown.LabelInitialized] = wellknown.LabelValueTrue }, true},
		{"deleting", func(n *corev1.Node) { n.DeletionTimestamp = &metav1.Time{Time: time.Now()} }, true},
	}
	for _, tt := range tests {
		after := base.DeepCopy()
		tt.change(after)
		if got := NodeBudgetChanged(base, after); got != tt.want {
			t.Errorf("%s: NodeBudgetChanged = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestNodeClaimCountChanged(t *testing.T) {
	base := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: map[string]string{wellknown.LabelNodePool: "a"}},
		Status: karpv1.NodeClaimStatus{
			Capacity:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			Conditions: []metav1.Condition{{Type: karpv1.ConditionTypeConsolidatable, Status: metav1.ConditionFalse, Reason: "A"}},
		},
	}
	tests := []struct {
		name   string
		change func(*karpv1.NodeClaim)
		want   bool
	}{
		{"lastPodEventTime", func(nc *karpv1.NodeClaim) { nc.Status.LastPodEventTime = metav1.Now() }, false},
		{"a condition's reason", func(nc *karpv1.NodeClaim) { nc.Status.Conditions[0].Reason = "B" }, false},
		{"an annotation", func(nc *karpv1.NodeClaim) { nc.Annotations = map[string]string{"x": "y"} }, false},
		{"a condition's status", func(nc *karpv1.NodeClaim) { nc.Status.Conditions[0].Status = metav1.ConditionTrue }, true},
		{"a new condition", func(nc *karpv1.NodeClaim) {
			nc.Status.Conditions = append(nc.Status.Conditions, metav1.Condition{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue})
		}, true},
		{"other pool", func(nc *karpv1.NodeClaim) { nc.Labels[wellknown.LabelNodePool] = "b" }, true},
		{"capacity", func(nc *karpv1.NodeClaim) { nc.Status.Capacity[corev1.ResourceCPU] = resource.MustParse("4") }, true},
		{"deleting", func(nc *karpv1.NodeClaim) { nc.DeletionTimestamp = &metav1.Time{Time: time.Now()} }, true},
	}
	for _, tt := range tests {
		after := base.DeepCopy()
		tt.change(after)
		if got := NodeClaimCountChanged(base, after); got != tt.want {
			t.Errorf("%s: NodeClaimCountChanged = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestValidationRemembered: the validator's verdict is reused while the
// NodePool's generation, labels and annotations stay the same, and asked
// again when any of them changes.
func TestValidationRemembered(t *testing.T) {
	e := newEnv(t)
	e.nodeClass("memo-nc", metav1.ConditionTrue, "Ready", "")
	e.nodePool("memo", "memo-nc", nil)
	np := e.reconcile("memo")
	if c := condition(t, np, karpv1.ConditionTypeValidationSucceeded); c.Status != metav1.ConditionTrue {
		t.Fatalf("ValidationSucceeded = %+v, want True", c)
	}
	// Plant a verdict the validator would not give, for the NodePool as
	// it is: a reconcile that reuses the verdict shows it.
	plant := func() {
		e.r.mu.Lock()
		v, ok := e.r.validated["memo"]
		if !ok {
			e.r.mu.Unlock()
			t.Fatal("no verdict remembered")
		}
		v.messages = []string{"planted"}
		e.r.validated["memo"] = v
		e.r.mu.Unlock()
	}
	plant()
	np = e.reconcile("memo")
	if c := condition(t, np, karpv1.ConditionTypeValidationSucceeded); c.Status != metav1.ConditionFalse || c.Message != "planted" {
		t.Fatalf("ValidationSucceeded = %+v, want the remembered verdict", c)
	}

	// A new generation is validated again.
	np.Spec.Template.Spec.Requirements[0].Values = []string{"amd64", "arm64"}
	if err := e.Kube.Update(e.Ctx, np); err != nil {
		t.Fatal(err)
	}
	np = e.reconcile("memo")
	if c := condition(t, np, karpv1.ConditionTypeValidationSucceeded); c.Status != metav1.ConditionTrue {
		t.Fatalf("ValidationSucceeded after a spec change = %+v, want True", c)
	}

	// So is a change to the labels or annotations, which leaves the
	// generation alone.
	for _, change := range []func(*karpv1.NodePool){
		func(np *karpv1.NodePool) { np.Labels = map[string]string{"team": "a"} },
		func(np *karpv1.NodePool) { np.Annotations["example.com/owner"] = "team-a" },
	} {
		plant()
		gen := np.Generation
		change(np)
		if err := e.Kube.Update(e.Ctx, np); err != nil {
			t.Fatal(err)
		}
		np = e.reconcile("memo")
		if np.Generation != gen {
			t.Fatalf("generation moved from %d to %d on a metadata change", gen, np.Generation)
		}
		if c := condition(t, np, karpv1.ConditionTypeValidationSucceeded); c.Status != metav1.ConditionTrue {
			t.Fatalf("ValidationSucceeded after a metadata change = %+v, want True", c)
		}
	}
}

// TestLeavesOtherProvidersPools: a NodePool of another provider's node class
// is that provider's controller's to write: no hash annotations, no
// conditions, no counts, as Karpenter leaves the pools it does not serve.
// stevedore's own pool beside it is written as usual.
func TestLeavesOtherProvidersPools(t *testing.T) {
	e := newEnv(t)
	e.nodePool("theirs", "theirs-nc", func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.NodeClassRef = environment.KWOKNodeClassRef()
	})
	e.nodePool("ours", "ours-nc", nil)
	e.nodeClass("ours-nc", metav1.ConditionTrue, "Ready", "")

	theirs := e.reconcile("theirs")
	if len(theirs.Status.Conditions) != 0 || theirs.Annotations[wellknown.AnnotationNodePoolHash] != "" || theirs.Status.Resources != nil {
		t.Errorf("another provider's NodePool was written: annotations %v, status %+v", theirs.Annotations, theirs.Status)
	}
	ours := e.reconcile("ours")
	if c := condition(t, ours, karpv1.ConditionTypeNodeClassReady); c.Status != metav1.ConditionTrue {
		t.Errorf("stevedore's NodePool: NodeClassReady = %+v, want True", c)
	}
	if ours.Annotations[wellknown.AnnotationNodePoolHash] == "" {
		t.Error("stevedore's NodePool has no hash annotation")
	}
}
