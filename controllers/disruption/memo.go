package disruption

import (
	"encoding/binary"
	"hash/fnv"
	"maps"
	"math"
	"slices"
	"time"

	decide "github.com/stevedore-autoscaler/stevedore/decide/disruption"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/state"
)

// ConsolidationMemoLimit is the longest a consolidation that found nothing
// stands in for new ones (see consolidationMemo). The packer's heuristics are
// not strictly monotonic, so a cluster that only filled up may, rarely, pack
// better than before; this bounds how long such a chance waits.
const ConsolidationMemoLimit = 15 * time.Minute

// consolidationMemo remembers a decision in which consolidation found
// nothing. Consolidation is the expensive part of a decision (a packing of
// the whole cluster per candidate), and it is asked again whenever anything
// changed, which in a cluster that is scaling out is every pass. But pods
// landing and nodes filling up cannot make a node consolidatable, so until
// the cluster state records a change that could (state.Relaxations), the
// cloud's prices and offerings change, a NodePool's Underutilized budget
// grows, a nomination or a pod's do-not-disrupt duration runs out, or
// ConsolidationMemoLimit passes, the answer stands: decisions leave the
// packings out and report each candidate with what they found then.
type consolidationMemo struct {
	relaxations uint64
	pools       uint64
	// budget is the Underutilized budget left per NodePool.
	budget map[string]int
	until  time.Time
	// verdicts are why the packings found each candidate could not go.
	verdicts map[string]decide.Blocked
}

// holds reports whether the memo still answers for consolidation.
// pools is poolsHash of the pools the decision would pack onto.
func (m *consolidationMemo) holds(relaxations, pools uint64, remaining map[string]map[decide.Reason]int, now time.Time) bool {
	if m == nil || m.relaxations != relaxations || !now.Before(m.until) || m.pools != pools {
		return false
	}
	for pool, r := range remaining {
		if r[decide.ReasonUnderutilized] > m.budget[pool] {
			return false
		}
	}
	return true
}

// newConsolidationMemo records a decision whose consolidation found
// nothing, made from in with the state at relaxations (read before the
// snapshot was taken, so that a change racing with it is not missed), and
// pools, poolsHash(in.Pools).
func newConsolidationMemo(relaxations, pools uint64, in decide.Input, dec decide.Decision, now time.Time) *consolidationMemo {
	m := &consolidationMemo{relaxations: relaxations, pools: pools, budget: map[string]int{},
		until: earlier(now.Add(ConsolidationMemoLimit), timeDue(in.Snapshot, now))}
	for pool, r := range in.Remaining {
		m.budget[pool] = r[decide.ReasonUnderutilized]
	}
	m.verdicts = make(map[string]decide.Blocked, len(dec.Verdicts))
	for _, v := range dec.Verdicts {
		m.verdicts[v.Node] = v
	}
	return m
}

// timeDue is the first time after now at which a node's nomination or a
// pod's do-not-disrupt duration runs out: either may free a candidate.
func timeDue(snap state.Snapshot, now time.Time) time.Time {
	due := nominationEnds(snap, now)
	for _, n := range snap.Nodes {
		for _, p := range n.Pods {
			if end, ok := decide.DoNotDisruptEnds(p); ok && end.After(now) {
				due = earlier(due, end)
			}
		}
	}
	return due
}

// nominationEnds is the first time after now at which a node's nomination
// runs out; zero when none does.
func nominationEnds(snap state.Snapshot, now time.Time) time.Time {
	var first time.Time
	for _, n := range snap.Nodes {
		if n.NominatedUntil.After(now) {
			first = earlier(first, n.NominatedUntil)
		}
	}
	return first
}

// earlier returns the earlier of two times, a zero time being none.
func earlier(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// poolsHash sums up what the NodePools offer for replacements and what
// limits them: a price, an offering or a limit may change without any
// change to the cluster's objects.
func poolsHash(pools []packer.NodePool) uint64 {
	h := fnv.New64a()
	var buf [8]byte
	str := func(s string) {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	num := func(v uint64) {
		binary.LittleEndian.PutUint64(buf[:], v)
		h.Write(buf[:])
	}
	for i := range pools {
		p := &pools[i]
		str(p.Name)
		num(uint64(p.Weight))
		str(p.Requirements.String())
		for _, name := range slices.Sorted(maps.Keys(p.Limits)) {
			q := p.Limits[name]
			str(string(name))
			str(q.String())
		}
		for _, it := range p.InstanceTypes {
			str(it.Name)
			for _, o := range it.Offerings {
				str(o.Zone)
				str(o.CapacityType)
				num(math.Float64bits(o.PricePerHour))
				if o.Available {
					num(1)
				} else {
					num(0)
				}
			}
		}
	}
	return h.Sum64()
}
