package lifecycle

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
)

const finalizer = wellknown.FinalizerTermination

// register matches a launched NodeClaim with its Node and hands the NodeClaim's
// configuration to it. Until the Node appears it does nothing; liveness
// deletes a NodeClaim whose node never comes.
func (r *Reconciler) register(ctx context.Context, nc *karpv1.NodeClaim) error {
	if isTrue(nc, karpv1.ConditionTypeRegistered) {
		return nil
	}
	nodes, err := r.nodesFor(ctx, nc.Status.ProviderID)
	if err != nil {
		return err
	}
	switch len(nodes) {
	case 0:
		return r.patchStatus(ctx, nc, func(nc *karpv1.NodeClaim) {
			r.setCondition(nc, karpv1.ConditionTypeRegistered, metav1.ConditionUnknown, ReasonNodeNotFound, "waiting for the node to join the cluster")
		})
	case 1:
	default:
		names := make([]string, 0, len(nodes))
		for _, n := range nodes {
			names = append(names, n.Name)
		}
		msg := fmt.Sprintf("nodes %v all have provider ID %s; delete the ones that are not this instance's", names, nc.Status.ProviderID)
		r.event(nc, corev1.EventTypeWarning, ReasonMultipleNodesFound, "Register", "%s", msg)
		return r.patchStatus(ctx, nc, func(nc *karpv1.NodeClaim) {
			r.setCondition(nc, karpv1.ConditionTypeRegistered, metav1.ConditionUnknown, ReasonMultipleNodesFound, msg)
		})
	}
	node := &nodes[0]
	logger := log.FromContext(ctx).WithValues("Node", node.Name, "provider-id", nc.Status.ProviderID)
	if _, registered := node.Labels[wellknown.LabelRegistered]; !registered && !hasTaint(node.Spec.Taints, wellknown.UnregisteredTaint()) {
		// The boot configuration did not put the taint on: pods may have
		// landed before the node got its labels and taints. Register it all
		// the same, but say so.
		err := fmt.Errorf("node %s joined without the %s:%s taint", node.Name, wellknown.TaintKeyUnregistered, wellknown.TaintEffectUnregistered)
		logger.Error(err, "node registered without the unregistered taint; pods may have been scheduled before its labels and taints were set")
		r.event(nc, corev1.EventTypeWarning, ReasonUnregisteredTaintMissing, "Register",
			"Node %s joined without the %s:%s taint, so pods could run on it before it got the NodeClaim's labels and taints; check the node's user data or launch template", node.Name, wellknown.TaintKeyUnregistered, wellknown.TaintEffectUnregistered)
	}
	if err := r.syncNode(ctx, nc, node); err != nil {
		return err
	}
	if err := r.patchStatus(ctx, nc, func(nc *karpv1.NodeClaim) {
		nc.Status.NodeName = node.Name
		r.setCondition(nc, karpv1.ConditionTypeRegistered, metav1.ConditionTrue, ReasonRegistered, "")
		if c := findCondition(nc, karpv1.ConditionTypeInitialized); c == nil || c.Status != metav1.ConditionTrue {
			r.setCondition(nc, karpv1.ConditionTypeInitialized, metav1.ConditionUnknown, ReasonNodeNotReady, "waiting for the node to become ready")
		}
	}); err != nil {
		return err
	}
	logger.Info("registered nodeclaim")
	// Registered is now True, so register does not come here again for this
	// NodeClaim: the success is recorded once.
	r.metrics.NodeCreated(nc.Labels[wellknown.LabelNodePool], node.Labels[wellknown.LabelTopologyZone])
	return r.recordRegistration(ctx, nc, true)
}

// syncNode gives the Node the NodeClaim's labels, annotations, taints, the
// termination finalizer and an owner reference, and removes the unregistered
// taint. Taints are copied only on the first sync (before the registered
// label is set), so that startup taints removed later are not put back.
func (r *Reconciler) syncNode(ctx context.Context, nc *karpv1.NodeClaim, node *corev1.Node) error {
	base := node.DeepCopy()
	firstSync := node.Labels[wellknown.LabelRegistered] != "true"
	if node.Labels == nil {
		node.Labels = map[string]string{}
	}
	maps.Copy(node.Labels, nc.Labels)
	node.Labels[wellknown.LabelRegistered] = "true"
	if len(nc.Annotations) > 0 {
		if node.Annotations == nil {
			node.Annotations = map[string]string{}
		}
		maps.Copy(node.Annotations, nc.Annotations)
	}
	if firstSync && node.Labels[wellknown.LabelDoNotSyncTaints] != "true" {
		for _, t := range slices.Concat(nc.Spec.Taints, nc.Spec.StartupTaints) {
			if !hasTaint(node.Spec.Taints, t) {
				node.Spec.Taints = append(node.Spec.Taints, t)
			}
		}
	}
	unregistered := wellknown.UnregisteredTaint()
	node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.MatchTaint(&unregistered) })
	if !slices.Contains(node.Finalizers, finalizer) {
		node.Finalizers = append(node.Finalizers, finalizer)
	}
	if !hasOwner(node, nc) {
		node.OwnerReferences = append(node.OwnerReferences, metav1.OwnerReference{
			APIVersion:         karpv1.GroupVersion.String(),
			Kind:               "NodeClaim",
			Name:               nc.Name,
			UID:                nc.UID,
			BlockOwnerDeletion: ptr(true),
		})
	}
	if equality.Semantic.DeepEqual(base, node) {
		return nil
	}
	if err := r.client.Patch(ctx, node, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("syncing Node %s with NodeClaim %s: %w", node.Name, nc.Name, err)
	}
	return nil
}

// nodesFor returns the Nodes whose spec.providerID is id, sorted by name.
func (r *Reconciler) nodesFor(ctx context.Context, id string) ([]corev1.Node, error) {
	if id == "" {
		return nil, nil
	}
	var list corev1.NodeList
	if r.indexed {
		if err := r.client.List(ctx, &list, client.MatchingFields{NodeProviderIDIndex: id}); err != nil {
			return nil, fmt.Errorf("listing Nodes with provider ID %s: %w", id, err)
		}
	} else if err := r.client.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing Nodes: %w", err)
	}
	out := slices.DeleteFunc(list.Items, func(n corev1.Node) bool { return n.Spec.ProviderID != id })
	slices.SortFunc(out, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func hasTaint(taints []corev1.Taint, t corev1.Taint) bool {
	return slices.ContainsFunc(taints, func(x corev1.Taint) bool { return x.MatchTaint(&t) })
}

func hasOwner(node *corev1.Node, nc *karpv1.NodeClaim) bool {
	return slices.ContainsFunc(node.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == nc.UID })
}

func ptr[T any](v T) *T { return &v }
