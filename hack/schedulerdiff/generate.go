package schedulerdiff

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// Label keys of the generated nodes. A small vocabulary keeps collisions
// (the interesting cases) frequent.
const (
	LabelZone       = corev1.LabelTopologyZone
	LabelHostname   = corev1.LabelHostname
	LabelArch       = corev1.LabelArchStable
	LabelTier       = "example.com/tier"
	LabelGeneration = "example.com/generation"
	labelAbsent     = "example.com/absent"

	resourceGPU = corev1.ResourceName("example.com/gpu")
)

var (
	zones       = []string{"zone-a", "zone-b", "zone-c"}
	arches      = []string{"amd64", "arm64"}
	tiers       = []string{"gold", "silver", "bronze"}
	generations = []string{"1", "3", "5", "7", "x"}
	namespaces  = []string{"default", "team-a", "team-b"}
	taintKeys   = []string{"dedicated", "example.com/gpu", "spot", "example.com/maintenance"}
	taintValues = []string{"", "a", "b"}
	effects     = []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}
	// Pod labels, by key.
	podLabels = map[string][]string{
		"app":               {"web", "web", "db", "cache"},
		"version":           {"v1", "v2"},
		"team":              {"a", "b"},
		"pod-template-hash": {"h1", "h2"},
	}
	podLabelKeys = []string{"app", "version", "team", "pod-template-hash"}
)

type gen struct {
	r     *rand.Rand
	nodes int
}

func (g *gen) p(prob float64) bool { return g.r.Float64() < prob }

func pick[T any](g *gen, xs []T) T { return xs[g.r.IntN(len(xs))] }

// Generate draws a cluster: 1–6 nodes, 0–8 pods bound to them, 3 namespaces
// and a pending pod with a random mix of scheduling constraints. Objects are
// drawn to respect the API's validation rules and defaults (unique taint
// key/effect pairs, Exists for an empty toleration key, one integer for
// Gt/Lt, minDomains only with DoNotSchedule, explicit port protocols), though
// they are not run through the API server's validation. The same rng state
// gives the same cluster.
func Generate(r *rand.Rand) *Cluster {
	g := &gen{r: r, nodes: 1 + r.IntN(6)}
	c := &Cluster{Namespaces: map[string]map[string]string{}}
	for _, ns := range namespaces {
		l := map[string]string{corev1.LabelMetadataName: ns}
		if g.p(0.6) {
			l["team"] = pick(g, []string{"a", "b"})
		}
		if g.p(0.5) {
			l["env"] = pick(g, []string{"prod", "dev"})
		}
		c.Namespaces[ns] = l
	}
	for i := range g.nodes {
		c.Nodes = append(c.Nodes, g.node(i))
	}
	for i := range g.r.IntN(9) {
		p := g.pod(fmt.Sprintf("p-%d", i), false)
		p.Spec.NodeName = pick(g, c.Nodes).Name
		c.Pods = append(c.Pods, p)
	}
	c.Pod = g.pod("pending", true)
	if g.p(0.4) {
		// Replicas of the pending pod's workload: the pods its spread and
		// affinity terms are most often written about.
		for _, p := range c.Pods {
			if g.p(0.5) {
				p.Namespace = c.Pod.Namespace
				p.Labels = maps.Clone(c.Pod.Labels)
			}
		}
	}
	return c
}

func nodeName(i int) string { return fmt.Sprintf("node-%d", i) }

func (g *gen) node(i int) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: nodeName(i), Labels: map[string]string{}, UID: types.UID("uid-" + nodeName(i))},
	}
	if g.p(0.95) {
		n.Labels[LabelZone] = pick(g, zones)
	}
	if g.p(0.97) {
		n.Labels[LabelHostname] = n.Name
	}
	if g.p(0.9) {
		n.Labels[LabelArch] = pick(g, arches)
	}
	if g.p(0.6) {
		n.Labels[LabelTier] = pick(g, tiers)
	}
	if g.p(0.5) {
		n.Labels[LabelGeneration] = pick(g, generations)
	}
	seen := map[string]bool{}
	for range g.r.IntN(3) {
		if !g.p(0.4) {
			continue
		}
		t := corev1.Taint{Key: pick(g, taintKeys), Value: pick(g, taintValues), Effect: pick(g, effects)}
		if k := t.Key + ":" + string(t.Effect); !seen[k] {
			seen[k] = true
			n.Spec.Taints = append(n.Spec.Taints, t)
		}
	}
	if g.p(0.15) {
		n.Spec.Unschedulable = true
		if g.p(0.5) {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule})
		}
	}
	n.Status.Allocatable = corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(pick(g, []string{"1", "2", "4", "8"})),
		corev1.ResourceMemory: resource.MustParse(pick(g, []string{"1Gi", "2Gi", "4Gi", "8Gi"})),
		corev1.ResourcePods:   resource.MustParse(pick(g, []string{"2", "3", "5", "110", "110", "110"})),
	}
	if g.p(0.2) {
		n.Status.Allocatable[corev1.ResourceEphemeralStorage] = resource.MustParse(pick(g, []string{"1Gi", "10Gi"}))
	}
	if g.p(0.15) {
		n.Status.Allocatable[resourceGPU] = resource.MustParse(pick(g, []string{"0", "1", "2"}))
	}
	n.Status.Capacity = n.Status.Allocatable.DeepCopy()
	return n
}

