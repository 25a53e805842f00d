package packer

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/stevedore-autoscaler/stevedore/scheduling/requirements"
	"github.com/stevedore-autoscaler/stevedore/scheduling/resources"
	"github.com/stevedore-autoscaler/stevedore/scheduling/taints"
)

// Feasible reports whether pod may run on nodes[i], given the pods already on
// every node, with the verdict of kube-scheduler's NodeUnschedulable,
// NodeResourcesFit, NodeAffinity, TaintToleration, NodePorts,
// InterPodAffinity and PodTopologySpread filters; nil means it fits. The
// error reads like the scheduler's reason.
//
// It runs the same checks the packer runs, on a state built from nodes alone:
// no new node can be opened, so a hostname spread constraint compares against
// the least loaded eligible node, as the scheduler does.
//
// Building that state visits every node and every pod on them; to judge one
// pod on many nodes, FeasibleNodes builds it once.
func Feasible(pod *corev1.Pod, nodes []Node, i int, namespaceLabels map[string]map[string]string) error {
	if i < 0 || i >= len(nodes) {
		return fmt.Errorf("node index %d out of range [0, %d)", i, len(nodes))
	}
	return newFeasibility(pod, nodes, namespaceLabels, nil).on(i)
}

// FeasibleNodes reports Feasible's verdict for pod on each of the nodes
// whose indexes are candidates: out[k] is Feasible(pod, nodes, candidates[k],
// namespaceLabels), error for error. The view of the cluster is built once
// for all of them, so a scheduler that asks about every node pays for one
// Feasible call instead of one per node.
func FeasibleNodes(pod *corev1.Pod, nodes []Node, candidates []int, namespaceLabels map[string]map[string]string) []error {
	return (*Cache)(nil).FeasibleNodes(pod, nodes, candidates, namespaceLabels)
}

// FeasibleNodes is the package's FeasibleNodes with what it derives from
// each node's pods (host ports, spread keys, anti-affinity terms, how many
// pods a term selects) kept in c for the next call: a scheduler that asks
// about pod after pod, on nodes whose pods mostly stay the same, then pays
// for a node's pods only when they change. What c keeps is found again only
// for a node with the very pod list it was derived from (the same slice and
// length, which the caller must not change in place), and anti-affinity
// terms are resolved again for another namespace-labels map (change labels
// by passing a new map, not in place). A nil c keeps nothing between calls.
func (c *Cache) FeasibleNodes(pod *corev1.Pod, nodes []Node, candidates []int, namespaceLabels map[string]map[string]string) []error {
	out := make([]error, len(candidates))
	var f *feasibility
	for k, i := range candidates {
		if i < 0 || i >= len(nodes) {
			out[k] = fmt.Errorf("node index %d out of range [0, %d)", i, len(nodes))
			continue
		}
		if f == nil {
			f = newFeasibility(pod, nodes, namespaceLabels, c)
		}
		out[k] = f.on(i)
	}
	return out
}

// fullFeasibility turns off the shortcut of newFeasibility for pods whose
// verdict needs no topology; the tests compare the two.
var fullFeasibility = false

// feasibility is one pod compiled against the state of a set of nodes,
// ready to be checked on any of them. Checking reads the state (it only
// memoizes which nodes a spread constraint counts), so the verdict on a
// node does not depend on which nodes were checked before it.
type feasibility struct {
	pod   *corev1.Pod
	nodes []Node
	// fieldAff is the pod's required node affinity when it uses
	// matchFields: it is judged per node with the API's own matcher, as it
	// cannot be expressed as label requirements.
	fieldAff *nodeaffinity.RequiredNodeAffinity
	// err, when set, is the verdict on every node (after the matchFields
	// checks).
	err error
	s   *state
	sh  *shape
	v   *variant
	// light, when set, holds the bins of the nodes checked so far, built
	// one by one: the pod's verdict needs no topology (see newFeasibility).
	light []*bin
}

