// Package disruption is the disruption controller: the singleton that takes
// nodes away on stevedore's own initiative (empty, underutilized and drifted
// nodes, within the NodePools' budgets) and carries each decision out as a
// command that can survive a restart at any step.
//
// The decision is package decide/disruption's, a pure function of a cluster
// snapshot, the NodePools' instance types, the budgets still open and a time.
// This package gathers those inputs, asks for a decision at most every Period
// (and right after a command has started), and carries the command out:
//
//  1. Empty and Underutilized commands wait ValidationDelay and are checked
//     again against a fresh snapshot (decide/disruption.Validate); a command
//     that no longer holds is dropped with a ConsolidationRejected event.
//     Drift commands start at once.
//  2. The candidates are marked for deletion in the cluster state, their
//     NodeClaims get the DisruptionReason condition and the command's
//     annotations, and their Nodes the karpenter.sh/disrupted:NoSchedule
//     taint.
//  3. The replacements are created, annotated with the command's ID.
//  4. Once every replacement is Initialized the candidates' NodeClaims are
//     deleted; their finalizers drain the nodes through the Eviction API,
//     honouring PodDisruptionBudgets. If a replacement fails, or does not
//     initialize within the replacement timeout, the command is rolled back:
//     taints, conditions, annotations and marks are removed, and replacements
//     that did come up stay (consolidation removes them if they are not
//     needed).
//
// Everything a command needs to be resumed is in the API: the condition, the
// annotations (command ID, number of replacements, start time) and the taint.
// On every pass the controller looks for candidates that no command in its
// memory owns (after a restart, or a failover to another replica) and resumes
// their command when all its replacements exist, or rolls it back otherwise.
// A candidate is never deleted before its replacements are initialized, a
// node is never left tainted by a command that is gone, and resumed
// candidates are marked for deletion again before any new decision, so that
// budgets count them.
//
// Deciding is the expensive part, so a pass skips it when nothing the
// decision reads has changed since the last one (a fingerprint of the
// snapshot's objects and resource versions, the marks and nominations, and
// the budgets left, so a budget that opens, by the clock or because a
// disrupting node is gone, changes it), but decides at least every
// FullPassInterval. A pass is skipped whole, without listing or a snapshot,
// while the cluster state has not changed since a pass that found nothing to
// do and no budget window edge, nomination expiry or full-pass deadline has
// come. Within a decision, consolidation's packings are left out while a
// consolidation that found nothing still answers for them (see
// consolidationMemo). No new decision is made while a
// command waits for its validation delay, nor for a Period after a command
// was rolled back.
//
// Forceful disruption of interrupted instances goes through Interrupt, which
// launches replacement capacity and deletes the NodeClaim at once, bypassing
// budgets.
//
// The controller starts no goroutines and reads time only from its clock:
// waits are expressed as RequeueAfter, so the simulator can drive it.
package disruption

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/cloud"
	"github.com/stevedore-autoscaler/stevedore/controllers/eventlimit"
	"github.com/stevedore-autoscaler/stevedore/controllers/metrics"
	"github.com/stevedore-autoscaler/stevedore/controllers/provisioning"
	"github.com/stevedore-autoscaler/stevedore/controllers/singleton"
	"github.com/stevedore-autoscaler/stevedore/decide/budget"
	decide "github.com/stevedore-autoscaler/stevedore/decide/disruption"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/state"
)

// Name is the controller's name, as registered with the manager and used as
// the event source.
const Name = "disruption"

