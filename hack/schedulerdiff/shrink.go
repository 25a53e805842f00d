package schedulerdiff

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// A mutation simplifies a copy of a cluster in one small way and returns
// the index of the target node in it (nodes may be removed), or -1 when it
// does not apply.
type mutation func(c *Cluster, target int) int

// Shrink returns the smallest cluster it can reach from c by removing
// nodes, pods, labels, taints, constraints and requests one at a time while
// still(c, target) holds, and the target node's index in it. still must
// hold for c itself.
func Shrink(c *Cluster, target int, still func(c *Cluster, target int) bool) (*Cluster, int) {
	for {
		progressed := false
		for _, m := range mutations(c) {
			next := c.DeepCopy()
			t := m(next, target)
			if t < 0 || !still(next, t) {
				continue
			}
			c, target, progressed = next, t, true
			break
		}
		if !progressed {
			return c, target
		}
	}
}

// mutations lists every one-step simplification of c, biggest first.
func mutations(c *Cluster) []mutation {
	var ms []mutation
	add := func(m mutation) { ms = append(ms, m) }
	// keep wraps a mutation that never moves the target.
	keep := func(f func(c *Cluster) bool) mutation {
		return func(c *Cluster, target int) int {
			if !f(c) {
				return -1
			}
			return target
		}
	}

	for j := range c.Nodes {
		add(func(c *Cluster, target int) int {
			if j == target || j >= len(c.Nodes) {
				return -1
			}
			name := c.Nodes[j].Name
			c.Nodes = slices.Delete(c.Nodes, j, j+1)
			c.Pods = slices.DeleteFunc(c.Pods, func(p *corev1.Pod) bool { return p.Spec.NodeName == name })
			if j < target {
				return target - 1
			}
			return target
		})
	}
	for k := range c.Pods {
		add(keep(func(c *Cluster) bool { c.Pods = slices.Delete(c.Pods, k, k+1); return true }))
	}

	// The pending pod's constraints, then its shape.
	pods := func(c *Cluster) []*corev1.Pod { return append([]*corev1.Pod{c.Pod}, c.Pods...) }
	for pi, p := range pods(c) {
		at := func(c *Cluster) *corev1.Pod { return pods(c)[pi] }
		if a := p.Spec.Affinity; a != nil {
			add(keep(func(c *Cluster) bool { at(c).Spec.Affinity = nil; return true }))
			if na := a.NodeAffinity; na != nil {
				add(keep(func(c *Cluster) bool { at(c).Spec.Affinity.NodeAffinity = nil; return true }))
				if na.PreferredDuringSchedulingIgnoredDuringExecution != nil {
					add(keep(func(c *Cluster) bool {
						at(c).Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = nil
						return true
					}))
				}
				if r := na.RequiredDuringSchedulingIgnoredDuringExecution; r != nil {
					add(keep(func(c *Cluster) bool {
						at(c).Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = nil
						return true
					}))
					for ti, term := range r.NodeSelectorTerms {
						if len(r.NodeSelectorTerms) > 1 {
							add(keep(func(c *Cluster) bool {
								req := at(c).Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
								req.NodeSelectorTerms = slices.Delete(req.NodeSelectorTerms, ti, ti+1)
								return true
							}))
						}
						for ei := range term.MatchExpressions {
							if len(term.MatchExpressions)+len(term.MatchFields) > 1 {
								add(keep(func(c *Cluster) bool {
									t := &at(c).Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[ti]
									t.MatchExpressions = slices.Delete(t.MatchExpressions, ei, ei+1)
									return true
								}))
							}
						}
					}
				}
			}
			if pa := a.PodAffinity; pa != nil {
				add(keep(func(c *Cluster) bool { at(c).Spec.Affinity.PodAffinity = nil; return true }))
				if pa.PreferredDuringSchedulingIgnoredDuringExecution != nil {
					add(keep(func(c *Cluster) bool {
						at(c).Spec.Affinity.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution = nil
						return true
					}))
				}
				for ti := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
					add(keep(func(c *Cluster) bool {
						x := at(c).Spec.Affinity.PodAffinity
						x.RequiredDuringSchedulingIgnoredDuringExecution = slices.Delete(x.RequiredDuringSchedulingIgnoredDuringExecution, ti, ti+1)
						return true
					}))
					ms = append(ms, podTermMutations(func(c *Cluster) *corev1.PodAffinityTerm {
						return &at(c).Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[ti]
					}, pa.RequiredDuringSchedulingIgnoredDuringExecution[ti])...)
				}
			}
			if pa := a.PodAntiAffinity; pa != nil {
				add(keep(func(c *Cluster) bool { at(c).Spec.Affinity.PodAntiAffinity = nil; return true }))
				if pa.PreferredDuringSchedulingIgnoredDuringExecution != nil {
					add(keep(func(c *Cluster) bool {
						at(c).Spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = nil
						return true
					}))
				}
				for ti := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
					add(keep(func(c *Cluster) bool {
						x := at(c).Spec.Affinity.PodAntiAffinity
						x.RequiredDuringSchedulingIgnoredDuringExecution = slices.Delete(x.RequiredDuringSchedulingIgnoredDuringExecution, ti, ti+1)
						return true
					}))
					ms = append(ms, podTermMutations(func(c *Cluster) *corev1.PodAffinityTerm {
						return &at(c).Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[ti]
					}, pa.RequiredDuringSchedulingIgnoredDuringExecution[ti])...)
				}
			}
		}
		for si, s := range p.Spec.TopologySpreadConstraints {
			add(keep(func(c *Cluster) bool {
				x := at(c)
				x.Spec.TopologySpreadConstraints = slices.Delete(x.Spec.TopologySpreadConstraints, si, si+1)
				return true
			}))
			tsc := func(c *Cluster) *corev1.TopologySpreadConstraint { return &at(c).Spec.TopologySpreadConstraints[si] }
			if s.MinDomains != nil {
				add(keep(func(c *Cluster) bool { tsc(c).MinDomains = nil; return true }))
			}
			if s.NodeAffinityPolicy != nil {
				add(keep(func(c *Cluster) bool { tsc(c).NodeAffinityPolicy = nil; return true }))
			}
			if s.NodeTaintsPolicy != nil {
				add(keep(func(c *Cluster) bool { tsc(c).NodeTaintsPolicy = nil; return true }))
			}
			if s.MatchLabelKeys != nil {
				add(keep(func(c *Cluster) bool { tsc(c).MatchLabelKeys = nil; return true }))
			}
			if s.MaxSkew > 1 {
				add(keep(func(c *Cluster) bool { tsc(c).MaxSkew = 1; return true }))
			}
		}
		for ti := range p.Spec.Tolerations {
			add(keep(func(c *Cluster) bool {
				x := at(c)
				x.Spec.Tolerations = slices.Delete(x.Spec.Tolerations, ti, ti+1)
				return true
			}))
		}
		for _, k := range slices.Sorted(maps.Keys(p.Spec.NodeSelector)) {
			add(keep(func(c *Cluster) bool { delete(at(c).Spec.NodeSelector, k); return true }))
		}
		for _, k := range slices.Sorted(maps.Keys(p.Labels)) {
			add(keep(func(c *Cluster) bool { delete(at(c).Labels, k); return true }))
		}
		if p.Namespace != "default" {
			add(keep(func(c *Cluster) bool { at(c).Namespace = "default"; return true }))
		}
		for ci := range p.Spec.InitContainers {
			add(keep(func(c *Cluster) bool {
				x := at(c)
				x.Spec.InitContainers = slices.Delete(x.Spec.InitContainers, ci, ci+1)
				return true
			}))
		}
		for ci := range p.Spec.Containers {
			if ci > 0 {
				add(keep(func(c *Cluster) bool {
					x := at(c)
					x.Spec.Containers = slices.Delete(x.Spec.Containers, ci, ci+1)
					return true
				}))
			}
			ctr := p.Spec.Containers[ci]
			if len(ctr.Ports) > 0 {
				add(keep(func(c *Cluster) bool { at(c).Spec.Containers[ci].Ports = nil; return true }))
			}
			for _, r := range slices.Sorted(maps.Keys(ctr.Resources.Requests)) {
				add(keep(func(c *Cluster) bool {
					x := &at(c).Spec.Containers[ci]
					delete(x.Resources.Requests, r)
					delete(x.Resources.Limits, r)
					return true
				}))
			}
		}
		if p.Spec.Overhead != nil {
			add(keep(func(c *Cluster) bool { at(c).Spec.Overhead = nil; return true }))
		}
		if p.Spec.Resources != nil {
			add(keep(func(c *Cluster) bool { at(c).Spec.Resources = nil; return true }))
		}
	}

	for j, n := range c.Nodes {
		if n.Spec.Unschedulable {
			add(keep(func(c *Cluster) bool { c.Nodes[j].Spec.Unschedulable = false; return true }))
		}
		for ti := range n.Spec.Taints {
			add(keep(func(c *Cluster) bool {
				x := c.Nodes[j]
				x.Spec.Taints = slices.Delete(x.Spec.Taints, ti, ti+1)
				return true
			}))
		}
		for _, k := range slices.Sorted(maps.Keys(n.Labels)) {
			add(keep(func(c *Cluster) bool { delete(c.Nodes[j].Labels, k); return true }))
		}
		for _, r := range slices.Sorted(maps.Keys(n.Status.Allocatable)) {
			switch r {
			case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods:
				continue
			}
			add(keep(func(c *Cluster) bool { delete(c.Nodes[j].Status.Allocatable, r); return true }))
		}
	}
	for _, ns := range slices.Sorted(maps.Keys(c.Namespaces)) {
		for _, k := range slices.Sorted(maps.Keys(c.Namespaces[ns])) {
			if k != corev1.LabelMetadataName {
				add(keep(func(c *Cluster) bool { delete(c.Namespaces[ns], k); return true }))
			}
		}
	}
	return ms
}

