package karpenterbench_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/scheduling/workloads/karpenterbench"
)

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
