package termination

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
)

// podNodeNameField is the field by which a node's pods are listed: a field
// selector on the API server, an index in the manager's cache.
const podNodeNameField = "spec.nodeName"

// Drain timers.
const (
	// EvictionBaseDelay and EvictionMaxDelay bound the per-pod exponential
	// backoff after an eviction was refused.
	EvictionBaseDelay = 100 * time.Millisecond
	EvictionMaxDelay  = 10 * time.Second
	// DrainPollInterval is how often a drain that waits on pods (terminating,
	// or protected by do-not-disrupt) is looked at again; pod events also
	// trigger a reconcile.
	DrainPollInterval = 5 * time.Second
	// StuckTerminatingAfter is how long past its deletion timestamp a
	// terminating pod may linger before the drain stops waiting for it: its
	// kubelet is most likely gone.
	StuckTerminatingAfter = time.Minute
	// DefaultTerminationGracePeriod is the pod's grace period when the spec
	// leaves it unset (the API server defaults it to the same).
	DefaultTerminationGracePeriod = 30 * time.Second
)

// Priority classes that make a pod critical: critical pods leave last.
const (
	priorityClusterCritical = "system-cluster-critical"
	priorityNodeCritical    = "system-node-critical"
)

// annotationMirrorPod marks the API mirror of a static pod.
const annotationMirrorPod = corev1.MirrorPodAnnotationKey

// evictionBackoff is the retry state of one pod whose eviction was refused.
type evictionBackoff struct {
	attempts int
	next     time.Time
}

// tier orders the drain: every pod of a tier must be gone before the next
// tier is evicted.
type tier int

const (
	tierNonCriticalNonDaemon tier = iota
	tierNonCriticalDaemon
	tierCriticalNonDaemon
	tierCriticalDaemon
	tierCount
)

func (t tier) String() string {
	return [...]string{"non-critical", "non-critical daemon", "critical", "critical daemon"}[t]
}

// podTier returns the tier a pod is drained in.
func podTier(pod *corev1.Pod) tier {
	t := tierNonCriticalNonDaemon
	if isCritical(pod) {
		t = tierCriticalNonDaemon
	}
	if ownedBy(pod, "apps/v1", "DaemonSet") {
		t++
	}
	return t
}

func isCritical(pod *corev1.Pod) bool {
	return pod.Spec.PriorityClassName == priorityClusterCritical || pod.Spec.PriorityClassName == priorityNodeCritical
}

func ownedBy(pod *corev1.Pod, apiVersion, kind string) bool {
	for _, ref := range pod.OwnerReferences {
		if ref.APIVersion == apiVersion && ref.Kind == kind {
			return true
		}
	}
	return false
}

// mustLeave reports whether the node's termination waits for the pod to go.
// It does not for:
//   - pods that have succeeded or failed;
//   - static pods' mirrors (owned by the Node, or annotated as mirrors): the
//     API cannot remove them and they die with the node;
//   - pods that tolerate karpenter.sh/disrupted:NoSchedule (a bare Exists
//     toleration included): a scheduler could put them straight back on
//     this node, so evicting them only churns; they stop with the instance.
//     Karpenter makes the same choice;
//   - pods stuck terminating, StuckTerminatingAfter past their deletion
//     timestamp.
//
// Terminating pods that are not stuck do count: the drain waits for them,
// although it never evicts them again.
func mustLeave(pod *corev1.Pod, now time.Time) bool {
	switch {
	case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
		return false
	case ownedBy(pod, "v1", "Node"):
		return false
	case pod.Annotations[annotationMirrorPod] != "":
		return false
	case toleratesDisrupted(pod):
		return false
	case pod.DeletionTimestamp != nil && now.After(pod.DeletionTimestamp.Add(StuckTerminatingAfter)):
		return false
	}
	return true
}