// Timers.
const (
	// Period is how often the controller decides when nothing else wakes it.
	Period = 10 * time.Second
	// Again is the wait before the next pass right after a command started:
	// the next decision should not wait for the period, but it goes through
	// the work queue like any other pass.
	Again = time.Millisecond
	// SyncRetry is the wait before trying again when the cluster state has
	// not caught up with the API server.
	SyncRetry = time.Second
	// FullPassInterval is the longest the controller skips deciding because
	// nothing in the snapshot changed: some inputs (instance type
	// availability, do-not-disrupt durations) change without an API event.
	FullPassInterval = 5 * time.Minute
	// DefaultValidationDelay is how long an Empty or Underutilized command
	// waits before it is validated again and carried out.
	DefaultValidationDelay = 15 * time.Second
	// DefaultReplacementTimeout is how long a command waits at least for its
	// replacements to initialize before it is rolled back.
	DefaultReplacementTimeout = 10 * time.Minute
	// MaxReplacementTimeout caps the wait, however many commands are queued.
	MaxReplacementTimeout = time.Hour
	// ReplacementTimeoutPerCommand lengthens the wait with the number of
	// commands in flight, as Karpenter does: a large rollout launches many
	// nodes at once, and each takes longer to come up.
	ReplacementTimeoutPerCommand = 80 * time.Millisecond
	// WaitPoll is how often the replacements of commands in flight are looked
	// at.
	WaitPoll = 5 * time.Second
	// ReplacementNomination is how long replacements stay nominated once
	// their candidates are being deleted, so that they are not taken away as
	// empty before the evicted pods land on them.
	ReplacementNomination = time.Minute
	// EventInterval is the least time between two events of the same reason
	// about the same object.
	EventInterval = time.Minute
	// UnconsolidatableEventInterval is the same for Unconsolidatable events,
	// which most nodes would otherwise get on every pass.
	UnconsolidatableEventInterval = 15 * time.Minute
	// DedupeInterval is the same for the events Karpenter dedupes over its
	// default window: DisruptionWaitingReadiness, ConsolidationCandidate,
	// ConsolidationApproved and the do-not-disrupt pod events.
	DedupeInterval = 2 * time.Minute
)

// Annotations that record a command in the API, so that it can be resumed or
// rolled back after a restart.
const (
	// AnnotationCommand, on a candidate NodeClaim, is the ID of the command
	// that takes it away.
	AnnotationCommand = "stevedore.io/disruption-command"
	// AnnotationReplacements, on a candidate NodeClaim, is how many
	// replacements its command launches.
	AnnotationReplacements = "stevedore.io/disruption-replacements"
	// AnnotationStarted, on a candidate NodeClaim, is when its command
	// started (RFC 3339); the replacement timeout counts from it.
	AnnotationStarted = "stevedore.io/disruption-started"
	// AnnotationReplacementFor, on a replacement NodeClaim, is the ID of the
	// command that launched it.
	AnnotationReplacementFor = "stevedore.io/replacement-for"
)

// Event reasons.
const (
	// ReasonDisruptionBlocked is a node that may not be disrupted: a
	// do-not-disrupt annotation, a PodDisruptionBudget or the NodePool's
	// disruption budget stands in the way.
	ReasonDisruptionBlocked = "DisruptionBlocked"
	// ReasonUnconsolidatable is a node that consolidation considered and
	// kept, with why.
	ReasonUnconsolidatable = "Unconsolidatable"
	// ReasonConsolidationRejected is a command dropped because it no longer
	// held after the validation delay.
	ReasonConsolidationRejected = "ConsolidationRejected"
	// ReasonConsolidationCandidate is a node a consolidation move would
	// replace with a cheaper one.
	ReasonConsolidationCandidate = "ConsolidationCandidate"
	// ReasonConsolidationApproved is a consolidation command the Balanced
	// policy approved: on the node for one node, on each NodePool for
	// several.
	ReasonConsolidationApproved = "ConsolidationApproved"
	// ReasonDisruptionLaunching is a candidate whose replacements are being
	// launched.
	ReasonDisruptionLaunching = "DisruptionLaunching"
	// ReasonDisruptionTerminating is a candidate being deleted.
	ReasonDisruptionTerminating = "DisruptionTerminating"
	// ReasonDisruptionFailed is a command rolled back.
	ReasonDisruptionFailed = "DisruptionFailed"
	// ReasonDisruptionWaitingReadiness is a replacement a command waits
	// for, not initialized yet.
	ReasonDisruptionWaitingReadiness = "DisruptionWaitingReadiness"
	// ReasonDoNotDisruptUntil, ReasonDoNotDisruptGracePeriodElapsed and
	// ReasonInvalidDoNotDisruptAnnotation are a pod on a candidate whose
	// karpenter.sh/do-not-disrupt annotation is a duration still
	// protecting it, a duration run out, or neither "true" nor a duration.
	ReasonDoNotDisruptUntil              = "DoNotDisruptUntil"
	ReasonDoNotDisruptGracePeriodElapsed = "DoNotDisruptGracePeriodElapsed"
	ReasonInvalidDoNotDisruptAnnotation  = "InvalidDoNotDisruptAnnotation"
)