func podTermMutations(at func(c *Cluster) *corev1.PodAffinityTerm, t corev1.PodAffinityTerm) []mutation {
	var ms []mutation
	add := func(f func(t *corev1.PodAffinityTerm)) {
		ms = append(ms, func(c *Cluster, target int) int { f(at(c)); return target })
	}
	if t.NamespaceSelector != nil {
		add(func(t *corev1.PodAffinityTerm) { t.NamespaceSelector = nil })
	}
	if t.Namespaces != nil {
		add(func(t *corev1.PodAffinityTerm) { t.Namespaces = nil })
	}
	if s := t.LabelSelector; s != nil {
		for _, k := range slices.Sorted(maps.Keys(s.MatchLabels)) {
			if len(s.MatchLabels)+len(s.MatchExpressions) > 1 {
				add(func(t *corev1.PodAffinityTerm) { delete(t.LabelSelector.MatchLabels, k) })
			}
		}
		for ei := range s.MatchExpressions {
			if len(s.MatchLabels)+len(s.MatchExpressions) > 1 {
				add(func(t *corev1.PodAffinityTerm) {
					t.LabelSelector.MatchExpressions = slices.Delete(t.LabelSelector.MatchExpressions, ei, ei+1)
				})
			}
		}
	}
	return ms
}

