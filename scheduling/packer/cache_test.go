package packer_test

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
)

// A Cache shared by the packings of one cluster, as consolidation shares
// one across its candidates, changes no result: each node is taken away in
// turn and its pods packed again, with the cache and without, and then
// again after nodes' pod lists were replaced (the cache must notice). The
// pods spread over zones, keep apart by required anti-affinity, follow an
// affinity and bind host ports, so every memo of the cache is exercised.
func TestCacheGivesTheSameResults(t *testing.T) {
	daemon := pod("agent", "100m", "64Mi")
	nodes := cacheTestNodes()
	base := packer.Input{Nodes: nodes, NodePools: []packer.NodePool{pool("p", 8)}, DaemonSetPods: []*corev1.Pod{daemon}}

	without := func(in packer.Input, gone int) packer.Input {
		var moved []*corev1.Pod
		in.Nodes = nil
		for i, n := range base.Nodes {
			if i == gone {
				for _, p := range n.Pods {
					cp := *p
					cp.Spec.NodeName = ""
					moved = append(moved, &cp)
				}
				continue
			}
			in.Nodes = append(in.Nodes, n)
		}
		in.Pods = moved
		return in
	}
	cache := packer.NewCache()
	check := func(round string) {
		t.Helper()
		for gone := range base.Nodes {
			plain := without(base, gone)
			cached := plain
			cached.Cache = cache
			want, got := packer.Solve(plain), packer.Solve(cached)
			if !reflect.DeepEqual(claimSummary(got), claimSummary(want)) {
				t.Fatalf("%s, without %s: with the cache %v, without %v", round, base.Nodes[gone].Name, claimSummary(got), claimSummary(want))
			}
		}
	}
	check("first round")
	// New pod lists, one node emptied and one pod relabelled: counts from
	// the old lists must not be reused.
	base.Nodes = slices.Clone(base.Nodes)
	base.Nodes[1].Pods = nil
	relabelled := *base.Nodes[4].Pods[0]
	relabelled.Labels = map[string]string{"app": "other"}
	base.Nodes[4].Pods = []*corev1.Pod{&relabelled, base.Nodes[4].Pods[1], base.Nodes[4].Pods[2]}
	check("second round")
}

// A Cache kept across packings reads a node's labels again when they are
// another map, as each snapshot makes: a node moved to another zone counts
// its pods there, and the zone spread of a pending pod sends it elsewhere.
func TestKeptCacheFollowsNodeLabels(t *testing.T) {
	nodes := cacheTestNodes()
	pending := pod("web-new", "100m", "128Mi", spreadZone("web"))
	cache := packer.NewCache()
	var placed []string
	for round := range 3 {
		if round > 0 {
			// Each round moves one more zone-b node to zone-a, in a new
			// map: zone-b ends with the fewest web pods.
			nodes = slices.Clone(nodes)
			i := 3*round - 2
			labels := maps.Clone(nodes[i].Labels)
			labels[wellknown.LabelTopologyZone] = "zone-a"
			nodes[i].Labels = labels
		}
		in := packer.Input{Nodes: nodes, Pods: []*corev1.Pod{pending}}
		want := packer.Solve(in)
		in.Cache = cache
		got := packer.Solve(in)
		if !reflect.DeepEqual(claimSummary(got), claimSummary(want)) {
			t.Fatalf("round %d: with the kept cache %v, without %v", round, claimSummary(got), claimSummary(want))
		}
		placed = append(placed, fmt.Sprint(claimSummary(want)))
	}
	if placed[0] == placed[1] {
		t.Fatalf("moving a node to another zone changed nothing; the test checks nothing: %v", placed)
	}
}

