// Package karpenterbench reproduces the input of Karpenter's scheduling
// benchmark (pkg/controllers/provisioning/scheduling, file
// scheduling_benchmark_test.go, at Karpenter v1.14.1), so that the packer, and
// scripts comparing the two systems, are measured on the same pods and
// instance types.
//
// The instance types are those of Karpenter's fake cloud provider: 400 types,
// type i (0-based) with i+1 vCPU, 2(i+1) GiB and 10(i+1) pods, each reserving
// the provider's per-node overhead. The NodePool has very large limits. The
// pods come in five equal groups (generic, zone spread, hostname spread, zone
// self-affinity, hostname self-anti-affinity), and there is the preference
// workload.
//
// The pods are Karpenter's own, value for value: the benchmark draws every
// random choice from one math/rand (not math/rand/v2) source seeded with 42,
// and a Generator makes the same draws in the same order. Per pod that is, by
// group:
//
//   - generic: its label value, then its cpu, then its memory;
//   - zone and hostname spread: its label value, the value its spread
//     constraint selects (an independent draw, so it usually selects other
//     pods than itself), its cpu, its memory;
//   - zone self-affinity: its label value (which its affinity also
//     selects), its cpu, its memory;
//   - hostname anti-affinity: its cpu, its memory (all share app=nginx).
//
// Label values are one of a to g, cpu one of 100m, 250m, 500m, 1000m and
// 1500m, memory one of 100Mi, 256Mi, 512Mi, 1024Mi, 2048Mi and 4096Mi, each
// the element at Intn(length of the list). The preference workload draws one
// cpu and one memory for all its pods. Every pod is in the default namespace
// and also carries the DiscoveryLabel, as Karpenter's test pods do.
//
// Karpenter's benchmark keeps a single source for the whole test binary, and
// every call of a benchmark function makes its pods anew from it, so only the
// first pods made in a process start from the fresh source (for example
// `go test -tags=test_performance -run=XXX -bench='^BenchmarkScheduling2000$'
// -benchtime=1x`, which calls the function once). DiversePods and
// PreferencePods return those first pods; a Generator continued over several
// calls gives the pods of later calls on one source.
//
// What is not reproduced: Karpenter names its pods and containers at random
// and gives them random UIDs; here they are named by group and sequence
// number, and the UID is the name. Its pods also carry an empty pod-level
// resources block, and its preference pods an empty list of required
// anti-affinity terms; neither asks for anything, so they are left out.
package karpenterbench

import (
	"fmt"
	"math/rand"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/scheduling/requirements"
	"github.com/stevedore-autoscaler/stevedore/scheduling/resources"
)

// Seed is the seed of the benchmark's random source.
const Seed = 42

// NodePoolName is the name of the benchmark's NodePool.
const NodePoolName = "default"

// Zones are the benchmark's zones.
var Zones = []string{"test-zone-1", "test-zone-2", "test-zone-3"}

// DiscoveryLabel is the label Karpenter's test helpers put on every object
// they make (pods and the NodePool's node template), with the value
// DiscoveryValue, so that its end-to-end suites can find them.
const (
	DiscoveryLabel = "testing/cluster"
	DiscoveryValue = "unspecified"
)

// Labels of the fake provider's instance types besides the well-known ones:
// "size" is small up to 4 vCPU and large above, "special" is "optional" on
// the large types and absent on the small ones, and "integer" is the number
// of vCPUs.
const (
	LabelSize    = "size"
	LabelSpecial = "special"
	LabelInteger = "integer"
)

// Image is the container image of every benchmark pod.
const Image = "public.ecr.aws/eks-distro/kubernetes/pause:3.2"

// KubeReserved is the overhead Karpenter's fake cloud provider reserves on
// every instance type it makes (100m of cpu and 10Mi of memory, as kube
// reserved), so a type's allocatable is its capacity less these.
var KubeReserved = corev1.ResourceList{
	corev1.ResourceCPU:    resource.MustParse("100m"),
	corev1.ResourceMemory: resource.MustParse("10Mi"),
}

// InstanceTypes returns n instance types as Karpenter's fake provider makes
// them for its scheduling benchmark: type i (0-based) is fake-it-i, with i+1
// vCPU, 2(i+1) GiB of memory and room for 10(i+1) pods, amd64, for linux,
// windows and darwin, offered as spot in the first two zones and on demand in
// all three (in that order: spot then on demand, each by zone), at 0.1 per
// vCPU plus 0.1 per GB (10^9 bytes) of memory per hour; its allocatable is
// its capacity less KubeReserved. It also carries the provider's LabelSize,
// LabelSpecial and LabelInteger.
func InstanceTypes(n int) []*packer.InstanceType {
	return instanceTypes(n, true)
}

// InstanceTypesWithoutOverhead returns the types of InstanceTypes with
// allocatable equal to capacity: no node overhead at all. Packing on them
// measures the packer apart from the per-node reservation.
func InstanceTypesWithoutOverhead(n int) []*packer.InstanceType {
	return instanceTypes(n, false)
}

