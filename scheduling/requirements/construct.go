package requirements

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// Expression is one requirement as API objects write it: a node selector
// requirement with an optional minimum number of distinct values, as in the
// requirements of a NodePool or NodeClaim.
type Expression struct {
	Key       string
	Operator  corev1.NodeSelectorOperator
	Values    []string
	MinValues *int
}

// FromExpressions returns the conjunction of exprs, with minValues carried.
// When two expressions constrain the same key, the larger minValues wins.
func FromExpressions(exprs []Expression) (Requirements, error) {
	reqs := make([]Requirement, 0, len(exprs))
	for _, e := range exprs {
		req, err := NewRequirement(e.Key, e.Operator, e.Values...)
		if err != nil {
			return Requirements{}, err
		}
		if e.MinValues != nil {
			req = req.WithMinValues(*e.MinValues)
		}
		reqs = append(reqs, req)
	}
	return New(reqs...), nil
}

// FromNodeSelectorRequirements returns the conjunction of nsrs.
func FromNodeSelectorRequirements(nsrs []corev1.NodeSelectorRequirement) (Requirements, error) {
	reqs := make([]Requirement, 0, len(nsrs))
	for _, nsr := range nsrs {
		req, err := NewRequirement(nsr.Key, nsr.Operator, nsr.Values...)
		if err != nil {
			return Requirements{}, err
		}
		reqs = append(reqs, req)
	}
	return New(reqs...), nil
}

// FromLabels returns the requirements that a node with exactly these labels
// meets on each of its keys: key In [value] for every label. If a label is
// set under both a key and its deprecated alias, the two values are
// intersected.
func FromLabels(labels map[string]string) Requirements {
	reqs := make([]Requirement, 0, len(labels))
	values := make([]string, 0, len(labels)) // one allocation for every value list
	for key, value := range labels {
		values = append(values, value)
		reqs = append(reqs, Requirement{key: normalizeKey(key), values: values[len(values)-1 : len(values) : len(values)]})
	}
	return New(reqs...)
}

// ErrEmptyTerm is returned for a node selector term with neither match
// expressions nor match fields. Kubernetes matches no node with such a term.
var ErrEmptyTerm = errors.New("the node selector term is empty and matches no node")

// ErrMatchFields is returned for a node selector term that uses match
// fields. They select nodes by name, which a node that does not exist yet
// does not have, so they cannot be expressed as label requirements.
var ErrMatchFields = errors.New("the node selector term uses matchFields, which select nodes by name; select by labels with matchExpressions instead")

// FromNodeSelectorTerm returns the conjunction of term's match expressions.
// A node selector ORs its terms: the caller handles that by trying each
// term's requirements in turn (see FromPod).
//
// It fails with ErrEmptyTerm for an empty term and with ErrMatchFields for a
// term that uses match fields.
func FromNodeSelectorTerm(term corev1.NodeSelectorTerm) (Requirements, error) {
	switch {
	case len(term.MatchFields) > 0:
		return Requirements{}, ErrMatchFields
	case len(term.MatchExpressions) == 0:
		return Requirements{}, ErrEmptyTerm
	}
	return FromNodeSelectorRequirements(term.MatchExpressions)
}

// FromPod returns the alternatives a node may meet to run pod, as the
// scheduler's required node affinity sees them: the pod's nodeSelector
// intersected with each term of its required node affinity, in the order of
// the terms. A node that meets any alternative qualifies. A pod without
// required node affinity has one alternative, its nodeSelector. Preferred
// node affinity is not included.
//
// Empty terms match no node and are left out. FromPod fails when a term is
// invalid or uses match fields (wrapping ErrMatchFields), and when no term
// is left, since no node could run the pod.
func FromPod(pod *corev1.Pod) ([]Requirements, error) {
	base := FromLabels(pod.Spec.NodeSelector)
	affinity := pod.Spec.Affinity
	if affinity == nil || affinity.NodeAffinity == nil || affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return []Requirements{base}, nil
	}
	terms := affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	out := make([]Requirements, 0, len(terms))
	for i, term := range terms {
		reqs, err := FromNodeSelectorTerm(term)
		if errors.Is(err, ErrEmptyTerm) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("pod %s/%s: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[%d]: %w",
				pod.Namespace, pod.Name, i, err)
		}
		out = append(out, base.Intersect(reqs))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("pod %s/%s: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution has no non-empty node selector term, so no node can run it; add a term with matchExpressions or remove the required node affinity",
			pod.Namespace, pod.Name)
	}
	return out, nil
}
