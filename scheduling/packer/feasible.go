package packer

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/scheduling/requirements"
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
func Feasible(pod *corev1.Pod, nodes []Node, i int, namespaceLabels map[string]map[string]string) error {
	if i < 0 || i >= len(nodes) {
		return fmt.Errorf("node index %d out of range [0, %d)", i, len(nodes))
	}
	s := newState(namespaceLabels, false)
	// Node affinity with matchFields cannot be expressed as label
	// requirements; judge it with the API's own matcher and drop it. Spread
	// constraints that honour node affinity still need it to decide which
	// nodes they count, so keep the matcher for them.
	var fieldAff *nodeaffinity.RequiredNodeAffinity
	if _, err := requirements.FromPod(pod); errors.Is(err, requirements.ErrMatchFields) {
		m := nodeaffinity.GetRequiredNodeAffinity(pod)
		fieldAff = &m
		if !nodes[i].Unschedulable || taints.Tolerates(pod.Spec.Tolerations, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}) {
			if ok, t := taints.ToleratesAll(pod.Spec.Tolerations, nodes[i].Taints, taints.Blocking); ok {
				n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodes[i].Name, Labels: nodes[i].Labels}}
				if m, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(n); !m {
					return errors.New("node(s) didn't match Pod's node affinity/selector")
				}
			} else {
				return fmt.Errorf("node(s) had untolerated taint {%s: %s}", t.Key, t.Value)
			}
		}
		pod = pod.DeepCopy()
		pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = nil
	} else if err != nil {
		return errors.New("node(s) didn't match Pod's node affinity/selector")
	}
	c := &compiler{s: s, shapes: map[string]*shape{}}
	sh, err := c.compile(pod, nil, false)
	if err != nil {
		return err
	}
	if fieldAff != nil {
		for _, sc := range sh.spread {
			if sc.g.honorAff {
				sc.g.nodeAff = fieldAff
			}
		}
	}
	for k := range nodes {
		for _, p := range nodes[k].Pods {
			for _, t := range p.Spec.TopologySpreadConstraints {
				s.keyIndex(wellknown.NormalizeLabel(t.TopologyKey))
			}
		}
	}
	for k := range nodes {
		s.addNode(&nodes[k])
	}
	s.addOwnerGroups(nodes)
	for _, b := range s.bins {
		for len(b.dom) < len(s.keys) {
			b.dom = append(b.dom, s.nodeDomain(b.node, len(b.dom)))
		}
	}
	s.countExisting()
	s.registerDomains()
	s.link(sh)
	v := s.newVariant(sh, nil, taints.Blocking)
	var out outcome
	b := s.bins[i]
	s.check(v, b, &out)
	switch out.code {
	case okCode:
		return nil
	case failTaint:
		return fmt.Errorf("node(s) had untolerated taint {%s: %s}", out.taint.Key, out.taint.Value)
	case failResources:
		var reasons []string
		for _, name := range sh.req.Insufficient(availableOn(b)) {
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
