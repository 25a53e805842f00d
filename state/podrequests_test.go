package state_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/stevedore-autoscaler/stevedore/scheduling/resources"
	"github.com/stevedore-autoscaler/stevedore/state"
)

// TestPodRequestsFollowPodChanges checks the memoized sum of a node's pod
// requests against adding the requests up, after each kind of pod change:
// a memo kept across a change would be caught here.
func TestPodRequestsFollowPodChanges(t *testing.T) {
	c := state.NewCluster()
	c.UpdateNode(node("n1", "aws:///us-east-1a/i-1"))
	c.UpdateNode(node("n2", "aws:///us-east-1a/i-2"))
	now := time.Unix(0, 0)
	steps := []struct {
		name   string
		change func()
	}{
		{"nothing yet", func() {}},
		{"a pod binds", func() { c.UpdatePod(pod("a", "p1", onNode("n1"))) }},
		{"a second pod binds", func() { c.UpdatePod(pod("a", "p2", onNode("n1"))) }},
		{"a pod grows", func() {
			p := pod("a", "p2", onNode("n1"))
			p.Spec.Containers[0].Resources.Requests = list("3", "4Gi")
			c.UpdatePod(p)
		}},
		{"a pod moves to another node", func() { c.UpdatePod(pod("a", "p1", onNode("n2"))) }},
		{"a pod is deleted", func() { c.DeletePod("a", "p2") }},
		{"a pod is pending", func() { c.UpdatePod(pod("a", "p3")) }},
	}
	for _, st := range steps {
		st.change()
		// Two snapshots: the first may fill the memo, the second reads it.
		for range 2 {
			snap := c.Snapshot(now)
			for _, n := range snap.Nodes {
				var want resources.Vector
				for _, p := range n.Pods {
					want.Add(resources.PodVector(p))
				}
				if got := n.PodRequests(); got.String() != want.String() {
					t.Errorf("%s: node %s: PodRequests() = %v, want %v", st.name, n.Name(), got, want)
				}
			}
		}
	}
	// A hand-built StateNode adds its pods up.
	n := &state.StateNode{Pods: []*corev1.Pod{pod("a", "x", onNode("n9"))}}
	if got, want := n.PodRequests(), resources.PodVector(n.Pods[0]); got.String() != want.String() {
		t.Errorf("hand-built node: PodRequests() = %v, want %v", got, want)
	}
}
