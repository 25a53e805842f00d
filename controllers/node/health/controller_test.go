package health

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/controllers/metrics"
	"github.com/stevedore-autoscaler/stevedore/controllers/nodeclaim/lifecycle"
	"github.com/stevedore-autoscaler/stevedore/test/environment"
)

func TestMain(m *testing.M) { environment.Main(m) }

// env is one test's world and the repair controller.
type env struct {
	*environment.Env
	r *Reconciler
}

// start is where the clock starts.
var start = environment.Start

func newEnv(t *testing.T, opts Options) *env {
	t.Helper()
	e := &env{Env: environment.New(t, environment.Options{Seed: 1, InstanceTypes: []string{"m6i.large"}})}
	e.r = New(e.Kube, e.Cloud, e.Clock, e.Events, e.Metrics, opts)
	return e
}

// machine creates a Node whose Ready condition has had status since the
// given time, and its NodeClaim in pool (none when pool is empty), held
// once deleted.
func (e *env) machine(name, pool string, ready corev1.ConditionStatus, since time.Time, change ...func(*karpv1.NodeClaim)) (*corev1.Node, *karpv1.NodeClaim) {
	e.T.Helper()
	providerID := "aws:///us-east-1a/i-" + name
	labels := map[string]string{wellknown.LabelCapacityType: wellknown.CapacityTypeOnDemand}
	if pool != "" {
		labels[wellknown.LabelNodePool] = pool
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.NodeSpec{ProviderID: providerID},
		Status:     corev1.NodeStatus{Conditions: readySince(ready, since)},
	}
	e.Create(node)

	nc := environment.NewNodeClaim(name, pool, "default")
	nc.Labels = maps.Clone(labels)
	nc.Finalizers = []string{environment.Hold}
	nc.Status.ProviderID, nc.Status.NodeName, nc.Status.ImageID = providerID, name, "ami-0123"
	for _, c := range change {
		c(nc)
	}
	e.Create(nc)
	return node, nc
}

// readySince is a Node's Ready condition with status since the time given.
func readySince(status corev1.ConditionStatus, since time.Time) []corev1.NodeCondition {
	return []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: status, Reason: "Test",
		LastHeartbeatTime: metav1.NewTime(since), LastTransitionTime: metav1.NewTime(since),
	}}
}

func (e *env) setReady(node *corev1.Node, status corev1.ConditionStatus, since time.Time) {
	e.T.Helper()
	node.Status.Conditions = readySince(status, since)
	if err := e.Kube.Status().Update(e.Ctx, node); err != nil {
		e.T.Fatal(err)
	}
}

func (e *env) reconcile(name string) reconcile.Result {
	e.T.Helper()
	res, err := e.r.Reconcile(e.Ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: name}})
	if err != nil {
		e.T.Fatalf("Reconcile %s: %v", name, err)
	}
	return res
}

func (e *env) wantRepaired(name string) *karpv1.NodeClaim {
	e.T.Helper()
	nc := e.NodeClaim(name)
	if nc.DeletionTimestamp.IsZero() {
		e.T.Fatalf("NodeClaim %s was not deleted", name)
	}
	c := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeDisruptionReason)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != ReasonUnhealthy || !strings.Contains(c.Message, "Ready") {
		e.T.Errorf("DisruptionReason = %+v, want True/%s naming the condition", c, ReasonUnhealthy)
	}
	if got, want := nc.Annotations[wellknown.AnnotationNodeClaimTerminationTimestamp], e.Clock.Now().UTC().Format(time.RFC3339); got != want {
		e.T.Errorf("termination timestamp = %q, want now (%s)", got, want)
	}
	return nc
}

func (e *env) wantKept(name string) {
	e.T.Helper()
	nc := e.NodeClaim(name)
	if !nc.DeletionTimestamp.IsZero() {
		e.T.Fatalf("NodeClaim %s was deleted", name)
	}
	if _, ok := nc.Annotations[wellknown.AnnotationNodeClaimTerminationTimestamp]; ok {
		e.T.Errorf("NodeClaim %s has a termination timestamp", name)
	}
}

