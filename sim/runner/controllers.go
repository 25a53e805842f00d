package runner

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	autoscalingv1beta1 "github.com/stevedore-autoscaler/stevedore/api/autoscaling/v1beta1"
	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/karpenter/v1alpha1"
	"github.com/stevedore-autoscaler/stevedore/api/validation"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws"
	interruptionqueue "github.com/stevedore-autoscaler/stevedore/cloud/aws/interruption/queue"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/nodeclass"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/sdk"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/settings"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/zonalshift"
	"github.com/stevedore-autoscaler/stevedore/controllers"
	"github.com/stevedore-autoscaler/stevedore/controllers/capacitybuffer"
	disruptionctl "github.com/stevedore-autoscaler/stevedore/controllers/disruption"
	"github.com/stevedore-autoscaler/stevedore/controllers/metrics"
	"github.com/stevedore-autoscaler/stevedore/controllers/node/health"
	nodeterm "github.com/stevedore-autoscaler/stevedore/controllers/node/termination"
	"github.com/stevedore-autoscaler/stevedore/controllers/nodeclaim/consistency"
	nodeclaimdisruption "github.com/stevedore-autoscaler/stevedore/controllers/nodeclaim/disruption"
	"github.com/stevedore-autoscaler/stevedore/controllers/nodeclaim/expiration"
	nodeclaimgc "github.com/stevedore-autoscaler/stevedore/controllers/nodeclaim/garbagecollection"
	"github.com/stevedore-autoscaler/stevedore/controllers/nodeclaim/lifecycle"
	"github.com/stevedore-autoscaler/stevedore/controllers/nodeclaim/tagging"
	nodeclassstatus "github.com/stevedore-autoscaler/stevedore/controllers/nodeclass/status"
	overlaystatus "github.com/stevedore-autoscaler/stevedore/controllers/nodeoverlay/status"
	"github.com/stevedore-autoscaler/stevedore/controllers/nodepool/static"
	nodepoolstatus "github.com/stevedore-autoscaler/stevedore/controllers/nodepool/status"
	"github.com/stevedore-autoscaler/stevedore/controllers/provisioning"
	"github.com/stevedore-autoscaler/stevedore/sim/apiserver"
	simclock "github.com/stevedore-autoscaler/stevedore/sim/clock"
	"github.com/stevedore-autoscaler/stevedore/sim/watch"
	"github.com/stevedore-autoscaler/stevedore/state"
)

// interruptionPoller is the name of the interruption queue's poller.
const interruptionPoller = controllers.NameInterruption

// Kinds the production controllers watch.
var (
	nodeGVK             = corev1.SchemeGroupVersion.WithKind("Node")
	podGVK              = corev1.SchemeGroupVersion.WithKind("Pod")
	nodeClaimGVK        = karpv1.GroupVersion.WithKind("NodeClaim")
	nodePoolGVK         = karpv1.GroupVersion.WithKind("NodePool")
	nodeOverlayGVK      = v1alpha1.GroupVersion.WithKind("NodeOverlay")
	ec2NodeClassGVK     = awsv1.GroupVersion.WithKind("EC2NodeClass")
	volumeAttachmentGVK = storagev1.SchemeGroupVersion.WithKind("VolumeAttachment")
	capacityBufferGVK   = autoscalingv1beta1.GroupVersion.WithKind("CapacityBuffer")
	podTemplateGVK      = corev1.SchemeGroupVersion.WithKind("PodTemplate")
	deploymentGVK       = appsv1.SchemeGroupVersion.WithKind("Deployment")
	statefulSetGVK      = appsv1.SchemeGroupVersion.WithKind("StatefulSet")
)