// Request returns the request the controller reconciles: there is one
// disruption controller, whatever the request says.
func Request() reconcile.Request {
	return singleton.Request(Name)
}

// Options tune a Controller. The zero value gives the defaults.
type Options struct {
	// ValidationDelay is the wait before an Empty or Underutilized command
	// is validated again; default DefaultValidationDelay.
	ValidationDelay time.Duration
	// ReplacementTimeout is the least time a command waits for its
	// replacements to initialize; default DefaultReplacementTimeout. The
	// wait grows by ReplacementTimeoutPerCommand per command in flight, up to
	// MaxReplacementTimeout.
	ReplacementTimeout time.Duration
	// SpotToSpot allows replacing spot nodes with cheaper spot nodes
	// (Karpenter's SpotToSpotConsolidation feature gate).
	SpotToSpot bool
	// StaticCapacity replaces drifted nodes of static NodePools (Karpenter's
	// StaticCapacity feature gate); the static controller then also runs.
	StaticCapacity bool
	// PreferencePolicy says how preferred scheduling terms shape
	// replacements; default packer.PreferenceScore, as for the provisioner.
	PreferencePolicy packer.PreferencePolicy
	// MaxInstanceTypes caps the instance types listed on a replacement;
	// 0 means the packer's default.
	MaxInstanceTypes int
	// MinValuesPolicy applies to replacements as to the NodeClaims the
	// provisioner launches, as in Karpenter; default Strict.
	MinValuesPolicy packer.MinValuesPolicy
	// MaxConsolidationCandidates caps the candidates multi-node
	// consolidation considers (decide/disruption Options.MaxCandidates);
	// 0, the default, means no cap. Only the simulator's consolidation
	// benchmark sets it, to compare with a search capped at 100 candidates
	// as Karpenter's is.
	MaxConsolidationCandidates int
	// LiveReader reads from the API server itself (the manager's API
	// reader) where the cache may lag behind: a replacement the cache does
	// not show yet is looked up there before the command is rolled back as
	// if it had been deleted. Nil means the client's reads are current.
	LiveReader client.Reader
}

