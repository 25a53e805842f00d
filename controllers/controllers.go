// Package controllers assembles stevedore's controllers: it builds every
// reconciler with its dependencies and adds it, the cluster-state informers,
// the leaked-instance collector and the interruption-queue poller to a
// controller-runtime manager. The command that runs the controller and the
// tests that run it against a real API server both call Register, so the set of
// controllers is defined in one place.
package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/validation"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/garbagecollect"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/interruption"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/interruption/queue"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/sdk"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/settings"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/zonalshift"
	"github.com/stevedore-autoscaler/stevedore/controllers/capacitybuffer"
	disruptionctl "github.com/stevedore-autoscaler/stevedore/controllers/disruption"
	"github.com/stevedore-autoscaler/stevedore/controllers/metrics"
	"github.com/stevedore-autoscaler/stevedore/controllers/node/health"
	nodeterm "github.com/stevedore-autoscaler/stevedore/controllers/node/termination"
	"github.com/stevedore-autoscaler/stevedore/controllers/nodeclaim/consistency"
	"github.com/stevedore-autoscaler/stevedore/controllers/nodeclaim/disruption"
	"github.com/stevedore-autoscaler/stevedore/controllers/nodeclaim/expiration"
	nodeclaimgc "github.com/stevedore-autoscaler/stevedore/controllers/nodeclaim/garbagecollection"
	"github.com/stevedore-autoscaler/stevedore/controllers/nodeclaim/lifecycle"
	"github.com/stevedore-autoscaler/stevedore/controllers/nodeclaim/tagging"
	nodeclassstatus "github.com/stevedore-autoscaler/stevedore/controllers/nodeclass/status"
	overlaystatus "github.com/stevedore-autoscaler/stevedore/controllers/nodeoverlay/status"
	"github.com/stevedore-autoscaler/stevedore/controllers/nodepool/static"
	nodepoolstatus "github.com/stevedore-autoscaler/stevedore/controllers/nodepool/status"
	"github.com/stevedore-autoscaler/stevedore/controllers/provisioning"
	"github.com/stevedore-autoscaler/stevedore/state"
	"github.com/stevedore-autoscaler/stevedore/state/informer"
)

// Defaults of Deps.
const (
	// DefaultGCInterval is how often leaked instances are looked for.
	DefaultGCInterval = 2 * time.Minute
	// DefaultQueueRetry is how long the interruption poller waits after a
	// failed receive before it polls again.
	DefaultQueueRetry = 10 * time.Second
)

// Names of the runnables, as they appear in logs.
const (
	NameGarbageCollection = "instance.garbagecollection"
	NameInterruption      = "interruption"
	// NameInstanceStatus polls the EC2 status checks of instances.
	NameInstanceStatus = "interruption.instancestatus"
	// NameZonalShift polls the cluster's ARC zonal shifts
	// (--enable-zonal-shift).
	NameZonalShift = "zonalshift"
	// NamePricing logs the pricing API's failures and recoveries.
	NamePricing = "pricing"
)

// Event reasons the interruption handler records on NodeClaims.
const (
	ReasonSpotInterrupted                = "SpotInterrupted"
	ReasonSpotRebalanceRecommendation    = "SpotRebalanceRecommendation"
	ReasonInstanceUnhealthy              = "InstanceUnhealthy"
	ReasonInstanceStopping               = "InstanceStopping"
	ReasonInstanceTerminating            = "InstanceTerminating"
	ReasonCapacityReservationInterrupted = "CapacityReservationInstanceInterrupted"
	// ReasonTerminatingOnInterruption is recorded on the NodeClaim and its
	// node when an interruption deletes the NodeClaim.
	ReasonTerminatingOnInterruption = "TerminatingOnInterruption"
)

// EventSource is the reporting controller of every event the controllers
// record, Karpenter's single source.
const EventSource = "karpenter"

