package disruption

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/decide/budget"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/scheduling/workloads/karpenterbench"
)

// benchTypes are the instance types of the benchmark cluster: general
// purpose, compute and memory families, large to 4xlarge.
var benchTypes = []string{
	"m5.large", "m5.xlarge", "m5.2xlarge", "m5.4xlarge",
	"m6i.large", "m6i.xlarge", "m6i.2xlarge", "m6i.4xlarge",
	"c6i.large", "c6i.xlarge", "c6i.2xlarge", "c6i.4xlarge",
	"r6i.large", "r6i.xlarge", "r6i.2xlarge", "r6i.4xlarge",
	"m7i.large", "m7i.xlarge", "m7i.2xlarge", "m7i.4xlarge",
}

// benchShapes are the pods' requests: cpu (millicores) and memory (MiB).
var benchShapes = [][2]int{{100, 256}, {250, 512}, {500, 1024}, {200, 512}, {750, 1536}}

// bigCluster builds a cluster of nodes nodes, about ten pods a node: half
// the nodes well used (85% of their cpu requested), half underused (20%),
// on-demand, in two zones, all consolidatable.
func bigCluster(tb testing.TB, nodes int) *fixture {
	tb.Helper()
	f := newFixture(tb)
	f.pool("default", benchTypes, []string{wellknown.CapacityTypeOnDemand})
	rng := rand.New(rand.NewPCG(1, 2))
	zones := []string{"us-east-1a", "us-east-1b"}
	made := 0
	for i := 0; i < nodes; i++ {
		itype := benchTypes[rng.IntN(len(benchTypes))]
		name := f.node(nodeSpec{pool: "default", itype: itype, zone: zones[i%len(zones)]})
		alloc := f.types[itype].Allocatable.ResourceList()
		cpu := alloc.Cpu().MilliValue()
		mem := alloc.Memory().Value() >> 20
		target := cpu * 85 / 100
		if i%2 == 1 {
			target = cpu * 20 / 100
		}
		var usedCPU, usedMem int64
		for j := 0; ; j++ {
			s := benchShapes[rng.IntN(len(benchShapes))]
			if j > 0 && (usedCPU+int64(s[0]) > target || usedMem+int64(s[1]) > mem*80/100) {
				break
			}
			usedCPU += int64(s[0])
			usedMem += int64(s[1])
			made++
			f.pod(fmt.Sprintf("p-%05d", made), name, fmt.Sprintf("%dm", s[0]), fmt.Sprintf("%dMi", s[1]),
				labelled("app", fmt.Sprintf("app-%d", made%40)))
		}
	}
	return f
}

