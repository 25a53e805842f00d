package schedulerdiff

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/scheduling/resources"
)

// Cluster is one case: nodes, the pods bound to them (Spec.NodeName set), a
// pending pod and the namespaces with their labels.
type Cluster struct {
	Nodes      []*corev1.Node
	Pods       []*corev1.Pod
	Pod        *corev1.Pod
	Namespaces map[string]map[string]string
}

// DeepCopy returns a copy that shares nothing with c.
func (c *Cluster) DeepCopy() *Cluster {
	out := &Cluster{Pod: c.Pod.DeepCopy(), Namespaces: map[string]map[string]string{}}
	for _, n := range c.Nodes {
		out.Nodes = append(out.Nodes, n.DeepCopy())
	}
	for _, p := range c.Pods {
		out.Pods = append(out.Pods, p.DeepCopy())
	}
	for ns, l := range c.Namespaces {
		out.Namespaces[ns] = maps.Clone(l)
	}
	return out
}

func (c *Cluster) namespaceNames() []string {
	return slices.Sorted(maps.Keys(c.Namespaces))
}

// PackerNodes converts the nodes and their pods to the packer's form.
func (c *Cluster) PackerNodes() []packer.Node {
	out := make([]packer.Node, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = packer.Node{
			Name:          n.Name,
			Labels:        n.Labels,
			Taints:        n.Spec.Taints,
			Allocatable:   resources.NewVector(n.Status.Allocatable),
			Unschedulable: n.Spec.Unschedulable,
		}
		for _, p := range c.Pods {
			if p.Spec.NodeName == n.Name {
				out[i].Pods = append(out[i].Pods, p)
			}
		}
	}
	return out
}

// Describe renders the case for a human: the pending pod's constraints, the
// namespaces, then each node with its pods; the node at index target (if
// any) is marked.
func (c *Cluster) Describe(target int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "pending pod %s\n", describePod(c.Pod, "  "))
	fmt.Fprintf(&b, "namespaces:")
	for _, ns := range c.namespaceNames() {
		fmt.Fprintf(&b, " %s%s", ns, labelString(c.Namespaces[ns]))
	}
	b.WriteString("\n")
	for i, n := range c.Nodes {
		mark := " "
		if i == target {
			mark = "*"
		}
		fmt.Fprintf(&b, "%snode %s%s alloc=%s", mark, n.Name, labelString(n.Labels), listString(n.Status.Allocatable))
		if n.Spec.Unschedulable {
			b.WriteString(" UNSCHEDULABLE")
		}
		for _, t := range n.Spec.Taints {
			fmt.Fprintf(&b, " taint=%s", taintString(t))
		}
		b.WriteString("\n")
		for _, p := range c.Pods {
			if p.Spec.NodeName == n.Name {
				fmt.Fprintf(&b, "    pod %s\n", describePod(p, "      "))
			}
		}
	}
	return b.String()
}

