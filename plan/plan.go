// Package plan answers "what would stevedore launch for these manifests?":
// it turns NodePools, EC2NodeClasses, workloads and existing nodes into the
// packer's input, runs the packer, and reports the NodeClaims it proposes,
// their price, a lower bound on any plan's price, and the pods that cannot
// be placed, with the reason per NodePool.
//
// It assumes what the packer's input cannot know offline: instance types and
// on-demand prices from the embedded catalog, spot at a fixed fraction of
// on-demand, every type offered in every zone given, and no nodes other than
// the Node objects given. `stevedore plan` prints its Report; `stevedore
// explain` reuses Prepare and the Report's per-pod reasons.
package plan

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/offerings"
	"github.com/stevedore-autoscaler/stevedore/scheduling/lowerbound"
	"github.com/stevedore-autoscaler/stevedore/scheduling/overlay"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/scheduling/resources"
	"github.com/stevedore-autoscaler/stevedore/scheduling/workloads"
)

// Options shape a plan.
type Options struct {
	// PreferencePolicy for preferred scheduling terms; default Respect, as
	// the controller.
	PreferencePolicy packer.PreferencePolicy
	// MinValuesPolicy, as the controller's --min-values-policy; default
	// Strict.
	MinValuesPolicy packer.MinValuesPolicy
	// Offerings says where and at what prices the catalog's types are
	// offered.
	Offerings offerings.Options
}

// ParsePreferencePolicy returns the policy named s (Score, Respect or
// Ignore).
func ParsePreferencePolicy(s string) (packer.PreferencePolicy, error) {
	switch p := packer.PreferencePolicy(s); p {
	case packer.PreferenceScore, packer.PreferenceRespect, packer.PreferenceIgnore:
		return p, nil
	}
	return "", fmt.Errorf("preference policy %q: use Score, Respect or Ignore", s)
}

// ParseMinValuesPolicy returns the minValues policy named s (Strict or
// BestEffort).
func ParseMinValuesPolicy(s string) (packer.MinValuesPolicy, error) {
	switch p := packer.MinValuesPolicy(s); p {
	case packer.MinValuesStrict, packer.MinValuesBestEffort:
		return p, nil
	}
	return "", fmt.Errorf("minValues policy %q: use Strict or BestEffort", s)
}

// Prepared is the packer's input for a set of objects, with what the report
// needs besides.
type Prepared struct {
	Input packer.Input
	// Options with defaults applied.
	Options Options
	// Warnings about the objects that do not stop the plan, sorted.
	Warnings []string
	// Skipped lists the objects the plan did not use.
	Skipped []string
	// Bound are the pods already on the given nodes.
	Bound int
}

