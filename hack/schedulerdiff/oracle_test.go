package schedulerdiff

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func newOracle(t testing.TB) *Oracle {
	t.Helper()
	o, err := NewOracle()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.Close)
	return o
}

type nodeOpt func(*corev1.Node)

func testNode(name, zone string, opts ...nodeOpt) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name), Labels: map[string]string{LabelHostname: name, LabelZone: zone}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("2"),
			corev1.ResourceMemory: resource.MustParse("4Gi"),
			corev1.ResourcePods:   resource.MustParse("110"),
		}},
	}
	for _, o := range opts {
		o(n)
	}
	return n
}

func withTaint(key string, effect corev1.TaintEffect) nodeOpt {
	return func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Effect: effect}) }
}

func withAlloc(name corev1.ResourceName, q string) nodeOpt {
	return func(n *corev1.Node) { n.Status.Allocatable[name] = resource.MustParse(q) }
}

func withLabel(k, v string) nodeOpt {
	return func(n *corev1.Node) { n.Labels[k] = v }
}

type podOpt func(*corev1.Pod)

func testPod(name, node string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name), Labels: map[string]string{}},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main"}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func withCPU(q string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}
	}
}

func withPodLabel(k, v string) podOpt {
	return func(p *corev1.Pod) { p.Labels[k] = v }
}

func withHostPort(port int32) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: port, HostPort: port, Protocol: corev1.ProtocolTCP}}
	}
}

func withSpread(key string, when corev1.UnsatisfiableConstraintAction, app string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
			MaxSkew: 1, TopologyKey: key, WhenUnsatisfiable: when,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		})
	}
}

func withAntiAffinity(key, app string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey: key, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			}},
		}}
	}
}

func withAffinity(key, app string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey: key, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			}},
		}}
	}
}

var defaultNamespaces = map[string]map[string]string{
	"default": {corev1.LabelMetadataName: "default"},
}

