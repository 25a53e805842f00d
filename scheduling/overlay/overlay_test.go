package overlay

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stevedore-autoscaler/stevedore/api/karpenter/v1alpha1"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/scheduling/requirements"
	"github.com/stevedore-autoscaler/stevedore/scheduling/resources"
)

// instanceType is a type of the given family offered on demand and as
// spot in zones a and b.
func instanceType(name, family string, price float64) *packer.InstanceType {
	return &packer.InstanceType{
		Name: name,
		Requirements: requirements.FromLabels(map[string]string{
			"node.kubernetes.io/instance-type":  name,
			"karpenter.k8s.aws/instance-family": family,
			"karpenter.k8s.aws/instance-cpu":    "4",
		}),
		Capacity:    resources.NewVector(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}),
		Allocatable: resources.NewVector(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3900m")}),
		Offerings: []packer.Offering{
			{Zone: "a", CapacityType: "on-demand", PricePerHour: price, Available: true},
			{Zone: "b", CapacityType: "on-demand", PricePerHour: price, Available: true},
			{Zone: "a", CapacityType: "spot", PricePerHour: price / 2, Available: true},
			{Zone: "b", CapacityType: "spot", PricePerHour: price / 2, Available: true},
		},
	}
}

type spec struct {
	weight     int32
	price      string
	adjustment string
	capacity   corev1.ResourceList
	reqs       []v1alpha1.NodeSelectorRequirement
}

func overlay(name string, s spec) *v1alpha1.NodeOverlay {
	o := &v1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.NodeOverlaySpec{Requirements: s.reqs, Capacity: s.capacity}}
	if s.weight != 0 {
		o.Spec.Weight = &s.weight
	}
	if s.price != "" {
		o.Spec.Price = &s.price
	}
	if s.adjustment != "" {
		o.Spec.PriceAdjustment = &s.adjustment
	}
	return o
}

