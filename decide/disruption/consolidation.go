package disruption

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/scheduling/requirements"
)

// consolidationEligible returns why a candidate may not be consolidated, or
// nil. Empty nodes are emptiness's; they are not consolidated here.
func consolidationEligible(c *Candidate) *Blocked {
	b := func(code, msg string) *Blocked {
		return &Blocked{Node: c.Name(), NodePool: c.NodePool.Name, Reason: ReasonUnderutilized, Code: code, Message: msg}
	}
	d := c.NodePool.Spec.Disruption
	if IsStatic(c.NodePool) {
		s := staticBlocked(c, ReasonUnderutilized)
		return &s
	}
	switch {
	case nodePoolPolicy(c.NodePool) == karpv1.ConsolidationPolicyWhenEmpty:
		return b(CodePolicy, fmt.Sprintf("NodePool %s consolidates only empty nodes (consolidationPolicy: WhenEmpty)", c.NodePool.Name))
	case d.ConsolidateAfter != nil && d.ConsolidateAfter.IsNever():
		return b(CodeNotConsolidatable, fmt.Sprintf("NodePool %s has consolidateAfter: Never", c.NodePool.Name))
	case !c.Consolidatable:
		return b(CodeNotConsolidatable, "consolidateAfter has not elapsed since the last pod event on the node")
	case c.gracefulBlock != nil:
		g := *c.gracefulBlock
		g.Reason = ReasonUnderutilized
		return &g
	case !c.PriceKnown:
		return b(CodeUnknownPrice, fmt.Sprintf("no price is known for %s %s in %s", c.CapacityType, c.InstanceType, c.Zone))
	}
	return nil
}

// byValue orders consolidation candidates as Karpenter v1.14 does: by
// price per unit of rescheduling disruption (Price over
// RescheduleDisruptionCost), highest first, so that the search tries the
// moves that save most and hurt least before the others. Karpenter leaves
// ties in no particular order; stevedore breaks them by node name.
func byValue(a, b *Candidate) int {
	va, vb := value(a), value(b)
	if va != vb {
		return cmp.Compare(vb, va)
	}
	return cmp.Compare(a.Name(), b.Name())
}

func value(c *Candidate) float64 {
	return c.Price / max(c.RescheduleDisruptionCost, 1)
}

// interleaveByPool orders single-node consolidation's candidates as
// Karpenter does: round-robin over the NodePools, each pool's candidates in
// the order given, so that one pool's many candidates do not all come
// before another's. Karpenter takes the pools in no particular order;
// stevedore takes them by name.
func interleaveByPool(cands []*Candidate) []*Candidate {
	byPool := map[string][]*Candidate{}
	var pools []string
	for _, c := range cands {
		name := c.NodePool.Name
		if _, ok := byPool[name]; !ok {
			pools = append(pools, name)
		}
		byPool[name] = append(byPool[name], c)
	}
	slices.Sort(pools)
	out := make([]*Candidate, 0, len(cands))
	for i := 0; len(out) < len(cands); i++ {
		for _, p := range pools {
			if i < len(byPool[p]) {
				out = append(out, byPool[p][i])
			}
		}
	}
	return out
}

// command turns a simulation outcome for cands into a consolidation
// command: a delete when the pods fit on other nodes, a replace when they
// need exactly one new node that is strictly cheaper. single says whether
// it is single-node consolidation, which alone applies the spot-to-spot
// option count.
func (w *world) command(cands []*Candidate, single bool) (*Command, *Blocked) {
	reject := func(code, msg string) (*Command, *Blocked) {
		return nil, &Blocked{Node: names(cands), NodePool: cands[0].NodePool.Name, Reason: ReasonUnderutilized, Code: code, Message: msg}
	}
	price := 0.0
	for _, c := range cands {
		price += c.Price
	}
	if code, why, ok := w.room().mayMove(cands, price); !ok {
		return reject(code, why)
	}
	out := w.simulate(cands, modeConsolidate)
	if out.failed != "" {
		return reject(CodePodsDoNotFit, out.failed)
	}
	switch len(out.replacements) {
	case 0:
		return w.balanced(&Command{Reason: ReasonUnderutilized, Method: MethodDelete, Candidates: cands, SavingsPerHour: price})
	case 1:
	default:
		return reject(CodeWouldNeedMany, fmt.Sprintf("its pods would need %d new nodes; consolidation never replaces one node with several", len(out.replacements)))
	}
	r, why, code := w.cheaper(out.replacements[0], cands, price, single)
	if code != "" {
		return reject(code, why)
	}
	return w.balanced(&Command{Reason: ReasonUnderutilized, Method: MethodReplace, Candidates: cands,
		Replacements: []packer.NodeClaim{r}, SavingsPerHour: price - worstPrice(w.poolByNm[r.NodePool], r)})
}

