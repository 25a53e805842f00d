package disruption

import (
	"cmp"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
)

// Decide makes one disruption pass: the first method, in the order of the
// package documentation, that finds something to do returns its command.
func Decide(in Input) Decision {
	d := newDecider(&in)
	var dec Decision
	dec.Blocked = append(dec.Blocked, d.blocked...)
	for _, method := range []func() (*Command, []Blocked){d.emptiness, d.staticDrift, d.drift, d.consolidation} {
		cmd, blocked := method()
		dec.Blocked = append(dec.Blocked, blocked...)
		if cmd != nil {
			dec.Command = cmd
			break
		}
	}
	slices.SortStableFunc(dec.Blocked, func(a, b Blocked) int { return cmp.Compare(a.Node, b.Node) })
	dec.Verdicts = d.verdicts
	for _, c := range d.cands {
		dec.DoNotDisrupt = append(dec.DoNotDisrupt, c.doNotDisrupt...)
	}
	return dec
}

// decider holds what the methods of one pass share.
type decider struct {
	in      *Input
	cands   []*Candidate
	blocked []Blocked
	w       *world
	// hosts are the CapacityBuffers' placeholders by node (bufferHosts).
	hosts map[string][]*corev1.Pod
	// verdicts are single-node consolidation's rejections (Decision.Verdicts).
	verdicts []Blocked
}

func newDecider(in *Input) *decider {
	d := &decider{in: in}
	d.hosts = bufferHosts(in)
	d.cands, d.blocked = candidates(in, newPDBIndex(in.Snapshot.PDBs), newCatalog(in.Pools), d.hosts)
	return d
}

// sim builds the packer's view lazily: a pass that ends at emptiness never
// needs it.
func (d *decider) sim() *world {
	if d.w == nil {
		d.w = newWorld(d.in, d.hosts)
		d.w.totals = balancedTotals(d.cands)
	}
	return d.w
}

// emptiness deletes every empty, consolidatable candidate that the Empty
// budgets allow, in one command.
func (d *decider) emptiness() (*Command, []Blocked) {
	var empty []*Candidate
	var blocked []Blocked
	for _, c := range d.cands {
		if !c.Empty() {
			continue
		}
		if IsStatic(c.NodePool) {
			blocked = append(blocked, staticBlocked(c, ReasonEmpty))
			continue
		}
		ca := c.NodePool.Spec.Disruption.ConsolidateAfter
		switch {
		case ca != nil && ca.IsNever():
			blocked = append(blocked, Blocked{Node: c.Name(), NodePool: c.NodePool.Name, Reason: ReasonEmpty, Code: CodeNotConsolidatable,
				Message: fmt.Sprintf("NodePool %s has consolidateAfter: Never", c.NodePool.Name)})
		case !c.Consolidatable:
			blocked = append(blocked, Blocked{Node: c.Name(), NodePool: c.NodePool.Name, Reason: ReasonEmpty, Code: CodeNotConsolidatable,
				Message: "the node is empty but consolidateAfter has not elapsed since its last pod event"})
		case c.gracefulBlock != nil:
			g := *c.gracefulBlock
			g.Reason = ReasonEmpty
			blocked = append(blocked, g)
		default:
			empty = append(empty, c)
		}
	}
	// Oldest-created first is arbitrary but stable; by name is enough.
	kept, over := withinBudget(d.in, empty, ReasonEmpty)
	blocked = append(blocked, over...)
	if len(kept) == 0 {
		return nil, blocked
	}
	price := 0.0
	for _, c := range kept {
		price += c.Price
	}
	return &Command{Reason: ReasonEmpty, Method: MethodDelete, Candidates: kept, SavingsPerHour: price}, blocked
}

