package termination

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/test/environment"
)

func TestMain(m *testing.M) { environment.Main(m) }

// env is one test's world and the termination controller.
type env struct {
	*environment.Env
	r *Reconciler
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{Env: environment.New(t, environment.Options{
		Name: "term", Seed: 1, InstanceTypes: []string{"m6i.large"}, NodeClassInMemory: true,
		// The API server stamps deletion times with its own clock; the
		// controller compares them with the fake clock's.
		WallClock: true,
	})}
	e.r = New(e.Kube, e.Cloud, e.Clock, e.Events)
	return e
}

// launch starts an instance in the fake cloud and creates its NodeClaim (with
// the termination finalizer, as the lifecycle controller would) and its
// Node, with the finalizer, Ready if asked.
func (e *env) launch(ready bool) (*corev1.Node, *karpv1.NodeClaim) {
	e.T.Helper()
	name := e.Name + "-node"
	nc := environment.NewNodeClaim(name, "default", "default")
	nc.Finalizers = []string{wellknown.FinalizerTermination}
	launched, err := e.Cloud.Create(e.Ctx, nc)
	if err != nil {
		e.T.Fatalf("launching: %v", err)
	}
	nc.Status.ProviderID = launched.Status.ProviderID
	nc.Status.NodeName = name
	e.Create(nc)
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{wellknown.FinalizerTermination}},
		Spec:       corev1.NodeSpec{ProviderID: launched.Status.ProviderID},
	}
	if ready {
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	}
	e.Create(node)
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
	e.T.Helper()
	p := environment.NewPod(name, "", "")
	for _, o := range opts {
		o(p)
	}
	return e.CreateRunning(p, node.Name)
}

// pdb creates a PodDisruptionBudget over the pods with the labels given, with
// the disruptions allowed its status says.
func (e *env) pdb(name string, maxUnavailable int, allowed int32, selector map[string]string) *policyv1.PodDisruptionBudget {
	e.T.Helper()
	return e.CreatePDB(name, selector, int32(maxUnavailable), allowed)
}

// deleteNode deletes the node; its finalizer keeps it.
func (e *env) deleteNode(node *corev1.Node) {
	e.T.Helper()
	if err := e.Kube.Delete(e.Ctx, node); err != nil {
		e.T.Fatal(err)
	}
}

func (e *env) reconcile(node *corev1.Node) reconcile.Result {
	e.T.Helper()
	res, err := e.r.Reconcile(e.Ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: node.Name}})
	if err != nil {
		e.T.Fatalf("reconcile: %v", err)
	}
	return res
}

func (e *env) getPod(name string) *corev1.Pod {
	e.T.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: e.Name, Name: name}}
	e.Refresh(p)
	return p
}

func (e *env) condition(nc *karpv1.NodeClaim, condType string) metav1.ConditionStatus {
	e.T.Helper()
	c := meta.FindStatusCondition(e.NodeClaim(nc.Name).Status.Conditions, condType)
	if c == nil {
		return ""
	}
	return c.Status
}

