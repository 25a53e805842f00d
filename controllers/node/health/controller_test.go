package health

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/settings"
	"github.com/stevedore-autoscaler/stevedore/controllers/metrics"
	"github.com/stevedore-autoscaler/stevedore/controllers/nodeclaim/lifecycle"
	"github.com/stevedore-autoscaler/stevedore/test/apiserver"
)

// hold is a finalizer the tests put on NodeClaims so that a deleted
// NodeClaim stays readable, as the lifecycle controller's finalizer keeps it
// while its node terminates.
const hold = "test.stevedore.dev/hold"

var (
	kube    client.Client
	kubeCfg *rest.Config
	scheme  = apiserver.Scheme()
)

func TestMain(m *testing.M) {
	os.Exit(apiserver.RunTests(m, func(cfg *rest.Config, c client.Client) { kubeCfg, kube = cfg, c }))
}

type recorder struct {
	mu     sync.Mutex
	events []string // "<kind>/<name> <reason>: <note>"
}

func (r *recorder) Eventf(obj runtime.Object, _ runtime.Object, _, reason, _, note string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	o := obj.(client.Object)
	kind := "Node"
	if _, ok := obj.(*karpv1.NodeClaim); ok {
		kind = "NodeClaim"
	}
	r.events = append(r.events, kind+"/"+o.GetName()+" "+reason+": "+fmt.Sprintf(note, args...))
}

func (r *recorder) find(prefix string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		if strings.HasPrefix(e, prefix) {
			out = append(out, e)
		}
	}
	return out
}

type env struct {
	t   *testing.T
	ctx context.Context
	clk *clocktesting.FakeClock
	p   *aws.Provider
	rec *recorder
	reg *prometheus.Registry
	m   *metrics.Metrics
	r   *Reconciler
}

var start = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newEnv(t *testing.T, opts Options) *env {
	t.Helper()
	clk := clocktesting.NewFakeClock(start)
	f := fake.New(fake.Options{Seed: 1, Clock: clk, InstanceTypes: []string{"m6i.large"}})
	s := settings.Default()
	s.ClusterName = "test"
	p, err := aws.New(aws.Options{
		Clients:   f.Clients(),
		Settings:  s,
		Clock:     clk,
		NodeClass: func(context.Context, string) (*awsv1.EC2NodeClass, error) { return nil, nil },
		Cluster:   aws.ClusterInfo{Endpoint: "https://example.eks.amazonaws.com", CABundle: "Q0E=", ServiceCIDR: "10.100.0.0/16"},
	})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, ctx: context.Background(), clk: clk, p: p, rec: &recorder{}, reg: reg, m: m}
	e.r = New(kube, p, clk, e.rec, m, opts)
	t.Cleanup(e.cleanup)
	return e
}

func (e *env) cleanup() {
	ctx := context.Background()
	var ncs karpv1.NodeClaimList
	if err := kube.List(ctx, &ncs); err == nil {
		for i := range ncs.Items {
			n := &ncs.Items[i]
			base := n.DeepCopy()
			n.Finalizers = nil
			_ = kube.Patch(ctx, n, client.MergeFrom(base))
			_ = kube.Delete(ctx, n)
		}
	}
	var nodes corev1.NodeList
	if err := kube.List(ctx, &nodes); err == nil {
		for i := range nodes.Items {
			n := &nodes.Items[i]
			base := n.DeepCopy()
			n.Finalizers = nil
			_ = kube.Patch(ctx, n, client.MergeFrom(base))
			_ = kube.Delete(ctx, n)
		}
	}
}

// machine creates a Node whose Ready condition has had status since the
// given time, and its NodeClaim in pool (none when pool is empty).
func (e *env) machine(name, pool string, ready corev1.ConditionStatus, since time.Time, mutate ...func(*karpv1.NodeClaim)) (*corev1.Node, *karpv1.NodeClaim) {
	e.t.Helper()
	providerID := "aws:///us-east-1a/i-" + name
	labels := map[string]string{wellknown.LabelCapacityType: wellknown.CapacityTypeOnDemand}
	if pool != "" {
		labels[wellknown.LabelNodePool] = pool
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.NodeSpec{ProviderID: providerID},
	}
	if err := kube.Create(e.ctx, node); err != nil {
		e.t.Fatal(err)
	}
	e.setReady(node, ready, since)

	nc := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Finalizers: []string{hold}},
		Spec: karpv1.NodeClaimSpec{
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{Key: wellknown.LabelArch, Operator: corev1.NodeSelectorOpExists}},
			NodeClassRef: &karpv1.NodeClassReference{Group: wellknown.GroupAWS, Kind: "EC2NodeClass", Name: "default"},
		},
	}
	for _, m := range mutate {
		m(nc)
	}
	if err := kube.Create(e.ctx, nc); err != nil {
		e.t.Fatal(err)
	}
	nc.Status.ProviderID, nc.Status.NodeName, nc.Status.ImageID = providerID, name, "ami-0123"
	if err := kube.Status().Update(e.ctx, nc); err != nil {
		e.t.Fatal(err)
	}
	return node, nc
}