// Controller is the disruption controller. Create it with New. Reconcile is
// meant to be called by one worker at a time; Interrupt may be called
// concurrently with it.
type Controller struct {
	kube     client.Client
	state    *state.Cluster
	cloud    cloud.CloudProvider
	clock    clock.PassiveClock
	recorder events.EventRecorder
	metrics  *metrics.Metrics
	opts     Options
	// events rate-limits the events about blocked nodes and rejected
	// commands; unconsolidatable does the same, more sparingly.
	events           *eventlimit.Recorder
	unconsolidatable *eventlimit.Recorder
	// dedupe rate-limits the events Karpenter dedupes over its default
	// window (DedupeInterval).
	dedupe *eventlimit.Recorder

	// pending is the command waiting for its validation delay to pass.
	pending *pendingCommand
	// inflight holds the commands started and not yet finished, by ID, and
	// owner maps each of their candidate NodeClaims to its command's ID.
	inflight map[string]*command
	owner    map[string]string
	// done remembers, for FullPassInterval, the commands this controller
	// finished or rolled back, so that a state that has not caught up with
	// those writes yet does not make their candidates look like orphans.
	done map[string]time.Time

	// What the last decision was made from, to skip deciding again when
	// nothing changed.
	lastFingerprint uint64
	// lastPass is when the controller last looked at deciding, lastFull
	// when it last actually decided.
	lastPass time.Time
	lastFull time.Time
	// decideNow asks the next pass to decide without waiting for Period.
	decideNow bool
	// holdUntil keeps the controller from deciding for a Period after a
	// command was rolled back, so that a failing launch is not retried on
	// the spot (a replacement that timed out may still come up).
	holdUntil time.Time
	// quietAt and quietUntil let a pass be skipped whole: the last pass
	// found nothing to do with the cluster state at change count quietAt,
	// and nothing that depends on the time alone comes due before
	// quietUntil (see quiet).
	quietAt    uint64
	quietUntil time.Time
	// memo stands in for consolidation while nothing that could make room
	// has changed since it last found nothing (see consolidationMemo).
	memo *consolidationMemo
	// pools keeps the NodePools replacements launch from, between passes.
	pools provisioning.PoolMemo
	// packing is the packer cache the decisions and validations share
	// (decide.Options.Cache): each node's pods are read for packing again
	// only when they change.
	packing *packer.Cache
}

var _ reconcile.Reconciler = (*Controller)(nil)

// New returns a Controller that reads st (kept current by someone else,
// typically package state/informer), writes through c and asks cp for
// instance types. The recorder may be nil, which drops events; m may be nil,
// which drops metrics.
func New(c client.Client, st *state.Cluster, cp cloud.CloudProvider, clk clock.PassiveClock, rec events.EventRecorder, opts Options, m *metrics.Metrics) *Controller {
	if opts.ValidationDelay <= 0 {
		opts.ValidationDelay = DefaultValidationDelay
	}
	if opts.ReplacementTimeout <= 0 {
		opts.ReplacementTimeout = DefaultReplacementTimeout
	}
	if opts.PreferencePolicy == "" {
		opts.PreferencePolicy = packer.PreferenceScore
	}
	return &Controller{
		kube:             c,
		state:            st,
		cloud:            cp,
		clock:            clk,
		recorder:         rec,
		metrics:          m,
		opts:             opts,
		events:           eventlimit.New(rec, EventInterval),
		unconsolidatable: eventlimit.New(rec, UnconsolidatableEventInterval),
		dedupe:           eventlimit.New(rec, DedupeInterval),
		inflight:         map[string]*command{},
		owner:            map[string]string{},
		done:             map[string]time.Time{},
	}
}

// Register runs the Controller under the manager: it wakes once when the
// manager starts and then as its results ask.
func (c *Controller) Register(mgr manager.Manager) error {
	return singleton.Register(mgr, Name, c)
}

