package lifecycle

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/controllers/metrics"
	"github.com/stevedore-autoscaler/stevedore/test/environment"
)

func TestMain(m *testing.M) { environment.Main(m) }

// env is one test's world, with its EC2NodeClass held in memory, and the
// lifecycle controller.
type env struct {
	*environment.Env
	r *Reconciler
}

func newEnv(t *testing.T, seed uint64) *env {
	t.Helper()
	e := &env{Env: environment.New(t, environment.Options{Seed: seed, InstanceTypes: []string{"c6i.large", "m6i.large", "m6g.large"}, NodeClassInMemory: true})}
	e.r = New(e.Kube, e.Cloud, e.Clock, e.Events, e.Metrics)
	return e
}

// setNodeClassReady sets the Ready condition of the node class.
func (e *env) setNodeClassReady(status metav1.ConditionStatus, reason, message string) {
	e.UpdateNodeClass(func(nc *awsv1.EC2NodeClass) {
		c := &nc.Status.Conditions[0]
		c.Status, c.Reason, c.Message = status, reason, message
	})
}

// create creates a NodeClaim of the default NodePool and node class.
func (e *env) create(name string, change ...func(*karpv1.NodeClaim)) *karpv1.NodeClaim {
	e.T.Helper()
	nc := environment.NewNodeClaim(name, "default", "default")
	for _, c := range change {
		c(nc)
	}
	e.Create(nc)
	return nc
}

// driveUntilGone reconciles the NodeClaim, moving the clock on by the
// requested wait whenever it settles, until it is gone.
func (e *env) driveUntilGone(name string) {
	e.T.Helper()
	for range 30 {
		nc, res := e.Settle(e.r, name)
		if nc == nil {
			return
		}
		wait := res.RequeueAfter
		if wait <= 0 {
			wait = time.Second
		}
		e.Clock.Step(wait)
	}
	e.T.Fatalf("NodeClaim %s was not deleted", name)
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

// register boots the launched NodeClaim's instance, whose kubelet registers
// its Node, and drives the NodeClaim to Registered. It returns the NodeClaim
// and its Node's name.
func (e *env) register(name string) (*karpv1.NodeClaim, string) {
	e.T.Helper()
	names := e.Boot()
	if len(names) != 1 {
		e.T.Fatalf("nodes %v registered, want one", names)
	}
	nc, _ := e.Settle(e.r, name)
	wantCondition(e.T, nc, karpv1.ConditionTypeRegistered, metav1.ConditionTrue)
	return nc, names[0]
}

// launched drives a new NodeClaim to Launched and returns it.
func (e *env) launched(name string, mutate ...func(*karpv1.NodeClaim)) *karpv1.NodeClaim {
	e.T.Helper()
	e.create(name, mutate...)
	nc, _ := e.Settle(e.r, name)
	if nc == nil {
		e.T.Fatalf("NodeClaim %s was deleted: %v", name, e.Events)
	}
	wantCondition(e.T, nc, karpv1.ConditionTypeLaunched, metav1.ConditionTrue)
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
	info, ok := e.AWS.Instance(id)
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
	nc, name := e.register(nc.Name)
	if nc.Status.NodeName != name {
		t.Errorf("status.nodeName = %q, want %q", nc.Status.NodeName, name)
	}
	node := e.Node(name)
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
	e.MarkReady(node.Name)
	nc, _ = e.Settle(e.r, nc.Name)
	if c := condition(nc, karpv1.ConditionTypeInitialized); c.Status != metav1.ConditionUnknown || c.Reason != ReasonStartupTaintsPresent {
		t.Fatalf("Initialized = %s/%s (%s), want Unknown/%s", c.Status, c.Reason, c.Message, ReasonStartupTaintsPresent)
	}

	// The agent removes its startup taint.
	node = e.Node(node.Name)
	base := node.DeepCopy()
	node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == agentTaint.Key })
	if err := e.Kube.Patch(e.Ctx, node, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	nc, res := e.Settle(e.r, nc.Name)
	wantCondition(t, nc, karpv1.ConditionTypeInitialized, metav1.ConditionTrue)
	wantCondition(t, nc, karpv1.ConditionTypeReady, metav1.ConditionTrue)
	if res.RequeueAfter != 0 {
		t.Errorf("an initialized NodeClaim asks to be requeued after %s", res.RequeueAfter)
	}
	node = e.Node(node.Name)
	if node.Labels[wellknown.LabelInitialized] != "true" {
		t.Errorf("node labels = %v, want %s=true", node.Labels, wellknown.LabelInitialized)
	}
	if !hasTaint(node.Spec.Taints, teamTaint) || hasTaint(node.Spec.Taints, agentTaint) {
		t.Errorf("node taints = %v: the startup taint came back or the NodeClaim taint went", node.Spec.Taints)
	}
	for _, msg := range []string{"launched nodeclaim", "registered nodeclaim", "initialized nodeclaim"} {
		if len(e.Logs.Lines(msg)) == 0 {
			t.Errorf("no %q log line in %v", msg, e.Logs)
		}
	}
	if n := len(e.AWS.InstanceIDs()); n != 1 {
		t.Errorf("%d instances, want 1", n)
	}
}