func describePod(p *corev1.Pod, indent string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s/%s%s", p.Namespace, p.Name, labelString(p.Labels))
	line := func(format string, args ...any) {
		b.WriteString("\n" + indent)
		fmt.Fprintf(&b, format, args...)
	}
	if r := resources.Requests(p); len(r) > 0 {
		fmt.Fprintf(&b, " requests=%s", listString(r))
	}
	for _, c := range p.Spec.InitContainers {
		kind := "init"
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			kind = "sidecar"
		}
		line("%s container %s requests=%s", kind, c.Name, listString(c.Resources.Requests))
	}
	if len(p.Spec.InitContainers) > 0 || p.Spec.Overhead != nil || p.Spec.Resources != nil {
		for _, c := range p.Spec.Containers {
			line("container %s requests=%s", c.Name, listString(c.Resources.Requests))
		}
	}
	if p.Spec.Overhead != nil {
		line("overhead=%s", listString(p.Spec.Overhead))
	}
	if p.Spec.Resources != nil {
		line("pod-level requests=%s", listString(p.Spec.Resources.Requests))
	}
	for _, c := range append(slices.Clone(p.Spec.InitContainers), p.Spec.Containers...) {
		for _, port := range c.Ports {
			if port.HostPort != 0 {
				line("hostPort %s/%d hostIP=%q", port.Protocol, port.HostPort, port.HostIP)
			}
		}
	}
	if len(p.Spec.NodeSelector) > 0 {
		line("nodeSelector %s", labelString(p.Spec.NodeSelector))
	}
	for _, t := range p.Spec.Tolerations {
		line("toleration %s", tolerationString(t))
	}
	if a := p.Spec.Affinity; a != nil {
		if na := a.NodeAffinity; na != nil {
			if r := na.RequiredDuringSchedulingIgnoredDuringExecution; r != nil {
				line("required node affinity (any term):")
				for _, t := range r.NodeSelectorTerms {
					line("  term %s", nodeTermString(t))
				}
			}
			for _, t := range na.PreferredDuringSchedulingIgnoredDuringExecution {
				line("preferred node affinity w=%d %s", t.Weight, nodeTermString(t.Preference))
			}
		}
		if pa := a.PodAffinity; pa != nil {
			for _, t := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
				line("required pod affinity %s", podTermString(t))
			}
			for _, t := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
				line("preferred pod affinity w=%d %s", t.Weight, podTermString(t.PodAffinityTerm))
			}
		}
		if pa := a.PodAntiAffinity; pa != nil {
			for _, t := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
				line("required pod anti-affinity %s", podTermString(t))
			}
			for _, t := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
				line("preferred pod anti-affinity w=%d %s", t.Weight, podTermString(t.PodAffinityTerm))
			}
		}
	}
	for _, t := range p.Spec.TopologySpreadConstraints {
		s := fmt.Sprintf("spread key=%s maxSkew=%d %s selector=%s", t.TopologyKey, t.MaxSkew, t.WhenUnsatisfiable, selectorString(t.LabelSelector))
		if t.MinDomains != nil {
			s += fmt.Sprintf(" minDomains=%d", *t.MinDomains)
		}
		if t.NodeAffinityPolicy != nil {
			s += " nodeAffinityPolicy=" + string(*t.NodeAffinityPolicy)
		}
		if t.NodeTaintsPolicy != nil {
			s += " nodeTaintsPolicy=" + string(*t.NodeTaintsPolicy)
		}
		if len(t.MatchLabelKeys) > 0 {
			s += fmt.Sprintf(" matchLabelKeys=%v", t.MatchLabelKeys)
		}
		line("%s", s)
	}
	return b.String()
}

func labelString(l map[string]string) string {
	if len(l) == 0 {
		return "{}"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(l)) {
		parts = append(parts, k+"="+l[k])
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func listString(l corev1.ResourceList) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(l)) {
		q := l[k]
		parts = append(parts, string(k)+":"+q.String())
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func taintString(t corev1.Taint) string {
	return fmt.Sprintf("%s=%s:%s", t.Key, t.Value, t.Effect)
}

func tolerationString(t corev1.Toleration) string {
	op := t.Operator
	if op == "" {
		op = "(Equal)"
	}
	key := t.Key
	if key == "" {
		key = `""`
	}
	s := fmt.Sprintf("%s %s %q effect=%q", key, op, t.Value, t.Effect)
	if t.TolerationSeconds != nil {
		s += fmt.Sprintf(" seconds=%d", *t.TolerationSeconds)
	}
	return s
}

func nodeTermString(t corev1.NodeSelectorTerm) string {
	var parts []string
	for _, r := range t.MatchExpressions {
		parts = append(parts, fmt.Sprintf("%s %s %v", r.Key, r.Operator, r.Values))
	}
	for _, r := range t.MatchFields {
		parts = append(parts, fmt.Sprintf("field %s %s %v", r.Key, r.Operator, r.Values))
	}
	if len(parts) == 0 {
		return "(empty term)"
	}
	return strings.Join(parts, " AND ")
}

func podTermString(t corev1.PodAffinityTerm) string {
	s := fmt.Sprintf("key=%s selector=%s", t.TopologyKey, selectorString(t.LabelSelector))
	if len(t.Namespaces) > 0 {
		s += fmt.Sprintf(" namespaces=%v", t.Namespaces)
	}
	if t.NamespaceSelector != nil {
		s += " namespaceSelector=" + selectorString(t.NamespaceSelector)
	}
	if len(t.MatchLabelKeys) > 0 {
		s += fmt.Sprintf(" matchLabelKeys=%v", t.MatchLabelKeys)
	}
	if len(t.MismatchLabelKeys) > 0 {
		s += fmt.Sprintf(" mismatchLabelKeys=%v", t.MismatchLabelKeys)
	}
	return s
}

func selectorString(s *metav1.LabelSelector) string {
	if s == nil {
		return "nil"
	}
	return "{" + metav1.FormatLabelSelector(s) + "}"
}