// Deps are what the controllers act through. Cloud, Clients, Settings,
// Resolver and State are required; the rest have defaults.
type Deps struct {
	// Cloud is the AWS provider the NodeClaim and Node controllers launch and
	// terminate through.
	Cloud *aws.Provider
	// Clients are the AWS clients behind Cloud; the collector and the
	// interruption poller call EC2 and SQS through them.
	Clients sdk.Clients
	// Settings are the AWS settings (cluster name, interruption queue).
	Settings settings.Settings
	// Resolver computes EC2NodeClass status.
	Resolver nodeclassstatus.Resolver
	// NodeClass carries the Kubernetes version and CA bundle to the
	// EC2NodeClass status controller.
	NodeClass nodeclassstatus.Options
	// State is the cluster snapshot the informers keep current.
	State *state.Cluster
	// Provisioning tunes the provisioner (batch windows, preference policy).
	Provisioning provisioning.Options
	// Disruption tunes the disruption controller (validation delay,
	// replacement timeout, spot-to-spot consolidation).
	Disruption disruptionctl.Options
	// ActOnRebalance treats EC2 rebalance recommendations like spot
	// interruption warnings (replace and drain the node) instead of only
	// recording an event.
	ActOnRebalance bool
	// NodeOverlay (the NodeOverlay feature gate) applies NodeOverlays to the
	// instance types and reports their conditions; off by default, as in
	// Karpenter, where it is alpha.
	NodeOverlay bool
	// NodeRepair turns node repair on and sets its unhealthy-node cap; off
	// by default, and the cap defaults to 20% (see health.Options).
	NodeRepair health.Options

	// DisableClusterStateObservability turns off what Karpenter's
	// DISABLE_CLUSTER_STATE_OBSERVABILITY does: the metrics of pods, nodes
	// and NodePools and the status metrics of NodeClaims, Nodes and
	// NodePools (see metrics.Metrics.DisableClusterStateObservability).
	DisableClusterStateObservability bool

	// Clock is the time source; default clock.RealClock{}.
	Clock clock.WithTicker
	// Metrics receives the karpenter_* metrics; nil creates them on
	// Registerer.
	Metrics *metrics.Metrics
	// Registerer receives the metrics; default none (nil), in which case
	// Metrics must be set or metrics are dropped.
	Registerer prometheus.Registerer
	// Validator runs NodePool validation; default validation.Default().
	Validator *validation.Validator
	// GCInterval is how often leaked instances are collected; default
	// DefaultGCInterval.
	GCInterval time.Duration
	// GCGrace protects instances younger than it; default
	// garbagecollect.DefaultGrace.
	GCGrace time.Duration
	// Profiles collects unused instance profiles on the garbage-collection
	// rounds; Register makes one when it is nil. Simulations keep theirs
	// from round to round.
	Profiles *ProfileCollector
	// QueueRetry is the pause after a failed interruption-queue receive;
	// default DefaultQueueRetry.
	QueueRetry time.Duration
	// QueueWaitTime is the interruption queue's long-poll time; zero takes
	// the queue package's default.
	QueueWaitTime time.Duration
	// Account and Region are the controller's AWS account and region; the
	// interruption queue drops (and counts) messages of another. Empty
	// skips that check.
	Account string
	Region  string
}

func (d *Deps) defaults() error {
	if d.Cloud == nil {
		return errors.New("controllers: no cloud provider")
	}
	if d.Clients.EC2 == nil {
		return errors.New("controllers: no EC2 client")
	}
	if d.Resolver == nil {
		return errors.New("controllers: no EC2NodeClass resolver")
	}
	if d.State == nil {
		return errors.New("controllers: no cluster state")
	}
	if d.Settings.ClusterName == "" {
		return errors.New("controllers: no cluster name: set --cluster-name (CLUSTER_NAME)")
	}
	if d.Clock == nil {
		d.Clock = clock.RealClock{}
	}
	if d.Metrics == nil && d.Registerer != nil {
		m, err := metrics.New(d.Registerer)
		if err != nil {
			return fmt.Errorf("controllers: metrics: %w", err)
		}
		d.Metrics = m
	}
	if d.Validator == nil {
		v, err := validation.Default()
		if err != nil {
			return fmt.Errorf("controllers: validator: %w", err)
		}
		d.Validator = v
	}
	if d.GCInterval <= 0 {
		d.GCInterval = DefaultGCInterval
	}
	if d.GCGrace <= 0 {
		d.GCGrace = garbagecollect.DefaultGrace
	}
	if d.QueueRetry <= 0 {
		d.QueueRetry = DefaultQueueRetry
	}
	return nil
}