func instanceTypes(n int, overhead bool) []*packer.InstanceType {
	out := make([]*packer.InstanceType, 0, n)
	reserved := resources.NewVector(KubeReserved)
	for i := range n {
		cpu := int64(i + 1)
		mem := 2 * cpu * (1 << 30)
		name := fmt.Sprintf("fake-it-%d", i)
		price := 0.1*float64(cpu) + 0.1*float64(mem)/1e9
		capacity := resources.NewVector(corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewQuantity(cpu, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(mem, resource.BinarySI),
			corev1.ResourcePods:   *resource.NewQuantity(10*cpu, resource.DecimalSI),
		})
		allocatable := capacity.Clone()
		if overhead {
			allocatable.Sub(reserved)
		}
		// The provider calls a type large when it has more than 4 vCPU and
		// more than 8 GiB; with 2 GiB per vCPU that is from 5 vCPU on.
		size, special := must(requirements.NewRequirement(LabelSize, corev1.NodeSelectorOpIn, "small")),
			must(requirements.NewRequirement(LabelSpecial, corev1.NodeSelectorOpDoesNotExist))
		if cpu > 4 && mem > 8<<30 {
			size = must(requirements.NewRequirement(LabelSize, corev1.NodeSelectorOpIn, "large"))
			special = must(requirements.NewRequirement(LabelSpecial, corev1.NodeSelectorOpIn, "optional"))
		}
		it := &packer.InstanceType{
			Name: name,
			Requirements: requirements.New(
				must(requirements.NewRequirement(wellknown.LabelInstanceType, corev1.NodeSelectorOpIn, name)),
				must(requirements.NewRequirement(wellknown.LabelArch, corev1.NodeSelectorOpIn, "amd64")),
				must(requirements.NewRequirement(wellknown.LabelOS, corev1.NodeSelectorOpIn, "darwin", "linux", "windows")),
				size,
				special,
				must(requirements.NewRequirement(LabelInteger, corev1.NodeSelectorOpIn, fmt.Sprint(cpu))),
			),
			Capacity:    capacity,
			Allocatable: allocatable,
		}
		for _, ct := range []string{packer.CapacityTypeSpot, packer.CapacityTypeOnDemand} {
			for z, zone := range Zones {
				if ct == packer.CapacityTypeSpot && z == 2 {
					continue
				}
				it.Offerings = append(it.Offerings, packer.Offering{Zone: zone, CapacityType: ct, PricePerHour: price, Available: true})
			}
		}
		out = append(out, it)
	}
	return out
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// NodePool returns the benchmark's NodePool over types, with limits of
// 10,000,000 cpu and 10,000,000 Gi of memory and, as Karpenter's test
// NodePool, the DiscoveryLabel on its nodes.
func NodePool(types []*packer.InstanceType) packer.NodePool {
	return packer.NodePool{
		Name:         NodePoolName,
		Requirements: requirements.New(must(requirements.NewRequirement(wellknown.LabelNodePool, corev1.NodeSelectorOpIn, NodePoolName))),
		Labels:       map[string]string{wellknown.LabelNodePool: NodePoolName, DiscoveryLabel: DiscoveryValue},
		Limits: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("10000000"),
			corev1.ResourceMemory: resource.MustParse("10000000Gi"),
		},
		InstanceTypes: types,
	}
}

// Input returns a packer input for pods on the benchmark's 400 types, with
// their overhead, as Karpenter's benchmark has them.
func Input(pods []*corev1.Pod, policy packer.PreferencePolicy) packer.Input {
	return packer.Input{Pods: pods, NodePools: []packer.NodePool{NodePool(InstanceTypes(400))}, PreferencePolicy: policy}
}

// InputWithoutOverhead is Input on InstanceTypesWithoutOverhead.
func InputWithoutOverhead(pods []*corev1.Pod, policy packer.PreferencePolicy) packer.Input {
	return packer.Input{Pods: pods, NodePools: []packer.NodePool{NodePool(InstanceTypesWithoutOverhead(400))}, PreferencePolicy: policy}
}

// The choices, in the order the benchmark lists them: a draw of Intn(len)
// picks the element at that index.
var (
	labelValues = []string{"a", "b", "c", "d", "e", "f", "g"}
	cpuChoices  = quantities("%dm", 100, 250, 500, 1000, 1500)
	memChoices  = quantities("%dMi", 100, 256, 512, 1024, 2048, 4096)
)

func quantities(format string, values ...int) []resource.Quantity {
	out := make([]resource.Quantity, len(values))
	for i, v := range values {
		out[i] = resource.MustParse(fmt.Sprintf(format, v))
	}
	return out
}

// A Generator makes benchmark pods from one random source, as Karpenter's
// benchmark does from its package-level source: each call draws on from
// where the previous one stopped. Pod names are unique across the calls of
// one Generator.
type Generator struct {
	rnd  *rand.Rand
	made int
}

