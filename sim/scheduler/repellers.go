package scheduler

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// repeller is one required pod anti-affinity term of a bound pod, reduced
// to the question the cheap filters need answered: can it select a given
// newcomer? If no bound pod's term selects the newcomer, no bound pod can
// keep it off a node (kube-scheduler's InterPodAffinity filter checks
// exactly those terms against the incoming pod), and the full check is not
// needed for that reason.
//
// The answer may say yes when kube-scheduler would say no, never the
// other way round: matchLabelKeys and mismatchLabelKeys, which only narrow
// a term, are left out, and a selector that does not parse selects
// everything. A wrong yes costs a full check, not a wrong placement.
type repeller struct {
	key string
	// owner is the namespace of the pod whose term this is.
	owner      string
	namespaces []string
	// nsSelector is the term's namespaceSelector, nil when it has none.
	nsSelector labels.Selector
	// selector is nil for a term without a labelSelector, which selects
	// no pod.
	selector labels.Selector
}

// repeller returns the repeller of a term of a pod in namespace owner,
// parsing its selectors once per distinct term.
func (b *Binder) repeller(owner string, term *corev1.PodAffinityTerm) repeller {
	key := repellerKey(owner, term)
	if r, ok := b.repellers[key]; ok {
		return r
	}
	r := repeller{key: key, owner: owner, namespaces: term.Namespaces}
	if term.NamespaceSelector != nil {
		r.nsSelector = parseOrEverything(term.NamespaceSelector)
	}
	if term.LabelSelector != nil {
		r.selector = parseOrEverything(term.LabelSelector)
	}
	b.repellers[key] = r
	return r
}

func parseOrEverything(ls *metav1.LabelSelector) labels.Selector {
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return labels.Everything()
	}
	return sel
}

// repellerKey names a term by what decides whom it selects.
func repellerKey(owner string, term *corev1.PodAffinityTerm) string {
	var sb strings.Builder
	sb.WriteString(owner)
	sb.WriteByte('|')
	sb.WriteString(strings.Join(term.Namespaces, ","))
	for _, ls := range []*metav1.LabelSelector{term.NamespaceSelector, term.LabelSelector} {
		sb.WriteByte('|')
		if ls == nil {
			// Told apart from an empty selector, which
			// FormatLabelSelector prints the same way.
			sb.WriteString("nil")
			continue
		}
		sb.WriteString("sel:")
		sb.WriteString(metav1.FormatLabelSelector(ls))
	}
	return sb.String()
}

// selects reports whether the term may select pod, whose namespace has
// the labels nsLabels.
func (r repeller) selects(pod *corev1.Pod, nsLabels map[string]string) bool {
	if r.selector == nil || !r.selector.Matches(labels.Set(pod.Labels)) {
		return false
	}
	// A term's namespaces are its list and its namespace selector
	// together; with neither, the namespace of its own pod.
	if len(r.namespaces) == 0 && r.nsSelector == nil {
		return pod.Namespace == r.owner
	}
	for _, ns := range r.namespaces {
		if ns == pod.Namespace {
			return true
		}
	}
	return r.nsSelector != nil && r.nsSelector.Matches(labels.Set(nsLabels))
}

// repelled reports whether a bound pod's required anti-affinity may select
// pod.
func (cl *cluster) repelled(pod *corev1.Pod) bool {
	for _, r := range cl.repellers {
		if r.selects(pod, cl.nsLabel[pod.Namespace]) {
			return true
		}
	}
	return false
}
