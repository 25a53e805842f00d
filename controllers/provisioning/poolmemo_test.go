package provisioning

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/offerings"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/scheduling/requirements"
)

// TestPoolMemo: the memo answers as offerings.NodePool does, reuses a pool
// only for the very same NodePool object and instance type values, and
// builds it again when either is another.
func TestPoolMemo(t *testing.T) {
	typ := func(name, zone string, price float64) *packer.InstanceType {
		r, err := requirements.NewRequirement(wellknown.LabelInstanceType, corev1.NodeSelectorOpIn, name)
		if err != nil {
			t.Fatal(err)
		}
		return &packer.InstanceType{Name: name, Requirements: requirements.New(r),
			Offerings: []packer.Offering{{Zone: zone, CapacityType: wellknown.CapacityTypeOnDemand, PricePerHour: price, Available: true}}}
	}
	pool := func(types ...string) *karpv1.NodePool {
		np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
		if len(types) > 0 {
			np.Spec.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{
				{Key: wellknown.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: types}}
		}
		return np
	}
	var m PoolMemo
	check := func(step string, np *karpv1.NodePool, types []*packer.InstanceType) packer.NodePool {
		t.Helper()
		got, err := m.nodePool(np, nil, types)
		if err != nil {
			t.Fatal(err)
		}
		want, err := offerings.NodePool(np, nil, types)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: memo gave %+v, offerings.NodePool %+v", step, got, want)
		}
		return got
	}
	np := pool()
	types := []*packer.InstanceType{typ("a", "z1", 1), typ("b", "z1", 2)}
	first := check("first", np, types)
	again := check("again", np, append([]*packer.InstanceType(nil), types...))
	if &again.InstanceTypes[0] != &first.InstanceTypes[0] {
		t.Error("the same inputs built the pool again")
	}
	narrowed := check("the NodePool updated", pool("b"), types)
	if len(narrowed.InstanceTypes) != 1 {
		t.Errorf("after the NodePool changed: %d types, want 1", len(narrowed.InstanceTypes))
	}
	np = pool("b")
	if rebuilt := check("a new NodePool object", np, types); &rebuilt.InstanceTypes[0] == &narrowed.InstanceTypes[0] {
		t.Error("a new NodePool object got the pool built for another")
	}
	m.retain(nil)
	if len(m.pools) != 0 {
		t.Errorf("after its NodePool went, the memo still holds %d pools", len(m.pools))
	}
	repriced := check("new type values", np, []*packer.InstanceType{types[0], typ("b", "z1", 3)})
	if repriced.InstanceTypes[0].Offerings[0].PricePerHour != 3 {
		t.Errorf("after the types changed: price %v, want 3", repriced.InstanceTypes[0].Offerings[0].PricePerHour)
	}
	var none *PoolMemo
	if _, err := none.nodePool(np, nil, types); err != nil {
		t.Errorf("nil memo: %v", err)
	}
}