// Register adds every controller to mgr. Call it once, before mgr starts; the
// manager's scheme must know the core, karpenter.sh and karpenter.k8s.aws
// types. Controllers, the collector and the interruption poller run only on
// the elected leader; the informers that feed State run on every replica, so
// a new leader starts with a warm cache.
func Register(mgr manager.Manager, deps Deps) error {
	if err := deps.defaults(); err != nil {
		return err
	}
	kube := mgr.GetClient()
	// One event source for every controller, Karpenter's, so that event
	// queries and exporters filtering on it keep matching.
	rec := mgr.GetEventRecorder(EventSource)
	deps.Metrics.CountLaunchFailures(deps.Cloud)
	watchPricing(deps.Cloud, deps.Metrics, mgr.GetLogger().WithName(NamePricing))
	if deps.DisableClusterStateObservability {
		deps.Metrics.DisableClusterStateObservability()
	}
	deps.Metrics.WatchState(metrics.StateOptions{State: deps.State, Clock: deps.Clock,
		Synced: func(ctx context.Context) bool { return deps.State.Synced(ctx, mgr.GetClient()) }})
	if err := deps.Metrics.WatchStatus(mgr, rec); err != nil {
		return fmt.Errorf("status metrics: %w", err)
	}
	// Each controller calls the cloud through its own measured view, so
	// that karpenter_cloudprovider_* metrics say which controller called.
	cloudFor := func(controller string) cloud.CloudProvider { return deps.Metrics.Decorate(deps.Cloud, controller) }
	if err := informer.Register(mgr, deps.State); err != nil {
		return fmt.Errorf("state informers: %w", err)
	}
	if deps.NodeOverlay {
		if err := informer.RegisterNodeOverlays(context.Background(), mgr.GetCache(), deps.State); err != nil {
			return fmt.Errorf("state informers: %w", err)
		}
		if err := overlaystatus.New(kube, deps.State, cloudFor(overlaystatus.Name), deps.Clock).Register(mgr); err != nil {
			return fmt.Errorf("%s: %w", overlaystatus.Name, err)
		}
	}
	if err := lifecycle.New(kube, cloudFor(lifecycle.Name), deps.Clock, rec, deps.Metrics).Register(mgr); err != nil {
		return fmt.Errorf("%s: %w", lifecycle.Name, err)
	}
	if err := nodeclaimgc.New(kube, cloudFor(nodeclaimgc.Name), deps.Clock, rec).Register(mgr); err != nil {
		return fmt.Errorf("%s: %w", nodeclaimgc.Name, err)
	}
	if err := nodeterm.New(kube, cloudFor(nodeterm.Name), deps.Clock, rec).WithMetrics(deps.Metrics).Register(mgr); err != nil {
		return fmt.Errorf("%s: %w", nodeterm.Name, err)
	}
	if err := disruption.New(kube, cloudFor(disruption.Name), deps.Clock, rec).Register(mgr); err != nil {
		return fmt.Errorf("%s: %w", disruption.Name, err)
	}
	if err := expiration.New(kube, deps.Clock, rec, deps.Metrics).Register(mgr); err != nil {
		return fmt.Errorf("%s: %w", expiration.Name, err)
	}
	if err := consistency.New(kube, deps.Clock, rec).Register(mgr); err != nil {
		return fmt.Errorf("%s: %w", consistency.Name, err)
	}
	if err := tagging.New(kube, deps.Clients.EC2, deps.Settings.ClusterName).Register(mgr); err != nil {
		return fmt.Errorf("%s: %w", tagging.Name, err)
	}
	if err := health.New(kube, cloudFor(health.Name), deps.Clock, rec, deps.Metrics, deps.NodeRepair).Register(mgr); err != nil {
		return fmt.Errorf("%s: %w", health.Name, err)
	}
	if err := nodepoolstatus.New(kube, deps.State, deps.Clock, rec, deps.Validator, deps.Metrics).Register(mgr); err != nil {
		return fmt.Errorf("%s: %w", nodepoolstatus.Name, err)
	}
	if err := nodeclassstatus.New(kube, deps.Resolver, rec, deps.NodeClass).Register(mgr); err != nil {
		return fmt.Errorf("%s: %w", nodeclassstatus.Name, err)
	}
	prov := provisioning.New(kube, deps.State, cloudFor(provisioning.Name), deps.Clock, rec, deps.Provisioning, deps.Metrics)
	if err := prov.Register(mgr); err != nil {
		return fmt.Errorf("%s: %w", provisioning.Name, err)
	}
	// Replacements are shaped like the nodes the provisioner launches,
	// unless the disruption options say otherwise.
	disrOpts := deps.Disruption
	if disrOpts.PreferencePolicy == "" {
		disrOpts.PreferencePolicy = deps.Provisioning.PreferencePolicy
	}
	if disrOpts.MaxInstanceTypes == 0 {
		disrOpts.MaxInstanceTypes = deps.Provisioning.MaxInstanceTypes
	}
	if disrOpts.MinValuesPolicy == "" {
		disrOpts.MinValuesPolicy = deps.Provisioning.MinValuesPolicy
	}
	if disrOpts.LiveReader == nil {
		disrOpts.LiveReader = mgr.GetAPIReader()
	}
	disr := disruptionctl.New(kube, deps.State, cloudFor(disruptionctl.Name), deps.Clock, rec, disrOpts, deps.Metrics)
	if err := disr.Register(mgr); err != nil {
		return fmt.Errorf("%s: %w", disruptionctl.Name, err)
	}
	if deps.Provisioning.CapacityBuffer {
		if err := capacitybuffer.New(kube, deps.State, deps.Clock, prov.Trigger).Register(mgr); err != nil {
			return fmt.Errorf("%s: %w", capacitybuffer.Name, err)
		}
	}
	if disrOpts.StaticCapacity {
		st := static.New(kube, deps.State, deps.Cloud, deps.Clock, deps.Metrics, disrOpts.MaxInstanceTypes)
		if err := st.Register(mgr); err != nil {
			return fmt.Errorf("%s: %w", static.Name, err)
		}
	}
	if err := mgr.Add(&leaderRunnable{run: gcLoop(mgr.GetAPIReader(), deps)}); err != nil {
		return fmt.Errorf("%s: %w", NameGarbageCollection, err)
	}
	if shifts := deps.Cloud.ZonalShifts(); shifts != nil {
		w := NewZonalShiftWatcher(shifts, kube, rec, deps.Clock)
		if err := mgr.Add(&leaderRunnable{run: zonalShiftLoop(w, deps)}); err != nil {
			return fmt.Errorf("%s: %w", NameZonalShift, err)
		}
	}
	h := &interruptionHandler{kube: kube, rec: rec, cloud: deps.Cloud,
		disruption: disr, metrics: deps.Metrics, actOnRebalance: deps.ActOnRebalance, clock: deps.Clock}
	// The status checks need no queue: EC2 is asked for them.
	status, err := queue.NewStatusPoller(queue.StatusConfig{
		EC2:          deps.Clients.EC2,
		NodeClaimFor: nodeClaimFor(deps.State, deps.Clock),
		Handle:       h.handle,
		Registerer:   deps.Registerer,
		Clock:        deps.Clock,
	})
	if err != nil {
		return fmt.Errorf("%s: %w", NameInstanceStatus, err)
	}
	if err := mgr.Add(&leaderRunnable{run: statusLoop(status, deps)}); err != nil {
		return fmt.Errorf("%s: %w", NameInstanceStatus, err)
	}
	if deps.Settings.InterruptionQueue == "" {
		log.Log.WithName(NameInterruption).Info(queue.ErrNoQueue.Error())
		deps.Metrics.SetInterruptionHandling(false)
		return nil
	}
	consumer, err := queue.New(queue.Config{
		QueueName:    deps.Settings.InterruptionQueue,
		SQS:          deps.Clients.SQS,
		NodeClaimFor: nodeClaimFor(deps.State, deps.Clock),
		Handle:       h.handle,
		Registerer:   deps.Registerer,
		Clock:        deps.Clock,
		WaitTime:     deps.QueueWaitTime,
		Account:      deps.Account,
		Region:       deps.Region,
	})
	if err != nil {
		return fmt.Errorf("%s: %w", NameInterruption, err)
	}
	if err := mgr.Add(&leaderRunnable{run: pollLoop(consumer, deps)}); err != nil {
		return fmt.Errorf("%s: %w", NameInterruption, err)
	}
	deps.Metrics.SetInterruptionHandling(true)
	return nil
}