// scaleRequirements are the general NodePool's of the simulator's scale
// scenario (sim/runner/testdata/scale5k): current c, m and r families,
// amd64, of 4 or 8 vCPUs.
func scaleRequirements(np *karpv1.NodePool) {
	np.Spec.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{
		{Key: wellknown.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{wellknown.CapacityTypeSpot, wellknown.CapacityTypeOnDemand}},
		{Key: wellknown.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
		{Key: wellknown.LabelInstanceCategory, Operator: corev1.NodeSelectorOpIn, Values: []string{"c", "m", "r"}},
		{Key: wellknown.LabelInstanceGeneration, Operator: corev1.NodeSelectorOpGt, Values: []string{"5"}},
		{Key: wellknown.LabelInstanceCPU, Operator: corev1.NodeSelectorOpIn, Values: []string{"4", "8"}},
	}
}

// catalogCluster builds a cluster as stevedore would have provisioned it
// for pods of Karpenter's diverse benchmark workload, then churned: the
// pods are packed, as the provisioner packs them, onto new nodes of one
// on-demand NodePool with the scale scenario's requirements over the
// embedded EC2 catalog, with a node agent DaemonSet on every node; each
// node is launched as the cheapest offering of its claim; then each pod
// leaves with probability churn, leaving the nodes partly used, and so do
// the nodes left empty (emptiness would take them first). The NodePool has
// the CRD's default budget (10%).
func catalogCluster(tb testing.TB, pods int, churn float64) *fixture {
	tb.Helper()
	f := newFixture(tb)
	f.pool("general", nil, nil, scaleRequirements)
	f.c.UpdateDaemonSet(nodeAgent)
	in := f.input()
	claims, onClaim := provision(tb, in, karpenterbench.DiversePods(pods))
	rng := rand.New(rand.NewPCG(3, 4))
	for i, nc := range claims {
		var kept []*corev1.Pod
		for _, p := range onClaim[i] {
			if rng.Float64() >= churn {
				kept = append(kept, p)
			}
		}
		if len(kept) == 0 {
			// Emptiness would have taken the node first.
			continue
		}
		name := f.node(launched(tb, f, nc))
		f.add(nodeAgentPod(name), name, daemon)
		for _, p := range kept {
			f.add(p.DeepCopy(), name)
		}
	}
	return f
}

// settle carries consolidation on over f's cluster, one node at a time as
// single-node consolidation takes them, until it would take no more: the
// state the controller leaves a churned cluster in, where each pass tries
// every candidate. Each candidate is tried once, in consolidation's order:
// taking a node away only fills the others, so a candidate that could not
// go stays so. The pods of a node taken away are placed as the scheduler
// and the provisioner would place them (packed onto the other nodes and,
// for what does not fit, onto new ones).
func settle(tb testing.TB, f *fixture) {
	tb.Helper()
	tried := map[string]bool{}
	for {
		in := f.input()
		in.Options.PreferencePolicy = packer.DefaultPreferencePolicy
		in.Remaining = everything(in)
		d := newDecider(&in)
		var cands []*Candidate
		for _, c := range d.cands {
			if !c.Empty() && consolidationEligible(c) == nil && !tried[c.Name()] {
				cands = append(cands, c)
			}
		}
		slices.SortStableFunc(cands, byValue)
		var cmd *Command
		for _, c := range cands {
			tried[c.Name()] = true
			if cmd, _ = d.sim().command([]*Candidate{c}, true); cmd != nil {
				break
			}
		}
		if cmd == nil {
			return
		}
		var moved []*corev1.Pod
		for _, c := range cmd.Candidates {
			for _, p := range c.Node.Pods {
				if Reschedulable(p) {
					moved = append(moved, p.DeepCopy())
				}
				f.c.DeletePod(p.Namespace, p.Name)
			}
			f.c.DeleteNodeClaim(c.NodeClaimName())
			f.c.DeleteNode(c.Name())
		}
		in = f.input()
		plan := packer.Solve(in.Snapshot.PackerInput(moved, in.Pools, packer.DefaultPreferencePolicy))
		if len(plan.Unschedulable) > 0 || len(plan.Ignored) > 0 {
			tb.Fatalf("%d moved pods unschedulable, %d ignored", len(plan.Unschedulable), len(plan.Ignored))
		}
		byName := map[string]*corev1.Pod{}
		for _, p := range moved {
			byName[p.Name] = p
		}
		for _, pl := range plan.Placements {
			f.add(byName[pl.Pod.Name], pl.Node)
		}
		for _, nc := range plan.NodeClaims {
			name := f.node(launched(tb, f, nc))
			for _, k := range nc.Pods {
				f.add(byName[k.Name], name)
			}
		}
	}
}

// nodeAgent is the scale scenario's DaemonSet, which runs on every node.
var nodeAgent = &appsv1.DaemonSet{
	ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "node-agent"},
	Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "node-agent"}},
		Spec: corev1.PodSpec{
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{Name: "agent", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}}}},
		},
	}},
}

// nodeAgentPod is nodeAgent's pod on a node.
func nodeAgentPod(node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "node-agent-" + node, Labels: map[string]string{"app": "node-agent"}},
		Spec:       *nodeAgent.Spec.Template.Spec.DeepCopy(),
	}
}

// provision packs pods onto new nodes of in's NodePools as the provisioner
// would, and returns the NodeClaims with the pods of each.
func provision(tb testing.TB, in Input, pods []*corev1.Pod) ([]packer.NodeClaim, [][]*corev1.Pod) {
	tb.Helper()
	plan := packer.Solve(in.Snapshot.PackerInput(pods, in.Pools, packer.DefaultPreferencePolicy))
	if len(plan.Unschedulable) > 0 || len(plan.Ignored) > 0 || len(plan.Placements) > 0 {
		tb.Fatalf("%d pods unschedulable, %d ignored, %d placed on nodes", len(plan.Unschedulable), len(plan.Ignored), len(plan.Placements))
	}
	byName := map[string]*corev1.Pod{}
	for _, p := range pods {
		byName[p.Name] = p
	}
	onClaim := make([][]*corev1.Pod, len(plan.NodeClaims))
	for i, nc := range plan.NodeClaims {
		for _, k := range nc.Pods {
			onClaim[i] = append(onClaim[i], byName[k.Name])
		}
	}
	return plan.NodeClaims, onClaim
}