// Deps are what the production controllers are built from. A controller
// restart builds a new Deps: a fresh cluster state, AWS provider (with empty
// caches), resolver and metrics.
type Deps struct {
	API       *apiserver.Server
	Cloud     *aws.Provider
	Clients   sdk.Clients
	Resolver  *nodeclass.Resolver
	State     *state.Cluster
	Clock     *simclock.Clock
	Metrics   *metrics.Metrics
	Validator *validation.Validator
	Settings  settings.Settings
	NodeClass nodeclassstatus.Options
	// Provisioning are the provisioner's options from the scenario.
	Provisioning provisioning.Options
	// Disruption are the disruption controller's options.
	Disruption disruptionctl.Options
	// NodeRepair turns node repair on (the NodeRepair feature gate).
	NodeRepair health.Options
	// NodeOverlay applies NodeOverlays and runs their status controller
	// (the NodeOverlay feature gate).
	NodeOverlay bool
	// ActOnRebalance treats rebalance recommendations like interruption
	// warnings.
	ActOnRebalance bool
	// Account and Region are the simulated account's: the interruption
	// queue drops other accounts' and regions' messages, as in production.
	Account, Region string
}

// Recorder returns the event recorder of the named controller.
func (d *Deps) Recorder(name string) events.EventRecorder { return d.API.Recorder(name) }

// newDeps builds the production controllers' dependencies the way
// `stevedore controller` builds them (cmd/stevedore, runController), with the
// in-memory AWS behind the clients and the virtual clock.
func (r *Runner) newDeps() (*Deps, error) {
	run := r.run
	st := run.Controller.Settings
	cl := r.world.cluster
	info := aws.ClusterInfo{Name: st.ClusterName, Endpoint: cl.Endpoint, CABundle: cl.CertificateAuthority, ServiceCIDR: cl.ServiceCIDR, DNS: []string{"10.100.0.10"}}
	api := r.api
	provider, err := aws.New(aws.Options{
		Clients:  r.world.clients,
		Settings: st,
		Clock:    r.clock,
		NodeClass: func(ctx context.Context, name string) (*awsv1.EC2NodeClass, error) {
			nc := &awsv1.EC2NodeClass{}
			if err := api.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
				return nil, err
			}
			return nc, nil
		},
		Cluster: info,
		Region:  run.AWS.Region,

		DisableReservedCapacity: !run.Controller.ReservedCapacity,
	})
	if err != nil {
		return nil, err
	}
	m, err := metrics.New(prometheus.NewRegistry())
	if err != nil {
		return nil, err
	}
	v, err := validation.Default()
	if err != nil {
		return nil, err
	}
	st2 := state.NewCluster()
	m.CountLaunchFailures(provider)
	m.WatchState(metrics.StateOptions{State: st2, Clock: r.clock})
	return &Deps{
		API:     api,
		Cloud:   provider,
		Clients: r.world.clients,
		Resolver: nodeclass.NewResolver(r.world.clients, nodeclass.Options{
			ClusterName: st.ClusterName, Region: run.AWS.Region, Clock: r.clock, DisableDryRun: st.DisableDryRun, Cluster: info.ForUserData(),
			DisableCapacityReservations: !run.Controller.ReservedCapacity,
		}),
		State:     st2,
		Clock:     r.clock,
		Metrics:   m,
		Validator: v,
		Settings:  st,
		NodeClass: nodeclassstatus.Options{KubernetesVersion: run.KubernetesVersion, CABundle: info.CABundle},
		Provisioning: provisioning.Options{
			BatchIdle: run.Controller.BatchIdle, BatchMax: run.Controller.BatchMax, PreferencePolicy: run.Controller.PreferencePolicy,
			EqualWeightOrder: run.Controller.EqualWeightOrder,
			CapacityBuffer:   run.Controller.CapacityBuffer,
			MinValuesPolicy:  run.Controller.MinValuesPolicy,
		},
		Disruption: disruptionctl.Options{
			ValidationDelay: run.Controller.ValidationDelay, ReplacementTimeout: run.Controller.ReplacementTimeout,
			SpotToSpot: run.Controller.SpotToSpot, StaticCapacity: run.Controller.StaticCapacity, PreferencePolicy: run.Controller.PreferencePolicy,
			MaxConsolidationCandidates: run.Controller.MaxConsolidationCandidates, MinValuesPolicy: run.Controller.MinValuesPolicy,
		},
		NodeRepair:     health.Options{Enabled: run.Controller.NodeRepair, MaxUnhealthyPercent: run.Controller.MaxUnhealthyPercent},
		NodeOverlay:    run.Controller.NodeOverlay,
		ActOnRebalance: run.Controller.ActOnRebalance,
		Account:        r.world.aws.AccountID(),
		Region:         r.world.aws.Region(),
	}, nil
}

