package account

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	simkubelet "github.com/stevedore-autoscaler/stevedore/sim/kubelet"
)

// Annotations of the Nodes the kubelets register. kwok plays the kubelet of
// a Node annotated KWOKAnnotation=KWOKValue: it makes it Ready (after the Go
// duration in ReadyDelayAnnotation, which the local cluster's node stage
// reads), renews its Lease and runs the pods bound to it.
const (
	KWOKAnnotation       = "kwok.x-k8s.io/node"
	KWOKValue            = "fake"
	ReadyDelayAnnotation = "kwok.stevedore.io/ready-delay"
)

// DefaultSyncInterval is how often the kubelets look at the account.
const DefaultSyncInterval = time.Second

// Kubelets registers the Nodes of an account's instances in a real API
// server and deletes those of terminated instances. It is a
// controller-runtime Runnable that runs on every replica, leader or not:
// the instances live in this process, whoever launched them.
type Kubelets struct {
	acc  *Account
	kube client.Client
	// Interval between two looks at the account (default
	// DefaultSyncInterval).
	Interval time.Duration

	mu sync.Mutex
	// nodes maps the instances whose Node was registered to its name.
	nodes map[string]string
	// removed holds the instances whose terminated Node was deleted.
	removed map[string]bool
	// denied holds the instances refused for want of an access entry
	// (reported once each).
	denied map[string]bool
}

// Kubelets returns the kubelets of the account's instances, registering
// Nodes through kube.
func (a *Account) Kubelets(kube client.Client) *Kubelets {
	return &Kubelets{acc: a, kube: kube, nodes: map[string]string{}, removed: map[string]bool{}, denied: map[string]bool{}}
}

// NeedLeaderElection is false: the account's instances boot whichever
// replica leads.
func (k *Kubelets) NeedLeaderElection() bool { return false }

// Start syncs every Interval until ctx ends.
func (k *Kubelets) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("simulated-account")
	a := k.acc
	logger.Info("simulated AWS account: a test and demo mode, nothing real is launched",
		"cluster", a.ClusterName, "region", a.Region, "kubernetesVersion", a.KubernetesVersion,
		"interruptionQueue", a.InterruptionQueue, "bootTime", a.BootTime.String(), "readyTime", a.ReadyTime.String())
	if len(a.Ignored) > 0 {
		logger.Info("the simulated account does not use these parts of the Scenario", "ignored", strings.Join(a.Ignored, "; "))
	}
	interval := k.Interval
	if interval <= 0 {
		interval = DefaultSyncInterval
	}
	for {
		report, err := k.Sync(ctx)
		if err != nil && ctx.Err() == nil {
			logger.Error(err, "syncing the simulated account's nodes")
		}
		for _, r := range report {
			logger.Info(r.Message, "instance", r.Instance, "node", r.Node)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-a.clock.After(interval):
		}
	}
}

// Change is something a Sync did.
type Change struct {
	Instance, Node string
	// Registered is true for a Node registered, false for one deleted or
	// an instance refused.
	Registered bool
	Message    string
}

// Sync registers a Node for every instance of the account's cluster that is
// running (it has booted) and whose node role has an access entry, once; and
// deletes the Node of every registered instance that has terminated or is
// gone. It returns what it did.
//
// A registered Node is the one the simulator's kubelets register (package
// sim/kubelet: name, provider ID, labels, capacity and allocatable of the
// instance type, the karpenter.sh/unregistered taint, NotReady), annotated
// for kwok. An instance whose role has no access entry is left alone, as the
// API server would refuse its kubelet.
func (k *Kubelets) Sync(ctx context.Context) ([]Change, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	var changes []Change
	var errs []error
	present := map[string]bool{}
	for _, id := range k.acc.AWS.InstanceIDs() {
		present[id] = true
		info, ok := k.acc.AWS.Instance(id)
		if !ok {
			continue
		}
		if name, done := k.nodes[id]; done {
			if info.State == fake.StateTerminated && !k.removed[id] {
				if err := k.deleteNode(ctx, name, info.Zone, id); err != nil {
					errs = append(errs, err)
					continue
				}
				k.removed[id] = true
				changes = append(changes, Change{Instance: id, Node: name, Message: "deleted the node of a terminated instance"})
			}
			continue
		}
		if info.State != fake.StateRunning || !simkubelet.InCluster(info, k.acc.ClusterName) {
			continue
		}
		if info.Role == "" || !k.acc.AWS.AccessEntryAllows(info.Role) {
			if !k.denied[id] {
				k.denied[id] = true
				changes = append(changes, Change{Instance: id,
					Message: fmt.Sprintf("instance has booted, but its node role %q has no access entry in cluster %s: its kubelet cannot join", info.Role, k.acc.ClusterName)})
			}
			continue
		}
		node, err := simkubelet.NodeFor(info)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if node.Annotations == nil {
			node.Annotations = map[string]string{}
		}
		node.Annotations[KWOKAnnotation] = KWOKValue
		if k.acc.ReadyTime > 0 {
			node.Annotations[ReadyDelayAnnotation] = k.acc.ReadyTime.String()
		}
		if err := k.kube.Create(ctx, node); err != nil {
			if !apierrors.IsAlreadyExists(err) {
				errs = append(errs, fmt.Errorf("registering node %s of instance %s: %w", node.Name, id, err))
				continue
			}
			existing := &corev1.Node{}
			if err := k.kube.Get(ctx, client.ObjectKey{Name: node.Name}, existing); err != nil {
				errs = append(errs, fmt.Errorf("registering node %s of instance %s: %w", node.Name, id, err))
				continue
			}
			if existing.Spec.ProviderID != node.Spec.ProviderID {
				errs = append(errs, fmt.Errorf("node %s of instance %s: a node of that name exists with provider ID %q", node.Name, id, existing.Spec.ProviderID))
				continue
			}
		}
		k.nodes[id] = node.Name
		changes = append(changes, Change{Instance: id, Node: node.Name, Registered: true, Message: "registered the node of a booted instance"})
	}
	for _, id := range slices.Sorted(maps.Keys(k.nodes)) {
		name := k.nodes[id]
		if present[id] {
			continue
		}
		if !k.removed[id] {
			if err := k.deleteNode(ctx, name, "", id); err != nil {
				errs = append(errs, err)
				continue
			}
			changes = append(changes, Change{Instance: id, Node: name, Message: "deleted the node of an instance that is gone"})
		}
		delete(k.nodes, id)
		delete(k.removed, id)
	}
	for id := range k.denied {
		if !present[id] {
			delete(k.denied, id)
		}
	}
	return changes, errors.Join(errs...)
}

// deleteNode deletes the Node of the instance, as the cloud controller
// manager does when an instance no longer exists: unless it is already being
// deleted, or the name now belongs to another instance's Node.
func (k *Kubelets) deleteNode(ctx context.Context, name, zone, id string) error {
	node := &corev1.Node{}
	if err := k.kube.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("deleting node %s of instance %s: %w", name, id, err)
	}
	if simkubelet.InstanceID(node.Spec.ProviderID) != id || (zone != "" && node.Spec.ProviderID != simkubelet.ProviderID(zone, id)) || node.DeletionTimestamp != nil {
		return nil
	}
	if err := k.kube.Delete(ctx, node, client.Preconditions{UID: &node.UID}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting node %s of instance %s: %w", name, id, err)
	}
	return nil
}
