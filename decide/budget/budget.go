// Package budget computes a NodePool's disruption budgets: how many of its
// nodes stevedore may disrupt at a given time, per disruption reason (Empty,
// Underutilized, Drifted), and when that answer next changes because a
// budget's schedule opens or closes a window.
//
// The rules are Karpenter's, so that a NodePool behaves the same under
// either:
//
//   - The nodes counted are the NodePool's managed, initialized nodes whose
//     instance is not already terminating (NodeClaim condition
//     InstanceTerminating=True). Nodes still starting up are left out, so a
//     percentage does not grow with replacements that are not serving yet.
//   - A budget's nodes is a count ("5") or a percentage of the nodes counted
//     ("10%"), rounded up: 5% of 10 nodes allows 1.
//   - A budget with a schedule applies from each time its cron schedule
//     fires (UTC) for its duration; at the end of the duration it stops. A
//     budget without a schedule always applies. A budget that does not apply
//     does not limit anything.
//   - For each reason, the smallest value among the applying budgets that
//     list the reason, or list no reasons, is what is allowed. When no budget
//     applies, the reason is unbounded (Unbounded).
//   - A NodePool whose budgets field is absent gets the CRD's default, a
//     single budget of "10%". An empty list (budgets: []) is not absent: no
//     budget limits the NodePool, as in Karpenter, whose CRD default fires
//     only on absence.
//   - A budget that cannot be evaluated (a schedule that does not parse, a
//     malformed nodes value) fails closed: nothing may be disrupted for any
//     reason, since stevedore cannot tell what the user meant.
//   - What remains is what is allowed minus the nodes already disrupting:
//     counted nodes that are not Ready, marked for deletion or being deleted.
//
// Everything here is a pure function of the NodePool, the nodes and the time
// passed in; the results are ordered the same way every time.
package budget

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/intstr"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/state"
)

// Unbounded is the allowance of a reason that no applying budget limits. It
// is the value Karpenter uses, so that numbers published for dashboards
// agree with it.
const Unbounded = math.MaxInt32

// NoBudget is the Budget index of an Allowance that no budget limits.
const NoBudget = -1

// Reasons are the disruption reasons that budgets govern, in the order every
// result lists them (alphabetical, which is also how the NodePool status
// sorts them).
var Reasons = []karpv1.DisruptionReason{
	karpv1.DisruptionReasonDrifted,
	karpv1.DisruptionReasonEmpty,
	karpv1.DisruptionReasonUnderutilized,
}

// DefaultNodes is the nodes value of the budget a NodePool gets when it has
// none, the CRD's default.
const DefaultNodes = "10%"

// Budgets returns the budgets that apply to np: its own, or the CRD's
// default when the field is absent (nil). An empty, non-nil list is the
// user's "no budgets": nothing limits the NodePool. Budget indexes in
// results refer to this list.
func Budgets(np *karpv1.NodePool) []karpv1.Budget {
	if np.Spec.Disruption.Budgets == nil {
		// The API server fills the default in; an object built in memory
		// (a test, the simulator, plan) may not have had that done.
		return []karpv1.Budget{{Nodes: DefaultNodes}}
	}
	return np.Spec.Disruption.Budgets
}

// Allowance is how many nodes one reason may disrupt, with the numbers
// behind it.
type Allowance struct {
	Reason karpv1.DisruptionReason
	// Nodes is how many of the NodePool's nodes are counted.
	Nodes int
	// Budget is the index (in Budgets) of the budget that sets Allowed: the
	// most restrictive applying one, or the first that cannot be evaluated.
	// NoBudget when no budget limits the reason.
	Budget int
	// Allowed is what the budgets allow in total; Unbounded when none
	// applies to the reason.
	Allowed int
	// Disrupting is how many counted nodes already use the allowance.
	Disrupting int
	// Remaining is how many more nodes may be disrupted: Allowed minus
	// Disrupting, never below zero.
	Remaining int
}

// Blocked reports whether a budget allows no disruption of a NodePool that
// has nodes: the pool is held by its configuration, not by being empty or by
// disruptions already under way.
func (a Allowance) Blocked() bool { return a.Nodes > 0 && a.Allowed == 0 }

// Allowances are a NodePool's allowances at one time.
type Allowances struct {
	NodePool string
	// Time is the moment they were computed for.
	Time time.Time
	// Budgets are the budgets evaluated (see Budgets).
	Budgets []karpv1.Budget
	// Invalid lists the budgets that could not be evaluated, by index; any
	// of them blocks every reason.
	Invalid []*BudgetError
	// ByReason holds one Allowance per reason, in the order of Reasons.
	ByReason []Allowance
}