// Prepare builds the packer's input from objs: the catalog's instance types
// offered in the zones of opts, one packer.NodePool per NodePool with the
// types compatible with it, the pods the workloads would create (pods with
// spec.nodeName on a given node are put on that node instead; pods that have
// finished are left out; a ReplicaSet, StatefulSet or Job whose pods are
// given, matched by its UID as a snapshot of a cluster records them, only
// adds the pods it is missing), one template pod per DaemonSet, the given
// nodes and the namespaces' labels. Pods get the defaults of the
// LimitRanges among objs, as the API server would give them (see
// workloads.Expand).
func Prepare(objs *Objects, opts Options) (*Prepared, error) {
	if opts.PreferencePolicy == "" {
		// The controller's default, so that a plan predicts what it does.
		opts.PreferencePolicy = packer.DefaultPreferencePolicy
	}
	if _, err := ParsePreferencePolicy(string(opts.PreferencePolicy)); err != nil {
		return nil, err
	}
	if opts.MinValuesPolicy == "" {
		opts.MinValuesPolicy = packer.MinValuesStrict
	}
	if _, err := ParseMinValuesPolicy(string(opts.MinValuesPolicy)); err != nil {
		return nil, err
	}
	if opts.Offerings.Region == "" {
		opts.Offerings.Region = offerings.DefaultRegion
	}
	if len(opts.Offerings.Zones) == 0 {
		opts.Offerings.Zones = offerings.DefaultZones()
	}
	if opts.Offerings.SpotPriceFraction == 0 {
		opts.Offerings.SpotPriceFraction = offerings.DefaultSpotPriceFraction
	}
	instanceTypes, err := offerings.Catalog(opts.Offerings)
	if err != nil {
		return nil, err
	}
	p := &Prepared{Options: opts, Skipped: slices.Clone(objs.Skipped)}
	p.Input.PreferencePolicy = opts.PreferencePolicy
	p.Input.MinValuesPolicy = opts.MinValuesPolicy

	classes := map[string]*awsv1.EC2NodeClass{}
	for _, nc := range objs.NodeClasses {
		if classes[nc.Name] != nil {
			return nil, fmt.Errorf("EC2NodeClass %s is given twice; plan one set of manifests at a time", nc.Name)
		}
		classes[nc.Name] = nc
	}
	// The overlays among the manifests are evaluated over every NodePool's
	// types at once, as the controller evaluates them.
	var overlays *overlay.Result
	if len(objs.NodeOverlays) > 0 {
		var pools []overlay.Pool
		for _, np := range objs.NodePools {
			labels := make(map[string]string, len(np.Spec.Template.Metadata.Labels))
			for k, v := range np.Spec.Template.Metadata.Labels {
				labels[k] = string(v)
			}
			pools = append(pools, overlay.Pool{Name: np.Name, Labels: labels, InstanceTypes: instanceTypes})
		}
		overlays = overlay.Evaluate(objs.NodeOverlays, pools)
		for _, v := range overlays.Verdicts {
			if !v.Valid {
				p.Warnings = append(p.Warnings, fmt.Sprintf("NodeOverlay %s does not apply (%s): %s", v.Name, v.Reason, v.Message))
			}
		}
	}
	seenPools := map[string]bool{}
	for _, np := range objs.NodePools {
		if seenPools[np.Name] {
			return nil, fmt.Errorf("NodePool %s is given twice; plan one set of manifests at a time", np.Name)
		}
		seenPools[np.Name] = true
		var nc *awsv1.EC2NodeClass
		if ref := np.Spec.Template.Spec.NodeClassRef; ref != nil {
			if nc = classes[ref.Name]; nc == nil {
				p.Warnings = append(p.Warnings, fmt.Sprintf("NodePool %s: EC2NodeClass %s is not among the manifests; planned as if it existed and were ready", np.Name, ref.Name))
			}
		}
		pool, err := offerings.NodePool(np, nc, overlays.Apply(np.Name, instanceTypes))
		if err != nil {
			return nil, err
		}
		if len(pool.InstanceTypes) == 0 {
			p.Warnings = append(p.Warnings, fmt.Sprintf("NodePool %s: no instance type in the catalog meets its requirements in zones %v", np.Name, opts.Offerings.Zones))
		}
		p.Input.NodePools = append(p.Input.NodePools, pool)
	}
	if len(p.Input.NodePools) == 0 {
		p.Warnings = append(p.Warnings, "no NodePool among the manifests: only existing nodes can take pods")
	}

	expand := workloads.Expand
	if objs.Owned {
		expand = workloads.ExpandInPlace
	}
	expanded, _ := expand(lessGivenPods(objs.Workloads))
	p.Input.DaemonSetPods = expanded.DaemonSetPods

	nodeIndex := map[string]int{}
	for _, n := range objs.Nodes {
		if _, dup := nodeIndex[n.Name]; dup {
			return nil, fmt.Errorf("Node %s is given twice; keep one", n.Name)
		}
		nodeIndex[n.Name] = len(p.Input.Nodes)
		p.Input.Nodes = append(p.Input.Nodes, packerNode(n))
	}
	for _, pod := range expanded.Pods {
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		if pod.Spec.NodeName != "" {
			i, ok := nodeIndex[pod.Spec.NodeName]
			if !ok {
				p.Warnings = append(p.Warnings, fmt.Sprintf("Pod %s/%s runs on node %s, which is not among the manifests; left out", pod.Namespace, pod.Name, pod.Spec.NodeName))
				continue
			}
			p.Input.Nodes[i].Pods = append(p.Input.Nodes[i].Pods, pod)
			p.Bound++
			continue
		}
		p.Input.Pods = append(p.Input.Pods, pod)
		if usesVolumes(pod) {
			// Offline, no volume's zone is known: assume it allows any.
			if p.Input.VolumeZones == nil {
				p.Input.VolumeZones = map[types.NamespacedName][]string{}
			}
			p.Input.VolumeZones[types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}] = nil
		}
	}
	if n := len(p.Input.VolumeZones); n > 0 {
		p.Warnings = append(p.Warnings, fmt.Sprintf("%d pods use persistent volumes, whose zones are not known offline; planned as if their volumes allowed every zone", n))
	}
	addInUse(p.Input.NodePools, objs.Nodes)
	p.Input.NamespaceLabels = namespaceLabels(objs, expanded)
	slices.Sort(p.Warnings)
	return p, nil
}

