package explain

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
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

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// t0 is a Tuesday morning, the time every fixture is explained at.
var t0 = time.Date(2026, 3, 3, 10, 0, 0, 0, time.UTC)

var catalog []*packer.InstanceType

func instanceTypes(t *testing.T) []*packer.InstanceType {
	t.Helper()
	if catalog == nil {
		its, err := offerings.Catalog(offerings.Options{Zones: []string{"us-east-1a", "us-east-1b"}})
		if err != nil {
			t.Fatal(err)
		}
		catalog = its
	}
	return catalog
}

func instanceType(t *testing.T, name string) *packer.InstanceType {
	t.Helper()
	for _, it := range instanceTypes(t) {
		if it.Name == name {
			return it
		}
	}
	t.Fatalf("no instance type %s in the catalog", name)
	return nil
}

// world builds a cluster state and the input to explain it.
type world struct {
	t       *testing.T
	c       *state.Cluster
	pools   []*karpv1.NodePool
	skipped []Skip
	nodes   int
}

func newWorld(t *testing.T) *world {
	return &world{t: t, c: state.NewCluster()}
}

// pool adds a NodePool limited to the m6i family, on-demand, consolidating
// underused nodes at once; opts change it.
func (w *world) pool(name string, opts ...func(*karpv1.NodePool)) *karpv1.NodePool {
	np := &karpv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: ktypes.UID("uid-" + name)},
		Spec: karpv1.NodePoolSpec{
			Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
				NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
				Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
					{Key: wellknown.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"m6i.large", "m6i.xlarge", "m6i.2xlarge"}},
					{Key: wellknown.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{wellknown.CapacityTypeOnDemand}},
				},
				ExpireAfter: karpv1.NewNillableDuration(720 * time.Hour),
			}},
			Disruption: karpv1.Disruption{
				ConsolidationPolicy: karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized,
				ConsolidateAfter:    karpv1.NewNillableDuration(0),
				Budgets:             []karpv1.Budget{{Nodes: "100%"}},
			},
		},
	}
	for _, o := range opts {
		o(np)
	}
	w.pools = append(w.pools, np)
	w.c.UpdateNodePool(np)
	return np
}

// skip leaves a NodePool out of the launchable ones, as the provisioner does
// when its node class is not Ready.
func (w *world) skip(pool, reason, message string) {
	w.skipped = append(w.skipped, Skip{NodePool: pool, Reason: reason, Message: message})
}

type nodeOpts struct {
	itype             string
	zone              string
	notConsolidatable bool
	lastPodEvent      time.Duration // this long before t0; 0: none recorded
	drifted           time.Duration // drifted this long before t0
	disrupting        string        // DisruptionReason condition reason
	doNotDisrupt      bool
	labels            map[string]string
	inFlight          bool
	unmanaged         bool
}