// For returns the allowance of reason r. A reason that budgets do not govern
// gets an Allowance with Budget NoBudget and Remaining Unbounded.
func (a Allowances) For(r karpv1.DisruptionReason) Allowance {
	for _, al := range a.ByReason {
		if al.Reason == r {
			return al
		}
	}
	return Allowance{Reason: r, Budget: NoBudget, Allowed: Unbounded, Remaining: Unbounded}
}

// Remaining returns how many more nodes reason r may disrupt now.
func (a Allowances) Remaining(r karpv1.DisruptionReason) int { return a.For(r).Remaining }

// BudgetError says why a budget could not be evaluated.
type BudgetError struct {
	// Index is the budget's index in Budgets.
	Index int
	// Field is the offending field: "schedule" or "nodes".
	Field string
	Err   error
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("spec.disruption.budgets[%d].%s: %v", e.Index, e.Field, e.Err)
}

func (e *BudgetError) Unwrap() error { return e.Err }

// Compute returns np's allowances at now. nodes may hold the whole cluster:
// only np's are looked at.
func Compute(np *karpv1.NodePool, nodes []*state.StateNode, now time.Time) Allowances {
	count, disrupting := CountNodes(np.Name, nodes)
	budgets := Budgets(np)
	out := Allowances{NodePool: np.Name, Time: now, Budgets: budgets}

	allowed := make([]int, len(budgets))
	for i := range budgets {
		v, err := evaluate(&budgets[i], i, count, now)
		if err != nil {
			out.Invalid = append(out.Invalid, err)
		}
		allowed[i] = v
	}

	out.ByReason = make([]Allowance, 0, len(Reasons))
	for _, r := range Reasons {
		al := Allowance{Reason: r, Nodes: count, Budget: NoBudget, Allowed: Unbounded, Disrupting: disrupting}
		if len(out.Invalid) > 0 {
			// Fail closed for every reason, as Karpenter does: a budget we
			// cannot read may have been meant to stop this very reason.
			al.Budget, al.Allowed = out.Invalid[0].Index, 0
		} else {
			for i := range budgets {
				if appliesTo(&budgets[i], r) && allowed[i] < al.Allowed {
					al.Budget, al.Allowed = i, allowed[i]
				}
			}
		}
		al.Remaining = max(al.Allowed-al.Disrupting, 0)
		out.ByReason = append(out.ByReason, al)
	}
	return out
}

// CountNodes counts the nodes of pool that budgets count, and how many of
// them are disrupting already.
func CountNodes(pool string, nodes []*state.StateNode) (count, disrupting int) {
	for _, n := range nodes {
		if !n.Managed() || !n.Initialized() || n.NodePool() != pool {
			continue
		}
		// Its instance is going away already; counting it would let a
		// percentage budget grow with nodes that are all but gone.
		if meta.IsStatusConditionTrue(n.NodeClaim.Status.Conditions, karpv1.ConditionTypeInstanceTerminating) {
			continue
		}
		count++
		if !nodeReady(n.Node) || n.MarkedForDeletion || n.Deleting() {
			disrupting++
		}
	}
	return count, disrupting
}

// nodeReady reports whether the node's Ready condition is True; a node
// without one is not ready.
func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// appliesTo reports whether b limits reason r: it lists r, or lists none.
func appliesTo(b *karpv1.Budget, r karpv1.DisruptionReason) bool {
	return len(b.Reasons) == 0 || slices.Contains(b.Reasons, r)
}

// evaluate returns what budget b (at index i) allows at now with count
// nodes: Unbounded while it does not apply, 0 with an error when it cannot be
// evaluated.
func evaluate(b *karpv1.Budget, i, count int, now time.Time) (int, *BudgetError) {
	active, err := isActive(b, now)
	if err != nil {
		return 0, &BudgetError{Index: i, Field: "schedule", Err: err}
	}
	if !active {
		return Unbounded, nil
	}
	v, err := scaledNodes(b.Nodes, count)
	if err != nil {
		return 0, &BudgetError{Index: i, Field: "nodes", Err: err}
	}
	return v, nil
}

// scaledNodes turns a budget's nodes value into a number of nodes out of
// count: a whole number as it is, a percentage of count rounded up.
func scaledNodes(nodes string, count int) (int, error) {
	var v intstr.IntOrString
	if strings.HasSuffix(nodes, "%") {
		v = intstr.FromString(nodes)
	} else {
		n, err := strconv.Atoi(nodes)
		if err != nil {
			return 0, fmt.Errorf("%q is neither a whole number nor a percentage", nodes)
		}
		// Cap before narrowing to int32, so a huge count cannot wrap
		// around to a small or negative one.
		v = intstr.FromInt32(int32(min(max(n, -1), Unbounded)))
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(&v, count, true)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", nodes, err)
	}
	if n < 0 {
		return 0, fmt.Errorf("%q is negative", nodes)
	}
	return min(n, Unbounded), nil
}
