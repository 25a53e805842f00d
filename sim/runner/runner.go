// Package runner is the simulator's deterministic loop. It builds the world
// of a scenario — the in-memory API (package apiserver), the in-memory AWS
// (package cloud/aws/fake) behind the production AWS provider, the kubelets,
// the scheduler, the workload and node lifecycle controllers — and drives it
// together with the production reconcilers on a virtual clock.
//
// # The loop
//
// Everything that happens is an item in one priority queue, ordered by
// virtual time and then by the order it was added: a reconcile request for a
// controller, or a scenario event. The runner pops the next item, moves the
// clock to its time (idle time is skipped, so a day of cluster life takes as
// long as the work in it), carries it out, and then drains the changes the
// item made to the API. Each change is fed to the cluster state (through the
// production informer handlers, package state/informer) and to the report,
// and mapped through every controller's watches (package watch) to the
// requests it wakes, which are queued at the current time. A reconcile's
// RequeueAfter queues its request that much later; an error queues it after
// controller-runtime's default exponential backoff (5 ms doubling to 1000 s).
// A request already queued is not queued twice: like a work queue, the queue
// keeps the earliest time.
//
// Samples of the cluster are taken every SampleEvery, after everything due at
// that instant has been done. Work at one instant is capped: past
// MaxItemsPerInstant items the rest is deferred by a millisecond and the run
// records a warning, so a controller that wakes itself forever cannot hang a
// run.
//
// Nothing runs in a goroutine, no map is iterated where order could matter,
// and every random choice comes from the scenario's seed: the same scenario
// and seed give the same run, byte for byte.
//
// # Controllers
//
// The production controllers are listed, with watches that mirror their
// Register methods, in Production (controllers.go); to drive another
// reconciler, add it there. A "restartController" event throws all of them
// away together with the cluster state, the AWS provider and its caches, and
// builds them again from the API, as a restart of the controller process
// would; the simulated world (kubelets, scheduler, workload controllers)
// carries on.
package runner

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"sort"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/sim/apiserver"
	simclock "github.com/stevedore-autoscaler/stevedore/sim/clock"
	"github.com/stevedore-autoscaler/stevedore/sim/kubelet"
	"github.com/stevedore-autoscaler/stevedore/sim/nodelifecycle"
	"github.com/stevedore-autoscaler/stevedore/sim/report"
	"github.com/stevedore-autoscaler/stevedore/sim/scenario"
	"github.com/stevedore-autoscaler/stevedore/sim/scheduler"
	"github.com/stevedore-autoscaler/stevedore/sim/watch"
	"github.com/stevedore-autoscaler/stevedore/sim/workloads"
)

// DefaultMaxItemsPerInstant is the default cap on the items carried out at
// one virtual instant.
const DefaultMaxItemsPerInstant = 200000

// Backoff of a failing request: controller-runtime's default rate limiter.
const (
	backoffBase = 5 * time.Millisecond
	backoffMax  = 1000 * time.Second
)

// Options configure a Runner.
type Options struct {
	// Run is the scenario to run; required.
	Run *scenario.Run
	// Scheme knows the core, karpenter.sh and karpenter.k8s.aws types;
	// required (the one the scenario was loaded with).
	Scheme *runtime.Scheme
	// Log receives the controllers' logs; default: discarded.
	Log logr.Logger
	// Progress, when set, is called as virtual time advances, at most once
	// per percent of the run.
	Progress func(now time.Time)
	// MaxItemsPerInstant caps the work at one instant; default
	// DefaultMaxItemsPerInstant.
	MaxItemsPerInstant int
	// Controllers, when set, replaces Production: it returns the
	// controllers to drive, built from deps. Tests use it to drive a subset
	// or extra reconcilers.
	Controllers func(deps *Deps) ([]watch.Controller, error)
}

// driven is a controller the runner drives.
type driven struct {
	watch.Controller
	failures map[reconcile.Request]int
	// dead controllers were replaced by a restart; their queued requests
	// are dropped.
	dead bool
	// world controllers survive restarts.
	world bool
}

