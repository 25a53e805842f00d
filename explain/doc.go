// Package explain answers "why?" about one pod, node or NodePool by replaying
// stevedore's own decisions on a snapshot of the cluster.
//
// Nothing here decides anything new. A pending pod is packed with the other
// pending pods exactly as the provisioner packs them (package
// scheduling/packer); a node is put through the same disruption pass the
// disruption controller runs (package decide/disruption), with the budgets
// of package decide/budget and the timers of package decide/nodeclaim;
// a NodePool's budgets and limits are read with the same functions the
// controllers use. Because the decisions are pure functions of a snapshot,
// the launchable NodePools and a time, the answer is the one the controller
// would reach on the same input — whether the snapshot comes from a live
// cluster or from the simulator.
//
// The result is an Explanation: a verdict, a one-line summary, the reasons
// with their stable codes (the codes of the packer's NodePool verdicts and of
// the disruption package's Blocked entries), and the details behind them.
// WriteText renders it for people; it marshals to JSON for tools. Both are
// deterministic: the same input gives the same bytes.
package explain
