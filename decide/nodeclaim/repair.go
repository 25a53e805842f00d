package nodeclaim

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/stevedore-autoscaler/stevedore/cloud"
)

// DefaultMaxUnhealthyPercent is the largest share of a NodePool's nodes
// (or of the cluster's, for nodes without a NodePool) that may be unhealthy
// for node repair to go ahead, as Karpenter fixes it.
const DefaultMaxUnhealthyPercent = 20

// Health is a node's standing against the cloud provider's repair policies.
type Health struct {
	// Unhealthy is true when one of the node's conditions has a policy's
	// unhealthy status now, however long it has had it.
	Unhealthy bool
	// Policy is the matching policy that falls due first.
	Policy cloud.RepairPolicy
	// Condition is the node's condition that matches Policy.
	Condition corev1.NodeCondition
	// Since is when the condition took its unhealthy status (its last
	// transition).
	Since time.Time
	// RepairAt is Since plus the policy's toleration: when the node is to be
	// replaced if it has not recovered.
	RepairAt time.Time
	// Due is true when the toleration has run out: the node is to be
	// replaced now.
	Due bool
}

// Message describes the node's health for events and conditions.
func (h Health) Message() string {
	if !h.Unhealthy {
		return "the node matches no repair policy"
	}
	if h.Due {
		return fmt.Sprintf("node condition %s has been %s since %s, longer than the %s tolerated",
			h.Condition.Type, h.Condition.Status, h.Since.UTC().Format(time.RFC3339), h.Policy.TolerationDuration)
	}
	return fmt.Sprintf("node condition %s has been %s since %s; it is replaced at %s unless it recovers",
		h.Condition.Type, h.Condition.Status, h.Since.UTC().Format(time.RFC3339), h.RepairAt.UTC().Format(time.RFC3339))
}

// NodeHealth judges node at now against policies. When several policies
// match, the one that falls due first is reported (the earlier in policies
// on a tie), so a caller that waits for RepairAt wakes at the right moment.
// Whether the policy is due is RepairPolicy.Unhealthy's verdict.
func NodeHealth(policies []cloud.RepairPolicy, node *corev1.Node, now time.Time) Health {
	var out Health
	for _, p := range policies {
		for _, c := range node.Status.Conditions {
			if c.Type != p.ConditionType || c.Status != p.ConditionStatus {
				continue
			}
			at := c.LastTransitionTime.Add(p.TolerationDuration)
			if out.Unhealthy && !at.Before(out.RepairAt) {
				continue
			}
			out = Health{
				Unhealthy: true,
				Policy:    p,
				Condition: c,
				Since:     c.LastTransitionTime.Time,
				RepairAt:  at,
				Due:       p.Unhealthy(c, now),
			}
		}
	}
	return out
}

// CountUnhealthy counts the nodes that match a repair policy now, however
// long they have matched: the cap is about how much of a pool is failing at
// once, not about how much of it is due for repair.
func CountUnhealthy(policies []cloud.RepairPolicy, nodes []corev1.Node) int {
	n := 0
	for i := range nodes {
		if matchesPolicy(policies, &nodes[i]) {
			n++
		}
	}
	return n
}

func matchesPolicy(policies []cloud.RepairPolicy, node *corev1.Node) bool {
	for _, p := range policies {
		for _, c := range node.Status.Conditions {
			if c.Type == p.ConditionType && c.Status == p.ConditionStatus {
				return true
			}
		}
	}
	return false
}

// Reasons of a RepairVerdict.
const (
	// ReasonRepairAllowed: few enough nodes are unhealthy; the node is
	// replaced.
	ReasonRepairAllowed = "RepairAllowed"
	// ReasonTooManyUnhealthy: more nodes are unhealthy than the cap allows.
	// So many failing at once points at something that replacing nodes
	// will not fix (a network partition, a broken image, the control plane)
	// and replacing them all would only add churn, so repair waits.
	ReasonTooManyUnhealthy = "TooManyUnhealthy"
)

// RepairVerdict says whether the unhealthy-node cap lets a repair go ahead,
// with the numbers behind the answer.
type RepairVerdict struct {
	// Repair is true when the repair may go ahead.
	Repair bool
	// Reason is ReasonRepairAllowed or ReasonTooManyUnhealthy.
	Reason string
	// Unhealthy is the number of unhealthy nodes in scope, the one to be
	// repaired included.
	Unhealthy int
	// Total is the number of nodes in scope: the NodePool's, or the
	// cluster's for a node without a NodePool.
	Total int
	// Allowed is the most unhealthy nodes at which repair still goes ahead:
	// MaxUnhealthyPercent of Total, rounded up.
	Allowed int
	// MaxUnhealthyPercent is the cap applied.
	MaxUnhealthyPercent int
}

// Message describes the verdict in words, with the counts.
func (v RepairVerdict) Message() string {
	if v.Repair {
		return fmt.Sprintf("%d of %d nodes are unhealthy, within the %d allowed (%d%%)", v.Unhealthy, v.Total, v.Allowed, v.MaxUnhealthyPercent)
	}
	return fmt.Sprintf("%d of %d nodes are unhealthy, more than the %d allowed (%d%%); not repairing until fewer are",
		v.Unhealthy, v.Total, v.Allowed, v.MaxUnhealthyPercent)
}

// RepairCap applies the cap: repair goes ahead while at most
// maxUnhealthyPercent of total nodes, rounded up, are unhealthy. Rounding up
// keeps repair working in small pools: one broken node of three is repaired
// under the default 20%. The percentage is clamped to [0, 100].
func RepairCap(unhealthy, total, maxUnhealthyPercent int) RepairVerdict {
	pct := min(max(maxUnhealthyPercent, 0), 100)
	allowed := (max(total, 0)*pct + 99) / 100
	v := RepairVerdict{Unhealthy: unhealthy, Total: total, Allowed: allowed, MaxUnhealthyPercent: pct}
	if unhealthy <= allowed {
		v.Repair, v.Reason = true, ReasonRepairAllowed
	} else {
		v.Reason = ReasonTooManyUnhealthy
	}
	return v
}