// Production returns the production controllers, each with the watches
// its Register method sets up under a manager (same kinds, predicates and
// mappings), in the order controllers.Register adds them.
//
// To drive another reconciler in the simulator, build it here from d and
// append it with its watches: watch.Own for a For(kind), watch.Map for a
// Watches(kind, EnqueueRequestsFromMapFunc(...)), Start for a raw source that
// enqueues a singleton request once. A reconciler that needs no watches and
// requeues itself (a periodic singleton) only needs Start.
func Production(d *Deps) ([]watch.Controller, error) {
	kube := d.API
	out := []watch.Controller{
		{
			Name:       lifecycle.Name,
			Reconciler: lifecycle.New(kube, d.Cloud, d.Clock, d.Recorder(controllers.EventSource), d.Metrics).WithIndexes(),
			Watches:    []watch.Watch{watch.Own(nodeClaimGVK), watch.Map(nodeGVK, nodeClaimsWithProviderID(kube))},
		},
		{
			Name:       nodeclaimgc.Name,
			Reconciler: nodeclaimgc.New(kube, d.Cloud, d.Clock, d.Recorder(controllers.EventSource)),
			Start:      []reconcile.Request{nodeclaimgc.Request()},
		},
		{
			Name:       nodeterm.Name,
			Reconciler: nodeterm.New(kube, d.Cloud, d.Clock, d.Recorder(controllers.EventSource)),
			Watches: []watch.Watch{
				watch.Own(nodeGVK, func(o client.Object) bool {
					return !o.GetDeletionTimestamp().IsZero() && controllerutil.ContainsFinalizer(o, wellknown.FinalizerTermination)
				}),
				watch.Map(podGVK, func(o client.Object) []reconcile.Request {
					if n := o.(*corev1.Pod).Spec.NodeName; n != "" {
						return []reconcile.Request{watch.Named(n)}
					}
					return nil
				}),
				watch.Map(volumeAttachmentGVK, func(o client.Object) []reconcile.Request {
					if n := o.(*storagev1.VolumeAttachment).Spec.NodeName; n != "" {
						return []reconcile.Request{watch.Named(n)}
					}
					return nil
				}),
			},
		},
		{
			Name:       nodepoolstatus.Name,
			Reconciler: nodepoolstatus.New(kube, d.State, d.Clock, d.Recorder(controllers.EventSource), d.Validator, d.Metrics),
			Watches: []watch.Watch{
				watch.Own(nodePoolGVK),
				{Kind: nodeClaimGVK, Map: func(c apiserver.Change) []reconcile.Request {
					if c.Type == apiserver.Modified && !nodepoolstatus.NodeClaimCountChanged(c.Old.(*karpv1.NodeClaim), c.Object.(*karpv1.NodeClaim)) {
						return nil
					}
					return nodePoolOfLabel(c.Object)
				}},
				{Kind: nodeGVK, Map: func(c apiserver.Change) []reconcile.Request {
					if c.Type == apiserver.Modified && !nodepoolstatus.NodeBudgetChanged(c.Old.(*corev1.Node), c.Object.(*corev1.Node)) {
						return nil
					}
					return nodePoolOfLabel(c.Object)
				}},
				watch.Map(ec2NodeClassGVK, nodePoolsOfNodeClass(kube)),
			},
		},
		{
			Name:       nodeclassstatus.Name,
			Reconciler: nodeclassstatus.New(kube, d.Resolver, d.Recorder(controllers.EventSource), d.NodeClass),
			Watches:    []watch.Watch{watch.Own(ec2NodeClassGVK), watch.Map(nodeClaimGVK, nodeClassOfNodeClaim)},
		},
	}
	prov := provisioning.New(kube, d.State, d.Cloud, d.Clock, d.Recorder(controllers.EventSource), d.Provisioning, d.Metrics)
	provWatches := []watch.Watch{watch.Map(podGVK, func(o client.Object) []reconcile.Request {
		if !state.IsProvisionable(o.(*corev1.Pod)) {
			return nil
		}
		prov.Trigger()
		return []reconcile.Request{provisioning.Request()}
	})}
	if d.Provisioning.CapacityBuffer {
		provWatches = append(provWatches, watch.Map(capacityBufferGVK, func(client.Object) []reconcile.Request {
			prov.Trigger()
			return []reconcile.Request{provisioning.Request()}
		}))
	}
	out = append(out, watch.Controller{
		Name:       provisioning.Name,
		Reconciler: prov,
		Watches:    provWatches,
		Start:      []reconcile.Request{provisioning.Request()},
	})
	if d.Provisioning.CapacityBuffer {
		cb := capacitybuffer.New(kube, d.State, d.Clock, prov.Trigger)
		mapper := func(kind string) func(client.Object) []reconcile.Request {
			fn := cb.BuffersNaming(kind)
			return func(o client.Object) []reconcile.Request { return fn(context.Background(), o) }
		}
		out = append(out, watch.Controller{
			Name:       capacitybuffer.Name,
			Reconciler: cb,
			Watches: []watch.Watch{
				watch.Own(capacityBufferGVK),
				watch.Map(podTemplateGVK, mapper(capacitybuffer.KindPodTemplate)),
				watch.Map(deploymentGVK, mapper(autoscalingv1beta1.KindDeployment)),
				watch.Map(statefulSetGVK, mapper(autoscalingv1beta1.KindStatefulSet)),
			},
		})
	}
	disr := disruptionctl.New(kube, d.State, d.Cloud, d.Clock, d.Recorder(controllers.EventSource), d.Disruption, d.Metrics)
	ncd := nodeclaimdisruption.New(kube, d.Cloud, d.Clock, d.Recorder(controllers.EventSource))
	out = append(out,
		watch.Controller{
			Name:       nodeclaimdisruption.Name,
			Reconciler: ncd,
			Watches: []watch.Watch{
				watch.Own(nodeClaimGVK),
				{Kind: nodePoolGVK, Map: func(c apiserver.Change) []reconcile.Request {
					if c.Type == apiserver.Modified && c.Old.GetGeneration() == c.Object.GetGeneration() &&
						equality.Semantic.DeepEqual(c.Old.GetAnnotations(), c.Object.GetAnnotations()) {
						return nil
					}
					return nodeClaimsOfNodePool(kube, c.Object)
				}},
				watch.Map(ec2NodeClassGVK, func(o client.Object) []reconcile.Request {
					return ncd.NodeClaimsForNodeClass(context.Background(), o)
				}),
			},
		},
		watch.Controller{
			Name:       nodeclaimdisruption.PodEventsName,
			Reconciler: reconcile.Func(ncd.ReconcilePodEvent),
			Watches:    []watch.Watch{{Kind: podGVK, Map: podEvents(kube)}},
		},
		watch.Controller{
			Name:       expiration.Name,
			Reconciler: expiration.New(kube, d.Clock, d.Recorder(controllers.EventSource), d.Metrics),
			Watches:    []watch.Watch{watch.Own(nodeClaimGVK)},
		},
		watch.Controller{
			Name:       consistency.Name,
			Reconciler: consistency.New(kube, d.Clock, d.Recorder(controllers.EventSource)),
			Watches: []watch.Watch{
				watch.Own(nodeClaimGVK, func(o client.Object) bool {
					nc, ok := o.(*karpv1.NodeClaim)
					return ok && wellknown.ManagedNodeClaim(nc)
				}),
				watch.Map(nodeGVK, consistency.NodeClaimsOf),
			},
		},
		watch.Controller{
			Name:       tagging.Name,
			Reconciler: tagging.New(kube, d.Clients.EC2, d.Settings.ClusterName),
			Watches: []watch.Watch{watch.Own(nodeClaimGVK, func(o client.Object) bool {
				nc, ok := o.(*karpv1.NodeClaim)
				return ok && tagging.Taggable(nc)
			})},
		},
	)
	if d.NodeRepair.Enabled && len(d.Cloud.RepairPolicies()) > 0 {
		out = append(out, watch.Controller{
			Name:       health.Name,
			Reconciler: health.New(kube, d.Cloud, d.Clock, d.Recorder(controllers.EventSource), d.Metrics, d.NodeRepair),
			Watches: []watch.Watch{{Kind: nodeGVK, Map: func(c apiserver.Change) []reconcile.Request {
				switch c.Type {
				case apiserver.Deleted:
					return nil
				case apiserver.Modified:
					if sameConditions(c.Old.(*corev1.Node).Status.Conditions, c.Object.(*corev1.Node).Status.Conditions) {
						return nil
					}
				}
				return []reconcile.Request{watch.Key(c.Object)}
			}}},
		})
	}
	if d.NodeOverlay {
		// As controllers.Register adds it: a singleton woken by any
		// change to an overlay's or NodePool's spec, or to a node class.
		wake := func(client.Object) []reconcile.Request { return []reconcile.Request{watch.Named(overlaystatus.Name)} }
		specChanged := func(c apiserver.Change) []reconcile.Request {
			if c.Type == apiserver.Modified && c.Old.GetGeneration() == c.Object.GetGeneration() {
				return nil
			}
			return wake(c.Object)
		}
		out = append(out, watch.Controller{
			Name:       overlaystatus.Name,
			Reconciler: overlaystatus.New(kube, d.State, d.Cloud, d.Clock),
			Start:      []reconcile.Request{watch.Named(overlaystatus.Name)},
			Watches: []watch.Watch{
				{Kind: nodeOverlayGVK, Map: specChanged},
				{Kind: nodePoolGVK, Map: specChanged},
				watch.Map(ec2NodeClassGVK, wake),
			},
		})
	}
	if d.Disruption.StaticCapacity {
		out = append(out, watch.Controller{
			Name:       static.Name,
			Reconciler: static.New(kube, d.State, d.Cloud, d.Clock, d.Metrics, d.Disruption.MaxInstanceTypes),
			Start:      []reconcile.Request{static.Request()},
		})
	}
	out = append(out,
		watch.Controller{
			Name:       disruptionctl.Name,
			Reconciler: disr,
			Start:      []reconcile.Request{disruptionctl.Request()},
		},
		watch.Controller{
			Name:       controllers.NameGarbageCollection,
			Reconciler: &leakedInstances{deps: d},
			Start:      []reconcile.Request{watch.Named(controllers.NameGarbageCollection)},
		},
	)
	if shifts := d.Cloud.ZonalShifts(); shifts != nil {
		out = append(out, watch.Controller{
			Name:       controllers.NameZonalShift,
			Reconciler: &zonalShiftPoller{watcher: controllers.NewZonalShiftWatcher(shifts, kube, d.Recorder(controllers.EventSource), d.Clock)},
			Start:      []reconcile.Request{watch.Named(controllers.NameZonalShift)},
		})
	}
	// The instance-status poller and the queue consumer act on what they
	// find the same way.
	nodeClaimFor := controllers.NodeClaimForInstance(d.State, d.Clock)
	handle := controllers.InterruptionHandler(kube, d.Recorder(controllers.EventSource), d.Cloud, disr, d.Metrics, d.ActOnRebalance, d.Clock)
	status, err := interruptionqueue.NewStatusPoller(interruptionqueue.StatusConfig{
		EC2:          d.Clients.EC2,
		NodeClaimFor: nodeClaimFor,
		Handle:       handle,
		Clock:        d.Clock,
	})
	if err != nil {
		return nil, err
	}
	out = append(out, watch.Controller{
		Name:       controllers.NameInstanceStatus,
		Reconciler: &statusPoller{poller: status},
		Start:      []reconcile.Request{watch.Named(controllers.NameInstanceStatus)},
	})
	if d.Settings.InterruptionQueue != "" {
		consumer, err := interruptionqueue.New(interruptionqueue.Config{
			QueueName:    d.Settings.InterruptionQueue,
			SQS:          d.Clients.SQS,
			NodeClaimFor: nodeClaimFor,
			Handle:       handle,
			Clock:        d.Clock,
			Account:      d.Account,
			Region:       d.Region,
		})
		if err != nil {
			return nil, err
		}
		out = append(out, watch.Controller{
			Name:       interruptionPoller,
			Reconciler: &poller{consumer: consumer},
			Start:      []reconcile.Request{watch.Named(interruptionPoller)},
		})
	}
	return out, nil
}

