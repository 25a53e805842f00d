// Package state is the cluster as every decision reads it: an in-memory view
// of Nodes, NodeClaims, Pods, DaemonSets, PodDisruptionBudgets, NodePools,
// EC2NodeClasses and the namespaces and volumes that scheduling depends on.
//
// Informer event handlers (package state/informer) keep a Cluster current
// through its Update and Delete methods; the simulator calls the same methods
// from its in-memory API. Decisions never read a Cluster directly: they take
// a Snapshot, an immutable, deterministically ordered copy, and work on that.
//
// A Node and a NodeClaim that share a providerID are one StateNode. A
// NodeClaim without a Node is in flight; a Node without a NodeClaim is not
// managed by stevedore. NodeClaims of another provider's node class are not
// kept, so their Nodes are unmanaged nodes too. Besides what the API holds, a
// Cluster remembers what only the controller knows: nominations (nodes that
// the provisioner expects pods to land on, which must not be disrupted
// meanwhile, and for each pod the node it is expected on, whose room it keeps
// while the node boots) and marks for deletion (nodes that a disruption
// command is taking away).
//
// Objects handed to a Cluster are copied; objects handed out by a Snapshot are
// shared with the Cluster and must be treated as read-only.
package state
