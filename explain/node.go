package explain

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/decide/budget"
	"github.com/stevedore-autoscaler/stevedore/decide/disruption"
	"github.com/stevedore-autoscaler/stevedore/decide/nodeclaim"
	"github.com/stevedore-autoscaler/stevedore/state"
)

// NodeDetails are the facts behind a node's verdict.
type NodeDetails struct {
	NodeClaim    string `json:"nodeClaim,omitempty"`
	NodePool     string `json:"nodePool,omitempty"`
	Managed      bool   `json:"managed"`
	InstanceType string `json:"instanceType,omitempty"`
	CapacityType string `json:"capacityType,omitempty"`
	Zone         string `json:"zone,omitempty"`
	// PricePerHour of its offering; omitted when unknown.
	PricePerHour *float64 `json:"pricePerHour,omitempty"`
	// Pods is how many of its pods would have to move if it went
	// (DaemonSet and static pods do not).
	Pods        int  `json:"pods"`
	Initialized bool `json:"initialized"`
	// Disruption is the DisruptionReason condition of a command under way.
	Disruption *Condition `json:"disruption,omitempty"`
	// Drifted is the Drifted condition when True.
	Drifted *Condition `json:"drifted,omitempty"`
	// ExpiresAt is when expireAfter runs out; omitted when it never does.
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	// Consolidation is where the consolidateAfter timer stands.
	Consolidation *Consolidation `json:"consolidation,omitempty"`
	// Health is the node's standing against the repair policies, when it
	// is unhealthy.
	Health *Health `json:"health,omitempty"`
	// After lists the commands, for other nodes, that the disruption
	// passes carry out before they come to this one, in order.
	After []string `json:"after,omitempty"`
	// Command is the command of the pass that takes this node.
	Command *Command `json:"command,omitempty"`
}

// maxAhead caps how many earlier commands are carried out in the snapshot
// before a node is given up on as not reached.
const maxAhead = 20

// markedForDeletion returns snap with the candidates' nodes marked for
// deletion, as the disruption controller marks them when it starts a
// command. The StateNodes changed are copies; snap is not modified.
func markedForDeletion(snap state.Snapshot, cands []*disruption.Candidate) state.Snapshot {
	names := map[string]bool{}
	for _, c := range cands {
		names[c.Name()] = true
	}
	out := snap
	out.Nodes = make([]*state.StateNode, len(snap.Nodes))
	for i, n := range snap.Nodes {
		if names[n.Name()] {
			c := *n
			c.MarkedForDeletion = true
			n = &c
		}
		out.Nodes[i] = n
	}
	return out
}

// Condition is a status condition as an explanation shows it.
type Condition struct {
	Reason  string     `json:"reason"`
	Message string     `json:"message,omitempty"`
	Since   *time.Time `json:"since,omitempty"`
}

// Consolidation is decide/nodeclaim's Consolidatable verdict.
type Consolidation struct {
	Consolidatable bool   `json:"consolidatable"`
	Reason         string `json:"reason"`
	Message        string `json:"message"`
	// At is when the node becomes consolidatable; omitted when it never
	// will on the current facts.
	At *time.Time `json:"at,omitempty"`
}

// Health is decide/nodeclaim's NodeHealth verdict for an unhealthy node.
type Health struct {
	Message  string     `json:"message"`
	RepairAt *time.Time `json:"repairAt,omitempty"`
	Due      bool       `json:"due"`
}

// Command is a disruption command that takes the node.
type Command struct {
	Reason     string   `json:"reason"`
	Method     string   `json:"method"`
	Candidates []string `json:"candidates"`
	// Replacements are launched, and must initialize, before the
	// candidates go.
	Replacements   []NewNodeClaim `json:"replacements,omitempty"`
	SavingsPerHour float64        `json:"savingsPerHour,omitempty"`
	// Log is the command as the controller logs it.
	Log string `json:"log"`
}