func TestRepairAfterToleration(t *testing.T) {
	e := newEnv(t, Options{Enabled: true})
	for _, n := range []string{"repair-a", "repair-b", "repair-c", "repair-d"} {
		e.machine(n, "repair-pool", corev1.ConditionTrue, start.Add(-time.Hour))
	}
	e.machine("repair-sick", "repair-pool", corev1.ConditionFalse, start.Add(-4*time.Minute))

	// Not ready for 4 of the 30 minutes tolerated: wait the 26 left.
	if res := e.reconcile("repair-sick"); res.RequeueAfter != 26*time.Minute {
		t.Errorf("RequeueAfter = %s, want 26m", res.RequeueAfter)
	}
	e.wantKept("repair-sick")

	// Healthy nodes need nothing.
	if res := e.reconcile("repair-a"); res.RequeueAfter != 0 {
		t.Errorf("healthy node: RequeueAfter = %s", res.RequeueAfter)
	}
	e.wantKept("repair-a")

	e.Clock.Step(26 * time.Minute)
	if res := e.reconcile("repair-sick"); res.RequeueAfter != 0 {
		t.Errorf("RequeueAfter = %s after repair", res.RequeueAfter)
	}
	e.wantRepaired("repair-sick")
	for _, kind := range []string{"NodeClaim", "Node"} {
		if got := e.Events.Matching(environment.Event{Kind: kind, Name: "repair-sick", Reason: ReasonUnhealthy}); len(got) != 1 {
			t.Errorf("%s events %v, want one %s", kind, e.Events, ReasonUnhealthy)
		}
	}
	want := `
# HELP karpenter_nodeclaims_disrupted_total Number of nodeclaims disrupted in total. Labeled by the reason the nodeclaim was disrupted, the owning nodepool and its capacity type.
# TYPE karpenter_nodeclaims_disrupted_total counter
karpenter_nodeclaims_disrupted_total{capacity_type="on-demand",nodepool="repair-pool",reason="unhealthy"} 1
# HELP karpenter_nodeclaims_unhealthy_disrupted_total Number of unhealthy nodeclaims replaced by node repair. Labeled by the node condition that made them unhealthy, the owning nodepool, capacity type and image ID.
# TYPE karpenter_nodeclaims_unhealthy_disrupted_total counter
karpenter_nodeclaims_unhealthy_disrupted_total{capacity_type="on-demand",condition="ready",image_id="ami-0123",nodepool="repair-pool"} 1
`
	if err := testutil.GatherAndCompare(e.Registry, strings.NewReader(want), metrics.NameNodeClaimsDisrupted, metrics.NameNodeClaimsUnhealthyDisrupted); err != nil {
		t.Error(err)
	}

	// Once repaired, nothing more happens: no second count or event.
	e.Clock.Step(time.Minute)
	e.reconcile("repair-sick")
	if got := e.Events.Matching(environment.Event{Kind: "NodeClaim", Name: "repair-sick", Reason: ReasonUnhealthy}); len(got) != 1 {
		t.Errorf("events after a second reconcile: %v", e.Events)
	}
	if got := e.Metric(metrics.NameNodeClaimsDisrupted, nil); got != 1 {
		t.Errorf("disrupted_total = %v after a second reconcile", got)
	}
}