// cheaper narrows a replacement to the instance types whose worst-case
// price (the most expensive offering it could land on) is strictly below
// what the candidates cost together, and applies Karpenter's capacity-type
// rules:
//
//   - when every candidate is spot and the replacement may be spot, it is
//     spot-to-spot consolidation: without Options.SpotToSpot the candidates
//     are not replaced at all (they may still be deleted); with it the
//     replacement is pinned to spot and, in single-node consolidation, needs
//     MinSpotToSpotOptions cheaper types and keeps only the cheapest
//     max(MinSpotToSpotOptions, minValues) of them;
//   - otherwise a replacement that may be spot or on-demand is pinned to
//     spot, its types priced as spot, so that a spot shortage cannot turn it
//     into a pricier on-demand node;
//   - in multi-node consolidation, types costing as much as a candidate's
//     own type are dropped: replacing three m5.large with one m5.large is
//     really deleting two, which a smaller command does without a launch.
func (w *world) cheaper(r packer.NodeClaim, cands []*Candidate, price float64, single bool) (packer.NodeClaim, string, string) {
	pool := w.poolByNm[r.NodePool]
	if pool == nil {
		return r, fmt.Sprintf("NodePool %s cannot launch now", r.NodePool), CodeNotCheaper
	}
	allSpot := true
	for _, c := range cands {
		if c.CapacityType != wellknown.CapacityTypeSpot {
			allSpot = false
		}
	}
	spotToSpot := allSpot && slices.Contains(r.CapacityTypes, wellknown.CapacityTypeSpot)
	if spotToSpot && !w.in.Options.SpotToSpot {
		return r, MessageSpotToSpotDisabled, CodeSpotToSpot
	}
	if spotToSpot || (slices.Contains(r.CapacityTypes, wellknown.CapacityTypeSpot) && slices.Contains(r.CapacityTypes, wellknown.CapacityTypeOnDemand)) {
		if pinned, ok := pinCapacityType(r, pool, wellknown.CapacityTypeSpot); ok {
			r = pinned
		} else if spotToSpot {
			return r, "no instance type that fits the pods is offered as spot", CodeNotCheaper
		}
	}
	limit := price
	if !single && len(cands) > 1 {
		for _, c := range cands {
			if slices.Contains(r.InstanceTypes, c.InstanceType) && c.Price < limit {
				limit = c.Price
			}
		}
	}
	byName := map[string]*packer.InstanceType{}
	for _, it := range pool.InstanceTypes {
		byName[it.Name] = it
	}
	type typed struct {
		name         string
		worst, cheap float64
	}
	var kept []typed
	for _, name := range r.InstanceTypes {
		it := byName[name]
		if it == nil {
			continue
		}
		offs := offeringsFor(it, r)
		if len(offs) == 0 {
			continue
		}
		worst, cheap := 0.0, math.Inf(1)
		for _, o := range offs {
			worst = math.Max(worst, o.PricePerHour)
			cheap = math.Min(cheap, o.PricePerHour)
		}
		if worst < limit {
			kept = append(kept, typed{name, worst, cheap})
		}
	}
	slices.SortStableFunc(kept, func(a, b typed) int { return cmp.Compare(a.worst, b.worst) })
	if len(kept) == 0 {
		return r, fmt.Sprintf("no instance type that fits the pods costs less than the $%.4f/h the node(s) cost now (cheapest fitting: %s)", price, cheapestNote(r, byName)), CodeNotCheaper
	}
	if spotToSpot && single {
		if len(kept) < MinSpotToSpotOptions {
			return r, fmt.Sprintf("SpotToSpotConsolidation requires %d cheaper instance type options than the current candidate to consolidate, got %d",
				MinSpotToSpotOptions, len(kept)), CodeTooFewSpotOption
		}
		// Launching only from the cheapest few means the instance that
		// comes up is among them, so it is not itself replaced at once by
		// one of the cheaper types it could have been.
		keep := MinSpotToSpotOptions
		if req, ok := r.Requirements.Get(wellknown.LabelInstanceType); ok {
			if n, has := req.MinValues(); has {
				keep = max(keep, n)
			}
		}
		kept = kept[:min(keep, len(kept))]
	}
	r.InstanceTypes = make([]string, len(kept))
	r.PricePerHour = math.Inf(1)
	for i, k := range kept {
		r.InstanceTypes[i] = k.name
		r.PricePerHour = math.Min(r.PricePerHour, k.cheap)
	}
	if req, ok := r.Requirements.Get(wellknown.LabelInstanceType); ok {
		if n, has := req.MinValues(); has && len(kept) < n {
			return r, fmt.Sprintf("only %d cheaper instance types fit, fewer than the minValues %d", len(kept), n), CodeNotCheaper
		}
		nr, err := requirements.NewRequirement(wellknown.LabelInstanceType, corev1.NodeSelectorOpIn, r.InstanceTypes...)
		if err == nil {
			if n, has := req.MinValues(); has {
				nr = nr.WithMinValues(n)
			}
			r.Requirements = r.Requirements.Add(nr)
		}
	}
	return r, "", ""
}