// leakedInstances is the leaked-instance collector that controllers.Register
// runs as a ticker loop, as a periodic singleton reconciler.
type leakedInstances struct {
	deps     *Deps
	profiles controllers.ProfileCollector
}

func (l *leakedInstances) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	d := l.deps
	controllers.CollectLeakedInstances(ctx, d.API, controllers.Deps{
		Clients: d.Clients, Settings: d.Settings, State: d.State, Clock: d.Clock, Cloud: d.Cloud,
		Region: d.Region, Profiles: &l.profiles,
	})
	return reconcile.Result{RequeueAfter: controllers.DefaultGCInterval}, nil
}

// pollInterval is how often the simulated poller looks at the interruption
// queue besides being woken when the scenario sends a message. A real poller
// long-polls and sees a message at once; scenario events wake this one at
// once too, and messages the in-memory AWS sends by itself (state changes)
// are seen within this interval.
const pollInterval = 10 * time.Second

// poller is the interruption-queue poll loop of controllers.Register, as a
// reconciler: it receives until the queue is empty.
type poller struct{ consumer *interruptionqueue.Consumer }

func (p *poller) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	for range 100 {
		n, err := p.consumer.Poll(ctx)
		if err != nil {
			return reconcile.Result{RequeueAfter: controllers.DefaultQueueRetry}, err
		}
		if n == 0 {
			break
		}
	}
	return reconcile.Result{RequeueAfter: pollInterval}, nil
}