// A Cache that lives through many nodes numbers label values (hostnames
// among them) and terms anew once the numbers grew well past what the
// nodes it keeps need; packing gives the same results before and after,
// also on the nodes it kept throughout, whose values and counts it holds
// by those numbers.
func TestCacheNumberingStartsOver(t *testing.T) {
	defer packer.SetCacheBounds(1, 0)()
	cache := packer.NewCache()
	kept := cacheTestNodes()[:3]
	// Counts that differ from term to term: two more web pods on the
	// first node, no edge pod on the second.
	for i := range 2 {
		extra := pod(fmt.Sprintf("web-extra-%d", i), "100m", "128Mi", spreadZone("web"))
		extra.Spec.NodeName = kept[0].Name
		kept[0].Pods = append(slices.Clip(kept[0].Pods), extra)
	}
	kept[1].Pods = slices.DeleteFunc(slices.Clone(kept[1].Pods), func(p *corev1.Pod) bool { return p.Labels["app"] == "edge" })
	for round := range 6 {
		// Six new nodes each round, the old ones gone, beside three that
		// stay as they are.
		nodes := slices.Clone(kept)
		for _, n := range cacheTestNodes()[3:] {
			n.Name = fmt.Sprintf("r%d-%s", round, n.Name)
			n.Labels = maps.Clone(n.Labels)
			n.Labels[wellknown.LabelHostname] = n.Name
			nodes = append(nodes, n)
		}
		live := map[string]bool{}
		for _, n := range nodes {
			live[n.Name] = true
		}
		cache.RetainNodes(func(name string) bool { return live[name] })
		for gone := range nodes {
			// No NodePool: the moved pods go where the counts of the
			// nodes' pods let them.
			var in packer.Input
			for i, n := range nodes {
				if i == gone {
					for _, p := range n.Pods {
						cp := *p
						cp.Spec.NodeName = ""
						in.Pods = append(in.Pods, &cp)
					}
					// Another order of the pods numbers their terms in
					// another order.
					if gone%2 == 1 {
						slices.Reverse(in.Pods)
					}
					continue
				}
				in.Nodes = append(in.Nodes, n)
			}
			want := packer.Solve(in)
			in.Cache = cache
			got := packer.Solve(in)
			if !reflect.DeepEqual(claimSummary(got), claimSummary(want)) {
				t.Fatalf("round %d, without %s: with the cache %v, without %v", round, nodes[gone].Name, claimSummary(got), claimSummary(want))
			}
		}
	}
	// Each key numbers at most twice the nine nodes' values.
	if n := packer.CacheValues(cache); n > 3*2*9 {
		t.Errorf("the cache numbers %d label values after six rounds of nine nodes", n)
	}
}

// A Cache kept across packings recognises nodes given in the order it saw
// them before, less some, and puts nodes given in another order in order
// first: first fit then fills the same node whatever order they come in.
func TestKeptCacheOrdersNodes(t *testing.T) {
	sorted := cacheTestNodes()
	reversed := slices.Clone(sorted)
	slices.Reverse(reversed)
	pending := []*corev1.Pod{pod("small-1", "100m", "128Mi"), pod("small-2", "100m", "128Mi")}
	orders := map[string][]packer.Node{
		"sorted":            sorted,
		"without the first": sorted[1:],
		"reversed":          reversed,
		"two swapped":       append([]packer.Node{sorted[1], sorted[0]}, sorted[2:]...),
		"sorted again":      sorted,
	}
	cache := packer.NewCache()
	for _, name := range []string{"sorted", "without the first", "reversed", "sorted again", "two swapped"} {
		in := packer.Input{Nodes: orders[name], Pods: pending}
		want := packer.Solve(in)
		in.Cache = cache
		got := packer.Solve(in)
		if !reflect.DeepEqual(claimSummary(got), claimSummary(want)) {
			t.Fatalf("%s: with the kept cache %v, without %v", name, claimSummary(got), claimSummary(want))
		}
		if first := want.Placements[0].Node; name != "without the first" && first != sorted[0].Name {
			t.Fatalf("%s: first fit placed on %s, want %s", name, first, sorted[0].Name)
		}
	}
}