// Runner runs one scenario. Create it with New.
type Runner struct {
	opts  Options
	run   *scenario.Run
	clock *simclock.Clock
	api   *apiserver.Server
	aws   *fake.AWS
	world *world
	rng   *rand.Rand
	end   time.Time

	kubelets *kubelet.Kubelets
	lifecyc  *driven
	kubeletD *driven

	simulated []*driven
	prod      []*driven
	deps      *Deps
	feed      *stateFeed
	q         *queue
	rec       *report.Recorder
	ctx       context.Context

	// logging is set when the controllers' logs go somewhere.
	logging bool

	// stats
	reconciles int
	// reconcilesBy counts reconciles per controller name.
	reconcilesBy map[string]int
	// timeBy sums, and slowestBy keeps the longest of, each controller's
	// reconciles in wall-clock time: figures for benchmarks, which nothing
	// in the run reads.
	timeBy, slowestBy map[string]time.Duration
	errors            map[string]int
	lastErr           map[string]string
	progress          int
}

// New builds the world of a scenario: the API with the scenario's objects
// applied at the start, the AWS account, and every controller.
func New(opts Options) (*Runner, error) {
	if opts.Run == nil || opts.Scheme == nil {
		return nil, fmt.Errorf("runner: a scenario and a scheme are required")
	}
	if opts.MaxItemsPerInstant <= 0 {
		opts.MaxItemsPerInstant = DefaultMaxItemsPerInstant
	}
	logging := opts.Log.GetSink() != nil
	if !logging {
		opts.Log = logr.Discard()
	}
	run := opts.Run
	r := &Runner{
		logging:      logging,
		opts:         opts,
		run:          run,
		clock:        simclock.New(run.Start),
		rng:          rand.New(rand.NewPCG(run.Seed, 0x51e7e575)),
		end:          run.Start.Add(run.Duration),
		q:            newQueue(),
		errors:       map[string]int{},
		reconcilesBy: map[string]int{},
		timeBy:       map[string]time.Duration{},
		slowestBy:    map[string]time.Duration{},
		lastErr:      map[string]string{},
	}
	r.ctx = log.IntoContext(context.Background(), opts.Log)
	var err error
	if r.api, err = apiserver.New(apiserver.Options{Scheme: opts.Scheme, Clock: r.clock, Seed: run.Seed, LogEvictions: true}); err != nil {
		return nil, err
	}
	addIndexes(r.api)
	if r.world, err = buildWorld(run, r.clock); err != nil {
		return nil, err
	}
	r.aws = r.world.aws
	r.world.onTerminate = r.instancesTerminated
	r.rec = report.NewRecorder(run.Name, run.Seed, run.Start, r.end, r.aws)
	r.world.onLaunch = r.rec.InstancesLaunched

	r.kubelets = kubelet.New(kubelet.Options{
		API: r.api, AWS: r.aws, Clock: r.clock, ClusterName: run.ClusterName,
		BootDelay: run.AWS.BootTime, ReadyTime: readyTime(run.AWS.ReadyTime), PodStartTime: podStart(run.PodStartTime), OnStop: r.kubeletStopped,
	})
	nl := nodelifecycle.New(r.api, r.aws, r.clock, r.kubelets)
	for _, c := range append([]watch.Controller{
		r.kubelets.Controller(),
		scheduler.New(r.api, r.clock).Controller(),
		nl.Controller(),
	}, workloads.Controllers(r.api, r.clock, workloads.Options{KubeAPIQPS: run.KubeAPIQPS, KubeAPIBurst: run.KubeAPIBurst})...) {
		d := &driven{Controller: c, failures: map[reconcile.Request]int{}, world: true}
		r.simulated = append(r.simulated, d)
		switch c.Name {
		case kubelet.Name:
			r.kubeletD = d
		case nodelifecycle.Name:
			r.lifecyc = d
		}
	}
	if err := r.applyObjects(); err != nil {
		return nil, err
	}
	return r, nil
}

// API returns the in-memory API server.
func (r *Runner) API() *apiserver.Server { return r.api }

// AWS returns the in-memory AWS.
func (r *Runner) AWS() *fake.AWS { return r.aws }

// Clock returns the virtual clock.
func (r *Runner) Clock() *simclock.Clock { return r.clock }

