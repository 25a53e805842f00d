package disruption

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
)

func replicas(n int64) poolOpt {
	return func(np *karpv1.NodePool) { np.Spec.Replicas = ptr.To(n) }
}

func nodeLimit(n int64) poolOpt {
	return func(np *karpv1.NodePool) {
		np.Spec.Limits = corev1.ResourceList{"nodes": *resource.NewQuantity(n, resource.DecimalSI)}
	}
}

func TestStaticNodePool(t *testing.T) {
	onDemand := []string{wellknown.CapacityTypeOnDemand}
	t.Run("empty and underused static nodes are kept", func(t *testing.T) {
		f := newFixture(t)
		f.pool("s", family, onDemand, replicas(2))
		empty := f.node(nodeSpec{pool: "s", itype: xlarge})
		used := f.node(nodeSpec{pool: "s", itype: x2})
		f.pod("a", used, "1", "1Gi")
		d := Decide(f.input())
		if d.Command != nil {
			t.Fatalf("command = %s", d.Command)
		}
		for _, n := range []string{empty, used} {
			if got := codes(d, n); !slices.Contains(got, CodeStatic) {
				t.Errorf("codes of %s = %v, want %s", n, got, CodeStatic)
			}
		}
	})
	t.Run("pods of a dynamic node do not launch into a static pool", func(t *testing.T) {
		f := newFixture(t)
		// The static pool could hold the pod on a cheaper node; only its
		// existing nodes may take it.
		f.pool("s", family, onDemand, replicas(1))
		f.pool("d", []string{x2}, onDemand)
		full := f.node(nodeSpec{pool: "s", itype: large})
		f.pod("s-full", full, "1800m", "1Gi")
		n := f.node(nodeSpec{pool: "d", itype: x2})
		f.pod("a", n, "1", "1Gi")
		d := Decide(f.input())
		if d.Command != nil {
			t.Fatalf("command = %s", d.Command)
		}
	})
	t.Run("drift of a static node waits for the feature gate", func(t *testing.T) {
		f := newFixture(t)
		f.pool("s", family, onDemand, replicas(1))
		n := f.node(nodeSpec{pool: "s", itype: xlarge, drifted: time.Hour})
		f.pod("a", n, "1", "1Gi")
		if d := Decide(f.input()); d.Command != nil {
			t.Fatalf("command = %s", d.Command)
		}
		f.opts.StaticCapacity = true
		d := Decide(f.input())
		c := d.Command
		if c == nil || c.Reason != ReasonDrifted || c.Method != MethodReplace || !slices.Equal(candidateNames(c), []string{n}) || len(c.Replacements) != 1 {
			t.Fatalf("command = %v; blocked %v", c, d.Blocked)
		}
		r := c.Replacements[0]
		if r.NodePool != "s" || len(r.Pods) != 0 || !slices.Equal(r.InstanceTypes, family) {
			t.Errorf("replacement = %+v, want a fresh NodeClaim of s over %v, cheapest first", r, family)
		}
	})
	t.Run("no replacement past limits.nodes", func(t *testing.T) {
		f := newFixture(t)
		f.opts.StaticCapacity = true
		f.pool("s", family, onDemand, replicas(2), nodeLimit(2))
		n := f.node(nodeSpec{pool: "s", itype: xlarge, drifted: time.Hour})
		f.node(nodeSpec{pool: "s", itype: xlarge})
		d := Decide(f.input())
		if d.Command != nil {
			t.Fatalf("command = %s", d.Command)
		}
		if got := codes(d, n); !slices.Contains(got, CodeStaticNodeLimit) {
			t.Errorf("codes = %v, want %s", got, CodeStaticNodeLimit)
		}
	})
	t.Run("no replacement while scaling down", func(t *testing.T) {
		f := newFixture(t)
		f.opts.StaticCapacity = true
		f.pool("s", family, onDemand, replicas(1))
		f.node(nodeSpec{pool: "s", itype: xlarge, drifted: time.Hour})
		f.node(nodeSpec{pool: "s", itype: xlarge})
		if d := Decide(f.input()); d.Command != nil && d.Command.Reason == ReasonDrifted {
			t.Fatalf("command = %s", d.Command)
		}
	})
}

