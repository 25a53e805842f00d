package karpenterbench_test

import (
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/scheduling/workloads/karpenterbench"
)

// fingerprint describes a pod by what the benchmark draws for it and what
// its group adds: "<cpu>m <memory>Mi <labels> <constraint>", the labels
// sorted as key=value, the constraint "-" or kind:topology key:selector.
func fingerprint(p *corev1.Pod) string {
	join := func(m map[string]string) string {
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(m)) {
			kv = append(kv, k+"="+m[k])
		}
		return strings.Join(kv, ",")
	}
	constraint := "-"
	if tsc := p.Spec.TopologySpreadConstraints; len(tsc) > 0 {
		constraint = "spread:" + tsc[0].TopologyKey + ":" + join(tsc[0].LabelSelector.MatchLabels)
	} else if a := p.Spec.Affinity; a != nil && a.PodAffinity != nil {
		t := a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0]
		constraint = "affinity:" + t.TopologyKey + ":" + join(t.LabelSelector.MatchLabels)
	} else if a != nil && a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
		t := a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0]
		constraint = "anti:" + t.TopologyKey + ":" + join(t.LabelSelector.MatchLabels)
	}
	req := p.Spec.Containers[0].Resources.Requests
	return fmt.Sprintf("%dm %dMi %s %s", req.Cpu().MilliValue(), req.Memory().Value()>>20, join(p.Labels), constraint)
}

type summary struct {
	n       int
	cpuM    int64
	memMi   int64
	fnvHash uint64 // FNV-1a (64 bits) over the fingerprints, each ended by a newline
}

func (s summary) String() string {
	return fmt.Sprintf("%d pods, %dm cpu, %dMi memory, FNV-1a %#016x", s.n, s.cpuM, s.memMi, s.fnvHash)
}

func summarize(pods []*corev1.Pod) summary {
	h := fnv.New64a()
	s := summary{n: len(pods)}
	for _, p := range pods {
		h.Write([]byte(fingerprint(p) + "\n"))
		req := p.Spec.Containers[0].Resources.Requests
		s.cpuM += req.Cpu().MilliValue()
		s.memMi += req.Memory().Value() >> 20
	}
	s.fnvHash = h.Sum64()
	return s
}

// The expected values below are Karpenter v1.14.1's benchmark pods, not
// anything this package computed. They were found twice, independently of
// this package: once by a separate program that replays the benchmark's draw
// order (per group, as the package documentation lists it) on a math/rand
// source seeded with 42, and once by running the benchmark's own
// makeDiversePods and makePreferencePods at v1.14.1 (under its
// test_performance build tag, resetting its source before each call) and
// printing the same fingerprints; the two agreed on every line and sum. A
// generator drawing from another source or in another order fails them: the
// previous one, on a PCG source, gave other pods from the very first one.

// TestFirstDiversePods lists the ten pods of makeDiversePods(10): two of
// each group.
func TestFirstDiversePods(t *testing.T) {
	want := []string{
		"500m 512Mi my-label=f,testing/cluster=unspecified -",
		"1000m 256Mi my-label=b,testing/cluster=unspecified -",
		"1000m 256Mi my-label=g,testing/cluster=unspecified spread:topology.kubernetes.io/zone:my-label=e",
		"100m 2048Mi my-label=a,testing/cluster=unspecified spread:topology.kubernetes.io/zone:my-label=d",
		"500m 4096Mi my-label=f,testing/cluster=unspecified spread:kubernetes.io/hostname:my-label=g",
		"500m 100Mi my-label=d,testing/cluster=unspecified spread:kubernetes.io/hostname:my-label=f",
		"100m 2048Mi my-affininity=f,testing/cluster=unspecified affinity:topology.kubernetes.io/zone:my-affininity=f",
		"500m 256Mi my-affininity=a,testing/cluster=unspecified affinity:topology.kubernetes.io/zone:my-affininity=a",
		"500m 4096Mi app=nginx,testing/cluster=unspecified anti:kubernetes.io/hostname:app=nginx",
		"500m 512Mi app=nginx,testing/cluster=unspecified anti:kubernetes.io/hostname:app=nginx",
	}
	pods := karpenterbench.DiversePods(10)
	if len(pods) != len(want) {
		t.Fatalf("%d pods, want %d", len(pods), len(want))
	}
	for i, p := range pods {
		if got := fingerprint(p); got != want[i] {
			t.Errorf("pod %d (%s): %q, want %q", i, p.Name, got, want[i])
		}
	}
}