func req(key string, op corev1.NodeSelectorOperator, values ...string) v1alpha1.NodeSelectorRequirement {
	return v1alpha1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

// prices lists "type zone capacity-type=price" for every offering.
func prices(types []*packer.InstanceType) string {
	var b strings.Builder
	for _, it := range types {
		for _, o := range it.Offerings {
			b.WriteString(it.Name + " " + o.Zone + " " + o.CapacityType + "=" + strconvF(o.PricePerHour) + "\n")
		}
	}
	return b.String()
}

func strconvF(f float64) string {
	return resource.NewMilliQuantity(int64(f*1000+0.5), resource.DecimalSI).String()
}

func TestAdjustedPrice(t *testing.T) {
	for _, tc := range []struct {
		price  float64
		change string
		want   float64
	}{
		{1, "", 1},
		{1, "0.25", 0.25},
		{1, "3", 3},
		{1, "+0.5", 1.5},
		{1, "-0.25", 0.75},
		{1, "-2", 0},
		{2, "+10%", 2.2},
		{2, "-15%", 1.7},
		{2, "-100%", 0},
		{2, "+.5", 2.5},
		{2, "junk", 2},
	} {
		if got := AdjustedPrice(tc.price, tc.change); got < tc.want-1e-9 || got > tc.want+1e-9 {
			t.Errorf("AdjustedPrice(%v, %q) = %v, want %v", tc.price, tc.change, got, tc.want)
		}
	}
}

func TestEvaluate(t *testing.T) {
	m5 := instanceType("m5.large", "m5", 1)
	c5 := instanceType("c5.large", "c5", 2)
	pool := func(name string, labels map[string]string) Pool {
		return Pool{Name: name, Labels: labels, InstanceTypes: []*packer.InstanceType{m5, c5}}
	}
	family := func(f string) v1alpha1.NodeSelectorRequirement {
		return req("karpenter.k8s.aws/instance-family", corev1.NodeSelectorOpIn, f)
	}
	for _, tc := range []struct {
		name     string
		overlays []*v1alpha1.NodeOverlay
		pools    []Pool
		// want are the prices in the first pool, as prices writes them.
		want     string
		verdicts map[string]string // name → reason ("" for valid)
	}{
		{
			name:     "no overlay changes nothing",
			pools:    []Pool{pool("default", nil)},
			want:     "m5.large a on-demand=1\nm5.large b on-demand=1\nm5.large a spot=500m\nm5.large b spot=500m\nc5.large a on-demand=2\nc5.large b on-demand=2\nc5.large a spot=1\nc5.large b spot=1\n",
			verdicts: map[string]string{},
		},
		{
			name:     "an absolute price on one family",
			overlays: []*v1alpha1.NodeOverlay{overlay("m5", spec{price: "5", reqs: []v1alpha1.NodeSelectorRequirement{family("m5")}})},
			pools:    []Pool{pool("default", nil)},
			want:     "m5.large a on-demand=5\nm5.large b on-demand=5\nm5.large a spot=5\nm5.large b spot=5\nc5.large a on-demand=2\nc5.large b on-demand=2\nc5.large a spot=1\nc5.large b spot=1\n",
			verdicts: map[string]string{"m5": ""},
		},
		{
			name:     "a percentage on spot offerings only",
			overlays: []*v1alpha1.NodeOverlay{overlay("spot", spec{adjustment: "+100%", reqs: []v1alpha1.NodeSelectorRequirement{req("karpenter.sh/capacity-type", corev1.NodeSelectorOpIn, "spot")}})},
			pools:    []Pool{pool("default", nil)},
			want:     "m5.large a on-demand=1\nm5.large b on-demand=1\nm5.large a spot=1\nm5.large b spot=1\nc5.large a on-demand=2\nc5.large b on-demand=2\nc5.large a spot=2\nc5.large b spot=2\n",
			verdicts: map[string]string{"spot": ""},
		},
		{
			name:     "an absolute adjustment in one zone of one type",
			overlays: []*v1alpha1.NodeOverlay{overlay("zone-a", spec{adjustment: "-0.5", reqs: []v1alpha1.NodeSelectorRequirement{req("topology.kubernetes.io/zone", corev1.NodeSelectorOpIn, "a"), req("node.kubernetes.io/instance-type", corev1.NodeSelectorOpIn, "c5.large")}})},
			pools:    []Pool{pool("default", nil)},
			want:     "m5.large a on-demand=1\nm5.large b on-demand=1\nm5.large a spot=500m\nm5.large b spot=500m\nc5.large a on-demand=1500m\nc5.large b on-demand=2\nc5.large a spot=500m\nc5.large b spot=1\n",
			verdicts: map[string]string{"zone-a": ""},
		},
		{
			name: "the higher weight wins whatever the names",
			overlays: []*v1alpha1.NodeOverlay{
				overlay("a-heavy", spec{weight: 10, price: "7", reqs: []v1alpha1.NodeSelectorRequirement{family("m5")}}),
				overlay("z-light", spec{weight: 1, price: "9"}),
			},
			pools:    []Pool{pool("default", nil)},
			want:     "m5.large a on-demand=7\nm5.large b on-demand=7\nm5.large a spot=7\nm5.large b spot=7\nc5.large a on-demand=9\nc5.large b on-demand=9\nc5.large a spot=9\nc5.large b spot=9\n",
			verdicts: map[string]string{"a-heavy": "", "z-light": ""},
		},
		{
			name: "same weight, same offerings: the later name wins, the other conflicts and applies nowhere",
			overlays: []*v1alpha1.NodeOverlay{
				overlay("alpha", spec{weight: 5, price: "3"}),
				overlay("beta", spec{weight: 5, price: "4", reqs: []v1alpha1.NodeSelectorRequirement{family("m5")}}),
			},
			pools:    []Pool{pool("default", nil)},
			want:     "m5.large a on-demand=4\nm5.large b on-demand=4\nm5.large a spot=4\nm5.large b spot=4\nc5.large a on-demand=2\nc5.large b on-demand=2\nc5.large a spot=1\nc5.large b spot=1\n",
			verdicts: map[string]string{"alpha": v1alpha1.ReasonConflict, "beta": ""},
		},
		{
			name: "same weight, different offerings: no conflict",
			overlays: []*v1alpha1.NodeOverlay{
				overlay("alpha", spec{weight: 5, price: "3", reqs: []v1alpha1.NodeSelectorRequirement{family("c5")}}),
				overlay("beta", spec{weight: 5, price: "4", reqs: []v1alpha1.NodeSelectorRequirement{family("m5")}}),
			},
			pools:    []Pool{pool("default", nil)},
			want:     "m5.large a on-demand=4\nm5.large b on-demand=4\nm5.large a spot=4\nm5.large b spot=4\nc5.large a on-demand=3\nc5.large b on-demand=3\nc5.large a spot=3\nc5.large b spot=3\n",
			verdicts: map[string]string{"alpha": "", "beta": ""},
		},
		{
			name: "a conflict in another NodePool keeps the overlay out of every NodePool",
			overlays: []*v1alpha1.NodeOverlay{
				overlay("alpha", spec{weight: 5, price: "3"}),
				overlay("beta", spec{weight: 5, price: "4", reqs: []v1alpha1.NodeSelectorRequirement{req("karpenter.sh/nodepool", corev1.NodeSelectorOpIn, "other")}}),
			},
			pools:    []Pool{pool("default", nil), pool("other", nil)},
			want:     "m5.large a on-demand=1\nm5.large b on-demand=1\nm5.large a spot=500m\nm5.large b spot=500m\nc5.large a on-demand=2\nc5.large b on-demand=2\nc5.large a spot=1\nc5.large b spot=1\n",
			verdicts: map[string]string{"alpha": v1alpha1.ReasonConflict, "beta": ""},
		},
		{
			name:     "a template label selects the NodePool",
			overlays: []*v1alpha1.NodeOverlay{overlay("team", spec{adjustment: "+1", reqs: []v1alpha1.NodeSelectorRequirement{req("team", corev1.NodeSelectorOpIn, "checkout")}})},
			pools:    []Pool{pool("default", map[string]string{"team": "checkout"})},
			want:     "m5.large a on-demand=2\nm5.large b on-demand=2\nm5.large a spot=1500m\nm5.large b spot=1500m\nc5.large a on-demand=3\nc5.large b on-demand=3\nc5.large a spot=2\nc5.large b spot=2\n",
			verdicts: map[string]string{"team": ""},
		},
		{
			name:     "a label the type does not define does not match In",
			overlays: []*v1alpha1.NodeOverlay{overlay("gpu", spec{price: "9", reqs: []v1alpha1.NodeSelectorRequirement{req("karpenter.k8s.aws/instance-gpu-name", corev1.NodeSelectorOpIn, "t4")}})},
			pools:    []Pool{pool("default", nil)},
			want:     "m5.large a on-demand=1\nm5.large b on-demand=1\nm5.large a spot=500m\nm5.large b spot=500m\nc5.large a on-demand=2\nc5.large b on-demand=2\nc5.large a spot=1\nc5.large b spot=1\n",
			verdicts: map[string]string{"gpu": ""},
		},
		{
			name:     "but does match DoesNotExist, and Gte on an integer label",
			overlays: []*v1alpha1.NodeOverlay{overlay("no-gpu", spec{price: "9", reqs: []v1alpha1.NodeSelectorRequirement{req("karpenter.k8s.aws/instance-gpu-name", corev1.NodeSelectorOpDoesNotExist), req("karpenter.k8s.aws/instance-cpu", requirements.OpGte, "4")}})},
			pools:    []Pool{pool("default", nil)},
			want:     "m5.large a on-demand=9\nm5.large b on-demand=9\nm5.large a spot=9\nm5.large b spot=9\nc5.large a on-demand=9\nc5.large b on-demand=9\nc5.large a spot=9\nc5.large b spot=9\n",
			verdicts: map[string]string{"no-gpu": ""},
		},
		{
			name:     "an invalid overlay applies nowhere",
			overlays: []*v1alpha1.NodeOverlay{overlay("bad", spec{price: "9", reqs: []v1alpha1.NodeSelectorRequirement{req("karpenter.k8s.aws/made-up", corev1.NodeSelectorOpExists)}})},
			pools:    []Pool{pool("default", nil)},
			want:     "m5.large a on-demand=1\nm5.large b on-demand=1\nm5.large a spot=500m\nm5.large b spot=500m\nc5.large a on-demand=2\nc5.large b on-demand=2\nc5.large a spot=1\nc5.large b spot=1\n",
			verdicts: map[string]string{"bad": v1alpha1.ReasonRuntimeValidation},
		},
		{
			name:     "weight 0 (none) sorts below every weight",
			overlays: []*v1alpha1.NodeOverlay{overlay("zz-none", spec{price: "8"}), overlay("aa-one", spec{weight: 1, price: "6", reqs: []v1alpha1.NodeSelectorRequirement{family("c5")}})},
			pools:    []Pool{pool("default", nil)},
			want:     "m5.large a on-demand=8\nm5.large b on-demand=8\nm5.large a spot=8\nm5.large b spot=8\nc5.large a on-demand=6\nc5.large b on-demand=6\nc5.large a spot=6\nc5.large b spot=6\n",
			verdicts: map[string]string{"zz-none": "", "aa-one": ""},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := prices(tc.pools[0].InstanceTypes)
			r := Evaluate(tc.overlays, tc.pools)
			if got := prices(r.Apply(tc.pools[0].Name, tc.pools[0].InstanceTypes)); got != tc.want {
				t.Errorf("prices\n%s\nwant\n%s", got, tc.want)
			}
			if after := prices(tc.pools[0].InstanceTypes); after != before {
				t.Error("Apply changed its argument")
			}
			got := map[string]string{}
			for _, v := range r.Verdicts {
				got[v.Name] = v.Reason
				if v.Valid != (v.Reason == "") {
					t.Errorf("%s: Valid %v with reason %q", v.Name, v.Valid, v.Reason)
				}
				if !v.Valid && v.Message == "" {
					t.Errorf("%s: invalid without a message", v.Name)
				}
			}
			if len(got) != len(tc.verdicts) {
				t.Errorf("verdicts %v, want %v", got, tc.verdicts)
			}
			for name, want := range tc.verdicts {
				if reason, ok := got[name]; !ok || reason != want {
					t.Errorf("%s: reason %q, want %q", name, reason, want)
				}
			}
		})
	}
}