// drift replaces the first drifted candidate whose pods can be placed:
// empty nodes first, then those drifted longest, one node per command, so
// that a rollout proceeds at the pace the Drifted budget sets. Pods are not
// moved onto other drifted nodes (they would only have to move again), and
// the replacements are not price-checked.
func (d *decider) drift() (*Command, []Blocked) {
	// Static NodePools' drifted nodes are staticDrift's.
	drifted, blocked := d.driftedCandidates(false)
	slices.SortStableFunc(drifted, func(a, b *Candidate) int {
		if ea, eb := a.Empty(), b.Empty(); ea != eb {
			if ea {
				return -1
			}
			return 1
		}
		if a.DriftedSince != b.DriftedSince {
			return cmp.Compare(a.DriftedSince, b.DriftedSince)
		}
		return cmp.Compare(a.Name(), b.Name())
	})
	// One node per command: every candidate whose NodePool may still lose
	// a node is tried, until one can go.
	open, held := openBudget(d.in, drifted, ReasonDrifted)
	blocked = append(blocked, held...)
	var failed []Blocked
	for _, c := range open {
		out := d.sim().simulate([]*Candidate{c}, modeDrift)
		if out.failed != "" {
			failed = append(failed, Blocked{Node: c.Name(), NodePool: c.NodePool.Name, Reason: ReasonDrifted, Code: CodePodsDoNotFit, Message: out.failed})
			continue
		}
		cmd := &Command{Reason: ReasonDrifted, Method: MethodDelete, Candidates: []*Candidate{c}, Replacements: out.replacements}
		if len(out.replacements) > 0 {
			cmd.Method = MethodReplace
		}
		blocked = append(blocked, failed...)
		return cmd, append(blocked, takenBy(d.in, cmd, open, failed)...)
	}
	blocked = append(blocked, failed...)
	return nil, blocked
}

// consolidation tries multi-node consolidation, then single-node.
func (d *decider) consolidation() (*Command, []Blocked) {
	var eligible []*Candidate
	var blocked []Blocked
	for _, c := range d.cands {
		if c.Empty() {
			continue
		}
		if why := consolidationEligible(c); why != nil {
			blocked = append(blocked, *why)
			continue
		}
		eligible = append(eligible, c)
	}
	slices.SortStableFunc(eligible, byValue)
	open, held := openBudget(d.in, eligible, ReasonUnderutilized)
	blocked = append(blocked, held...)
	if len(open) == 0 {
		return nil, blocked
	}
	// Multi-node consolidation tries prefixes of the candidates that the
	// budgets allow in one command; single-node tries every open one.
	multi, _ := withinBudget(d.in, open, ReasonUnderutilized)
	if m := d.in.Options.MaxCandidates; m > 0 && len(multi) > m {
		multi = multi[:m]
	}
	if d.in.Options.SkipConsolidation {
		// The caller knows the packings would find nothing again; what
		// they said about each candidate still open stands.
		for _, c := range open {
			if v, ok := d.in.Options.Verdicts[c.Name()]; ok {
				blocked = append(blocked, v)
			}
		}
		return nil, blocked
	}
	cmd, why := d.sim().search(multi, open)
	d.verdicts = why
	blocked = append(blocked, why...)
	if cmd != nil {
		blocked = append(blocked, takenBy(d.in, cmd, open, why)...)
	}
	return cmd, blocked
}

// nodePoolPolicy is the consolidation policy in effect for a NodePool.
func nodePoolPolicy(np *karpv1.NodePool) karpv1.ConsolidationPolicy {
	if p := np.Spec.Disruption.ConsolidationPolicy; p != "" {
		return p
	}
	return karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized
}

// driftedCandidates are the drifted candidates of static NodePools (static)
// or of the others, and the drifted ones that pods block. With a
// terminationGracePeriod the drain ends by itself, so do-not-disrupt pods
// and PDBs do not keep the node forever: they only slow its drain.
func (d *decider) driftedCandidates(static bool) (drifted []*Candidate, blocked []Blocked) {
	for _, c := range d.cands {
		if !c.Drifted || IsStatic(c.NodePool) != static {
			continue
		}
		if c.gracefulBlock != nil && c.Node.NodeClaim.Spec.TerminationGracePeriod == nil {
			g := *c.gracefulBlock
			g.Reason = ReasonDrifted
			blocked = append(blocked, g)
			continue
		}
		drifted = append(drifted, c)
	}
	return drifted, blocked
}
