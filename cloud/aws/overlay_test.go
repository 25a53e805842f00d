package aws

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/karpenter/v1alpha1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud"
)

// TestCreateWithCapacityOverlay: a NodeClaim that requests an extended
// resource no instance type lists cannot launch, unless a NodeOverlay added
// it (the annotation says so); then the launched NodeClaim's status counts
// the requested amount.
func TestCreateWithCapacityOverlay(t *testing.T) {
	slice := corev1.ResourceName("example.com/gpu-slice")
	withSlices := func(name string) *karpv1.NodeClaim {
		nc := claim(name, req(wellknown.LabelCapacityType, wellknown.CapacityTypeOnDemand), req(wellknown.LabelArch, wellknown.ArchAMD64))
		nc.Spec.Resources.Requests[slice] = resource.MustParse("2")
		return nc
	}
	e := newEnv(t)
	if _, err := e.p.Create(e.ctx, withSlices("plain")); !cloud.IsInsufficientCapacityError(err) {
		t.Fatalf("Create without the overlay annotation: %v, want no capacity", err)
	}
	nc := withSlices("overlaid")
	nc.Annotations = map[string]string{v1alpha1.AnnotationCapacityOverlayApplied: "true"}
	out := e.create(nc)
	if q := out.Status.Allocatable[slice]; q.Cmp(resource.MustParse("2")) != 0 {
		t.Errorf("allocatable %s = %v, want 2", slice, out.Status.Allocatable)
	}
	if q := out.Status.Capacity[slice]; q.Cmp(resource.MustParse("2")) != 0 {
		t.Errorf("capacity %s = %v, want 2", slice, out.Status.Capacity)
	}
	if out.Status.Allocatable.Cpu().IsZero() {
		t.Errorf("allocatable lost the type's own resources: %v", out.Status.Allocatable)
	}
}