// Features names what a pending pod uses, for grouping disagreements.
func Features(p *corev1.Pod) string {
	var f []string
	if len(p.Spec.NodeSelector) > 0 {
		f = append(f, "nodeSelector")
	}
	if a := p.Spec.Affinity; a != nil {
		if na := a.NodeAffinity; na != nil && na.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			ops := map[string]bool{}
			for _, t := range na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
				if len(t.MatchExpressions)+len(t.MatchFields) == 0 {
					ops["empty-term"] = true
				}
				for _, e := range t.MatchExpressions {
					ops[string(e.Operator)] = true
				}
				for _, e := range t.MatchFields {
					ops["field-"+string(e.Operator)] = true
				}
			}
			f = append(f, "nodeAffinity("+strings.Join(slices.Sorted(maps.Keys(ops)), ",")+")")
		}
		if pa := a.PodAffinity; pa != nil && len(pa.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
			f = append(f, "podAffinity("+termKeys(pa.RequiredDuringSchedulingIgnoredDuringExecution)+")")
		}
		if pa := a.PodAntiAffinity; pa != nil && len(pa.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
			f = append(f, "podAntiAffinity("+termKeys(pa.RequiredDuringSchedulingIgnoredDuringExecution)+")")
		}
	}
	if len(p.Spec.Tolerations) > 0 {
		f = append(f, "tolerations")
	}
	for _, s := range p.Spec.TopologySpreadConstraints {
		x := "spread(" + s.TopologyKey + "," + string(s.WhenUnsatisfiable)
		if s.MinDomains != nil {
			x += ",minDomains"
		}
		if s.NodeAffinityPolicy != nil {
			x += ",nodeAffinityPolicy=" + string(*s.NodeAffinityPolicy)
		}
		if s.NodeTaintsPolicy != nil {
			x += ",nodeTaintsPolicy=" + string(*s.NodeTaintsPolicy)
		}
		if len(s.MatchLabelKeys) > 0 {
			x += ",matchLabelKeys"
		}
		if s.LabelSelector == nil {
			x += ",nil-selector"
		} else if len(s.LabelSelector.MatchLabels)+len(s.LabelSelector.MatchExpressions) == 0 {
			x += ",empty-selector"
		}
		f = append(f, x+")")
	}
	for _, c := range p.Spec.Containers {
		if len(c.Ports) > 0 {
			f = append(f, "hostPort")
			break
		}
	}
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil {
			f = append(f, "sidecar")
		} else {
			f = append(f, "init")
		}
	}
	if p.Spec.Overhead != nil {
		f = append(f, "overhead")
	}
	if p.Spec.Resources != nil {
		f = append(f, "podLevelResources")
	}
	slices.Sort(f)
	f = slices.Compact(f)
	if len(f) == 0 {
		return "plain pod"
	}
	return strings.Join(f, " ")
}

func termKeys(ts []corev1.PodAffinityTerm) string {
	keys := map[string]bool{}
	for _, t := range ts {
		k := t.TopologyKey
		if t.NamespaceSelector != nil {
			k += "+nsSelector"
		}
		keys[k] = true
	}
	return fmt.Sprint(strings.Join(slices.Sorted(maps.Keys(keys)), ","))
}