// setDeadline writes the termination timestamp annotation on the NodeClaim.
func (e *env) setDeadline(nc *karpv1.NodeClaim, at time.Time) {
	e.T.Helper()
	got := e.NodeClaim(nc.Name)
	patch := client.MergeFrom(got.DeepCopy())
	if got.Annotations == nil {
		got.Annotations = map[string]string{}
	}
	got.Annotations[wellknown.AnnotationNodeClaimTerminationTimestamp] = at.UTC().Format(time.RFC3339)
	if err := e.Kube.Patch(e.Ctx, got, patch); err != nil {
		e.T.Fatal(err)
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
		e.Clock.Step(res.RequeueAfter)
	}
	if running, _ := e.Pods(); !slices.Equal(running, []string{"web-0"}) {
		t.Fatalf("pods running = %v, want the pod kept by its budget", running)
	}
	// The refusal is reported on the node, as Karpenter reports it, once
	// within EventInterval.
	if evs := e.Events.Matching(environment.Event{Reason: ReasonFailedDraining}); len(evs) != 1 ||
		evs[0].Kind != "Node" || evs[0].Name != node.Name || evs[0].Type != corev1.EventTypeWarning || !strings.Contains(evs[0].Note, e.Name+"/web-0") {
		t.Errorf("FailedDraining events %+v, want one Warning on the node naming the pod", evs)
	}
	if evs := e.Events.Matching(environment.Event{Kind: "Pod"}); len(evs) != 0 {
		t.Errorf("pod events %+v while its eviction is refused, want none", evs)
	}
	if got := e.condition(nc, karpv1.ConditionTypeDrained); got != metav1.ConditionFalse {
		t.Errorf("Drained = %q, want False", got)
	}
	n := &corev1.Node{}
	if err := e.Kube.Get(e.Ctx, client.ObjectKeyFromObject(node), n); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(n.Spec.Taints, func(tn corev1.Taint) bool { return tn.Key == wellknown.TaintKeyDisrupted }) ||
		n.Labels[wellknown.LabelExcludeFromExternalLoadBalancers] != wellknown.ExcludeFromExternalLoadBalancersValue {
		t.Errorf("node not tainted and labelled: taints %v labels %v", n.Spec.Taints, n.Labels)
	}
	if !strings.Contains(e.Events.String(), "tainted node") {
		t.Errorf("no tainted-node event in %v", e.Events)
	}

	// The deadline arrives: the pod is deleted regardless of its budget,
	// with the grace period clamped to at least a second.
	deadline := e.Clock.Now().Add(time.Minute)
	e.setDeadline(nc, deadline)
	e.reconcile(node)
	if _, terminating := e.Pods(); len(terminating) != 0 {
		t.Fatalf("pod deleted %v before deadline minus its grace period", terminating)
	}
	e.Clock.SetTime(deadline.Add(time.Second))
	e.reconcile(node)
	p := e.getPod("web-0")
	if p.DeletionTimestamp == nil {
		t.Fatal("pod not deleted after the termination deadline")
	}
	if p.DeletionGracePeriodSeconds == nil || *p.DeletionGracePeriodSeconds != 1 {
		t.Errorf("deletion grace = %v, want 1s", p.DeletionGracePeriodSeconds)
	}
	if len(e.Events.Matching(environment.Event{Reason: ReasonDisrupted})) != 1 {
		t.Errorf("want one deleted-pod event: %v", e.Events)
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
		running, terminating := e.Pods()
		if len(terminating) != 1 || len(running) != 2-round {
			t.Fatalf("round %d: running %v terminating %v, want exactly one evicted", round, running, terminating)
		}
		// A second reconcile while the budget is spent evicts nothing.
		e.Clock.Step(res.RequeueAfter)
		e.reconcile(node)
		if _, terminating := e.Pods(); len(terminating) != 1 {
			t.Fatalf("round %d: %v terminating after the budget was spent", round, terminating)
		}
		// The pod goes; the disruption controller restores the budget.
		e.FinishTerminating()
		e.AllowDisruptions(pdb, 1)
		e.Clock.Step(EvictionMaxDelay)
	}
	e.reconcile(node)
	if got := e.condition(nc, karpv1.ConditionTypeDrained); got != metav1.ConditionTrue {
		t.Errorf("Drained = %q after every pod left, want True", got)
	}
	if got := len(e.Events.Matching(environment.Event{Reason: ReasonEvicted})); got != 3 {
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
		e.Clock.Step(time.Minute)
	}
	if _, terminating := e.Pods(); len(terminating) != 0 {
		t.Fatalf("do-not-disrupt pod evicted: %v", terminating)
	}
	deadline := e.Clock.Now().Add(10 * time.Minute)
	e.setDeadline(nc, deadline)
	expiring := environment.Event{Kind: "Node", Name: node.Name, Type: corev1.EventTypeWarning, Reason: ReasonTerminationGracePeriodExpiring}
	if n := len(e.Events.Matching(expiring)); n != 0 {
		t.Errorf("%d %s events before the deadline was set", n, ReasonTerminationGracePeriodExpiring)
	}
	e.reconcile(node)
	if evs := e.Events.Matching(expiring); len(evs) != 1 || !strings.Contains(evs[0].Note, deadline.UTC().Format(time.RFC3339)) {
		t.Errorf("%s events %+v, want one naming the deadline", ReasonTerminationGracePeriodExpiring, evs)
	}
	// The pod's default grace period is 30 s: it is deleted 30 s before the
	// deadline, with all of that grace.
	e.Clock.SetTime(deadline.Add(-31 * time.Second))
	res := e.reconcile(node)
	if n := len(e.Events.Matching(expiring)); n != 2 {
		t.Errorf("%d %s events %v later, want 2", n, ReasonTerminationGracePeriodExpiring, 10*time.Minute-31*time.Second)
	}
	if _, terminating := e.Pods(); len(terminating) != 0 {
		t.Fatal("do-not-disrupt pod deleted too early")
	}
	if res.RequeueAfter > 2*time.Second {
		t.Errorf("requeue %v, want to come back at the force-delete time (1 s away)", res.RequeueAfter)
	}
	e.Clock.SetTime(deadline.Add(-30 * time.Second))
	e.reconcile(node)
	p := e.getPod("batch")
	if p.DeletionTimestamp == nil {
		t.Fatal("do-not-disrupt pod not deleted at deadline minus its grace period")
	}
	if g := p.DeletionGracePeriodSeconds; g == nil || *g != 30 {
		t.Errorf("deletion grace = %v, want 30", g)
	}
	e.FinishTerminating()
	e.reconcile(node)
	if got := e.condition(nc, karpv1.ConditionTypeDrained); got != metav1.ConditionTrue {
		t.Errorf("Drained = %q, want True", got)
	}
}