func TestInsufficientCapacityDeletesNodeClaim(t *testing.T) {
	e := newEnv(t, 102)
	e.AWS.InjectInsufficientCapacity(nil, nil, "", e.Clock.Now().Add(time.Hour))
	e.create("lifecycle-ice")
	if nc, _ := e.Settle(e.r, "lifecycle-ice"); nc != nil {
		t.Fatalf("NodeClaim still exists: %+v", nc.Status.Conditions)
	}
	if len(e.Events.Matching(environment.Event{Reason: ReasonInsufficientCapacityError})) == 0 {
		t.Errorf("no %s event in %v", ReasonInsufficientCapacityError, e.Events)
	}
	if ids := e.AWS.InstanceIDs(); len(ids) != 0 {
		t.Errorf("instances %v exist", ids)
	}
}

func TestNodeClassNotReadyDeletesNodeClaim(t *testing.T) {
	e := newEnv(t, 103)
	e.setNodeClassReady(metav1.ConditionFalse, "SubnetsNotFound", "no subnet matches the selector")
	e.create("lifecycle-ncnr")
	if nc, _ := e.Settle(e.r, "lifecycle-ncnr"); nc != nil {
		t.Fatalf("NodeClaim still exists: %+v", nc.Status.Conditions)
	}
	if evs := e.Events.Matching(environment.Event{Reason: ReasonNodeClassNotReady}); len(evs) == 0 || !strings.Contains(evs[0].Note, "SubnetsNotFound") {
		t.Errorf("no %s event naming the cause in %v", ReasonNodeClassNotReady, e.Events)
	}
}

func TestCreateErrorRetriesThenLaunchTimeout(t *testing.T) {
	e := newEnv(t, 104)
	e.setNodeClassReady(metav1.ConditionUnknown, "Unknown", "") // readiness not known yet: retried
	e.create("lifecycle-retry")
	nc, res := e.Settle(e.r, "lifecycle-retry")
	if nc == nil {
		t.Fatal("NodeClaim deleted on a retriable error")
	}
	if c := condition(nc, karpv1.ConditionTypeLaunched); c.Status != metav1.ConditionUnknown || c.Reason != "NodeClassReadinessUnknown" {
		t.Fatalf("Launched = %s/%s, want Unknown/NodeClassReadinessUnknown", c.Status, c.Reason)
	}
	if res.RequeueAfter != CreateRetry {
		t.Errorf("RequeueAfter = %s, want %s", res.RequeueAfter, CreateRetry)
	}
	e.Clock.Step(LaunchTimeout)
	e.driveUntilGone("lifecycle-retry")
	if len(e.Events.Matching(environment.Event{Reason: ReasonLaunchTimeout})) == 0 {
		t.Errorf("no %s event in %v", ReasonLaunchTimeout, e.Events)
	}
}

