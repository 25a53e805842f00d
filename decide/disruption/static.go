package disruption

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/state"
)

// CodeStatic is the code of a node that a method leaves alone because its
// NodePool is static (spec.replicas): such nodes are never consolidated, and
// drift replaces them through StaticDrift.
const CodeStatic = "StaticNodePool"

// CodeStaticNodeLimit is the code of a drifted static node that cannot be
// replaced because a replacement would take its NodePool past limits.nodes.
const CodeStaticNodeLimit = "StaticNodeLimit"

// IsStatic reports whether np is a static NodePool: one with spec.replicas,
// whose node count stevedore holds at that number whatever the pods need.
func IsStatic(np *karpv1.NodePool) bool {
	return np != nil && np.Spec.Replicas != nil
}

// staticBlocked says that method r leaves c alone because its NodePool is
// static.
func staticBlocked(c *Candidate, r Reason) Blocked {
	return Blocked{Node: c.Name(), NodePool: c.NodePool.Name, Reason: r, Code: CodeStatic,
		Message: fmt.Sprintf("NodePool %s is static (replicas: %d): its nodes are not consolidated; they go when it is scaled down", c.NodePool.Name, *c.NodePool.Spec.Replicas)}
}

// StaticNodeClaim is the NodeClaim a static NodePool launches to make up its
// replicas or to replace a drifted node: no pods, the NodePool's
// requirements, and every instance type the NodePool may launch with an
// available offering, cheapest first (at most max, packer's default when 0).
// ok is false when no instance type qualifies.
func StaticNodeClaim(pool *packer.NodePool, max int) (packer.NodeClaim, bool) {
	if max <= 0 {
		max = packer.DefaultMaxInstanceTypes
	}
	type priced struct {
		name  string
		price float64
	}
	var its []priced
	zones, cts := map[string]bool{}, map[string]bool{}
	zoneReq, hasZone := pool.Requirements.Get(wellknown.LabelTopologyZone)
	ctReq, hasCT := pool.Requirements.Get(wellknown.LabelCapacityType)
	for _, it := range pool.InstanceTypes {
		if _, conflict := pool.Requirements.Conflict(it.Requirements, allowUndefined); conflict {
			continue
		}
		cheapest := math.Inf(1)
		for _, o := range it.Offerings {
			if !o.Available || (hasZone && !zoneReq.Allows(o.Zone)) || (hasCT && !ctReq.Allows(o.CapacityType)) {
				continue
			}
			cheapest = math.Min(cheapest, o.PricePerHour)
			zones[o.Zone], cts[o.CapacityType] = true, true
		}
		if !math.IsInf(cheapest, 1) {
			its = append(its, priced{it.Name, cheapest})
		}
	}
	if len(its) == 0 {
		return packer.NodeClaim{}, false
	}
	slices.SortStableFunc(its, func(a, b priced) int {
		if a.price != b.price {
			return cmp.Compare(a.price, b.price)
		}
		return cmp.Compare(a.name, b.name)
	})
	if len(its) > max {
		its = its[:max]
	}
	claim := packer.NodeClaim{NodePool: pool.Name, Requirements: pool.Requirements, PricePerHour: its[0].price}
	for _, it := range its {
		claim.InstanceTypes = append(claim.InstanceTypes, it.name)
	}
	claim.Zones = sortedKeys(zones)
	claim.CapacityTypes = sortedKeys(cts)
	return claim, true
}

// allowUndefined lets an instance type satisfy a NodePool requirement on a
// key it does not define (custom template labels).
func allowUndefined(string) bool { return true }

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// StaticCounts are a static NodePool's NodeClaims as its controllers count
// them.
type StaticCounts struct {
	// Active are the NodeClaims not being deleted, whether or not a
	// disruption command holds them.
	Active int
	// Disrupting are the active NodeClaims a disruption command holds (their
	// replacement may already be among Active).
	Disrupting int
	// All are every NodeClaim of the NodePool, deleting ones included: what
	// limits.nodes is checked against.
	All int
}

// CountStatic counts the NodeClaims of NodePool name in snap.
func CountStatic(snap state.Snapshot, name string) StaticCounts {
	var c StaticCounts
	for _, n := range snap.Nodes {
		if n.NodeClaim == nil || n.NodePool() != name {
			continue
		}
		c.All++
		if n.Deleting() || n.MarkedForDeletion {
			continue
		}
		c.Active++
		if disrupting(n.NodeClaim) {
			c.Disrupting++
		}
	}
	return c
}

// NodeLimit is limits.nodes of np, or -1 when it has none.
func NodeLimit(np *karpv1.NodePool) int64 {
	if q, ok := np.Spec.Limits[resourceNodes]; ok {
		return q.Value()
	}
	return -1
}

const resourceNodes corev1.ResourceName = "nodes"