// launched is where a claim's launch lands: the cheapest available
// offering of its first type that has one, the first zone and capacity
// type in their order among equals.
func launched(tb testing.TB, f *fixture, nc packer.NodeClaim) nodeSpec {
	tb.Helper()
	for _, name := range nc.InstanceTypes {
		var best *packer.Offering
		for i, o := range f.types[name].Offerings {
			if !o.Available || !slices.Contains(nc.Zones, o.Zone) || !slices.Contains(nc.CapacityTypes, o.CapacityType) {
				continue
			}
			if best == nil || o.PricePerHour < best.PricePerHour {
				best = &f.types[name].Offerings[i]
			}
		}
		if best != nil {
			return nodeSpec{pool: nc.NodePool, itype: name, zone: best.Zone, ct: best.CapacityType}
		}
	}
	tb.Fatalf("claim with types %v has no offering", nc.InstanceTypes)
	return nodeSpec{}
}

// benchDecide times Decide on in and reports the CPU seconds a pass takes,
// the snapshot's nodes and pods and, when the pass found a command, its
// nodes and savings.
func benchDecide(b *testing.B, in Input) Decision {
	b.Helper()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0, cpuOK := cpuTime()
	var d Decision
	for i := 0; i < b.N; i++ {
		d = Decide(in)
	}
	b.StopTimer()
	if cpu1, ok := cpuTime(); ok && cpuOK {
		b.ReportMetric((cpu1-cpu0).Seconds()/float64(b.N), "cpu-s/op")
	}
	b.ReportMetric(float64(len(in.Snapshot.Nodes)), "nodes")
	b.ReportMetric(float64(podCount(in)), "pods")
	if d.Command != nil {
		b.ReportMetric(float64(len(d.Command.Candidates)), "nodes/pass")
		b.ReportMetric(d.Command.SavingsPerHour, "$/h-saved")
	}
	return d
}

// everything is a budget allowing every node of the input's NodePools to
// go, for every reason.
func everything(in Input) map[string]map[Reason]int {
	n := len(in.Snapshot.Nodes)
	out := map[string]map[Reason]int{}
	for _, np := range in.Snapshot.NodePools {
		out[np.Name] = map[Reason]int{ReasonEmpty: n, ReasonUnderutilized: n, ReasonDrifted: n}
	}
	return out
}

// BenchmarkConsolidation decides one pass over 2,000 nodes and about
// 20,000 pods, half of the nodes underused, with no cap on the candidates
// considered.
func BenchmarkConsolidation(b *testing.B) {
	in := bigCluster(b, 2000).input()
	in.Remaining = everything(in)
	d := benchDecide(b, in)
	if d.Command == nil {
		b.Fatal("no command")
	}
	if d.Command.Reason != ReasonUnderutilized {
		b.Fatalf("command %s, want consolidation", d.Command)
	}
}

// BenchmarkConsolidationCapped is the same pass with the search limited to
// the first 100 candidates, as Karpenter limits it, for comparison.
func BenchmarkConsolidationCapped(b *testing.B) {
	in := bigCluster(b, 2000).input()
	in.Remaining = everything(in)
	in.Options.MaxCandidates = 100
	if d := benchDecide(b, in); d.Command == nil {
		b.Fatal("no command")
	}
}

func podCount(in Input) int {
	n := 0
	for _, sn := range in.Snapshot.Nodes {
		n += len(sn.Pods)
	}
	return n
}