func (g *gen) labels(prob float64) map[string]string {
	l := map[string]string{}
	for _, k := range podLabelKeys {
		if g.p(prob) {
			l[k] = pick(g, podLabels[k])
		}
	}
	return l
}

func (g *gen) requests(pending bool) corev1.ResourceList {
	l := corev1.ResourceList{}
	if cpu := pick(g, []string{"", "100m", "250m", "500m", "1"}); cpu != "" {
		l[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem := pick(g, []string{"", "128Mi", "256Mi", "512Mi", "1Gi"}); mem != "" {
		l[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	if g.p(0.03) {
		l[corev1.ResourceEphemeralStorage] = resource.MustParse(pick(g, []string{"500Mi", "2Gi"}))
	}
	if g.p(0.03) {
		l[resourceGPU] = resource.MustParse(pick(g, []string{"1", "2"}))
	}
	if pending && g.p(0.03) {
		// A request of zero fits anywhere, even where the node lacks it.
		l[resourceGPU] = resource.MustParse("0")
	}
	return l
}

func container(name string, req corev1.ResourceList) corev1.Container {
	c := corev1.Container{Name: name, Image: "registry.example/app"}
	if len(req) > 0 {
		c.Resources.Requests = req
		// Extended resources must have limits equal to requests.
		for k, q := range req {
			if k == resourceGPU {
				c.Resources.Limits = corev1.ResourceList{k: q.DeepCopy()}
			}
		}
	}
	return c
}

func (g *gen) hostPort() corev1.ContainerPort {
	port := pick(g, []int32{8080, 8080, 9090})
	p := corev1.ContainerPort{ContainerPort: port, HostPort: port, Protocol: corev1.ProtocolTCP}
	if g.p(0.25) {
		p.Protocol = pick(g, []corev1.Protocol{corev1.ProtocolUDP, corev1.ProtocolSCTP})
	}
	p.HostIP = pick(g, []string{"", "", "0.0.0.0", "10.0.0.1", "10.0.0.2"})
	return p
}

func (g *gen) pod(name string, pending bool) *corev1.Pod {
	ns := pick(g, []string{"default", "default", "default", namespaces[1], namespaces[2]})
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + ns + "-" + name), Labels: g.labels(0.7)},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{container("main", g.requests(pending))},
		},
	}
	if pending && g.p(0.3) {
		p.Spec.Containers = append(p.Spec.Containers, container("helper", g.requests(pending)))
	}
	if g.p(0.15) || (pending && g.p(0.1)) {
		p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, g.hostPort())
	}
	if pending && g.p(0.3) {
		for i := range 1 + g.r.IntN(2) {
			c := container(fmt.Sprintf("init-%d", i), g.requests(pending))
			if g.p(0.3) {
				c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
			}
			p.Spec.InitContainers = append(p.Spec.InitContainers, c)
		}
	}
	if pending && g.p(0.05) {
		p.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("128Mi")}
	}
	if pending && g.p(0.05) {
		g.podLevelResources(p)
	}

	aff := &corev1.Affinity{}
	if pending {
		if g.p(0.2) {
			p.Spec.NodeSelector = map[string]string{}
			for range 1 + g.r.IntN(2) {
				k, v := g.nodeLabel()
				p.Spec.NodeSelector[k] = v
			}
		}
		if g.p(0.25) {
			req := &corev1.NodeSelector{}
			for range 1 + g.r.IntN(3) {
				req.NodeSelectorTerms = append(req.NodeSelectorTerms, g.nodeTerm())
			}
			aff.NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: req}
		}
		if g.p(0.2) {
			if aff.NodeAffinity == nil {
				aff.NodeAffinity = &corev1.NodeAffinity{}
			}
			aff.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(aff.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
				corev1.PreferredSchedulingTerm{Weight: 1 + g.r.Int32N(100), Preference: g.nodeTerm()})
		}
		if g.p(0.4) {
			for range 1 + g.r.IntN(3) {
				p.Spec.Tolerations = append(p.Spec.Tolerations, g.toleration())
			}
		}
		if g.p(0.4) {
			g.spread(p)
		}
	}
	affProb, antiProb := 0.15, 0.25
	if !pending {
		affProb, antiProb = 0.1, 0.2
	}
	if g.p(affProb) {
		aff.PodAffinity = &corev1.PodAffinity{}
		for range 1 + g.r.IntN(2) {
			aff.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(aff.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, g.podTerm())
		}
	}
	if g.p(antiProb) {
		aff.PodAntiAffinity = &corev1.PodAntiAffinity{}
		for range 1 + g.r.IntN(2) {
			aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, g.podTerm())
		}
	}
	if g.p(0.15) {
		if aff.PodAffinity == nil {
			aff.PodAffinity = &corev1.PodAffinity{}
		}
		aff.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(aff.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
			corev1.WeightedPodAffinityTerm{Weight: 1 + g.r.Int32N(100), PodAffinityTerm: g.podTerm()})
	}
	if g.p(0.15) {
		if aff.PodAntiAffinity == nil {
			aff.PodAntiAffinity = &corev1.PodAntiAffinity{}
		}
		aff.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(aff.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
			corev1.WeightedPodAffinityTerm{Weight: 1 + g.r.Int32N(100), PodAffinityTerm: g.podTerm()})
	}
	if aff.NodeAffinity != nil || aff.PodAffinity != nil || aff.PodAntiAffinity != nil {
		p.Spec.Affinity = aff
	}
	return p
}

