package overlay_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stevedore-autoscaler/stevedore/api/karpenter/v1alpha1"
	"github.com/stevedore-autoscaler/stevedore/cloud/offerings"
	"github.com/stevedore-autoscaler/stevedore/scheduling/overlay"
)

// BenchmarkEvaluate evaluates three family overlays over three NodePools
// offering the whole embedded catalog, and applies them to one: the work a
// provisioning pass does when the overlays or the instance types changed
// (otherwise the provisioner's memo reuses the result).
func BenchmarkEvaluate(b *testing.B) {
	types, err := offerings.Catalog(offerings.Options{})
	if err != nil {
		b.Fatal(err)
	}
	adj := "+10%"
	var overlays []*v1alpha1.NodeOverlay
	for _, f := range []string{"m6i", "c6i", "r6i"} {
		overlays = append(overlays, &v1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: f}, Spec: v1alpha1.NodeOverlaySpec{PriceAdjustment: &adj,
			Requirements: []v1alpha1.NodeSelectorRequirement{{Key: "karpenter.k8s.aws/instance-family", Operator: corev1.NodeSelectorOpIn, Values: []string{f}}}}})
	}
	pools := []overlay.Pool{{Name: "a", InstanceTypes: types}, {Name: "b", InstanceTypes: types}, {Name: "c", InstanceTypes: types}}
	b.Logf("%d types", len(types))
	for b.Loop() {
		r := overlay.Evaluate(overlays, pools)
		r.Apply("a", types)
	}
}