// usesVolumes reports whether pod mounts a persistent volume claim or a
// generic ephemeral volume, whose zone may constrain where it runs.
func usesVolumes(pod *corev1.Pod) bool {
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			return true
		}
	}
	return false
}

// packerNode returns an existing node as the packer sees it.
func packerNode(n *corev1.Node) packer.Node {
	return packer.Node{
		Name:          n.Name,
		NodePool:      n.Labels[wellknown.LabelNodePool],
		Labels:        maps.Clone(n.Labels),
		Taints:        slices.Clone(n.Spec.Taints),
		Allocatable:   resources.NewVector(n.Status.Allocatable),
		Unschedulable: n.Spec.Unschedulable,
	}
}

// addInUse counts the capacity of each pool's existing nodes, and the nodes
// themselves, against its limits.
func addInUse(pools []packer.NodePool, nodes []*corev1.Node) {
	for i := range pools {
		var lists []corev1.ResourceList
		count := int64(0)
		for _, n := range nodes {
			if n.Labels[wellknown.LabelNodePool] != pools[i].Name {
				continue
			}
			capacity := n.Status.Capacity
			if len(capacity) == 0 {
				capacity = n.Status.Allocatable
			}
			lists = append(lists, capacity)
			count++
		}
		if count == 0 {
			continue
		}
		inUse := resources.Add(lists...)
		inUse[corev1.ResourceName("nodes")] = *resource.NewQuantity(count, resource.DecimalSI)
		pools[i].InUse = inUse
	}
}

// namespaceLabels returns the labels of every namespace given or used, each
// with kubernetes.io/metadata.name as the API server sets it.
func namespaceLabels(objs *Objects, expanded workloads.Pods) map[string]map[string]string {
	out := map[string]map[string]string{}
	add := func(name string, l map[string]string) {
		m := out[name]
		if m == nil {
			m = map[string]string{}
			out[name] = m
		}
		maps.Copy(m, l)
		m[corev1.LabelMetadataName] = name
	}
	for _, ns := range objs.Namespaces {
		add(ns.Name, ns.Labels)
	}
	for _, pods := range [][]*corev1.Pod{expanded.Pods, expanded.DaemonSetPods} {
		for _, pod := range pods {
			add(pod.Namespace, nil)
		}
	}
	return out
}

// Run prepares the packer's input for objs, runs the packer and reports.
func Run(objs *Objects, opts Options) (*Report, error) {
	p, err := Prepare(objs, opts)
	if err != nil {
		return nil, err
	}
	return NewReport(p, packer.Solve(p.Input)), nil
}

// selfAntiAffinityGroups returns, for the pods, the groups that must each
// spread over distinct nodes: pods in one namespace that carry the same
// required pod anti-affinity term on kubernetes.io/hostname, whose selector
// matches their own labels. Groups are keyed by namespace and selector and
// sorted by key; each has its pods' smallest cpu and memory request.
func selfAntiAffinityGroups(pods []*corev1.Pod, reqs []resources.Vector) []separated {
	byKey := map[string]*separated{}
	for i, pod := range pods {
		if pod.Spec.Affinity == nil || pod.Spec.Affinity.PodAntiAffinity == nil {
			continue
		}
		for _, term := range pod.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			if term.TopologyKey != corev1.LabelHostname || term.NamespaceSelector != nil ||
				len(term.Namespaces) > 0 && !slices.Contains(term.Namespaces, pod.Namespace) {
				continue
			}
			sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
			if err != nil || term.LabelSelector == nil || !sel.Matches(labels.Set(pod.Labels)) {
				continue
			}
			key := pod.Namespace + " " + sel.String()
			v := &reqs[i]
			g := byKey[key]
			if g == nil {
				g = &separated{key: key, name: groupName(pod, sel.String()), cpu: v.CPU, memory: v.Memory}
				byKey[key] = g
			}
			g.count++
			g.cpu, g.memory = min(g.cpu, v.CPU), min(g.memory, v.Memory)
			break
		}
	}
	out := make([]separated, 0, len(byKey))
	for _, key := range slices.Sorted(maps.Keys(byKey)) {
		out = append(out, *byKey[key])
	}
	return out
}

type separated struct {
	key, name   string
	count       int
	cpu, memory int64
}

// groupName names a group after its pods' controller, or its selector.
func groupName(pod *corev1.Pod, selector string) string {
	for _, o := range pod.OwnerReferences {
		if o.Controller != nil && *o.Controller {
			return fmt.Sprintf("%s/%s %s", o.Kind, pod.Namespace, o.Name)
		}
	}
	return fmt.Sprintf("pods in %s matching %s", pod.Namespace, selector)
}

