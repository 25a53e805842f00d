package schedulerdiff

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/latest"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultbinder"
	plfeature "k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/interpodaffinity"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodeaffinity"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodeports"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodeunschedulable"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/podtopologyspread"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/queuesort"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/tainttoleration"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
)

// FilterPlugins are the kube-scheduler filters the oracle runs, in the order
// of the default profile.
var FilterPlugins = []string{
	nodeunschedulable.Name,
	tainttoleration.Name,
	nodeaffinity.Name,
	nodeports.Name,
	noderesources.Name,
	podtopologyspread.Name,
	interpodaffinity.Name,
}

// Verdict is kube-scheduler's answer for one node.
type Verdict struct {
	Node string
	// Fits is true when every filter passes, as the scheduling cycle decides
	// it: PreFilter first (a rejection there or a PreFilterResult that leaves
	// the node out rejects it), then the Filter plugins in profile order.
	Fits bool
	// Plugin is the plugin that rejected the node first.
	Plugin string
	// Reasons lists every rejection, "Plugin: reason", from running each
	// filter of the profile on the node on its own; a PreFilter rejection
	// is listed alone.
	Reasons []string
}

func (v Verdict) String() string {
	if v.Fits {
		return "fits"
	}
	return fmt.Sprintf("rejected by %s %q", v.Plugin, v.Reasons)
}

// Oracle runs kube-scheduler's own filter plugins, built through the
// scheduler framework with the default profile's plugin arguments and the
// feature gates at their defaults. It is not safe for concurrent use: every
// Filter call swaps the snapshot and the namespaces the plugins read.
type Oracle struct {
	fw        framework.Framework
	lister    *snapshotLister
	nsIndexer cache.Indexer
	plugins   map[string]fwk.Plugin
	cancel    context.CancelFunc
}

// snapshotLister lets one framework serve many clusters: the plugins keep
// the lister they were given, and the oracle swaps the snapshot behind it.
type snapshotLister struct {
	*schedcache.Snapshot
}

// NewOracle builds the framework. Close releases its goroutines.
func NewOracle() (*Oracle, error) {
	// The framework records plugin metrics; they must exist first.
	metrics.Register()
	ctx, cancel := context.WithCancel(context.Background())
	ctx = klog.NewContext(ctx, klog.Background().V(1))
	o := &Oracle{
		lister:  &snapshotLister{Snapshot: schedcache.NewEmptySnapshot()},
		plugins: map[string]fwk.Plugin{},
		cancel:  cancel,
	}
	fts := plfeature.NewSchedulerFeaturesFromGates(utilfeature.DefaultFeatureGate)
	registry := frameworkruntime.Registry{
		queuesort.Name:         queuesort.New,
		defaultbinder.Name:     defaultbinder.New,
		nodeunschedulable.Name: frameworkruntime.FactoryAdapter(fts, nodeunschedulable.New),
		tainttoleration.Name:   frameworkruntime.FactoryAdapter(fts, tainttoleration.New),
		nodeaffinity.Name:      frameworkruntime.FactoryAdapter(fts, nodeaffinity.New),
		nodeports.Name:         frameworkruntime.FactoryAdapter(fts, nodeports.New),
		noderesources.Name:     frameworkruntime.FactoryAdapter(fts, noderesources.NewFit),
		podtopologyspread.Name: frameworkruntime.FactoryAdapter(fts, podtopologyspread.New),
		interpodaffinity.Name:  frameworkruntime.FactoryAdapter(fts, interpodaffinity.New),
	}
	// Keep each plugin instance, to run the filters one by one for reasons.
	for name, factory := range registry {
		registry[name] = func(ctx context.Context, args runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
			p, err := factory(ctx, args, h)
			if err == nil {
				o.plugins[name] = p
			}
			return p, err
		}
	}

	defaults, err := latest.Default()
	if err != nil {
		cancel()
		return nil, err
	}
	profile := defaults.Profiles[0].DeepCopy()
	enabled := []config.Plugin{{Name: queuesort.Name}}
	for _, p := range profile.Plugins.MultiPoint.Enabled {
		if slices.Contains(FilterPlugins, p.Name) {
			enabled = append(enabled, p)
		}
	}
	if len(enabled) != len(FilterPlugins)+1 {
		cancel()
		return nil, fmt.Errorf("default profile lacks some of %v: has %v", FilterPlugins, enabled)
	}
	enabled = append(enabled, config.Plugin{Name: defaultbinder.Name})
	profile.Plugins = &config.Plugins{MultiPoint: config.PluginSet{Enabled: enabled}}

	factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	// The informers are never started: the namespace lister reads an indexer
	// that Filter fills for each cluster.
	o.nsIndexer = factory.Core().V1().Namespaces().Informer().GetIndexer()
	o.fw, err = frameworkruntime.NewFramework(ctx, registry, profile,
		frameworkruntime.WithSnapshotSharedLister(o.lister),
		frameworkruntime.WithInformerFactory(factory),
		frameworkruntime.WithClientSet(fake.NewClientset()),
		frameworkruntime.WithParallelism(1))
	if err != nil {
		cancel()
		return nil, err
	}
	for _, name := range FilterPlugins {
		if _, ok := o.plugins[name].(fwk.FilterPlugin); !ok {
			cancel()
			return nil, fmt.Errorf("plugin %s was not built as a filter", name)
		}
	}
	return o, nil
}