// TestRepairPolicyTolerations checks that each of the AWS provider's repair
// policies is held to its own toleration: the node monitoring agent's
// conditions make a Ready node unhealthy, AcceleratedHardwareReady after 10
// minutes and the others after 30, and the condition that runs out first
// decides when the node is looked at again and why it is replaced.
func TestRepairPolicyTolerations(t *testing.T) {
	type cond struct {
		typ    corev1.NodeConditionType
		status corev1.ConditionStatus
	}
	tests := []struct {
		name  string
		conds []cond
		// wait is the requeue 4 minutes after the conditions took their
		// status; 0 when nothing matches a policy.
		wait time.Duration
		// repairedBy is the condition named when the node is replaced once
		// wait has passed.
		repairedBy string
	}{
		{"accelerated hardware", []cond{{"AcceleratedHardwareReady", corev1.ConditionFalse}}, 6 * time.Minute, "AcceleratedHardwareReady"},
		{"storage", []cond{{"StorageReady", corev1.ConditionFalse}}, 26 * time.Minute, "StorageReady"},
		{"networking", []cond{{"NetworkingReady", corev1.ConditionFalse}}, 26 * time.Minute, "NetworkingReady"},
		{"kernel", []cond{{"KernelReady", corev1.ConditionFalse}}, 26 * time.Minute, "KernelReady"},
		{"container runtime", []cond{{"ContainerRuntimeReady", corev1.ConditionFalse}}, 26 * time.Minute, "ContainerRuntimeReady"},
		{"the earliest toleration wins", []cond{{"KernelReady", corev1.ConditionFalse}, {"AcceleratedHardwareReady", corev1.ConditionFalse}}, 6 * time.Minute, "AcceleratedHardwareReady"},
		{"unknown agent status is no failure", []cond{{"StorageReady", corev1.ConditionUnknown}}, 0, ""},
		{"healthy agent conditions", []cond{{"StorageReady", corev1.ConditionTrue}, {"AcceleratedHardwareReady", corev1.ConditionTrue}}, 0, ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, Options{Enabled: true})
			pool := fmt.Sprintf("tol-pool-%d", i)
			name := fmt.Sprintf("tol-sick-%d", i)
			for j := range 4 {
				e.machine(fmt.Sprintf("tol-%d-%d", i, j), pool, corev1.ConditionTrue, start.Add(-time.Hour))
			}
			node, _ := e.machine(name, pool, corev1.ConditionTrue, start.Add(-time.Hour))
			since := metav1.NewTime(start.Add(-4 * time.Minute))
			for _, c := range tt.conds {
				node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{
					Type: c.typ, Status: c.status, Reason: "Test", LastHeartbeatTime: since, LastTransitionTime: since,
				})
			}
			if err := e.Kube.Status().Update(e.Ctx, node); err != nil {
				t.Fatal(err)
			}
			if res := e.reconcile(name); res.RequeueAfter != tt.wait {
				t.Fatalf("RequeueAfter = %s, want %s", res.RequeueAfter, tt.wait)
			}
			e.wantKept(name)
			if tt.wait == 0 {
				e.Clock.Step(time.Hour)
				e.reconcile(name)
				e.wantKept(name)
				return
			}
			e.Clock.Step(tt.wait - time.Second)
			e.reconcile(name)
			e.wantKept(name)
			e.Clock.Step(time.Second)
			e.reconcile(name)
			nc := e.wantRepaired(name)
			c := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeDisruptionReason)
			if c == nil || !strings.Contains(c.Message, "condition "+tt.repairedBy+" ") {
				t.Errorf("DisruptionReason = %+v, want it to name %s", c, tt.repairedBy)
			}
		})
	}
}

