// Package kubelet plays the kubelets of the in-memory AWS against a real API
// server, for integration tests: it registers a Node for every instance that
// has booted and is allowed to join, and marks Nodes ready on request.
//
// It does only what the controllers under test need to see. A registered Node
// is the one the simulator's kubelets register (package sim/kubelet): it has
// the name, provider ID, labels, capacity and allocatable a kubelet on that
// instance would report, and the karpenter.sh/unregistered:NoExecute
// taint its boot configuration would add; it starts NotReady. Nothing here
// reads the wall clock: timestamps come from the instances' launch times, so
// the same world yields the same Nodes.
package kubelet

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	simkubelet "github.com/stevedore-autoscaler/stevedore/sim/kubelet"
)

// ProviderID returns the provider ID a kubelet on the instance reports:
// aws:///<zone>/<instance-id>.
func ProviderID(zone, instanceID string) string { return simkubelet.ProviderID(zone, instanceID) }

// Sync registers a Node for every running instance of the cluster whose node
// role has an access entry, unless a Node of that name exists already. It
// returns the names of the Nodes it created, in launch order.
//
// Instances still pending (booting) are skipped, as are those of other
// clusters and those whose role the cluster does not admit: their kubelets
// would fail to authenticate and keep retrying, which from the API server
// looks like nothing at all.
func Sync(ctx context.Context, c client.Client, aws *fake.AWS, clusterName string) ([]string, error) {
	var created []string
	for _, id := range aws.InstanceIDs() {
		info, ok := aws.Instance(id)
		if !ok || info.State != fake.StateRunning || !inCluster(info, clusterName) {
			continue
		}
		if info.Role == "" || !aws.AccessEntryAllows(info.Role) {
			continue
		}
		node, err := nodeFor(info)
		if err != nil {
			return created, err
		}
		if err := c.Create(ctx, node); err != nil {
			if apierrors.IsAlreadyExists(err) {
				continue
			}
			return created, fmt.Errorf("registering node %s for instance %s: %w", node.Name, id, err)
		}
		created = append(created, node.Name)
	}
	return created, nil
}

// MarkReady sets the Node's Ready condition True, as its kubelet does once the
// container runtime and network are up, and removes the
// node.kubernetes.io/not-ready taint, as the node lifecycle controller then
// does. The condition keeps the times Sync gave it (the instance's launch), so
// that nothing depends on when the test runs.
func MarkReady(ctx context.Context, c client.Client, nodeName string) error {
	node := &corev1.Node{}
	if err := c.Get(ctx, client.ObjectKey{Name: nodeName}, node); err != nil {
		return err
	}
	base := node.DeepCopy()
	found := false
	for i := range node.Status.Conditions {
		cond := &node.Status.Conditions[i]
		if cond.Type != corev1.NodeReady {
			continue
		}
		found = true
		cond.Status, cond.Reason, cond.Message = corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"
	}
	if !found {
		node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status",
		})
	}
	if err := c.Status().Patch(ctx, node, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("marking node %s ready: %w", nodeName, err)
	}
	// The API server's admission puts the not-ready taint on every new Node;
	// the node lifecycle controller removes it once the node is Ready. Do its
	// part too, so that tests need no controller manager.
	base = node.DeepCopy()
	node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady })
	if len(node.Spec.Taints) == len(base.Spec.Taints) {
		return nil
	}
	if err := c.Patch(ctx, node, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("removing the not-ready taint from node %s: %w", nodeName, err)
	}
	return nil
}

func inCluster(info fake.InstanceInfo, clusterName string) bool {
	return simkubelet.InCluster(info, clusterName)
}

// nodeFor returns the Node a kubelet on the instance registers; the
// simulator's kubelets register the same one.
func nodeFor(info fake.InstanceInfo) (*corev1.Node, error) { return simkubelet.NodeFor(info) }
