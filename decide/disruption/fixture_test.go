package disruption

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/offerings"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/state"
)

// t0 is the fixed time every fixture is judged at.
var t0 = time.Date(2026, 3, 3, 10, 0, 0, 0, time.UTC)

var catalogTypes []*packer.InstanceType

func catalogByName(t testing.TB) map[string]*packer.InstanceType {
	t.Helper()
	if catalogTypes == nil {
		its, err := offerings.Catalog(offerings.Options{Zones: []string{"us-east-1a", "us-east-1b"}})
		if err != nil {
			t.Fatal(err)
		}
		catalogTypes = its
	}
	m := map[string]*packer.InstanceType{}
	for _, it := range catalogTypes {
		m[it.Name] = it
	}
	return m
}

// fixture builds a cluster state and the matching disruption input.
type fixture struct {
	t       testing.TB
	c       *state.Cluster
	pools   map[string]*karpv1.NodePool
	order   []string
	types   map[string]*packer.InstanceType
	nodes   int
	opts    Options
	budgets map[string]map[Reason]int
}

func newFixture(t testing.TB) *fixture {
	return &fixture{t: t, c: state.NewCluster(), pools: map[string]*karpv1.NodePool{}, types: catalogByName(t)}
}

type poolOpt func(*karpv1.NodePool)

// pool adds a NodePool whose instance types are limited to typeNames and
// whose capacity types are cts (both when empty).
func (f *fixture) pool(name string, typeNames []string, cts []string, opts ...poolOpt) *karpv1.NodePool {
	if len(cts) == 0 {
		cts = []string{wellknown.CapacityTypeOnDemand, wellknown.CapacityTypeSpot}
	}
	np := &karpv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: ktypes.UID("uid-" + name)},
		Spec: karpv1.NodePoolSpec{
			Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
				NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
				Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
					{Key: wellknown.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: typeNames},
					{Key: wellknown.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: cts},
				},
			}},
			Disruption: karpv1.Disruption{
				ConsolidationPolicy: karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized,
				ConsolidateAfter:    karpv1.NewNillableDuration(0),
			},
		},
	}
	for _, o := range opts {
		o(np)
	}
	f.pools[name] = np
	f.order = append(f.order, name)
	f.c.UpdateNodePool(np)
	return np
}

func whenEmpty(np *karpv1.NodePool) {
	np.Spec.Disruption.ConsolidationPolicy = karpv1.ConsolidationPolicyWhenEmpty
}

func consolidateNever(np *karpv1.NodePool) {
	np.Spec.Disruption.ConsolidateAfter = karpv1.NeverDuration()
}

type nodeSpec struct {
	pool, itype, zone, ct string
	notInitialized        bool
	notConsolidatable     bool
	drifted               time.Duration // drifted this long ago; 0 = not drifted
	doNotDisrupt          bool
	tgp                   *karpv1.Duration
	unmanaged             bool
	expireAfter           time.Duration // the NodeClaim's spec.expireAfter; 0 = never
}

// node adds a registered node and its NodeClaim; it returns the name.
func (f *fixture) node(s nodeSpec) string {
	f.t.Helper()
	f.nodes++
	name := fmt.Sprintf("node-%03d", f.nodes)
	it := f.types[s.itype]
	if it == nil {
		f.t.Fatalf("no instance type %s", s.itype)
	}
	if s.zone == "" {
		s.zone = "us-east-1a"
	}
	if s.ct == "" {
		s.ct = wellknown.CapacityTypeOnDemand
	}
	pid := fmt.Sprintf("aws:///%s/i-%08d", s.zone, f.nodes)
	labels := it.Requirements.Labels()
	labels[wellknown.LabelTopologyZone] = s.zone
	labels[wellknown.LabelCapacityType] = s.ct
	labels[wellknown.LabelHostname] = name
	if !s.unmanaged {
		labels[wellknown.LabelNodePool] = s.pool
		if !s.notInitialized {
			labels[wellknown.LabelInitialized] = wellknown.LabelValueTrue
		}
	}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: map[string]string{}},
		Spec:       corev1.NodeSpec{ProviderID: pid},
		Status: corev1.NodeStatus{
			Allocatable: it.Allocatable.ResourceList(),
			Capacity:    it.Capacity.ResourceList(),
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
	if s.doNotDisrupt {
		n.Annotations[wellknown.AnnotationDoNotDisrupt] = "true"
	}
	f.c.UpdateNode(n)
	if s.unmanaged {
		return name
	}
	nc := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{wellknown.LabelNodePool: s.pool},
			CreationTimestamp: metav1.NewTime(t0.Add(-24 * time.Hour))},
		Spec:   karpv1.NodeClaimSpec{TerminationGracePeriod: s.tgp},
		Status: karpv1.NodeClaimStatus{NodeName: name, ProviderID: pid},
	}
	if s.expireAfter > 0 {
		nc.Spec.ExpireAfter = karpv1.NewNillableDuration(s.expireAfter)
	}
	cond := func(typ string, ok bool, reason string, at time.Time) {
		st := metav1.ConditionTrue
		if !ok {
			st = metav1.ConditionFalse
		}
		nc.Status.Conditions = append(nc.Status.Conditions, metav1.Condition{Type: typ, Status: st, Reason: reason, LastTransitionTime: metav1.NewTime(at)})
	}
	cond(karpv1.ConditionTypeLaunched, true, "Launched", t0.Add(-24*time.Hour))
	cond(karpv1.ConditionTypeRegistered, true, "Registered", t0.Add(-24*time.Hour))
	cond(karpv1.ConditionTypeInitialized, !s.notInitialized, "Initialized", t0.Add(-24*time.Hour))
	cond(karpv1.ConditionTypeConsolidatable, !s.notConsolidatable, "Consolidatable", t0.Add(-time.Hour))
	if s.drifted > 0 {
		cond(karpv1.ConditionTypeDrifted, true, "AMIDrift", t0.Add(-s.drifted))
	}
	f.c.UpdateNodeClaim(nc)
	return name
}

