// Package provisioning is the provisioner: the singleton controller that turns
// pods the scheduler could not place into new NodeClaims.
//
// Pods that become pending together are gathered into a batch (see Batcher).
// When the batch closes and the cluster state has caught up with the API
// server, the provisioner takes a snapshot, builds a packer NodePool for every
// NodePool that may launch (its EC2NodeClass exists and is Ready, and it is not
// being deleted), asks the packer where the provisionable pods go, and carries
// out the answer:
//
//   - each proposed NodeClaim is checked once more against its NodePool's
//     limits, created, recorded in the state and nominated;
//   - pods placed on a new NodeClaim or an existing node are nominated to it
//     in the state (see state.Cluster.NominatePod), so that later batches
//     count them there, while the node boots, instead of planning them
//     again, and get a Nominated event;
//   - pods that fit nowhere get a FailedScheduling event with the packer's
//     reason and its verdict for every NodePool;
//   - NodePools left out get an event that says why;
//   - a DaemonSet pod found on a new node requesting more than the NodeClaim
//     was sized with for it is reported (see reportOverhead).
//
// The decision itself is the packer's, a pure function; this package only
// gathers its inputs and acts on its result. Time comes from the injected
// clock and the controller starts no goroutines, so the same code runs under a
// controller-runtime manager and in the simulator.
package provisioning

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	autoscalingv1beta1 "github.com/stevedore-autoscaler/stevedore/api/autoscaling/v1beta1"
	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/cloud"
	"github.com/stevedore-autoscaler/stevedore/controllers/eventlimit"
	"github.com/stevedore-autoscaler/stevedore/controllers/metrics"
	"github.com/stevedore-autoscaler/stevedore/controllers/singleton"
	"github.com/stevedore-autoscaler/stevedore/scheduling/overlay"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/state"
)

// Name is the controller's name, as registered with the manager and used as
// the event source.
const Name = "provisioner"

// Timers.
const (
	// Period is how often the provisioner looks at pending pods even when no
	// pod event woke it, so that pods whose NodeClaims failed are retried.
	Period = 10 * time.Second
	// SyncRetry is the wait before trying again when the state has not caught
	// up with the API server.
	SyncRetry = time.Second
	// EventInterval is the least time between two events of the same reason
	// about the same object.
	EventInterval = time.Minute
)

// ReasonProvisioning is the reason label of the NodeClaims the provisioner
// creates, on karpenter_nodeclaims_created_total.
const ReasonProvisioning = "provisioning"

// Reasons of events.
const (
	// ReasonNominated is a pod that the provisioner expects to land on a new
	// NodeClaim or an existing node.
	ReasonNominated = "Nominated"
	// ReasonFailedScheduling is a pod that no node and no NodePool can take.
	ReasonFailedScheduling = "FailedScheduling"
	// ReasonNodeClassNotReady is a NodePool left out because its node class
	// is missing or not Ready.
	ReasonNodeClassNotReady = "NodeClassNotReady"
	// ReasonInstanceTypesFailed is a NodePool left out because its instance
	// types could not be listed or its template is invalid.
	ReasonInstanceTypesFailed = "InstanceTypesFailed"
	// ReasonDurationTooLong is a NodePool left out because a duration of it
	// is longer than the longest there is: the API server stored it, but it
	// cannot mean what its author meant.
	ReasonDurationTooLong = "DurationTooLong"
)

// Request returns the request the provisioner reconciles: there is one
// provisioner, whatever the request says.
func Request() reconcile.Request {
	return singleton.Request(Name)
}

