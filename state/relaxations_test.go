package state_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/karpenter/v1alpha1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/state"
)

// TestRelaxations checks which changes count as ones that could let a node
// be consolidated: filling up must not, making room or lifting a block
// must.
func TestRelaxations(t *testing.T) {
	ready := func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	readyAt := func(heartbeat metav1.Time) nodeOpt {
		return func(n *corev1.Node) {
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: heartbeat}}
		}
	}
	pool := func(resourceVersion string, generation int64) *karpv1.NodePool {
		return &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "p", ResourceVersion: resourceVersion, Generation: generation}}
	}
	nodeOverlay := func(resourceVersion string, generation int64) *v1alpha1.NodeOverlay {
		return &v1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: "o", ResourceVersion: resourceVersion, Generation: generation}}
	}
	budget := func(allowed int32) *policyv1.PodDisruptionBudget {
		return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "b", Generation: 1}, Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed}}
	}
	withCondition := func(typ string, status metav1.ConditionStatus) claimOpt {
		return func(nc *karpv1.NodeClaim) {
			nc.Status.Conditions = append(nc.Status.Conditions, metav1.Condition{Type: typ, Status: status, Reason: "R"})
		}
	}
	cases := []struct {
		name   string
		change func(c *state.Cluster)
		relax  bool
	}{
		{"a new pending pod", func(c *state.Cluster) { c.UpdatePod(pod("a", "new")) }, false},
		{"a new pod bound", func(c *state.Cluster) { c.UpdatePod(pod("a", "new", onNode("n1"))) }, false},
		{"a pending pod bound", func(c *state.Cluster) { c.UpdatePod(pod("a", "pending", onNode("n1"))) }, false},
		{"a pod becomes ready", func(c *state.Cluster) { c.UpdatePod(pod("a", "bound", onNode("n1"), ready)) }, false},
		{"a node nominated", func(c *state.Cluster) { c.Nominate("n1", metav1.Now().Add(60e9)) }, false},
		{"a node's heartbeat", func(c *state.Cluster) { c.UpdateNode(node("n2", "aws:///us-east-1a/i-2", readyAt(metav1.Now()))) }, false},
		{"a NodeClaim's lastPodEventTime", func(c *state.Cluster) {
			nc := claim("c1", "p", launchedAs("aws:///us-east-1a/i-1", list("4", "16Gi")), withCondition(karpv1.ConditionTypeConsolidatable, metav1.ConditionFalse))
			nc.Status.LastPodEventTime = metav1.Now()
			c.UpdateNodeClaim(nc)
		}, false},
		{"Consolidatable turning off", func(c *state.Cluster) {
			c.UpdateNodeClaim(claim("c1", "p", launchedAs("aws:///us-east-1a/i-1", list("4", "16Gi")), withCondition(karpv1.ConditionTypeConsolidatable, metav1.ConditionFalse)))
		}, false},
		{"a budget allowing more", func(c *state.Cluster) { c.UpdatePodDisruptionBudget(budget(2)) }, false},

		{"a pod deleted", func(c *state.Cluster) { c.DeletePod("a", "bound") }, true},
		{"a pod finished", func(c *state.Cluster) {
			p := pod("a", "bound", onNode("n1"))
			p.Status.Phase = corev1.PodSucceeded
			c.UpdatePod(p)
		}, true},
		{"a pod moved", func(c *state.Cluster) { c.UpdatePod(pod("a", "bound", onNode("n2"))) }, true},
		{"a pod terminating", func(c *state.Cluster) {
			p := pod("a", "bound", onNode("n1"))
			p.DeletionTimestamp = &metav1.Time{}
			c.UpdatePod(p)
		}, true},
		{"a pod's do-not-disrupt removed", func(c *state.Cluster) { c.UpdatePod(pod("a", "guarded", onNode("n1"))) }, true},
		{"a pod's requests shrink", func(c *state.Cluster) {
			p := pod("a", "bound", onNode("n1"))
			p.Spec.Containers[0].Resources.Requests = list("100m", "1Gi")
			c.UpdatePod(p)
		}, true},
		{"a ready pod no longer ready", func(c *state.Cluster) { c.UpdatePod(pod("a", "readypod", onNode("n1"))) }, true},
		{"a node added", func(c *state.Cluster) { c.UpdateNode(node("n3", "aws:///us-east-1a/i-3")) }, true},
		{"a node deleted", func(c *state.Cluster) { c.DeleteNode("n2") }, true},
		{"a node uncordoned", func(c *state.Cluster) { c.UpdateNode(node("n1", "aws:///us-east-1a/i-1")) }, true},
		{"a NodeClaim added", func(c *state.Cluster) { c.UpdateNodeClaim(claim("c9", "p")) }, true},
		{"Consolidatable turning on", func(c *state.Cluster) {
			c.UpdateNodeClaim(claim("c1", "p", launchedAs("aws:///us-east-1a/i-1", list("4", "16Gi")), withCondition(karpv1.ConditionTypeConsolidatable, metav1.ConditionTrue)))
		}, true},
		{"a NodeClaim's annotation", func(c *state.Cluster) {
			nc := claim("c1", "p", launchedAs("aws:///us-east-1a/i-1", list("4", "16Gi")))
			nc.Annotations = map[string]string{wellknown.AnnotationDoNotDisrupt: "true"}
			c.UpdateNodeClaim(nc)
		}, true},
		{"a budget starting to allow", func(c *state.Cluster) { c.UpdatePodDisruptionBudget(budget(0)); c.UpdatePodDisruptionBudget(budget(1)) }, true},
		{"a NodePool's status", func(c *state.Cluster) { c.UpdateNodePool(pool("2", 1)) }, false},
		{"the same NodePool again", func(c *state.Cluster) { c.UpdateNodePool(pool("1", 1)) }, false},
		{"a NodePool's spec", func(c *state.Cluster) { c.UpdateNodePool(pool("2", 2)) }, true},
		{"a new NodePool", func(c *state.Cluster) { c.UpdateNodePool(&karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "q"}}) }, true},
		{"a new DaemonSet", func(c *state.Cluster) { c.UpdateDaemonSet(daemonSet("a", "ds")) }, true},
		{"a NodeOverlay's status", func(c *state.Cluster) { c.UpdateNodeOverlay(nodeOverlay("2", 1)) }, false},
		{"a NodeOverlay's spec", func(c *state.Cluster) { c.UpdateNodeOverlay(nodeOverlay("2", 2)) }, true},
		{"a NodeOverlay deleted", func(c *state.Cluster) { c.DeleteNodeOverlay("o") }, true},
		{"a deletion mark lifted", func(c *state.Cluster) { c.UnmarkForDeletion("n1") }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := state.NewCluster()
			c.UpdateNode(node("n1", "aws:///us-east-1a/i-1", cordoned))
			c.UpdateNode(node("n2", "aws:///us-east-1a/i-2", readyAt(metav1.Time{})))
			c.UpdateNodeClaim(claim("c1", "p", launchedAs("aws:///us-east-1a/i-1", list("4", "16Gi")), withCondition(karpv1.ConditionTypeConsolidatable, metav1.ConditionFalse)))
			c.UpdatePod(pod("a", "pending"))
			c.UpdatePod(pod("a", "bound", onNode("n1")))
			c.UpdatePod(pod("a", "readypod", onNode("n1"), ready))
			c.UpdatePod(pod("a", "guarded", onNode("n1"), func(p *corev1.Pod) {
				p.Annotations = map[string]string{wellknown.AnnotationDoNotDisrupt: "true"}
			}))
			c.UpdatePodDisruptionBudget(budget(1))
			c.UpdateNodePool(pool("1", 1))
			c.UpdateNodeOverlay(nodeOverlay("1", 1))
			before, changes := c.Relaxations(), c.Changes()
			tc.change(c)
			if c.Changes() == changes {
				t.Fatal("the change was not recorded at all")
			}
			if got := c.Relaxations() != before; got != tc.relax {
				t.Errorf("Relaxations moved: %v, want %v", got, tc.relax)
			}
		})
	}
}