// Node explains why the node (or in-flight NodeClaim) called name is kept,
// or what disruption is coming for it: the disruption pass the controller
// would run now, the node's entries among its Blocked list, and the
// forceful signals (drift, expiry, health) that do not go through budgets.
func Node(in Input, name string) (*Explanation, error) {
	snap := in.Snapshot
	now := snap.Time
	n, ok := snap.Node(name)
	if !ok {
		return nil, fmt.Errorf("node %q not found: there is neither a Node nor a NodeClaim of that name", name)
	}
	d := nodeDetails(in, n)
	e := &Explanation{Kind: KindNode, Name: n.Name(), Time: now.UTC(), Node: d, Notes: in.Notes}

	var np *karpv1.NodePool
	if d.NodePool != "" {
		np = nodePool(snap, d.NodePool)
	}
	// A pass stops at its first command, so a node that comes later in the
	// order is not looked at while an earlier command is pending. Carry the
	// earlier commands out in the snapshot (their candidates marked for
	// deletion, as the controller marks them) and look again, so that the
	// node gets the verdict it will get once they are done.
	var dec disruption.Decision
	var taken bool
	pass := snap
	for round := 0; ; round++ {
		dec = disruption.Decide(disruption.Input{
			Snapshot:  pass,
			Pools:     in.Pools,
			Remaining: remaining(pass),
			Options: disruption.Options{
				SpotToSpot:       in.Options.SpotToSpot,
				PreferencePolicy: in.Options.PreferencePolicy,
				MaxInstanceTypes: in.Options.MaxInstanceTypes,
				MinValuesPolicy:  in.Options.MinValuesPolicy,
			},
		})
		e.Reasons = e.Reasons[:0]
		for _, b := range dec.Blocked {
			if namesNode(b.Node, n.Name()) {
				e.Reasons = append(e.Reasons, blockedReason(b, np, d, pass))
			}
		}
		taken = dec.Command != nil && slices.ContainsFunc(dec.Command.Candidates, func(c *disruption.Candidate) bool { return c.Name() == n.Name() })
		if taken || len(e.Reasons) > 0 || dec.Command == nil || round == maxAhead {
			break
		}
		d.After = append(d.After, dec.Command.String())
		pass = markedForDeletion(pass, dec.Command.Candidates)
	}
	if len(e.Reasons) == 0 {
		e.Reasons = nil
	}
	if taken {
		d.Command = command(dec.Command)
	}

	switch {
	case n.Deleting():
		e.Verdict = VerdictDeleting
		e.Summary = fmt.Sprintf("Node %s is being deleted.", n.Name())
	case d.Disruption != nil:
		e.Verdict = VerdictDisrupting
		e.Summary = fmt.Sprintf("Node %s is being disrupted (%s): its replacements launch, then it is drained.", n.Name(), d.Disruption.Reason)
	case taken && len(d.After) > 0:
		e.Verdict = VerdictWouldDisrupt
		e.Summary = fmt.Sprintf("After %d earlier command(s), a disruption pass would take node %s: %s.", len(d.After), n.Name(), dec.Command.String())
	case taken:
		e.Verdict = VerdictWouldDisrupt
		e.Summary = fmt.Sprintf("The next disruption pass would take node %s: %s.", n.Name(), dec.Command.String())
	case len(e.Reasons) > 0:
		e.Verdict = VerdictKept
		e.Summary = fmt.Sprintf("Node %s is kept: %s.", n.Name(), strings.TrimSuffix(e.Reasons[0].Message, "."))
	case dec.Command != nil:
		e.Verdict = VerdictNotEvaluated
		e.Summary = fmt.Sprintf("Node %s was not reached: the disruption passes stop at commands for other nodes first (%d looked at).", n.Name(), len(d.After))
	default:
		e.Verdict = VerdictKept
		e.Summary = fmt.Sprintf("Node %s is kept: no disruption method finds a reason to take it.", n.Name())
		e.Reasons = []Reason{{Code: CodeNothingToDo, NodePool: d.NodePool,
			Message: "it is neither empty, drifted nor underutilized enough to be consolidated"}}
	}
	return e, nil
}

// namesNode reports whether a Blocked entry's node field, which lists every
// node of a multi-node attempt separated by ", ", includes name.
func namesNode(field, name string) bool {
	return field == name || slices.Contains(strings.Split(field, ", "), name)
}

