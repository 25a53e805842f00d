package provisioning

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/scheduling/requirements"
)

func TestWithinLimits(t *testing.T) {
	list := func(kv ...string) corev1.ResourceList {
		out := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return out
	}
	caps := map[string]corev1.ResourceList{
		"small":  list("cpu", "2", "memory", "4Gi", "nodes", "1"),
		"medium": list("cpu", "4", "memory", "8Gi", "nodes", "1"),
		"large":  list("cpu", "8", "memory", "16Gi", "nodes", "1"),
	}
	names := []string{"small", "medium", "large"}
	tests := []struct {
		name   string
		limits corev1.ResourceList
		used   corev1.ResourceList
		want   []string
		why    string // substring of the reason, when none fits
	}{
		{"no limits", nil, list("cpu", "100"), names, ""},
		{"all fit", list("cpu", "100"), list("cpu", "10"), names, ""},
		{"the large ones are dropped", list("cpu", "10"), list("cpu", "7"), []string{"small"}, ""},
		{"exactly at the limit fits", list("cpu", "9"), list("cpu", "5"), []string{"small", "medium"}, ""},
		{"memory limits too", list("memory", "20Gi"), list("memory", "10Gi"), []string{"small", "medium"}, ""},
		{"none fits", list("cpu", "10"), list("cpu", "9"), nil, "NodePool pool would exceed its cpu limit: 9 in use, 2 more for small, limit 10"},
		{"node count", list("nodes", "3"), list("nodes", "3", "cpu", "1"), nil, "its nodes limit: 3 in use, 1 more"},
		{"limits beyond int64 never bind", list("cpu", "1e30", "memory", "1e30", "nodes", "1e30"), list("cpu", "1e16", "nodes", "9223372036854775807"), names, ""},
		{"1e16 cores", list("cpu", "1e16"), list("cpu", "100"), names, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why := withinLimits("pool", tt.limits, tt.used, names, caps)
			if !slices.Equal(got, tt.want) {
				t.Errorf("fit = %v, want %v", got, tt.want)
			}
			if (tt.why == "") != (why == "") || !strings.Contains(why, tt.why) {
				t.Errorf("why = %q, want %q", why, tt.why)
			}
		})
	}
}

func TestNodeClaimRequirements(t *testing.T) {
	must := func(key string, op corev1.NodeSelectorOperator, vals ...string) requirements.Requirement {
		r, err := requirements.NewRequirement(key, op, vals...)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	reqs := requirements.New(
		must(wellknown.LabelInstanceType, corev1.NodeSelectorOpIn, "m6i.large", "c6i.large", "c6i.xlarge"),
		must(wellknown.LabelInstanceFamily, corev1.NodeSelectorOpIn, "c6i", "m6i").WithMinValues(2),
		must(wellknown.LabelHostname, corev1.NodeSelectorOpExists),
		must("example.com/gpu", corev1.NodeSelectorOpDoesNotExist),
		must(wellknown.LabelInstanceCPU, corev1.NodeSelectorOpGt, "7"),
		must(wellknown.LabelInstanceCPU, karpv1.NodeSelectorOpLte, "16"),
	)
	got := nodeClaimRequirements(reqs, []string{"c6i.large", "m6i.large"})
	byKey := map[string]int{}
	for i, r := range got {
		byKey[r.Key] = i
	}
	if _, ok := byKey[wellknown.LabelHostname]; ok {
		t.Errorf("hostname requirement written: %+v", got)
	}
	it := got[byKey[wellknown.LabelInstanceType]]
	if it.Operator != corev1.NodeSelectorOpIn || !slices.Equal(it.Values, []string{"c6i.large", "m6i.large"}) || it.MinValues != nil {
		t.Errorf("instance types = %+v, want In [c6i.large m6i.large] in that order", it)
	}
	fam := got[byKey[wellknown.LabelInstanceFamily]]
	if fam.MinValues == nil || *fam.MinValues != 2 || !slices.Equal(fam.Values, []string{"c6i", "m6i"}) {
		t.Errorf("family = %+v, want In [c6i m6i] minValues 2", fam)
	}
	if gpu := got[byKey["example.com/gpu"]]; gpu.Operator != corev1.NodeSelectorOpDoesNotExist || len(gpu.Values) != 0 {
		t.Errorf("gpu = %+v", gpu)
	}
	// Bounds are written inclusive, as Karpenter writes them: Gt 7 is Gte 8.
	var bounds []string
	for _, r := range got {
		if r.Key == wellknown.LabelInstanceCPU {
			bounds = append(bounds, string(r.Operator)+" "+strings.Join(r.Values, ","))
		}
	}
	if !slices.Equal(bounds, []string{"Gte 8", "Lte 16"}) {
		t.Errorf("instance-cpu written as %q, want [Gte 8, Lte 16]", bounds)
	}
	if len(got) != 5 {
		t.Errorf("%d requirements, want 5: %+v", len(got), got)
	}
}
