package disruption

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	decide "github.com/stevedore-autoscaler/stevedore/decide/disruption"
)

// Interrupt takes an interrupted node away now: its instance is about to be
// reclaimed (a spot interruption warning, a capacity reservation
// interruption) or stopped for maintenance, so the drain cannot wait for a
// budget or for replacements to come up. It
//
//  1. sets the NodeClaim's DisruptionReason condition to Interrupted, with
//     message as the condition's message;
//  2. marks the node for deletion in the cluster state and taints it
//     karpenter.sh/disrupted:NoSchedule;
//  3. launches replacement capacity for the pods that fit on no other node
//     (decide/disruption.Replacements), counted in
//     karpenter_nodeclaims_created_total{reason="interrupted"};
//  4. deletes the NodeClaim, whose finalizers drain the node at once.
//
// It is idempotent, for redelivered interruption messages: a NodeClaim being
// deleted is left alone, and replacements are launched only once per
// interruption (they carry its ID, which the NodeClaim records). Another
// provider's NodeClaim (see wellknown.ManagedNodeClaim) is left alone too.
// Unlike Reconcile, it may run concurrently with other calls.
func (c *Controller) Interrupt(ctx context.Context, nodeClaim, message string) error {
	return c.forceful(ctx, nodeClaim, decide.ReasonInterrupted, message)
}

func (c *Controller) forceful(ctx context.Context, name string, reason decide.Reason, message string) error {
	now := c.clock.Now()
	logger := log.FromContext(ctx).WithValues("NodeClaim", name, "reason", metricReason(reason))
	nc := &karpv1.NodeClaim{}
	if err := c.kube.Get(ctx, nodeClaimKey(name), nc); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !nc.DeletionTimestamp.IsZero() || !wellknown.ManagedNodeClaim(nc) {
		return nil
	}
	// A redelivered message finds the ID the first delivery recorded, and
	// with it the replacements that delivery launched.
	id := ""
	if cond := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeDisruptionReason); cond != nil && cond.Reason == string(reason) {
		id = nc.Annotations[AnnotationCommand]
	}
	if id == "" {
		id = commandID(reason, []string{name}, now)
	}
	if _, err := c.patchNodeClaim(ctx, name, true, func(nc *karpv1.NodeClaim) bool {
		return nc.DeletionTimestamp.IsZero() && setDisruptionReason(nc, string(reason), message, now)
	}); err != nil {
		return err
	}
	if _, err := c.patchNodeClaim(ctx, name, false, func(nc *karpv1.NodeClaim) bool {
		if !nc.DeletionTimestamp.IsZero() || nc.Annotations[AnnotationCommand] == id {
			return false
		}
		if nc.Annotations == nil {
			nc.Annotations = map[string]string{}
		}
		nc.Annotations[AnnotationCommand] = id
		nc.Annotations[AnnotationStarted] = now.UTC().Format(time.RFC3339Nano)
		return true
	}); err != nil {
		return err
	}
	c.state.MarkForDeletion(name)
	node := nc.Status.NodeName
	if node != "" {
		if err := c.taint(ctx, node); err != nil {
			return err
		}
	}

	launched, err := c.forcefulReplacements(ctx, name, id, reason, now)
	if err != nil {
		return err
	}

	if err := c.kube.Delete(ctx, nc, client.Preconditions{UID: &nc.UID}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("deleting NodeClaim %s: %w", name, err)
	}
	c.metrics.NodeClaimDisrupted(metricReason(reason), nc.Labels[wellknown.LabelNodePool], nc.Labels[wellknown.LabelCapacityType])
	logger.Info("deleting interrupted nodeclaim", "Node", node, "replacements", launched, "command", id)
	note := "disrupting %s: %s"
	args := []any{describeNodeClaim(nc), metricReason(reason)}
	if len(launched) > 0 {
		note += "; launched %s for its pods"
		args = append(args, strings.Join(launched, ", "))
	}
	c.eventOnCandidate(ctx, now, name, node, corev1.EventTypeWarning, ReasonDisruptionTerminating, "Delete", note, args...)
	return nil
}

// forcefulReplacements launches the replacements of a forceful disruption
// with ID id, unless an earlier delivery of the same interruption did. It
// returns the names of the replacements.
func (c *Controller) forcefulReplacements(ctx context.Context, name, id string, reason decide.Reason, now time.Time) ([]string, error) {
	snap := c.state.Snapshot(now)
	var existing []string
	for _, n := range snap.Nodes {
		if n.NodeClaim != nil && n.NodeClaim.Annotations[AnnotationReplacementFor] == id {
			existing = append(existing, n.NodeClaim.Name)
		}
	}
	if len(existing) > 0 {
		return existing, nil
	}
	pools, _ := c.pools.LaunchablePools(ctx, c.cloud, snap)
	in := decide.Input{Snapshot: snap, Pools: pools, Options: decide.Options{
		SpotToSpot:       c.opts.SpotToSpot,
		PreferencePolicy: c.opts.PreferencePolicy,
		MaxInstanceTypes: c.opts.MaxInstanceTypes,
		MinValuesPolicy:  c.opts.MinValuesPolicy,
	}}
	claims, unplaced := decide.Replacements(in, []string{name})
	logger := log.FromContext(ctx)
	if len(unplaced) > 0 {
		// The provisioner sees them once they are pending and says why
		// they fit nowhere.
		logger.Info("some pods of the interrupted node fit on no replacement", "NodeClaim", name, "pods", unplaced)
	}
	names, why, err := c.launch(ctx, snap, pools, claims, id, metricReason(reason), now)
	if err != nil {
		return names, err
	}
	if why != "" {
		logger.Info("launching replacement capacity for an interrupted node failed; the provisioner takes over once its pods are pending",
			"NodeClaim", name, "why", why)
	}
	for _, r := range names {
		c.state.NominateReplacement(r, now.Add(c.opts.ReplacementTimeout+ReplacementNomination), ReplacementNomination)
	}
	return names, nil
}