func nodeDetails(in Input, n *state.StateNode) *NodeDetails {
	now := in.Snapshot.Time
	l := n.Labels()
	d := &NodeDetails{
		NodePool:     n.NodePool(),
		Managed:      n.Managed(),
		InstanceType: l[wellknown.LabelInstanceType],
		CapacityType: l[wellknown.LabelCapacityType],
		Zone:         l[wellknown.LabelTopologyZone],
		Initialized:  n.Initialized(),
	}
	if p, ok := offeringPrice(in.Pools, d.NodePool, d.InstanceType, d.Zone, d.CapacityType); ok {
		d.PricePerHour = &p
	}
	for _, p := range n.Pods {
		if disruption.Reschedulable(p) {
			d.Pods++
		}
	}
	if n.Node != nil && in.RepairPolicies != nil {
		if h := nodeclaim.NodeHealth(in.RepairPolicies, n.Node, now); h.Unhealthy {
			d.Health = &Health{Message: h.Message(), RepairAt: timePtr(h.RepairAt), Due: h.Due}
		}
	}
	nc := n.NodeClaim
	if nc == nil {
		return d
	}
	d.NodeClaim = nc.Name
	if c := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeDisruptionReason); c != nil && c.Status == metav1.ConditionTrue {
		d.Disruption = condition(c)
	}
	if c := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeDrifted); c != nil && c.Status == metav1.ConditionTrue {
		d.Drifted = condition(c)
	}
	if at, ok := nodeclaim.ExpiresAt(nc); ok {
		d.ExpiresAt = timePtr(at)
	}
	if np := nodePool(in.Snapshot, d.NodePool); np != nil && n.Initialized() {
		c := nodeclaim.Consolidatable(nc, np.Spec.Disruption.ConsolidateAfter, now)
		d.Consolidation = &Consolidation{Consolidatable: c.Consolidatable, Reason: c.Reason, Message: c.Message(), At: timePtr(c.At)}
	}
	return d
}

func condition(c *metav1.Condition) *Condition {
	return &Condition{Reason: c.Reason, Message: c.Message, Since: timePtr(c.LastTransitionTime.Time)}
}

// blockedReason turns a Blocked entry into a Reason, adding what the entry
// leaves to other packages: when the consolidateAfter window ends, and which
// budget holds the NodePool and until when.
func blockedReason(b disruption.Blocked, np *karpv1.NodePool, d *NodeDetails, snap state.Snapshot) Reason {
	r := Reason{Code: b.Code, NodePool: b.NodePool, Method: string(b.Reason), Message: b.Message}
	switch b.Code {
	case disruption.CodeNotConsolidatable:
		if c := d.Consolidation; c != nil && c.At != nil && c.At.After(snap.Time) {
			r.Until = c.At
			r.Message = fmt.Sprintf("%s: %s (%s left)", strings.TrimSuffix(b.Message, "."), c.Message, c.At.Sub(snap.Time).Round(time.Second))
		}
	case disruption.CodeBudget:
		if np == nil {
			break
		}
		a := budget.Compute(np, snap.Nodes, snap.Time)
		al := a.For(karpv1.DisruptionReason(b.Reason))
		if al.Budget >= 0 && al.Budget < len(a.Budgets) {
			r.Message = fmt.Sprintf("%s (budget #%d: %s allows %d of %d node(s), %d already disrupting)",
				strings.TrimSuffix(b.Message, "."), al.Budget, budget.Describe(a.Budgets[al.Budget]), al.Allowed, al.Nodes, al.Disrupting)
		}
		if next, ok := budget.NextChange(np, snap.Time); ok {
			r.Until = timePtr(next)
		}
	}
	return r
}

func command(c *disruption.Command) *Command {
	out := &Command{Reason: string(c.Reason), Method: string(c.Method), SavingsPerHour: c.SavingsPerHour, Log: c.String()}
	for _, cand := range c.Candidates {
		out.Candidates = append(out.Candidates, cand.Name())
	}
	for _, r := range c.Replacements {
		out.Replacements = append(out.Replacements, *newNodeClaim(r))
	}
	return out
}