// toleratesDisrupted reports whether one of the pod's tolerations matches
// the disrupted taint.
func toleratesDisrupted(pod *corev1.Pod) bool {
	taint := wellknown.DisruptedTaint()
	for _, tol := range pod.Spec.Tolerations {
		if tol.Effect != "" && tol.Effect != taint.Effect {
			continue
		}
		switch tol.Operator {
		case corev1.TolerationOpExists:
			if tol.Key == "" || tol.Key == taint.Key {
				return true
			}
		case corev1.TolerationOpEqual, "":
			if tol.Key == taint.Key && tol.Value == taint.Value {
				return true
			}
		}
	}
	return false
}

// doNotDisrupt reports whether the pod's karpenter.sh/do-not-disrupt
// annotation protects it at now: "true", or a positive duration not yet
// elapsed since the pod started (a pod not started yet is protected). Any
// other value protects nothing. reason is the event a value other than
// "true" calls for, as Karpenter records it while it drains:
// ReasonDoNotDisruptUntil (protected until until),
// ReasonDoNotDisruptGracePeriodElapsed or
// ReasonInvalidDoNotDisruptAnnotation; "" for none.
func doNotDisrupt(pod *corev1.Pod, now time.Time) (protected bool, reason string, until time.Time) {
	v, ok := pod.Annotations[wellknown.AnnotationDoNotDisrupt]
	if !ok {
		return false, "", time.Time{}
	}
	if v == "true" {
		return true, "", time.Time{}
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return false, ReasonInvalidDoNotDisruptAnnotation, time.Time{}
	}
	if pod.Status.StartTime == nil {
		return true, "", time.Time{}
	}
	until = pod.Status.StartTime.Add(d)
	if now.Before(until) {
		return true, ReasonDoNotDisruptUntil, until
	}
	return false, ReasonDoNotDisruptGracePeriodElapsed, until
}

// protected reports whether the pod's do-not-disrupt annotation keeps it
// from eviction at now, and records what a value other than "true" does
// (see doNotDisrupt), at most once per pod (and deadline, or value) every
// EventInterval.
func (r *Reconciler) protected(pod *corev1.Pod, now time.Time) bool {
	protected, reason, until := doNotDisrupt(pod, now)
	v := pod.Annotations[wellknown.AnnotationDoNotDisrupt]
	switch reason {
	case ReasonInvalidDoNotDisruptAnnotation:
		r.events.EventfBy(now, v, pod, nil, corev1.EventTypeWarning, ReasonInvalidDoNotDisruptAnnotation, "Drain",
			"ignoring %s=%q: it is neither \"true\" nor a positive duration", wellknown.AnnotationDoNotDisrupt, v)
	case ReasonDoNotDisruptUntil:
		at := until.UTC().Format(time.RFC3339)
		r.events.EventfBy(now, at, pod, nil, corev1.EventTypeNormal, ReasonDoNotDisruptUntil, "Drain",
			"%s=%s keeps the pod from being evicted until %s", wellknown.AnnotationDoNotDisrupt, v, at)
	case ReasonDoNotDisruptGracePeriodElapsed:
		r.events.Eventf(now, pod, nil, corev1.EventTypeNormal, ReasonDoNotDisruptGracePeriodElapsed, "Drain",
			"the %s=%s protection has run out: the pod may be evicted", wellknown.AnnotationDoNotDisrupt, v)
	}
	return protected
}

// gracePeriod returns the pod's terminationGracePeriodSeconds.
func gracePeriod(pod *corev1.Pod) time.Duration {
	if s := pod.Spec.TerminationGracePeriodSeconds; s != nil {
		return time.Duration(*s) * time.Second
	}
	return DefaultTerminationGracePeriod
}

