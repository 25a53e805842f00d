package consistency

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/test/environment"
)

func TestMain(m *testing.M) { environment.Main(m) }

func resources(cpu, memory string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
}

// claim is an initialized NodeClaim that requests cpu and memory and
// expected the capacity given.
func claim(capacity corev1.ResourceList, change ...func(*karpv1.NodeClaim)) *karpv1.NodeClaim {
	nc := environment.NewNodeClaim("c", "default", "default")
	nc.Spec.Resources.Requests = resources("1", "1Gi")
	nc.Status.Capacity = capacity
	nc.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue, Reason: "Initialized",
		LastTransitionTime: metav1.NewTime(environment.Start)}}
	for _, c := range change {
		c(nc)
	}
	return nc
}

func nodeWith(capacity corev1.ResourceList) *corev1.Node {
	return &corev1.Node{Status: corev1.NodeStatus{Capacity: capacity}}
}

func TestNodeShape(t *testing.T) {
	expected := resources("2", "8Gi")
	for _, tc := range []struct {
		name string
		nc   *karpv1.NodeClaim
		node *corev1.Node
		want []string // each in the issue of the same index
	}{
		{"as expected", claim(expected), nodeWith(expected), nil},
		{"exactly 90%", claim(expected), nodeWith(resources("1800m", "8Gi")), nil},
		{"just under 90%", claim(expected), nodeWith(resources("1790m", "8Gi")), []string{"1790m of cpu, 89.5% of the 2"}},
		{"every resource short, by name", claim(expected), nodeWith(resources("1", "4Gi")), []string{"of cpu, 50.0%", "4Gi of memory, 50.0% of the 8Gi"}},
		{"a resource the node lacks", claim(expected), nodeWith(resources("2", "0")), []string{"0 of memory, 0.0%"}},
		{"not requested", claim(expected, func(nc *karpv1.NodeClaim) { delete(nc.Spec.Resources.Requests, corev1.ResourceMemory) }),
			nodeWith(resources("2", "1Gi")), nil},
		{"requested at zero", claim(expected, func(nc *karpv1.NodeClaim) {
			nc.Spec.Resources.Requests[corev1.ResourceMemory] = resource.MustParse("0")
		}),
			nodeWith(resources("2", "1Gi")), nil},
		{"not expected", claim(resources("2", "0")), nodeWith(resources("2", "1Gi")), nil},
		{"not initialized", claim(expected, func(nc *karpv1.NodeClaim) { nc.Status.Conditions = nil }), nodeWith(resources("1", "1Gi")), nil},
		{"being deleted", claim(expected, func(nc *karpv1.NodeClaim) { nc.DeletionTimestamp = &metav1.Time{Time: environment.Start} }),
			nodeWith(resources("1", "1Gi")), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := NodeShape(tc.node, tc.nc)
			if len(got) != len(tc.want) {
				t.Fatalf("issues %q, want %d", got, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("issue %q lacks %q", got[i], w)
				}
			}
		})
	}
}

// TestReconcile: a NodeClaim whose Node is as expected gets
// ConsistentStateFound True and no event; once the Node shrinks, the next
// check (not before ScanPeriod) records FailedConsistencyCheck and turns the
// condition False. Another provider's NodeClaim is left alone.
func TestReconcile(t *testing.T) {
	e := environment.New(t, environment.Options{Name: "consistency"})
	clk := clocktesting.NewFakeClock(environment.Start)
	r := New(e.Kube, clk, e.Events)
	providerID := "aws:///us-east-1a/i-0123456789abcdef0"
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: e.Name + "-node"},
		Spec:       corev1.NodeSpec{ProviderID: providerID},
		Status:     corev1.NodeStatus{Capacity: resources("2", "8Gi")},
	}
	e.Create(node)
	nc := claim(resources("2", "8Gi"), func(nc *karpv1.NodeClaim) {
		nc.Name = e.Name
		nc.Status.ProviderID, nc.Status.NodeName = providerID, node.Name
	})
	e.Create(nc)
	reconcileOnce := func() reconcile.Result {
		t.Helper()
		res, err := r.Reconcile(e.Ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: nc.Name}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	condition := func() *metav1.Condition {
		return meta.FindStatusCondition(e.NodeClaim(nc.Name).Status.Conditions, karpv1.ConditionTypeConsistentStateFound)
	}
	failed := environment.Event{Kind: "NodeClaim", Name: nc.Name, Type: corev1.EventTypeWarning, Reason: ReasonFailedConsistencyCheck}

	if res := reconcileOnce(); res.RequeueAfter != ScanPeriod {
		t.Errorf("RequeueAfter = %v, want %v", res.RequeueAfter, ScanPeriod)
	}
	if c := condition(); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("ConsistentStateFound = %+v, want True", c)
	}
	if evs := e.Events.Matching(failed); len(evs) != 0 {
		t.Fatalf("events %+v for a consistent node", evs)
	}

	// The node shrinks: nothing happens before the next scan.
	e.Refresh(node)
	node.Status.Capacity = resources("2", "4Gi")
	if err := e.Kube.Status().Update(e.Ctx, node); err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Minute)
	if res := reconcileOnce(); res.RequeueAfter != ScanPeriod-time.Minute {
		t.Errorf("RequeueAfter = %v within the scan period, want %v", res.RequeueAfter, ScanPeriod-time.Minute)
	}
	if evs := e.Events.Matching(failed); len(evs) != 0 {
		t.Fatalf("events %+v before the next scan", evs)
	}
	clk.Step(ScanPeriod)
	reconcileOnce()
	if evs := e.Events.Matching(failed); len(evs) != 1 || !strings.Contains(evs[0].Note, "4Gi of memory, 50.0% of the 8Gi") {
		t.Errorf("FailedConsistencyCheck events %+v, want one about memory", evs)
	}
	if c := condition(); c == nil || c.Status != metav1.ConditionFalse || c.Reason != conditionReasonFailed || !strings.Contains(c.Message, "memory") {
		t.Errorf("ConsistentStateFound = %+v, want False about memory", c)
	}

	// Another provider's NodeClaim, shrunk as well, is not checked.
	other := claim(resources("2", "8Gi"), func(o *karpv1.NodeClaim) {
		o.Name = e.Name + "-kwok"
		o.Spec.NodeClassRef = environment.KWOKNodeClassRef()
		o.Status.ProviderID, o.Status.NodeName = providerID, node.Name
	})
	e.Create(other)
	if _, err := r.Reconcile(e.Ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(other)}); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(e.NodeClaim(other.Name).Status.Conditions, karpv1.ConditionTypeConsistentStateFound); c != nil {
		t.Errorf("another provider's NodeClaim got %+v", c)
	}
	if evs := e.Events.About(other.Name, ReasonFailedConsistencyCheck); len(evs) != 0 {
		t.Errorf("events %+v about another provider's NodeClaim", evs)
	}
}

func TestNodeClaimsOf(t *testing.T) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "v1", Kind: "Pod", Name: "p"},
		{APIVersion: karpv1.GroupVersion.String(), Kind: "NodeClaim", Name: "c"},
	}}}
	if got := NodeClaimsOf(n); len(got) != 1 || got[0].Name != "c" {
		t.Errorf("NodeClaimsOf = %v, want c", got)
	}
}

// TestRegister checks that the Reconciler can be wired into a manager.
func TestRegister(t *testing.T) {
	mgr := environment.NewManager(t)
	if err := New(mgr.GetClient(), clocktesting.NewFakeClock(environment.Start), nil).Register(mgr); err != nil {
		t.Fatal(err)
	}
}