// podLevelResources sets spec.resources.requests to at least what the
// containers need (the sum over containers and sidecars plus the largest
// init container), as validation demands.
func (g *gen) podLevelResources(p *corev1.Pod) {
	req := corev1.ResourceList{}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if !g.p(0.7) {
			continue
		}
		var sum resource.Quantity
		for _, c := range p.Spec.Containers {
			if q, ok := c.Resources.Requests[name]; ok {
				sum.Add(q)
			}
		}
		var initMax resource.Quantity
		for _, c := range p.Spec.InitContainers {
			q, ok := c.Resources.Requests[name]
			switch {
			case !ok:
			case c.RestartPolicy != nil:
				sum.Add(q)
			case q.Cmp(initMax) > 0:
				initMax = q
			}
		}
		sum.Add(initMax)
		extra := resource.MustParse(pick(g, []string{"0", "100m", "500m"}))
		if name == corev1.ResourceMemory {
			extra = resource.MustParse(pick(g, []string{"0", "64Mi", "512Mi"}))
		}
		sum.Add(extra)
		if sum.Sign() > 0 {
			req[name] = sum
		}
	}
	if len(req) > 0 {
		p.Spec.Resources = &corev1.ResourceRequirements{Requests: req}
	}
}

// nodeLabel draws a node label key and a value nodes may have for it.
func (g *gen) nodeLabel() (string, string) {
	switch g.r.IntN(10) {
	case 0, 1, 2:
		return LabelZone, pick(g, zones)
	case 3:
		return LabelHostname, nodeName(g.r.IntN(g.nodes))
	case 4, 5:
		return LabelArch, pick(g, arches)
	case 6, 7:
		return LabelTier, pick(g, tiers)
	case 8:
		return LabelGeneration, pick(g, generations)
	default:
		return labelAbsent, "yes"
	}
}

func (g *gen) nodeTerm() corev1.NodeSelectorTerm {
	var t corev1.NodeSelectorTerm
	if g.p(0.03) {
		t.MatchFields = []corev1.NodeSelectorRequirement{{
			Key: metav1.ObjectNameField, Operator: pick(g, []corev1.NodeSelectorOperator{corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn}),
			Values: []string{nodeName(g.r.IntN(g.nodes))},
		}}
		return t
	}
	n := 1 + g.r.IntN(2)
	if g.p(0.03) {
		n = 0 // an empty term matches no node
	}
	for range n {
		k, v := g.nodeLabel()
		r := corev1.NodeSelectorRequirement{Key: k}
		switch g.r.IntN(6) {
		case 0:
			r.Operator = corev1.NodeSelectorOpIn
			r.Values = []string{v}
			if g.p(0.4) {
				_, v2 := g.nodeLabelFor(k)
				if v2 != v {
					r.Values = append(r.Values, v2)
				}
			}
		case 1:
			r.Operator = corev1.NodeSelectorOpNotIn
			r.Values = []string{v}
		case 2:
			r.Operator = corev1.NodeSelectorOpExists
		case 3:
			r.Operator = corev1.NodeSelectorOpDoesNotExist
		default:
			r.Operator = pick(g, []corev1.NodeSelectorOperator{corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt})
			if g.p(0.8) {
				r.Key = LabelGeneration
			}
			r.Values = []string{strconv.Itoa(g.r.IntN(9))}
		}
		t.MatchExpressions = append(t.MatchExpressions, r)
	}
	return t
}

func (g *gen) nodeLabelFor(key string) (string, string) {
	for {
		k, v := g.nodeLabel()
		if k == key {
			return k, v
		}
	}
}