// Bound returns the lower bound on the price of the pods that res puts on
// new NodeClaims, over every instance type any of in's NodePools may launch,
// each at its cheapest offering in any pool: the resource bound, raised by
// the node that must fit the largest of those pods and by the groups of
// them that must run on separate nodes, or the per-pod bound where that is
// higher (see package lowerbound). The ratio
// of res's price to it is what `stevedore plan` reports and what the
// packer's benchmarks may report as "cost/lb".
func Bound(in packer.Input, res packer.Result) lowerbound.Bound {
	cheapest := map[string]lowerbound.Option{}
	for _, pool := range in.NodePools {
		for _, it := range pool.InstanceTypes {
			price, ok := offerings.CheapestOffering(it)
			if !ok {
				continue
			}
			if o, seen := cheapest[it.Name]; !seen || price < o.PricePerHour {
				cheapest[it.Name] = lowerbound.Option{Name: it.Name, CPU: it.Allocatable.CPU, Memory: it.Allocatable.Memory, Pods: it.Allocatable.Pods, PricePerHour: price}
			}
		}
	}
	options := make([]lowerbound.Option, 0, len(cheapest))
	for _, name := range slices.Sorted(maps.Keys(cheapest)) {
		options = append(options, cheapest[name])
	}
	onClaims := map[types.NamespacedName]bool{}
	for _, nc := range res.NodeClaims {
		for _, pod := range nc.Pods {
			onClaims[pod] = true
		}
	}
	// The pods' requests, summed once each: 100,000 pods' requests took
	// longer to sum than the bound to compute.
	var pods []*corev1.Pod
	var reqs []resources.Vector
	var cpu, memory int64
	for _, pod := range in.Pods {
		if onClaims[types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}] {
			v := resources.PodVector(pod)
			pods, reqs = append(pods, pod), append(reqs, v)
			cpu = resources.AddSaturating(cpu, v.CPU)
			memory = resources.AddSaturating(memory, v.Memory)
		}
	}
	var groups []lowerbound.Group
	// Some node holds the pod with the largest cpu request: at least one
	// node of a type that fits it.
	if i := largestPod(reqs); i >= 0 {
		v := &reqs[i]
		fits := make([]bool, len(options))
		for i, o := range options {
			fits[i] = o.CPU >= v.CPU && o.Memory >= v.Memory
		}
		groups = append(groups, lowerbound.Group{Count: 1, Fits: fits})
	}
	for _, g := range selfAntiAffinityGroups(pods, reqs) {
		fits := make([]bool, len(options))
		for i, o := range options {
			fits[i] = o.CPU >= g.cpu && o.Memory >= g.memory
		}
		groups = append(groups, lowerbound.Group{Name: g.name, Count: g.count, Fits: fits})
	}
	// Whether a type fits a pod is judged on its whole allocatable above;
	// the resource LP counts only what these pods can use of it.
	var demand lowerbound.Demand
	for i := range reqs {
		demand.Add(reqs[i].CPU, reqs[i].Memory)
	}
	for i, o := range options {
		options[i] = demand.Usable(o)
	}
	// The per-pod bound keeps each pod's cpu and memory on one node. Every
	// type is counted for every pod that fits it, whatever its NodePool's
	// requirements: more types can only lower the bound.
	return lowerbound.Compute(options, cpu, memory, groups).WithPerPod(lowerbound.PerPod(options, podShapes(reqs)))
}

// podShapes groups pods' requests by cpu and memory, in order of requests.
func podShapes(reqs []resources.Vector) []lowerbound.Shape {
	counts := map[[2]int64]int{}
	for i := range reqs {
		counts[[2]int64{reqs[i].CPU, reqs[i].Memory}]++
	}
	shapes := make([]lowerbound.Shape, 0, len(counts))
	for _, k := range slices.SortedFunc(maps.Keys(counts), func(a, b [2]int64) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) }) {
		shapes = append(shapes, lowerbound.Shape{CPU: k[0], Memory: k[1], Count: counts[k]})
	}
	return shapes
}

// largestPod returns the index of the largest request by cpu, then memory,
// or -1 when there are none.
func largestPod(reqs []resources.Vector) int {
	best := -1
	for i := range reqs {
		v, b := &reqs[i], &reqs[max(best, 0)]
		if best < 0 || v.CPU > b.CPU || v.CPU == b.CPU && v.Memory > b.Memory {
			best = i
		}
	}
	return best
}