// Options tune a Provisioner. The zero value gives the defaults.
type Options struct {
	// BatchIdle closes a batch after this long without a new pending pod;
	// default DefaultBatchIdle.
	BatchIdle time.Duration
	// BatchMax closes a batch this long after it opened; default
	// DefaultBatchMax. It also sets how long nominations last (see
	// state.NominationWindow).
	BatchMax time.Duration
	// PreferencePolicy says how preferred scheduling terms shape new
	// NodeClaims; default packer.PreferenceScore.
	PreferencePolicy packer.PreferencePolicy
	// EqualWeightOrder says which of several NodePools of the same weight
	// launches a new NodeClaim; default packer.EqualWeightName, Karpenter's
	// order.
	EqualWeightOrder packer.EqualWeightOrder
	// MaxInstanceTypes caps the instance types listed on a NodeClaim;
	// 0 means packer.DefaultMaxInstanceTypes.
	MaxInstanceTypes int
	// CapacityBuffer wakes the provisioner on CapacityBuffer changes (the
	// CapacityBuffer feature gate; the CRD must be installed).
	CapacityBuffer bool
	// MinValuesPolicy says whether a NodeClaim whose pods leave too few
	// instance types for a NodePool's minValues launches with them relaxed
	// (BestEffort) or not at all (Strict, the default).
	MinValuesPolicy packer.MinValuesPolicy
}

// Provisioner is the provisioning controller. Create it with New.
type Provisioner struct {
	client   client.Client
	state    *state.Cluster
	cloud    cloud.CloudProvider
	clock    clock.PassiveClock
	recorder events.EventRecorder
	opts     Options
	batcher  *Batcher
	metrics  *metrics.Metrics
	// events records events at most once per object and reason within
	// EventInterval.
	events *eventlimit.Recorder
	// pools keeps the NodePools built for the last batches.
	pools PoolMemo
}

var _ reconcile.Reconciler = (*Provisioner)(nil)

// New returns a Provisioner that reads st (kept current by someone else,
// typically package state/informer), writes through c and asks cp for
// instance types. The recorder may be nil, which drops events; m may be nil,
// which drops metrics.
func New(c client.Client, st *state.Cluster, cp cloud.CloudProvider, clk clock.PassiveClock, rec events.EventRecorder, opts Options, m *metrics.Metrics) *Provisioner {
	if opts.BatchIdle <= 0 {
		opts.BatchIdle = DefaultBatchIdle
	}
	if opts.BatchMax <= 0 {
		opts.BatchMax = DefaultBatchMax
	}
	if opts.PreferencePolicy == "" {
		opts.PreferencePolicy = packer.PreferenceScore
	}
	return &Provisioner{
		client:   c,
		state:    st,
		cloud:    cp,
		clock:    clk,
		recorder: rec,
		opts:     opts,
		batcher:  NewBatcher(opts.BatchIdle, opts.BatchMax),
		metrics:  m,
		events:   eventlimit.New(rec, EventInterval),
	}
}

// Register runs the Provisioner under the manager: every change to a
// provisionable pod triggers the batcher and wakes the provisioner, which
// also wakes once when the manager starts and then at least every Period.
// The Provisioner should have been created with the manager's client.
func (p *Provisioner) Register(mgr manager.Manager) error {
	b := singleton.Builder(mgr, Name).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(p.podTrigger))
	if p.opts.CapacityBuffer {
		b = b.Watches(&autoscalingv1beta1.CapacityBuffer{}, handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
			p.Trigger()
			return []reconcile.Request{Request()}
		}))
	}
	return b.Complete(p)
}

// podTrigger triggers the batcher for a provisionable pod and maps it to the
// provisioner's request.
func (p *Provisioner) podTrigger(_ context.Context, o client.Object) []reconcile.Request {
	pod, ok := o.(*corev1.Pod)
	if !ok || !state.IsProvisionable(pod) {
		return nil
	}
	p.Trigger()
	return []reconcile.Request{Request()}
}

// Trigger tells the provisioner that a pod is waiting for a node: it opens a
// batch, or keeps the open one open for another idle period.
func (p *Provisioner) Trigger() {
	p.batcher.Trigger(p.clock.Now())
}

