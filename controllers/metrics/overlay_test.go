package metrics

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/karpenter/v1alpha1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/scheduling/requirements"
	"github.com/stevedore-autoscaler/stevedore/state"
)

// oneType is a provider that lists m5.large at $1 on demand in zone a.
type oneType struct{ cloud.CloudProvider }

func (oneType) Name() string { return "test" }

func (oneType) GetInstanceTypes(context.Context, *karpv1.NodePool) ([]*packer.InstanceType, error) {
	return []*packer.InstanceType{{
		Name:         "m5.large",
		Requirements: requirements.FromLabels(map[string]string{wellknown.LabelInstanceType: "m5.large"}),
		Offerings:    []packer.Offering{{Zone: "a", CapacityType: wellknown.CapacityTypeOnDemand, PricePerHour: 1, Available: true}},
	}}, nil
}

// TestNodePoolCostIncludesOverlays: the NodePool cost counts a NodeClaim at
// the price its NodeOverlays give its offering, as Karpenter's does.
func TestNodePoolCostIncludesOverlays(t *testing.T) {
	m, reg := newMetrics(t)
	if _, err := m.Decorate(oneType{}, "test").GetInstanceTypes(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	st := state.NewCluster()
	m.WatchState(StateOptions{State: st, Clock: clocktesting.NewFakeClock(metav1.Now().Time)})
	st.UpdateNodePool(&karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}})
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c1", Labels: map[string]string{
		wellknown.LabelNodePool: "default", wellknown.LabelInstanceType: "m5.large",
		wellknown.LabelTopologyZone: "a", wellknown.LabelCapacityType: wellknown.CapacityTypeOnDemand,
	}}}
	nc.Status.ProviderID = "aws:///a/i-1"
	st.UpdateNodeClaim(nc)
	cost := func() float64 {
		t.Helper()
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			if f.GetName() == Namespace+"_nodepools_cost_total" {
				return f.GetMetric()[0].GetGauge().GetValue()
			}
		}
		t.Fatal("no NodePool cost")
		return 0
	}
	if got := cost(); got != 1 {
		t.Fatalf("cost without overlays = %v, want 1", got)
	}
	price := "2.5"
	st.UpdateNodeOverlay(&v1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: "o"}, Spec: v1alpha1.NodeOverlaySpec{Price: &price, Requirements: []v1alpha1.NodeSelectorRequirement{}}})
	if got := cost(); got != 2.5 {
		t.Fatalf("cost with a price overlay = %v, want 2.5", got)
	}
	st.DeleteNodeOverlay("o")
	if got := cost(); got != 1 {
		t.Fatalf("cost after the overlay is deleted = %v, want 1", got)
	}
}