// leaderRunnable is a runnable that runs only on the elected leader.
type leaderRunnable struct {
	run func(ctx context.Context) error
}

func (r *leaderRunnable) Start(ctx context.Context) error { return r.run(ctx) }

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (r *leaderRunnable) NeedLeaderElection() bool { return true }

var _ manager.LeaderElectionRunnable = &leaderRunnable{}

// gcLoop collects leaked instances every deps.GCInterval until ctx ends.
// It skips a round while the cluster state has not caught up with the API
// server: an incomplete list of NodeClaims would make live instances look
// leaked.
// watchPricing has the cloud provider, if it can, say when its pricing API
// stops answering and when it answers again: once per change, each sets
// stevedore_pricing_fallback and is logged. While the API fails, the
// provider prices on-demand capacity with the last prices it gave, else its
// built-in ones (against an AWS emulator without the Price List API, for
// example, always the built-in ones).
func watchPricing(cp cloud.CloudProvider, m *metrics.Metrics, logger logr.Logger) {
	r, ok := cp.(cloud.PricingReporter)
	if !ok {
		return
	}
	r.ReportPricingTo(func(err error) {
		m.PricingFallback(err != nil)
		if err != nil {
			logger.Error(err, "the pricing API is failing; on-demand prices are the last it gave, else the built-in ones, until it answers again")
			return
		}
		logger.Info("the pricing API answers again; on-demand prices are its own")
	})
}

