package diagnose

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/decide/budget"
	"github.com/stevedore-autoscaler/stevedore/decide/disruption"
)

// poolsOfClass returns the NodePools that launch from the named node class,
// and how many nodes they have.
func (w *World) poolsOfClass(class string) (pools []string, nodes int) {
	for _, np := range w.Snapshot.NodePools {
		if ref := np.Spec.Template.Spec.NodeClassRef; ref != nil && ref.Name == class {
			pools = append(pools, np.Name)
		}
	}
	for _, n := range w.Snapshot.Nodes {
		if n.Managed() && slices.Contains(pools, n.NodePool()) {
			nodes++
		}
	}
	return pools, nodes
}

func checkAMILatest(_ context.Context, w *World) []Result {
	var out []Result
	for _, nc := range w.Snapshot.NodeClasses {
		var aliases []string
		for _, t := range nc.Spec.AMISelectorTerms {
			if strings.HasSuffix(t.Alias, "@latest") {
				aliases = append(aliases, t.Alias)
			}
		}
		if len(aliases) == 0 {
			continue
		}
		pools, nodes := w.poolsOfClass(nc.Name)
		ev := fmt.Sprintf("amiSelectorTerms use %s: the next AMI release drifts every node launched from it", strings.Join(aliases, ", "))
		if len(pools) > 0 {
			ev += fmt.Sprintf(" (%d node(s) of NodePool(s) %s), replaced as fast as their Drifted budgets allow", nodes, strings.Join(pools, ", "))
		}
		family, _, _ := strings.Cut(aliases[0], "@")
		out = append(out, Result{Status: Warn, Object: "EC2NodeClass " + nc.Name, Evidence: ev,
			Fix: fmt.Sprintf("pin a version (for example %s@v20250505), try new releases in a lower environment first, and roll them out by changing the pin; or keep @latest with a Drifted budget such as {nodes: \"1\", reasons: [Drifted]}", family)})
	}
	if len(out) == 0 {
		out = append(out, Result{Status: Pass, Evidence: "no EC2NodeClass uses an @latest alias"})
	}
	return out
}

func checkDoNotDisrupt(_ context.Context, w *World) []Result {
	now := w.now()
	var pinned, invalid []string
	for _, n := range w.Snapshot.Nodes {
		if !n.Managed() || n.Node == nil {
			continue
		}
		if n.Node.Annotations[wellknown.AnnotationDoNotDisrupt] == "true" || n.NodeClaim.Annotations[wellknown.AnnotationDoNotDisrupt] == "true" {
			pinned = append(pinned, n.Name()+" (the node itself)")
			continue
		}
		pinnedBy := ""
		for _, p := range n.Pods {
			if !disruption.Reschedulable(p) {
				continue
			}
			active, ok := disruption.DoNotDisruptActive(p, now)
			if !ok {
				invalid = append(invalid, fmt.Sprintf("%s/%s=%q", p.Namespace, p.Name, p.Annotations[wellknown.AnnotationDoNotDisrupt]))
			}
			if active && pinnedBy == "" {
				pinnedBy = p.Namespace + "/" + p.Name
			}
		}
		if pinnedBy != "" {
			pinned = append(pinned, fmt.Sprintf("%s (pod %s)", n.Name(), pinnedBy))
		}
	}
	var out []Result
	if len(pinned) > 0 {
		out = append(out, Result{Status: Warn, Object: "Node",
			Evidence: fmt.Sprintf("%d node(s) are pinned by %s: consolidation and drift pass them by: %s", len(pinned), wellknown.AnnotationDoNotDisrupt, named(pinned)),
			Fix:      "use a duration (karpenter.sh/do-not-disrupt: \"30m\") or remove the annotation when the work is done; it does not stop expiry, interruption or repair, so it is no protection for long jobs on expiring nodes"})
	}
	if len(invalid) > 0 {
		out = append(out, Result{Status: Warn, Object: "Pod",
			Evidence: fmt.Sprintf("%d pod(s) carry a %s value that is neither \"true\" nor a duration, and is ignored: %s", len(invalid), wellknown.AnnotationDoNotDisrupt, named(invalid)),
			Fix:      "set \"true\" or a Go duration such as \"30m\""})
	}
	if len(out) == 0 {
		out = append(out, Result{Status: Pass, Evidence: "no pod or node carries an active " + wellknown.AnnotationDoNotDisrupt})
	}
	return out
}

