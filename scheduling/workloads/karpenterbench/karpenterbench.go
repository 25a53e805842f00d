// Package karpenterbench reproduces the workload of Karpenter's scheduling
// benchmark, so that the packer (and scripts comparing the two systems) can
// be measured on the same input: 400 instance types (with the fake
// provider's per-node overhead), one NodePool with very
// large limits, and pods in five equal groups (generic, zone spread, hostname
// spread, zone self-affinity, hostname self-anti-affinity), plus the
// preference workload. Everything is drawn from a PCG source seeded with 42,
// so the same call returns the same pods.
package karpenterbench

import (
	"fmt"
	"math/rand/v2"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/scheduling/requirements"
	"github.com/stevedore-autoscaler/stevedore/scheduling/resources"
)

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

type gen struct {
	r *rand.Rand
	n int
}

func newGen() *gen { return &gen{r: rand.New(rand.NewPCG(42, 0))} }

func (g *gen) labelValue() string {
	values := []string{"a", "b", "c", "d", "e", "f", "g"}
	return values[g.r.IntN(len(values))]
}

func (g *gen) requests() corev1.ResourceList {
	cpu := []int{100, 250, 500, 1000, 1500}
	mem := []int{100, 256, 512, 1024, 2048, 4096}
	return corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(fmt.Sprintf("%dm", cpu[g.r.IntN(len(cpu))])),
		corev1.ResourceMemory: resource.MustParse(fmt.Sprintf("%dMi", mem[g.r.IntN(len(mem))])),
	}
}

func (g *gen) pod(prefix string, labels map[string]string, req corev1.ResourceList) *corev1.Pod {
	g.n++
	name := fmt.Sprintf("%s-%06d", prefix, g.n)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: labels, UID: types.UID(name)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: req}}}},
	}
}

// DiversePods returns n pods in five equal groups, as Karpenter's
// makeDiversePods does; the remainder of n/5 is generic pods.
func DiversePods(n int) []*corev1.Pod {
	g := newGen()
	per := n / 5
	var pods []*corev1.Pod
	generic := func(count int) {
		for range count {
			pods = append(pods, g.pod("generic", map[string]string{"my-label": g.labelValue()}, g.requests()))
		}
	}
	spread := func(count int, key, prefix string) {
		for range count {
			p := g.pod(prefix, map[string]string{"my-label": g.labelValue()}, nil)
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
				MaxSkew: 1, TopologyKey: key, WhenUnsatisfiable: corev1.DoNotSchedule,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"my-label": g.labelValue()}},
			}}
			p.Spec.Containers[0].Resources.Requests = g.requests()
			pods = append(pods, p)
		}
	}
	generic(per)
	spread(per, wellknown.LabelTopologyZone, "zone-spread")
	spread(per, wellknown.LabelHostname, "host-spread")
	for range per {
		l := map[string]string{"my-affininity": g.labelValue()}
		p := g.pod("zone-affinity", l, g.requests())
		p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: l}, TopologyKey: wellknown.LabelTopologyZone,
		}}}}
		pods = append(pods, p)
	}
	for range per {
		l := map[string]string{"app": "nginx"}
		p := g.pod("host-anti", l, g.requests())
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: l}, TopologyKey: wellknown.LabelHostname,
		}}}}
		pods = append(pods, p)
	}
	generic(n - len(pods))
	return pods
}

// PreferencePods returns n identical pods (one random size) with app=nginx
// that prefer test-zone-1 (node affinity, weight 1) and prefer to avoid their
// own app by zone (weight 10, unsatisfiable past three pods) and by hostname
// (weight 1), as Karpenter's makePreferencePods does.
func PreferencePods(n int) []*corev1.Pod {
	g := newGen()
	req := g.requests()
	var pods []*corev1.Pod
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nginx"}}
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