func gcLoop(reader client.Reader, deps Deps) func(ctx context.Context) error {
	if deps.Profiles == nil {
		deps.Profiles = &ProfileCollector{}
	}
	return func(ctx context.Context) error {
		logger := log.FromContext(ctx).WithName(NameGarbageCollection)
		t := deps.Clock.NewTicker(deps.GCInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C():
			}
			collectOnce(ctx, logger, reader, deps)
		}
	}
}

func collectOnce(ctx context.Context, logger logr.Logger, reader client.Reader, deps Deps) {
	if !deps.State.Synced(ctx, reader) {
		logger.V(1).Info("cluster state not synced; skipping leaked-instance collection")
		return
	}
	known := knownInstances(deps.State.NodeClaimProviderIDs())
	ids, err := garbagecollect.Collect(ctx, deps.Clients.EC2, deps.Settings.ClusterName,
		func(id string) bool { return known[id] }, deps.Clock.Now(), deps.GCGrace)
	for _, id := range ids {
		logger.Info("terminated leaked instance", "instance", id)
	}
	if err != nil && ctx.Err() == nil {
		logger.Error(err, "collecting leaked instances")
	}
	// Launch templates no launch has used for a while go too, as they do
	// when they leave Karpenter's cache.
	if deps.Cloud == nil {
		return
	}
	names, err := deps.Cloud.CollectLaunchTemplates(ctx)
	for _, name := range names {
		logger.Info("deleted unused launch template", "launchTemplate", name)
	}
	if err != nil && ctx.Err() == nil {
		logger.Error(err, "deleting unused launch templates")
	}
	if deps.Profiles != nil {
		deps.Profiles.collect(ctx, logger, deps, deps.Clock.Now())
	}
}

// knownInstances returns the instance IDs of the NodeClaims' providerIDs.
// The cluster state answers that without a snapshot, which would join and
// sort every node for it.
func knownInstances(providerIDs []string) map[string]bool {
	known := make(map[string]bool, len(providerIDs))
	for _, p := range providerIDs {
		if id := aws.InstanceID(p); id != "" {
			known[id] = true
		}
	}
	return known
}

// nodeClaimFor maps instance IDs to NodeClaim names from the cluster state.
func nodeClaimFor(st *state.Cluster, clk clock.PassiveClock) func(string) (string, bool) {
	return func(id string) (string, bool) {
		for _, n := range st.Snapshot(clk.Now()).Nodes {
			if n.NodeClaim != nil && aws.InstanceID(n.NodeClaim.Status.ProviderID) == id {
				return n.NodeClaim.Name, true
			}
		}
		return "", false
	}
}

