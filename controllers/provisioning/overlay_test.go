package provisioning

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/karpenter/v1alpha1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/scheduling/requirements"
	"github.com/stevedore-autoscaler/stevedore/state"
)

// twoTypes is a cloud provider that lists m5.large ($1) and c5.large ($2)
// for every NodePool.
type twoTypes struct{ cloud.CloudProvider }

func (twoTypes) Name() string { return "test" }

func (twoTypes) GetSupportedNodeClasses() []schema.GroupVersionKind {
	return []schema.GroupVersionKind{awsv1.GroupVersion.WithKind("EC2NodeClass")}
}

func (twoTypes) GetInstanceTypes(context.Context, *karpv1.NodePool) ([]*packer.InstanceType, error) {
	var out []*packer.InstanceType
	for i, name := range []string{"m5.large", "c5.large"} {
		out = append(out, &packer.InstanceType{
			Name:         name,
			Requirements: requirements.FromLabels(map[string]string{wellknown.LabelInstanceType: name}),
			Offerings:    []packer.Offering{{Zone: "a", CapacityType: "on-demand", PricePerHour: float64(i + 1), Available: true}},
		})
	}
	return out, nil
}

// TestLaunchablePoolsApplyOverlays: the snapshot's NodeOverlays change the
// prices of the pools' instance types; without overlays they are the
// provider's.
func TestLaunchablePoolsApplyOverlays(t *testing.T) {
	st := state.NewCluster()
	nc := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	nc.Status.Conditions = []metav1.Condition{{Type: awsv1.ConditionTypeReady, Status: metav1.ConditionTrue, Reason: "Ready"}}
	st.UpdateEC2NodeClass(nc)
	st.UpdateNodePool(&karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{
		Spec: karpv1.NodeClaimTemplateSpec{NodeClassRef: &karpv1.NodeClassReference{Group: wellknown.GroupAWS, Kind: "EC2NodeClass", Name: "default"}},
	}}})
	price := func() map[string]float64 {
		pools, skipped := LaunchablePools(context.Background(), twoTypes{}, st.Snapshot(time.Unix(0, 0)))
		if len(pools) != 1 || len(skipped) != 0 {
			t.Fatalf("pools %d, skipped %+v", len(pools), skipped)
		}
		out := map[string]float64{}
		for _, it := range pools[0].InstanceTypes {
			out[it.Name] = it.Offerings[0].PricePerHour
		}
		return out
	}
	if got := price(); got["m5.large"] != 1 || got["c5.large"] != 2 {
		t.Fatalf("prices without overlays %v", got)
	}
	adj := "+300%"
	st.UpdateNodeOverlay(&v1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: "m5"}, Spec: v1alpha1.NodeOverlaySpec{
		PriceAdjustment: &adj,
		Requirements:    []v1alpha1.NodeSelectorRequirement{{Key: wellknown.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large"}}},
	}})
	if got := price(); got["m5.large"] != 4 || got["c5.large"] != 2 {
		t.Fatalf("prices with the overlay %v, want m5.large 4 and c5.large 2", got)
	}
	// A memo reuses the overlaid types while nothing changed, so that the
	// pools built from them are reused too.
	var memo PoolMemo
	snap := st.Snapshot(time.Unix(0, 0))
	first, _ := memo.LaunchablePools(context.Background(), sameTypes, snap)
	again, _ := memo.LaunchablePools(context.Background(), sameTypes, st.Snapshot(time.Unix(1, 0)))
	if len(first) != 1 || len(again) != 1 || !slices.Equal(first[0].InstanceTypes, again[0].InstanceTypes) {
		t.Fatal("the memo built the overlaid types again with nothing changed")
	}
	if first[0].InstanceTypes[0].Offerings[0].PricePerHour != 4 {
		t.Fatalf("memo's m5.large price %v, want 4", first[0].InstanceTypes[0].Offerings[0].PricePerHour)
	}
	st.DeleteNodeOverlay("m5")
	if got := price(); got["m5.large"] != 1 {
		t.Fatalf("prices after the overlay is deleted %v", got)
	}
	after, _ := memo.LaunchablePools(context.Background(), sameTypes, st.Snapshot(time.Unix(2, 0)))
	if after[0].InstanceTypes[0].Offerings[0].PricePerHour != 1 {
		t.Fatalf("memo kept the deleted overlay's price: %v", after[0].InstanceTypes[0].Offerings[0].PricePerHour)
	}
}

// sameTypes lists the same instance type values on every call, as the
// cloud provider does while nothing changes.
var sameTypes = func() fixedTypes {
	its, _ := twoTypes{}.GetInstanceTypes(context.Background(), nil)
	return fixedTypes{types: its}
}()

type fixedTypes struct {
	twoTypes
	types []*packer.InstanceType
}

func (f fixedTypes) GetInstanceTypes(context.Context, *karpv1.NodePool) ([]*packer.InstanceType, error) {
	return f.types, nil
}

func TestMarkOverlays(t *testing.T) {
	pool := &packer.NodePool{InstanceTypes: []*packer.InstanceType{
		{Name: "plain"}, {Name: "cheaper", PriceOverlaid: true}, {Name: "devices", CapacityOverlaid: true},
	}}
	for _, tc := range []struct {
		names []string
		want  map[string]string
	}{
		{[]string{"plain"}, map[string]string{}},
		{[]string{"plain", "cheaper"}, map[string]string{v1alpha1.AnnotationPriceOverlayApplied: "true"}},
		{[]string{"devices", "cheaper"}, map[string]string{v1alpha1.AnnotationPriceOverlayApplied: "true", v1alpha1.AnnotationCapacityOverlayApplied: "true"}},
	} {
		nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{}}}
		MarkOverlays(nc, pool, tc.names)
		if !maps.Equal(nc.Annotations, tc.want) {
			t.Errorf("%v: annotations %v, want %v", tc.names, nc.Annotations, tc.want)
		}
	}
}