func TestRegistrationTimeoutTerminatesInstance(t *testing.T) {
	e := newEnv(t, 105)
	e.AWS.RemoveAccessEntry(environment.ClusterName, e.World.NodeRoleARN)
	nc := e.launched("lifecycle-noauth")
	id := instanceID(t, nc.Status.ProviderID)

	if names := e.Boot(); len(names) != 0 {
		t.Fatalf("nodes %v registered, want none without an access entry", names)
	}
	nc, res := e.Settle(e.r, nc.Name)
	wantCondition(t, nc, karpv1.ConditionTypeRegistered, metav1.ConditionUnknown)
	if want := RegistrationTimeout - fake.DefaultBootDelay - time.Second; res.RequeueAfter != want {
		t.Errorf("RequeueAfter = %s, want %s", res.RequeueAfter, want)
	}

	e.Clock.Step(RegistrationTimeout)
	e.driveUntilGone(nc.Name)
	evs := e.Events.Matching(environment.Event{Reason: ReasonRegistrationTimeout})
	if len(evs) == 0 {
		t.Fatalf("no %s event in %v", ReasonRegistrationTimeout, e.Events)
	}
	for _, cause := range []string{"access entry", "API server", "user data"} {
		if !strings.Contains(evs[0].Note, cause) {
			t.Errorf("event %q does not mention %q", evs[0].Note, cause)
		}
	}
	if info, ok := e.AWS.Instance(id); ok && info.State != fake.StateTerminated {
		t.Errorf("instance %s is %s, want terminated", id, info.State)
	}
	if len(e.Logs.Lines("deleted nodeclaim")) == 0 {
		t.Errorf("no \"deleted nodeclaim\" log line")
	}
	want := fmt.Sprintf(`
# HELP %[1]s Number of NodeClaims terminated. Labeled by the owning nodepool, capacity type and zone.
# TYPE %[1]s counter
%[1]s{capacity_type="on-demand",nodepool="default",zone="%[2]s"} 1
`, metrics.NameNodeClaimsTerminated, nc.Labels[wellknown.LabelTopologyZone])
	if err := testutil.GatherAndCompare(e.Registry, strings.NewReader(want), metrics.NameNodeClaimsTerminated); err != nil {
		t.Error(err)
	}
}