// pollLoop polls the interruption queue until ctx ends. Each Poll long-polls,
// so the loop does not spin; after a failed receive it waits QueueRetry.
func pollLoop(c *queue.Consumer, deps Deps) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		logger := log.FromContext(ctx).WithName(NameInterruption)
		logger.Info("polling the interruption queue", "queue", deps.Settings.InterruptionQueue)
		for ctx.Err() == nil {
			n, err := c.Poll(ctx)
			if err == nil {
				if n > 0 {
					logger.V(1).Info("consumed interruption messages", "count", n)
				}
				continue
			}
			if ctx.Err() != nil {
				break
			}
			logger.Error(err, "polling the interruption queue", "queue", deps.Settings.InterruptionQueue)
			select {
			case <-ctx.Done():
			case <-deps.Clock.After(deps.QueueRetry):
			}
		}
		return nil
	}
}

// statusLoop polls the instance status checks every
// queue.DefaultStatusInterval until ctx ends, or until the controller turns
// out not to be allowed to: that is logged once and the loop ends.
func statusLoop(p *queue.StatusPoller, deps Deps) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		logger := log.FromContext(ctx).WithName(NameInstanceStatus)
		t := deps.Clock.NewTicker(queue.DefaultStatusInterval)
		defer t.Stop()
		for {
			n, err := p.Poll(ctx)
			switch {
			case errors.Is(err, queue.ErrStatusDenied):
				logger.Error(err, "not polling instance status checks")
				return nil
			case err != nil && ctx.Err() == nil:
				logger.Error(err, "polling instance status checks")
			case n > 0:
				logger.V(1).Info("acted on failed instance status checks", "count", n)
			}
			select {
			case <-ctx.Done():
				return nil
			case <-t.C():
			}
		}
	}
}

// zonalShiftLoop polls the cluster's ARC zonal shifts every
// zonalshift.DefaultInterval until ctx ends, as Karpenter's zonal shift
// controller does (see ZonalShiftWatcher). A failed poll is logged; the
// provider keeps using the shifts it last read.
func zonalShiftLoop(w *ZonalShiftWatcher, deps Deps) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		logger := log.FromContext(ctx).WithName(NameZonalShift)
		ctx = log.IntoContext(ctx, logger)
		tick := deps.Clock.NewTicker(zonalshift.DefaultInterval)
		defer tick.Stop()
		for {
			if err := w.Poll(ctx); err != nil && ctx.Err() == nil {
				logger.Error(err, "reading zonal shifts")
			}
			select {
			case <-ctx.Done():
				return nil
			case <-tick.C():
			}
		}
	}
}

// interruptionHandler acts on interruption events.
//
// An instance about to be reclaimed or stopped for maintenance (spot
// interruption warning, scheduled change, capacity reservation interruption,
// and a rebalance recommendation when actOnRebalance asks for it) is handed
// to the disruption controller, which taints the node, launches replacement
// capacity for its pods and deletes the NodeClaim so that the drain starts at
// once; budgets do not apply. An instance already stopping or terminated
// cannot be drained ahead of time: its NodeClaim is deleted. An instance
// whose EC2 instance or system status check has failed is terminated
// forcefully, as Karpenter does: its NodeClaim gets
// karpenter.sh/nodeclaim-termination-timestamp set to now, so the drain does
// not wait for pods on a machine that cannot run them, and is deleted. A
// rebalance recommendation is otherwise only recorded.
type interruptionHandler struct {
	kube  client.Client
	rec   events.EventRecorder
	cloud *aws.Provider
	// disruption replaces and drains interrupted nodes; when nil (in tests
	// of the handler alone) the NodeClaim is only deleted.
	disruption     interrupter
	metrics        *metrics.Metrics
	actOnRebalance bool
	// clock stamps termination deadlines; nil means the real clock.
	clock clock.PassiveClock
}

// interrupter takes an interrupted NodeClaim away; the disruption controller
// is one.
type interrupter interface {
	Interrupt(ctx context.Context, nodeClaim, message string) error
}

