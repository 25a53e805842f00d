package apiserver

import (
	"context"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	policyv1beta1 "k8s.io/api/policy/v1beta1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var (
	pdbGVK         = policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget")
	replicaSetGVK  = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	deploymentGVK  = appsv1.SchemeGroupVersion.WithKind("Deployment")
	statefulSetGVK = appsv1.SchemeGroupVersion.WithKind("StatefulSet")
	rcGVK          = corev1.SchemeGroupVersion.WithKind("ReplicationController")
)

// Event reasons the eviction subresource records, with the pod as the
// regarding object.
const (
	ReasonEvicted         = "Evicted"
	ReasonEvictionBlocked = "EvictionBlocked"
)

// SourceEviction is the Source of the events the eviction subresource
// records.
const SourceEviction = "eviction"

// Evict is the pods/eviction subresource: it deletes the pod, with the
// eviction's delete options, unless a PodDisruptionBudget forbids it, as the
// real API server decides:
//
//   - pods that have finished, are still Pending or are already terminating
//     are deleted without looking at budgets;
//   - a pod that more than one budget selects cannot be evicted (an internal
//     error, as the real server answers);
//   - a pod that is not Ready may go when its budget's policy is
//     AlwaysAllow, or when the budget is healthy (IfHealthyBudget, the
//     default);
//   - otherwise the budget must allow a disruption now: 429 Too Many
//     Requests when it does not, with the budget's numbers as the cause.
//
// The budget's numbers are computed from the pods as they are at the
// moment, which is what the disruption controller would have written into
// its status; an evicted pod is terminating and no longer counts as healthy,
// so a second eviction sees the first.
func (s *Server) Evict(_ context.Context, obj client.Object, sub client.Object) error {
	if _, ok := obj.(*corev1.Pod); !ok {
		return apierrors.NewNotFound(resource(podGVK), obj.GetName())
	}
	var opts *metav1.DeleteOptions
	switch ev := sub.(type) {
	case *policyv1.Eviction:
		opts = ev.DeleteOptions
	case *policyv1beta1.Eviction:
		opts = ev.DeleteOptions
	default:
		return apierrors.NewBadRequest(fmt.Sprintf("got invalid type %T, expected Eviction", sub))
	}
	if opts == nil {
		opts = &metav1.DeleteOptions{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ns := obj.GetNamespace()
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	r := ref{gvk: podGVK, namespace: ns, name: obj.GetName()}
	cur, ok := s.store(podGVK).objs[r.key()].(*corev1.Pod)
	if !ok {
		return apierrors.NewNotFound(resource(podGVK), obj.GetName())
	}
	if p := opts.Preconditions; p != nil && p.UID != nil && *p.UID != cur.UID {
		err := apierrors.NewConflict(resource(podGVK), cur.Name,
			fmt.Errorf("Precondition failed: UID in precondition: %s, UID in object meta: %s", *p.UID, cur.UID))
		s.logEvictionLocked(cur, nil, false, "the UID precondition does not match the pod")
		return err
	}
	evict := func(pdbs []*policyv1.PodDisruptionBudget, why string) error {
		// The log shows the budgets as they were before the pod went.
		s.logEvictionLocked(cur, pdbs, true, why)
		if err := s.deleteLocked(r, opts); err != nil {
			if s.logEvictions {
				last := &s.evictions[len(s.evictions)-1]
				last.Granted, last.Reason = false, err.Error()
			}
			return err
		}
		s.recordEventLocked(SourceEviction, cur, nil, corev1.EventTypeNormal, ReasonEvicted, "Evict", "Evicted pod")
		return nil
	}
	if why := notRunning(cur); why != "" {
		var pdbs []*policyv1.PodDisruptionBudget
		if s.logEvictions {
			pdbs = s.pdbsForLocked(cur)
		}
		return evict(pdbs, why)
	}
	pdbs := s.pdbsForLocked(cur)
	switch len(pdbs) {
	case 0:
		return evict(nil, "no PodDisruptionBudget selects the pod")
	case 1:
	default:
		s.logEvictionLocked(cur, pdbs, false, "more than one PodDisruptionBudget selects the pod")
		return apierrors.NewInternalError(fmt.Errorf("This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."))
	}
	pdb := pdbs[0]
	st := s.pdbStatusLocked(pdb)
	if !podReady(cur) {
		if pdb.Spec.UnhealthyPodEvictionPolicy != nil && *pdb.Spec.UnhealthyPodEvictionPolicy == policyv1.AlwaysAllow {
			return evict(pdbs, "the pod is not Ready and its budget's unhealthyPodEvictionPolicy is AlwaysAllow")
		}
		if st.CurrentHealthy >= st.DesiredHealthy && st.DesiredHealthy > 0 {
			return evict(pdbs, "the pod is not Ready and its budget is healthy")
		}
	}
	if st.DisruptionsAllowed <= 0 {
		cause := fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently", pdb.Name, st.DesiredHealthy, st.CurrentHealthy)
		err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause, Message: cause})
		s.recordEventLocked(SourceEviction, cur, pdb, corev1.EventTypeWarning, ReasonEvictionBlocked, "Evict", cause)
		s.logEvictionLocked(cur, pdbs, false, cause)
		return err
	}
	return evict(pdbs, fmt.Sprintf("the budget allows %d disruption(s)", st.DisruptionsAllowed))
}

