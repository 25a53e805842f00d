package offerings

import (
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/catalog"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
)

func catalogType(name, arch, category string, generation int, cpu int64, price float64) catalog.InstanceType {
	labels := map[string]string{
		wellknown.LabelInstanceType:       name,
		wellknown.LabelArch:               arch,
		wellknown.LabelInstanceCategory:   category,
		wellknown.LabelInstanceGeneration: strconv.Itoa(generation),
		wellknown.LabelInstanceCPU:        strconv.FormatInt(cpu, 10),
	}
	alloc := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(cpu*1000-70, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(cpu*3<<30, resource.BinarySI),
		corev1.ResourcePods:   *resource.NewQuantity(29, resource.DecimalSI),
	}
	return catalog.InstanceType{Name: name, Labels: labels, Allocatable: alloc, Capacity: alloc, OnDemandPricePerHour: price}
}

var small = []catalog.InstanceType{
	catalogType("c5.large", "amd64", "c", 5, 2, 0.085),
	catalogType("c6g.large", "arm64", "c", 6, 2, 0.068),
	catalogType("m6i.large", "amd64", "m", 6, 2, 0.096),
	catalogType("r7i.large", "amd64", "r", 7, 2, 0.1323),
	catalogType("t3.large", "amd64", "t", 3, 2, 0.0832),
	catalogType("hpc7g.4xlarge", "arm64", "hpc", 7, 16, 0), // not sold on demand
}

func TestFromCatalog(t *testing.T) {
	types, err := FromCatalog(small, Options{Zones: []string{"z1", "z2"}, SpotPriceFraction: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if len(types) != len(small) {
		t.Fatalf("%d types, want %d", len(types), len(small))
	}
	m6i := types[2]
	if m6i.Name != "m6i.large" || m6i.Allocatable.CPU != 1930 || m6i.Allocatable.Memory != 6<<30 || m6i.Allocatable.Pods != 29 {
		t.Errorf("m6i.large: %+v", m6i)
	}
	want := []packer.Offering{
		{Zone: "z1", CapacityType: "on-demand", PricePerHour: 0.096, Available: true},
		{Zone: "z1", CapacityType: "spot", PricePerHour: 0.048, Available: true},
		{Zone: "z2", CapacityType: "on-demand", PricePerHour: 0.096, Available: true},
		{Zone: "z2", CapacityType: "spot", PricePerHour: 0.048, Available: true},
	}
	if !reflect.DeepEqual(m6i.Offerings, want) {
		t.Errorf("offerings %+v, want %+v", m6i.Offerings, want)
	}
	labels := m6i.Requirements.Labels()
	if labels[wellknown.LabelOS] != "linux" || labels[wellknown.LabelTopologyRegion] != "us-east-1" || labels[wellknown.LabelInstanceCategory] != "m" {
		t.Errorf("requirements %v", m6i.Requirements)
	}
	if m6i.Requirements.Has(wellknown.LabelTopologyZone) || m6i.Requirements.Has(wellknown.LabelCapacityType) {
		t.Errorf("zone and capacity type belong to offerings, not requirements: %v", m6i.Requirements)
	}
	if hpc := types[5]; len(hpc.Offerings) != 0 {
		t.Errorf("an unpriced type got offerings %v", hpc.Offerings)
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, o := range []Options{{SpotPriceFraction: -0.1}, {SpotPriceFraction: 1.5}, {Zones: []string{"a", "a"}}, {Zones: []string{""}}} {
		if _, err := FromCatalog(small, o); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
	d := Options{}.withDefaults()
	if d.Region != "us-east-1" || d.SpotPriceFraction != 0.35 || strings.Join(d.Zones, ",") != "us-east-1a,us-east-1b,us-east-1c" {
		t.Errorf("defaults %+v", d)
	}
}

func req(key string, op corev1.NodeSelectorOperator, values ...string) karpv1.NodeSelectorRequirementWithMinValues {
	return karpv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values}
}

func TestNodePool(t *testing.T) {
	types, err := FromCatalog(small, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		reqs      []karpv1.NodeSelectorRequirementWithMinValues
		labels    map[string]karpv1.LabelValue
		wantTypes string
		// wantOfferings is the number of offerings of the first type.
		wantOfferings int
	}{
		{name: "no requirements: every priced type", wantTypes: "c5.large c6g.large m6i.large r7i.large t3.large", wantOfferings: 6},
		{name: "spot-mix default", reqs: []karpv1.NodeSelectorRequirementWithMinValues{
			req(wellknown.LabelCapacityType, corev1.NodeSelectorOpIn, "spot", "on-demand"),
			req(wellknown.LabelArch, corev1.NodeSelectorOpIn, "amd64", "arm64"),
			req(wellknown.LabelInstanceCategory, corev1.NodeSelectorOpIn, "c", "m", "r"),
			req(wellknown.LabelInstanceGeneration, corev1.NodeSelectorOpGt, "5"),
		}, wantTypes: "c6g.large m6i.large r7i.large", wantOfferings: 6},
		{name: "capacity type limits offerings", reqs: []karpv1.NodeSelectorRequirementWithMinValues{
			req(wellknown.LabelCapacityType, corev1.NodeSelectorOpIn, "on-demand"),
			req(wellknown.LabelInstanceType, corev1.NodeSelectorOpIn, "m6i.large", "m6i.xlarge"),
		}, wantTypes: "m6i.large", wantOfferings: 3},
		{name: "zone limits offerings", reqs: []karpv1.NodeSelectorRequirementWithMinValues{
			req(wellknown.LabelTopologyZone, corev1.NodeSelectorOpNotIn, "us-east-1a"),
			req(wellknown.LabelArch, corev1.NodeSelectorOpIn, "arm64"),
		}, wantTypes: "c6g.large", wantOfferings: 4},
		{name: "unknown zone leaves nothing", reqs: []karpv1.NodeSelectorRequirementWithMinValues{
			req(wellknown.LabelTopologyZone, corev1.NodeSelectorOpIn, "eu-west-1a"),
		}},
		{name: "a label types lack fails Exists", reqs: []karpv1.NodeSelectorRequirementWithMinValues{
			req(wellknown.LabelInstanceGPUCount, corev1.NodeSelectorOpExists),
		}},
		{name: "template labels do not restrict types", labels: map[string]karpv1.LabelValue{"team": "checkout"},
			wantTypes: "c5.large c6g.large m6i.large r7i.large t3.large", wantOfferings: 6},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "pool"}}
			np.Spec.Template.Spec.Requirements = tc.reqs
			np.Spec.Template.Metadata.Labels = tc.labels
			pool, err := NodePool(np, nil, types)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, it := range pool.InstanceTypes {
				names = append(names, it.Name)
			}
			if got := strings.Join(names, " "); got != tc.wantTypes {
				t.Fatalf("types %q, want %q", got, tc.wantTypes)
			}
			if len(names) > 0 && len(pool.InstanceTypes[0].Offerings) != tc.wantOfferings {
				t.Errorf("offerings %v, want %d", pool.InstanceTypes[0].Offerings, tc.wantOfferings)
			}
		})
	}
	if len(types[0].Offerings) != 6 {
		t.Error("NodePool modified the shared instance types")
	}
}

