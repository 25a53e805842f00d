package state_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stevedore-autoscaler/stevedore/state"
)

// queriesCluster is a cluster with two NodePools: joined, in-flight, marked
// and unmanaged nodes, and pending pods with and without nominations.
func queriesCluster() *state.Cluster {
	c := state.NewCluster()
	c.UpdateNodeClaim(claim("default-a", "default", launchedAs("aws:///i-1", slots("4", "16Gi"))))
	c.UpdateNode(node("ip-1", "aws:///i-1", inPool("default"), initialized, withSlots))
	c.UpdateNodeClaim(claim("default-b", "default", requestsOf(slots("4", "16Gi"))))
	c.UpdateNodeClaim(claim("default-c", "default", launchedAs("aws:///i-3", slots("4", "16Gi"))))
	c.UpdateNode(node("ip-3", "aws:///i-3", inPool("default"), withSlots))
	c.MarkForDeletion("ip-3")
	c.UpdateNodeClaim(claim("spot-a", "spot", launchedAs("aws:///i-2", slots("4", "16Gi"))))
	c.UpdateNode(node("ip-2", "aws:///i-2", inPool("spot"), withSlots))
	// A node of the pool that stevedore does not manage, and one of none.
	c.UpdateNode(node("adopted", "aws:///i-9", inPool("default"), withSlots))
	c.UpdateNode(node("static", "", withSlots))
	return c
}

func TestNodePoolNodesAgreesWithSnapshot(t *testing.T) {
	c := queriesCluster()
	s := c.Snapshot(t0)
	for _, pool := range []string{"default", "spot", "none"} {
		var want []*state.StateNode
		for _, sn := range s.Nodes {
			if sn.NodePool() == pool {
				want = append(want, sn)
			}
		}
		got := c.NodePoolNodes(pool)
		if len(got) != len(want) {
			t.Fatalf("%s: %d nodes, want %d", pool, len(got), len(want))
		}
		for i := range got {
			g, w := got[i], want[i]
			if g.Name() != w.Name() || g.Node != w.Node || g.NodeClaim != w.NodeClaim || g.MarkedForDeletion != w.MarkedForDeletion {
				t.Errorf("%s[%d] = %s (node %v, claim %v, marked %v), want %s (node %v, claim %v, marked %v)", pool, i,
					g.Name(), g.Node != nil, g.NodeClaim != nil, g.MarkedForDeletion, w.Name(), w.Node != nil, w.NodeClaim != nil, w.MarkedForDeletion)
			}
		}
	}
	var names []string
	for _, sn := range c.NodePoolNodes("default") {
		names = append(names, sn.Name())
		if sn.Name() == "ip-3" && !sn.MarkedForDeletion {
			t.Errorf("ip-3 is marked for deletion")
		}
	}
	if want := []string{"adopted", "default-b", "ip-1", "ip-3"}; !slices.Equal(names, want) {
		t.Errorf("default nodes = %v, want %v", names, want)
	}
}

func TestNodeClaimProviderIDs(t *testing.T) {
	got := queriesCluster().NodeClaimProviderIDs()
	if want := []string{"aws:///i-1", "aws:///i-2", "aws:///i-3"}; !slices.Equal(got, want) {
		t.Errorf("NodeClaimProviderIDs() = %v, want %v", got, want)
	}
}

func TestProvisionablePending(t *testing.T) {
	c := queriesCluster()
	check := func(when string, wantUnnominated, wantNominated int) {
		t.Helper()
		u, n := c.ProvisionablePending()
		if u != wantUnnominated || n != wantNominated {
			t.Errorf("%s: ProvisionablePending() = %d, %d; want %d, %d", when, u, n, wantUnnominated, wantNominated)
		}
		provisionable := len(c.Snapshot(t0.Add(time.Second)).ProvisionablePods())
		if u+n == 0 && provisionable != 0 || u > 0 && provisionable == 0 {
			t.Errorf("%s: %d, %d but the snapshot has %d provisionable pods", when, u, n, provisionable)
		}
	}
	check("no pods", 0, 0)

	c.UpdatePod(pod("a", "bound", onNode("ip-1")))
	c.UpdatePod(pod("a", "not-yet-marked", withUID("nym")))
	c.UpdatePod(pod("a", "daemon", unschedulable, ownedBy("apps/v1", "DaemonSet")))
	check("no provisionable pods", 0, 0)

	web := pod("a", "web", unschedulable, withUID("web"))
	c.UpdatePod(web)
	check("one pending pod", 1, 0)

	c.NominatePod(web, "default-b", t0, t0.Add(10*time.Second))
	check("its nomination holds", 0, 1)

	c.UpdatePod(pod("a", "web", unschedulable, withUID("web-2")))
	check("replaced by a pod of the same name", 1, 0)

	c.DeletePod("a", "web")
	check("deleted", 0, 0)
}

// A snapshot taken at the same time as the last, with no change recorded in
// between, is the last one; a change, or another time, gives a new one that
// shows it.
func TestSnapshotIsSharedUntilSomethingChanges(t *testing.T) {
	c := queriesCluster()
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	first := c.Snapshot(t0)
	again := c.Snapshot(t0)
	if len(first.Nodes) == 0 || &first.Nodes[0] != &again.Nodes[0] {
		t.Fatal("a second snapshot with nothing changed was built anew")
	}
	later := c.Snapshot(t0.Add(time.Second))
	if &later.Nodes[0] == &first.Nodes[0] || !later.Time.Equal(t0.Add(time.Second)) {
		t.Fatal("a snapshot at another time is the earlier one")
	}
	c.UpdatePod(pod("apps", "new-pending", unschedulable))
	changed := c.Snapshot(t0.Add(time.Second))
	if len(changed.PendingPods) != len(later.PendingPods)+1 {
		t.Fatalf("after a new pending pod the snapshot lists %d pending pods, before %d", len(changed.PendingPods), len(later.PendingPods))
	}
	c.MarkForDeletion("ip-1")
	marked := c.Snapshot(t0.Add(time.Second))
	if n, ok := marked.Node("ip-1"); !ok || !n.MarkedForDeletion {
		t.Fatal("a deletion mark does not show in the next snapshot")
	}
}