func TestRegistrationHealthOnNodePool(t *testing.T) {
	e := newEnv(t, 112)
	np := environment.NewNodePool("lifecycle-health", "default")
	e.Create(np)
	inPool := func(nc *karpv1.NodeClaim) { nc.Labels[wellknown.LabelNodePool] = np.Name }
	health := func() (*karpv1.NodePool, metav1.Condition) {
		t.Helper()
		got := np.DeepCopy()
		e.Refresh(got)
		c := meta.FindStatusCondition(got.Status.Conditions, karpv1.ConditionTypeNodeRegistrationHealthy)
		if c == nil {
			t.Fatalf("NodePool %s has no %s condition: %+v", np.Name, karpv1.ConditionTypeNodeRegistrationHealthy, got.Status.Conditions)
		}
		return got, *c
	}

	// Two nodes in a row cannot join: the node role has no access entry.
	e.AWS.RemoveAccessEntry(environment.ClusterName, e.World.NodeRoleARN)
	for _, name := range []string{"lifecycle-health-a", "lifecycle-health-b"} {
		e.launched(name, inPool)
		e.Clock.Step(RegistrationTimeout + time.Second)
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
	if err := e.AWS.AddAccessEntry(environment.ClusterName, e.World.NodeRoleARN); err != nil {
		t.Fatal(err)
	}
	nc := e.launched("lifecycle-health-c", inPool)
	nc, _ = e.register(nc.Name)
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
	if err := e.Kube.Delete(e.Ctx, nc); err != nil {
		t.Fatal(err)
	}
	nc, _ = e.Settle(e.r, nc.Name)
	if nc == nil {
		t.Fatal("NodeClaim gone before its instance terminated")
	}
	wantCondition(t, nc, karpv1.ConditionTypeInstanceTerminating, metav1.ConditionTrue)
	want := nc.DeletionTimestamp.Add(time.Hour).UTC().Format(time.RFC3339)
	if got := nc.Annotations[wellknown.AnnotationNodeClaimTerminationTimestamp]; got != want {
		t.Errorf("termination timestamp = %q, want %q", got, want)
	}
	// Settle reconciled it several times; the deadline was set once.
	expiring := environment.Event{Kind: "NodeClaim", Name: nc.Name, Type: corev1.EventTypeWarning, Reason: ReasonTerminationGracePeriodExpiring}
	if evs := e.Events.Matching(expiring); len(evs) != 1 || !strings.Contains(evs[0].Note, want) {
		t.Errorf("%s events %+v, want one naming %s", ReasonTerminationGracePeriodExpiring, evs, want)
	}
	e.driveUntilGone(nc.Name)
	if info, ok := e.AWS.Instance(id); ok && info.State != fake.StateTerminated {
		t.Errorf("instance %s is %s, want terminated", id, info.State)
	}
}

func TestDeleteRegisteredNodeClaimDeletesNodeFirst(t *testing.T) {
	e := newEnv(t, 107)
	nc, name := e.register(e.launched("lifecycle-delete-node").Name)
	calls := e.AWS.Calls("TerminateInstances")

	if err := e.Kube.Delete(e.Ctx, nc); err != nil {
		t.Fatal(err)
	}
	nc, _ = e.Settle(e.r, nc.Name)
	if nc == nil {
		t.Fatal("NodeClaim gone while its node exists")
	}
	if evs := e.Events.About(nc.Name, ReasonTerminationGracePeriodExpiring); len(evs) != 0 {
		t.Errorf("%+v for a NodeClaim without a terminationGracePeriod", evs)
	}
	node := e.Node(name)
	if node.DeletionTimestamp.IsZero() {
		t.Fatal("the node was not deleted")
	}
	if got := e.AWS.Calls("TerminateInstances"); got != calls {
		t.Errorf("the instance was terminated while its node was draining")
	}
	// The node's termination controller drains it and lets it go.
	base := node.DeepCopy()
	node.Finalizers = nil
	if err := e.Kube.Patch(e.Ctx, node, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	e.driveUntilGone(nc.Name)
	if info, ok := e.AWS.Instance(instanceID(t, nc.Status.ProviderID)); ok && info.State != fake.StateTerminated {
		t.Errorf("instance is %s, want terminated", info.State)
	}
}

func TestRestartDoesNotLaunchAgain(t *testing.T) {
	e := newEnv(t, 108)
	nc := e.launched("lifecycle-restart")
	ids, fleets := e.AWS.InstanceIDs(), e.AWS.Calls("CreateFleet")

	fresh := New(e.Kube, e.Cloud, e.Clock, e.Events, nil)
	got, _ := e.Settle(fresh, nc.Name)
	if got.Status.ProviderID != nc.Status.ProviderID {
		t.Errorf("provider ID changed from %s to %s", nc.Status.ProviderID, got.Status.ProviderID)
	}
	if after := e.AWS.InstanceIDs(); !slices.Equal(after, ids) || e.AWS.Calls("CreateFleet") != fleets {
		t.Errorf("instances %v -> %v, CreateFleet calls %d -> %d", ids, after, fleets, e.AWS.Calls("CreateFleet"))
	}
}

// crashAfterCreate leaves a NodeClaim as a controller that crashed between
// launching the instance and recording it would: finalizer and Launched
// condition set, an instance tagged with its name, no provider ID.
func (e *env) crashAfterCreate(name string) (*karpv1.NodeClaim, string) {
	e.T.Helper()
	nc := e.create(name)
	base := nc.DeepCopy()
	addFinalizer(&nc.ObjectMeta)
	if err := e.Kube.Patch(e.Ctx, nc, client.MergeFrom(base)); err != nil {
		e.T.Fatal(err)
	}
	base = nc.DeepCopy()
	e.r.initConditions(nc)
	if err := e.Kube.Status().Patch(e.Ctx, nc, client.MergeFrom(base)); err != nil {
		e.T.Fatal(err)
	}
	created, err := e.Cloud.Create(e.Ctx, nc)
	if err != nil {
		e.T.Fatal(err)
	}
	return nc, created.Status.ProviderID
}

func TestCrashAfterCreateAdoptsInstance(t *testing.T) {
	e := newEnv(t, 109)
	nc, providerID := e.crashAfterCreate("lifecycle-adopt")
	fleets := e.AWS.Calls("CreateFleet")
	got, _ := e.Settle(New(e.Kube, e.Cloud, e.Clock, e.Events, nil), nc.Name)
	wantCondition(t, got, karpv1.ConditionTypeLaunched, metav1.ConditionTrue)
	if got.Status.ProviderID != providerID {
		t.Errorf("provider ID = %q, want the launched %q", got.Status.ProviderID, providerID)
	}
	if e.AWS.Calls("CreateFleet") != fleets || len(e.AWS.InstanceIDs()) != 1 {
		t.Errorf("launched again: %d CreateFleet calls, instances %v", e.AWS.Calls("CreateFleet")-fleets, e.AWS.InstanceIDs())
	}
}

func TestDeleteDuringLaunchTerminatesUnrecordedInstance(t *testing.T) {
	e := newEnv(t, 110)
	nc, providerID := e.crashAfterCreate("lifecycle-leak")
	if err := e.Kube.Delete(e.Ctx, nc); err != nil {
		t.Fatal(err)
	}
	e.driveUntilGone(nc.Name)
	id := instanceID(t, providerID)
	if info, ok := e.AWS.Instance(id); ok && info.State != fake.StateTerminated {
		t.Errorf("instance %s is %s: leaked", id, info.State)
	}
}

// TestUnderManager runs the Reconciler as the controller binary does: under a
// manager whose cache serves the provider-ID indexes, woken by NodeClaim and
// Node events rather than driven by hand.
func TestUnderManager(t *testing.T) {
	e := newEnv(t, 111)
	mgr := environment.NewManager(t)
	r := New(mgr.GetClient(), e.Cloud, e.Clock, mgr.GetEventRecorder(Name), nil)
	if err := r.Register(mgr); err != nil {
		t.Fatal(err)
	}
	e.StartManager(mgr)

	e.create("lifecycle-manager")
	waitFor := func(what string, ok func(*karpv1.NodeClaim) bool) {
		t.Helper()
		environment.Eventually(t, what, func() bool {
			nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "lifecycle-manager"}}
			return e.Exists(nc) && ok(nc)
		})
	}
	waitFor("launch", func(nc *karpv1.NodeClaim) bool { return isTrue(nc, karpv1.ConditionTypeLaunched) })
	names := e.Boot()
	if len(names) != 1 {
		t.Fatalf("nodes %v registered, want one", names)
	}
	// Only the Node's creation can wake the controller now.
	waitFor("registration", func(nc *karpv1.NodeClaim) bool { return isTrue(nc, karpv1.ConditionTypeRegistered) })
	e.MarkReady(names[0])
	waitFor("initialization", func(nc *karpv1.NodeClaim) bool { return isTrue(nc, karpv1.ConditionTypeInitialized) })
}