// Reconcile provisions for the pending pods once the batch has closed and
// the state has caught up; otherwise it asks to be called again when that
// may have happened. The request is ignored.
func (p *Provisioner) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	now := p.clock.Now()
	p.reportOverhead(ctx, now)
	ready, wait := p.batcher.Ready(now)
	if !ready {
		if wait > 0 {
			return reconcile.Result{RequeueAfter: wait}, nil
		}
		// No batch is open: the periodic look. Pods still waiting (for
		// example because their NodeClaim failed) open one. Most looks find
		// no pod waiting, or one that no node was nominated for; only
		// nominated pods need a snapshot to tell whether the nomination
		// still holds.
		// CapacityBuffers' placeholders are looked at every period: a real
		// pod may have taken their room, or their NodeClaim failed.
		unnominated, nominated := p.state.ProvisionablePending()
		if unnominated == 0 && (nominated == 0 || len(p.state.Snapshot(now).ProvisionablePods()) == 0) && !p.state.HasBufferPods() {
			return reconcile.Result{RequeueAfter: Period}, nil
		}
		p.batcher.Trigger(now)
		_, wait = p.batcher.Ready(now)
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	if !p.state.Synced(ctx, p.client) {
		// Keep the batch: it is handed out again once the state catches up.
		log.FromContext(ctx).V(1).Info("waiting for cluster state to sync")
		p.batcher.Trigger(now)
		return reconcile.Result{RequeueAfter: SyncRetry}, nil
	}
	if err := p.provision(ctx, now); err != nil {
		p.batcher.Trigger(now)
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: Period}, nil
}

// provision runs one batch: pack the provisionable pods and carry out the
// result, then do the same for the CapacityBuffers' placeholders.
func (p *Provisioner) provision(ctx context.Context, now time.Time) error {
	p.events.Forget(now)
	err := p.provisionPods(ctx, now)
	return errors.Join(err, p.provisionBuffers(ctx, now))
}

// provisionPods packs the provisionable pods and carries out the result.
func (p *Provisioner) provisionPods(ctx context.Context, now time.Time) error {
	snap := p.state.Snapshot(now)
	pods := snap.ProvisionablePods()
	if len(pods) == 0 {
		return nil
	}
	pools, skipped := p.nodePools(ctx, snap)
	in := snap.PackerInput(pods, pools, p.opts.PreferencePolicy)
	// A node that registered long ago and never initialized is not counted
	// on for new pods (see state.InitializationGrace). Disruption still
	// counts it, so that pods it would move there block the move, as in
	// Karpenter: a replacement that never initializes must not be followed
	// by another one.
	for i, sn := range snap.Nodes {
		if sn.Stalled(now) {
			in.Nodes[i].Unschedulable = true
		}
	}
	in.MaxInstanceTypes = p.opts.MaxInstanceTypes
	in.EqualWeightOrder = p.opts.EqualWeightOrder
	in.MinValuesPolicy = p.opts.MinValuesPolicy
	keys := make([]types.NamespacedName, 0, len(pods))
	for _, pod := range pods {
		keys = append(keys, types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name})
	}
	p.metrics.PodsSeen(keys, now)
	done := p.metrics.StartScheduling(metrics.ControllerProvisioner, len(pods))
	res := packer.Solve(in)
	done()
	p.metrics.SchedulingResult(metrics.ControllerProvisioner, len(res.Unschedulable), len(res.Ignored))
	placed, unplaced := make([]types.NamespacedName, 0, len(res.Placements)), make([]types.NamespacedName, 0, len(res.Unschedulable)+len(res.Ignored))
	for _, pl := range res.Placements {
		placed = append(placed, pl.Pod)
	}
	for _, claim := range res.NodeClaims {
		placed = append(placed, claim.Pods...)
	}
	for _, u := range res.Unschedulable {
		unplaced = append(unplaced, u.Pod)
	}
	for _, u := range res.Ignored {
		unplaced = append(unplaced, u.Pod)
	}
	p.metrics.PodsDecided(placed, unplaced, now)

	byKey := make(map[types.NamespacedName]*corev1.Pod, len(pods))
	for _, pod := range pods {
		byKey[types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}] = pod
	}
	poolsByName := byName(in.NodePools)

	nominateUntil := now.Add(state.NominationWindow(p.opts.BatchMax))
	for _, pl := range res.Placements {
		p.state.Nominate(pl.Node, nominateUntil)
		if pod := byKey[pl.Pod]; pod != nil {
			p.state.NominatePod(pod, pl.Node, now, nominateUntil)
			p.event(now, pod, nil, corev1.EventTypeNormal, ReasonNominated, "Nominate", "Pod should schedule on: node/%s", pl.Node)
		}
	}

	// Limits are checked against the state as it is now, after the packing:
	// other NodeClaims may have appeared meanwhile.
	current := p.state.Snapshot(now)
	added := map[string]corev1.ResourceList{}
	var errs []error
	for _, claim := range res.NodeClaims {
		nc, why, err := p.launch(ctx, claim, poolsByName[claim.NodePool], current, added)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if why != "" {
			for _, key := range claim.Pods {
				if pod := byKey[key]; pod != nil {
					p.event(now, pod, nil, corev1.EventTypeWarning, ReasonFailedScheduling, "Provision", "%s", why)
				}
			}
			continue
		}
		p.state.UpdateNodeClaim(nc)
		// The DaemonSet overhead it was sized with, to be checked against
		// the real pods (see reportOverhead).
		p.state.RecordDaemonOverhead(nc.Name, state.DaemonsFor(nc, in.DaemonSetPods))
		p.state.Nominate(nc.Name, nominateUntil)
		for _, key := range claim.Pods {
			if pod := byKey[key]; pod != nil {
				p.state.NominatePod(pod, nc.Name, now, nominateUntil)
				p.event(now, pod, nc, corev1.EventTypeNormal, ReasonNominated, "Nominate", "Pod should schedule on: nodeclaim/%s", nc.Name)
			}
		}
	}

	for _, u := range res.Unschedulable {
		if pod := byKey[u.Pod]; pod != nil {
			p.event(now, pod, nil, corev1.EventTypeWarning, ReasonFailedScheduling, "Provision", "%s", unschedulableNote(u, skipped))
		}
	}
	for _, u := range res.Ignored {
		if pod := byKey[u.Pod]; pod != nil {
			p.event(now, pod, nil, corev1.EventTypeWarning, ReasonFailedScheduling, "Provision", "Pod is ignored: %s", u.Reason)
		}
	}
	return errors.Join(errs...)
}

