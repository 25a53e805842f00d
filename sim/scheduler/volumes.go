package scheduler

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-autoscaler/stevedore/sim/apiserver"
)

// volumeZones returns the zones the pod's bound volumes allow (nil for any),
// or an error that says why the pod cannot be scheduled (a claim that does
// not exist, volumes in zones that do not overlap).
func (b *Binder) volumeZones(ctx context.Context, pod *corev1.Pod) ([]string, error) {
	var zones []string
	constrained := false
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		pvc := &corev1.PersistentVolumeClaim{}
		if err := b.api.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: v.PersistentVolumeClaim.ClaimName}, pvc); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("persistentvolumeclaim %q not found", v.PersistentVolumeClaim.ClaimName)
			}
			return nil, err
		}
		if pvc.Spec.VolumeName == "" {
			continue
		}
		pv := &corev1.PersistentVolume{}
		if err := b.api.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("persistentvolume %q not found", pvc.Spec.VolumeName)
			}
			return nil, err
		}
		pz := pvZones(pv)
		if pz == nil {
			continue
		}
		if !constrained {
			zones, constrained = pz, true
			continue
		}
		zones = slices.DeleteFunc(zones, func(z string) bool { return !slices.Contains(pz, z) })
	}
	if constrained && len(zones) == 0 {
		return nil, fmt.Errorf("0 nodes are available: pod's volumes are in zones that do not overlap")
	}
	return zones, nil
}

// pvZones returns the zones a volume's node affinity (or zone label) allows;
// nil for any.
func pvZones(pv *corev1.PersistentVolume) []string {
	if a := pv.Spec.NodeAffinity; a != nil && a.Required != nil {
		var out []string
		for _, term := range a.Required.NodeSelectorTerms {
			for _, e := range term.MatchExpressions {
				if (e.Key == corev1.LabelTopologyZone || e.Key == corev1.LabelFailureDomainBetaZone) && e.Operator == corev1.NodeSelectorOpIn {
					out = append(out, e.Values...)
				}
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	if z := pv.Labels[corev1.LabelTopologyZone]; z != "" {
		return []string{z}
	}
	return nil
}

// bindVolumes binds the pod's unbound claims to new volumes in the zone of
// its node, as a WaitForFirstConsumer storage class's provisioner does.
func (b *Binder) bindVolumes(ctx context.Context, pod *corev1.Pod, node *corev1.Node) error {
	zone := node.Labels[corev1.LabelTopologyZone]
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		pvc := &corev1.PersistentVolumeClaim{}
		if err := b.api.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: v.PersistentVolumeClaim.ClaimName}, pvc); err != nil {
			return client.IgnoreNotFound(err)
		}
		if pvc.Spec.VolumeName != "" {
			continue
		}
		size := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
		if size.IsZero() {
			size = resource.MustParse("1Gi")
		}
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: "pvc-" + string(pvc.UID), Labels: map[string]string{corev1.LabelTopologyZone: zone}},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
				AccessModes:                   pvc.Spec.AccessModes,
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
				StorageClassName:              ptrValue(pvc.Spec.StorageClassName),
				ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID},
				NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}},
				}}}},
			},
		}
		if err := b.api.Create(ctx, pv); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("provisioning a volume for claim %s/%s: %w", pvc.Namespace, pvc.Name, err)
		}
		base := pvc.DeepCopy()
		pvc.Spec.VolumeName = pv.Name
		if err := b.api.Patch(ctx, pvc, apiserver.MergeFrom(base)); err != nil {
			return err
		}
		base = pvc.DeepCopy()
		pvc.Status.Phase = corev1.ClaimBound
		pvc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: size}
		if err := b.api.Status().Patch(ctx, pvc, apiserver.MergeFrom(base)); err != nil {
			return err
		}
	}
	return nil
}

func ptrValue(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
