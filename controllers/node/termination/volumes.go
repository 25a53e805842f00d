package termination

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// pendingVolumeAttachments returns the names of the node's VolumeAttachments
// that termination waits for. Attachments of volumes that pods staying on the
// node still use (pods that are not drained, see mustLeave) are left out:
// they detach only with the instance.
func (r *Reconciler) pendingVolumeAttachments(ctx context.Context, node *corev1.Node) ([]string, error) {
	// VolumeAttachments have no server-side field selector on spec.nodeName,
	// and a node has few of them; list and filter.
	list := &storagev1.VolumeAttachmentList{}
	if err := r.kube.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing volume attachments: %w", err)
	}
	var onNode []*storagev1.VolumeAttachment
	for i := range list.Items {
		if list.Items[i].Spec.NodeName == node.Name {
			onNode = append(onNode, &list.Items[i])
		}
	}
	if len(onNode) == 0 {
		return nil, nil
	}
	staying, err := r.volumesOfStayingPods(ctx, node)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, va := range onNode {
		if pv := va.Spec.Source.PersistentVolumeName; pv != nil && staying[*pv] {
			continue
		}
		names = append(names, va.Name)
	}
	slices.Sort(names)
	return names, nil
}

// volumesOfStayingPods returns the names of the persistent volumes bound to
// the claims of the node's pods that are not drained.
func (r *Reconciler) volumesOfStayingPods(ctx context.Context, node *corev1.Node) (map[string]bool, error) {
	pods := &corev1.PodList{}
	if err := r.kube.List(ctx, pods, client.MatchingFields{podNodeNameField: node.Name}); err != nil {
		return nil, fmt.Errorf("listing pods of node %s: %w", node.Name, err)
	}
	now := r.clock.Now()
	pvs := map[string]bool{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName != node.Name || mustLeave(p, now) ||
			p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim == nil {
				continue
			}
			pvc := &corev1.PersistentVolumeClaim{}
			err := r.kube.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: v.PersistentVolumeClaim.ClaimName}, pvc)
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("getting claim %s/%s: %w", p.Namespace, v.PersistentVolumeClaim.ClaimName, err)
			}
			if pvc.Spec.VolumeName != "" {
				pvs[pvc.Spec.VolumeName] = true
			}
		}
	}
	return pvs, nil
}