// cacheTestNodes are nine nodes over three zones whose pods spread over
// zones, keep apart by required anti-affinity, follow an affinity and bind
// host ports, so that every memo of a Cache is exercised.
func cacheTestNodes() []packer.Node {
	zones := []string{"zone-a", "zone-b", "zone-c"}
	var nodes []packer.Node
	for i := range 9 {
		name := fmt.Sprintf("node-%d", i)
		n := packer.Node{
			Name: name, NodePool: "p",
			Labels: map[string]string{
				wellknown.LabelHostname: name, wellknown.LabelTopologyZone: zones[i%3], wellknown.LabelNodePool: "p",
				wellknown.LabelInstanceType: "bench-4", wellknown.LabelCapacityType: wellknown.CapacityTypeOnDemand,
			},
			Allocatable: vec("4", "16Gi", "110"),
		}
		for j := range 4 {
			var p *corev1.Pod
			switch j {
			case 3:
				// Host ports on every other node: a moved proxy must
				// skip the nodes whose cached ports hold its port.
				if i%2 == 1 {
					continue
				}
				p = pod(fmt.Sprintf("proxy-%d", i), "100m", "128Mi", hostPort(9100))
			case 0:
				p = pod(fmt.Sprintf("web-%d", i), "500m", "1Gi", spreadZone("web"))
			case 1:
				p = pod(fmt.Sprintf("edge-%d", i), "250m", "256Mi", antiHost("edge"))
			default:
				p = pod(fmt.Sprintf("batch-%d", i), fmt.Sprintf("%dm", 300+100*i), "2Gi", withLabels("team", "batch"), affZone("batch"))
			}
			p.Spec.NodeName = name
			n.Pods = append(n.Pods, p)
		}
		nodes = append(nodes, n)
	}
	return nodes
}

// A Cache kept from one FeasibleNodes call to the next, as the simulated
// scheduler keeps one from pod to pod, changes no verdict: every kind of
// pod is judged on every node with the kept cache and without one, then
// again after pod lists were replaced (one emptied, one pod relabelled, one
// pod deleting, in a new list of the same length) and after a node left and
// RetainNodes forgot it.
func TestKeptCacheGivesTheSameFeasibility(t *testing.T) {
	nodes := cacheTestNodes()
	ns := map[string]map[string]string{"default": {"kubernetes.io/metadata.name": "default"}}
	pods := []*corev1.Pod{
		pod("web-new", "500m", "1Gi", spreadZone("web")),
		pod("edge-new", "250m", "256Mi", antiHost("edge")),
		pod("proxy-new", "100m", "128Mi", hostPort(9100)),
		pod("batch-new", "300m", "2Gi", withLabels("team", "batch"), affZone("batch")),
		pod("plain", "1", "1Gi"),
	}
	cache := packer.NewCache()
	check := func(round string) {
		t.Helper()
		all := make([]int, len(nodes))
		for i := range all {
			all[i] = i
		}
		judged := 0
		for _, p := range pods {
			want := packer.FeasibleNodes(p, nodes, all, ns)
			got := cache.FeasibleNodes(p, nodes, all, ns)
			for i := range all {
				if fmt.Sprint(got[i]) != fmt.Sprint(want[i]) {
					t.Fatalf("%s: %s on %s: with the kept cache %v, without %v", round, p.Name, nodes[i].Name, got[i], want[i])
				}
				if want[i] != nil {
					judged++
				}
			}
		}
		if judged == 0 {
			t.Fatalf("%s: every pod fits everywhere; the test checks nothing", round)
		}
	}
	check("first round")
	nodes = slices.Clone(nodes)
	nodes[1].Pods = nil
	relabelled := *nodes[4].Pods[1]
	relabelled.Labels = map[string]string{"app": "other"}
	nodes[4].Pods = []*corev1.Pod{nodes[4].Pods[0], &relabelled, nodes[4].Pods[2]}
	deleting := *nodes[7].Pods[1]
	deleting.DeletionTimestamp = &metav1.Time{}
	nodes[7].Pods = append([]*corev1.Pod{nodes[7].Pods[0], &deleting}, nodes[7].Pods[2:]...)
	check("second round")
	gone := nodes[0].Name
	nodes = nodes[1:]
	cache.RetainNodes(func(name string) bool { return name != gone })
	check("third round")
}