// Run runs the scenario to its end and returns the report.
func (r *Runner) Run() (*report.Document, error) {
	// The objects applied at the start reach the controllers through their
	// initial sync (startController), not as changes.
	r.api.Drain()
	if err := r.startControllers(); err != nil {
		return nil, err
	}
	for _, c := range r.simulated {
		r.startController(c)
	}
	for i := range r.run.Events {
		e := &r.run.Events[i]
		r.q.addEvent(e, r.run.Start.Add(e.At))
	}
	r.dispatch()
	nextSample := r.run.Start
	instant, atInstant := r.run.Start, 0
	for {
		it := r.q.peek()
		if it == nil || it.at.After(r.end) {
			break
		}
		for !nextSample.After(r.end) && nextSample.Before(it.at) {
			r.sample(nextSample)
			nextSample = nextSample.Add(r.run.SampleEvery)
		}
		r.q.pop()
		if it.at.Equal(instant) {
			atInstant++
			if atInstant > r.opts.MaxItemsPerInstant {
				r.rec.Warn("more than %d items at %s: the rest of that instant's work was deferred; a controller may be waking itself in a loop",
					r.opts.MaxItemsPerInstant, instant.Format(time.RFC3339Nano))
				r.defer1ms(it)
				continue
			}
		} else {
			instant, atInstant = it.at, 1
		}
		r.clock.AdvanceTo(it.at)
		r.reportProgress()
		switch {
		case it.event != nil:
			r.scenarioEvent(it.event)
		case it.fn != nil:
			it.fn()
		case !it.ctrl.dead:
			r.reconcile(it.ctrl, it.req)
		}
		r.dispatch()
	}
	for !nextSample.After(r.end) {
		r.sample(nextSample)
		nextSample = nextSample.Add(r.run.SampleEvery)
	}
	r.clock.AdvanceTo(r.end)
	r.warnErrors()
	return r.rec.Finish(r.end, r.api), nil
}

func (r *Runner) defer1ms(it *item) {
	if it.event != nil {
		r.q.addEvent(it.event, it.at.Add(time.Millisecond))
		return
	}
	if it.fn != nil {
		r.q.addFunc(it.fn, it.at.Add(time.Millisecond))
		return
	}
	r.q.addReconcile(it.ctrl, it.req, it.at.Add(time.Millisecond))
}

func (r *Runner) sample(t time.Time) {
	r.clock.AdvanceTo(t)
	r.rec.Sample(t, r.api)
}

func (r *Runner) reportProgress() {
	if r.opts.Progress == nil {
		return
	}
	pct := int(100 * r.clock.Now().Sub(r.run.Start) / max(r.run.Duration, 1))
	if pct > r.progress {
		r.progress = pct
		r.opts.Progress(r.clock.Now())
	}
}

// reconcile calls a controller and queues what its result asks for.
func (r *Runner) reconcile(d *driven, req reconcile.Request) {
	r.reconciles++
	r.reconcilesBy[d.Name]++
	began := time.Now()
	res, err := r.call(d, req)
	took := time.Since(began)
	r.timeBy[d.Name] += took
	r.slowestBy[d.Name] = max(r.slowestBy[d.Name], took)
	now := r.clock.Now()
	if err != nil {
		n := d.failures[req] + 1
		d.failures[req] = n
		r.errors[d.Name]++
		r.lastErr[d.Name] = err.Error()
		r.q.addReconcile(d, req, now.Add(backoff(n)))
		return
	}
	delete(d.failures, req)
	switch {
	case res.RequeueAfter > 0:
		r.q.addReconcile(d, req, now.Add(res.RequeueAfter))
	case res.Requeue: //nolint:staticcheck // controllers may still ask for it
		n := d.failures[req] + 1
		d.failures[req] = n
		r.q.addReconcile(d, req, now.Add(backoff(n)))
	}
}

// call runs Reconcile, turning a panic into an error as controller-runtime
// does.
func (r *Runner) call(d *driven, req reconcile.Request) (res reconcile.Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
		}
	}()
	ctx := r.ctx
	if r.logging {
		ctx = log.IntoContext(ctx, r.opts.Log.WithName(d.Name).WithValues("time", r.clock.Now().Format(time.RFC3339Nano), "request", req.String()))
	}
	return d.Reconciler.Reconcile(ctx, req)
}

func backoff(failures int) time.Duration {
	if failures > 30 {
		return backoffMax
	}
	return min(backoffBase<<(failures-1), backoffMax)
}

// dispatch drains the API's changes and events: the state, the report and
// the controllers' watches see each change.
func (r *Runner) dispatch() {
	for r.api.Pending() {
		changes, events := r.api.Drain()
		now := r.clock.Now()
		for _, c := range changes {
			if r.feed != nil {
				r.feed.change(c)
			}
			r.rec.Change(now, c)
			r.wake(c, now)
		}
		for _, e := range events {
			r.rec.Event(now, e)
		}
	}
	now := r.clock.Now()
	for _, e := range r.api.DrainEvictions() {
		r.rec.Eviction(now, e)
	}
	r.rec.Flush(now, r.api)
}

