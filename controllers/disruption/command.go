package disruption

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/controllers/provisioning"
	decide "github.com/stevedore-autoscaler/stevedore/decide/disruption"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/scheduling/resources"
	"github.com/stevedore-autoscaler/stevedore/state"
)

// command is a command in flight: its candidates are marked, annotated and
// tainted, its replacements created, and it waits for them to initialize.
type command struct {
	id     string
	reason decide.Reason
	method decide.Method
	ctype  string // the consolidation_type label
	// candidates are the candidates' NodeClaim names; nodes their Node names,
	// in the same order ("" when unknown).
	candidates []string
	nodes      []string
	// replacements are the names of the NodeClaims launched for it.
	replacements []string
	started      time.Time
	deadline     time.Time
}

// commandID names a command after its reason, its candidates and when it
// started: the same decision made again later, after a rollback, is another
// command, and replacements left over from the first are not counted as the
// second's.
func commandID(reason decide.Reason, nodeClaims []string, started time.Time) string {
	names := slices.Sorted(slices.Values(nodeClaims))
	h := sha256.New()
	h.Write([]byte(string(reason) + "\n" + strings.Join(names, "\n") + "\n" + started.UTC().Format(time.RFC3339Nano)))
	return metricReason(reason) + "-" + hex.EncodeToString(h.Sum(nil))[:12]
}

// replacementTimeout is how long a command started with queued commands in
// flight (itself included) waits for its replacements.
func (c *Controller) replacementTimeout(queued int) time.Duration {
	d := min(time.Duration(queued)*ReplacementTimeoutPerCommand, MaxReplacementTimeout)
	return max(d, c.opts.ReplacementTimeout)
}

func (c *Controller) own(cm *command) {
	c.inflight[cm.id] = cm
	for _, name := range cm.candidates {
		c.owner[name] = cm.id
	}
}

func (c *Controller) disown(cm *command) {
	delete(c.inflight, cm.id)
	for _, name := range cm.candidates {
		if c.owner[name] == cm.id {
			delete(c.owner, name)
		}
	}
}

// start carries a decided (and, for consolidation, validated) command out up
// to the wait for its replacements: mark, annotate and taint the candidates,
// then launch the replacements. A command without replacements goes on to
// delete its candidates at once. When something stands in the way the command
// is rolled back; an error is returned only when the API failed.
func (c *Controller) start(ctx context.Context, cmd *decide.Command, pools []packer.NodePool, now time.Time) error {
	logger := log.FromContext(ctx)
	cm := &command{reason: cmd.Reason, method: cmd.Method, ctype: consolidationType(cmd), started: now}
	for _, cand := range cmd.Candidates {
		cm.candidates = append(cm.candidates, cand.NodeClaimName())
		cm.nodes = append(cm.nodes, cand.Name())
	}
	cm.id = commandID(cm.reason, cm.candidates, now)
	cm.deadline = now.Add(c.replacementTimeout(len(c.inflight) + 1))
	// The seeds' log line: what goes, how, and what replaces it.
	logger.Info(cmd.String(), "reason", metricReason(cmd.Reason), "command", cm.id)

	// Marked first, so that no decision made meanwhile counts the
	// candidates as available or their budget as unused.
	c.state.MarkForDeletion(cm.candidates...)
	c.own(cm)
	for i := range cm.candidates {
		why, err := c.markCandidate(ctx, cm, i, len(cmd.Replacements), now)
		if err != nil || why != "" {
			if why == "" {
				why = err.Error()
			}
			return errors.Join(err, c.rollback(ctx, cm, why, now))
		}
	}
	if len(cmd.Replacements) > 0 {
		snap := c.state.Snapshot(now)
		names, why, err := c.launch(ctx, snap, pools, cmd.Replacements, cm.id, metricReason(cm.reason), now)
		cm.replacements = names
		if err != nil || why != "" {
			if why == "" {
				why = err.Error()
			}
			return errors.Join(err, c.rollback(ctx, cm, "launching replacements: "+why, now))
		}
		// Until they are up, and a while after, the replacements are
		// spoken for: the pods of the candidates are on their way.
		for _, name := range names {
			c.state.NominateReplacement(name, cm.deadline.Add(ReplacementNomination), ReplacementNomination)
		}
		for i, name := range cm.candidates {
			c.eventOnCandidate(ctx, now, name, cm.nodes[i], corev1.EventTypeNormal, ReasonDisruptionLaunching, "Launch",
				"launching NodeClaim(s) %s to replace it (%s, command %s)", strings.Join(names, ", "), metricReason(cm.reason), cm.id)
		}
	}
	c.metrics.DisruptionDecision(string(cm.method), metricReason(cm.reason), cm.ctype)
	for _, pool := range candidatePools(cmd) {
		c.metrics.DisruptionDecisionByNodePool(pool, string(cm.method), metricReason(cm.reason), cm.ctype)
	}
	if len(cm.replacements) == 0 {
		return c.finish(ctx, cm, now)
	}
	return nil
}