// A Cache kept across packings whose namespaces' labels change (a new
// labels map each time, as each snapshot builds) resolves the running pods'
// anti-affinity terms again: a guard that keeps team=web namespaces' pods
// off its node stops doing so for a namespace that loses the label.
func TestKeptCacheFollowsNamespaceLabels(t *testing.T) {
	guard := pod("guard", "100m", "128Mi")
	guard.Namespace = "ops"
	guard.Spec.NodeName = "node-0"
	guard.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
		LabelSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "web"}},
		TopologyKey:       wellknown.LabelHostname,
	}}}}
	node := packer.Node{
		Name: "node-0", NodePool: "p",
		Labels: map[string]string{
			wellknown.LabelHostname: "node-0", wellknown.LabelTopologyZone: "zone-a", wellknown.LabelNodePool: "p",
			wellknown.LabelInstanceType: "bench-4", wellknown.LabelCapacityType: wellknown.CapacityTypeOnDemand,
		},
		Allocatable: vec("4", "16Gi", "110"),
		Pods:        []*corev1.Pod{guard},
	}
	web := pod("web-1", "500m", "1Gi", withLabels("app", "web"))
	web.Namespace = "shop"
	cache := packer.NewCache()
	var placed []bool
	for _, shopLabels := range []map[string]string{{"team": "web"}, {"team": "other"}, {"team": "web"}} {
		in := packer.Input{
			Nodes: []packer.Node{node}, NodePools: []packer.NodePool{pool("p", 8)}, Pods: []*corev1.Pod{web},
			NamespaceLabels: map[string]map[string]string{"ops": {}, "shop": shopLabels},
		}
		want := packer.Solve(in)
		in.Cache = cache
		got := packer.Solve(in)
		if !reflect.DeepEqual(claimSummary(got), claimSummary(want)) {
			t.Fatalf("shop labelled %v: with the kept cache %v, without %v", shopLabels, claimSummary(got), claimSummary(want))
		}
		placed = append(placed, len(want.Placements) == 1)
	}
	if !slices.Equal(placed, []bool{false, true, false}) {
		t.Fatalf("web placed on the guard's node: %v, want only while shop is not team=web", placed)
	}
}

// A Cache kept across decisions sees each NodePool as a new copy and each
// DaemonSet pod anew; its instance-type tables stand only while what they
// were built from is the same: every packing with the kept cache equals one
// without, as the pool's taints, its instance types and the DaemonSet pods'
// requests change between them.
func TestKeptCacheTablesFollowPoolsAndDaemons(t *testing.T) {
	base := pool("p", 8)
	daemon := func(cpu string) *corev1.Pod { return pod("agent", cpu, "64Mi") }
	// The pods tolerate the taint the pool gets; the DaemonSet pod does
	// not, so that it stops counting on the pool's nodes.
	tolerant := func(p *corev1.Pod) {
		p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "x", Effect: corev1.TaintEffectNoSchedule}}
	}
	pods := []*corev1.Pod{pod("a", "1500m", "2Gi", tolerant), pod("b", "1", "1Gi", tolerant), pod("c", "700m", "3Gi", tolerant)}
	tainted := base
	tainted.Taints = []corev1.Taint{{Key: "dedicated", Value: "x", Effect: corev1.TaintEffectNoSchedule}}
	fewer := tainted
	fewer.InstanceTypes = base.InstanceTypes[len(base.InstanceTypes)-2:] // the largest
	steps := []struct {
		name    string
		pool    packer.NodePool
		daemons []*corev1.Pod
	}{
		{"first", base, []*corev1.Pod{daemon("100m")}},
		{"same pool, new copies", base, []*corev1.Pod{daemon("100m")}},
		{"bigger daemon", base, []*corev1.Pod{daemon("1500m")}},
		{"tainted pool", tainted, []*corev1.Pod{daemon("1500m")}},
		{"fewer types", fewer, []*corev1.Pod{daemon("1500m")}},
		{"no daemon", fewer, nil},
	}
	cache := packer.NewCache()
	var seen []string
	for _, st := range steps {
		np := st.pool // a copy, as each snapshot makes
		in := packer.Input{Pods: pods, NodePools: []packer.NodePool{np}, DaemonSetPods: st.daemons}
		want := packer.Solve(in)
		in.Cache = cache
		got := packer.Solve(in)
		if !reflect.DeepEqual(claimSummary(got), claimSummary(want)) {
			t.Fatalf("%s: with the kept cache %v, without %v", st.name, claimSummary(got), claimSummary(want))
		}
		seen = append(seen, fmt.Sprint(claimSummary(want)))
	}
	if seen[1] == seen[2] || seen[2] == seen[3] || seen[3] == seen[4] {
		t.Fatalf("the changes made no difference to the packing; the test checks nothing: %v", seen)
	}
}