// TestLeavesOtherProvidersNodeClaims: NodeClaims of another provider's node
// class, whether new, up with a Node, or being deleted, are neither
// launched, registered, timed out nor finalized, and their Nodes are not
// touched, while stevedore's own NodeClaim beside them is launched.
func TestLeavesOtherProvidersNodeClaims(t *testing.T) {
	e := newEnv(t, 112)
	kwok := func(nc *karpv1.NodeClaim) { nc.Spec.NodeClassRef = environment.KWOKNodeClassRef() }
	type foreign struct {
		claim *karpv1.NodeClaim
		node  *corev1.Node
	}
	var others []foreign
	others = append(others, foreign{claim: e.create("lifecycle-kwok-new", kwok)})
	up, upNode := e.CreateForeign("lifecycle-kwok-up", "kwok")
	others = append(others, foreign{up, upNode})
	gone, goneNode := e.CreateForeign("lifecycle-kwok-gone", "kwok")
	if err := e.Kube.Delete(e.Ctx, gone); err != nil {
		t.Fatal(err)
	}
	e.Refresh(gone)
	others = append(others, foreign{gone, goneNode})

	ours := e.launched("lifecycle-ours")
	if ids := e.AWS.InstanceIDs(); len(ids) != 1 || ids[0] != instanceID(t, ours.Status.ProviderID) {
		t.Errorf("instances %v, want only that of %s", ids, ours.Name)
	}

	// Past the launch and registration timeouts, and twice through each.
	for range 2 {
		for _, o := range others {
			if nc, _ := e.Settle(e.r, o.claim.Name); nc == nil {
				t.Fatalf("NodeClaim %s was deleted", o.claim.Name)
			}
		}
		e.Clock.Step(RegistrationTimeout + LaunchTimeout)
	}
	for _, o := range others {
		after := e.NodeClaim(o.claim.Name)
		if after.ResourceVersion != o.claim.ResourceVersion {
			t.Errorf("NodeClaim %s was written: finalizers %v, conditions %+v", o.claim.Name, after.Finalizers, after.Status.Conditions)
		}
		if o.node == nil {
			continue
		}
		if node := e.Node(o.node.Name); node.ResourceVersion != o.node.ResourceVersion || !node.DeletionTimestamp.IsZero() {
			t.Errorf("Node %s was written or deleted: deletion %v, labels %v", node.Name, node.DeletionTimestamp, node.Labels)
		}
	}
	if len(e.AWS.InstanceIDs()) != 1 {
		t.Errorf("instances %v, want one", e.AWS.InstanceIDs())
	}
	if evs := e.Events.About("lifecycle-kwok-new", ""); len(evs) > 0 {
		t.Errorf("events about another provider's NodeClaim: %v", evs)
	}
}
