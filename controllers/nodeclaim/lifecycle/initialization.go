package lifecycle

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
)

// ephemeralTaintKeys are put on nodes by Kubernetes, cloud controllers and
// stevedore itself while a node starts; a node carrying one is not
// initialized.
var ephemeralTaintKeys = []string{
	wellknown.TaintKeyNotReady,
	wellknown.TaintKeyUnreachable,
	wellknown.TaintKeyUninitialized,
	wellknown.TaintKeyUnregistered,
}

// initialize marks a registered NodeClaim initialized once its Node is ready
// for pods: Ready, without startup or boot taints, and with every requested
// extended resource allocatable.
func (r *Reconciler) initialize(ctx context.Context, nc *karpv1.NodeClaim) error {
	if isTrue(nc, karpv1.ConditionTypeInitialized) {
		return nil
	}
	nodes, err := r.nodesFor(ctx, nc.Status.ProviderID)
	if err != nil {
		return err
	}
	if len(nodes) != 1 {
		return r.patchStatus(ctx, nc, func(nc *karpv1.NodeClaim) {
			r.setCondition(nc, karpv1.ConditionTypeInitialized, metav1.ConditionUnknown, ReasonNodeNotFound,
				fmt.Sprintf("expected one node with provider ID %s, found %d", nc.Status.ProviderID, len(nodes)))
		})
	}
	node := &nodes[0]
	if reason, msg := notInitialized(nc, node); reason != "" {
		return r.patchStatus(ctx, nc, func(nc *karpv1.NodeClaim) {
			r.setCondition(nc, karpv1.ConditionTypeInitialized, metav1.ConditionUnknown, reason, msg)
		})
	}
	if node.Labels[wellknown.LabelInitialized] != "true" {
		base := node.DeepCopy()
		if node.Labels == nil {
			node.Labels = map[string]string{}
		}
		node.Labels[wellknown.LabelInitialized] = "true"
		if err := r.client.Patch(ctx, node, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("labelling Node %s initialized: %w", node.Name, err)
		}
	}
	if err := r.patchStatus(ctx, nc, func(nc *karpv1.NodeClaim) {
		r.setCondition(nc, karpv1.ConditionTypeInitialized, metav1.ConditionTrue, ReasonInitialized, "")
	}); err != nil {
		return err
	}
	log.FromContext(ctx).Info("initialized nodeclaim",
		"Node", node.Name, "provider-id", nc.Status.ProviderID, "allocatable", resourceString(node.Status.Allocatable))
	return nil
}

// notInitialized returns why the node is not initialized yet, or "".
func notInitialized(nc *karpv1.NodeClaim, node *corev1.Node) (reason, message string) {
	ready := false
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = c.Status == corev1.ConditionTrue
		}
	}
	if !ready {
		return ReasonNodeNotReady, fmt.Sprintf("node %s is not Ready", node.Name)
	}
	var present []string
	for _, t := range node.Spec.Taints {
		if slices.Contains(ephemeralTaintKeys, t.Key) || strings.HasPrefix(t.Key, wellknown.TaintKeyPrefixReadiness) || hasTaint(nc.Spec.StartupTaints, t) {
			present = append(present, t.Key+":"+string(t.Effect))
		}
	}
	if len(present) > 0 {
		return ReasonStartupTaintsPresent, fmt.Sprintf("node %s still has taints %s", node.Name, strings.Join(present, ", "))
	}
	var missing []string
	for name, q := range nc.Spec.Resources.Requests {
		if q.IsZero() || !isExtendedResource(name) {
			continue
		}
		if a, ok := node.Status.Allocatable[name]; !ok || a.IsZero() {
			missing = append(missing, string(name))
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return ReasonResourcesNotRegistered, fmt.Sprintf("node %s has no allocatable %s yet", node.Name, strings.Join(missing, ", "))
	}
	return "", ""
}

// isExtendedResource reports whether a resource is advertised by a device
// plugin or similar, rather than by the kubelet from the start.
func isExtendedResource(name corev1.ResourceName) bool {
	switch name {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage, corev1.ResourceStorage:
		return false
	}
	return !strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

func findCondition(nc *karpv1.NodeClaim, typ string) *metav1.Condition {
	return meta.FindStatusCondition(nc.Status.Conditions, typ)
}