// Reconcile makes one pass: it moves the commands in flight on, resumes or
// rolls back commands that no command in memory owns, validates the command
// waiting for its delay, and decides anew. The request is ignored.
func (c *Controller) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	now := c.clock.Now()
	if c.quiet(now) {
		return reconcile.Result{RequeueAfter: min(Period, c.quietUntil.Sub(now))}, nil
	}
	changes := c.state.Changes()
	c.quietUntil = time.Time{}
	if !c.state.Synced(ctx, c.kube) {
		log.FromContext(ctx).V(1).Info("waiting for cluster state to sync")
		return reconcile.Result{RequeueAfter: SyncRetry}, nil
	}
	c.events.Forget(now)
	c.unconsolidatable.Forget(now)
	c.dedupe.Forget(now)

	// wait is the earliest time anything needs looking at again; Period
	// when nothing does.
	var wait time.Duration
	soon := func(d time.Duration) {
		if d > 0 && (wait == 0 || d < wait) {
			wait = d
		}
	}
	result := func() reconcile.Result {
		if wait == 0 {
			wait = Period
		}
		return reconcile.Result{RequeueAfter: wait}
	}
	var errs []error
	w, err := c.progress(ctx, now)
	soon(w)
	if err != nil {
		errs = append(errs, err)
	}
	w, err = c.adoptOrphans(ctx, now)
	soon(w)
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		// Deciding on top of a command half carried out could double-book
		// a budget; retry once the API answers again.
		return reconcile.Result{}, errors.Join(errs...)
	}

	if c.pending != nil {
		if due := c.pending.due; now.Before(due) {
			soon(due.Sub(now))
			return result(), nil
		}
		started, err := c.validate(ctx, now)
		if err != nil {
			return reconcile.Result{}, err
		}
		if started {
			return reconcile.Result{RequeueAfter: Again}, nil
		}
	}

	if now.Before(c.holdUntil) {
		soon(c.holdUntil.Sub(now))
		return result(), nil
	}
	if !c.decideNow && !c.lastPass.IsZero() && now.Sub(c.lastPass) < Period {
		soon(Period - now.Sub(c.lastPass))
		return result(), nil
	}
	w, err = c.decide(ctx, now, changes)
	soon(w)
	if err != nil {
		return reconcile.Result{}, err
	}
	return result(), nil
}

// quiet reports whether a whole pass may be skipped: the last one ended
// with no command in flight, none waiting for validation and no decision to
// make, the cluster state has not changed since it began, and nothing that
// depends on the time alone (a budget window, a nomination running out,
// FullPassInterval) has come due. Such a pass would find what the last one
// found; skipping it saves listing, a snapshot and a fingerprint of every
// pod every Period.
func (c *Controller) quiet(now time.Time) bool {
	return now.Before(c.quietUntil) && c.pending == nil && len(c.inflight) == 0 && !c.decideNow &&
		c.state.Changes() == c.quietAt
}

// markQuiet records, after a pass that found nothing to do, until when the
// same state gives the same answer (see quiet).
func (c *Controller) markQuiet(snap state.Snapshot, changes uint64, now time.Time) {
	if c.pending != nil || len(c.inflight) > 0 || c.decideNow {
		return
	}
	until := earlier(c.lastFull.Add(FullPassInterval), nominationEnds(snap, now))
	for _, np := range snap.NodePools {
		if next, ok := budget.NextChange(np, now); ok && next.Before(until) {
			until = next
		}
	}
	c.quietAt, c.quietUntil = changes, until
}