// TestStaticSurplusRanking checks the order in which a static NodePool's
// surplus goes: NodeClaims not launched yet, then empty nodes, then nodes
// without do-not-disrupt pods, then by eviction cost times the lifetime
// left, ties by name. Each case lists the NodePool's nodes in the order
// they must be picked when all of them are asked for.
func TestStaticSurplusRanking(t *testing.T) {
	const doNotDisrupt = wellknown.AnnotationDoNotDisrupt
	type podSpec struct {
		opts []podOpt
	}
	type nodeCase struct {
		inFlight bool
		spec     nodeSpec
		pods     []podSpec
	}
	plain := podSpec{}
	protected := podSpec{opts: []podOpt{annotate(doNotDisrupt, "true")}}
	costly := podSpec{opts: []podOpt{annotate(AnnotationPodDeletionCost, "268435456")}} // +2: eviction cost 3
	cheap := podSpec{opts: []podOpt{annotate(AnnotationPodDeletionCost, "-67108864")}}  // -0.5: eviction cost 0.5
	daemonPod := podSpec{opts: []podOpt{daemon}}
	for _, tc := range []struct {
		name  string
		nodes []nodeCase // in the expected order
	}{
		{"not launched before empty", []nodeCase{
			{inFlight: true},
			{},
		}},
		{"empty before any pod, however cheap", []nodeCase{
			{},
			{pods: []podSpec{cheap}},
		}},
		{"DaemonSet pods leave a node empty", []nodeCase{
			{pods: []podSpec{daemonPod, daemonPod}},
			{pods: []podSpec{cheap}},
		}},
		{"a do-not-disrupt pod makes a node not empty and last", []nodeCase{
			{pods: []podSpec{costly, costly, costly}},
			{pods: []podSpec{protected}},
		}},
		{"a do-not-disrupt DaemonSet pod keeps a node from being empty", []nodeCase{
			{pods: []podSpec{costly}},
			{pods: []podSpec{{opts: []podOpt{daemon, annotate(doNotDisrupt, "true")}}}},
		}},
		{"lowest eviction cost first", []nodeCase{
			{pods: []podSpec{cheap}},
			{pods: []podSpec{plain}},
			{pods: []podSpec{plain, plain}},
			{pods: []podSpec{costly}},
		}},
		{"eviction cost scaled by the lifetime left", []nodeCase{
			// 24h old of 32h: a quarter left, 3 x 0.25 = 0.75.
			{spec: nodeSpec{expireAfter: 32 * time.Hour}, pods: []podSpec{plain, plain, plain}},
			// Never expires: 1 x 1.
			{pods: []podSpec{plain}},
		}},
		{"ties by name", []nodeCase{
			{pods: []podSpec{plain}},
			{pods: []podSpec{plain}},
			{pods: []podSpec{plain}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			np := f.pool("s", family, nil, replicas(1))
			// Built in reverse so that creation order cannot explain the
			// result (except for the ties, named in order).
			want := make([]string, len(tc.nodes))
			for k := range tc.nodes {
				i := len(tc.nodes) - 1 - k
				if tc.name == "ties by name" {
					i = k
				}
				n := tc.nodes[i]
				if n.inFlight {
					f.nodes++
					name := fmt.Sprintf("node-%03d", f.nodes)
					f.c.UpdateNodeClaim(&karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{wellknown.LabelNodePool: "s"}}})
					want[i] = name
					continue
				}
				spec := n.spec
				spec.pool, spec.itype = "s", xlarge
				name := f.node(spec)
				for j, p := range n.pods {
					f.pod(fmt.Sprintf("%s-pod-%d", name, j), name, "100m", "128Mi", p.opts...)
				}
				want[i] = name
			}
			got := StaticSurplus(f.c.Snapshot(t0), np, len(tc.nodes)+1)
			var names []string
			for _, sn := range got {
				names = append(names, sn.NodeClaim.Name)
			}
			if !slices.Equal(names, want) {
				t.Errorf("surplus order %v, want %v", names, want)
			}
			if first := StaticSurplus(f.c.Snapshot(t0), np, 1); len(first) != 1 || first[0].NodeClaim.Name != want[0] {
				t.Errorf("one surplus node: %v, want %s", first, want[0])
			}
		})
	}
}

// TestStaticSurplusSkips: NodeClaims of other NodePools, being deleted, or
// held by a disruption command are never picked.
func TestStaticSurplusSkips(t *testing.T) {
	f := newFixture(t)
	np := f.pool("s", family, nil, replicas(1))
	f.pool("other", family, nil, replicas(1))
	keep := f.node(nodeSpec{pool: "s", itype: xlarge})
	f.pod("busy", keep, "100m", "128Mi")
	f.node(nodeSpec{pool: "other", itype: xlarge})
	deleting := f.node(nodeSpec{pool: "s", itype: xlarge})
	disrupted := f.node(nodeSpec{pool: "s", itype: xlarge})
	snap := f.c.Snapshot(t0)
	for _, sn := range snap.Nodes {
		switch sn.Name() {
		case deleting:
			nc := sn.NodeClaim.DeepCopy()
			nc.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
			f.c.UpdateNodeClaim(nc)
		case disrupted:
			nc := sn.NodeClaim.DeepCopy()
			nc.Status.Conditions = append(nc.Status.Conditions, metav1.Condition{Type: karpv1.ConditionTypeDisruptionReason, Status: metav1.ConditionTrue, Reason: "Underutilized"})
			f.c.UpdateNodeClaim(nc)
		}
	}
	got := StaticSurplus(f.c.Snapshot(t0), np, 5)
	if len(got) != 1 || got[0].NodeClaim.Name != keep {
		var names []string
		for _, sn := range got {
			names = append(names, sn.NodeClaim.Name)
		}
		t.Errorf("surplus %v, want only %s", names, keep)
	}
}