func (e *env) setReady(node *corev1.Node, status corev1.ConditionStatus, since time.Time) {
	e.t.Helper()
	node.Status.Conditions = []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: status, Reason: "Test",
		LastHeartbeatTime: metav1.NewTime(since), LastTransitionTime: metav1.NewTime(since),
	}}
	if err := kube.Status().Update(e.ctx, node); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) reconcile(name string) reconcile.Result {
	e.t.Helper()
	res, err := e.r.Reconcile(e.ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: name}})
	if err != nil {
		e.t.Fatalf("Reconcile %s: %v", name, err)
	}
	return res
}

func (e *env) nodeClaim(name string) *karpv1.NodeClaim {
	e.t.Helper()
	nc := &karpv1.NodeClaim{}
	if err := kube.Get(e.ctx, client.ObjectKey{Name: name}, nc); err != nil {
		e.t.Fatal(err)
	}
	return nc
}

func (e *env) wantRepaired(name string) *karpv1.NodeClaim {
	e.t.Helper()
	nc := e.nodeClaim(name)
	if nc.DeletionTimestamp.IsZero() {
		e.t.Fatalf("NodeClaim %s was not deleted", name)
	}
	c := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeDisruptionReason)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != ReasonUnhealthy || !strings.Contains(c.Message, "Ready") {
		e.t.Errorf("DisruptionReason = %+v, want True/%s naming the condition", c, ReasonUnhealthy)
	}
	if got, want := nc.Annotations[wellknown.AnnotationNodeClaimTerminationTimestamp], e.clk.Now().UTC().Format(time.RFC3339); got != want {
		e.t.Errorf("termination timestamp = %q, want now (%s)", got, want)
	}
	return nc
}

func (e *env) wantKept(name string) {
	e.t.Helper()
	nc := e.nodeClaim(name)
	if !nc.DeletionTimestamp.IsZero() {
		e.t.Fatalf("NodeClaim %s was deleted", name)
	}
	if _, ok := nc.Annotations[wellknown.AnnotationNodeClaimTerminationTimestamp]; ok {
		e.t.Errorf("NodeClaim %s has a termination timestamp", name)
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

	e.clk.Step(26 * time.Minute)
	if res := e.reconcile("repair-sick"); res.RequeueAfter != 0 {
		t.Errorf("RequeueAfter = %s after repair", res.RequeueAfter)
	}
	e.wantRepaired("repair-sick")
	for _, prefix := range []string{"NodeClaim/repair-sick " + ReasonUnhealthy, "Node/repair-sick " + ReasonUnhealthy} {
		if got := e.rec.find(prefix); len(got) != 1 {
			t.Errorf("events %q = %v, want one", prefix, e.rec.events)
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
	if err := testutil.GatherAndCompare(e.reg, strings.NewReader(want), metrics.NameNodeClaimsDisrupted, metrics.NameNodeClaimsUnhealthyDisrupted); err != nil {
		t.Error(err)
	}

	// Once repaired, nothing more happens: no second count or event.
	e.clk.Step(time.Minute)
	e.reconcile("repair-sick")
	if got := e.rec.find("NodeClaim/repair-sick " + ReasonUnhealthy); len(got) != 1 {
		t.Errorf("events after a second reconcile: %v", e.rec.events)
	}
	if got := counterSum(t, e.reg, metrics.NameNodeClaimsDisrupted); got != 1 {
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
			if err := kube.Status().Update(e.ctx, node); err != nil {
				t.Fatal(err)
			}
			if res := e.reconcile(name); res.RequeueAfter != tt.wait {
				t.Fatalf("RequeueAfter = %s, want %s", res.RequeueAfter, tt.wait)
			}
			e.wantKept(name)
			if tt.wait == 0 {
				e.clk.Step(time.Hour)
				e.reconcile(name)
				e.wantKept(name)
				return
			}
			e.clk.Step(tt.wait - time.Second)
			e.reconcile(name)
			e.wantKept(name)
			e.clk.Step(time.Second)
			e.reconcile(name)
			nc := e.wantRepaired(name)
			c := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeDisruptionReason)
			if c == nil || !strings.Contains(c.Message, "condition "+tt.repairedBy+" ") {
				t.Errorf("DisruptionReason = %+v, want it to name %s", c, tt.repairedBy)
			}
		})
	}
}