// TestOracleKnownVerdicts proves the oracle is wired to the real plugins:
// each case has a verdict (and the plugin behind it) that kube-scheduler is
// known to give.
func TestOracleKnownVerdicts(t *testing.T) {
	o := newOracle(t)
	// want maps node name to "" (fits) or the plugin that must reject it
	// plus a fragment of its reason.
	type want struct{ plugin, reason string }
	cases := []struct {
		name  string
		nodes []*corev1.Node
		pods  []*corev1.Pod
		pod   *corev1.Pod
		want  map[string]want
	}{{
		name:  "untolerated NoSchedule taint",
		nodes: []*corev1.Node{testNode("a", "zone-a", withTaint("dedicated", corev1.TaintEffectNoSchedule)), testNode("b", "zone-a")},
		pod:   testPod("pending", ""),
		want:  map[string]want{"a": {"TaintToleration", "untolerated taint"}, "b": {}},
	}, {
		name:  "PreferNoSchedule taint does not filter",
		nodes: []*corev1.Node{testNode("a", "zone-a", withTaint("dedicated", corev1.TaintEffectPreferNoSchedule))},
		pod:   testPod("pending", ""),
		want:  map[string]want{"a": {}},
	}, {
		name:  "tolerated taint",
		nodes: []*corev1.Node{testNode("a", "zone-a", withTaint("dedicated", corev1.TaintEffectNoExecute))},
		pod: testPod("pending", "", func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
		}),
		want: map[string]want{"a": {}},
	}, {
		name:  "insufficient cpu",
		nodes: []*corev1.Node{testNode("a", "zone-a"), testNode("b", "zone-a")},
		pods:  []*corev1.Pod{testPod("p", "a", withCPU("1500m"))},
		pod:   testPod("pending", "", withCPU("1")),
		want:  map[string]want{"a": {"NodeResourcesFit", "Insufficient cpu"}, "b": {}},
	}, {
		name:  "too many pods",
		nodes: []*corev1.Node{testNode("a", "zone-a", withAlloc(corev1.ResourcePods, "1"))},
		pods:  []*corev1.Pod{testPod("p", "a")},
		pod:   testPod("pending", ""),
		want:  map[string]want{"a": {"NodeResourcesFit", "Too many pods"}},
	}, {
		name:  "unschedulable node",
		nodes: []*corev1.Node{testNode("a", "zone-a", func(n *corev1.Node) { n.Spec.Unschedulable = true })},
		pod:   testPod("pending", ""),
		want:  map[string]want{"a": {"NodeUnschedulable", "unschedulable"}},
	}, {
		name:  "node selector",
		nodes: []*corev1.Node{testNode("a", "zone-a", withLabel(LabelArch, "arm64")), testNode("b", "zone-b", withLabel(LabelArch, "amd64"))},
		pod:   testPod("pending", "", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{LabelArch: "amd64"} }),
		want:  map[string]want{"a": {"NodeAffinity", "node affinity/selector"}, "b": {}},
	}, {
		name:  "host port in use",
		nodes: []*corev1.Node{testNode("a", "zone-a"), testNode("b", "zone-a")},
		pods:  []*corev1.Pod{testPod("p", "a", withHostPort(8080))},
		pod:   testPod("pending", "", withHostPort(8080)),
		want:  map[string]want{"a": {"NodePorts", "free ports"}, "b": {}},
	}, {
		name:  "zone spread skew",
		nodes: []*corev1.Node{testNode("a", "zone-a"), testNode("b", "zone-b")},
		pods:  []*corev1.Pod{testPod("p1", "a", withPodLabel("app", "web")), testPod("p2", "a", withPodLabel("app", "web"))},
		pod:   testPod("pending", "", withPodLabel("app", "web"), withSpread(LabelZone, corev1.DoNotSchedule, "web")),
		want:  map[string]want{"a": {"PodTopologySpread", "topology spread constraints"}, "b": {}},
	}, {
		name:  "ScheduleAnyway spread never filters",
		nodes: []*corev1.Node{testNode("a", "zone-a"), testNode("b", "zone-b")},
		pods:  []*corev1.Pod{testPod("p1", "a", withPodLabel("app", "web")), testPod("p2", "a", withPodLabel("app", "web"))},
		pod:   testPod("pending", "", withPodLabel("app", "web"), withSpread(LabelZone, corev1.ScheduleAnyway, "web")),
		want:  map[string]want{"a": {}, "b": {}},
	}, {
		name:  "existing pod's anti-affinity",
		nodes: []*corev1.Node{testNode("a", "zone-a"), testNode("b", "zone-a"), testNode("c", "zone-b")},
		pods:  []*corev1.Pod{testPod("p", "a", withAntiAffinity(LabelZone, "web"))},
		pod:   testPod("pending", "", withPodLabel("app", "web")),
		want: map[string]want{
			"a": {"InterPodAffinity", "existing pods anti-affinity"},
			"b": {"InterPodAffinity", "existing pods anti-affinity"},
			"c": {},
		},
	}, {
		name:  "pod affinity to a zone",
		nodes: []*corev1.Node{testNode("a", "zone-a"), testNode("b", "zone-a"), testNode("c", "zone-b")},
		pods:  []*corev1.Pod{testPod("p", "b", withPodLabel("app", "db"))},
		pod:   testPod("pending", "", withAffinity(LabelZone, "db")),
		want:  map[string]want{"a": {}, "b": {}, "c": {"InterPodAffinity", "pod affinity rules"}},
	}, {
		name:  "pod affinity with no match anywhere",
		nodes: []*corev1.Node{testNode("a", "zone-a")},
		pod:   testPod("pending", "", withAffinity(LabelZone, "db")),
		want:  map[string]want{"a": {"InterPodAffinity", "pod affinity rules"}},
	}, {
		name:  "pod affinity satisfied by the pod itself when nothing matches",
		nodes: []*corev1.Node{testNode("a", "zone-a")},
		pod:   testPod("pending", "", withPodLabel("app", "db"), withAffinity(LabelZone, "db")),
		want:  map[string]want{"a": {}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &Cluster{Nodes: tc.nodes, Pods: tc.pods, Pod: tc.pod, Namespaces: defaultNamespaces}
			got, err := o.Filter(c)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range got {
				w, ok := tc.want[v.Node]
				if !ok {
					t.Fatalf("no expectation for node %s", v.Node)
				}
				if w.plugin == "" {
					if !v.Fits {
						t.Errorf("node %s: want fits, got %v", v.Node, v)
					}
					continue
				}
				if v.Fits || v.Plugin != w.plugin || !strings.Contains(strings.Join(v.Reasons, "; "), w.reason) {
					t.Errorf("node %s: want rejected by %s (%q), got %v", v.Node, w.plugin, w.reason, v)
				}
			}
		})
	}
}

