package nodeclaim

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
)

// Reasons of a Consolidation verdict, written as the reason of the
// NodeClaim's Consolidatable condition.
const (
	// ReasonConsolidatable: consolidateAfter has passed since the last pod
	// event (or since initialization).
	ReasonConsolidatable = "Consolidatable"
	// ReasonConsolidateAfterNever: the NodePool's consolidateAfter is Never,
	// which turns consolidation and emptiness off for its nodes.
	ReasonConsolidateAfterNever = "ConsolidateAfterNever"
	// ReasonConsolidateAfterNotElapsed: a pod arrived or left too recently.
	ReasonConsolidateAfterNotElapsed = "ConsolidateAfterNotElapsed"
	// ReasonNotInitialized: the node is not initialized, so pods have not
	// had the chance to land on it and the window has not started.
	ReasonNotInitialized = "NotInitialized"
)

// Consolidation says whether consolidation may consider a NodeClaim and, if
// not yet, when it may.
type Consolidation struct {
	// Consolidatable is true once consolidateAfter has passed.
	Consolidatable bool
	// Reason is one of the Reason* constants of this file.
	Reason string
	// ConsolidateAfter is the NodePool's setting; nil for Never.
	ConsolidateAfter *time.Duration
	// Since is what the window counts from: status.lastPodEventTime or,
	// when no pod event was recorded, the Initialized condition's
	// transition. Zero when the NodeClaim is not initialized.
	Since time.Time
	// SincePodEvent is true when Since is status.lastPodEventTime.
	SincePodEvent bool
	// At is when the NodeClaim became, or becomes, consolidatable: Since
	// plus ConsolidateAfter. Zero when it will not on the current facts
	// (Never, or not initialized).
	At time.Time
}

// Remaining returns how long is left until the NodeClaim becomes
// consolidatable: zero when it already is or never will on the current
// facts (see At).
func (c Consolidation) Remaining(now time.Time) time.Duration {
	if c.Consolidatable || c.At.IsZero() || !now.Before(c.At) {
		return 0
	}
	return c.At.Sub(now)
}

// Message describes the verdict for the condition message and for
// explanations.
func (c Consolidation) Message() string {
	from := "initialization"
	if c.SincePodEvent {
		from = "the last pod event"
	}
	switch c.Reason {
	case ReasonConsolidatable:
		return fmt.Sprintf("consolidateAfter (%s) has passed since %s at %s", karpv1.NillableDuration{Duration: c.ConsolidateAfter}, from, c.Since.UTC().Format(time.RFC3339))
	case ReasonConsolidateAfterNever:
		return "the NodePool's consolidateAfter is Never"
	case ReasonConsolidateAfterNotElapsed:
		return fmt.Sprintf("consolidateAfter (%s) counts from %s at %s; consolidatable at %s",
			karpv1.NillableDuration{Duration: c.ConsolidateAfter}, from, c.Since.UTC().Format(time.RFC3339), c.At.UTC().Format(time.RFC3339))
	case ReasonNotInitialized:
		return "the node is not initialized yet"
	}
	return ""
}

// Consolidatable decides whether nc may be considered by consolidation at
// now, given its NodePool's spec.disruption.consolidateAfter.
//
// The window counts from status.lastPodEventTime or, when no pod event was
// ever recorded, from the Initialized condition's transition: that is when
// pods could first land on the node. A nil consolidateAfter is read as the
// API server's default, 0s; a consolidateAfter of Never (nil Duration) makes
// the NodeClaim never consolidatable.
func Consolidatable(nc *karpv1.NodeClaim, consolidateAfter *karpv1.NillableDuration, now time.Time) Consolidation {
	after := time.Duration(0)
	if consolidateAfter != nil {
		if consolidateAfter.IsNever() {
			return Consolidation{Reason: ReasonConsolidateAfterNever}
		}
		after = *consolidateAfter.Duration
	}
	out := Consolidation{ConsolidateAfter: &after}
	init := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeInitialized)
	if init == nil || init.Status != metav1.ConditionTrue {
		out.Reason = ReasonNotInitialized
		return out
	}
	out.Since = init.LastTransitionTime.Time
	if !nc.Status.LastPodEventTime.IsZero() {
		out.Since = nc.Status.LastPodEventTime.Time
		out.SincePodEvent = true
	}
	out.At = out.Since.Add(after)
	if now.Before(out.At) {
		out.Reason = ReasonConsolidateAfterNotElapsed
		return out
	}
	out.Consolidatable = true
	out.Reason = ReasonConsolidatable
	return out
}
