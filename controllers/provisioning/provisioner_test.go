package provisioning

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/controllers/eventlimit"
	"github.com/stevedore-autoscaler/stevedore/controllers/metrics"
	"github.com/stevedore-autoscaler/stevedore/controllers/nodeclaim/lifecycle"
	"github.com/stevedore-autoscaler/stevedore/controllers/nodepool/hash"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/scheduling/requirements"
	"github.com/stevedore-autoscaler/stevedore/state"
	"github.com/stevedore-autoscaler/stevedore/test/environment"
)

func TestMain(m *testing.M) { environment.Main(m) }

// env is one test's world and the provisioner.
type env struct {
	*environment.Env
	p *Provisioner
}

func newEnv(t *testing.T, name string, seed uint64) *env {
	t.Helper()
	e := &env{Env: environment.New(t, environment.Options{
		Name: name, Seed: seed, InstanceTypes: []string{"c6i.large", "m6i.large", "c6i.xlarge", "m6i.xlarge"},
	})}
	// The node gauges describe the cluster state, as the controller wiring
	// sets them up.
	e.Metrics.WatchState(metrics.StateOptions{State: e.State, Clock: e.Clock})
	e.p = New(e.Kube, e.State, e.Cloud, e.Clock, e.Events, Options{}, e.Metrics)
	return e
}

// nodeClass creates the test's EC2NodeClass with the given Ready condition.
func (e *env) nodeClass(ready metav1.ConditionStatus, reason, message string) {
	e.T.Helper()
	e.CreateNodeClass(func(nc *awsv1.EC2NodeClass) {
		c := &nc.Status.Conditions[0]
		c.Status, c.Reason, c.Message = ready, reason, message
	})
}

var (
	teamTaint  = corev1.Taint{Key: "example.com/team", Value: "a", Effect: corev1.TaintEffectNoSchedule}
	agentTaint = corev1.Taint{Key: "example.com/agent-not-ready", Effect: corev1.TaintEffectNoExecute}
)

// nodePool creates the test's NodePool: its template labels, annotates
// and taints its nodes, which have a startup taint, expire after a day and
// get an hour to terminate.
func (e *env) nodePool(change ...func(*karpv1.NodePool)) *karpv1.NodePool {
	e.T.Helper()
	return e.CreateNodePool(append([]func(*karpv1.NodePool){func(np *karpv1.NodePool) {
		np.Spec.Template.Metadata = karpv1.NodeClaimTemplateMetadata{
			Labels:      map[string]karpv1.LabelValue{"example.com/team": "a"},
			Annotations: map[string]string{"example.com/owner": "team-a"},
		}
		t := &np.Spec.Template.Spec
		t.Taints = []corev1.Taint{teamTaint}
		t.StartupTaints = []corev1.Taint{agentTaint}
		t.ExpireAfter = karpv1.NewNillableDuration(24 * time.Hour)
		t.TerminationGracePeriod = &karpv1.Duration{Duration: time.Hour}
	}}, change...)...)
}

// pod creates a pending pod that tolerates the team taint, and marks it
// unschedulable, as e.Kube-scheduler would.
func (e *env) pod(name string, change ...func(*corev1.Pod)) *corev1.Pod {
	e.T.Helper()
	p := environment.NewPod(name, "500m", "512Mi")
	p.Spec.Tolerations = []corev1.Toleration{{Key: teamTaint.Key, Operator: corev1.TolerationOpEqual, Value: teamTaint.Value, Effect: teamTaint.Effect}}
	for _, c := range change {
		c(p)
	}
	return e.CreateUnschedulable(p)
}

// podEvents returns the events about the pod of the test's namespace named
// name with the reason given.
func (e *env) podEvents(name, reason string) []environment.Event {
	return e.Events.Matching(environment.Event{Namespace: e.Name, Name: name, Reason: reason})
}

