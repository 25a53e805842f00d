package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/catalog"
	"github.com/stevedore-autoscaler/stevedore/cloud/offerings"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/scheduling/requirements"
	"github.com/stevedore-autoscaler/stevedore/scheduling/resources"
)

func load(t *testing.T, paths ...string) *Objects {
	t.Helper()
	objs, problems, err := Load(paths, nil)
	if err != nil {
		t.Fatalf("Load: %v\n%v", err, problems)
	}
	return objs
}

func prepare(t *testing.T, objs *Objects, opts Options) *Prepared {
	t.Helper()
	p, err := Prepare(objs, opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadSpotMix(t *testing.T) {
	objs := load(t, "../examples/spot-mix.yaml")
	if len(objs.NodePools) != 2 || len(objs.NodeClasses) != 1 || len(objs.Workloads) != 1 {
		t.Fatalf("read %d NodePools, %d EC2NodeClasses, %d workloads", len(objs.NodePools), len(objs.NodeClasses), len(objs.Workloads))
	}
	if !reflect.DeepEqual(objs.Skipped, []string{"PodDisruptionBudget/web"}) {
		t.Errorf("skipped %v", objs.Skipped)
	}
	// CRD defaults: the stateful pool sets no budgets, so it gets 10%.
	stateful := objs.NodePools[1]
	if len(stateful.Spec.Disruption.Budgets) != 1 || stateful.Spec.Disruption.Budgets[0].Nodes != "10%" {
		t.Errorf("stateful budgets not defaulted: %+v", stateful.Spec.Disruption.Budgets)
	}
	if nc := objs.NodeClasses[0]; nc.Spec.MetadataOptions == nil || nc.Spec.MetadataOptions.HTTPTokens == nil || *nc.Spec.MetadataOptions.HTTPTokens != "required" {
		t.Errorf("EC2NodeClass metadataOptions not defaulted: %+v", nc.Spec.MetadataOptions)
	}
}

func TestPrepareSpotMix(t *testing.T) {
	p := prepare(t, load(t, "../examples/spot-mix.yaml"), Options{})
	in := p.Input
	if in.PreferencePolicy != packer.PreferenceRespect {
		t.Errorf("policy %q, want the controller's default Respect", in.PreferencePolicy)
	}
	if len(in.Pods) != 10 || len(in.DaemonSetPods) != 0 || len(in.Nodes) != 0 {
		t.Fatalf("%d pods, %d daemon pods, %d nodes", len(in.Pods), len(in.DaemonSetPods), len(in.Nodes))
	}
	for _, pod := range in.Pods {
		v := resources.PodVector(pod)
		if pod.Namespace != "default" || !strings.HasPrefix(pod.Name, "web-") || pod.Labels["app"] != "web" || v.CPU != 500 || v.Memory != 512<<20 {
			t.Errorf("pod %s/%s labels %v requests %v", pod.Namespace, pod.Name, pod.Labels, v)
		}
	}
	if len(in.NodePools) != 2 {
		t.Fatalf("%d pools", len(in.NodePools))
	}
	def, stateful := in.NodePools[0], in.NodePools[1]
	if def.Name != "default" || def.Weight != 10 || def.Limits.Cpu().String() != "2k" {
		t.Errorf("default pool %s weight %d limits %v", def.Name, def.Weight, def.Limits)
	}
	if len(def.InstanceTypes) < 100 {
		t.Errorf("default pool has %d instance types", len(def.InstanceTypes))
	}
	arches := map[string]bool{}
	for _, it := range def.InstanceTypes {
		arches[it.Requirements.Labels()[wellknown.LabelArch]] = true
		if len(it.Offerings) != 6 {
			t.Errorf("%s: %d offerings, want spot and on-demand in 3 zones", it.Name, len(it.Offerings))
		}
	}
	if !arches["amd64"] || !arches["arm64"] {
		t.Errorf("default pool architectures %v", arches)
	}
	var names []string
	for _, it := range stateful.InstanceTypes {
		names = append(names, it.Name)
		for _, o := range it.Offerings {
			if o.CapacityType != packer.CapacityTypeOnDemand {
				t.Errorf("stateful %s offers %s", it.Name, o.CapacityType)
			}
		}
	}
	if strings.Join(names, ",") != "m6i.2xlarge,m6i.4xlarge,m6i.xlarge" || stateful.Weight != 20 || len(stateful.Taints) != 1 || stateful.Labels["workload"] != "stateful" {
		t.Errorf("stateful pool: types %v weight %d taints %v labels %v", names, stateful.Weight, stateful.Taints, stateful.Labels)
	}
	if in.NamespaceLabels["default"][corev1.LabelMetadataName] != "default" {
		t.Errorf("namespace labels %v", in.NamespaceLabels)
	}
	// Deterministic: the same manifests give the same input.
	again := prepare(t, load(t, "../examples/spot-mix.yaml"), Options{})
	if !reflect.DeepEqual(podNamesOf(in.Pods), podNamesOf(again.Input.Pods)) {
		t.Error("pod names differ between two runs")
	}
}

func podNamesOf(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	return out
}

func TestPrepareDriftUpgrade(t *testing.T) {
	p := prepare(t, load(t, "../examples/drift-upgrade.yaml"), Options{Offerings: offerings.Options{Zones: []string{"us-east-1a"}}})
	in := p.Input
	if len(in.Pods) != 10 || in.Pods[0].Namespace != "checkout" || in.Pods[0].Spec.NodeSelector["team"] != "checkout" {
		t.Fatalf("pods %v", podNamesOf(in.Pods))
	}
	pool := in.NodePools[0]
	if len(pool.Taints) != 1 || pool.Taints[0].Key != "dedicated" || pool.Labels["team"] != "checkout" {
		t.Errorf("pool taints %v labels %v", pool.Taints, pool.Labels)
	}
	alternatives, err := requirements.FromPod(in.Pods[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := pool.Requirements.Compatible(alternatives[0], requirements.AllowUndefinedWellKnown); err != nil {
		t.Errorf("the checkout pods' node selector does not meet the pool: %v", err)
	}
	for _, it := range pool.InstanceTypes {
		for _, o := range it.Offerings {
			if o.Zone != "us-east-1a" {
				t.Fatalf("%s offered in %s", it.Name, o.Zone)
			}
		}
	}
	if _, ok := in.NamespaceLabels["checkout"]; !ok {
		t.Errorf("namespace checkout missing from %v", in.NamespaceLabels)
	}
}

func TestLoadInvalid(t *testing.T) {
	bad := `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [spot]}]
  disruption:
    budgets:
      - nodes: "0"
        schedule: "0 9 * * mon-fri"
`
	_, problems, err := Load([]string{"-"}, strings.NewReader(bad))
	if !errors.Is(err, ErrInvalid) || len(problems) == 0 {
		t.Fatalf("err %v, problems %v", err, problems)
	}
	if _, _, err := Load(nil, nil); err == nil {
		t.Error("no paths accepted")
	}
	if _, _, err := Load([]string{"does-not-exist.yaml"}, nil); err == nil {
		t.Error("missing file accepted")
	}
}

const nodes = `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata:
    name: node-a
    labels: {karpenter.sh/nodepool: default, kubernetes.io/arch: amd64}
  spec:
    taints: [{key: dedicated, value: infra, effect: NoSchedule}]
  status:
    capacity: {cpu: "4", memory: 16Gi, pods: "58"}
    allocatable: {cpu: 3920m, memory: 15Gi, pods: "58"}
- apiVersion: v1
  kind: Node
  metadata: {name: node-b}
  spec: {unschedulable: true}
  status:
    allocatable: {cpu: "2", memory: 8Gi, pods: "29"}
---
apiVersion: v1
kind: Pod
metadata: {name: running, namespace: team}
spec:
  nodeName: node-a
  containers: [{name: c, image: i, resources: {requests: {cpu: "1"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: elsewhere}
spec:
  nodeName: node-z
  containers: [{name: c, image: i}]
---
apiVersion: v1
kind: Pod
metadata: {name: done}
spec:
  containers: [{name: c, image: i}]
status: {phase: Succeeded}
---
apiVersion: v1
kind: Pod
metadata: {name: with-volume}
spec:
  containers: [{name: c, image: i}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: kube-system}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: a, image: a, resources: {requests: {cpu: 100m, memory: 128Mi}}}]
---
apiVersion: v1
kind: Namespace
metadata: {name: team, labels: {tier: gold}}
`

func TestPrepareNodes(t *testing.T) {
	objs := load(t, "../examples/spot-mix.yaml")
	if err := objs.Decode("nodes", []byte(nodes)); err != nil {
		t.Fatal(err)
	}
	p := prepare(t, objs, Options{PreferencePolicy: packer.PreferenceRespect})
	in := p.Input
	if in.PreferencePolicy != packer.PreferenceRespect {
		t.Errorf("policy %q", in.PreferencePolicy)
	}
	if zones, ok := in.VolumeZones[types.NamespacedName{Namespace: "default", Name: "with-volume"}]; !ok || zones != nil || len(in.VolumeZones) != 1 {
		t.Errorf("volume zones %v", in.VolumeZones)
	}
	if len(in.Nodes) != 2 || len(in.Pods) != 11 || len(in.DaemonSetPods) != 1 || p.Bound != 1 {
		t.Fatalf("%d nodes, %d pods, %d daemon pods, %d bound", len(in.Nodes), len(in.Pods), len(in.DaemonSetPods), p.Bound)
	}
	a, b := in.Nodes[0], in.Nodes[1]
	if a.NodePool != "default" || a.Allocatable.CPU != 3920 || len(a.Taints) != 1 || len(a.Pods) != 1 || a.Pods[0].Name != "running" || a.Unschedulable {
		t.Errorf("node-a %+v", a)
	}
	if b.NodePool != "" || !b.Unschedulable || b.Allocatable.Memory != 8<<30 {
		t.Errorf("node-b %+v", b)
	}
	inUse := in.NodePools[0].InUse
	if inUse.Cpu().String() != "4" || inUse.Name("nodes", "").String() != "1" {
		t.Errorf("default pool in use %v", inUse)
	}
	if in.NodePools[1].InUse != nil {
		t.Errorf("stateful pool in use %v", in.NodePools[1].InUse)
	}
	if in.NamespaceLabels["team"]["tier"] != "gold" || in.NamespaceLabels["kube-system"][corev1.LabelMetadataName] != "kube-system" {
		t.Errorf("namespace labels %v", in.NamespaceLabels)
	}
	if len(p.Warnings) != 2 || !strings.Contains(p.Warnings[0], "persistent volumes") || !strings.Contains(p.Warnings[1], "node-z") {
		t.Errorf("warnings %v", p.Warnings)
	}
}

func TestPrepareMissingNodeClass(t *testing.T) {
	objs := &Objects{}
	np := &karpv1.NodePool{}
	np.Name = "lonely"
	np.Spec.Template.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "missing"}
	objs.NodePools = append(objs.NodePools, np)
	p := prepare(t, objs, Options{})
	if len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "EC2NodeClass missing") {
		t.Errorf("warnings %v", p.Warnings)
	}
	if _, err := Prepare(objs, Options{PreferencePolicy: "Sometimes"}); err == nil {
		t.Error("unknown preference policy accepted")
	}
	if _, err := Prepare(objs, Options{MinValuesPolicy: "Loose"}); err == nil {
		t.Error("unknown minValues policy accepted")
	}
	if p.Options.MinValuesPolicy != packer.MinValuesStrict || p.Input.MinValuesPolicy != packer.MinValuesStrict {
		t.Errorf("minValues policy %q, packer's %q: want Strict by default", p.Options.MinValuesPolicy, p.Input.MinValuesPolicy)
	}
}

// fakeResult places pods on NodeClaims of the first pool, n per claim, at
// the price of the cheapest offering of the first type that fits them.
func fakeResult(t *testing.T, p *Prepared, perClaim int) packer.Result {
	t.Helper()
	var res packer.Result
	pool := p.Input.NodePools[0]
	pods := p.Input.Pods
	for len(pods) > 0 {
		n := min(perClaim, len(pods))
		var req resources.Vector
		var names []types.NamespacedName
		for _, pod := range pods[:n] {
			req.Add(resources.PodVector(pod))
			names = append(names, types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name})
		}
		best := -1.0
		var chosen []string
		for _, it := range pool.InstanceTypes {
			if !req.Fits(it.Allocatable) {
				continue
			}
			price, _ := offerings.CheapestOffering(it)
			chosen = append(chosen, it.Name)
			if best < 0 || price < best {
				best = price
			}
		}
		res.NodeClaims = append(res.NodeClaims, packer.NodeClaim{
			NodePool: pool.Name, InstanceTypes: chosen, CapacityTypes: []string{"on-demand", "spot"},
			Zones: []string{"us-east-1a"}, PricePerHour: best, Requests: req, Pods: names,
		})
		pods = pods[n:]
	}
	res.Unschedulable = []packer.Unschedulable{{
		Pod:    types.NamespacedName{Namespace: "default", Name: "huge"},
		Reason: "no instance type has 1000 cpu",
		NodePools: []packer.NodePoolVerdict{
			{NodePool: "default", Code: "NoInstanceTypeFits", Message: "the largest type has 192 cpu"},
		},
	}}
	return res
}

func TestReport(t *testing.T) {
	p := prepare(t, load(t, "../examples/spot-mix.yaml"), Options{})
	r := NewReport(p, fakeResult(t, p, 4))
	if len(r.NodeClaims) != 3 || r.NodeClaims[0].NodePool != "default" || len(r.NodeClaims[0].Pods) != 4 {
		t.Fatalf("claims %+v", r.NodeClaims)
	}
	sum := 0.0
	for _, nc := range r.NodeClaims {
		sum += nc.PricePerHour
	}
	if math.Abs(r.PricePerHour-sum) > 1e-12 {
		t.Errorf("total %v, sum %v", r.PricePerHour, sum)
	}
	// 10 pods of 500m and 512Mi: 5 cores and 5 GiB. The bound is at most
	// the plan's price and more than zero.
	if r.LowerBound.PricePerHour <= 0 || r.LowerBound.PricePerHour > r.PricePerHour || r.LowerBound.Ratio < 1 {
		t.Errorf("lower bound %+v, plan %v", r.LowerBound, r.PricePerHour)
	}
	if r.Assumptions.Region != "us-east-1" || r.Assumptions.SpotPriceFraction != 0.35 || len(r.Assumptions.Zones) != 3 || r.Assumptions.Pods != 10 {
		t.Errorf("assumptions %+v", r.Assumptions)
	}

	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	t.Logf("text form:\n%s", text.String())
	for _, want := range []string{"NODEPOOL", "default", "(+", "3 NodeClaims for 10 pods", "lower bound: $", "ratio ",
		"1 pod unschedulable", "default/huge: no instance type has 1000 cpu", "NodePool default: NoInstanceTypeFits: the largest type has 192 cpu"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}

	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	if err := back.WriteJSON(&again); err != nil {
		t.Fatal(err)
	}
	if again.String() != js.String() {
		t.Errorf("JSON does not round-trip:\n%s\n---\n%s", js.String(), again.String())
	}
	for _, key := range []string{`"schemaVersion": 1`, `"nodeClaims"`, `"lowerBound"`, `"unschedulable"`, `"ignored": []`, `"placements": []`} {
		if !strings.Contains(js.String(), key) {
			t.Errorf("JSON lacks %s", key)
		}
	}
}

func TestBoundSeparated(t *testing.T) {
	// Three pods that must be on distinct nodes: the bound is at least
	// three times the cheapest type that fits one.
	const manifest = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: node.kubernetes.io/instance-type, operator: In, values: [m6i.large, m6i.2xlarge]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: spread}
spec:
  replicas: 3
  selector: {matchLabels: {app: spread}}
  template:
    metadata: {labels: {app: spread}}
    spec:
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - topologyKey: kubernetes.io/hostname
            labelSelector: {matchLabels: {app: spread}}
      containers: [{name: c, image: i, resources: {requests: {cpu: 100m, memory: 128Mi}}}]
`
	objs := &Objects{}
	if err := objs.Decode("inline", []byte(manifest)); err != nil {
		t.Fatal(err)
	}
	p := prepare(t, objs, Options{})
	r := NewReport(p, fakeResult(t, p, 1))
	// m6i.large is 0.096/hour on demand: three of them.
	if math.Abs(r.LowerBound.PricePerHour-3*0.096) > 1e-6 || !strings.Contains(r.LowerBound.SeparatedBy, "spread") {
		t.Errorf("lower bound %+v, want 0.288 raised by the spread pods", r.LowerBound)
	}
	if r.LowerBound.Resources >= r.LowerBound.PricePerHour {
		t.Errorf("resources bound %v should be below the separated bound", r.LowerBound.Resources)
	}
}

// TestSpotMixIsRightSized pins the cost of the operations example. With
// Score, the ten 500m/512Mi web pods fit a 4-vCPU and a 2-vCPU Graviton spot
// node (7 + 3 pods) for $0.0714/hour; one 8-vCPU node would cost $0.0952.
// With the default, Respect (the controller's), their ScheduleAnyway zone
// spread becomes a rule: 3 + 3 + 3 + 1 pods on four nodes in three zones.
func TestSpotMixIsRightSized(t *testing.T) {
	r, err := Run(load(t, "../examples/spot-mix.yaml"), Options{PreferencePolicy: packer.PreferenceScore})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(r.PricePerHour-0.0714) > 1e-9 || len(r.NodeClaims) != 2 {
		t.Errorf("Score: %d NodeClaims at $%v/hour, want 2 at $0.0714/hour", len(r.NodeClaims), r.PricePerHour)
	}
	if r.LowerBound.Ratio > 1.2 {
		t.Errorf("Score: cost / lower bound = %v, want at most 1.2", r.LowerBound.Ratio)
	}

	r, err = Run(load(t, "../examples/spot-mix.yaml"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	zones := map[string]bool{}
	for _, nc := range r.NodeClaims {
		for _, z := range nc.Zones {
			zones[z] = true
		}
	}
	if math.Abs(r.PricePerHour-0.0833) > 1e-9 || len(r.NodeClaims) != 4 || len(zones) != 3 {
		t.Errorf("Respect: %d NodeClaims in %d zones at $%v/hour, want 4 in 3 zones at $0.0833/hour", len(r.NodeClaims), len(zones), r.PricePerHour)
	}
}

// TestGteLteBoundInstanceTypes plans a NodePool whose instance-cpu is bounded
// by Gte 8 and Lte 16: every proposed instance type has 8 to 16 vCPUs (both
// bounds included, and the 2-vCPU types that would suit the small pods are
// left out), and a pod that needs 20 vCPUs stays unschedulable.
func TestGteLteBoundInstanceTypes(t *testing.T) {
	r, err := Run(load(t, "testdata/requirements-gte-lte.yaml"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.NodeClaims) == 0 {
		t.Fatal("no NodeClaims proposed for the web pods")
	}
	seen := map[int]bool{}
	for _, nc := range r.NodeClaims {
		for _, name := range nc.InstanceTypes {
			it, ok := catalog.Lookup(name)
			if !ok {
				t.Fatalf("instance type %s is not in the catalog", name)
			}
			cpu, err := strconv.Atoi(it.Labels["karpenter.k8s.aws/instance-cpu"])
			if err != nil || cpu < 8 || cpu > 16 {
				t.Errorf("NodeClaim %v offers %s with instance-cpu %q, want 8 to 16", nc.Pods, name, it.Labels["karpenter.k8s.aws/instance-cpu"])
			}
			seen[cpu] = true
		}
	}
	if !seen[8] || !seen[16] {
		t.Errorf("vCPU counts offered %v: want both bounds, 8 and 16, among them", seen)
	}
	var batch bool
	for _, p := range r.Unschedulable {
		batch = batch || p.Pod == "default/batch"
	}
	if !batch {
		t.Errorf("the 20-vCPU pod was not reported unschedulable: %+v", r.Unschedulable)
	}
}

// TestNodeOverlayInPlan: the overlays among the manifests change the prices
// the plan compares instance types by.
func TestNodeOverlayInPlan(t *testing.T) {
	objs := load(t, "testdata/nodeoverlay.yaml")
	if len(objs.NodeOverlays) != 1 {
		t.Fatalf("%d NodeOverlays read, want 1", len(objs.NodeOverlays))
	}
	first := func(objs *Objects) (string, float64) {
		t.Helper()
		r, err := Run(objs, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.NodeClaims) != 1 {
			t.Fatalf("%d NodeClaims, want 1", len(r.NodeClaims))
		}
		return r.NodeClaims[0].InstanceTypes[0], r.NodeClaims[0].PricePerHour
	}
	m6i, _ := catalog.Lookup("m6i.large")
	if typ, price := first(objs); typ != "m6i.large" || price != m6i.OnDemandPricePerHour {
		t.Errorf("with the overlay: %s at %v, want m6i.large at %v", typ, price, m6i.OnDemandPricePerHour)
	}
	objs.NodeOverlays = nil
	if typ, _ := first(objs); typ != "c6i.large" {
		t.Errorf("without the overlay: %s first, want c6i.large", typ)
	}
}

// limitRangeScenario is the DaemonSet case of Karpenter's regression suite:
// a LimitRange whose default gives every container 2 cpu, a high-priority
// DaemonSet that limits only memory, and a Deployment pod that requests 4
// bytes of memory.
const limitRangeScenario = `
apiVersion: v1
kind: LimitRange
metadata: {name: limitrange, namespace: default}
spec:
  limits:
  - type: Container
    default: {cpu: "2", memory: 1Gi}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: daemon, namespace: default}
