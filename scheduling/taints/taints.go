// Package taints decides whether a pod's tolerations let it onto a node
// with given taints, exactly as the kube-scheduler's TaintToleration filter
// does.
//
// Matching one toleration against one taint is the Kubernetes API's own rule
// (corev1.Toleration.ToleratesTaint, applied through the scheduler's
// component helpers):
//
//   - an empty toleration effect matches every effect; otherwise the effects
//     must be equal;
//   - an empty toleration key matches every key (the API only allows it with
//     Exists, which then tolerates everything); otherwise the keys must be
//     equal;
//   - Exists matches any value; Equal, or an empty operator, needs the values
//     to be equal;
//   - Gt and Lt compare integer values (the taint's must be greater or less
//     than the toleration's). They sit behind the TaintTolerationComparisonOperators
//     feature gate, off by default; with the gate off a Gt or Lt toleration
//     tolerates nothing. Tolerates and ToleratesAll follow the default;
//     a Matcher with ComparisonOperators set follows a cluster that turned
//     the gate on.
//
// Only NoSchedule and NoExecute taints keep a pod off a node when it is
// scheduled (the Blocking effects); PreferNoSchedule taints only lower a
// node's score. Karpenter first treats PreferNoSchedule as blocking too and
// relaxes that when a pod cannot be placed; pass AllEffects to do the same.
package taints

import (
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	schedulinghelper "k8s.io/component-helpers/scheduling/corev1"
)

// Effects is a set of taint effects.
type Effects uint8

// The taint effects, and the sets of them that ToleratesAll is usually given.
const (
	NoSchedule Effects = 1 << iota
	PreferNoSchedule
	NoExecute

	// Blocking are the effects that keep an untolerating pod off a node at
	// scheduling time: the kube-scheduler's TaintToleration filter.
	Blocking = NoSchedule | NoExecute
	// AllEffects also counts PreferNoSchedule as blocking.
	AllEffects = NoSchedule | PreferNoSchedule | NoExecute
)

// Has reports whether e includes effect. An effect that Kubernetes does not
// define is in no set.
func (e Effects) Has(effect corev1.TaintEffect) bool {
	switch effect {
	case corev1.TaintEffectNoSchedule:
		return e&NoSchedule != 0
	case corev1.TaintEffectPreferNoSchedule:
		return e&PreferNoSchedule != 0
	case corev1.TaintEffectNoExecute:
		return e&NoExecute != 0
	default:
		return false
	}
}

// Matcher matches tolerations against taints. The zero Matcher behaves as
// the kube-scheduler does by default.
type Matcher struct {
	// ComparisonOperators makes Gt and Lt tolerations compare integer values,
	// as the kube-scheduler does with the TaintTolerationComparisonOperators
	// feature gate on. When false, such tolerations tolerate nothing.
	ComparisonOperators bool
}

// Tolerates reports whether any of tolerations tolerates taint.
func (m Matcher) Tolerates(tolerations []corev1.Toleration, taint corev1.Taint) bool {
	return schedulinghelper.TolerationsTolerateTaint(logr.Discard(), tolerations, &taint, m.ComparisonOperators)
}

// ToleratesAll reports whether tolerations tolerate every taint whose effect
// is in effects. If not, it also returns the first taint, in order, that
// they do not tolerate: a pointer into taints. It does not allocate.
func (m Matcher) ToleratesAll(tolerations []corev1.Toleration, taints []corev1.Taint, effects Effects) (bool, *corev1.Taint) {
	for i := range taints {
		if !effects.Has(taints[i].Effect) {
			continue
		}
		if !schedulinghelper.TolerationsTolerateTaint(logr.Discard(), tolerations, &taints[i], m.ComparisonOperators) {
			return false, &taints[i]
		}
	}
	return true, nil
}

// Tolerates reports whether any of tolerations tolerates taint, as the
// kube-scheduler does by default.
func Tolerates(tolerations []corev1.Toleration, taint corev1.Taint) bool {
	return Matcher{}.Tolerates(tolerations, taint)
}

// ToleratesAll reports whether tolerations tolerate every taint whose effect
// is in effects, as the kube-scheduler does by default, and if not, returns
// the first taint they do not tolerate. Pass Blocking for the scheduler's
// filter.
func ToleratesAll(tolerations []corev1.Toleration, taints []corev1.Taint, effects Effects) (bool, *corev1.Taint) {
	return Matcher{}.ToleratesAll(tolerations, taints, effects)
}
