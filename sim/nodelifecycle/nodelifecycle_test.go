package nodelifecycle

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-autoscaler/stevedore/sim/internal/simtest"
	"github.com/stevedore-autoscaler/stevedore/sim/kubelet"
)

type heartbeats map[string]time.Time

func (h heartbeats) Stopped(n string) (time.Time, bool) { t, ok := h[n]; return t, ok }

func readyNode(name, providerID string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: providerID},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
}

func podOn(name, node string, tolerate *int64) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "apps"}, Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c"}}}}
	if tolerate != nil {
		p.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: tolerate}}
	}
	return p
}

func exists(t *testing.T, c client.Client, name string) bool {
	t.Helper()
	p := &corev1.Pod{}
	err := c.Get(context.Background(), client.ObjectKey{Namespace: "apps", Name: name}, p)
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return p.DeletionTimestamp == nil
}

func TestSilentNodeIsMarkedAndItsPodsEvicted(t *testing.T) {
	api, clk := simtest.Server(t, "apps")
	hb := heartbeats{}
	c := New(api, nil, clk, hb)
	simtest.Create(t, api, readyNode("n", ""), podOn("short", "n", ptr(int64(60))), podOn("default", "n", nil))

	hb["n"] = clk.Now()
	if res := simtest.Reconcile(t, c, "", "n"); res.RequeueAfter != NodeMonitorGracePeriod {
		t.Errorf("requeue %s, want the grace period", res.RequeueAfter)
	}
	clk.Step(NodeMonitorGracePeriod)
	res := simtest.Reconcile(t, c, "", "n")
	node := simtest.Get(t, api, "", "n", &corev1.Node{})
	if ready(node) || !slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool {
		return t.Key == corev1.TaintNodeUnreachable && t.Effect == corev1.TaintEffectNoExecute
	}) {
		t.Fatalf("silent node: %+v %+v", node.Status.Conditions, node.Spec.Taints)
	}
	if res.RequeueAfter != time.Minute {
		t.Errorf("requeue %s, want the shortest toleration", res.RequeueAfter)
	}
	// The pod with the API server's default 300s toleration stays; the one
	// tolerating 60s goes after 60s.
	clk.Step(time.Minute)
	simtest.Reconcile(t, c, "", "n")
	if exists(t, api, "short") || !exists(t, api, "default") {
		t.Errorf("after 60s: short %v, default %v", exists(t, api, "short"), exists(t, api, "default"))
	}
}

func TestGoneNodesAndInstances(t *testing.T) {
	api, clk := simtest.Server(t, "apps")
	f, w := simtest.AWS(t, clk)
	c := New(api, f, clk, heartbeats{})
	id := simtest.Launch(t, f, w, "m6i.large")
	info, _ := f.Instance(id)
	node := readyNode("n", kubelet.ProviderID(info.Zone, id))
	node.Status.Conditions[0].Status = corev1.ConditionUnknown
	simtest.Create(t, api, node, podOn("p", "n", nil))
	simtest.Reconcile(t, c, "", "n")
	simtest.Get(t, api, "", "n", &corev1.Node{})

	// Its instance goes: the cloud controller deletes the node.
	if err := f.ScheduleTermination(id, clk.Now()); err != nil {
		t.Fatal(err)
	}
	simtest.Reconcile(t, c, "", "n")
	if err := api.Get(context.Background(), client.ObjectKey{Name: "n"}, &corev1.Node{}); !apierrors.IsNotFound(err) {
		t.Fatalf("node of a terminated instance: %v", err)
	}
	// The pod garbage collector removes its pods.
	simtest.Reconcile(t, c, "", "n")
	if err := api.Get(context.Background(), client.ObjectKey{Namespace: "apps", Name: "p"}, &corev1.Pod{}); !apierrors.IsNotFound(err) {
		t.Errorf("pod of a deleted node: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }
