package provisioning

import (
	"context"
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
	st.DeleteNodeOverlay("m5")
	if got := price(); got["m5.large"] != 1 {
		t.Fatalf("prices after the overlay is deleted %v", got)
	}
}
