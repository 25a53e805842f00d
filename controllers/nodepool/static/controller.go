// Package static keeps static NodePools (spec.replicas) at their replica
// count, as Karpenter's static provisioning and deprovisioning controllers
// do behind its StaticCapacity feature gate: NodeClaims are created without
// pending pods when a NodePool has fewer than its replicas (within
// limits.nodes), and the least disruptive ones are deleted when it has more
// (see disruption.StaticSurplus). Deleted NodeClaims drain through the
// termination controller, which honours PodDisruptionBudgets; scaling down
// is not limited by disruption budgets.
//
// The controller is a singleton that looks at every static NodePool each
// Period, from the cluster state's snapshot. NodePools of another provider's
// node class (see wellknown.ManagedNodePool) are that provider's to scale.
package static

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud"
	"github.com/stevedore-autoscaler/stevedore/controllers/metrics"
	"github.com/stevedore-autoscaler/stevedore/controllers/provisioning"
	"github.com/stevedore-autoscaler/stevedore/controllers/singleton"
	decide "github.com/stevedore-autoscaler/stevedore/decide/disruption"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/state"
)

// Name is the controller's name.
const Name = "nodepool.static"

// Period is how often the static NodePools are looked at.
const Period = 10 * time.Second

// ReasonStatic is the reason label of NodeClaims created to make up a
// static NodePool's replicas.
const ReasonStatic = "provisioned"

// Request returns the request the controller reconciles.
func Request() reconcile.Request {
	return singleton.Request(Name)
}

// Controller holds static NodePools at their replicas.
type Controller struct {
	kube    client.Client
	state   *state.Cluster
	cloud   cloud.CloudProvider
	clock   clock.PassiveClock
	metrics *metrics.Metrics
	// maxTypes caps the instance types of a new NodeClaim (0: the packer's
	// default).
	maxTypes int
}

// New returns the controller.
func New(kube client.Client, st *state.Cluster, cp cloud.CloudProvider, clk clock.PassiveClock, m *metrics.Metrics, maxInstanceTypes int) *Controller {
	return &Controller{kube: kube, state: st, cloud: cp, clock: clk, metrics: m, maxTypes: maxInstanceTypes}
}

// Register adds the controller to mgr.
func (c *Controller) Register(mgr manager.Manager) error {
	return singleton.Register(mgr, Name, c)
}

// Reconcile brings every static NodePool to its replicas. The request is
// ignored.
func (c *Controller) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	if !c.state.Synced(ctx, c.kube) {
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}
	now := c.clock.Now()
	snap := c.state.Snapshot(now)
	// The launchable pools are listed once, and only when a NodePool must
	// grow.
	var pools map[string]int
	var launchable []packer.NodePool
	var errs []error
	for _, np := range snap.NodePools {
		if !decide.IsStatic(np) || !np.DeletionTimestamp.IsZero() || !wellknown.ManagedNodePool(np) {
			continue
		}
		want := *np.Spec.Replicas
		counts := decide.CountStatic(snap, np.Name)
		switch {
		case int64(counts.Active) < want:
			n := want - int64(counts.Active)
			if limit := decide.NodeLimit(np); limit >= 0 {
				n = min(n, limit-int64(counts.All))
			}
			if n <= 0 {
				log.FromContext(ctx).Info("static nodepool node limit reached", "nodepool", np.Name, "replicas", want, "nodeclaims", counts.All)
				continue
			}
			if pools == nil {
				launchable, _ = provisioning.LaunchablePools(ctx, c.cloud, snap)
				pools = map[string]int{}
				for i := range launchable {
					pools[launchable[i].Name] = i
				}
			}
			i, ok := pools[np.Name]
			if !ok {
				log.FromContext(ctx).Info("static nodepool cannot launch now", "nodepool", np.Name)
				continue
			}
			claim, ok := decide.StaticNodeClaim(&launchable[i], c.maxTypes)
			if !ok {
				log.FromContext(ctx).Info("static nodepool has no available instance type", "nodepool", np.Name)
				continue
			}
			for range n {
				nc := provisioning.NewNodeClaim(np, claim, claim.InstanceTypes)
				provisioning.MarkOverlays(nc, &launchable[i], claim.InstanceTypes)
				if err := c.kube.Create(ctx, nc); err != nil {
					errs = append(errs, fmt.Errorf("creating NodeClaim for static NodePool %s: %w", np.Name, err))
					break
				}
				c.state.UpdateNodeClaim(nc)
				c.metrics.NodeClaimCreated(ReasonStatic, np.Name, false)
				log.FromContext(ctx).Info("created nodeclaim", "nodepool", np.Name, "nodeclaim", nc.Name, "reason", "static replicas", "replicas", want)
			}
		case int64(counts.Active-counts.Disrupting) > want:
			surplus := int(int64(counts.Active-counts.Disrupting) - want)
			for _, sn := range decide.StaticSurplus(snap, np, surplus) {
				nc := sn.NodeClaim.DeepCopy()
				if err := c.kube.Delete(ctx, nc); err != nil && !apierrors.IsNotFound(err) {
					errs = append(errs, fmt.Errorf("deleting NodeClaim %s of static NodePool %s: %w", nc.Name, np.Name, err))
					continue
				}
				c.state.MarkForDeletion(nc.Name)
				log.FromContext(ctx).Info("deleting nodeclaim", "nodepool", np.Name, "nodeclaim", nc.Name, "reason", "static replicas", "replicas", want)
			}
		}
	}
	return reconcile.Result{RequeueAfter: Period}, errors.Join(errs...)
}