spec:
  selector: {matchLabels: {app: daemon}}
  template:
    metadata: {labels: {app: daemon}}
    spec:
      priorityClassName: high-priority-daemonsets
      containers:
      - {name: app, image: registry.k8s.io/pause:3.10, resources: {limits: {memory: 1Gi}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: large-app, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: large-app}}
  template:
    metadata: {labels: {app: large-app}}
    spec:
      containers:
      - {name: app, image: registry.k8s.io/pause:3.10, resources: {requests: {memory: "4"}}}
`

// TestPlanAppliesLimitRanges: the LimitRange's default reaches the
// DaemonSet's pod and the Deployment's, so the NodeClaim planned for the
// Deployment's pod has room for both: 4 cpu, 1Gi and 4 bytes.
func TestPlanAppliesLimitRanges(t *testing.T) {
	// The manifests pass validation as they are read from a file.
	file := filepath.Join(t.TempDir(), "limitrange.yaml")
	if err := os.WriteFile(file, []byte(limitRangeScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	if read := load(t, file); len(read.Workloads) != 3 || len(read.Skipped) != 0 {
		t.Fatalf("read %d workloads (%d skipped: %v), want the LimitRange, the DaemonSet and the Deployment", len(read.Workloads), len(read.Skipped), read.Skipped)
	}
	objs := load(t, "../examples/spot-mix.yaml")
	objs.Workloads = nil
	if err := objs.Decode("limitrange", []byte(limitRangeScenario)); err != nil {
		t.Fatal(err)
	}
	if len(objs.Skipped) != 1 || objs.Skipped[0] != "PodDisruptionBudget/web" {
		t.Errorf("skipped %v, want only the example's PodDisruptionBudget", objs.Skipped)
	}
	p := prepare(t, objs, Options{})
	if len(p.Input.DaemonSetPods) != 1 || len(p.Input.Pods) != 1 {
		t.Fatalf("%d DaemonSet pods and %d pods, want one of each", len(p.Input.DaemonSetPods), len(p.Input.Pods))
	}
	for _, tc := range []struct {
		pod  *corev1.Pod
		want string
	}{
		{p.Input.DaemonSetPods[0], "cpu=2000m memory=1073741824 pods=1"},
		{p.Input.Pods[0], "cpu=2000m memory=4 pods=1"},
	} {
		if got := resources.PodVector(tc.pod).String(); got != tc.want {
			t.Errorf("pod %s requests %s, want %s", tc.pod.Name, got, tc.want)
		}
	}
	report := NewReport(p, packer.Solve(p.Input))
	if len(report.NodeClaims) != 1 {
		t.Fatalf("%d NodeClaims planned, want 1: %+v", len(report.NodeClaims), report.NodeClaims)
	}
	got := report.NodeClaims[0].Requests
	if cpu, mem := got[corev1.ResourceCPU], got[corev1.ResourceMemory]; cpu.String() != "4" || mem.Value() != 1<<30+4 {
		t.Errorf("NodeClaim requests %v, want cpu 4 and memory 1Gi+4", got)
	}
}