// pinCapacityType narrows a replacement to one capacity type, if any of its
// instance types is offered with it.
func pinCapacityType(r packer.NodeClaim, pool *packer.NodePool, ct string) (packer.NodeClaim, bool) {
	pinned := r
	pinned.CapacityTypes = []string{ct}
	for _, it := range pool.InstanceTypes {
		if !slices.Contains(r.InstanceTypes, it.Name) {
			continue
		}
		if len(offeringsFor(it, pinned)) > 0 {
			req, err := requirements.NewRequirement(wellknown.LabelCapacityType, corev1.NodeSelectorOpIn, ct)
			if err != nil {
				return r, false
			}
			pinned.Requirements = r.Requirements.Add(req)
			return pinned, true
		}
	}
	return r, false
}

// worstPrice is the most a replacement can cost: the most expensive
// available offering among its instance types.
func worstPrice(pool *packer.NodePool, r packer.NodeClaim) float64 {
	if pool == nil {
		return 0
	}
	worst := 0.0
	for _, it := range pool.InstanceTypes {
		if !slices.Contains(r.InstanceTypes, it.Name) {
			continue
		}
		for _, o := range offeringsFor(it, r) {
			worst = math.Max(worst, o.PricePerHour)
		}
	}
	return worst
}

// cheapestNote names the cheapest type the packer proposed, with its price.
func cheapestNote(r packer.NodeClaim, byName map[string]*packer.InstanceType) string {
	if len(r.InstanceTypes) == 0 {
		return "none"
	}
	name := r.InstanceTypes[0]
	if it := byName[name]; it != nil {
		if offs := offeringsFor(it, r); len(offs) > 0 {
			lo := math.Inf(1)
			for _, o := range offs {
				lo = math.Min(lo, o.PricePerHour)
			}
			return fmt.Sprintf("%s at $%.4f/h", name, lo)
		}
	}
	return name
}

// multiNode finds the largest prefix of the candidates (in byValue order,
// within each NodePool's Underutilized budget) that consolidates into no
// new node or one cheaper node. The search is a binary search over the
// prefix length, like Karpenter's, but over every candidate: the packer is
// fast enough that no cap and no timeout are needed.
func (w *world) multiNode(cands []*Candidate) *Command {
	if len(cands) < 2 {
		return nil
	}
	var best *Command
	lo, hi := 2, len(cands)
	for lo <= hi {
		mid := (lo + hi) / 2
		cmd, _ := w.command(cands[:mid], false)
		if cmd != nil {
			best, lo = cmd, mid+1
		} else {
			hi = mid - 1
		}
	}
	return best
}