// emptyNodes counts a pool's initialized nodes without reschedulable pods.
func (w *World) emptyNodes(pool string) int {
	n := 0
	for _, sn := range w.Snapshot.Nodes {
		if sn.NodePool() != pool || sn.Node == nil || !sn.Initialized() {
			continue
		}
		if !slices.ContainsFunc(sn.Pods, disruption.Reschedulable) {
			n++
		}
	}
	return n
}

func checkConsolidateAfter(_ context.Context, w *World) []Result {
	var out []Result
	for _, np := range w.Snapshot.NodePools {
		d := np.Spec.Disruption
		obj := "NodePool " + np.Name
		empty := w.emptyNodes(np.Name)
		switch {
		case d.ConsolidateAfter != nil && d.ConsolidateAfter.IsNever():
			out = append(out, Result{Status: Warn, Object: obj,
				Evidence: fmt.Sprintf("consolidateAfter is Never: empty nodes are never removed (%d empty now)", empty),
				Fix:      "set consolidateAfter to a duration (for example 30s, or 15m for nodes that are slow to start) unless the pool must never shrink"})
		case d.ConsolidateAfter != nil && d.ConsolidateAfter.Duration != nil && *d.ConsolidateAfter.Duration >= w.Thresholds.LongConsolidateAfter:
			out = append(out, Result{Status: Warn, Object: obj,
				Evidence: fmt.Sprintf("consolidateAfter is %s: a node stays for that long after its last pod leaves (%d empty now)", d.ConsolidateAfter, empty),
				Fix:      "nothing if that is the intended trade of idle cost against start-up time; otherwise shorten it"})
		}
	}
	if len(out) == 0 {
		out = append(out, Result{Status: Pass, Evidence: fmt.Sprintf("no NodePool keeps empty nodes for %s or more", w.Thresholds.LongConsolidateAfter)})
	}
	return out
}

func checkBudgetsNeverOpen(_ context.Context, w *World) []Result {
	var out []Result
	for _, np := range w.Snapshot.NodePools {
		if budgetsInvalid(np, w) {
			continue // nodepool-budgets reports budgets that cannot be read
		}
		var never []string
		for _, r := range budget.Reasons {
			if held, forever := heldThroughout(np, r, w.now(), w.Thresholds.BudgetHorizon); held {
				when := "within " + w.Thresholds.BudgetHorizon.String()
				if forever {
					when = "ever"
				}
				never = append(never, fmt.Sprintf("%s (not %s)", r, when))
			}
		}
		if len(never) == 0 {
			continue
		}
		out = append(out, Result{Status: Warn, Object: "NodePool " + np.Name,
			Evidence: "budgets allow no disruption for " + strings.Join(never, ", ") + ": such nodes are kept until they expire",
			Fix:      "nothing if that is intended; otherwise give the reason a window (a budget with a schedule and duration) or a nonzero nodes value"})
	}
	if len(out) == 0 {
		out = append(out, Result{Status: Pass, Evidence: fmt.Sprintf("every disruption reason has a window within %s", w.Thresholds.BudgetHorizon)})
	}
	return out
}

func budgetsInvalid(np *karpv1.NodePool, w *World) bool {
	return len(budget.Compute(np, nil, w.now()).Invalid) > 0
}

// heldThroughout reports whether a budget of nodes "0" (or "0%") holds
// reason r at every moment from now to now+horizon, following the budgets'
// windows; forever is true when no window ever changes.
func heldThroughout(np *karpv1.NodePool, r karpv1.DisruptionReason, now time.Time, horizon time.Duration) (held, forever bool) {
	budgets := budget.Budgets(np)
	zeroAt := func(t time.Time) bool {
		for _, i := range budget.Active(np, t) {
			b := budgets[i]
			if (len(b.Reasons) == 0 || slices.Contains(b.Reasons, r)) && (b.Nodes == "0" || b.Nodes == "0%") {
				return true
			}
		}
		return false
	}
	end := now.Add(horizon)
	t := now
	for range 10000 {
		if !zeroAt(t) {
			return false, false
		}
		next, ok := budget.NextChange(np, t)
		if !ok {
			return true, true
		}
		if !next.Before(end) {
			return true, false
		}
		t = next
	}
	return true, false
}