func (g *gen) toleration() corev1.Toleration {
	var t corev1.Toleration
	switch g.r.IntN(10) {
	case 0:
		t.Key = ""
	case 1:
		t.Key = corev1.TaintNodeUnschedulable
	default:
		t.Key = pick(g, taintKeys)
	}
	switch {
	case t.Key == "" || g.p(0.4):
		t.Operator = corev1.TolerationOpExists
	case g.p(0.5):
		t.Operator = corev1.TolerationOpEqual
		t.Value = pick(g, taintValues)
	default:
		t.Value = pick(g, taintValues) // operator defaults to Equal
	}
	if g.p(0.6) {
		t.Effect = pick(g, effects)
	}
	if t.Effect == corev1.TaintEffectNoExecute && g.p(0.5) {
		t.TolerationSeconds = ptr.To(int64(60))
	}
	return t
}

func (g *gen) selector() *metav1.LabelSelector {
	switch g.r.IntN(20) {
	case 0:
		return nil
	case 1:
		return &metav1.LabelSelector{}
	}
	s := &metav1.LabelSelector{}
	for range 1 + g.r.IntN(2) {
		k := pick(g, podLabelKeys[:3])
		if g.p(0.6) {
			if s.MatchLabels == nil {
				s.MatchLabels = map[string]string{}
			}
			s.MatchLabels[k] = pick(g, podLabels[k])
			continue
		}
		r := metav1.LabelSelectorRequirement{Key: k}
		switch g.r.IntN(4) {
		case 0:
			r.Operator = metav1.LabelSelectorOpIn
			r.Values = []string{pick(g, podLabels[k])}
		case 1:
			r.Operator = metav1.LabelSelectorOpNotIn
			r.Values = []string{pick(g, podLabels[k])}
		case 2:
			r.Operator = metav1.LabelSelectorOpExists
		default:
			r.Operator = metav1.LabelSelectorOpDoesNotExist
		}
		s.MatchExpressions = append(s.MatchExpressions, r)
	}
	return s
}

func (g *gen) podTerm() corev1.PodAffinityTerm {
	t := corev1.PodAffinityTerm{LabelSelector: g.selector()}
	switch g.r.IntN(10) {
	case 0:
		t.TopologyKey = LabelTier
	case 1, 2, 3, 4:
		t.TopologyKey = LabelZone
	default:
		t.TopologyKey = LabelHostname
	}
	switch g.r.IntN(10) {
	case 0, 1:
		t.Namespaces = []string{pick(g, namespaces)}
		if g.p(0.5) {
			t.Namespaces = append(t.Namespaces, pick(g, namespaces))
		}
	case 2:
		t.NamespaceSelector = &metav1.LabelSelector{} // every namespace
	case 3, 4:
		t.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": pick(g, []string{"a", "b"})}}
		if g.p(0.3) {
			t.Namespaces = []string{pick(g, namespaces)}
		}
	}
	return t
}

func (g *gen) spread(p *corev1.Pod) {
	seen := map[string]bool{}
	for range 1 + g.r.IntN(2) {
		c := corev1.TopologySpreadConstraint{MaxSkew: 1, WhenUnsatisfiable: corev1.DoNotSchedule}
		switch g.r.IntN(20) {
		case 0:
			c.TopologyKey = LabelTier
		case 1, 2, 3, 4, 5, 6:
			c.TopologyKey = LabelHostname
		default:
			c.TopologyKey = LabelZone
		}
		if g.p(0.25) {
			c.MaxSkew = 2
		}
		if g.p(0.3) {
			c.WhenUnsatisfiable = corev1.ScheduleAnyway
		}
		if k := c.TopologyKey + string(c.WhenUnsatisfiable); seen[k] {
			continue
		} else {
			seen[k] = true
		}
		if c.WhenUnsatisfiable == corev1.DoNotSchedule && g.p(0.25) {
			c.MinDomains = ptr.To(1 + g.r.Int32N(4))
		}
		policies := []*corev1.NodeInclusionPolicy{nil, nil, ptr.To(corev1.NodeInclusionPolicyHonor), ptr.To(corev1.NodeInclusionPolicyIgnore)}
		c.NodeAffinityPolicy = pick(g, policies)
		c.NodeTaintsPolicy = pick(g, policies)
		switch g.r.IntN(20) {
		case 0:
			// nil selector: matches no pod
		case 1:
			c.LabelSelector = &metav1.LabelSelector{}
		default:
			app := p.Labels["app"]
			if app == "" || g.p(0.2) {
				app = pick(g, podLabels["app"])
			}
			c.LabelSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
		}
		if c.LabelSelector != nil && g.p(0.2) {
			c.MatchLabelKeys = []string{pick(g, []string{"version", "team", "pod-template-hash"})}
		}
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, c)
	}
}