// Close stops the framework's background goroutines.
func (o *Oracle) Close() {
	o.cancel()
	frameworkruntime.WaitForShutdown(o.fw)
}

// Filter runs PreFilter and Filter for c.Pod against every node of c and
// returns one verdict per node, in the order of c.Nodes.
func (o *Oracle) Filter(c *Cluster) ([]Verdict, error) {
	ctx := context.Background()
	o.lister.Snapshot = schedcache.NewSnapshot(c.Pods, c.Nodes)
	var nss []any
	for _, name := range c.namespaceNames() {
		nss = append(nss, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: c.Namespaces[name]}})
	}
	if err := o.nsIndexer.Replace(nss, ""); err != nil {
		return nil, err
	}

	pod := c.Pod.DeepCopy()
	state := framework.NewCycleState()
	preRes, s, narrowing := o.fw.RunPreFilterPlugins(ctx, state, pod)
	out := make([]Verdict, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i].Node = n.Name
	}
	if !s.IsSuccess() {
		if !s.IsRejected() {
			return nil, fmt.Errorf("PreFilter: %w", s.AsError())
		}
		for i := range out {
			out[i].Plugin = s.Plugin()
			out[i].Reasons = prefixed(s.Plugin(), s.Reasons())
		}
		return out, nil
	}
	for i, n := range c.Nodes {
		if !preRes.AllNodes() && !preRes.NodeNames.Has(n.Name) {
			names := sets.List(narrowing)
			out[i].Plugin = strings.Join(names, ",")
			out[i].Reasons = []string{fmt.Sprintf("%s: node(s) didn't satisfy plugin(s) %v (PreFilterResult)", out[i].Plugin, names)}
			continue
		}
		info, err := o.lister.NodeInfos().Get(n.Name)
		if err != nil {
			return nil, err
		}
		st := o.fw.RunFilterPlugins(ctx, state, pod, info)
		if st.IsSuccess() {
			out[i].Fits = true
			continue
		}
		if !st.IsRejected() {
			return nil, fmt.Errorf("filter on %s: %w", n.Name, st.AsError())
		}
		out[i].Plugin = st.Plugin()
		skip := state.GetSkipFilterPlugins()
		for _, name := range FilterPlugins {
			if skip.Has(name) {
				continue
			}
			one := o.plugins[name].(fwk.FilterPlugin).Filter(ctx, state, pod, info)
			if !one.IsSuccess() {
				out[i].Reasons = append(out[i].Reasons, prefixed(name, one.Reasons())...)
			}
		}
	}
	return out, nil
}

func prefixed(plugin string, reasons []string) []string {
	out := make([]string, len(reasons))
	for i, r := range reasons {
		out[i] = plugin + ": " + r
	}
	return out
}