// node adds a registered, initialized node of pool and its NodeClaim,
// created a day before t0, and returns its name.
func (w *world) node(pool string, o nodeOpts) string {
	w.t.Helper()
	w.nodes++
	name := fmt.Sprintf("ip-10-0-0-%d.ec2.internal", w.nodes)
	if o.itype == "" {
		o.itype = "m6i.xlarge"
	}
	if o.zone == "" {
		o.zone = "us-east-1a"
	}
	it := instanceType(w.t, o.itype)
	pid := fmt.Sprintf("aws:///%s/i-%017d", o.zone, w.nodes)
	created := t0.Add(-24 * time.Hour)
	nc := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%05d", pool, w.nodes), CreationTimestamp: metav1.NewTime(created),
			Labels: map[string]string{wellknown.LabelNodePool: pool, wellknown.LabelInstanceType: o.itype,
				wellknown.LabelTopologyZone: o.zone, wellknown.LabelCapacityType: wellknown.CapacityTypeOnDemand}},
		Spec: karpv1.NodeClaimSpec{ExpireAfter: karpv1.NewNillableDuration(720 * time.Hour),
			Resources: karpv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}},
		Status: karpv1.NodeClaimStatus{ProviderID: pid, Capacity: it.Capacity.ResourceList(), Allocatable: it.Allocatable.ResourceList()},
	}
	cond := func(typ string, st metav1.ConditionStatus, reason string, at time.Time) {
		nc.Status.Conditions = append(nc.Status.Conditions, metav1.Condition{Type: typ, Status: st, Reason: reason, LastTransitionTime: metav1.NewTime(at)})
	}
	cond(karpv1.ConditionTypeLaunched, metav1.ConditionTrue, "Launched", created)
	if o.inFlight {
		cond(karpv1.ConditionTypeRegistered, metav1.ConditionUnknown, "NodeNotFound", created)
		w.c.UpdateNodeClaim(nc)
		return nc.Name
	}
	nc.Status.NodeName = name
	cond(karpv1.ConditionTypeRegistered, metav1.ConditionTrue, "Registered", created)
	cond(karpv1.ConditionTypeInitialized, metav1.ConditionTrue, "Initialized", created)
	if o.notConsolidatable {
		cond(karpv1.ConditionTypeConsolidatable, metav1.ConditionFalse, "ConsolidateAfterNotElapsed", t0.Add(-o.lastPodEvent))
	} else {
		cond(karpv1.ConditionTypeConsolidatable, metav1.ConditionTrue, "Consolidatable", created)
	}
	if o.lastPodEvent > 0 {
		nc.Status.LastPodEventTime = metav1.NewTime(t0.Add(-o.lastPodEvent))
	}
	if o.drifted > 0 {
		cond(karpv1.ConditionTypeDrifted, metav1.ConditionTrue, "AMIDrift", t0.Add(-o.drifted))
	}
	if o.disrupting != "" {
		cond(karpv1.ConditionTypeDisruptionReason, metav1.ConditionTrue, o.disrupting, t0.Add(-time.Minute))
	}
	if !o.unmanaged {
		w.c.UpdateNodeClaim(nc)
	}

	labels := it.Requirements.Labels()
	labels[wellknown.LabelTopologyZone] = o.zone
	labels[wellknown.LabelCapacityType] = wellknown.CapacityTypeOnDemand
	labels[wellknown.LabelHostname] = name
	if !o.unmanaged {
		labels[wellknown.LabelNodePool] = pool
		labels[wellknown.LabelInitialized] = wellknown.LabelValueTrue
	}
	for k, v := range o.labels {
		labels[k] = v
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
	if o.doNotDisrupt {
		n.Annotations[wellknown.AnnotationDoNotDisrupt] = "true"
	}
	w.c.UpdateNode(n)
	return name
}

// pod adds a pod requesting cpu and memory, running on node, or pending and
// marked unschedulable by the scheduler when node is "".
func (w *world) pod(name, node, cpu, mem string, opts ...func(*corev1.Pod)) {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{"app": "web"},
			CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour))},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: ptr.To(metav1.NewTime(t0.Add(-time.Hour))),
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	if node == "" {
		p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}}
	}
	for _, o := range opts {
		o(p)
	}
	w.c.UpdatePod(p)
}

func (w *world) pdb(name string, allowed int32) {
	w.c.UpdatePodDisruptionBudget(&policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(1)),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed},
	})
}

// input is the explanation input: every NodePool not skipped is launchable,
// with the catalog's instance types.
func (w *world) input() Input {
	w.t.Helper()
	in := Input{Snapshot: w.c.Snapshot(t0), Skipped: w.skipped}
	skipped := map[string]bool{}
	for _, s := range w.skipped {
		skipped[s.NodePool] = true
	}
	for _, np := range w.Snapshot().NodePools {
		if skipped[np.Name] {
			continue
		}
		p, err := offerings.NodePool(np, nil, instanceTypes(w.t))
		if err != nil {
			w.t.Fatal(err)
		}
		in.Pools = append(in.Pools, p)
	}
	return in
}

func (w *world) Snapshot() state.Snapshot { return w.c.Snapshot(t0) }

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./explain -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run go test ./explain -update after checking the change):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func text(t *testing.T, e *Explanation) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := e.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