// counterSum sums the series of a counter in the registry.
func counterSum(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, f := range fams {
		if f.GetName() == name {
			for _, m := range f.GetMetric() {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
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
	blocked := e.rec.find("Node/cap-sick-1 " + ReasonNodeRepairBlocked)
	if len(blocked) != 1 || !strings.Contains(blocked[0], "2 of 4 nodes are unhealthy") || !strings.Contains(blocked[0], "NodePool cap-pool") {
		t.Errorf("blocked events = %v", e.rec.events)
	}

	// The second one recovers: the first is repaired.
	node := &corev1.Node{}
	if err := kube.Get(e.ctx, client.ObjectKey{Name: "cap-sick-2"}, node); err != nil {
		t.Fatal(err)
	}
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
	if got := e.rec.find("Node/solo-sick " + ReasonNodeRepairBlocked); len(got) != 1 || !strings.Contains(got[0], "in the cluster") {
		t.Errorf("blocked events = %v", e.rec.events)
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
		if err := kube.Status().Update(e.ctx, nc); err != nil {
			t.Fatal(err)
		}
		if err := kube.Delete(e.ctx, nc); err != nil {
			t.Fatal(err)
		}
	}
	// 6 nodes, 2 unhealthy: 20% of 6 rounds up to 2.
	e.reconcile("late-later")
	nc := e.nodeClaim("late-later")
	if got := nc.Annotations[wellknown.AnnotationNodeClaimTerminationTimestamp]; got != start.Format(time.RFC3339) {
		t.Errorf("deadline = %s, want it brought forward to now (%s)", got, start.Format(time.RFC3339))
	}
	if c := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeDisruptionReason); c.Reason != "Expired" {
		t.Errorf("DisruptionReason = %s, want the original reason kept", c.Reason)
	}
	e.reconcile("late-earlier")
	if got := e.nodeClaim("late-earlier").Annotations[wellknown.AnnotationNodeClaimTerminationTimestamp]; got != earlier {
		t.Errorf("deadline = %s, want the earlier %s kept", got, earlier)
	}
	// Not deleted by repair: not counted as repaired.
	if got := counterSum(t, e.reg, metrics.NameNodeClaimsDisrupted); got != 0 {
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
	if err := kube.Patch(e.ctx, node, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	e.reconcile("tgp-sick")
	stamp := e.wantRepaired("tgp-sick").Annotations[wellknown.AnnotationNodeClaimTerminationTimestamp]

	if _, err := lifecycle.New(kube, e.p, e.clk, nil, nil).Reconcile(e.ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: "tgp-sick"}}); err != nil {
		t.Fatal(err)
	}
	nc := e.nodeClaim("tgp-sick")
	if got := nc.Annotations[wellknown.AnnotationNodeClaimTerminationTimestamp]; got != stamp {
		t.Errorf("after finalize the deadline is %s, want repair's %s", got, stamp)
	}
	node = &corev1.Node{}
	if err := kube.Get(e.ctx, client.ObjectKey{Name: "tgp-sick"}, node); err != nil {
		t.Fatal(err)
	}
	if node.DeletionTimestamp.IsZero() || node.Annotations[wellknown.AnnotationNodeClaimTerminationTimestamp] != stamp {
		t.Errorf("node: deleting %v, deadline %q; want deleting with deadline %s",
			!node.DeletionTimestamp.IsZero(), node.Annotations[wellknown.AnnotationNodeClaimTerminationTimestamp], stamp)
	}
}

func TestNothingToRepair(t *testing.T) {
	e := newEnv(t, Options{Enabled: true})
	// A failing Node that stevedore does not manage.
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "unmanaged"}, Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/i-unmanaged"}}
	if err := kube.Create(e.ctx, node); err != nil {
		t.Fatal(err)
	}
	e.setReady(node, corev1.ConditionFalse, start.Add(-time.Hour))
	if res := e.reconcile("unmanaged"); res.RequeueAfter != 0 || len(e.rec.events) != 0 {
		t.Errorf("unmanaged node: %+v, events %v", res, e.rec.events)
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