// TestLeavesOtherProvidersNodes: of two nodes unhealthy for an hour,
// stevedore's is repaired and the one whose NodeClaim is another provider's
// is left to that provider.
func TestLeavesOtherProvidersNodes(t *testing.T) {
	e := newEnv(t, Options{Enabled: true, MaxUnhealthyPercent: 100})
	e.machine("repair-ours", "repair-pool", corev1.ConditionFalse, start.Add(-time.Hour))
	e.machine("repair-kwok", "repair-kwok-pool", corev1.ConditionFalse, start.Add(-time.Hour), func(nc *karpv1.NodeClaim) {
		nc.Spec.NodeClassRef = environment.KWOKNodeClassRef()
	})
	for _, name := range []string{"repair-ours", "repair-kwok"} {
		if res := e.reconcile(name); res.RequeueAfter != 0 {
			t.Errorf("%s: RequeueAfter = %s, want none", name, res.RequeueAfter)
		}
	}
	e.wantRepaired("repair-ours")
	e.wantKept("repair-kwok")
	if got := e.Events.About("repair-kwok", ""); len(got) != 0 {
		t.Errorf("events about another provider's node: %v", got)
	}
	if c := meta.FindStatusCondition(e.NodeClaim("repair-kwok").Status.Conditions, karpv1.ConditionTypeDisruptionReason); c != nil {
		t.Errorf("another provider's NodeClaim got DisruptionReason %+v", c)
	}
}

func TestRepairBlockedByCap(t *testing.T) {
	e := newEnv(t, Options{Enabled: true})
	e.machine("cap-a", "cap-pool", corev1.ConditionTrue, start.Add(-time.Hour))
	e.machine("cap-b", "cap-pool", corev1.ConditionTrue, start.Add(-time.Hour))
	e.machine("cap-sick-1", "cap-pool", corev1.ConditionUnknown, start.Add(-time.Hour))
	// Still within its toleration, but failing: it counts against the cap.
	e.machine("cap-sick-2", "cap-pool", corev1.ConditionFalse, start.Add(-time.Minute))
	// Another pool's failures do not count.
	e.machine("cap-other", "cap-other-pool", corev1.ConditionFalse, start.Add(-time.Hour))

	// 2 of 4 unhealthy; 20% of 4 rounds up to 1.
	if res := e.reconcile("cap-sick-1"); res.RequeueAfter != BlockedRequeue {
		t.Errorf("RequeueAfter = %s, want %s", res.RequeueAfter, BlockedRequeue)
	}
	e.wantKept("cap-sick-1")
	blocked := e.Events.Matching(environment.Event{Kind: "Node", Name: "cap-sick-1", Reason: ReasonNodeRepairBlocked})
	if len(blocked) != 1 || !strings.Contains(blocked[0].Note, "2 of 4 nodes are unhealthy") || !strings.Contains(blocked[0].Note, "NodePool cap-pool") {
		t.Errorf("blocked events = %v", e.Events)
	}

	// The second one recovers: the first is repaired.
	node := e.Node("cap-sick-2")
	e.setReady(node, corev1.ConditionTrue, start)
	e.reconcile("cap-sick-1")
	e.wantRepaired("cap-sick-1")
}

func TestRepairCapConfigurable(t *testing.T) {
	e := newEnv(t, Options{Enabled: true, MaxUnhealthyPercent: 50})
	e.machine("half-a", "half-pool", corev1.ConditionTrue, start.Add(-time.Hour))
	e.machine("half-b", "half-pool", corev1.ConditionTrue, start.Add(-time.Hour))
	e.machine("half-sick-1", "half-pool", corev1.ConditionFalse, start.Add(-time.Hour))
	e.machine("half-sick-2", "half-pool", corev1.ConditionFalse, start.Add(-time.Hour))
	e.reconcile("half-sick-1")
	e.wantRepaired("half-sick-1")
}

func TestRepairWithoutNodePoolCountsCluster(t *testing.T) {
	e := newEnv(t, Options{Enabled: true})
	e.machine("solo-a", "", corev1.ConditionTrue, start.Add(-time.Hour))
	e.machine("solo-b", "pooled", corev1.ConditionTrue, start.Add(-time.Hour))
	e.machine("solo-sick", "", corev1.ConditionFalse, start.Add(-time.Hour))
	e.machine("solo-sick-2", "pooled", corev1.ConditionFalse, start.Add(-time.Hour))

	// 2 of the cluster's 4 nodes are unhealthy: more than 20%.
	e.reconcile("solo-sick")
	e.wantKept("solo-sick")
	if got := e.Events.Matching(environment.Event{Kind: "Node", Name: "solo-sick", Reason: ReasonNodeRepairBlocked}); len(got) != 1 || !strings.Contains(got[0].Note, "in the cluster") {
		t.Errorf("blocked events = %v", e.Events)
	}
}

