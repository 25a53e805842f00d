package state

import (
	"slices"
)

// The queries in this file answer narrow questions without building a
// Snapshot, for controllers that ask them often and mostly get a short
// answer: a Snapshot joins, sorts and annotates every node of the cluster,
// which is wasted when the caller only needs to know that no pod is waiting,
// or one NodePool's nodes.

// ProvisionablePending counts the pending pods that IsProvisionable accepts,
// in two parts. unnominated have no nomination recorded for them (see
// NominatePod): they are certainly in Snapshot.ProvisionablePods. nominated
// have one; whether it still holds (and keeps them out of
// ProvisionablePods) depends on their node, which only a Snapshot tells. So
// ProvisionablePods is empty when both are zero, and not empty when
// unnominated is not zero.
func (c *Cluster) ProvisionablePending() (unnominated, nominated int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.pending {
		p := c.pods[k]
		if p == nil || !IsProvisionable(p) {
			continue
		}
		if nom, ok := c.podNominations[k]; ok && nom.uid == p.UID {
			nominated++
		} else {
			unnominated++
		}
	}
	return unnominated, nominated
}

// NodePoolNodes returns the nodes of a NodePool as Snapshot(now).Nodes
// holds them (those whose NodePool() is nodePool: joined NodeClaims,
// NodeClaims in flight and Nodes without a NodeClaim carrying the label), in
// the same order, with Node, NodeClaim and MarkedForDeletion set. Pods,
// Daemons, NominatedPods and NominatedUntil are left empty: computing them
// is what makes a Snapshot expensive, and counting nodes (disruption
// budgets, for example) does not read them. The objects are shared with the
// Cluster and must not be modified.
func (c *Cluster) NodePoolNodes(nodePool string) []*StateNode {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stateNodes(func(sn *StateNode) bool { return sn.NodePool() == nodePool })
}

// NodeClaimProviderIDs returns the providerIDs of the NodeClaims the Cluster
// knows (those that have one), sorted: the instances that are accounted
// for, as the NodeClaims of Snapshot(now).Nodes would list them.
func (c *Cluster) NodeClaimProviderIDs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.nodeClaims))
	for _, nc := range c.nodeClaims {
		if id := nc.Status.ProviderID; id != "" {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}