// nodePools returns the packer NodePools that may launch now, in the
// snapshot's order, and those left out, recording an event on each.
func (p *Provisioner) nodePools(ctx context.Context, snap state.Snapshot) ([]packer.NodePool, []Skip) {
	all, skipped := p.pools.LaunchablePools(ctx, p.cloud, snap)
	// Static NodePools launch only to keep their replica count (see
	// controllers/nodepool/static): pending pods may land on their nodes,
	// never on a new node of theirs.
	static := map[string]bool{}
	for _, np := range snap.NodePools {
		static[np.Name] = np.Spec.Replicas != nil
	}
	pools := make([]packer.NodePool, 0, len(all))
	for _, pool := range all {
		if !static[pool.Name] {
			pools = append(pools, pool)
		}
	}
	for _, s := range skipped {
		if s.Err != nil {
			log.FromContext(ctx).Error(s.Err, "listing instance types", "nodepool", s.NodePool.Name)
		}
		if !s.Unreported {
			p.event(snap.Time, s.NodePool, nil, corev1.EventTypeWarning, s.Reason, "Provision", "%s", s.Message)
		}
	}
	RecordNoCompatibleInstanceTypes(p.events, snap.Time, snap, pools, p.opts.MinValuesPolicy)
	return pools, skipped
}

// Skip is a NodePool that may not launch now, and why.
type Skip struct {
	NodePool *karpv1.NodePool
	// Reason is the reason of the event that says so:
	// ReasonNodeClassNotReady, ReasonInstanceTypesFailed or
	// ReasonDurationTooLong.
	Reason  string
	Message string
	// Err is the cloud provider's error when listing instance types failed.
	Err error
	// Unreported means the node class has no Ready condition yet: its
	// controller has not looked at it. That clears on its own within
	// seconds, so it gets no event; an event would also hold back, for the
	// event interval, the one that says what is really wrong once the
	// condition is reported.
	Unreported bool
}

// LaunchablePools returns, in the snapshot's order, the packer NodePools of
// every NodePool that may launch now: it is not being deleted, its node class
// is of a kind the cloud provider supports, exists and is Ready, and its
// instance types could be listed. Each NodePool left out (except those being
// deleted, which need no explanation) comes back in skipped with why. InUse
// is left empty, for the caller or Snapshot.PackerInput to fill.
//
// Both the provisioner and the disruption controller launch from these, so
// that a replacement can be launched exactly when a new node could.
func LaunchablePools(ctx context.Context, cp cloud.CloudProvider, snap state.Snapshot) (pools []packer.NodePool, skipped []Skip) {
	var none *PoolMemo
	return none.LaunchablePools(ctx, cp, snap)
}