// notRunning says why a pod may be deleted without looking at its budgets:
// it has finished, is still Pending or is terminating already; "" when it
// runs.
func notRunning(p *corev1.Pod) string {
	switch {
	case p.DeletionTimestamp != nil:
		return "the pod is terminating already"
	case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
		return "the pod has finished"
	case p.Status.Phase == corev1.PodPending || p.Status.Phase == "":
		return "the pod is Pending"
	}
	return ""
}

// Eviction is one call of the eviction subresource and its answer, as the
// log that Options.LogEvictions keeps has it.
type Eviction struct {
	Pod types.NamespacedName
	// Healthy is whether the pod counted as healthy for its budgets (Ready
	// and not terminating) before the call: a granted eviction of a healthy
	// pod uses one of its budgets' disruptions.
	Healthy bool
	Granted bool
	// Reason says why it was granted or refused.
	Reason string
	// Budgets are the budgets that select the pod, in name order, with
	// their status just before the call.
	Budgets []EvictionBudget
}

// EvictionBudget is a budget that covered an evicted pod, and its status
// before the eviction.
type EvictionBudget struct {
	Name                                                             types.NamespacedName
	CurrentHealthy, DesiredHealthy, DisruptionsAllowed, ExpectedPods int32
}

func (s *Server) logEvictionLocked(pod *corev1.Pod, pdbs []*policyv1.PodDisruptionBudget, granted bool, why string) {
	if !s.logEvictions {
		return
	}
	e := Eviction{Pod: types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}, Granted: granted, Reason: why,
		Healthy: pod.DeletionTimestamp == nil && podReady(pod) && notRunning(pod) == ""}
	for _, pdb := range pdbs {
		st := s.pdbStatusLocked(pdb)
		e.Budgets = append(e.Budgets, EvictionBudget{Name: types.NamespacedName{Namespace: pdb.Namespace, Name: pdb.Name},
			CurrentHealthy: st.CurrentHealthy, DesiredHealthy: st.DesiredHealthy, DisruptionsAllowed: st.DisruptionsAllowed, ExpectedPods: st.ExpectedPods})
	}
	s.evictions = append(s.evictions, e)
}

// DrainEvictions returns the evictions logged since the last call (with
// Options.LogEvictions; none without), in the order they were asked for.
func (s *Server) DrainEvictions() []Eviction {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.evictions
	s.evictions = nil
	return e
}

// PDBStatus returns what the disruption controller would write into the
// budget's status now.
func (s *Server) PDBStatus(pdb *policyv1.PodDisruptionBudget) policyv1.PodDisruptionBudgetStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pdbStatusLocked(pdb)
}

// BudgetsSelecting returns the keys of the budgets in the pod's namespace
// that select it, in name order.
func (s *Server) BudgetsSelecting(pod *corev1.Pod) []types.NamespacedName {
	s.mu.Lock()
	defer s.mu.Unlock()
	pdbs := s.pdbsForLocked(pod)
	out := make([]types.NamespacedName, 0, len(pdbs))
	for _, pdb := range pdbs {
		out = append(out, types.NamespacedName{Namespace: pdb.Namespace, Name: pdb.Name})
	}
	return out
}

// pdbsForLocked returns the budgets in the pod's namespace that select it.
func (s *Server) pdbsForLocked(pod *corev1.Pod) []*policyv1.PodDisruptionBudget {
	var out []*policyv1.PodDisruptionBudget
	for _, e := range s.store(pdbGVK).inNamespace(pod.Namespace) {
		pdb := e.obj.(*policyv1.PodDisruptionBudget)
		if sel, ok := s.pdbSelector(pdb); ok && sel.matches(pod.Labels) {
			out = append(out, pdb)
		}
	}
	return out
}