// search is consolidation's search: multiNode over multi, then, when it
// finds nothing, single-node consolidation over single, which takes the
// first candidate that can be deleted or replaced by one cheaper node on
// its own, and reports why each candidate before it could not (verdicts;
// nil when multiNode found the command). multi is the prefix that the
// budgets allow a command of several nodes; single is every candidate whose
// NodePool may still lose a node, since a single-node command takes one
// slot whichever candidate it is.
//
// The packings run on two goroutines. Each is a pure function of the world
// and its candidates, so the packings that come later in that order can
// start while earlier ones run, and the answer is the one the sequential
// order gives; a packing started for nothing (after the command was found)
// is dropped. The second goroutine packs with the cache's sibling, as a
// cache is for one goroutine at a time. Both have finished when search
// returns.
func (w *world) search(multi, single []*Candidate) (cmd *Command, verdicts []Blocked) {
	if len(multi) == 0 && len(single) == 0 {
		return nil, nil
	}
	w.room() // built before the goroutines share the world
	// Single-node consolidation takes the candidates round-robin by
	// NodePool; multi-node takes prefixes of the order given.
	single = interleaveByPool(single)
	type result struct {
		cmd  *Command
		why  *Blocked
		done chan struct{}
	}
	// Task 0 is multi-node consolidation; task i is candidate i-1 alone.
	results := make([]result, len(single)+1)
	for i := range results {
		results[i].done = make(chan struct{})
	}
	var next atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	work := func(wk *world) {
		defer wg.Done()
		for !stop.Load() {
			i := int(next.Add(1)) - 1
			if i >= len(results) {
				return
			}
			r := &results[i]
			if i == 0 {
				r.cmd = wk.multiNode(multi)
			} else {
				r.cmd, r.why = wk.command(single[i-1:i], true)
			}
			close(r.done)
		}
	}
	other := *w
	other.base.Cache = w.base.Cache.Sibling()
	other.scratch = &packScratch{}
	wg.Add(2)
	go work(w)
	go work(&other)
	defer wg.Wait()
	defer stop.Store(true)
	for i := range results {
		r := &results[i]
		<-r.done
		if r.cmd != nil {
			return r.cmd, verdicts
		}
		if r.why != nil {
			verdicts = append(verdicts, *r.why)
		}
	}
	return nil, verdicts
}

// withinBudget keeps the candidates, in order, that the reason's budget of
// each NodePool allows in one command, and reports the others: what a
// command of several nodes (emptiness, multi-node consolidation) may take.
func withinBudget(in *Input, cands []*Candidate, r Reason) ([]*Candidate, []Blocked) {
	used := map[string]int{}
	var kept []*Candidate
	var blocked []Blocked
	for _, c := range cands {
		pool := c.NodePool.Name
		left := in.remaining(pool, r)
		if used[pool] >= left {
			blocked = append(blocked, budgetBlocked(c, r, left))
			continue
		}
		used[pool]++
		kept = append(kept, c)
	}
	return kept, blocked
}

// openBudget keeps the candidates whose NodePool may still lose a node for
// the reason, and reports the others. A method that disrupts one node per
// command (single-node consolidation, drift) tries each of them in turn, as
// Karpenter does: a candidate that cannot go takes no budget slot, so it
// does not keep another of its NodePool from being tried.
func openBudget(in *Input, cands []*Candidate, r Reason) ([]*Candidate, []Blocked) {
	var open []*Candidate
	var blocked []Blocked
	for _, c := range cands {
		if left := in.remaining(c.NodePool.Name, r); left <= 0 {
			blocked = append(blocked, budgetBlocked(c, r, 0))
			continue
		}
		open = append(open, c)
	}
	return open, blocked
}

// takenBy reports the candidates that cmd leaves out and that its NodePool's
// budget, once cmd has taken its slots, no longer allows. Candidates tried
// and found unable to go (tried, by node name) are left out: what holds
// them is not the budget.
func takenBy(in *Input, cmd *Command, cands []*Candidate, tried []Blocked) []Blocked {
	used := map[string]int{}
	inCmd := map[string]bool{}
	for _, c := range cmd.Candidates {
		used[c.NodePool.Name]++
		inCmd[c.Name()] = true
	}
	done := map[string]bool{}
	for _, b := range tried {
		done[b.Node] = true
	}
	var blocked []Blocked
	for _, c := range cands {
		pool := c.NodePool.Name
		if inCmd[c.Name()] || done[c.Name()] || used[pool] == 0 {
			continue
		}
		if left := in.remaining(pool, cmd.Reason); used[pool] >= left {
			blocked = append(blocked, budgetBlocked(c, cmd.Reason, left))
		}
	}
	return blocked
}

// budgetBlocked is candidate c held by its NodePool's budget for reason r,
// of which left slots were open in this pass.
func budgetBlocked(c *Candidate, r Reason, left int) Blocked {
	pool := c.NodePool.Name
	msg := fmt.Sprintf("NodePool %s allows no more %s disruptions now", pool, r)
	if left > 0 {
		msg = fmt.Sprintf("NodePool %s allows %d more %s disruption(s) now, taken by other nodes in this pass", pool, left, r)
	}
	return Blocked{Node: c.Name(), NodePool: pool, Reason: r, Code: CodeBudget, Message: msg}
}
