package lifecycle

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
)

// Registration health of NodePools.
//
// The outcome of each launch's registration (the node joined, or the
// NodeClaim was deleted at RegistrationTimeout) is appended to a short
// history kept in the NodePool's AnnotationRegistrationOutcomes annotation,
// so that a restart loses none of it, and the NodePool's
// NodeRegistrationHealthy condition is derived from that history.
const (
	// AnnotationRegistrationOutcomes holds a NodePool's recent registration
	// outcomes as "<node class generation>/<outcomes>", the outcomes oldest
	// first, one character each: OutcomeRegistered or OutcomeFailed. The
	// history starts afresh when the NodePool's
	// status.nodeClassObservedGeneration differs from the recorded one.
	AnnotationRegistrationOutcomes = "stevedore.io/registration-outcomes"
	// RegistrationHistory is how many outcomes are kept.
	RegistrationHistory = 10

	OutcomeRegistered = 'S'
	OutcomeFailed     = 'F'

	// ReasonRegistrationFailed makes NodeRegistrationHealthy False.
	ReasonRegistrationFailed = "RegistrationFailed"
	// ReasonRegistrationHealthy makes NodeRegistrationHealthy True.
	ReasonRegistrationHealthy = "RegistrationHealthy"
)

// outcomes is a parsed AnnotationRegistrationOutcomes value.
type outcomes struct {
	generation int64
	history    string
}

func parseOutcomes(s string) outcomes {
	gen, hist, ok := strings.Cut(s, "/")
	if !ok {
		return outcomes{}
	}
	g, err := strconv.ParseInt(gen, 10, 64)
	if err != nil {
		return outcomes{}
	}
	var b strings.Builder
	for _, c := range hist {
		if c == OutcomeRegistered || c == OutcomeFailed {
			b.WriteRune(c)
		}
	}
	return outcomes{generation: g, history: b.String()}
}

func (o outcomes) String() string {
	return strconv.FormatInt(o.generation, 10) + "/" + o.history
}

// add appends an outcome judged against the node class generation gen,
// dropping the history when it was judged against another generation and
// keeping the last RegistrationHistory outcomes.
func (o outcomes) add(gen int64, registered bool) outcomes {
	if o.generation != gen {
		o = outcomes{generation: gen}
	}
	c := OutcomeFailed
	if registered {
		c = OutcomeRegistered
	}
	o.history += string(c)
	if n := len(o.history); n > RegistrationHistory {
		o.history = o.history[n-RegistrationHistory:]
	}
	return o
}

// health returns the NodeRegistrationHealthy condition the history calls for:
// False when at least two outcomes are known and at least half of them are
// failures, True otherwise.
func (o outcomes) health(nodePool string) (metav1.ConditionStatus, string, string) {
	failed := strings.Count(o.history, string(OutcomeFailed))
	n := len(o.history)
	if n >= 2 && 2*failed >= n {
		return metav1.ConditionFalse, ReasonRegistrationFailed, fmt.Sprintf(
			"%d of the last %d nodes launched from NodePool %s did not join the cluster within %s. %s",
			failed, n, nodePool, RegistrationTimeout, registrationFailureCauses)
	}
	return metav1.ConditionTrue, ReasonRegistrationHealthy, fmt.Sprintf("%d of the last %d nodes launched from NodePool %s joined the cluster", n-failed, n, nodePool)
}

// recordRegistration appends a registration outcome of nc to its NodePool's
// history and updates the NodePool's NodeRegistrationHealthy condition. A
// NodeClaim without a NodePool, or whose NodePool is gone, records nothing.
//
// The annotation and the condition are written separately, each with a
// merge patch guarded by the resource version and retried on conflict; the
// condition is derived from the annotation as read, so retrying it cannot
// count an outcome twice.
func (r *Reconciler) recordRegistration(ctx context.Context, nc *karpv1.NodeClaim, registered bool) error {
	name := nc.Labels[wellknown.LabelNodePool]
	if name == "" {
		return nil
	}
	np := &karpv1.NodePool{}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := r.client.Get(ctx, client.ObjectKey{Name: name}, np); err != nil {
			return err
		}
		base := np.DeepCopy()
		o := parseOutcomes(np.Annotations[AnnotationRegistrationOutcomes]).add(np.Status.NodeClassObservedGeneration, registered)
		if np.Annotations == nil {
			np.Annotations = map[string]string{}
		}
		np.Annotations[AnnotationRegistrationOutcomes] = o.String()
		return r.client.Patch(ctx, np, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("recording a registration outcome on NodePool %s: %w", name, err)
	}
	first := true
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !first {
			if err := r.client.Get(ctx, client.ObjectKey{Name: name}, np); err != nil {
				return err
			}
		}
		first = false
		base := np.DeepCopy()
		status, reason, msg := parseOutcomes(np.Annotations[AnnotationRegistrationOutcomes]).health(np.Name)
		meta.SetStatusCondition(&np.Status.Conditions, metav1.Condition{
			Type:               karpv1.ConditionTypeNodeRegistrationHealthy,
			Status:             status,
			Reason:             reason,
			Message:            msg,
			ObservedGeneration: np.Generation,
			LastTransitionTime: metav1.NewTime(r.clock.Now()),
		})
		if equality.Semantic.DeepEqual(base.Status, np.Status) {
			return nil
		}
		return r.client.Status().Patch(ctx, np, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("setting %s on NodePool %s: %w", karpv1.ConditionTypeNodeRegistrationHealthy, name, err)
	}
	return nil
}