// statusPoller is the instance status poller that controllers.Register runs
// as a ticker loop, as a periodic singleton reconciler.
type statusPoller struct {
	poller *interruptionqueue.StatusPoller
}

func (p *statusPoller) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	if _, err := p.poller.Poll(ctx); err != nil {
		if errors.Is(err, interruptionqueue.ErrStatusDenied) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{RequeueAfter: interruptionqueue.DefaultStatusInterval}, err
	}
	return reconcile.Result{RequeueAfter: interruptionqueue.DefaultStatusInterval}, nil
}

// zonalShiftPoller is the zonal shift poll loop of controllers.Register
// (--enable-zonal-shift), as a periodic singleton reconciler.
type zonalShiftPoller struct {
	watcher *controllers.ZonalShiftWatcher
}

func (p *zonalShiftPoller) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	return reconcile.Result{RequeueAfter: zonalshift.DefaultInterval}, p.watcher.Poll(ctx)
}

// nodeClaimNodeNameIndex indexes NodeClaims by status.nodeName, for the
// pod-events mapping.
const nodeClaimNodeNameIndex = "status.nodeName"

// addIndexes adds the field indexes the production controllers' caches have
// under a manager (the NodeClaim lifecycle controller's provider-ID indexes),
// and one by node name for mapping pod events, so that neither a reconcile
// nor a watch mapping lists every Node or NodeClaim.
func addIndexes(api *apiserver.Server) {
	api.AddIndex(nodeGVK, lifecycle.NodeProviderIDIndex, lifecycle.NodeProviderID)
	api.AddIndex(nodeClaimGVK, lifecycle.NodeClaimProviderIDIndex, lifecycle.NodeClaimProviderID)
	api.AddIndex(nodeClaimGVK, nodeClaimNodeNameIndex, func(o client.Object) []string {
		if n := o.(*karpv1.NodeClaim).Status.NodeName; n != "" {
			return []string{n}
		}
		return nil
	})
}