func TestConflictNamesTheWinner(t *testing.T) {
	it := instanceType("m5.large", "m5", 1)
	r := Evaluate([]*v1alpha1.NodeOverlay{
		overlay("first", spec{weight: 3, adjustment: "+1"}),
		overlay("second", spec{weight: 3, adjustment: "+2"}),
	}, []Pool{{Name: "default", InstanceTypes: []*packer.InstanceType{it}}})
	if len(r.Verdicts) != 2 || r.Verdicts[0].Name != "first" || r.Verdicts[0].Reason != v1alpha1.ReasonConflict {
		t.Fatalf("verdicts %+v", r.Verdicts)
	}
	if !strings.Contains(r.Verdicts[0].Message, "NodeOverlay second") {
		t.Errorf("message %q does not name the overlay that wins", r.Verdicts[0].Message)
	}
}

func TestCapacity(t *testing.T) {
	gpu := corev1.ResourceName("example.com/gpu")
	nic := corev1.ResourceName("example.com/nic")
	q := func(s string) resource.Quantity { return resource.MustParse(s) }
	for _, tc := range []struct {
		name     string
		overlays []*v1alpha1.NodeOverlay
		want     map[corev1.ResourceName]int64 // on m5.large, capacity and allocatable
		conflict string
	}{
		{
			name:     "an extended resource is added to capacity and allocatable",
			overlays: []*v1alpha1.NodeOverlay{overlay("gpu", spec{capacity: corev1.ResourceList{gpu: q("2")}})},
			want:     map[corev1.ResourceName]int64{gpu: 2},
		},
		{
			name: "each resource from the highest weight that sets it",
			overlays: []*v1alpha1.NodeOverlay{
				overlay("heavy", spec{weight: 9, capacity: corev1.ResourceList{gpu: q("4")}}),
				overlay("light", spec{weight: 1, capacity: corev1.ResourceList{gpu: q("1"), nic: q("3")}}),
			},
			want: map[corev1.ResourceName]int64{gpu: 4, nic: 3},
		},
		{
			name: "same weight, same resource: conflict",
			overlays: []*v1alpha1.NodeOverlay{
				overlay("a", spec{weight: 2, capacity: corev1.ResourceList{gpu: q("1")}}),
				overlay("b", spec{weight: 2, capacity: corev1.ResourceList{gpu: q("8")}}),
			},
			want:     map[corev1.ResourceName]int64{gpu: 8},
			conflict: "a",
		},
		{
			name: "same weight, different resources: both apply",
			overlays: []*v1alpha1.NodeOverlay{
				overlay("a", spec{weight: 2, capacity: corev1.ResourceList{nic: q("1")}}),
				overlay("b", spec{weight: 2, capacity: corev1.ResourceList{gpu: q("8")}}),
			},
			want: map[corev1.ResourceName]int64{gpu: 8, nic: 1},
		},
		{
			name: "a price and a capacity overlay of the same weight do not conflict",
			overlays: []*v1alpha1.NodeOverlay{
				overlay("a", spec{weight: 2, price: "1"}),
				overlay("b", spec{weight: 2, capacity: corev1.ResourceList{gpu: q("1")}}),
			},
			want: map[corev1.ResourceName]int64{gpu: 1},
		},
		{
			name:     "requirements that miss the type add nothing",
			overlays: []*v1alpha1.NodeOverlay{overlay("c5", spec{capacity: corev1.ResourceList{gpu: q("1")}, reqs: []v1alpha1.NodeSelectorRequirement{req("karpenter.k8s.aws/instance-family", corev1.NodeSelectorOpIn, "c5")}})},
			want:     map[corev1.ResourceName]int64{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			it := instanceType("m5.large", "m5", 1)
			r := Evaluate(tc.overlays, []Pool{{Name: "default", InstanceTypes: []*packer.InstanceType{it}}})
			got := r.Apply("default", []*packer.InstanceType{it})[0]
			for _, name := range []corev1.ResourceName{gpu, nic} {
				if c, a := got.Capacity.Get(name), got.Allocatable.Get(name); c != tc.want[name] || a != c {
					t.Errorf("%s: capacity %d, allocatable %d, want %d", name, c, a, tc.want[name])
				}
			}
			if got.Capacity.Get(corev1.ResourceCPU) != it.Capacity.Get(corev1.ResourceCPU) || got.Allocatable.Get(corev1.ResourceCPU) != it.Allocatable.Get(corev1.ResourceCPU) {
				t.Error("cpu changed")
			}
			if it.Capacity.Get(gpu) != 0 {
				t.Error("Apply changed its argument")
			}
			for _, v := range r.Verdicts {
				if (v.Name == tc.conflict) != (v.Reason == v1alpha1.ReasonConflict) {
					t.Errorf("%s: reason %q", v.Name, v.Reason)
				}
			}
		})
	}
}