// batch reconciles the provisioner, syncing the state and moving the clock
// on by the wait it asks for, until it has provisioned once.
func (e *env) batch() {
	e.T.Helper()
	for range 20 {
		e.SyncState()
		res, err := e.p.Reconcile(e.Ctx, Request())
		if err != nil {
			e.T.Fatalf("reconcile: %v", err)
		}
		if res.RequeueAfter == Period {
			return
		}
		if res.RequeueAfter <= 0 {
			e.T.Fatalf("reconcile asked for no requeue")
		}
		e.Clock.Step(res.RequeueAfter)
	}
	e.T.Fatal("the provisioner never provisioned")
}

func (e *env) nodeClaims() []karpv1.NodeClaim {
	e.T.Helper()
	var list karpv1.NodeClaimList
	if err := e.Kube.List(e.Ctx, &list, client.MatchingLabels{wellknown.LabelNodePool: e.Name}); err != nil {
		e.T.Fatal(err)
	}
	return list.Items
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
		t.Fatalf("no NodeClaim created; events %+v", e.Events)
	}
	for _, nc := range claims {
		checkNodeClaim(t, np, &nc)
	}
	if n := len(e.Logs.Lines("created nodeclaim")); n != len(claims) {
		t.Errorf("%d \"created nodeclaim\" log lines for %d NodeClaims", n, len(claims))
	}
	if got := e.Metric(metrics.NameNodeClaimsCreated, map[string]string{
		metrics.LabelReason: ReasonProvisioning, metrics.LabelNodePool: e.Name, metrics.LabelMinValuesRelaxed: "false",
	}); got != float64(len(claims)) {
		t.Errorf("%s{reason=%s,nodepool=%s} = %v, want %d", metrics.NameNodeClaimsCreated, ReasonProvisioning, e.Name, got, len(claims))
	}

	// Every pod is nominated for one of the new NodeClaims, once.
	onClaim := map[string]int{}
	for _, name := range pods {
		evs := e.podEvents(name, ReasonNominated)
		if len(evs) != 1 || evs[0].Type != corev1.EventTypeNormal {
			t.Fatalf("pod %s: Nominated events %+v, want one", name, evs)
		}
		onClaim[strings.TrimPrefix(evs[0].Note, "Pod should schedule on: nodeclaim/")]++
	}
	for _, nc := range claims {
		if onClaim[nc.Name] == 0 {
			t.Errorf("NodeClaim %s has no pod nominated for it: %v", nc.Name, onClaim)
		}
		if !e.State.IsNominated(nc.Name, e.Clock.Now()) {
			t.Errorf("NodeClaim %s is not nominated in the state", nc.Name)
		}
	}
	if len(onClaim) != len(claims) {
		t.Errorf("pods nominated for %v, NodeClaims %d", onClaim, len(claims))
	}
	for _, r := range []string{ReasonNominated, ReasonFailedScheduling} {
		if evs := e.podEvents("ds-pod", r); len(evs) != 0 {
			t.Errorf("the DaemonSet pod got events %+v", evs)
		}
	}

	// Right after, and a batch later, the same pods launch nothing more.
	if _, err := e.p.Reconcile(e.Ctx, Request()); err != nil {
		t.Fatal(err)
	}
	e.batch()
	if got := e.nodeClaims(); len(got) != len(claims) {
		t.Fatalf("%d NodeClaims after a second batch, want %d", len(got), len(claims))
	}
	for _, name := range pods {
		if evs := e.podEvents(name, ReasonFailedScheduling); len(evs) != 0 {
			t.Errorf("pod %s: %+v", name, evs)
		}
	}

	// The NodeClaims launch, their nodes register and initialize.
	lc := lifecycle.New(e.Kube, e.Cloud, e.Clock, e.Events, e.Metrics)
	drive := func(name string) *karpv1.NodeClaim {
		t.Helper()
		for range 10 {
			if _, err := lc.Reconcile(e.Ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}); err != nil {
				t.Fatalf("lifecycle %s: %v", name, err)
			}
		}
		return e.NodeClaim(name)
	}
	for _, nc := range claims {
		if got := drive(nc.Name); !meta.IsStatusConditionTrue(got.Status.Conditions, karpv1.ConditionTypeLaunched) {
			t.Fatalf("NodeClaim %s not launched: %+v", nc.Name, got.Status.Conditions)
		}
	}
	names := e.Boot()
	if len(names) != len(claims) {
		t.Fatalf("nodes %v registered, want %d", names, len(claims))
	}
	for _, nc := range claims {
		drive(nc.Name)
	}
	for _, name := range names {
		e.MarkReady(name)
		// The agent the startup taint waits for comes up.
		node := e.Node(name)
		base := node.DeepCopy()
		node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == agentTaint.Key })
		if err := e.Kube.Patch(e.Ctx, node, client.MergeFrom(base)); err != nil {
			t.Fatal(err)
		}
	}
	for _, nc := range claims {
		drive(nc.Name)
	}
	e.SyncState() // the node gauges read the cluster state
	for _, nc := range claims {
		got := drive(nc.Name)
		for _, c := range []string{karpv1.ConditionTypeRegistered, karpv1.ConditionTypeInitialized, karpv1.ConditionTypeReady} {
			if !meta.IsStatusConditionTrue(got.Status.Conditions, c) {
				t.Errorf("NodeClaim %s: %s is not True: %+v", nc.Name, c, got.Status.Conditions)
			}
		}
		node := e.Node(got.Status.NodeName)
		if node.Labels[wellknown.LabelInitialized] != "true" || node.Labels["example.com/team"] != "a" || node.Labels[wellknown.LabelNodePool] != e.Name {
			t.Errorf("node %s labels = %v", node.Name, node.Labels)
		}
		if got, want := e.Metric(metrics.NameNodesAllocatable, map[string]string{
			metrics.LabelNodeName: node.Name, metrics.LabelResourceType: string(corev1.ResourceCPU),
		}), node.Status.Allocatable.Cpu().AsApproximateFloat64(); got != want || got == 0 {
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
	evs := e.podEvents("app", ReasonFailedScheduling)
	if len(evs) != 1 || evs[0].Type != corev1.EventTypeWarning {
		t.Fatalf("FailedScheduling events = %+v, want one warning", evs)
	}
	if note := evs[0].Note; !strings.Contains(note, "limit") || !strings.Contains(note, "cpu") || !strings.Contains(note, e.Name) {
		t.Errorf("event %q does not name the NodePool's cpu limit", note)
	}

	// The event is not repeated within the minute, but is after it.
	e.Clock.Step(10 * time.Second)
	e.batch()
	if evs := e.podEvents("app", ReasonFailedScheduling); len(evs) != 1 {
		t.Errorf("%d FailedScheduling events within a minute, want 1", len(evs))
	}
	e.Clock.Step(EventInterval)
	e.batch()
	if evs := e.podEvents("app", ReasonFailedScheduling); len(evs) != 2 {
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
	evs := e.Events.Matching(environment.Event{Kind: "NodePool", Name: e.Name, Reason: ReasonNodeClassNotReady})
	want := fmt.Sprintf("NodeClass %s is not ready: no subnet matches the selector", e.Name)
	if len(evs) != 1 || evs[0].Note != want || evs[0].Kind != "NodePool" || evs[0].Type != corev1.EventTypeWarning {
		t.Errorf("NodePool events = %+v, want one warning %q", evs, want)
	}
	evs = e.podEvents("app", ReasonFailedScheduling)
	if len(evs) != 1 {
		t.Fatalf("pod events = %+v, want one FailedScheduling", evs)
	}
	// The pod's event names the NodePool left out and why.
	if want := fmt.Sprintf("nodepool %s: left out: NodeClass %s is not ready: no subnet matches the selector (%s)", e.Name, e.Name, ReasonNodeClassNotReady); !strings.Contains(evs[0].Note, want) {
		t.Errorf("FailedScheduling %q does not say %q", evs[0].Note, want)
	}
}

// TestNoCompatibleInstanceTypes: a NodePool whose requirements leave no
// instance type gets a Warning, at most once per EventInterval; the pod it
// cannot take stays pending.
func TestNoCompatibleInstanceTypes(t *testing.T) {
	e := newEnv(t, "prov-nocompat", 206)
	e.nodeClass(metav1.ConditionTrue, "Ready", "")
	e.nodePool(func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, karpv1.NodeSelectorRequirementWithMinValues{
			Key: wellknown.LabelInstanceFamily, Operator: corev1.NodeSelectorOpIn, Values: []string{"r8g"}})
	})
	e.pod("app")
	e.batch()
	noTypes := environment.Event{Kind: "NodePool", Name: e.Name, Type: corev1.EventTypeWarning, Reason: ReasonNoCompatibleInstanceTypes}
	if evs := e.Events.Matching(noTypes); len(evs) != 1 || !strings.Contains(evs[0].Note, "none of its node class's instance types") {
		t.Errorf("%s events %+v, want one", ReasonNoCompatibleInstanceTypes, evs)
	}
	if claims := e.nodeClaims(); len(claims) != 0 {
		t.Errorf("%d NodeClaims from a NodePool with no instance type", len(claims))
	}
	for _, step := range []struct {
		after time.Duration
		want  int
	}{{Period, 1}, {EventInterval, 2}} {
		e.Clock.Step(step.after)
		e.p.Trigger()
		e.batch()
		if n := len(e.Events.Matching(noTypes)); n != step.want {
			t.Errorf("%d %s events %v later, want %d", n, ReasonNoCompatibleInstanceTypes, step.after, step.want)
		}
	}
}