// LaunchablePools is the package's LaunchablePools, reusing a pool built
// before (see PoolMemo). A nil memo builds every pool afresh.
//
// The snapshot's NodeOverlays (present only with the NodeOverlay feature
// gate) are applied to the instance types first, evaluated over every
// launchable NodePool at once, as EvaluateOverlays does.
func (m *PoolMemo) LaunchablePools(ctx context.Context, cp cloud.CloudProvider, snap state.Snapshot) (pools []packer.NodePool, skipped []Skip) {
	listed, skipped := listTypes(ctx, cp, snap)
	var overlaid map[string][]*packer.InstanceType
	if len(snap.NodeOverlays) > 0 {
		overlaid = m.overlaid(snap.NodeOverlays, listed)
	}
	for _, l := range listed {
		types := l.types
		if overlaid != nil {
			types = overlaid[l.np.Name]
		}
		pool, err := m.nodePool(l.np, l.class, types)
		if err != nil {
			skipped = append(skipped, Skip{NodePool: l.np, Reason: ReasonInstanceTypesFailed, Message: err.Error()})
			continue
		}
		pools = append(pools, pool)
	}
	// Keep the reasons in the snapshot's order, however they were found.
	order := make(map[*karpv1.NodePool]int, len(snap.NodePools))
	for i, np := range snap.NodePools {
		order[np] = i
	}
	slices.SortStableFunc(skipped, func(a, b Skip) int { return order[a.NodePool] - order[b.NodePool] })
	m.retain(snap.NodePools)
	return pools, skipped
}

// EvaluateOverlays evaluates the snapshot's NodeOverlays over the instance
// types of the NodePools that may launch, as LaunchablePools applies them:
// the NodeOverlay status controller reports its verdicts, so that an
// overlay reported valid is one that applies.
func EvaluateOverlays(ctx context.Context, cp cloud.CloudProvider, snap state.Snapshot) *overlay.Result {
	listed, _ := listTypes(ctx, cp, snap)
	return overlay.Evaluate(snap.NodeOverlays, overlayPools(listed))
}

// listed is a NodePool that may launch, with its node class and the
// instance types the cloud provider lists for it.
type listed struct {
	np    *karpv1.NodePool
	class *awsv1.EC2NodeClass
	types []*packer.InstanceType
}

func overlayPools(ls []listed) []overlay.Pool {
	out := make([]overlay.Pool, len(ls))
	for i, l := range ls {
		labels := make(map[string]string, len(l.np.Spec.Template.Metadata.Labels))
		for k, v := range l.np.Spec.Template.Metadata.Labels {
			labels[k] = string(v)
		}
		out[i] = overlay.Pool{Name: l.np.Name, Labels: labels, InstanceTypes: l.types}
	}
	return out
}

