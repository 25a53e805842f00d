package environment

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/controllers/metrics"
)

func TestMain(m *testing.M) { Main(m) }

// TestCreateAndCleanup: Create writes what it is given, status included,
// in the Env's namespace, and what a test created or left is gone once it
// ends.
func TestCreateAndCleanup(t *testing.T) {
	var name string
	var left []*karpv1.NodeClaim
	t.Run("world", func(t *testing.T) {
		e := New(t, Options{Name: "harness", InstanceTypes: []string{"m6i.large"}, Seed: 1})
		name = e.Name
		nc := e.CreateNodeClass()
		e.Refresh(nc)
		if !meta.IsStatusConditionTrue(nc.Status.Conditions, awsv1.ConditionTypeReady) || len(nc.Status.Subnets) != len(e.World.SubnetIDs) || nc.Status.InstanceProfile != InstanceProfile {
			t.Errorf("EC2NodeClass status = %+v, want it resolved and Ready", nc.Status)
		}
		np := e.CreateNodePool()
		if np.Name != e.Name || np.Spec.Template.Spec.NodeClassRef.Name != nc.Name {
			t.Errorf("NodePool %s of %s, want both named %s", np.Name, np.Spec.Template.Spec.NodeClassRef.Name, e.Name)
		}
		p := e.CreateRunning(NewPod("app", "1", "1Gi"), "somewhere")
		e.Refresh(p)
		if p.Namespace != e.Name || p.Status.Phase != corev1.PodRunning || p.Spec.NodeName != "somewhere" {
			t.Errorf("pod %s/%s is %s on %q, want Running in the Env's namespace on somewhere", p.Namespace, p.Name, p.Status.Phase, p.Spec.NodeName)
		}
		// A NodeClaim the test did not create, held by a finalizer.
		held := NewNodeClaim(e.Name+"-held", e.Name, e.Name)
		held.Finalizers = []string{"test.stevedore.dev/hold"}
		if err := e.Kube.Create(e.Ctx, held); err != nil {
			t.Fatal(err)
		}
		left = append(left, held)
	})
	e := New(t, Options{})
	if e.Exists(&awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: name}}) || e.Exists(&karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}) {
		t.Errorf("the EC2NodeClass or NodePool %s outlived its test", name)
	}
	if e.Exists(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "app"}}) {
		t.Error("the pod outlived its test")
	}
	for _, nc := range left {
		if e.Exists(nc) {
			t.Errorf("NodeClaim %s outlived its test", nc.Name)
		}
	}
	if ns := (&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); e.Exists(ns) && ns.DeletionTimestamp.IsZero() {
		t.Errorf("namespace %s is not being deleted", name)
	}
}

// TestSyncState: the state learns what the server holds and forgets what
// it no longer holds.
func TestSyncState(t *testing.T) {
	e := New(t, Options{Name: "sync"})
	p := e.CreateUnschedulable(NewPod("pending", "1", ""))
	e.SyncState()
	if got := e.State.Snapshot(e.Clock.Now()).PendingPods; len(got) != 1 || got[0].Name != p.Name {
		t.Fatalf("pending pods %v, want %s", got, p.Name)
	}
	if err := e.Kube.Delete(e.Ctx, p); err != nil {
		t.Fatal(err)
	}
	e.SyncState()
	if got := e.State.Snapshot(e.Clock.Now()).PendingPods; len(got) != 0 {
		t.Errorf("pending pods %v after the pod was deleted", got)
	}
}

// TestNodeClassInMemory: the provider reads the in-memory class, changes
// included, and calls the hook after each read.
func TestNodeClassInMemory(t *testing.T) {
	e := New(t, Options{InstanceTypes: []string{"m6i.large"}, NodeClassInMemory: true})
	reads := 0
	e.AfterNodeClassRead(func() { reads++ })
	e.UpdateNodeClass(func(nc *awsv1.EC2NodeClass) { nc.Spec.Tags = map[string]string{"team": "a"} })
	got, err := e.nodeClassFromMemory(e.Ctx, "default")
	if err != nil || got == nil || got.Spec.Tags["team"] != "a" || reads != 1 {
		t.Fatalf("read %+v, %v after %d reads; want the changed class, read once", got, err, reads)
	}
	got.Spec.Tags["team"] = "b"
	if e.NodeClass().Spec.Tags["team"] != "a" {
		t.Error("a reader changed the in-memory class")
	}
	if other, _ := e.nodeClassFromMemory(e.Ctx, "other"); other != nil {
		t.Errorf("read %s for another name", other.Name)
	}
}

func TestRecorder(t *testing.T) {
	r := &Recorder{}
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	r.Eventf(nc, nil, corev1.EventTypeWarning, "Blocked", "Act", "because %s", "reasons")
	r.Eventf(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, nil, corev1.EventTypeNormal, "Blocked", "Act", "too")
	r.Eventf(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}, nil, corev1.EventTypeNormal, "Nominated", "Act", "x")
	if got := r.Matching(Event{Kind: "NodeClaim", Name: "a", Reason: "Blocked"}); len(got) != 1 || got[0].Note != "because reasons" || got[0].Type != corev1.EventTypeWarning {
		t.Errorf("NodeClaim events %v", got)
	}
	if got := r.Matching(Event{Reason: "Blocked"}); len(got) != 2 {
		t.Errorf("Blocked events %v, want 2", got)
	}
	if got := r.Matching(Event{Namespace: "ns", Name: "p"}); len(got) != 1 || got[0].Kind != "Pod" {
		t.Errorf("pod events %v", got)
	}
	if s := r.String(); !strings.Contains(s, "Pod ns/p Normal Nominated: x\n") {
		t.Errorf("String() = %q", s)
	}
}