// nodeClaimsWithProviderID maps a Node to the NodeClaims with its provider
// ID (lifecycle's nodeClaimsForNode).
func nodeClaimsWithProviderID(api *apiserver.Server) func(client.Object) []reconcile.Request {
	return func(o client.Object) []reconcile.Request {
		id := o.(*corev1.Node).Spec.ProviderID
		if id == "" {
			return nil
		}
		var out []reconcile.Request
		for _, c := range api.Select(nodeClaimGVK, lifecycle.NodeClaimProviderIDIndex, id) {
			out = append(out, watch.Key(c))
		}
		return out
	}
}

// nodePoolOfLabel maps an object to the NodePool its karpenter.sh/nodepool
// label names.
func nodePoolOfLabel(o client.Object) []reconcile.Request {
	if name := o.GetLabels()[wellknown.LabelNodePool]; name != "" {
		return []reconcile.Request{watch.Named(name)}
	}
	return nil
}

// nodePoolsOfNodeClass maps an EC2NodeClass to the NodePools that reference
// it.
func nodePoolsOfNodeClass(api *apiserver.Server) func(client.Object) []reconcile.Request {
	return func(o client.Object) []reconcile.Request {
		var out []reconcile.Request
		for _, p := range api.Objects(nodePoolGVK) {
			ref := p.(*karpv1.NodePool).Spec.Template.Spec.NodeClassRef
			if ref != nil && wellknown.ManagedNodeClass(ref) && ref.Name == o.GetName() {
				out = append(out, watch.Key(p))
			}
		}
		return out
	}
}

