package disruption

import (
	"fmt"
	"slices"
)

// Codes of a rejected command (ConsolidationRejected), as Karpenter tags
// them.
const (
	RejectChurn      = "churn"      // a candidate changed: it is gone, busy, nominated or blocked now
	RejectBudget     = "budget"     // the budget no longer allows the command
	RejectScheduling = "scheduling" // the pods no longer fit as planned
)

// Rejection says why a command computed earlier may no longer be carried
// out.
type Rejection struct {
	Code    string
	Message string
}

func (r *Rejection) Error() string { return r.Code + ": " + r.Message }

// Validate checks a command computed earlier against a fresh input, after
// the controller has waited for the cluster to settle: every candidate is
// still a candidate for the same reason, the budgets still allow them, and
// the simulation still gives the same kind of result — for a replace, with
// the planned instance types still among those the fresh simulation
// allows. It returns the command to carry out, or why none may go ahead.
//
// An emptiness command is carried out for whichever of its candidates are
// still empty candidates and within the Empty budget, as Karpenter does: a
// pod landing on one empty node does not keep the others. Every other
// command goes ahead whole or not at all.
func Validate(in Input, cmd *Command) (*Command, *Rejection) {
	d := newDecider(&in)
	fresh := map[string]*Candidate{}
	for _, c := range d.cands {
		fresh[c.Name()] = c
	}
	var cands []*Candidate
	var dropped *Rejection
	for _, old := range cmd.Candidates {
		c := fresh[old.Name()]
		var rej *Rejection
		if c == nil {
			why := "it is no longer a candidate"
			for _, b := range d.blocked {
				if b.Node == old.Name() {
					why = b.Message
					break
				}
			}
			rej = &Rejection{RejectChurn, fmt.Sprintf("node %s: %s", old.Name(), why)}
		} else {
			rej = stillEligible(c, cmd.Reason)
		}
		if rej == nil {
			cands = append(cands, c)
			continue
		}
		if cmd.Reason != ReasonEmpty {
			return nil, rej
		}
		if dropped == nil {
			dropped = rej
		}
	}
	kept, over := withinBudget(&in, cands, cmd.Reason)
	if len(kept) < len(cands) && cmd.Reason != ReasonEmpty {
		return nil, &Rejection{RejectBudget, over[0].Message}
	}
	switch cmd.Reason {
	case ReasonEmpty:
		if len(kept) == 0 {
			if dropped != nil {
				return nil, dropped
			}
			return nil, &Rejection{RejectBudget, over[0].Message}
		}
		if len(kept) == len(cmd.Candidates) {
			return cmd, nil
		}
		out := *cmd
		out.Candidates = kept
		out.SavingsPerHour = 0
		for _, c := range kept {
			out.SavingsPerHour += c.Price
		}
		return &out, nil
	case ReasonDrifted:
		if out := d.sim().simulate(cands, modeDrift); out.failed != "" {
			return nil, &Rejection{RejectScheduling, out.failed}
		}
		return cmd, nil
	}
	now, why := d.sim().command(cands, len(cands) == 1)
	if now == nil {
		return nil, &Rejection{RejectScheduling, why.Message}
	}
	if now.Method != cmd.Method {
		return nil, &Rejection{RejectScheduling, fmt.Sprintf("the pods now need a %s instead of a %s", now.Method, cmd.Method)}
	}
	if cmd.Method == MethodReplace {
		allowed := now.Replacements[0].InstanceTypes
		for _, t := range cmd.Replacements[0].InstanceTypes {
			if !slices.Contains(allowed, t) {
				return nil, &Rejection{RejectScheduling, fmt.Sprintf("instance type %s is no longer a cheaper fit", t)}
			}
		}
	}
	return cmd, nil
}

// stillEligible re-checks what makes a candidate eligible for the reason.
func stillEligible(c *Candidate, r Reason) *Rejection {
	switch r {
	case ReasonEmpty:
		if !c.Empty() {
			return &Rejection{RejectChurn, fmt.Sprintf("node %s is no longer empty", c.Name())}
		}
		if !c.Consolidatable {
			return &Rejection{RejectChurn, fmt.Sprintf("node %s had pod activity within consolidateAfter", c.Name())}
		}
		if c.gracefulBlock != nil {
			return &Rejection{RejectChurn, c.gracefulBlock.Message}
		}
	case ReasonDrifted:
		if !c.Drifted {
			return &Rejection{RejectChurn, fmt.Sprintf("node %s is no longer drifted", c.Name())}
		}
		if c.gracefulBlock != nil && c.Node.NodeClaim.Spec.TerminationGracePeriod == nil {
			return &Rejection{RejectChurn, c.gracefulBlock.Message}
		}
	case ReasonUnderutilized:
		if b := consolidationEligible(c); b != nil {
			return &Rejection{RejectChurn, b.Message}
		}
	}
	return nil
}