// NewGenerator returns a Generator on a fresh source seeded with Seed.
func NewGenerator() *Generator {
	return &Generator{rnd: rand.New(rand.NewSource(Seed))}
}

func (g *Generator) labelValue() string {
	return labelValues[g.rnd.Intn(len(labelValues))]
}

// requests draws a cpu request, then a memory request.
func (g *Generator) requests() corev1.ResourceList {
	cpu := cpuChoices[g.rnd.Intn(len(cpuChoices))]
	mem := memChoices[g.rnd.Intn(len(memChoices))]
	return corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: mem}
}

// pod returns a pod named prefix-<sequence number> in the default namespace,
// with the discovery label added to labels (the map is not kept).
func (g *Generator) pod(prefix string, labels map[string]string, req corev1.ResourceList) *corev1.Pod {
	g.made++
	name := fmt.Sprintf("%s-%06d", prefix, g.made)
	all := map[string]string{DiscoveryLabel: DiscoveryValue}
	for k, v := range labels {
		all[k] = v
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: all, UID: types.UID(name)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: Image, Resources: corev1.ResourceRequirements{Requests: req},
		}}},
	}
}

func (g *Generator) generic(count int) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, count)
	for range count {
		own := g.labelValue()
		out = append(out, g.pod("generic", map[string]string{"my-label": own}, g.requests()))
	}
	return out
}

func (g *Generator) spread(count int, key, prefix string) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, count)
	for range count {
		own := g.labelValue()
		selected := g.labelValue()
		p := g.pod(prefix, map[string]string{"my-label": own}, g.requests())
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew:           1,
			TopologyKey:       key,
			WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{"my-label": selected}},
		}}
		out = append(out, p)
	}
	return out
}

// selfAffinity makes pods that require a zone with a pod of their own label
// value. The label key's spelling, "my-affininity", is the benchmark's.
func (g *Generator) selfAffinity(count int) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, count)
	for range count {
		labels := map[string]string{"my-affininity": g.labelValue()}
		p := g.pod("zone-affinity", labels, g.requests())
		p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: labels}, TopologyKey: wellknown.LabelTopologyZone,
		}}}}
		out = append(out, p)
	}
	return out
}

func (g *Generator) antiAffinity(count int) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, count)
	for range count {
		labels := map[string]string{"app": "nginx"}
		p := g.pod("host-anti", labels, g.requests())
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: labels}, TopologyKey: wellknown.LabelHostname,
		}}}}
		out = append(out, p)
	}
	return out
}

// DiversePods returns n pods as the benchmark's makeDiversePods makes them:
// n/5 generic pods, n/5 spread over zones, n/5 spread over hostnames, n/5
// with zone self-affinity and n/5 with hostname anti-affinity, in that
// order, then the remainder of n/5 as generic pods.
func (g *Generator) DiversePods(n int) []*corev1.Pod {
	per := n / 5
	pods := make([]*corev1.Pod, 0, n)
	pods = append(pods, g.generic(per)...)
	pods = append(pods, g.spread(per, wellknown.LabelTopologyZone, "zone-spread")...)
	pods = append(pods, g.spread(per, wellknown.LabelHostname, "host-spread")...)
	pods = append(pods, g.selfAffinity(per)...)
	pods = append(pods, g.antiAffinity(per)...)
	return append(pods, g.generic(n-len(pods))...)
}

// PreferencePods returns n pods as the benchmark's makePreferencePods makes
// them: all of one size, drawn once, with app=nginx, preferring test-zone-1
// (node affinity, weight 1) and preferring to avoid their own app by zone
// (weight 10, unsatisfiable past three pods) and by hostname (weight 1).
func (g *Generator) PreferencePods(n int) []*corev1.Pod {
	req := g.requests()
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nginx"}}
	pods := make([]*corev1.Pod, 0, n)
	for range n {
		p := g.pod("preference", map[string]string{"app": "nginx"}, req)
		p.Spec.Affinity = &corev1.Affinity{
			NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
				Weight: 1,
				Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: wellknown.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"test-zone-1"},
				}}},
			}}},
			PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{
				{Weight: 10, PodAffinityTerm: corev1.PodAffinityTerm{LabelSelector: sel, TopologyKey: wellknown.LabelTopologyZone}},
				{Weight: 1, PodAffinityTerm: corev1.PodAffinityTerm{LabelSelector: sel, TopologyKey: wellknown.LabelHostname}},
			}},
		}
		pods = append(pods, p)
	}
	return pods
}

// DiversePods returns the n pods the benchmark's makeDiversePods makes from
// a fresh source.
func DiversePods(n int) []*corev1.Pod { return NewGenerator().DiversePods(n) }

// PreferencePods returns the n pods the benchmark's makePreferencePods makes
// from a fresh source.
func PreferencePods(n int) []*corev1.Pod { return NewGenerator().PreferencePods(n) }
