package catalog

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestEmbeddedCatalog(t *testing.T) {
	all, err := All()
	if err != nil {
		t.Fatalf("loading the embedded catalog: %v", err)
	}
	if len(all) != 1363 {
		t.Errorf("catalog has %d instance types, want 1363", len(all))
	}
	arches := map[string]int{}
	unpriced := 0
	for i, it := range all {
		if i > 0 && all[i-1].Name >= it.Name {
			t.Fatalf("catalog not sorted by name at %s", it.Name)
		}
		arches[it.Arch()]++
		if !it.Priced() {
			unpriced++
		}
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage} {
			a, c := it.Allocatable[name], it.Capacity[name]
			if a.Sign() <= 0 || a.Cmp(c) > 0 {
				t.Errorf("%s: %s allocatable %s, capacity %s: want 0 < allocatable <= capacity", it.Name, name, a.String(), c.String())
			}
		}
	}
	// 18 types have no us-east-1 on-demand price (HPC types, capacity-block-only types).
	if unpriced != 18 {
		t.Errorf("%d types without an on-demand price, want 18", unpriced)
	}
	if it, ok := Lookup("hpc7a.96xlarge"); !ok || it.Priced() {
		t.Errorf("hpc7a.96xlarge: found=%v, want an unpriced type", ok)
	}
	if arches["amd64"] == 0 || arches["arm64"] == 0 || arches["amd64"]+arches["arm64"] != len(all) {
		t.Errorf("architectures %v: want only amd64 and arm64, both present", arches)
	}
}

func TestLookup(t *testing.T) {
	tests := []struct {
		name      string
		cpu, mem  string // capacity
		allocCPU  string
		pods      int64
		price     float64
		arch      string
		wantFound bool
	}{
		{name: "m6i.large", cpu: "2", mem: "8Gi", allocCPU: "1930m", pods: 29, price: 0.096, arch: "amd64", wantFound: true},
		{name: "m7g.xlarge", cpu: "4", mem: "16Gi", allocCPU: "3920m", pods: 58, price: 0.1632, arch: "arm64", wantFound: true},
		{name: "no.such-type"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			it, ok := Lookup(tc.name)
			if ok != tc.wantFound {
				t.Fatalf("Lookup(%q) found=%v, want %v", tc.name, ok, tc.wantFound)
			}
			if !ok {
				return
			}
			for _, c := range []struct {
				res  corev1.ResourceName
				list corev1.ResourceList
				want string
				what string
			}{
				{corev1.ResourceCPU, it.Capacity, tc.cpu, "capacity"},
				{corev1.ResourceMemory, it.Capacity, tc.mem, "capacity"},
				{corev1.ResourceCPU, it.Allocatable, tc.allocCPU, "allocatable"},
			} {
				got := c.list[c.res]
				if want := resource.MustParse(c.want); got.Cmp(want) != 0 {
					t.Errorf("%s %s = %s, want %s", c.what, c.res, got.String(), c.want)
				}
			}
			if got := it.Allocatable[corev1.ResourcePods]; got.Value() != tc.pods {
				t.Errorf("pods = %d, want %d", got.Value(), tc.pods)
			}
			if it.OnDemandPricePerHour != tc.price {
				t.Errorf("price = %v, want %v", it.OnDemandPricePerHour, tc.price)
			}
			if it.Arch() != tc.arch {
				t.Errorf("arch = %q, want %q", it.Arch(), tc.arch)
			}
		})
	}
}

func TestParseRejectsBadRecords(t *testing.T) {
	good := `{"name":"x.large","labels":{"node.kubernetes.io/instance-type":"x.large","karpenter.k8s.aws/instance-cpu":"2","karpenter.k8s.aws/instance-memory":"8192"},"allocatable":{"cpu":"1930m","memory":"7Gi","pods":"29","ephemeral-storage":"17Gi"},"onDemandPricePerHour":0.1}`
	if _, err := Parse([]byte(good)); err != nil {
		t.Fatalf("good record rejected: %v", err)
	}
	tests := []struct {
		name, line, wantErr string
	}{
		{"unknown field", strings.Replace(good, `"name"`, `"nmae":"y","name"`, 1), "unknown field"},
		{"name label mismatch", strings.Replace(good, `"node.kubernetes.io/instance-type":"x.large"`, `"node.kubernetes.io/instance-type":"y.large"`, 1), "want the type's name"},
		{"bad quantity", strings.Replace(good, `"cpu":"1930m"`, `"cpu":"lots"`, 1), "allocatable cpu"},
		{"allocatable above capacity", strings.Replace(good, `"cpu":"1930m"`, `"cpu":"3"`, 1), "exceeds capacity"},
		{"free machine", strings.Replace(good, `0.1}`, `0}`, 1), "not positive"},
		{"negative price", strings.Replace(good, `0.1}`, `-1}`, 1), "not positive"},
		{"duplicate", good + "\n" + good, "listed twice"},
		{"missing pods", strings.Replace(good, `"pods":"29",`, ``, 1), "allocatable pods missing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.line))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Parse error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(raw); err != nil {
			b.Fatal(err)
		}
	}
}