func (h *interruptionHandler) handle(ctx context.Context, a queue.Action) error {
	nc := &karpv1.NodeClaim{}
	if err := h.kube.Get(ctx, client.ObjectKey{Name: a.NodeClaim}, nc); err != nil {
		return client.IgnoreNotFound(err)
	}
	// The lookup finds stevedore's NodeClaims only (the cluster state holds
	// no other); one read since is still checked.
	if !wellknown.ManagedNodeClaim(nc) {
		return nil
	}
	forceful := forcefulKind(a.Event.Kind)
	if forceful && !nc.DeletionTimestamp.IsZero() {
		// The status poller reports a failing instance on every poll until
		// its NodeClaim is gone: once is enough.
		return nil
	}
	reason, note, act := describe(a, h.actOnRebalance)
	switch a.Event.Kind {
	case interruption.KindScheduledChange:
		// A scheduled maintenance event is what EC2 reports as an
		// unhealthy event status.
		h.metrics.InstanceStatusUnhealthy("event_status")
	case interruption.KindInstanceStatus, interruption.KindSystemStatus:
		// Counted once per NodeClaim: later polls stop above while it is
		// being deleted.
		h.metrics.InstanceStatusUnhealthy(string(a.Event.Kind))
	}
	h.eventOnClaimAndNode(ctx, nc, interruptionEventType(reason), reason, "Interrupted", note)
	if !act {
		return nil
	}
	if a.Event.Kind == interruption.KindSpotInterrupted && h.cloud != nil {
		// The pool that reclaimed this instance is likely short of capacity:
		// keep the next launches (the replacement first) away from it for
		// a while.
		l := nc.Labels
		if t, z := l[corev1.LabelInstanceTypeStable], l[corev1.LabelTopologyZone]; t != "" && z != "" {
			h.cloud.ICE().MarkUnavailable(t, z, wellknown.CapacityTypeSpot)
		}
	}
	if a.Event.Kind == interruption.KindCapacityReservationInterrupted && h.cloud != nil {
		// The reservation is being reclaimed: the replacement, and the
		// launches after it, go elsewhere until it is described again.
		id := a.Event.CapacityReservationID
		if id == "" {
			id = nc.Labels[wellknown.LabelCapacityReservationID]
		}
		if id != "" {
			h.cloud.MarkReservationUnavailable(id)
		}
	}
	if !nc.DeletionTimestamp.IsZero() {
		return nil
	}
	if h.disruption != nil && replacesAhead(a.Event.Kind) {
		return h.disruption.Interrupt(ctx, nc.Name, note)
	}
	metricReason := "interrupted"
	if forceful {
		if err := h.stampTermination(ctx, nc); err != nil {
			return err
		}
		metricReason = string(a.Event.Kind)
	}
	log.FromContext(ctx).Info("deleting interrupted nodeclaim", "NodeClaim", nc.Name,
		"instance", a.InstanceID, "kind", string(a.Event.Kind), "event", a.Event.ID)
	h.eventOnClaimAndNode(ctx, nc, corev1.EventTypeWarning, ReasonTerminatingOnInterruption, "Delete", "Interruption triggered termination for the NodeClaim/Node")
	if err := h.kube.Delete(ctx, nc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("deleting NodeClaim %s: %w", nc.Name, err)
	}
	h.metrics.NodeClaimDisrupted(metricReason, nc.Labels[wellknown.LabelNodePool], nc.Labels[wellknown.LabelCapacityType])
	return nil
}

// interruptionEventType is the type of an interruption's event, as
// Karpenter records it: a rebalance recommendation is Normal, the others
// are Warnings.
func interruptionEventType(reason string) string {
	if reason == ReasonSpotRebalanceRecommendation {
		return corev1.EventTypeNormal
	}
	return corev1.EventTypeWarning
}

// eventOnClaimAndNode records an event on nc and, when it has registered,
// on its Node, as Karpenter records interruption events on both.
func (h *interruptionHandler) eventOnClaimAndNode(ctx context.Context, nc *karpv1.NodeClaim, eventType, reason, action, note string) {
	h.rec.Eventf(nc, nil, eventType, reason, action, "%s", note)
	if nc.Status.NodeName == "" {
		return
	}
	node := &corev1.Node{}
	if err := h.kube.Get(ctx, client.ObjectKey{Name: nc.Status.NodeName}, node); err != nil {
		return
	}
	h.rec.Eventf(node, nil, eventType, reason, action, "%s", note)
}

