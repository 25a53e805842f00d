package disruption

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
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
//   - Unconsolidatable, on the Node and the NodeClaim, for every other
//     reason emptiness or consolidation kept a node.
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
			for _, obj := range nodeObjects(n) {
				c.unconsolidatable.Eventf(now, obj, nil, corev1.EventTypeNormal, ReasonUnconsolidatable, "Consolidate",
					"not consolidated (%s): %s (%s)", method, b.Message, b.Code)
			}
		}
	}
}

// consolidationEvents records what a decision just made says about
// consolidation moves, as Karpenter records it while it computes them:
//
//   - ConsolidationCandidate, on the Node and the NodeClaim of every
//     candidate of a move that replaces nodes with a cheaper one: the
//     decision's command, and each single-node move the Balanced policy
//     turned down (Karpenter records it once the move is computed, before
//     the move is scored). Moves that only delete nodes get none, as in
//     Karpenter;
//   - ConsolidationApproved, for a command a Balanced NodePool approved: on
//     the candidate's Node and NodeClaim when it is one node, on each
//     Balanced NodePool of the candidates when it is several.
//
// Verdicts carried over from an earlier decision are not in dec.Verdicts,
// so a move is not reported again while nothing changes. Events are
// rate-limited per object (and, for candidates, per move) over
// DedupeInterval.
func (c *Controller) consolidationEvents(snap state.Snapshot, dec decide.Decision, now time.Time) {
	if c.recorder == nil {
		return
	}
	for _, v := range dec.Verdicts {
		if v.Code != decide.CodeBalancedScore || v.Method != decide.MethodReplace || v.Score == nil {
			continue
		}
		if n, ok := snap.Node(v.Node); ok {
			c.candidateEvent(n, []string{v.Node}, v.Score.Savings, now)
		}
	}
	cmd := dec.Command
	if cmd == nil || cmd.Reason != decide.ReasonUnderutilized {
		return
	}
	var moved []string
	for _, cand := range cmd.Candidates {
		moved = append(moved, cand.Name())
	}
	slices.Sort(moved)
	if cmd.Method == decide.MethodReplace {
		for _, cand := range cmd.Candidates {
			c.candidateEvent(cand.Node, moved, cmd.SavingsPerHour, now)
		}
	}
	if cmd.Score == nil {
		return
	}
	if len(cmd.Candidates) == 1 {
		n := cmd.Candidates[0].Node
		note := fmt.Sprintf("the Balanced policy approves consolidating it (%s): %s", cmd.Method, cmd.Score)
		for _, obj := range nodeObjects(n) {
			c.dedupe.Eventf(now, obj, nil, corev1.EventTypeNormal, ReasonConsolidationApproved, "Consolidate", "%s", note)
		}
		return
	}
	pools := map[string]*karpv1.NodePool{}
	for _, cand := range cmd.Candidates {
		pools[cand.NodePool.Name] = cand.NodePool
	}
	for _, s := range cmd.Scores {
		if np := pools[s.NodePool]; np != nil {
			c.dedupe.Eventf(now, np, nil, corev1.EventTypeNormal, ReasonConsolidationApproved, "Consolidate",
				"the Balanced policy approves consolidating %d nodes (%s), this NodePool's share: %s", len(cmd.Candidates), cmd.Method, s)
		}
	}
}

// candidateEvent records ConsolidationCandidate on a node of a replace
// move over the nodes moved (sorted), which saves savings per hour.
func (c *Controller) candidateEvent(n *state.StateNode, moved []string, savings float64, now time.Time) {
	note := fmt.Sprintf("consolidation candidate: replacing it with a cheaper node saves $%.4f/h", savings)
	if len(moved) > 1 {
		note = fmt.Sprintf("consolidation candidate: replacing it and %d other node(s) with one cheaper node saves $%.4f/h", len(moved)-1, savings)
	}
	for _, obj := range nodeObjects(n) {
		c.dedupe.EventfBy(now, strings.Join(moved, ","), obj, nil, corev1.EventTypeNormal, ReasonConsolidationCandidate, "Consolidate", "%s", note)
	}
}

// nodeObjects are a state node's NodeClaim and Node, whichever it has.
func nodeObjects(n *state.StateNode) []client.Object {
	var out []client.Object
	if n.NodeClaim != nil {
		out = append(out, n.NodeClaim)
	}
	if n.Node != nil {
		out = append(out, n.Node)
	}
	return out
}

// doNotDisruptEvents records, on each pod a decision found with a
// karpenter.sh/do-not-disrupt annotation other than "true", what the
// annotation does: DoNotDisruptUntil while its duration protects the pod,
// DoNotDisruptGracePeriodElapsed once it has run out, and the Warning
// InvalidDoNotDisruptAnnotation for a value that is neither "true" nor a
// positive duration, which is ignored. Karpenter records the same whenever
// it reads the annotation of a pod on a node it considers disrupting; each
// is rate-limited per pod (and deadline, or value) over DedupeInterval.
func (c *Controller) doNotDisruptEvents(pods []decide.DoNotDisruptPod, now time.Time) {
	if c.recorder == nil {
		return
	}
	for _, p := range pods {
		switch {
		case p.Invalid:
			c.dedupe.EventfBy(now, p.Value, p.Pod, nil, corev1.EventTypeWarning, ReasonInvalidDoNotDisruptAnnotation, "Disrupt",
				"ignoring %s=%q: it is neither \"true\" nor a positive duration", wellknown.AnnotationDoNotDisrupt, p.Value)
		case p.Active:
			until := p.Until.UTC().Format(time.RFC3339)
			c.dedupe.EventfBy(now, until, p.Pod, nil, corev1.EventTypeNormal, ReasonDoNotDisruptUntil, "Disrupt",
				"%s=%s keeps the pod from being disrupted until %s", wellknown.AnnotationDoNotDisrupt, p.Value, until)
		default:
			c.dedupe.Eventf(now, p.Pod, nil, corev1.EventTypeNormal, ReasonDoNotDisruptGracePeriodElapsed, "Disrupt",
				"the %s=%s protection has run out: the pod may be disrupted", wellknown.AnnotationDoNotDisrupt, p.Value)
		}
	}
}