func TestProblems(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    *v1alpha1.NodeOverlay
		want []string // paths
	}{
		{name: "valid", o: overlay("ok", spec{weight: 10, adjustment: "-15%", reqs: []v1alpha1.NodeSelectorRequirement{req("karpenter.sh/nodepool", corev1.NodeSelectorOpIn, "default"), req("karpenter.k8s.aws/instance-family", corev1.NodeSelectorOpIn, "m5")}})},
		{name: "reserved key", o: overlay("x", spec{reqs: []v1alpha1.NodeSelectorRequirement{req("karpenter.k8s.aws/made-up", corev1.NodeSelectorOpExists)}}), want: []string{"spec.requirements[0].key"}},
		{name: "hostname", o: overlay("x", spec{reqs: []v1alpha1.NodeSelectorRequirement{req("kubernetes.io/hostname", corev1.NodeSelectorOpExists)}}), want: []string{"spec.requirements[0].key"}},
		{name: "bad value", o: overlay("x", spec{reqs: []v1alpha1.NodeSelectorRequirement{req("team", corev1.NodeSelectorOpIn, "a b")}}), want: []string{"spec.requirements[0].values[0]"}},
		{name: "NotIn without values", o: overlay("x", spec{reqs: []v1alpha1.NodeSelectorRequirement{req("team", corev1.NodeSelectorOpNotIn)}}), want: []string{"spec.requirements[0].values", "spec.requirements[0]"}},
		{name: "no capacity type", o: overlay("x", spec{reqs: []v1alpha1.NodeSelectorRequirement{req("karpenter.sh/capacity-type", corev1.NodeSelectorOpIn, "cheap")}}), want: []string{"spec.requirements[0].values"}},
		{name: "cpu capacity", o: overlay("x", spec{capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), "example.com/x": resource.MustParse("1")}}), want: []string{"spec.capacity.cpu"}},
		{name: "both prices", o: overlay("x", spec{price: "1", adjustment: "+1"}), want: []string{"spec"}},
		{name: "bad price", o: overlay("x", spec{price: "-1"}), want: []string{"spec.price"}},
		{name: "bad adjustment", o: overlay("x", spec{adjustment: "-150%"}), want: []string{"spec.priceAdjustment"}},
		{name: "weight", o: overlay("x", spec{weight: 10001}), want: []string{"spec.weight"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, p := range Problems(tc.o) {
				got = append(got, p.Path)
				if p.Message == "" || p.Fix == "" {
					t.Errorf("%s: message %q, fix %q", p.Path, p.Message, p.Fix)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("problems at %v, want %v", got, tc.want)
			}
			if (Validate(tc.o) == nil) != (len(tc.want) == 0) {
				t.Errorf("Validate = %v", Validate(tc.o))
			}
		})
	}
}

func TestOrder(t *testing.T) {
	var got []string
	for _, o := range Order([]*v1alpha1.NodeOverlay{overlay("a", spec{}), overlay("b", spec{weight: 1}), overlay("c", spec{}), overlay("d", spec{weight: 5})}) {
		got = append(got, o.Name)
	}
	if strings.Join(got, ",") != "d,b,c,a" {
		t.Errorf("order %v, want d,b,c,a", got)
	}
}