func TestDeletingNodeClaimGetsEarlierDeadline(t *testing.T) {
	e := newEnv(t, Options{Enabled: true})
	for _, n := range []string{"late-a", "late-b", "late-c", "late-d"} {
		e.machine(n, "late-pool", corev1.ConditionTrue, start.Add(-time.Hour))
	}
	later := start.Add(time.Hour).Format(time.RFC3339)
	earlier := start.Add(-time.Hour).Format(time.RFC3339)
	for name, deadline := range map[string]string{"late-later": later, "late-earlier": earlier} {
		_, nc := e.machine(name, "late-pool", corev1.ConditionFalse, start.Add(-time.Hour), func(nc *karpv1.NodeClaim) {
			nc.Annotations = map[string]string{wellknown.AnnotationNodeClaimTerminationTimestamp: deadline}
		})
		// Being deleted already, say for expiry, with its own reason.
		meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{
			Type: karpv1.ConditionTypeDisruptionReason, Status: metav1.ConditionTrue, Reason: "Expired", LastTransitionTime: metav1.NewTime(start),
		})
		if err := e.Kube.Status().Update(e.Ctx, nc); err != nil {
			t.Fatal(err)
		}
		if err := e.Kube.Delete(e.Ctx, nc); err != nil {
			t.Fatal(err)
		}
	}
	// 6 nodes, 2 unhealthy: 20% of 6 rounds up to 2.
	e.reconcile("late-later")
	nc := e.NodeClaim("late-later")
	if got := nc.Annotations[wellknown.AnnotationNodeClaimTerminationTimestamp]; got != start.Format(time.RFC3339) {
		t.Errorf("deadline = %s, want it brought forward to now (%s)", got, start.Format(time.RFC3339))
	}
	if c := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeDisruptionReason); c.Reason != "Expired" {
		t.Errorf("DisruptionReason = %s, want the original reason kept", c.Reason)
	}
	e.reconcile("late-earlier")
	if got := e.NodeClaim("late-earlier").Annotations[wellknown.AnnotationNodeClaimTerminationTimestamp]; got != earlier {
		t.Errorf("deadline = %s, want the earlier %s kept", got, earlier)
	}
	// Not deleted by repair: not counted as repaired.
	if got := e.Metric(metrics.NameNodeClaimsDisrupted, nil); got != 0 {
		t.Errorf("disrupted_total = %v", got)
	}
}

// TestLifecycleKeepsRepairDeadline shows the NodeClaim lifecycle controller
// finalizing a repaired NodeClaim: it keeps the deadline repair set rather
// than writing deletion time plus terminationGracePeriod, and passes it on to
// the Node.
func TestLifecycleKeepsRepairDeadline(t *testing.T) {
	e := newEnv(t, Options{Enabled: true})
	node, _ := e.machine("tgp-sick", "tgp-pool", corev1.ConditionFalse, start.Add(-time.Hour), func(nc *karpv1.NodeClaim) {
		nc.Spec.TerminationGracePeriod = &karpv1.Duration{Duration: time.Hour}
		nc.Finalizers = append(nc.Finalizers, wellknown.FinalizerTermination)
	})
	// The Node's own finalizer keeps it while it drains, as in a cluster.
	base := node.DeepCopy()
	node.Finalizers = []string{wellknown.FinalizerTermination}
	if err := e.Kube.Patch(e.Ctx, node, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	e.reconcile("tgp-sick")
	stamp := e.wantRepaired("tgp-sick").Annotations[wellknown.AnnotationNodeClaimTerminationTimestamp]

	if _, err := lifecycle.New(e.Kube, e.Cloud, e.Clock, nil, nil).Reconcile(e.Ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: "tgp-sick"}}); err != nil {
		t.Fatal(err)
	}
	nc := e.NodeClaim("tgp-sick")
	if got := nc.Annotations[wellknown.AnnotationNodeClaimTerminationTimestamp]; got != stamp {
		t.Errorf("after finalize the deadline is %s, want repair's %s", got, stamp)
	}
	node = e.Node("tgp-sick")
	if node.DeletionTimestamp.IsZero() || node.Annotations[wellknown.AnnotationNodeClaimTerminationTimestamp] != stamp {
		t.Errorf("node: deleting %v, deadline %q; want deleting with deadline %s",
			!node.DeletionTimestamp.IsZero(), node.Annotations[wellknown.AnnotationNodeClaimTerminationTimestamp], stamp)
	}
}

