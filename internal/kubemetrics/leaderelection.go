package kubemetrics

import (
	"context"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// SlowpathCounter registers leader_election_slowpath_total with reg (or
// returns the one registered there already).
func SlowpathCounter(reg prometheus.Registerer) (*prometheus.CounterVec, error) {
	return register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: NameSlowpathTotal,
		Help: "Renewals of the leader-election Lease that had to read it again before writing (client-go's slow path), by Lease name.",
	}, []string{"name"}))
}

// CountSlowpath returns lock, counting in slowpath, under the Lease's name,
// every renewal that takes the slow path.
//
// client-go's leader elector renews its Lease with an update based on the
// record it wrote last (the fast path); when that fails, or when it is not
// sure of the record, it reads the Lease and writes it again (the slow
// path). client-go counts the slow path itself only through a metrics
// provider controller-runtime installs without registering its counter, so
// the renewal is recognized here, at the lock: a write that keeps this
// replica as the holder right after a read that found it holding the Lease.
// A write after a read that found another holder is an acquisition, and one
// that clears the holder a release; neither counts.
func CountSlowpath(lock resourcelock.Interface, name string, slowpath *prometheus.CounterVec) resourcelock.Interface {
	return &slowpathLock{Interface: lock, counter: slowpath.WithLabelValues(name)}
}

type slowpathLock struct {
	resourcelock.Interface
	counter prometheus.Counter

	mu sync.Mutex
	// heldAtRead is whether the last read found this replica holding the
	// Lease, with no write since.
	heldAtRead bool
}

func (l *slowpathLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	rec, raw, err := l.Interface.Get(ctx)
	l.mu.Lock()
	l.heldAtRead = err == nil && rec != nil && rec.HolderIdentity != "" && rec.HolderIdentity == l.Identity()
	l.mu.Unlock()
	return rec, raw, err
}

func (l *slowpathLock) Create(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	l.mu.Lock()
	l.heldAtRead = false
	l.mu.Unlock()
	return l.Interface.Create(ctx, rec)
}

func (l *slowpathLock) Update(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	l.mu.Lock()
	renewal := l.heldAtRead && rec.HolderIdentity == l.Identity()
	l.heldAtRead = false
	l.mu.Unlock()
	if renewal {
		// Counted before the write, as client-go counts it: a slow path
		// taken is one whether the write then succeeds or not.
		l.counter.Inc()
	}
	return l.Interface.Update(ctx, rec)
}
