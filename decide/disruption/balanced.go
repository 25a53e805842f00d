package disruption

import (
	"fmt"
	"math"
	"slices"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
)

// BalancedThreshold is k of the Balanced consolidation policy: a move is
// worth making when its score reaches 1/k. Karpenter fixes k at 2, the
// smallest value at which replacing a node by one of half its price passes
// in a NodePool of nodes that all cost the same.
const BalancedThreshold = 2.0

// CodeBalancedScore is the code of a Balanced NodePool's move whose savings
// do not justify the pods it disrupts.
const CodeBalancedScore = "BalancedScoreTooLow"

// Score is how a consolidation move fares under the Balanced policy, with
// the numbers behind it, for one source NodePool.
//
//	savings fraction    = savings / pool cost
//	disruption fraction = disruption / pool disruption
//	score               = savings fraction / disruption fraction
//
// Pool cost is what the NodePool's candidate nodes cost per hour, pool
// disruption the sum over those nodes of 1 plus the eviction cost (floored
// at 0) of each pod that would move; disruption is that same sum over the
// move's nodes. The 1 per node keeps an empty node's disruption above zero,
// so that deleting it always passes.
type Score struct {
	NodePool string
	// Policy is the NodePool's consolidation policy (Balanced).
	Policy karpv1.ConsolidationPolicy
	// Savings is the NodePool's share of the move's savings, USD per hour.
	Savings            float64
	PoolCost           float64
	Disruption         float64
	PoolDisruption     float64
	SavingsFraction    float64
	DisruptionFraction float64
	// Value is the score; Threshold is 1/BalancedThreshold.
	Value     float64
	Threshold float64
	Approved  bool
}

// String states the score and its inputs, for events and logs.
func (s Score) String() string {
	op := ">="
	if !s.Approved {
		op = "<"
	}
	return fmt.Sprintf("score %.2f %s threshold %.2f (savings $%.4f/h of $%.4f/h = %.1f%%, disruption %.1f of %.1f = %.1f%%)",
		s.Value, op, s.Threshold, s.Savings, s.PoolCost, 100*s.SavingsFraction, s.Disruption, s.PoolDisruption, 100*s.DisruptionFraction)
}

// poolTotals are a NodePool's cost and disruption, the denominators of the
// score.
type poolTotals struct {
	cost, disruption float64
}

// nodeDisruption is what taking one node away disrupts: 1 for the node,
// plus each pod's eviction cost, negative costs counting as 0. Unlike
// Candidate.DisruptionCost it is not scaled by the node's remaining
// lifetime: the score weighs what a move costs, not which node goes first.
func nodeDisruption(c *Candidate) float64 {
	d := 1.0
	for _, p := range c.Pods {
		d += math.Max(0, p.cost)
	}
	return d
}

// balancedTotals sums cost and disruption per Balanced NodePool over every
// candidate whose price is known, whatever method may take it: nodes that
// consolidateAfter still holds back count in the denominators too.
func balancedTotals(cands []*Candidate) map[string]poolTotals {
	out := map[string]poolTotals{}
	for _, c := range cands {
		if !c.PriceKnown || nodePoolPolicy(c.NodePool) != karpv1.ConsolidationPolicyBalanced {
			continue
		}
		t := out[c.NodePool.Name]
		t.cost += c.Price
		t.disruption += nodeDisruption(c)
		out[c.NodePool.Name] = t
	}
	return out
}

// ScoreMove scores a move that saves savings (USD per hour) and disrupts
// disruption, against its NodePool's totals. A move that saves nothing, or
// a NodePool that costs nothing, scores 0 and is rejected.
func ScoreMove(savings, disruption, poolCost, poolDisruption float64) Score {
	s := Score{Policy: karpv1.ConsolidationPolicyBalanced, Savings: savings, Disruption: disruption,
		PoolCost: poolCost, PoolDisruption: poolDisruption, Threshold: 1 / BalancedThreshold}
	if poolCost <= 0 || savings <= 0 {
		if poolCost > 0 {
			s.SavingsFraction = savings / poolCost
		}
		return s
	}
	s.SavingsFraction = savings / poolCost
	if poolDisruption <= 0 || disruption <= 0 {
		// Cannot happen with the 1 per node; a move that disrupts nothing
		// and saves something is worth it.
		s.Value, s.Approved = math.Inf(1), true
		return s
	}
	s.DisruptionFraction = disruption / poolDisruption
	s.Value = s.SavingsFraction / s.DisruptionFraction
	s.Approved = s.Value >= s.Threshold
	return s
}

// balancedScore scores cmd for each Balanced NodePool among its candidates,
// in name order, and returns the first rejection, or else the lowest
// approving score and every NodePool's (all); ok is false when no
// candidate's NodePool is Balanced. When the candidates come from several
// NodePools, each gets the share of the savings that its nodes' price is of
// the candidates' price, and must approve on its own: a permissive NodePool
// cannot carry a conservative one.
func balancedScore(cmd *Command, totals map[string]poolTotals) (s Score, all []Score, ok bool) {
	byPool := map[string][]*Candidate{}
	price := 0.0
	for _, c := range cmd.Candidates {
		price += c.Price
		if nodePoolPolicy(c.NodePool) == karpv1.ConsolidationPolicyBalanced {
			byPool[c.NodePool.Name] = append(byPool[c.NodePool.Name], c)
		}
	}
	pools := make([]string, 0, len(byPool))
	for name := range byPool {
		pools = append(pools, name)
	}
	slices.Sort(pools)
	for _, name := range pools {
		cands := byPool[name]
		poolPrice, disruption := 0.0, 0.0
		for _, c := range cands {
			poolPrice += c.Price
			disruption += nodeDisruption(c)
		}
		savings := cmd.SavingsPerHour
		if len(cands) < len(cmd.Candidates) && price > 0 {
			savings *= poolPrice / price
		}
		t := totals[name]
		sc := ScoreMove(savings, disruption, t.cost, t.disruption)
		sc.NodePool = name
		if !sc.Approved {
			return sc, nil, true
		}
		all = append(all, sc)
		if !ok || sc.Value < s.Value {
			s, ok = sc, true
		}
	}
	return s, all, ok
}

// balanced lets a consolidation command through unless a Balanced NodePool
// among its candidates rejects it, and records the score on it.
func (w *world) balanced(cmd *Command) (*Command, *Blocked) {
	s, all, ok := balancedScore(cmd, w.totals)
	if !ok {
		return cmd, nil
	}
	if !s.Approved {
		return nil, &Blocked{Node: names(cmd.Candidates), NodePool: s.NodePool, Reason: ReasonUnderutilized, Code: CodeBalancedScore,
			Message: fmt.Sprintf("NodePool %s (consolidationPolicy: Balanced): the %s saves too little for the pods it disrupts: %s", s.NodePool, cmd.Method, s),
			Score:   &s, Method: cmd.Method}
	}
	cmd.Score, cmd.Scores = &s, all
	return cmd, nil
}