func TestNothingToRepair(t *testing.T) {
	e := newEnv(t, Options{Enabled: true})
	// A failing Node that stevedore does not manage.
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "unmanaged"}, Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/i-unmanaged"}}
	if err := e.Kube.Create(e.Ctx, node); err != nil {
		t.Fatal(err)
	}
	e.setReady(node, corev1.ConditionFalse, start.Add(-time.Hour))
	if res := e.reconcile("unmanaged"); res.RequeueAfter != 0 || len(e.Events.All()) != 0 {
		t.Errorf("unmanaged node: %+v, events %v", res, e.Events)
	}
	if res := e.reconcile("no-such-node"); res.RequeueAfter != 0 {
		t.Errorf("missing node: %+v", res)
	}
}

func TestDisabled(t *testing.T) {
	e := newEnv(t, Options{})
	e.machine("off-sick", "off-pool", corev1.ConditionFalse, start.Add(-time.Hour))
	e.reconcile("off-sick")
	e.wantKept("off-sick")
	if n := (Options{}).maxUnhealthyPercent(); n != 20 {
		t.Errorf("default cap = %d, want 20", n)
	}
	if n := (Options{MaxUnhealthyPercent: 150}).maxUnhealthyPercent(); n != 100 {
		t.Errorf("cap of 150 = %d, want 100", n)
	}
}

func TestConditionsChangedPredicate(t *testing.T) {
	p := conditionsChanged()
	node := func(status corev1.ConditionStatus, transition, heartbeat time.Time) *corev1.Node {
		return &corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: status, LastTransitionTime: metav1.NewTime(transition), LastHeartbeatTime: metav1.NewTime(heartbeat),
		}}}}
	}
	ready := node(corev1.ConditionTrue, start, start)
	for _, tc := range []struct {
		name string
		cur  *corev1.Node
		want bool
	}{
		{"heartbeat only", node(corev1.ConditionTrue, start, start.Add(time.Minute)), false},
		{"status change", node(corev1.ConditionFalse, start.Add(time.Minute), start.Add(time.Minute)), true},
		{"condition added", &corev1.Node{Status: corev1.NodeStatus{Conditions: append(slices.Clone(ready.Status.Conditions), corev1.NodeCondition{Type: "Extra"})}}, true},
	} {
		if got := p.Update(event.UpdateEvent{ObjectOld: ready, ObjectNew: tc.cur}); got != tc.want {
			t.Errorf("%s: Update = %v, want %v", tc.name, got, tc.want)
		}
	}
	if !p.Create(event.CreateEvent{Object: ready}) || p.Delete(event.DeleteEvent{Object: ready}) {
		t.Error("creations must pass and deletions must not")
	}
}

func TestSnakeCase(t *testing.T) {
	for in, want := range map[string]string{
		"Ready": "ready", "AcceleratedHardwareReady": "accelerated_hardware_ready", "StorageReady": "storage_ready",
		"ContainerRuntimeReady": "container_runtime_ready", "": "",
	} {
		if got := snakeCase(in); got != want {
			t.Errorf("snakeCase(%q) = %q, want %q", in, got, want)
		}
	}
}