// TestDiversePodsSums checks whole workloads by their total requests and a
// hash of every pod's fingerprint. 1,003 has three generic pods after the
// five groups; 100,000 is the largest size the packer's benchmark packs.
func TestDiversePodsSums(t *testing.T) {
	tests := []summary{
		{n: 10, cpuM: 5200, memMi: 14180, fnvHash: 0x701b56a4dbcc7695},
		{n: 1000, cpuM: 663350, memMi: 1341084, fnvHash: 0x52eeb5fb32d94747},
		{n: 1003, cpuM: 667350, memMi: 1346204, fnvHash: 0xe4624bc81f9c7fe5},
		{n: 2000, cpuM: 1319500, memMi: 2769052, fnvHash: 0xfeffef03d18d96f5},
		{n: 100000, cpuM: 66953700, memMi: 133800264, fnvHash: 0x527d93bbd3a3603a},
	}
	for _, want := range tests {
		t.Run(fmt.Sprint(want.n), func(t *testing.T) {
			if testing.Short() && want.n > 2000 {
				t.Skip("makes 100,000 pods")
			}
			if got := summarize(karpenterbench.DiversePods(want.n)); got != want {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

// TestGeneratorContinuesTheSource checks that a Generator's second call
// draws on where the first stopped, as the benchmark's second
// makeDiversePods call in one process does: here makeDiversePods(1) and then
// makeDiversePods(50), the first two benchmarks when each is called once.
func TestGeneratorContinuesTheSource(t *testing.T) {
	g := karpenterbench.NewGenerator()
	first := g.DiversePods(1)
	second := g.DiversePods(50)
	want := summary{n: 50, cpuM: 34750, memMi: 70532, fnvHash: 0x208c8bb9a5857a27}
	if got := summarize(second); got != want {
		t.Errorf("second call: got %v, want %v", got, want)
	}
	names := map[string]bool{}
	for _, p := range append(first, second...) {
		if names[p.Name] {
			t.Errorf("name %s made twice", p.Name)
		}
		names[p.Name] = true
	}
}

// TestPreferencePods checks the preference workload: every pod of the one
// size drawn first from the fresh source (100m, 4096Mi), and its node
// preference and pod anti-preferences with their weights.
func TestPreferencePods(t *testing.T) {
	pods := karpenterbench.PreferencePods(4000)
	if len(pods) != 4000 {
		t.Fatalf("%d pods", len(pods))
	}
	for _, p := range pods {
		if got, want := fingerprint(p), "100m 4096Mi app=nginx,testing/cluster=unspecified -"; got != want {
			t.Fatalf("%s: %q, want %q", p.Name, got, want)
		}
	}
	a := pods[0].Spec.Affinity
	node := a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution
	if len(node) != 1 || node[0].Weight != 1 || fmt.Sprint(node[0].Preference.MatchExpressions) != fmt.Sprint([]corev1.NodeSelectorRequirement{{Key: wellknown.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"test-zone-1"}}}) {
		t.Errorf("node preference %+v", node)
	}
	var anti []string
	for _, w := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
		anti = append(anti, fmt.Sprintf("%d %s %v", w.Weight, w.PodAffinityTerm.TopologyKey, w.PodAffinityTerm.LabelSelector.MatchLabels))
	}
	if want := []string{"10 topology.kubernetes.io/zone map[app:nginx]", "1 kubernetes.io/hostname map[app:nginx]"}; !slices.Equal(anti, want) {
		t.Errorf("anti-preferences %q, want %q", anti, want)
	}
	if a.PodAffinity != nil || len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
		t.Errorf("unexpected required terms: %+v", a)
	}
}

// TestInstanceTypes checks types of the fake provider's list against what
// its InstanceTypes(400) gives: capacity, allocatable after the 100m/10Mi
// reservation, price, offerings in the provider's order, and its size,
// special and integer labels (large from 5 vCPU on).
func TestInstanceTypes(t *testing.T) {
	types := karpenterbench.InstanceTypes(400)
	if len(types) != 400 {
		t.Fatalf("%d types", len(types))
	}
	tests := []struct {
		i                  int
		name               string
		cpuM, memMi, pods  int64
		allocCPUM, allocMi int64
		price              float64
		size, special      string
	}{
		{0, "fake-it-0", 1000, 2048, 10, 900, 2038, 0.1 + 0.1*float64(2<<30)/1e9, "small", ""},
		{3, "fake-it-3", 4000, 8192, 40, 3900, 8182, 0.4 + 0.1*float64(8<<30)/1e9, "small", ""},
		{4, "fake-it-4", 5000, 10240, 50, 4900, 10230, 0.5 + 0.1*float64(10<<30)/1e9, "large", "optional"},
		{399, "fake-it-399", 400000, 819200, 4000, 399900, 819190, 40 + 0.1*float64(800<<30)/1e9, "large", "optional"},
	}
	for _, tt := range tests {
		it := types[tt.i]
		if it.Name != tt.name {
			t.Errorf("type %d named %s, want %s", tt.i, it.Name, tt.name)
		}
		gotCap := []int64{it.Capacity.Get(corev1.ResourceCPU), it.Capacity.Get(corev1.ResourceMemory) >> 20, it.Capacity.Get(corev1.ResourcePods)}
		if want := []int64{tt.cpuM, tt.memMi, tt.pods}; !slices.Equal(gotCap, want) {
			t.Errorf("%s capacity (m, Mi, pods) %v, want %v", it.Name, gotCap, want)
		}
		gotAlloc := []int64{it.Allocatable.Get(corev1.ResourceCPU), it.Allocatable.Get(corev1.ResourceMemory) >> 20, it.Allocatable.Get(corev1.ResourcePods)}
		if want := []int64{tt.allocCPUM, tt.allocMi, tt.pods}; !slices.Equal(gotAlloc, want) {
			t.Errorf("%s allocatable (m, Mi, pods) %v, want %v", it.Name, gotAlloc, want)
		}
		var offers []string
		for _, o := range it.Offerings {
			if o.PricePerHour != tt.price || !o.Available {
				t.Errorf("%s offering %+v, want price %v, available", it.Name, o, tt.price)
			}
			offers = append(offers, o.CapacityType+"/"+o.Zone)
		}
		if want := []string{"spot/test-zone-1", "spot/test-zone-2", "on-demand/test-zone-1", "on-demand/test-zone-2", "on-demand/test-zone-3"}; !slices.Equal(offers, want) {
			t.Errorf("%s offerings %v, want %v", it.Name, offers, want)
		}
		labels := map[string]string{}
		for r := range it.Requirements.All() {
			if r.Len() > 0 {
				labels[r.Key()] = strings.Join(slices.Collect(r.Values()), ",")
			} else if r.AllowsAbsent() {
				labels[r.Key()] = "(absent)"
			}
		}
		want := map[string]string{
			wellknown.LabelInstanceType: tt.name,
			wellknown.LabelArch:         "amd64",
			wellknown.LabelOS:           "darwin,linux,windows",
			karpenterbench.LabelSize:    tt.size,
			karpenterbench.LabelSpecial: tt.special,
			karpenterbench.LabelInteger: fmt.Sprint(tt.cpuM / 1000),
		}
		if tt.special == "" {
			want[karpenterbench.LabelSpecial] = "(absent)"
		}
		if !maps.Equal(labels, want) {
			t.Errorf("%s requirements %v, want %v", it.Name, labels, want)
		}
	}
	without := karpenterbench.InstanceTypesWithoutOverhead(1)[0]
	if without.Allocatable.String() != without.Capacity.String() {
		t.Errorf("without overhead: allocatable %v, capacity %v", without.Allocatable, without.Capacity)
	}
}

// TestWorkloadsPack packs both workloads on the benchmark's NodePool, so a
// change to the pods or types that leaves a pod without a place fails here
// and not only in the benchmarks.
func TestWorkloadsPack(t *testing.T) {
	for name, pods := range map[string][]*corev1.Pod{
		"diverse":    karpenterbench.DiversePods(200),
		"preference": karpenterbench.PreferencePods(200),
	} {
		r := packer.Solve(karpenterbench.Input(pods, packer.PreferenceScore))
		if len(r.Unschedulable) > 0 || len(r.Ignored) > 0 {
			t.Errorf("%s: %d unschedulable, %d ignored", name, len(r.Unschedulable), len(r.Ignored))
		}
	}
}