// stampTermination sets the NodeClaim's termination deadline annotation to
// now, unless it has one already.
func (h *interruptionHandler) stampTermination(ctx context.Context, nc *karpv1.NodeClaim) error {
	if _, ok := nc.Annotations[wellknown.AnnotationNodeClaimTerminationTimestamp]; ok {
		return nil
	}
	base := nc.DeepCopy()
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	nc.Annotations[wellknown.AnnotationNodeClaimTerminationTimestamp] = h.now().UTC().Format(time.RFC3339)
	if err := h.kube.Patch(ctx, nc, client.MergeFrom(base)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("setting the termination deadline of NodeClaim %s: %w", nc.Name, err)
	}
	return nil
}

func (h *interruptionHandler) now() time.Time {
	if h.clock == nil {
		return time.Now()
	}
	return h.clock.Now()
}

// forcefulKind reports whether an event means the instance is broken now:
// its NodeClaim is terminated without waiting for a graceful drain.
func forcefulKind(k interruption.Kind) bool {
	return k == interruption.KindInstanceStatus || k == interruption.KindSystemStatus
}

// replacesAhead reports whether an interruption leaves time to launch
// replacement capacity before the instance goes: a warning, not a state
// change that has already happened.
func replacesAhead(k interruption.Kind) bool {
	switch k {
	case interruption.KindSpotInterrupted, interruption.KindScheduledChange,
		interruption.KindCapacityReservationInterrupted, interruption.KindRebalanceRecommendation:
		return true
	}
	return false
}

// describe returns the event reason and message for an interruption and
// whether the NodeClaim is taken away for it.
func describe(a queue.Action, actOnRebalance bool) (reason, note string, act bool) {
	e := a.Event
	switch e.Kind {
	case interruption.KindSpotInterrupted:
		return ReasonSpotInterrupted, fmt.Sprintf("EC2 will reclaim spot instance %s in two minutes (action %q); replacing and draining the node", a.InstanceID, e.InstanceAction), true
	case interruption.KindRebalanceRecommendation:
		if actOnRebalance {
			return ReasonSpotRebalanceRecommendation, fmt.Sprintf("spot instance %s is at elevated risk of interruption; replacing and draining the node", a.InstanceID), true
		}
		return ReasonSpotRebalanceRecommendation, fmt.Sprintf("spot instance %s is at elevated risk of interruption; no action taken", a.InstanceID), false
	case interruption.KindScheduledChange:
		return ReasonInstanceUnhealthy, fmt.Sprintf("AWS Health scheduled %s for instance %s; replacing and draining the node", e.EventTypeCode, a.InstanceID), true
	case interruption.KindInstanceStopped:
		return ReasonInstanceStopping, fmt.Sprintf("instance %s is %s; deleting the NodeClaim", a.InstanceID, e.State), true
	case interruption.KindInstanceTerminated:
		return ReasonInstanceTerminating, fmt.Sprintf("instance %s is %s; deleting the NodeClaim", a.InstanceID, e.State), true
	case interruption.KindInstanceStatus:
		return ReasonInstanceUnhealthy, fmt.Sprintf("the instance status check of instance %s has failed since %s; terminating the node without waiting for its pods", a.InstanceID, e.ImpairedSince.UTC().Format(time.RFC3339)), true
	case interruption.KindSystemStatus:
		return ReasonInstanceUnhealthy, fmt.Sprintf("the system status check of instance %s has failed since %s; terminating the node without waiting for its pods", a.InstanceID, e.ImpairedSince.UTC().Format(time.RFC3339)), true
	case interruption.KindCapacityReservationInterrupted:
		return ReasonCapacityReservationInterrupted, fmt.Sprintf("capacity reservation %s is reclaiming instance %s; replacing and draining the node", e.CapacityReservationID, a.InstanceID), true
	default:
		return "Interruption", fmt.Sprintf("unhandled interruption event %q for instance %s; no action taken", e.Kind, a.InstanceID), false
	}
}