// listTypes lists the instance types of every NodePool that may launch, in
// the snapshot's order, and says why each other one may not (see
// LaunchablePools).
func listTypes(ctx context.Context, cp cloud.CloudProvider, snap state.Snapshot) (out []listed, skipped []Skip) {
	classes := make(map[string]*awsv1.EC2NodeClass, len(snap.NodeClasses))
	for _, nc := range snap.NodeClasses {
		classes[nc.Name] = nc
	}
	supported := cp.GetSupportedNodeClasses()
	skip := func(np *karpv1.NodePool, reason string, err error, format string, args ...any) {
		skipped = append(skipped, Skip{NodePool: np, Reason: reason, Message: fmt.Sprintf(format, args...), Err: err})
	}
	for _, np := range snap.NodePools {
		if !np.DeletionTimestamp.IsZero() {
			continue
		}
		if fields := np.TooLongDurations(); len(fields) > 0 {
			skip(np, ReasonDurationTooLong, nil, "%s longer than the longest duration there is, %dh (about 292 years); set at most that, or Never where the field takes it",
				strings.Join(fields, ", "), karpv1.MaxDuration/time.Hour)
			continue
		}
		ref := np.Spec.Template.Spec.NodeClassRef
		if ref == nil {
			skip(np, ReasonNodeClassNotReady, nil, "NodePool has no nodeClassRef")
			continue
		}
		if !slices.ContainsFunc(supported, func(gvk schema.GroupVersionKind) bool { return gvk.Group == ref.Group && gvk.Kind == ref.Kind }) {
			// Another provider's pool: its controller launches for it, and
			// stevedore says nothing about it, as Karpenter leaves the pools
			// of node classes it does not serve.
			continue
		}
		class, ok := classes[ref.Name]
		if !ok {
			skip(np, ReasonNodeClassNotReady, nil, "NodeClass %s is not ready: it does not exist", ref.Name)
			continue
		}
		if why, ready := nodeClassReady(class); !ready {
			skip(np, ReasonNodeClassNotReady, nil, "NodeClass %s is not ready: %s", ref.Name, why)
			skipped[len(skipped)-1].Unreported = why == readinessUnreported
			continue
		}
		its, err := cp.GetInstanceTypes(ctx, np)
		if err != nil {
			skip(np, ReasonInstanceTypesFailed, err, "listing instance types: %v", err)
			continue
		}
		out = append(out, listed{np: np, class: class, types: its})
	}
	return out, skipped
}

// readinessUnreported is why a node class without a Ready condition is not
// ready.
const readinessUnreported = "its readiness has not been reported yet"

// nodeClassReady reports whether the node class is Ready and, if not, why.
func nodeClassReady(nc *awsv1.EC2NodeClass) (string, bool) {
	if !nc.DeletionTimestamp.IsZero() {
		return "it is being deleted", false
	}
	c := meta.FindStatusCondition(nc.Status.Conditions, awsv1.ConditionTypeReady)
	switch {
	case c == nil:
		return readinessUnreported, false
	case c.Status == metav1.ConditionTrue:
		return "", true
	case c.Message != "":
		return c.Message, false
	case c.Reason != "":
		return c.Reason, false
	default:
		return "Ready is " + string(c.Status), false
	}
}

// unschedulableNote says why a pod fits nowhere, NodePool by NodePool,
// including the NodePools that were left out of the packing (a NodeClass
// not Ready, instance types that could not be listed): without them a pod
// whose only NodePool is left out would hear only that no NodePool is
// available, and not which one or why.
//
// The NodePools left out come first, right after the reason: an event's
// note is cut at 1 KiB, and in a cluster with many NodePools the verdicts
// of the NodePools the pod never asked for would otherwise push out the
// one thing the operator can fix.
func unschedulableNote(u packer.Unschedulable, skipped []Skip) string {
	var b strings.Builder
	b.WriteString("Failed to schedule pod: ")
	b.WriteString(u.Reason)
	verdicts := u.NodePools
	if len(verdicts) > 0 && strings.Contains(u.Reason, verdicts[0].Message) {
		// The reason already tells the first NodePool's verdict.
		fmt.Fprintf(&b, " (%s)", verdicts[0].Code)
		verdicts = verdicts[1:]
	}
	for _, s := range skipped {
		fmt.Fprintf(&b, "; nodepool %s: left out: %s (%s)", s.NodePool.Name, s.Message, s.Reason)
	}
	for _, v := range verdicts {
		fmt.Fprintf(&b, "; nodepool %s: %s (%s)", v.NodePool, v.Message, v.Code)
	}
	return b.String()
}

// event records an event about obj unless one with the same reason was
// recorded about it within EventInterval.
func (p *Provisioner) event(now time.Time, obj client.Object, related runtime.Object, eventType, reason, action, note string, args ...any) {
	p.events.Eventf(now, obj, related, eventType, reason, action, note, args...)
}

// byName indexes the packer's NodePools by name, pointing into pools.
func byName(pools []packer.NodePool) map[string]*packer.NodePool {
	out := make(map[string]*packer.NodePool, len(pools))
	for i := range pools {
		out[pools[i].Name] = &pools[i]
	}
	return out
}