// markCandidate records the command on its i-th candidate: the
// DisruptionReason condition first (it is what a restart looks for), then the
// annotations, then the taint. why is set when the candidate may not be
// disrupted after all (it is gone or being deleted already).
func (c *Controller) markCandidate(ctx context.Context, cm *command, i, replacements int, now time.Time) (why string, err error) {
	name := cm.candidates[i]
	gone := ""
	found, err := c.patchNodeClaim(ctx, name, true, func(nc *karpv1.NodeClaim) bool {
		if !nc.DeletionTimestamp.IsZero() {
			gone = fmt.Sprintf("NodeClaim %s is being deleted already", name)
			return false
		}
		return setDisruptionReason(nc, string(cm.reason),
			fmt.Sprintf("disrupting via %s: %s (command %s)", cm.method, metricReason(cm.reason), cm.id), now)
	})
	switch {
	case err != nil:
		return "", err
	case !found:
		return fmt.Sprintf("NodeClaim %s no longer exists", name), nil
	case gone != "":
		return gone, nil
	}
	if _, err := c.patchNodeClaim(ctx, name, false, func(nc *karpv1.NodeClaim) bool {
		want := map[string]string{
			AnnotationCommand:      cm.id,
			AnnotationReplacements: strconv.Itoa(replacements),
			AnnotationStarted:      cm.started.UTC().Format(time.RFC3339Nano),
		}
		if nc.Annotations == nil {
			nc.Annotations = map[string]string{}
		}
		changed := false
		for k, v := range want {
			if nc.Annotations[k] != v {
				nc.Annotations[k] = v
				changed = true
			}
		}
		return changed
	}); err != nil {
		return "", err
	}
	if node := cm.nodes[i]; node != "" {
		if err := c.taint(ctx, node); err != nil {
			return "", err
		}
	}
	return "", nil
}

// launch creates the NodeClaims for claims, each checked against its
// NodePool's limits as they are now and annotated with the command's ID, and
// records them in the cluster state. It returns the names of those created;
// why says why the next could not be (its NodePool is gone, or its limits do
// not allow it).
func (c *Controller) launch(ctx context.Context, snap state.Snapshot, pools []packer.NodePool, claims []packer.NodeClaim, id, reasonLabel string, now time.Time) (names []string, why string, err error) {
	byName := make(map[string]*packer.NodePool, len(pools))
	for i := range pools {
		byName[pools[i].Name] = &pools[i]
	}
	added := map[string]corev1.ResourceList{}
	for _, claim := range claims {
		np := &karpv1.NodePool{}
		if err := c.kube.Get(ctx, client.ObjectKey{Name: claim.NodePool}, np); err != nil {
			if apierrors.IsNotFound(err) {
				return names, fmt.Sprintf("NodePool %s no longer exists", claim.NodePool), nil
			}
			return names, "", fmt.Errorf("getting NodePool %s: %w", claim.NodePool, err)
		}
		if !np.DeletionTimestamp.IsZero() {
			return names, fmt.Sprintf("NodePool %s is being deleted", np.Name), nil
		}
		used := resources.Add(snap.InUse(np.Name), added[np.Name])
		types, largest, why := provisioning.FitLimits(np, byName[np.Name], claim, used)
		if why != "" {
			return names, why, nil
		}
		nc := provisioning.NewNodeClaim(np, claim, types)
		provisioning.MarkOverlays(nc, byName[np.Name], types)
		nc.Annotations[AnnotationReplacementFor] = id
		provisioning.MarkMinValuesRelaxed(nc, claim)
		if err := c.kube.Create(ctx, nc); err != nil {
			return names, "", fmt.Errorf("creating a replacement NodeClaim in NodePool %s: %w", np.Name, err)
		}
		c.state.UpdateNodeClaim(nc)
		// The DaemonSet overhead it was sized with, which the provisioner
		// compares with the real DaemonSet pods once they are bound there.
		c.state.RecordDaemonOverhead(nc.Name, state.DaemonsFor(nc, snap.DaemonSetPods))
		added[np.Name] = resources.Add(added[np.Name], largest)
		names = append(names, nc.Name)
		c.metrics.NodeClaimCreated(reasonLabel, np.Name, claim.MinValuesRelaxed)
		log.FromContext(ctx).Info("created nodeclaim", "NodePool", np.Name, "NodeClaim", nc.Name,
			"reason", reasonLabel, "command", id, "instanceTypes", len(types))
	}
	return names, "", nil
}