// selector is a budget's label selector, parsed once.
type selector struct {
	// src is a copy of the selector it was parsed from.
	src *metav1.LabelSelector
	ok  bool
	// equal are the selector's matchLabels when it has no
	// matchExpressions: matching them needs no more than a lookup each.
	equal map[string]string
	sel   labels.Selector
}

func (s *selector) matches(l map[string]string) bool {
	if s.sel != nil {
		return s.sel.Matches(labels.Set(l))
	}
	for k, v := range s.equal {
		if got, ok := l[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// pdbSelector returns the budget's selector; a nil selector selects nothing
// and an empty one every pod of the namespace, as in policy/v1. Selectors
// are parsed once per budget and kept while the budget's selector stays the
// same: a budget's status looks at every pod of its namespace.
func (s *Server) pdbSelector(pdb *policyv1.PodDisruptionBudget) (*selector, bool) {
	if pdb.Spec.Selector == nil {
		return nil, false
	}
	if c, ok := s.selectors[pdb.UID]; ok && equality.Semantic.DeepEqual(c.src, pdb.Spec.Selector) {
		return c, c.ok
	}
	c := &selector{src: pdb.Spec.Selector.DeepCopy()}
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	c.ok = err == nil
	if c.ok {
		if len(pdb.Spec.Selector.MatchExpressions) == 0 {
			c.equal = c.src.MatchLabels
		} else {
			c.sel = sel
		}
	}
	if s.selectors == nil {
		s.selectors = map[types.UID]*selector{}
	}
	s.selectors[pdb.UID] = c
	return c, c.ok
}

// selectPodsLocked returns the pods of the namespace that sel selects, in
// name order. A selector of labels only looks at the pods that have the
// rarest of its labels, from the label index, rather than at every pod of
// the namespace: a budget's status is computed after nearly every change
// to a pod of its namespace.
func (s *Server) selectPodsLocked(namespace string, sel *selector) []*corev1.Pod {
	ks := s.store(podGVK)
	var out []*corev1.Pod
	if len(sel.equal) == 0 {
		for _, e := range ks.inNamespace(namespace) {
			if p := e.obj.(*corev1.Pod); sel.matches(p.Labels) {
				out = append(out, p)
			}
		}
		return out
	}
	rarest, n := "", -1
	for k, v := range sel.equal {
		lv := labelValue(k, v)
		if m := len(ks.byLabel.values[lv]); n < 0 || m < n || (m == n && lv < rarest) {
			rarest, n = lv, m
		}
	}
	if n == 0 {
		return nil
	}
	// The keys are in namespace/name order: the namespace's are adjacent.
	keys := ks.byLabel.keys(rarest)
	i, _ := slices.BinarySearchFunc(keys, namespace, func(k types.NamespacedName, ns string) int { return strings.Compare(k.Namespace, ns) })
	for ; i < len(keys) && keys[i].Namespace == namespace; i++ {
		if p := ks.objs[keys[i]].(*corev1.Pod); sel.matches(p.Labels) {
			out = append(out, p)
		}
	}
	return out
}

// pdbStatusLocked computes a budget's status from its pods, the way
// kube-controller-manager's disruption controller does: healthy pods are
// Ready and not terminating; the expected count is the number of pods for an
// integer minAvailable and otherwise the sum of the scales of the pods'
// controllers; disruptionsAllowed is healthy minus desired, at least 0. When
// the expected count cannot be found (a pod without a scalable controller),
// no disruption is allowed.
func (s *Server) pdbStatusLocked(pdb *policyv1.PodDisruptionBudget) policyv1.PodDisruptionBudgetStatus {
	st := policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation}
	sel, ok := s.pdbSelector(pdb)
	var pods []*corev1.Pod
	if ok {
		for _, p := range s.selectPodsLocked(pdb.Namespace, sel) {
			if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				pods = append(pods, p)
			}
		}
	}
	for _, p := range pods {
		if p.DeletionTimestamp == nil && podReady(p) {
			st.CurrentHealthy++
		}
	}
	expected, desired := int32(0), int32(0)
	failed := ""
	switch {
	case pdb.Spec.MaxUnavailable != nil:
		n, err := s.expectedScaleLocked(pods)
		if err != nil {
			failed = err.Error()
			break
		}
		expected = n
		unavailable, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, int(n), true)
		if err != nil {
			failed = err.Error()
			break
		}
		desired = max(n-int32(unavailable), 0)
	case pdb.Spec.MinAvailable != nil && pdb.Spec.MinAvailable.Type == intstr.Int:
		desired = pdb.Spec.MinAvailable.IntVal
		expected = int32(len(pods))
	case pdb.Spec.MinAvailable != nil:
		n, err := s.expectedScaleLocked(pods)
		if err != nil {
			failed = err.Error()
			break
		}
		expected = n
		v, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, int(n), true)
		if err != nil {
			failed = err.Error()
			break
		}
		desired = int32(v)
	}
	st.ExpectedPods, st.DesiredHealthy = expected, desired
	cond := metav1.Condition{Type: policyv1.DisruptionAllowedCondition, ObservedGeneration: pdb.Generation,
		LastTransitionTime: metav1.NewTime(s.clock.Now())}
	switch {
	case failed != "":
		st.DisruptionsAllowed = 0
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, policyv1.SyncFailedReason, failed
	default:
		st.DisruptionsAllowed = max(st.CurrentHealthy-desired, 0)
		if st.DisruptionsAllowed > 0 {
			cond.Status, cond.Reason = metav1.ConditionTrue, policyv1.SufficientPodsReason
		} else {
			cond.Status, cond.Reason = metav1.ConditionFalse, policyv1.InsufficientPodsReason
		}
	}
	if old := meta.FindStatusCondition(pdb.Status.Conditions, cond.Type); old != nil && old.Status == cond.Status {
		cond.LastTransitionTime = old.LastTransitionTime
	}
	st.Conditions = []metav1.Condition{cond}
	return st
}