// decide asks for a decision, unless nothing changed since the last one,
// and carries it out: a drift command starts now, a consolidation command
// waits for its validation delay. It returns how soon the next pass should
// come.
func (c *Controller) decide(ctx context.Context, now time.Time, changes uint64) (time.Duration, error) {
	c.decideNow = false
	c.lastPass = now
	relaxations := c.state.Relaxations()
	snap := c.state.Snapshot(now)
	remaining := Remaining(snap, now)
	fp := fingerprint(snap, remaining)
	if fp == c.lastFingerprint && now.Sub(c.lastFull) < FullPassInterval {
		c.markQuiet(snap, changes, now)
		return Period, nil
	}
	in := c.input(ctx, snap, remaining)
	provisioning.RecordNoCompatibleInstanceTypes(c.events, now, snap, in.Pools, c.opts.MinValuesPolicy)
	pools := poolsHash(in.Pools)
	if c.memo.holds(relaxations, pools, remaining, now) {
		in.Options.SkipConsolidation, in.Options.Verdicts = true, c.memo.verdicts
	}
	done := c.metrics.StartScheduling(metrics.ControllerDisruption, len(snap.Nodes))
	start := time.Now()
	dec := decide.Decide(in)
	done()
	// decide.Decide runs every method in one pass: the pass is observed
	// under the reason and consolidation type of the command it found, or
	// "none".
	if dec.Command != nil {
		c.metrics.DisruptionEvaluated(metricReason(dec.Command.Reason), consolidationType(dec.Command), time.Since(start), len(dec.Command.Candidates))
	} else {
		c.metrics.DisruptionEvaluated("none", "", time.Since(start), 0)
	}
	switch {
	case dec.Command != nil:
		c.memo = nil
	case !in.Options.SkipConsolidation:
		c.memo = newConsolidationMemo(relaxations, pools, in, dec, now)
	}
	c.lastFingerprint, c.lastFull = fp, now
	c.scoredMoves(dec)
	c.blockedEvents(snap, dec.Blocked, now)
	c.consolidationEvents(snap, dec, now)
	c.doNotDisruptEvents(dec.DoNotDisrupt, now)
	cmd := dec.Command
	if cmd == nil {
		c.markQuiet(snap, changes, now)
		return Period, nil
	}
	if cmd.Reason == decide.ReasonEmpty || cmd.Reason == decide.ReasonUnderutilized {
		c.pending = &pendingCommand{cmd: cmd, due: now.Add(c.opts.ValidationDelay)}
		log.FromContext(ctx).V(1).Info("validating disruption command after delay", "command", cmd.String(), "delay", c.opts.ValidationDelay.String())
		return c.opts.ValidationDelay, nil
	}
	if err := c.start(ctx, cmd, in.Pools, now); err != nil {
		// The same decision may come back: decide again rather than skip.
		c.lastFingerprint = 0
		return 0, err
	}
	// As Karpenter's loop does after a command starts, decide again at
	// once: a rollout would otherwise take one node per Period, whatever
	// its budget allows.
	c.decideNow = true
	return Again, nil
}

// pendingCommand is a command waiting for its validation delay.
type pendingCommand struct {
	cmd *decide.Command
	due time.Time
}

// validate re-checks the pending command against a fresh snapshot and starts
// it if it still holds. It reports whether it started.
func (c *Controller) validate(ctx context.Context, now time.Time) (bool, error) {
	p := c.pending
	c.pending = nil
	c.decideNow = true
	snap := c.state.Snapshot(now)
	in := c.input(ctx, snap, Remaining(snap, now))
	cmd, rej := decide.Validate(in, p.cmd)
	if rej != nil {
		log.FromContext(ctx).Info("consolidation rejected", "code", rej.Code, "reason", rej.Message, "command", p.cmd.String())
		c.metrics.DisruptionFailedValidation(consolidationType(p.cmd))
		for _, cand := range p.cmd.Candidates {
			for _, obj := range nodeObjects(cand.Node) {
				c.events.Eventf(now, obj, nil, corev1.EventTypeNormal, ReasonConsolidationRejected, "Validate",
					"%s consolidation rejected (%s): %s", strings.ToLower(string(p.cmd.Reason)), rej.Code, rej.Message)
			}
		}
		return false, nil
	}
	if len(cmd.Candidates) < len(p.cmd.Candidates) {
		log.FromContext(ctx).Info("consolidation goes ahead with the candidates still valid",
			"kept", len(cmd.Candidates), "planned", len(p.cmd.Candidates), "command", cmd.String())
	}
	if err := c.start(ctx, cmd, in.Pools, now); err != nil {
		return false, err
	}
	return true, nil
}

// input gathers what a decision needs.
func (c *Controller) input(ctx context.Context, snap state.Snapshot, remaining map[string]map[decide.Reason]int) decide.Input {
	pools, _ := c.pools.LaunchablePools(ctx, c.cloud, snap)
	return decide.Input{
		Snapshot:  snap,
		Pools:     pools,
		Remaining: remaining,
		Options:   c.decisionOptions(snap),
	}
}