// A kept Cache holds a type table per NodePool it packed for; RetainPools
// lets go of those of NodePools that are gone, and packing afterwards gives
// what packing without a cache gives.
func TestRetainPools(t *testing.T) {
	cache := packer.NewCache()
	solve := func(pools ...packer.NodePool) packer.Result {
		in := packer.Input{NodePools: pools, Pods: []*corev1.Pod{pod("a", "1", "1Gi"), pod("b", "2", "2Gi")}}
		want := packer.Solve(in)
		in.Cache = cache
		got := packer.Solve(in)
		if !reflect.DeepEqual(claimSummary(got), claimSummary(want)) {
			t.Fatalf("with the cache %v, without %v", claimSummary(got), claimSummary(want))
		}
		return got
	}
	solve(pool("old", 8))
	solve(pool("new", 8))
	if n := cache.Pools(); n != 2 {
		t.Fatalf("%d pools' tables kept, want 2", n)
	}
	cache.RetainPools(func(name string) bool { return name == "new" })
	if n := cache.Pools(); n != 1 {
		t.Errorf("%d pools' tables kept after RetainPools, want 1", n)
	}
	solve(pool("new", 8))
}

// A Cache kept across packings remembers pods' signatures by object, as a
// disruption decision packs the same pending pods for every candidate: a
// pod passed again as another object (same name, bigger requests) is signed
// anew, and an object left out of a packing is signed again when it
// returns. Each round is packed with the cache and without.
func TestKeptCacheSignsEachPodObject(t *testing.T) {
	base := packer.Input{NodePools: []packer.NodePool{pool("p", 8)}}
	small := make([]*corev1.Pod, 4)
	for i := range small {
		small[i] = pod(fmt.Sprintf("web-%d", i), "1", "1Gi", withLabels("app", "web"), spreadZone("web"))
	}
	bigger := *small[0]
	bigger.Spec = *small[0].Spec.DeepCopy()
	bigger.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("3")
	rounds := []struct {
		name string
		pods []*corev1.Pod
	}{
		{"the first packing", small},
		{"the same objects again", small},
		{"web-0 as another object", append([]*corev1.Pod{&bigger}, small[1:]...)},
		{"web-0's first object again", small},
	}
	cache := packer.NewCache()
	for _, r := range rounds {
		plain := base
		plain.Pods = r.pods
		cached := plain
		cached.Cache = cache
		want, got := claimSummary(packer.Solve(plain)), claimSummary(packer.Solve(cached))
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: with the cache %v, without %v", r.name, got, want)
		}
	}
	// It forgets what the last two packings did not read: a cache kept as
	// long as the cluster must not hold every pod that ever was.
	for i := range 3 {
		in := base
		in.Cache = cache
		in.Pods = []*corev1.Pod{pod(fmt.Sprintf("batch-%d", i), "1", "1Gi")}
		packer.Solve(in)
	}
	if n := packer.SignaturesKept(cache); n != 2 {
		t.Errorf("after three packings of one new pod each the cache keeps %d signatures, want 2", n)
	}
}