// expectedScaleLocked sums the replicas of the controllers of pods, each
// counted once; a Deployment's ReplicaSet counts as its Deployment.
func (s *Server) expectedScaleLocked(pods []*corev1.Pod) (int32, error) {
	seen := map[types.UID]bool{}
	var total int32
	for _, p := range pods {
		ctrl := controllerOf(p)
		if ctrl == nil {
			return 0, fmt.Errorf("found no controller for pod %q", p.Name)
		}
		if seen[ctrl.UID] {
			continue
		}
		seen[ctrl.UID] = true
		n, uid, err := s.scaleOfLocked(p.Namespace, ctrl)
		if err != nil {
			return 0, err
		}
		if uid != "" && uid != ctrl.UID {
			if seen[uid] {
				continue
			}
			seen[uid] = true
		}
		total += n
	}
	return total, nil
}

// scaleOfLocked returns the replicas of a pod's controller, and the UID of
// the object the scale was read from when it is not the controller itself
// (a ReplicaSet's Deployment).
func (s *Server) scaleOfLocked(namespace string, ctrl *metav1.OwnerReference) (int32, types.UID, error) {
	key := types.NamespacedName{Namespace: namespace, Name: ctrl.Name}
	replicas := func(p *int32) int32 {
		if p == nil {
			return 1
		}
		return *p
	}
	switch ctrl.Kind {
	case "ReplicaSet":
		rs, ok := s.store(replicaSetGVK).objs[key].(*appsv1.ReplicaSet)
		if !ok {
			return 0, "", fmt.Errorf("replicaset %q not found", ctrl.Name)
		}
		if owner := metav1.GetControllerOf(rs); owner != nil && owner.Kind == "Deployment" {
			if d, ok := s.store(deploymentGVK).objs[types.NamespacedName{Namespace: namespace, Name: owner.Name}].(*appsv1.Deployment); ok {
				return replicas(d.Spec.Replicas), d.UID, nil
			}
		}
		return replicas(rs.Spec.Replicas), "", nil
	case "StatefulSet":
		ss, ok := s.store(statefulSetGVK).objs[key].(*appsv1.StatefulSet)
		if !ok {
			return 0, "", fmt.Errorf("statefulset %q not found", ctrl.Name)
		}
		return replicas(ss.Spec.Replicas), "", nil
	case "ReplicationController":
		rc, ok := s.store(rcGVK).objs[key].(*corev1.ReplicationController)
		if !ok {
			return 0, "", fmt.Errorf("replicationcontroller %q not found", ctrl.Name)
		}
		return replicas(rc.Spec.Replicas), "", nil
	}
	return 0, "", fmt.Errorf("%s %q does not implement the scale subresource", ctrl.Kind, ctrl.Name)
}

// controllerOf is metav1.GetControllerOf without the copy it makes: this
// runs for every pod a budget selects.
func controllerOf(p *corev1.Pod) *metav1.OwnerReference {
	for i := range p.OwnerReferences {
		if r := &p.OwnerReferences[i]; r.Controller != nil && *r.Controller {
			return r
		}
	}
	return nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