// progress moves every command in flight on, in ID order. It returns how
// soon the next pass should look again.
func (c *Controller) progress(ctx context.Context, now time.Time) (time.Duration, error) {
	var wait time.Duration
	var errs []error
	for _, id := range slices.Sorted(maps.Keys(c.inflight)) {
		w, err := c.step(ctx, c.inflight[id], now)
		if err != nil {
			errs = append(errs, err)
		}
		if w > 0 && (wait == 0 || w < wait) {
			wait = w
		}
	}
	return wait, errors.Join(errs...)
}

// step looks at a command's replacements: when all are initialized the
// candidates go; when one failed, or the wait is over, the command is
// rolled back; otherwise it asks to look again.
func (c *Controller) step(ctx context.Context, cm *command, now time.Time) (time.Duration, error) {
	ready := 0
	for _, name := range cm.replacements {
		nc := &karpv1.NodeClaim{}
		err := c.kube.Get(ctx, nodeClaimKey(name), nc)
		if apierrors.IsNotFound(err) && c.opts.LiveReader != nil {
			// The cache learns of a NodeClaim a moment after this controller
			// created it: ask the API server before calling it deleted.
			err = c.opts.LiveReader.Get(ctx, nodeClaimKey(name), nc)
		}
		switch {
		case apierrors.IsNotFound(err):
			return 0, c.rollback(ctx, cm, fmt.Sprintf("replacement %s was deleted before it initialized", name), now)
		case err != nil:
			return 0, fmt.Errorf("getting replacement NodeClaim %s: %w", name, err)
		case !nc.DeletionTimestamp.IsZero():
			return 0, c.rollback(ctx, cm, fmt.Sprintf("replacement %s is being deleted before it initialized%s", name, launchNote(nc)), now)
		case meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeInitialized):
			ready++
		default:
			c.dedupe.Eventf(now, nc, nil, corev1.EventTypeNormal, ReasonDisruptionWaitingReadiness, "Wait",
				"the %s disruption (command %s) goes on once this replacement is initialized", metricReason(cm.reason), cm.id)
		}
	}
	if ready == len(cm.replacements) {
		return 0, c.finish(ctx, cm, now)
	}
	if !now.Before(cm.deadline) {
		return 0, c.rollback(ctx, cm, fmt.Sprintf("%d of %d replacement(s) (%s) did not initialize within %s",
			len(cm.replacements)-ready, len(cm.replacements), strings.Join(cm.replacements, ", "), cm.deadline.Sub(cm.started)), now)
	}
	return min(WaitPoll, cm.deadline.Sub(now)), nil
}

// launchNote says why a replacement failed, when its Launched condition
// does.
func launchNote(nc *karpv1.NodeClaim) string {
	if l := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeLaunched); l != nil && l.Status != metav1.ConditionTrue && l.Message != "" {
		return ": " + l.Message
	}
	return ""
}

// finish deletes the candidates of a command whose replacements are all
// initialized (or that needs none). The NodeClaim and Node finalizers then
// drain and terminate them.
func (c *Controller) finish(ctx context.Context, cm *command, now time.Time) error {
	logger := log.FromContext(ctx)
	var errs []error
	for i, name := range cm.candidates {
		nc := &karpv1.NodeClaim{}
		if err := c.kube.Get(ctx, nodeClaimKey(name), nc); err != nil {
			if !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("getting NodeClaim %s: %w", name, err))
			}
			continue
		}
		if !nc.DeletionTimestamp.IsZero() {
			continue
		}
		if err := c.kube.Delete(ctx, nc, client.Preconditions{UID: &nc.UID}); err != nil {
			if !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("deleting NodeClaim %s: %w", name, err))
			}
			continue
		}
		// Counted once: a NodeClaim being deleted is skipped above.
		c.metrics.NodeClaimDisrupted(metricReason(cm.reason), nc.Labels[wellknown.LabelNodePool], nc.Labels[wellknown.LabelCapacityType])
		logger.Info("deleting disrupted nodeclaim", "NodeClaim", name, "Node", cm.nodes[i], "reason", metricReason(cm.reason), "command", cm.id)
		c.eventOnCandidate(ctx, now, name, cm.nodes[i], corev1.EventTypeNormal, ReasonDisruptionTerminating, "Delete",
			"disrupting %s via %s: %s (command %s)", describeNodeClaim(nc), cm.method, metricReason(cm.reason), cm.id)
	}
	if len(errs) > 0 {
		// Stay in flight: the next pass deletes what is left.
		return errors.Join(errs...)
	}
	for _, name := range cm.replacements {
		c.state.Nominate(name, now.Add(ReplacementNomination))
	}
	c.disown(cm)
	c.done[cm.id] = now
	return nil
}