func TestNodePoolFields(t *testing.T) {
	two := 2
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "stateful"}}
	np.Spec.Weight = new(int32(20))
	np.Spec.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200")}
	np.Spec.Template.Metadata.Labels = map[string]karpv1.LabelValue{"workload": "stateful"}
	np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "workload", Value: "stateful", Effect: corev1.TaintEffectNoSchedule}}
	np.Spec.Template.Spec.StartupTaints = []corev1.Taint{{Key: "agent", Effect: corev1.TaintEffectNoExecute}}
	r := req(wellknown.LabelInstanceFamily, corev1.NodeSelectorOpIn, "m6i", "c6g", "r7i")
	r.MinValues = &two
	np.Spec.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{r}
	pool, err := NodePool(np, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if pool.Name != "stateful" || pool.Weight != 20 || pool.Limits.Cpu().String() != "200" ||
		len(pool.Taints) != 1 || len(pool.StartupTaints) != 1 || pool.Labels["workload"] != "stateful" || pool.Labels[wellknown.LabelNodePool] != "stateful" {
		t.Errorf("pool %+v", pool)
	}
	family, ok := pool.Requirements.Get(wellknown.LabelInstanceFamily)
	if n, has := family.MinValues(); !ok || !has || n != 2 {
		t.Errorf("minValues not carried: %v", pool.Requirements)
	}
	for key, want := range map[string]string{"workload": "stateful", wellknown.LabelNodePool: "stateful"} {
		if err := pool.Requirements.Matches(map[string]string{key: "other"}); err == nil {
			t.Errorf("requirements %v allow %s=other, want only %s", pool.Requirements, key, want)
		}
	}
	np.Spec.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{req("x", corev1.NodeSelectorOpGt, "a")}
	if _, err := NodePool(np, nil, nil); err == nil || !strings.Contains(err.Error(), "NodePool stateful") {
		t.Errorf("bad requirement: %v", err)
	}
}

func TestCatalogPools(t *testing.T) {
	types, err := Catalog(Options{})
	if err != nil {
		t.Fatal(err)
	}
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	np.Spec.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{
		req(wellknown.LabelCapacityType, corev1.NodeSelectorOpIn, "spot", "on-demand"),
		req(wellknown.LabelArch, corev1.NodeSelectorOpIn, "amd64", "arm64"),
		req(wellknown.LabelInstanceCategory, corev1.NodeSelectorOpIn, "c", "m", "r"),
		req(wellknown.LabelInstanceGeneration, corev1.NodeSelectorOpGt, "5"),
	}
	pool, err := NodePool(np, nil, types)
	if err != nil {
		t.Fatal(err)
	}
	if len(pool.InstanceTypes) < 100 {
		t.Fatalf("only %d catalog types for a c/m/r generation>5 pool", len(pool.InstanceTypes))
	}
	for _, it := range pool.InstanceTypes {
		l := it.Requirements.Labels()
		gen, _ := strconv.Atoi(l[wellknown.LabelInstanceGeneration])
		if !strings.Contains("cmr", l[wellknown.LabelInstanceCategory]) || gen <= 5 {
			t.Errorf("%s: category %s generation %d", it.Name, l[wellknown.LabelInstanceCategory], gen)
		}
		od, _ := CheapestOffering(&packer.InstanceType{Offerings: it.Offerings[:1]})
		spot, _ := CheapestOffering(it)
		if math.Abs(spot-od*DefaultSpotPriceFraction) > 1e-12 {
			t.Errorf("%s: spot %v, on-demand %v", it.Name, spot, od)
		}
	}
}