// BenchmarkConsolidationNothingToDo is the steady state the controller
// spends most passes in: every node well used, so every candidate is tried
// and none can go.
func BenchmarkConsolidationNothingToDo(b *testing.B) {
	f := newFixture(b)
	family := []string{"c6i.large", "c6i.xlarge", "c6i.2xlarge", "c6i.4xlarge"}
	f.pool("default", family, []string{wellknown.CapacityTypeOnDemand})
	pods := 0
	for i := 0; i < 2000; i++ {
		itype := family[i%len(family)]
		name := f.node(nodeSpec{pool: "default", itype: itype, zone: "us-east-1a"})
		alloc := f.types[itype].Allocatable.ResourceList()
		// As many 500m pods as fit: less than one pod's room is left on
		// every node, and the family has no cheaper type per cpu.
		for j := int64(0); j < alloc.Cpu().MilliValue()/500; j++ {
			pods++
			f.pod(fmt.Sprintf("p-%05d", pods), name, "500m", "256Mi", labelled("app", fmt.Sprintf("app-%d", pods%40)))
		}
	}
	in := f.input()
	in.Remaining = everything(in)
	d := benchDecide(b, in)
	if d.Command != nil {
		b.Fatalf("command %s in a full cluster", d.Command)
	}
	b.ReportMetric(float64(len(d.Blocked)), "verdicts")
}

// BenchmarkConsolidationCatalog decides one pass over clusters of about
// 5,000 nodes of the EC2 catalog holding Karpenter's diverse pods
// (catalogCluster), as the disruption controller decides it, with the
// controller's default preference policy, under the NodePool's own budget
// (the default 10%) and under one allowing every node:
//
//   - churned: a third of the pods gone since the nodes were provisioned;
//     multi-node consolidation finds a command;
//   - settled: the nodes as provisioned for their pods, then consolidated
//     until nothing more can go (settle): the pass tries every candidate.
func BenchmarkConsolidationCatalog(b *testing.B) {
	// Each cluster is built on first use, by the first sub-benchmark that
	// needs it, and shared by the others.
	built := map[string]*fixture{}
	cluster := func(b *testing.B, name string) *fixture {
		if f, ok := built[name]; ok {
			return f
		}
		var f *fixture
		if name == "churned" {
			f = catalogCluster(b, 26000, 1.0/3)
		} else {
			f = catalogCluster(b, 25000, 0)
			settle(b, f)
		}
		built[name] = f
		return f
	}
	for _, kind := range []string{"churned", "settled"} {
		for _, all := range []bool{false, true} {
			name := kind + "/budget=10%"
			if all {
				name = kind + "/budget=all"
			}
			b.Run(name, func(b *testing.B) {
				in := cluster(b, kind).input()
				in.Options.PreferencePolicy = packer.DefaultPreferencePolicy
				in.Remaining = remainingNow(in)
				if all {
					in.Remaining = everything(in)
				}
				d := benchDecide(b, in)
				if kind == "churned" && d.Command == nil {
					b.Fatal("no command")
				}
				b.ReportMetric(float64(len(d.Verdicts)), "verdicts")
			})
		}
	}
}

// remainingNow is what the NodePools' budgets leave at t0, as the
// disruption controller computes it.
func remainingNow(in Input) map[string]map[Reason]int {
	out := map[string]map[Reason]int{}
	for _, np := range in.Snapshot.NodePools {
		a := budget.Compute(np, in.Snapshot.Nodes, t0)
		out[np.Name] = map[Reason]int{}
		for _, r := range budget.Reasons {
			out[np.Name][Reason(r)] = a.Remaining(r)
		}
	}
	return out
}

// TestUncappedSearchSavesAtLeastAsMuch compares one pass of the uncapped
// search with the same pass limited to 100 candidates, as Karpenter limits
// it.
func TestUncappedSearchSavesAtLeastAsMuch(t *testing.T) {
	f := bigCluster(t, 400)
	in := f.input()
	in.Remaining = map[string]map[Reason]int{"default": {ReasonEmpty: 400, ReasonUnderutilized: 400, ReasonDrifted: 400}}
	full := Decide(in)
	in.Options.MaxCandidates = 100
	capped := Decide(in)
	if full.Command == nil || capped.Command == nil {
		t.Fatalf("commands %v / %v", full.Command, capped.Command)
	}
	if full.Command.SavingsPerHour < capped.Command.SavingsPerHour {
		t.Fatalf("uncapped saves $%.2f/h, capped $%.2f/h", full.Command.SavingsPerHour, capped.Command.SavingsPerHour)
	}
	if len(full.Command.Candidates) <= 100 {
		t.Errorf("uncapped pass took %d nodes; the cluster has 200 underused", len(full.Command.Candidates))
	}
	// The same input decides the same way.
	in.Options.MaxCandidates = 0
	again := Decide(in)
	if again.Command.String() != full.Command.String() || len(again.Blocked) != len(full.Blocked) {
		t.Fatal("two passes over the same input differ")
	}
}