// TestDoNotDisruptEvents: while draining, a pod whose do-not-disrupt
// annotation is a duration says until when it is protected (once per
// EventInterval), then that the protection ran out; an invalid value is
// reported and ignored.
func TestDoNotDisruptEvents(t *testing.T) {
	e := newEnv(t)
	node, _ := e.launch(true)
	annotated := func(v string) podOpt {
		return func(p *corev1.Pod) { p.Annotations = map[string]string{wellknown.AnnotationDoNotDisrupt: v} }
	}
	e.pod(node, "a-invalid", annotated("soon"))
	e.pod(node, "b-long", annotated("1h"))
	until := e.Clock.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	e.deleteNode(node)
	count := func(pod, reason string) int { return len(e.Events.About(pod, reason)) }

	for i, step := range []struct {
		after                  time.Duration
		invalid, until, passed int
		evicted                []string
	}{
		{0, 1, 1, 0, []string{"a-invalid"}},
		{time.Minute, 1, 1, 0, []string{"a-invalid"}}, // within EventInterval
		{EventInterval, 1, 2, 0, []string{"a-invalid"}},
		{time.Hour, 1, 2, 1, []string{"a-invalid", "b-long"}},
	} {
		e.Clock.Step(step.after)
		e.reconcile(node)
		if got := count("a-invalid", ReasonInvalidDoNotDisruptAnnotation); got != step.invalid {
			t.Errorf("step %d: %d %s events, want %d", i, got, ReasonInvalidDoNotDisruptAnnotation, step.invalid)
		}
		if got := count("b-long", ReasonDoNotDisruptUntil); got != step.until {
			t.Errorf("step %d: %d %s events, want %d", i, got, ReasonDoNotDisruptUntil, step.until)
		}
		if got := count("b-long", ReasonDoNotDisruptGracePeriodElapsed); got != step.passed {
			t.Errorf("step %d: %d %s events, want %d", i, got, ReasonDoNotDisruptGracePeriodElapsed, step.passed)
		}
		if _, terminating := e.Pods(); !slices.Equal(terminating, step.evicted) {
			t.Errorf("step %d: evicted %v, want %v", i, terminating, step.evicted)
		}
	}
	if evs := e.Events.Matching(environment.Event{Name: "a-invalid", Reason: ReasonInvalidDoNotDisruptAnnotation}); len(evs) == 0 || evs[0].Type != corev1.EventTypeWarning {
		t.Errorf("invalid-annotation events %+v, want a Warning", evs)
	}
	if evs := e.Events.About("b-long", ReasonDoNotDisruptUntil); len(evs) == 0 || !strings.Contains(evs[0].Note, until) {
		t.Errorf("until events %+v, want them to name %s", evs, until)
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
		_, terminating := e.Pods()
		if !slices.Equal(terminating, wantTerminating) {
			t.Fatalf("terminating %v, want %v", terminating, wantTerminating)
		}
		e.FinishTerminating()
		e.Clock.Step(time.Second)
	}
	// Tier 1: d-app goes, e-blocked is held by its budget, so tier 2 waits.
	step("d-app")
	step()
	step()
	// The budget opens: e-blocked goes, then the daemon, then the critical
	// pod, then the critical daemon. The pod tolerating everything stays.
	e.AllowDisruptions(&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: e.Name}}, 1)
	e.Clock.Step(EvictionMaxDelay)
	step("e-blocked")
	step("c-ds")
	step("b-critical")
	step("a-critical-ds")
	step()
	if running, _ := e.Pods(); !slices.Equal(running, []string{"f-tolerates"}) {
		t.Errorf("running %v, want only the pod tolerating the disrupted taint", running)
	}
}

