package launch

import (
	"sort"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// UnavailableTTL is how long an offering stays unavailable after EC2 reported
// that it had no capacity.
const UnavailableTTL = 3 * time.Minute

// OfferingKey names a capacity pool: an instance type in a zone, bought as one
// capacity type.
type OfferingKey struct {
	InstanceType string
	Zone         string
	CapacityType string
}

// Unavailable is an offering marked unavailable and when the mark ends.
type Unavailable struct {
	OfferingKey
	Until time.Time
}

// ICECache remembers the offerings that recently failed with insufficient
// capacity, so that the next simulation chooses something else. Marks expire
// UnavailableTTL after they were made, measured on the injected clock; expiry
// is evaluated on every read, so a passive clock is enough. It is safe for
// concurrent use.
type ICECache struct {
	mu      sync.Mutex
	clk     clock.PassiveClock
	entries map[OfferingKey]time.Time
	seq     uint64
}

// NewICECache returns an empty cache on clk.
func NewICECache(clk clock.PassiveClock) *ICECache {
	return &ICECache{clk: clk, entries: map[OfferingKey]time.Time{}}
}

// MarkUnavailable marks the offering unavailable for UnavailableTTL from now.
// A new mark extends an existing one.
func (c *ICECache) MarkUnavailable(instanceType, zone, capacityType string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[OfferingKey{instanceType, zone, capacityType}] = c.clk.Now().Add(UnavailableTTL)
	c.seq++
}

// Available reports whether the offering is not currently marked.
func (c *ICECache) Available(instanceType, zone, capacityType string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := OfferingKey{instanceType, zone, capacityType}
	until, ok := c.entries[k]
	if !ok {
		return true
	}
	if !c.clk.Now().Before(until) {
		delete(c.entries, k)
		return true
	}
	return false
}

// SeqNum changes every time an offering is marked; callers that cache
// availability compare it to know when to recompute.
func (c *ICECache) SeqNum() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seq
}

// Version returns SeqNum together with the moment the earliest current mark
// expires (zero when nothing is marked). Availability read now stays the
// same for every offering while SeqNum is unchanged and that moment has not
// come: marks only appear through MarkUnavailable and only disappear by
// expiring. Callers that cache what Available said compare both.
func (c *ICECache) Version() (seq uint64, nextExpiry time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clk.Now()
	for _, until := range c.entries {
		if now.Before(until) && (nextExpiry.IsZero() || until.Before(nextExpiry)) {
			nextExpiry = until
		}
	}
	return c.seq, nextExpiry
}

// List returns the offerings currently marked, ordered by instance type, zone
// and capacity type.
func (c *ICECache) List() []Unavailable {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clk.Now()
	out := make([]Unavailable, 0, len(c.entries))
	for k, until := range c.entries {
		if !now.Before(until) {
			delete(c.entries, k)
			continue
		}
		out = append(out, Unavailable{OfferingKey: k, Until: until})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].OfferingKey.less(out[j].OfferingKey) })
	return out
}

func (k OfferingKey) less(o OfferingKey) bool {
	if k.InstanceType != o.InstanceType {
		return k.InstanceType < o.InstanceType
	}
	if k.Zone != o.Zone {
		return k.Zone < o.Zone
	}
	return k.CapacityType < o.CapacityType
}