func newFeasibility(pod *corev1.Pod, nodes []Node, namespaceLabels map[string]map[string]string, cache *Cache) *feasibility {
	f := &feasibility{pod: pod, nodes: nodes}
	s := newState(namespaceLabels, false)
	// Node affinity with matchFields is judged per node (on) and dropped
	// from the compiled pod. Spread constraints that honour node affinity
	// still need it to decide which nodes they count, so keep the matcher
	// for them.
	compiled := pod
	if _, err := requirements.FromPod(pod); errors.Is(err, requirements.ErrMatchFields) {
		m := nodeaffinity.GetRequiredNodeAffinity(pod)
		f.fieldAff = &m
		compiled = pod.DeepCopy()
		compiled.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = nil
	} else if err != nil {
		f.err = errors.New("node(s) didn't match Pod's node affinity/selector")
		return f
	}
	c := &compiler{s: s, shapes: map[string]*shape{}}
	sh, err := c.compile(compiled, nil, false)
	if err != nil {
		f.err = err
		return f
	}
	if f.fieldAff != nil {
		for _, sc := range sh.spread {
			if sc.g.honorAff {
				sc.g.nodeAff = f.fieldAff
			}
		}
	}
	if !fullFeasibility && len(sh.spread) == 0 && len(sh.aff) == 0 && len(sh.anti) == 0 && len(sh.ports) == 0 && !s.selectedByAntiAffinity(nodes, sh) {
		// Nothing about the pod depends on where other pods are: no
		// required spread, pod (anti-)affinity or host port of its own,
		// and no running pod's required anti-affinity selects it. The
		// verdict then rests on each node alone, and the view of the whole
		// cluster (every pod counted into every group) is not built; the
		// nodes checked get their bins as addNode would build them, less
		// the domains and ports nothing will read.
		s.link(sh)
		f.s, f.sh, f.v = s, sh, s.newVariant(sh, nil, taints.Blocking)
		f.light = make([]*bin, len(nodes))
		return f
	}
	// addNode and addOwnerGroups both read each node's facts: without a
	// cache from the caller, derive them once for this call. The spread
	// keys come from the facts too: reading every pod of the cluster for
	// them, for each pod the simulated scheduler checked, cost more than
	// the check.
	if cache == nil {
		cache = NewCache()
	}
	cache.compact()
	cache.scratch.reset()
	s.cache = cache
	// The facts go into the scratch that the cache lends this packing
	// (as Solve's do): this runs for every pod the scheduler checks.
	sc := &cache.scratch
	if cap(sc.facts) < len(nodes) {
		sc.facts = make([]*nodeFacts, len(nodes))
	}
	facts := sc.facts[:len(nodes)]
	for k := range nodes {
		facts[k] = cache.factsFor(&nodes[k])
	}
	s.indexSpreadKeys(facts)
	s.reserveNodeBins(len(nodes), len(s.keys))
	for k := range nodes {
		s.addNode(&nodes[k], facts[k])
	}
	s.addOwnerGroups(nodes)
	for _, b := range s.bins {
		for len(b.dom) < len(s.keys) {
			b.dom = append(b.dom, s.binDomain(b, len(b.dom)))
		}
	}
	s.countExisting()
	s.registerDomains()
	s.link(sh)
	f.s, f.sh, f.v = s, sh, s.newVariant(sh, nil, taints.Blocking)
	return f
}

// on is the verdict on nodes[i].
func (f *feasibility) on(i int) error {
	pod, n := f.pod, &f.nodes[i]
	if f.fieldAff != nil && (!n.Unschedulable || taints.Tolerates(pod.Spec.Tolerations, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule})) {
		if ok, t := taints.ToleratesAll(pod.Spec.Tolerations, n.Taints, taints.Blocking); ok {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels}}
			if m, _ := f.fieldAff.Match(node); !m {
				return errors.New("node(s) didn't match Pod's node affinity/selector")
			}
		} else {
			return fmt.Errorf("node(s) had untolerated taint {%s: %s}", t.Key, t.Value)
		}
	}
	if f.err != nil {
		return f.err
	}
	var out outcome
	var b *bin
	if f.light != nil {
		if f.light[i] == nil {
			f.light[i] = lightBin(n, i)
		}
		b = f.light[i]
	} else {
		b = f.s.bins[i]
	}
	f.s.check(f.v, b, &out)
	switch out.code {
	case okCode:
		return nil
	case failTaint:
		return fmt.Errorf("node(s) had untolerated taint {%s: %s}", out.taint.Key, out.taint.Value)
	case failResources:
		var reasons []string
		for _, name := range f.sh.req.Insufficient(availableOn(b)) {
			if name == corev1.ResourcePods {
				reasons = append(reasons, "Too many pods")
				continue
			}
			reasons = append(reasons, "Insufficient "+string(name))
		}
		if len(reasons) == 0 {
			reasons = append(reasons, "Insufficient resources")
		}
		return errors.New(strings.Join(reasons, ", "))
	}
	return errors.New(out.code.String())
}

// selectedByAntiAffinity reports whether a required anti-affinity term of a
// pod on the nodes selects the shape's pod: whether the owner groups that
// addOwnerGroups would make (same pods, same terms, same resolution) would
// forbid it any domain.
func (s *state) selectedByAntiAffinity(nodes []Node, sh *shape) bool {
	for k := range nodes {
		for _, p := range nodes[k].Pods {
			a := p.Spec.Affinity
			if a == nil || a.PodAntiAffinity == nil || p.DeletionTimestamp != nil {
				continue
			}
			for _, t := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				rt, err := s.resolveTerm(p, t)
				if err == nil && rt.matches(sh.ns, sh.labels) {
					return true
				}
			}
		}
	}
	return false
}

// lightBin is the bin addNode builds for node n at index i, without the
// topology domains and host ports, for a check that reads neither.
func lightBin(n *Node, i int) *bin {
	b := &bin{id: i, node: n, inflight: n.InFlight, labels: n.Labels, taints: n.Taints, unsched: n.Unschedulable, alloc: n.Allocatable}
	if n.Requested != nil {
		b.used = n.Requested.Clone()
	} else {
		for _, p := range n.Pods {
			b.used.Add(resources.PodVector(p))
		}
	}
	b.npods = len(n.Pods)
	return b
}