// TestNoCompatibleInstanceTypesCases covers what leaves a NodePool nothing
// to launch: no instance type at all, or too few for a minValues unless
// minValues are relaxed.
func TestNoCompatibleInstanceTypesCases(t *testing.T) {
	typ := func(family string) *packer.InstanceType {
		r, err := requirements.NewRequirement(wellknown.LabelInstanceFamily, corev1.NodeSelectorOpIn, family)
		if err != nil {
			t.Fatal(err)
		}
		return &packer.InstanceType{Name: family + ".large", Requirements: requirements.New(r)}
	}
	families := func(minValues int) requirements.Requirements {
		r, err := requirements.NewRequirement(wellknown.LabelInstanceFamily, corev1.NodeSelectorOpIn, "c6i", "m6i", "r6i")
		if err != nil {
			t.Fatal(err)
		}
		return requirements.New(r.WithMinValues(minValues))
	}
	for _, tc := range []struct {
		name   string
		pool   packer.NodePool
		policy packer.MinValuesPolicy
		want   string // in the message; "" for none
	}{
		{"no instance type", packer.NodePool{}, "", "none of its node class's instance types"},
		{"some instance types", packer.NodePool{InstanceTypes: []*packer.InstanceType{typ("m6i")}}, "", ""},
		{"minValues met", packer.NodePool{Requirements: families(2), InstanceTypes: []*packer.InstanceType{typ("c6i"), typ("m6i")}}, packer.MinValuesStrict, ""},
		{"minValues short", packer.NodePool{Requirements: families(3), InstanceTypes: []*packer.InstanceType{typ("c6i"), typ("m6i")}}, packer.MinValuesStrict, "2 value(s) of " + wellknown.LabelInstanceFamily + ", fewer than its minValues 3"},
		{"minValues short by default", packer.NodePool{Requirements: families(3), InstanceTypes: []*packer.InstanceType{typ("c6i")}}, "", "minValues 3"},
		{"minValues relaxed", packer.NodePool{Requirements: families(3), InstanceTypes: []*packer.InstanceType{typ("c6i")}}, packer.MinValuesBestEffort, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := NoCompatibleInstanceTypes(tc.pool, tc.policy)
			if (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
				t.Errorf("NoCompatibleInstanceTypes = %q, want %q", got, tc.want)
			}
		})
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
	if err := e.Kube.Get(e.Ctx, client.ObjectKey{Name: e.Name}, nc); err != nil {
		t.Fatal(err)
	}
	reported := nc.Status.Conditions
	nc.Status.Conditions = nil
	if err := e.Kube.Status().Update(e.Ctx, nc); err != nil {
		t.Fatal(err)
	}
	e.nodePool()
	e.pod("app")
	e.batch()
	if claims := e.nodeClaims(); len(claims) != 0 {
		t.Fatalf("%d NodeClaims created from a NodeClass that is not ready", len(claims))
	}
	if evs := e.Events.Matching(environment.Event{Kind: "NodePool", Name: e.Name, Reason: ReasonNodeClassNotReady}); len(evs) != 0 {
		t.Fatalf("NodePool events before the node class was reconciled = %+v, want none", evs)
	}

	nc.Status.Conditions = reported
	if err := e.Kube.Status().Update(e.Ctx, nc); err != nil {
		t.Fatal(err)
	}
	e.Clock.Step(10 * time.Second)
	e.batch()
	want := fmt.Sprintf("NodeClass %s is not ready: no subnet matches the selector", e.Name)
	if evs := e.Events.Matching(environment.Event{Kind: "NodePool", Name: e.Name, Reason: ReasonNodeClassNotReady}); len(evs) != 1 || evs[0].Note != want {
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
	e.SyncState()
	if res, err := e.p.Reconcile(e.Ctx, Request()); err != nil || res.RequeueAfter != Period {
		t.Fatalf("Reconcile = %+v, %v; want a requeue after %s", res, err, Period)
	}

	e.pod("app")
	e.SyncState()
	e.p.Trigger()
	e.Clock.Step(400 * time.Millisecond)
	if res, _ := e.p.Reconcile(e.Ctx, Request()); res.RequeueAfter != 600*time.Millisecond {
		t.Fatalf("RequeueAfter = %s, want the rest of the idle window", res.RequeueAfter)
	}

	// A NodeClaim the state has not seen yet holds the batch back.
	stranger := environment.NewNodeClaim("prov-gates-stranger", "elsewhere", e.Name)
	e.Create(stranger)
	e.Clock.Step(600 * time.Millisecond)
	if res, err := e.p.Reconcile(e.Ctx, Request()); err != nil || res.RequeueAfter != SyncRetry {
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
	mgr := environment.NewManager(t)
	clk := clocktesting.NewFakeClock(environment.Start)
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

// TestUnschedulableNoteLeftOutFirst: with many NodePools, the note of a pod
// whose own NodePool was left out still names that NodePool within the
// length an event keeps; the other NodePools' verdicts follow it.
func TestUnschedulableNoteLeftOutFirst(t *testing.T) {
	u := packer.Unschedulable{}
	for i := range 20 {
		u.NodePools = append(u.NodePools, packer.NodePoolVerdict{
			NodePool: fmt.Sprintf("team-%02d", i),
			Code:     packer.CodeRequirementIncompatible,
			Message:  fmt.Sprintf("the NodePool's requirements conflict with the pod's: label %q: requires In [web], offered In [team-%02d]", wellknown.LabelNodePool, i),
		})
	}
	u.Reason = fmt.Sprintf("no existing node can take the pod and no NodePool can launch one; NodePool %q: %s", u.NodePools[0].NodePool, u.NodePools[0].Message)
	skipped := []Skip{{NodePool: &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "web"}}, Reason: ReasonNodeClassNotReady, Message: "NodeClass web is not ready"}}

	note := unschedulableNote(u, skipped)
	leftOut := strings.Index(note, "; nodepool web: left out: NodeClass web is not ready (NodeClassNotReady)")
	if leftOut < 0 || leftOut > eventlimit.MaxNoteLength/2 {
		t.Fatalf("the left-out NodePool is at %d of the note, want within the first %d bytes:\n%s", leftOut, eventlimit.MaxNoteLength/2, note)
	}
	// Every NodePool is named once, the first one by the reason.
	for i, v := range u.NodePools {
		want := 1
		if i == 0 {
			want = 0
		}
		if n := strings.Count(note, "; nodepool "+v.NodePool+": "); n != want {
			t.Errorf("%s named %d times after the reason, want %d", v.NodePool, n, want)
		}
	}
	if !strings.HasPrefix(note, "Failed to schedule pod: "+u.Reason+" (RequirementIncompatible); nodepool web: left out:") {
		t.Errorf("note starts %q", note[:200])
	}
}