// staticDrift replaces drifted nodes of static NodePools, as Karpenter's
// StaticDrift does: no scheduling simulation (the NodePool's count, not its
// pods, decides what it has), each drifted node replaced by a fresh
// NodeClaim of the NodePool, within the Drifted budget and without staging
// more replacements than limits.nodes leaves room for. It waits while a
// NodePool is being scaled down. One node per command, oldest drift first.
func (d *decider) staticDrift() (*Command, []Blocked) {
	if !d.in.Options.StaticCapacity {
		return nil, nil
	}
	drifted, blocked := d.driftedCandidates(true)
	slices.SortStableFunc(drifted, func(a, b *Candidate) int {
		if a.DriftedSince != b.DriftedSince {
			return cmp.Compare(a.DriftedSince, b.DriftedSince)
		}
		return cmp.Compare(a.Name(), b.Name())
	})
	kept, over := withinBudget(d.in, drifted, ReasonDrifted)
	blocked = append(blocked, over...)
	for _, c := range kept {
		np := c.NodePool
		counts := CountStatic(d.in.Snapshot, np.Name)
		if int64(counts.Active) > *np.Spec.Replicas {
			// Scaling down first: the surplus goes without a replacement.
			continue
		}
		if limit := NodeLimit(np); limit >= 0 && int64(counts.All) >= limit {
			blocked = append(blocked, Blocked{Node: c.Name(), NodePool: np.Name, Reason: ReasonDrifted, Code: CodeStaticNodeLimit,
				Message: fmt.Sprintf("static NodePool %s is at its node limit (%d of limits.nodes %d) and cannot stage a replacement", np.Name, counts.All, limit)})
			continue
		}
		var pool *packer.NodePool
		for i := range d.in.Pools {
			if d.in.Pools[i].Name == np.Name {
				pool = &d.in.Pools[i]
			}
		}
		var claim packer.NodeClaim
		ok := false
		if pool != nil {
			claim, ok = StaticNodeClaim(pool, d.in.Options.MaxInstanceTypes)
		}
		if !ok {
			blocked = append(blocked, Blocked{Node: c.Name(), NodePool: np.Name, Reason: ReasonDrifted, Code: CodePodsDoNotFit,
				Message: fmt.Sprintf("static NodePool %s cannot launch a replacement now (its node class is not ready or no instance type is available)", np.Name)})
			continue
		}
		return &Command{Reason: ReasonDrifted, Method: MethodReplace, Candidates: []*Candidate{c}, Replacements: []packer.NodeClaim{claim}}, blocked
	}
	return nil, blocked
}

// dynamicPools returns the pools that are not static NodePools in snap.
func dynamicPools(snap state.Snapshot, pools []packer.NodePool) []packer.NodePool {
	static := map[string]bool{}
	for _, np := range snap.NodePools {
		if IsStatic(np) {
			static[np.Name] = true
		}
	}
	if len(static) == 0 {
		return pools
	}
	out := make([]packer.NodePool, 0, len(pools))
	for _, p := range pools {
		if !static[p.Name] {
			out = append(out, p)
		}
	}
	return out
}

// StaticSurplus picks the n NodeClaims of static NodePool np to remove when
// it has more than its replicas, least disruptive first, as Karpenter does:
// NodeClaims that have not launched yet, then empty nodes (only DaemonSet or
// static pods, none protected by do-not-disrupt), then nodes without
// do-not-disrupt pods before those with, each by their pods' eviction cost
// scaled by the lifetime left; ties by name. NodeClaims already deleting or
// held by a disruption command are not picked.
func StaticSurplus(snap state.Snapshot, np *karpv1.NodePool, n int) []*state.StateNode {
	type ranked struct {
		node         *state.StateNode
		tier         int
		doNotDisrupt bool
		cost         float64
	}
	var all []ranked
	for _, sn := range snap.Nodes {
		if sn.NodeClaim == nil || sn.NodePool() != np.Name || sn.Deleting() || sn.MarkedForDeletion || disrupting(sn.NodeClaim) {
			continue
		}
		r := ranked{node: sn}
		switch {
		case sn.InFlight():
			r.tier = 0
		default:
			cost := 0.0
			pods := 0
			for _, p := range sn.Pods {
				if active, _ := DoNotDisruptActive(p, snap.Time); active {
					r.doNotDisrupt = true
				}
				if Reschedulable(p) {
					pods++
					cost += EvictionCost(p)
				}
			}
			r.tier = 2
			if pods == 0 && !r.doNotDisrupt {
				r.tier = 1
			}
			r.cost = cost * lifetimeRemaining(sn.NodeClaim, snap.Time)
		}
		all = append(all, r)
	}
	slices.SortStableFunc(all, func(a, b ranked) int {
		if a.tier != b.tier {
			return cmp.Compare(a.tier, b.tier)
		}
		if a.doNotDisrupt != b.doNotDisrupt {
			if a.doNotDisrupt {
				return 1
			}
			return -1
		}
		if a.cost != b.cost {
			return cmp.Compare(a.cost, b.cost)
		}
		return cmp.Compare(a.node.NodeClaim.Name, b.node.NodeClaim.Name)
	})
	out := make([]*state.StateNode, 0, n)
	for i := 0; i < len(all) && i < n; i++ {
		out = append(out, all[i].node)
	}
	return out
}