// wake queues the requests a change maps to, for every controller.
func (r *Runner) wake(c apiserver.Change, now time.Time) {
	for _, group := range [][]*driven{r.simulated, r.prod} {
		for _, d := range group {
			for _, w := range d.Watches {
				if w.Kind != c.GVK {
					continue
				}
				for _, req := range w.Map(c) {
					r.q.addReconcile(d, req, now)
				}
			}
		}
	}
}

// startController queues a controller's start requests and replays every
// stored object of the kinds it watches, as its informers' initial lists
// would.
func (r *Runner) startController(d *driven) {
	now := r.clock.Now()
	for _, req := range d.Start {
		r.q.addReconcile(d, req, now)
	}
	for _, w := range d.Watches {
		for _, o := range r.api.Objects(w.Kind) {
			for _, req := range w.Map(apiserver.Change{Type: apiserver.Added, GVK: w.Kind, Object: o}) {
				r.q.addReconcile(d, req, now)
			}
		}
	}
}

// startControllers builds the production controllers and a fresh cluster
// state from the API, and starts them.
func (r *Runner) startControllers() error {
	deps, err := r.newDeps()
	if err != nil {
		return err
	}
	build := Production
	if r.opts.Controllers != nil {
		build = r.opts.Controllers
	}
	ctrls, err := build(deps)
	if err != nil {
		return err
	}
	for _, d := range r.prod {
		d.dead = true
	}
	r.q.dropDead()
	r.prod = nil
	r.deps = deps
	if r.feed, err = newStateFeed(r.api, deps.State, deps.NodeOverlay); err != nil {
		return err
	}
	for _, c := range ctrls {
		d := &driven{Controller: c, failures: map[reconcile.Request]int{}}
		r.prod = append(r.prod, d)
		r.startController(d)
	}
	return nil
}

// restart throws away the controllers, their state and the provider's
// caches, and starts them again from the API.
func (r *Runner) restart() error {
	return r.startControllers()
}

// kubeletStopped wakes the node lifecycle controller when a node's kubelet
// has been silent long enough to be noticed.
func (r *Runner) kubeletStopped(node string) {
	r.q.addReconcile(r.lifecyc, watchNamed(node), r.clock.Now().Add(nodelifecycle.NodeMonitorGracePeriod))
}

// instancesTerminated is told of every TerminateInstances call: the
// instances' kubelets die now and their billing stops.
func (r *Runner) instancesTerminated(ids []string) {
	now := r.clock.Now()
	for _, id := range ids {
		r.rec.InstanceTerminated(id, now, "TerminateInstances")
		if name, ok := r.kubelets.NodeName(id); ok {
			r.q.addReconcile(r.kubeletD, watchNamed(name), now)
		}
	}
}

// warnErrors records the controllers that failed during the run.
func (r *Runner) warnErrors() {
	names := make([]string, 0, len(r.errors))
	for n := range r.errors {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		r.rec.Warn("controller %s failed %d times; last error: %s", n, r.errors[n], r.lastErr[n])
	}
}

// Stats are counters of a run's work.
type Stats struct {
	Reconciles int
	// ReconcilesBy is Reconciles per controller.
	ReconcilesBy map[string]int
	// TimeBy and SlowestBy are each controller's wall-clock time in all and
	// in its longest reconcile (a provisioning or consolidation decision is
	// one reconcile of its controller).
	TimeBy, SlowestBy map[string]time.Duration
	Errors            map[string]int
}

// Stats returns what the run did so far.
func (r *Runner) Stats() Stats {
	return Stats{Reconciles: r.reconciles, ReconcilesBy: r.reconcilesBy, TimeBy: r.timeBy, SlowestBy: r.slowestBy, Errors: r.errors}
}

func watchNamed(name string) reconcile.Request { return watch.Named(name) }

func objectName(o client.Object) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}

// podStart maps a scenario's pod start time to the kubelet's option, where 0
// means the default.
func podStart(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// readyTime maps a scenario's ready time to the kubelet's option, where 0
// means the default.
func readyTime(d time.Duration) time.Duration {
	if d == 0 {
		return time.Nanosecond
	}
	return d
}
