package disruption

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	decide "github.com/stevedore-autoscaler/stevedore/decide/disruption"
	"github.com/stevedore-autoscaler/stevedore/state"
)

// orphan is a candidate of a command that no command in memory owns.
type orphan struct {
	nodeClaim *karpv1.NodeClaim
	node      string
}

// adoptOrphans finds what commands left in the API that no command in memory
// owns (after a restart, a failover, or a rollback that failed half way) and
// deals with it:
//
//   - candidates of a command whose replacements all exist are taken over:
//     marked for deletion again and waited for like any command in flight,
//     with the timeout counted from the command's start, so they are deleted
//     only once every replacement is initialized;
//   - candidates of a command whose replacements do not all exist (one
//     failed, or the controller stopped before launching them) are rolled
//     back;
//   - disrupted taints and command annotations on nodes that no command
//     claims (no DisruptionReason condition) are removed.
//
// NodeClaims being deleted, and those with a forceful DisruptionReason
// (Expired, Interrupted, Unhealthy), are left to the controllers handling
// them.
func (c *Controller) adoptOrphans(ctx context.Context, now time.Time) (time.Duration, error) {
	for id, at := range c.done {
		if now.Sub(at) >= FullPassInterval {
			delete(c.done, id)
		}
	}
	snap := c.state.Snapshot(now)
	groups := map[string][]orphan{}
	replacements := map[string][]*karpv1.NodeClaim{}
	var stale []orphan
	for _, n := range snap.Nodes {
		nc := n.NodeClaim
		if nc == nil {
			continue
		}
		if id := nc.Annotations[AnnotationReplacementFor]; id != "" && !n.Deleting() {
			replacements[id] = append(replacements[id], nc)
		}
		if c.owner[nc.Name] != "" || n.Deleting() {
			continue
		}
		if _, ok := c.done[nc.Annotations[AnnotationCommand]]; ok {
			continue
		}
		node := nc.Status.NodeName
		if n.Node != nil {
			node = n.Node.Name
		}
		cond := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeDisruptionReason)
		switch {
		case cond == nil || cond.Status != metav1.ConditionTrue:
			if (n.Node != nil && hasDisruptedTaint(n.Node)) || nc.Annotations[AnnotationCommand] != "" {
				stale = append(stale, orphan{nc, node})
			}
		case !budgeted(cond.Reason):
		case nc.Annotations[AnnotationCommand] == "":
			// A budgeted reason without a command: set by an older
			// controller or by hand. Nothing says what it was waiting for.
			stale = append(stale, orphan{nc, node})
		default:
			id := nc.Annotations[AnnotationCommand]
			groups[id] = append(groups[id], orphan{nc, node})
		}
	}

	logger := log.FromContext(ctx)
	var errs []error
	for _, o := range stale {
		if err := c.releaseStale(ctx, o); err != nil {
			errs = append(errs, err)
		}
	}
	var wait time.Duration
	for _, id := range slices.Sorted(maps.Keys(groups)) {
		cm, why := c.resumable(id, groups[id], replacements[id], snap)
		if why != "" {
			if err := c.rollback(ctx, cm, why, now); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		logger.Info("resuming disruption command", "command", cm.id, "reason", metricReason(cm.reason),
			"nodeclaims", cm.candidates, "replacements", cm.replacements)
		c.state.MarkForDeletion(cm.candidates...)
		c.own(cm)
		w, err := c.step(ctx, cm, now)
		if err != nil {
			errs = append(errs, err)
		}
		if w > 0 && (wait == 0 || w < wait) {
			wait = w
		}
	}
	return wait, errors.Join(errs...)
}

// resumable rebuilds a command from its candidates and replacements as the
// API holds them. why is set when it cannot be resumed; the command returned
// then serves to roll it back.
func (c *Controller) resumable(id string, cands []orphan, reps []*karpv1.NodeClaim, snap state.Snapshot) (*command, string) {
	first := cands[0].nodeClaim
	cond := meta.FindStatusCondition(first.Status.Conditions, karpv1.ConditionTypeDisruptionReason)
	cm := &command{id: id, reason: decide.Reason(cond.Reason), method: decide.MethodDelete}
	for _, o := range cands {
		cm.candidates = append(cm.candidates, o.nodeClaim.Name)
		cm.nodes = append(cm.nodes, o.node)
	}
	expected, err := strconv.Atoi(first.Annotations[AnnotationReplacements])
	if err != nil || expected < 0 {
		return cm, fmt.Sprintf("its %s annotation %q is not a count", AnnotationReplacements, first.Annotations[AnnotationReplacements])
	}
	if expected > 0 {
		cm.method = decide.MethodReplace
	}
	started, err := time.Parse(time.RFC3339Nano, first.Annotations[AnnotationStarted])
	if err != nil {
		return cm, fmt.Sprintf("its %s annotation %q is not a time", AnnotationStarted, first.Annotations[AnnotationStarted])
	}
	cm.started = started
	cm.deadline = started.Add(c.replacementTimeout(len(c.inflight) + 1))
	for _, r := range reps {
		cm.replacements = append(cm.replacements, r.Name)
	}
	slices.Sort(cm.replacements)
	if len(cm.replacements) < expected {
		return cm, fmt.Sprintf("only %d of its %d replacement(s) exist", len(cm.replacements), expected)
	}
	return cm, ""
}

// releaseStale removes a disrupted taint or command annotations that no
// command claims. The NodeClaim is read again first: the state may not have
// seen a DisruptionReason that a forceful disruption has just set.
func (c *Controller) releaseStale(ctx context.Context, o orphan) error {
	claimed := false
	found, err := c.patchNodeClaim(ctx, o.nodeClaim.Name, true, func(nc *karpv1.NodeClaim) bool {
		cond := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeDisruptionReason)
		claimed = !nc.DeletionTimestamp.IsZero() || (cond != nil && cond.Status == metav1.ConditionTrue && !budgeted(cond.Reason))
		return false
	})
	if err != nil || !found || claimed {
		return err
	}
	log.FromContext(ctx).Info("removing disruption marks that no command claims", "NodeClaim", o.nodeClaim.Name, "Node", o.node)
	return c.release(ctx, o.nodeClaim.Name, o.node)
}