func TestInstanceGoneSkipsDrain(t *testing.T) {
	e := newEnv(t)
	node, nc := e.launch(false)
	e.pod(node, "app")
	if err := e.Cloud.Delete(e.Ctx, nc); err != nil {
		t.Fatal(err)
	}
	e.Clock.Step(2 * time.Minute) // past the fake's shutdown delay
	e.deleteNode(node)
	if res := e.reconcile(node); res.RequeueAfter != 0 {
		t.Errorf("requeue %v, want none", res.RequeueAfter)
	}
	if err := e.Kube.Get(e.Ctx, client.ObjectKeyFromObject(node), &corev1.Node{}); !apierrors.IsNotFound(err) {
		t.Fatalf("node still there (err %v), want finalizer removed and node gone", err)
	}
	if running, _ := e.Pods(); !slices.Equal(running, []string{"app"}) {
		t.Errorf("running %v: pods were drained from a node whose instance is gone", running)
	}
	if len(e.Events.Matching(environment.Event{Reason: ReasonTaintedNode})) != 0 || len(e.Events.Matching(environment.Event{Reason: ReasonEvicted})) != 0 {
		t.Errorf("unexpected events %v", e.Events)
	}
}

func TestFullTermination(t *testing.T) {
	e := newEnv(t)
	node, nc := e.launch(true)
	e.pod(node, "app")
	e.pod(node, "mirror", func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}}
	})
	pvName := e.Name + "-pv"
	va := &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: e.Name + "-va"},
		Spec: storagev1.VolumeAttachmentSpec{
			Attacher: "ebs.csi.aws.com",
			NodeName: node.Name,
			Source:   storagev1.VolumeAttachmentSource{PersistentVolumeName: &pvName},
		},
	}
	e.Create(va)
	e.deleteNode(node)

	// Drain.
	e.reconcile(node)
	if _, terminating := e.Pods(); !slices.Equal(terminating, []string{"app"}) {
		t.Fatalf("terminating %v, want app (the mirror pod stays)", terminating)
	}
	draining := environment.Event{Kind: "Node", Name: node.Name, Type: corev1.EventTypeWarning, Reason: ReasonFailedDraining}
	if evs := e.Events.Matching(draining); len(evs) != 1 || !strings.Contains(evs[0].Note, "1 pod(s)") {
		t.Errorf("FailedDraining events %+v, want one counting the pod still to leave", evs)
	}
	e.FinishTerminating()
	res := e.reconcile(node)
	awaiting := environment.Event{Kind: "Node", Name: node.Name, Type: corev1.EventTypeNormal, Reason: ReasonAwaitingVolumeDetachment}
	if evs := e.Events.Matching(awaiting); len(evs) != 1 || !strings.Contains(evs[0].Note, va.Name) {
		t.Errorf("AwaitingVolumeDetachment events %+v, want one naming %s", evs, va.Name)
	}
	e.reconcile(node)
	if n := len(e.Events.Matching(awaiting)); n != 1 {
		t.Errorf("%d AwaitingVolumeDetachment events within %v, want 1", n, EventInterval)
	}
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
	if err := e.Kube.Delete(e.Ctx, va); err != nil {
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
	if err := e.Kube.Get(e.Ctx, client.ObjectKeyFromObject(node), &corev1.Node{}); err != nil {
		t.Fatalf("node gone before its instance terminated: %v", err)
	}
	for i := 0; i < 20; i++ {
		e.Clock.Step(res.RequeueAfter)
		res = e.reconcile(node)
		if err := e.Kube.Get(e.Ctx, client.ObjectKeyFromObject(node), &corev1.Node{}); apierrors.IsNotFound(err) {
			break
		}
	}
	if err := e.Kube.Get(e.Ctx, client.ObjectKeyFromObject(node), &corev1.Node{}); !apierrors.IsNotFound(err) {
		t.Fatalf("node still there after the instance terminated (err %v)", err)
	}
	got := e.NodeClaim(nc.Name)
	if _, err := e.Cloud.Get(e.Ctx, got.Status.ProviderID); err == nil {
		t.Error("instance still exists in the fake cloud")
	}
	if got.DeletionTimestamp.IsZero() {
		t.Error("the NodeClaim of the deleted node was not deleted")
	}
	for _, words := range []string{"tainted node", "evicted pod", "deleted node"} {
		if !strings.Contains(e.Events.String(), words) {
			t.Errorf("no %q event in %v", words, e.Events)
		}
	}
	if n := len(e.Events.Matching(draining)); n != 1 {
		t.Errorf("%d FailedDraining events, want still 1: the drain ended", n)
	}
	if evs := e.Events.Matching(environment.Event{Reason: ReasonTerminationGracePeriodExpiring}); len(evs) != 0 {
		t.Errorf("%+v without a termination deadline", evs)
	}
}

