// Package disruption decides which nodes stevedore takes away on its own
// initiative, and how: a pure function of a cluster snapshot, the instance
// types each NodePool may launch, the budgets still open and a time.
//
// Decide looks at the cluster the way an operator would want it looked at,
// method by method, and stops at the first command it can make:
//
//  1. Emptiness: nodes without reschedulable pods, past consolidateAfter, are
//     deleted, as many as the Empty budget of each NodePool allows, in one
//     command.
//  2. Drift: the oldest drifted node (empty ones first) whose pods can be
//     placed is replaced, one at a time, within the Drifted budget.
//     Replacements are not price-checked: the point is to move to what the
//     NodePool now asks for.
//  3. Multi-node consolidation: the largest set of candidates whose pods fit
//     on the other nodes, optionally plus one new node strictly cheaper than
//     the set, found by a binary search over every candidate (no cap on the
//     number considered and no timeout).
//  4. Single-node consolidation: the first candidate that can be deleted, or
//     replaced by one strictly cheaper node.
//
// A budget slot is taken only by the command made. Multi-node consolidation
// and emptiness take no more of a NodePool's candidates than its budget
// allows; drift and single-node consolidation, whose commands take one
// node, try every candidate of a NodePool whose budget allows one more, so
// a candidate that cannot go does not keep the next from being tried, as in
// Karpenter.
//
// Nodes that are not candidates, and candidates that could not be
// consolidated, come back with a structured reason each (Blocked), so that
// events, `stevedore explain` and the simulator can say why a node is kept.
//
// Expiration, interruption and repair are forceful and are not decided here:
// they delete NodeClaims directly and bypass budgets.
//
// The package calls no API server and no cloud, reads no clock and draws no
// random numbers; every list it returns is in a deterministic order.
package disruption