// rollback abandons a command: its candidates lose the taint, the
// annotations, the condition and the mark, and the failure is recorded.
// Replacements stay; those that come up are consolidated away if unneeded.
func (c *Controller) rollback(ctx context.Context, cm *command, why string, now time.Time) error {
	log.FromContext(ctx).Info("disruption command failed; rolling back", "command", cm.id,
		"reason", metricReason(cm.reason), "nodeclaims", strings.Join(cm.candidates, ","), "why", why)
	var errs []error
	for i, name := range cm.candidates {
		if err := c.release(ctx, name, cm.nodes[i]); err != nil {
			errs = append(errs, err)
			continue
		}
		c.eventOnCandidate(ctx, now, name, cm.nodes[i], corev1.EventTypeWarning, ReasonDisruptionFailed, "Rollback",
			"%s disruption via %s abandoned (command %s): %s", metricReason(cm.reason), cm.method, cm.id, why)
	}
	c.state.UnmarkForDeletion(cm.candidates...)
	c.metrics.DisruptionQueueFailure(string(cm.method), metricReason(cm.reason), cm.ctype)
	// Whatever could not be undone now is found again as an orphan on the
	// next pass and undone then.
	c.disown(cm)
	c.holdUntil = now.Add(Period)
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	c.done[cm.id] = now
	return nil
}

// release removes what a command put on a candidate, in the reverse order:
// the taint, the annotations, then the condition, so that a crash half way
// leaves the condition that marks the candidate for the next attempt. A
// candidate being deleted is left alone: its termination needs the taint,
// and the condition says why it went. Only a budgeted DisruptionReason is
// removed; a forceful one (Expired, Interrupted, Unhealthy) belongs to the
// controller that set it.
func (c *Controller) release(ctx context.Context, name, node string) error {
	deleting := false
	if _, err := c.patchNodeClaim(ctx, name, false, func(nc *karpv1.NodeClaim) bool {
		deleting = !nc.DeletionTimestamp.IsZero()
		return false
	}); err != nil || deleting {
		return err
	}
	if node != "" {
		if err := c.untaint(ctx, node); err != nil {
			return err
		}
	}
	if _, err := c.patchNodeClaim(ctx, name, false, func(nc *karpv1.NodeClaim) bool {
		if !nc.DeletionTimestamp.IsZero() {
			return false
		}
		changed := false
		for _, k := range []string{AnnotationCommand, AnnotationReplacements, AnnotationStarted} {
			if _, ok := nc.Annotations[k]; ok {
				delete(nc.Annotations, k)
				changed = true
			}
		}
		return changed
	}); err != nil {
		return err
	}
	_, err := c.patchNodeClaim(ctx, name, true, func(nc *karpv1.NodeClaim) bool {
		cond := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeDisruptionReason)
		if !nc.DeletionTimestamp.IsZero() || cond == nil || !budgeted(cond.Reason) {
			return false
		}
		return meta.RemoveStatusCondition(&nc.Status.Conditions, karpv1.ConditionTypeDisruptionReason)
	})
	return err
}

// setDisruptionReason sets the DisruptionReason condition and reports
// whether it changed.
func setDisruptionReason(nc *karpv1.NodeClaim, reason, message string, now time.Time) bool {
	return meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{
		Type:               karpv1.ConditionTypeDisruptionReason,
		Status:             metav1.ConditionTrue,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: nc.Generation,
		LastTransitionTime: metav1.NewTime(now),
	})
}

// eventOnCandidate records an event on a candidate's NodeClaim and Node,
// whichever still exist.
func (c *Controller) eventOnCandidate(ctx context.Context, now time.Time, nodeClaim, node, eventType, reason, action, note string, args ...any) {
	if c.recorder == nil {
		return
	}
	nc := &karpv1.NodeClaim{}
	if err := c.kube.Get(ctx, nodeClaimKey(nodeClaim), nc); err == nil {
		c.events.Eventf(now, nc, nil, eventType, reason, action, note, args...)
	}
	if node == "" {
		return
	}
	n := &corev1.Node{}
	if err := c.kube.Get(ctx, client.ObjectKey{Name: node}, n); err == nil {
		c.events.Eventf(now, n, nil, eventType, reason, action, note, args...)
	}
}

// candidatePools returns the NodePools of the command's candidates, sorted,
// each once.
func candidatePools(cmd *decide.Command) []string {
	var pools []string
	for _, cand := range cmd.Candidates {
		if cand.NodePool == nil || slices.Contains(pools, cand.NodePool.Name) {
			continue
		}
		if p := cand.NodePool.Name; p != "" {
			pools = append(pools, p)
		}
	}
	slices.Sort(pools)
	return pools
}