// nodeClassOfNodeClaim maps a NodeClaim to the EC2NodeClass it references.
func nodeClassOfNodeClaim(o client.Object) []reconcile.Request {
	ref := o.(*karpv1.NodeClaim).Spec.NodeClassRef
	if ref == nil || !wellknown.ManagedNodeClass(ref) {
		return nil
	}
	return []reconcile.Request{watch.Named(ref.Name)}
}

// nodeClaimsOfNodePool maps a NodePool to its NodeClaims (by label), as the
// NodeClaim disruption controller's nodeClaimsForNodePool does.
func nodeClaimsOfNodePool(api *apiserver.Server, o client.Object) []reconcile.Request {
	var out []reconcile.Request
	for _, c := range api.Objects(nodeClaimGVK) {
		if c.GetLabels()[wellknown.LabelNodePool] == o.GetName() {
			out = append(out, watch.Key(c))
		}
	}
	return out
}

// podEvents maps the pod changes that count as pod events of a node (bound,
// turned terminal, started terminating, or deleted without either) to the
// NodeClaims of the node, as the NodeClaim pod-events controller's handler
// does. Creations do not count.
func podEvents(api *apiserver.Server) func(apiserver.Change) []reconcile.Request {
	on := func(node string) []reconcile.Request {
		var out []reconcile.Request
		for _, c := range api.Select(nodeClaimGVK, nodeClaimNodeNameIndex, node) {
			out = append(out, watch.Key(c))
		}
		return out
	}
	// The controller's own predicates decide which changes count.
	return func(c apiserver.Change) []reconcile.Request {
		cur := c.Object.(*corev1.Pod)
		switch c.Type {
		case apiserver.Modified:
			if nodeclaimdisruption.PodEvent(c.Old.(*corev1.Pod), cur) {
				return on(cur.Spec.NodeName)
			}
		case apiserver.Deleted:
			if nodeclaimdisruption.PodGoneEvent(cur) {
				return on(cur.Spec.NodeName)
			}
		}
		return nil
	}
}

// sameConditions is the node health controller's predicate: updates that
// change no condition's type, status or transition time do not wake it.
func sameConditions(a, b []corev1.NodeCondition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Type != b[i].Type || a[i].Status != b[i].Status || !a[i].LastTransitionTime.Equal(&b[i].LastTransitionTime) {
			return false
		}
	}
	return true
}