// TestLeavesOtherProvidersNodes: of two deleted Nodes with a pod each,
// stevedore's is drained and its NodeClaim deleted, while the one whose
// NodeClaim is another provider's is neither tainted, drained nor let go,
// and its NodeClaim is left as it was.
func TestLeavesOtherProvidersNodes(t *testing.T) {
	e := newEnv(t)
	ours, ourClaim := e.launch(true)
	otherClaim, other := e.CreateForeign(e.Name+"-kwok", "kwok")
	for _, n := range []*corev1.Node{ours, other} {
		e.pod(n, n.Name+"-app")
		e.deleteNode(n)
		e.Refresh(n)
	}
	for range 2 {
		e.reconcile(ours)
		e.reconcile(other)
	}

	if running, terminating := e.Pods(); !slices.Equal(running, []string{other.Name + "-app"}) || !slices.Equal(terminating, []string{ours.Name + "-app"}) {
		t.Errorf("pods running %v, terminating %v; want only stevedore's node drained", running, terminating)
	}
	if nc := e.NodeClaim(ourClaim.Name); nc.DeletionTimestamp.IsZero() {
		t.Errorf("NodeClaim %s of stevedore's deleted node was not deleted", nc.Name)
	}
	if nc := e.NodeClaim(otherClaim.Name); nc.ResourceVersion != otherClaim.ResourceVersion {
		t.Errorf("another provider's NodeClaim %s was written: deletion %v, conditions %+v", nc.Name, nc.DeletionTimestamp, nc.Status.Conditions)
	}
	if n := e.Node(other.Name); n.ResourceVersion != other.ResourceVersion {
		t.Errorf("another provider's Node %s was written: taints %v, finalizers %v", n.Name, n.Spec.Taints, n.Finalizers)
	}
	for _, ev := range e.Events.All() {
		if ev.Name == other.Name || ev.Name == otherClaim.Name || strings.HasPrefix(ev.Name, other.Name+"-") {
			t.Errorf("event about another provider's node: %v", ev)
		}
	}
}