// forceDeleteGrace decides whether the termination deadline makes the pod
// due for deletion now, and with which grace period in seconds. A pod is
// due once now reaches the deadline minus its own grace period, so that it
// gets as much of that grace as the node has left; a pod already
// terminating is deleted again only when its deletion would outlast the
// deadline. The grace period is the time left to the deadline, at least 1 s.
func forceDeleteGrace(pod *corev1.Pod, deadline, now time.Time) (int64, bool) {
	grace := max(int64(math.Floor(deadline.Sub(now).Seconds())), 1)
	if pod.DeletionTimestamp != nil {
		if !pod.DeletionTimestamp.After(deadline) {
			return 0, false
		}
		if pod.DeletionGracePeriodSeconds != nil && *pod.DeletionGracePeriodSeconds <= grace {
			return 0, false
		}
		return grace, true
	}
	if now.Before(deadline.Add(-gracePeriod(pod))) {
		return 0, false
	}
	return grace, true
}

// drain moves the node's pods off it. It reports whether the node is
// drained, and otherwise when to look again.
//
// First, if there is a deadline, pods whose force-delete time has come are
// deleted, bypassing PodDisruptionBudgets and do-not-disrupt. Then the first
// tier that still has pods is evicted through the Eviction API, which
// enforces PodDisruptionBudgets; a refusal (429) backs the pod off
// exponentially. Pods protected by do-not-disrupt are waited for, not
// evicted, until the deadline deletes them.
func (r *Reconciler) drain(ctx context.Context, node *corev1.Node, deadline *time.Time) (bool, time.Duration, error) {
	logger := log.FromContext(ctx)
	list := &corev1.PodList{}
	if err := r.kube.List(ctx, list, client.MatchingFields{podNodeNameField: node.Name}); err != nil {
		return false, 0, fmt.Errorf("listing pods of node %s: %w", node.Name, err)
	}
	now := r.clock.Now()

	var pods []*corev1.Pod
	for i := range list.Items {
		if p := &list.Items[i]; p.Spec.NodeName == node.Name && mustLeave(p, now) {
			pods = append(pods, p)
		}
	}
	slices.SortFunc(pods, func(a, b *corev1.Pod) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	backoff := r.backoffFor(node.Name, pods)
	if len(pods) == 0 {
		return true, 0, nil
	}

	// next is the soonest time at which something changes by the clock.
	next := now.Add(DrainPollInterval)
	sooner := func(t time.Time) {
		if t.Before(next) {
			next = t
		}
	}

	// Deadline: delete what has run out of time.
	deleted := map[types.UID]bool{}
	if deadline != nil {
		for _, p := range pods {
			grace, due := forceDeleteGrace(p, *deadline, now)
			if !due {
				if p.DeletionTimestamp == nil {
					sooner(deadline.Add(-gracePeriod(p)))
				}
				continue
			}
			err := r.kube.Delete(ctx, p, client.GracePeriodSeconds(grace), client.Preconditions{UID: &p.UID})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return false, 0, fmt.Errorf("deleting pod %s/%s at the termination deadline: %w", p.Namespace, p.Name, err)
			}
			deleted[p.UID] = true
			logger.Info("deleted pod at termination deadline", "pod", klogRef(p), "gracePeriodSeconds", grace, "deadline", deadline.UTC().Format(time.RFC3339))
			r.recorder.Eventf(p, node, corev1.EventTypeNormal, ReasonDisrupted, "Delete",
				"deleted pod with grace period %ds: node termination deadline %s reached", grace, deadline.UTC().Format(time.RFC3339))
		}
	}

	// Tiers: evict the first one that has pods.
	var byTier [tierCount][]*corev1.Pod
	for _, p := range pods {
		t := podTier(p)
		byTier[t] = append(byTier[t], p)
	}
	for t := range tierCount {
		if len(byTier[t]) == 0 {
			continue
		}
		for _, p := range byTier[t] {
			if p.DeletionTimestamp != nil || deleted[p.UID] || r.protected(p, now) {
				continue
			}
			if b := backoff[p.UID]; b != nil && now.Before(b.next) {
				sooner(b.next)
				continue
			}
			if retry := r.evict(ctx, node, p, backoff, now); !retry.IsZero() {
				sooner(retry)
			}
		}
		logger.V(1).Info("draining node", "tier", t.String(), "pods", len(byTier[t]), "remaining", len(pods))
		break
	}
	r.events.Eventf(now, node, nil, corev1.EventTypeWarning, ReasonFailedDraining, "Drain",
		"not drained yet: %d pod(s) have still to leave", len(pods))
	return false, max(next.Sub(now), EvictionBaseDelay), nil
}