// TestOracleAllReasons checks that a node failing several filters lists
// every one of them.
func TestOracleAllReasons(t *testing.T) {
	o := newOracle(t)
	c := &Cluster{
		Nodes: []*corev1.Node{testNode("a", "zone-a", withTaint("dedicated", corev1.TaintEffectNoSchedule),
			func(n *corev1.Node) { n.Spec.Unschedulable = true })},
		Pod:        testPod("pending", "", withCPU("3")),
		Namespaces: defaultNamespaces,
	}
	got, err := o.Filter(c)
	if err != nil {
		t.Fatal(err)
	}
	reasons := strings.Join(got[0].Reasons, "; ")
	for _, want := range []string{"NodeUnschedulable:", "TaintToleration:", "NodeResourcesFit: Insufficient cpu"} {
		if !strings.Contains(reasons, want) {
			t.Errorf("reasons %q lack %q", reasons, want)
		}
	}
}

// TestOracleNamespaceSelector checks that namespace labels reach
// InterPodAffinity: the same anti-affinity term rejects or admits depending
// on the labels of the namespace the other pod runs in.
func TestOracleNamespaceSelector(t *testing.T) {
	o := newOracle(t)
	for _, team := range []string{"a", "b"} {
		other := testPod("p", "a", withPodLabel("app", "web"))
		other.Namespace = "team-x"
		pod := testPod("pending", "", withAntiAffinity(LabelHostname, "web"))
		pod.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].NamespaceSelector =
			&metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
		c := &Cluster{
			Nodes: []*corev1.Node{testNode("a", "zone-a")},
			Pods:  []*corev1.Pod{other},
			Pod:   pod,
			Namespaces: map[string]map[string]string{
				"default": {corev1.LabelMetadataName: "default"},
				"team-x":  {corev1.LabelMetadataName: "team-x", "team": team},
			},
		}
		got, err := o.Filter(c)
		if err != nil {
			t.Fatal(err)
		}
		if wantFits := team == "b"; got[0].Fits != wantFits {
			t.Errorf("namespace team=%s: got %v, want fits=%v", team, got[0], wantFits)
		}
	}
}

// TestGenerateDeterministic checks that a seed fixes the cluster.
func TestGenerateDeterministic(t *testing.T) {
	for seed := range uint64(20) {
		a := Generate(rand.New(rand.NewPCG(seed, 0)))
		b := Generate(rand.New(rand.NewPCG(seed, 0)))
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("seed %d: two clusters differ", seed)
		}
	}
}

// TestOracleOnGeneratedClusters runs the oracle on generated clusters: it
// must never error, and over many clusters every filter must both reject
// and admit somewhere, or the generator is not exercising it.
func TestOracleOnGeneratedClusters(t *testing.T) {
	o := newOracle(t)
	rejected := map[string]int{}
	fits := 0
	for seed := range uint64(300) {
		c := Generate(rand.New(rand.NewPCG(seed, 1)))
		got, err := o.Filter(c)
		if err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, c.Describe(-1))
		}
		for _, v := range got {
			if v.Fits {
				fits++
				continue
			}
			for _, r := range v.Reasons {
				rejected[strings.SplitN(r, ":", 2)[0]]++
			}
		}
	}
	t.Logf("fits %d, rejections by plugin %v", fits, rejected)
	if fits == 0 {
		t.Error("no node ever fits")
	}
	for _, name := range FilterPlugins {
		if rejected[name] == 0 {
			t.Errorf("%s never rejects a node", name)
		}
	}
}

// TestShrink checks the shrinker on the oracle alone: a node that
// PodTopologySpread rejects shrinks to a small case it still rejects.
func TestShrink(t *testing.T) {
	o := newOracle(t)
	spreadRejects := func(c *Cluster, i int) bool {
		v, err := o.Filter(c)
		if err != nil {
			t.Fatal(err)
		}
		// The skew reason, not the one for a node missing the key.
		return !v[i].Fits && slices.Contains(v[i].Reasons, "PodTopologySpread: node(s) didn't match pod topology spread constraints")
	}
	for seed := range uint64(1000) {
		c := Generate(rand.New(rand.NewPCG(seed, 0)))
		for i := range c.Nodes {
			if !spreadRejects(c, i) || len(c.Pods) < 3 {
				continue
			}
			small, target := Shrink(c, i, spreadRejects)
			if !spreadRejects(small, target) {
				t.Fatalf("seed %d: the shrunk case no longer holds", seed)
			}
			if len(small.Pods) >= len(c.Pods) || len(small.Pod.Spec.TopologySpreadConstraints) != 1 {
				t.Errorf("seed %d: shrunk case is not smaller:\n%s", seed, small.Describe(target))
			}
			t.Logf("seed %d shrunk from %d nodes and %d pods to:\n%s", seed, len(c.Nodes), len(c.Pods), small.Describe(target))
			return
		}
	}
	t.Fatal("no generated cluster has a node that PodTopologySpread rejects")
}