type podOpt func(*corev1.Pod)

func annotate(k, v string) podOpt {
	return func(p *corev1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[k] = v
	}
}

func labelled(k, v string) podOpt {
	return func(p *corev1.Pod) { p.Labels[k] = v }
}

func daemon(p *corev1.Pod) {
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", Controller: ptr.To(true)}}
}

func notReady(p *corev1.Pod) {
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
}

// pod adds a running pod on node (pending when node is "").
func (f *fixture) pod(name, node, cpu, mem string, opts ...podOpt) {
	f.add(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}}}},
	}, node, opts...)
}

// add adds p, created an hour before t0, running on node since then
// (pending when node is "").
func (f *fixture) add(p *corev1.Pod, node string, opts ...podOpt) {
	p.CreationTimestamp = metav1.NewTime(t0.Add(-time.Hour))
	p.Spec.NodeName = node
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, StartTime: ptr.To(metav1.NewTime(t0.Add(-time.Hour))),
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	if node == "" {
		p.Status.Phase = corev1.PodPending
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
	}
	for _, o := range opts {
		o(p)
	}
	f.c.UpdatePod(p)
}

// pdb adds a PodDisruptionBudget on app=<app> with the allowance given.
func (f *fixture) pdb(name, app string, allowed int32, policy *policyv1.UnhealthyPodEvictionPolicyType) {
	f.c.UpdatePodDisruptionBudget(&policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable:               ptr.To(intstr.FromInt32(1)),
			Selector:                   &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			UnhealthyPodEvictionPolicy: policy,
		},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed},
	})
}

// budget sets the remaining allowance of a pool for a reason; every pool
// and reason not set allows 100.
func (f *fixture) budget(pool string, r Reason, n int) {
	if f.budgets == nil {
		f.budgets = map[string]map[Reason]int{}
	}
	if f.budgets[pool] == nil {
		f.budgets[pool] = map[Reason]int{}
	}
	f.budgets[pool][r] = n
}

func (f *fixture) input() Input {
	f.t.Helper()
	snap := f.c.Snapshot(t0)
	var pools []packer.NodePool
	remaining := map[string]map[Reason]int{}
	its := make([]*packer.InstanceType, 0, len(f.types))
	for _, it := range catalogTypes {
		its = append(its, it)
	}
	for _, name := range f.order {
		pp, err := offerings.NodePool(f.pools[name], nil, its)
		if err != nil {
			f.t.Fatal(err)
		}
		pools = append(pools, pp)
		remaining[name] = map[Reason]int{ReasonEmpty: 100, ReasonUnderutilized: 100, ReasonDrifted: 100}
		for r, n := range f.budgets[name] {
			remaining[name][r] = n
		}
	}
	return Input{Snapshot: snap, Pools: pools, Remaining: remaining, Options: f.opts}
}

// codes returns the codes of the blocked entries for node, in order.
func codes(d Decision, node string) []string {
	var out []string
	for _, b := range d.Blocked {
		if b.Node == node {
			out = append(out, b.Code)
		}
	}
	return out
}

func candidateNames(c *Command) []string {
	if c == nil {
		return nil
	}
	var out []string
	for _, cand := range c.Candidates {
		out = append(out, cand.Name())
	}
	slices.Sort(out)
	return out
}

type poolT = karpv1.NodePool

func durationP(d time.Duration) *karpv1.NillableDuration { return karpv1.NewNillableDuration(d) }
