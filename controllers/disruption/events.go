package disruption

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	decide "github.com/stevedore-autoscaler/stevedore/decide/disruption"
	"github.com/stevedore-autoscaler/stevedore/state"
)

// blockingCodes are the reasons a node may not be disrupted that its owner
// can act on: they get a DisruptionBlocked event whatever method was
// considered.
var blockingCodes = map[string]bool{
	decide.CodeDoNotDisruptNode: true,
	decide.CodeDoNotDisruptPod:  true,
	decide.CodePDBBlocked:       true,
	decide.CodeMultiplePDBs:     true,
	decide.CodeBudget:           true,
}

// blockedEvents turns a decision's Blocked list into events:
//
//   - DisruptionBlocked, on the Node and the NodeClaim, for a do-not-disrupt
//     annotation, a PodDisruptionBudget or an exhausted disruption budget,
//     and for a drifted node whose pods fit nowhere;
//   - Unconsolidatable, on the NodeClaim, for every other reason emptiness
//     or consolidation kept a node.
//
// Nodes that are no candidates for an ordinary reason (not initialized, not
// managed, being deleted, nominated) get none: that is the normal life of a
// node, not something to explain. Events are rate-limited per object and
// reason.
func (c *Controller) blockedEvents(snap state.Snapshot, blocked []decide.Blocked, now time.Time) {
	if c.recorder == nil {
		return
	}
	for _, b := range blocked {
		n, ok := snap.Node(b.Node)
		if !ok || n.NodeClaim == nil {
			// Multi-node rejections name several nodes; single-node
			// consolidation reports each of them on its own.
			continue
		}
		method := "disruption"
		if b.Reason != "" {
			method = strings.ToLower(string(b.Reason))
		}
		switch {
		case blockingCodes[b.Code] || b.Reason == decide.ReasonDrifted:
			note := fmt.Sprintf("cannot disrupt (%s): %s (%s)", method, b.Message, b.Code)
			c.events.Eventf(now, n.NodeClaim, nil, corev1.EventTypeNormal, ReasonDisruptionBlocked, "Disrupt", "%s", note)
			if n.Node != nil {
				c.events.Eventf(now, n.Node, nil, corev1.EventTypeNormal, ReasonDisruptionBlocked, "Disrupt", "%s", note)
			}
		case b.Reason == decide.ReasonEmpty || b.Reason == decide.ReasonUnderutilized:
			c.unconsolidatable.Eventf(now, n.NodeClaim, nil, corev1.EventTypeNormal, ReasonUnconsolidatable, "Consolidate",
				"not consolidated (%s): %s (%s)", method, b.Message, b.Code)
		}
	}
}