// evict asks the Eviction API to evict the pod. On refusal it records the
// backoff and returns the time to try again; otherwise the zero time.
func (r *Reconciler) evict(ctx context.Context, node *corev1.Node, pod *corev1.Pod, backoff map[types.UID]*evictionBackoff, now time.Time) time.Time {
	logger := log.FromContext(ctx).WithValues("pod", klogRef(pod))
	eviction := &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}},
	}
	err := r.kube.SubResource("eviction").Create(ctx, pod, eviction)
	r.metrics.EvictionRequested(evictionCode(err))
	switch {
	case err == nil:
		r.metrics.PodDrained(r.drainReasonOf(node.Name))
		delete(backoff, pod.UID)
		logger.Info("evicted pod")
		r.recorder.Eventf(pod, node, corev1.EventTypeNormal, ReasonEvicted, "Evict", "evicted pod from terminating node %s", node.Name)
		return time.Time{}
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		// Gone already, or replaced by a pod of the same name.
		delete(backoff, pod.UID)
		return time.Time{}
	}
	b := backoff[pod.UID]
	if b == nil {
		b = &evictionBackoff{}
		backoff[pod.UID] = b
	}
	b.attempts++
	delay := EvictionMaxDelay
	if b.attempts <= 20 {
		delay = min(EvictionBaseDelay<<(b.attempts-1), EvictionMaxDelay)
	}
	b.next = now.Add(delay)
	if apierrors.IsTooManyRequests(err) {
		logger.Info("eviction blocked by disruption budget", "attempt", b.attempts, "retryAfter", delay, "reason", err.Error())
		// On the node, as Karpenter records it, rate-limited with the
		// other FailedDraining events of the node.
		r.events.Eventf(now, node, pod, corev1.EventTypeWarning, ReasonFailedDraining, "Evict",
			"not drained yet: the eviction of pod %s was refused: %v", klogRef(pod), err)
		return b.next
	}
	logger.Error(err, "evicting pod", "attempt", b.attempts, "retryAfter", delay)
	r.recorder.Eventf(pod, node, corev1.EventTypeWarning, ReasonEvictionFailed, "Evict", "evicting pod: %v", err)
	return b.next
}

// backoffFor returns the node's backoff map, dropping the entries of pods no
// longer waited for.
func (r *Reconciler) backoffFor(nodeName string, pods []*corev1.Pod) map[types.UID]*evictionBackoff {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.backoff[nodeName]
	if m == nil {
		m = map[types.UID]*evictionBackoff{}
		r.backoff[nodeName] = m
	}
	live := make(map[types.UID]bool, len(pods))
	for _, p := range pods {
		live[p.UID] = true
	}
	for uid := range m {
		if !live[uid] {
			delete(m, uid)
		}
	}
	return m
}

// klogRef names a pod in log lines.
func klogRef(pod *corev1.Pod) string {
	return pod.Namespace + "/" + pod.Name
}

// evictionCode is the HTTP status of an eviction request's response.
func evictionCode(err error) int {
	if err == nil {
		return http.StatusOK
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		if code := status.Status().Code; code != 0 {
			return int(code)
		}
	}
	return http.StatusInternalServerError
}

// drainReason is why the NodeClaim's node is drained, as Karpenter labels
// karpenter_pods_drained_total: the reason of its DisruptionReason
// condition in lower case, or "deleted" when it was deleted otherwise.
func drainReason(nodeClaim *karpv1.NodeClaim) string {
	if nodeClaim != nil {
		if c := meta.FindStatusCondition(nodeClaim.Status.Conditions, karpv1.ConditionTypeDisruptionReason); c != nil && c.Status == metav1.ConditionTrue && c.Reason != "" {
			return strings.ToLower(c.Reason)
		}
	}
	return "deleted"
}