func TestLogs(t *testing.T) {
	e := New(t, Options{})
	logger := log.FromContext(e.Ctx)
	logger.Info("created nodeclaim", "nodeclaim", "a")
	logger.Info("created nodeclaims", "count", 2)
	logger.Info(`a "quoted" message`)
	if got := e.Logs.Lines("created nodeclaim"); len(got) != 1 || !strings.Contains(got[0], `"nodeclaim"="a"`) {
		t.Errorf("Lines = %q, want the one line", got)
	}
	if got := e.Logs.LinesStartingWith("created nodeclaim"); len(got) != 2 {
		t.Errorf("LinesStartingWith = %q, want both", got)
	}
	if got := e.Logs.Lines(`a "quoted" message`); len(got) != 1 {
		t.Errorf("quoted message not found in %s", e.Logs)
	}
}

func TestMetric(t *testing.T) {
	e := New(t, Options{})
	e.Metrics.NodeClaimCreated("drifted", "a", false)
	e.Metrics.NodeClaimCreated("drifted", "a", false)
	e.Metrics.NodeClaimCreated("drifted", "b", false)
	e.Metrics.NodeClaimCreated("underutilized", "a", true)
	for _, tc := range []struct {
		labels map[string]string
		want   float64
	}{
		{nil, 4},
		{map[string]string{metrics.LabelNodePool: "a"}, 3},
		{map[string]string{metrics.LabelNodePool: "a", metrics.LabelReason: "drifted"}, 2},
		{map[string]string{metrics.LabelNodePool: "c"}, 0},
		{map[string]string{"no-such-label": ""}, 0},
	} {
		if got := e.Metric(metrics.NameNodeClaimsCreated, tc.labels); got != tc.want {
			t.Errorf("Metric(%v) = %v, want %v", tc.labels, got, tc.want)
		}
	}
}

// TestPods: a deleted pod bound to a node terminates until the kubelet
// (FinishTerminating) removes it.
func TestPods(t *testing.T) {
	e := New(t, Options{Name: "pods"})
	e.CreateRunning(NewPod("b", "", ""), "node-1")
	a := e.CreateRunning(NewPod("a", "", ""), "node-1")
	if err := e.Kube.Delete(e.Ctx, a); err != nil {
		t.Fatal(err)
	}
	if running, terminating := e.Pods(); !slices.Equal(running, []string{"b"}) || !slices.Equal(terminating, []string{"a"}) {
		t.Fatalf("running %v, terminating %v; want b, a", running, terminating)
	}
	e.FinishTerminating()
	if running, terminating := e.Pods(); !slices.Equal(running, []string{"b"}) || len(terminating) != 0 {
		t.Errorf("running %v, terminating %v once the kubelet finished; want b and none", running, terminating)
	}
}

// counting is a reconciler that annotates a NodeClaim with a count until
// it reaches three, failing once first, then deletes it if asked.
type counting struct {
	e      *Env
	failed bool
	delete bool
	calls  int
}

func (c *counting) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	c.calls++
	if !c.failed {
		c.failed = true
		return reconcile.Result{}, errors.New("not yet")
	}
	nc := &karpv1.NodeClaim{}
	if err := c.e.Kube.Get(ctx, req.NamespacedName, nc); err != nil {
		return reconcile.Result{}, err
	}
	n, _ := strconv.Atoi(nc.Annotations["count"])
	if n == 3 {
		if c.delete {
			return reconcile.Result{}, c.e.Kube.Delete(ctx, nc)
		}
		return reconcile.Result{RequeueAfter: time.Minute}, nil
	}
	nc.Annotations = map[string]string{"count": strconv.Itoa(n + 1)}
	return reconcile.Result{}, c.e.Kube.Update(ctx, nc)
}

func TestSettle(t *testing.T) {
	e := New(t, Options{Name: "settle"})
	e.Create(NewNodeClaim(e.Name+"-a", e.Name, e.Name), NewNodeClaim(e.Name+"-b", e.Name, e.Name))
	r := &counting{e: e}
	nc, res := e.Settle(r, e.Name+"-a")
	// One failure, three updates, one reconcile that changes nothing.
	if nc == nil || nc.Annotations["count"] != "3" || res.RequeueAfter != time.Minute || r.calls != 5 {
		t.Errorf("settled on %v, %+v after %d reconciles; want count 3, the last result, 5 reconciles", nc, res, r.calls)
	}
	if nc, _ := e.Settle(&counting{e: e, delete: true}, e.Name+"-b"); nc != nil {
		t.Errorf("settled on %s, want it gone", nc.Name)
	}
}