// decisionOptions are the decision's options: the controller's settings
// and the packer cache kept between decisions.
func (c *Controller) decisionOptions(snap state.Snapshot) decide.Options {
	return decide.Options{
		SpotToSpot:       c.opts.SpotToSpot,
		StaticCapacity:   c.opts.StaticCapacity,
		PreferencePolicy: c.opts.PreferencePolicy,
		MaxInstanceTypes: c.opts.MaxInstanceTypes,
		MinValuesPolicy:  c.opts.MinValuesPolicy,
		MaxCandidates:    c.opts.MaxConsolidationCandidates,
		Cache:            c.packingCache(snap),
	}
}

// packingCache returns the packer cache kept between decisions, first
// letting go of nodes that are gone once they could be a good part of it,
// and of NodePools that are gone.
func (c *Controller) packingCache(snap state.Snapshot) *packer.Cache {
	if c.packing == nil {
		c.packing = packer.NewCache()
	}
	if c.packing.Nodes() > 2*len(snap.Nodes)+64 {
		live := make(map[string]bool, len(snap.Nodes))
		for _, n := range snap.Nodes {
			live[n.Name()] = true
		}
		c.packing.RetainNodes(func(name string) bool { return live[name] })
	}
	if c.packing.Pools() > len(snap.NodePools) {
		live := make(map[string]bool, len(snap.NodePools))
		for _, np := range snap.NodePools {
			live[np.Name] = true
		}
		c.packing.RetainPools(func(name string) bool { return live[name] })
	}
	return c.packing
}

// Remaining returns, per NodePool of the snapshot and budgeted reason, how
// many more nodes may be disrupted at now (see package decide/budget).
func Remaining(snap state.Snapshot, now time.Time) map[string]map[decide.Reason]int {
	out := make(map[string]map[decide.Reason]int, len(snap.NodePools))
	for _, np := range snap.NodePools {
		a := budget.Compute(np, snap.Nodes, now)
		m := make(map[decide.Reason]int, len(budget.Reasons))
		for _, r := range budget.Reasons {
			m[decide.Reason(r)] = a.Remaining(r)
		}
		out[np.Name] = m
	}
	return out
}

// metricReason is a reason as the reason label of Karpenter's metrics
// spells it.
func metricReason(r decide.Reason) string { return strings.ToLower(string(r)) }

// consolidationType is the consolidation_type label of a command.
func consolidationType(cmd *decide.Command) string {
	switch cmd.Reason {
	case decide.ReasonEmpty:
		return "empty"
	case decide.ReasonUnderutilized:
		if len(cmd.Candidates) > 1 {
			return "multi"
		}
		return "single"
	}
	return ""
}

// budgeted reports whether a DisruptionReason condition's reason is one the
// disruption controller sets (and so one it must resume or roll back).
func budgeted(reason string) bool {
	return decide.Reason(reason).Budgeted()
}

// nodeClaimKey is the key of a NodeClaim.
func nodeClaimKey(name string) client.ObjectKey { return client.ObjectKey{Name: name} }

// describeNodeClaim names a NodeClaim and its node for messages.
func describeNodeClaim(nc *karpv1.NodeClaim) string {
	if nc.Status.NodeName != "" {
		return fmt.Sprintf("%s (node %s)", nc.Name, nc.Status.NodeName)
	}
	return nc.Name
}

// scoredMoves records the consolidation moves this decision scored for a
// Balanced NodePool: the command's, approved, and each single-node
// rejection. Verdicts carried over from an earlier decision (SkipConsolidation)
// are not in dec.Verdicts, so no move is counted twice.
func (c *Controller) scoredMoves(dec decide.Decision) {
	for _, v := range dec.Verdicts {
		if s := v.Score; s != nil {
			c.metrics.ConsolidationMove(s.NodePool, string(s.Policy), s.Value, s.Approved)
		}
	}
	if dec.Command != nil && dec.Command.Score != nil {
		s := dec.Command.Score
		c.metrics.ConsolidationMove(s.NodePool, string(s.Policy), s.Value, s.Approved)
	}
}
