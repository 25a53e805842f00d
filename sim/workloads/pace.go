package workloads

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// How kube-controller-manager paces the pod writes of a workload controller.
//
// Each controller has an API client of its own, with a token bucket of
// --kube-api-qps and --kube-api-burst that every request of the controller
// waits on, whichever object it is for. A sync that finds pods missing
// creates them in "slow start" batches of 1, 2, 4, 8, … — a batch starts once
// every request of the one before has returned, and a failure ends the sync
// — and creates at most BurstReplicas (ReplicaSet) or MaxPodCreatesPerSync
// (Job) per sync; the next sync waits until the informer has seen them all.
// Deletions of one sync go out together, each waiting for its token.
//
// The simulated API answers at once and its informers see every write at
// once, so the pace of a large scale-out is the bucket's: burst requests at
// once, then qps a second.
const (
	// DefaultKubeAPIQPS and DefaultKubeAPIBurst are the local test
	// cluster's kube-controller-manager settings, as managed control planes
	// raise them; upstream's defaults are 20 and 30.
	DefaultKubeAPIQPS   = 100
	DefaultKubeAPIBurst = 200
	// BurstReplicas caps the pods a ReplicaSet sync creates or deletes
	// (the ReplicaSet controller's burstReplicas).
	BurstReplicas = 500
	// MaxPodCreatesPerSync caps the pods a Job sync creates (the Job
	// controller's MaxPodCreateDeletePerSync).
	MaxPodCreatesPerSync = 500
	// MaxStatefulSetBatch caps a StatefulSet's slow-start batch (the
	// StatefulSet controller's MaxBatchSize); it has no cap per sync.
	MaxStatefulSetBatch = 500
)

// bucket is a client-go token bucket in virtual time: burst tokens, one more
// every interval. It is kept as the time it will be full again, so that the
// arithmetic is exact.
type bucket struct {
	interval time.Duration
	burst    int
	full     time.Time
}

func newBucket(qps float64, burst int) *bucket {
	return &bucket{interval: max(time.Duration(float64(time.Second)/qps), time.Nanosecond), burst: max(burst, 1)}
}

// take takes, at now, as many of n units of cost tokens each as the bucket
// holds, and returns how many it took and, when fewer than n, how long until
// the next unit is there.
func (b *bucket) take(now time.Time, n, cost int) (int, time.Duration) {
	if b.full.Before(now) {
		b.full = now
	}
	// A unit costing more than the bucket holds is taken when it is full:
	// the requests it stands for would go one after the other anyway.
	unit := time.Duration(min(cost, b.burst)) * b.interval
	room := now.Add(time.Duration(b.burst) * b.interval).Sub(b.full)
	got := min(n, int(room/unit))
	b.full = b.full.Add(time.Duration(got) * unit)
	if got == n {
		return got, 0
	}
	next := b.full.Add(unit - time.Duration(b.burst)*b.interval)
	return got, next.Sub(now)
}

// podSync is the pod writes a sync still has to make.
type podSync struct {
	deleting bool
	left     int // writes the sync still has to make
	batch    int // size of the current slow-start batch (creations)
	inBatch  int // writes of the current batch still to make
	maxBatch int // cap on a batch's size; 0 for none
}

// creations is a sync that creates n pods in slow-start batches.
func creations(n, maxBatch int) *podSync {
	s := &podSync{left: n, maxBatch: maxBatch}
	s.nextBatch(1)
	return s
}

// deletions is a sync that deletes n pods, all at once.
func deletions(n int) *podSync { return &podSync{deleting: true, left: n, inBatch: n} }

func (s *podSync) nextBatch(size int) {
	if s.maxBatch > 0 {
		size = min(size, s.maxBatch)
	}
	s.batch = min(size, s.left)
	s.inBatch = s.batch
}

// made records n writes of the current batch made.
func (s *podSync) made(n int) {
	s.left -= n
	s.inBatch -= n
	if s.inBatch == 0 && s.left > 0 && !s.deleting {
		// Every request of the batch has returned: the next is twice as
		// large.
		s.nextBatch(2 * s.batch)
	}
}

// pacer is one controller's client as far as pace goes: its token bucket,
// and its syncs under way by object (a sync waiting for tokens is a worker
// blocked in the client).
type pacer struct {
	bucket *bucket
	syncs  map[types.NamespacedName]*podSync
}

func newPacer(qps float64, burst int) *pacer {
	return &pacer{bucket: newBucket(qps, burst), syncs: map[types.NamespacedName]*podSync{}}
}

// run goes on with the sync of the object key, or starts one with start
// (nil: nothing to do), and makes as many of its writes as the bucket allows
// at now, each of cost tokens, through write(sync, n). It returns how long
// until it can go on, zero when the sync is done. A failed write ends the
// sync, as a failed batch does.
func (p *pacer) run(now time.Time, key types.NamespacedName, cost int, start func() *podSync, write func(s *podSync, n int) error) (time.Duration, error) {
	s := p.syncs[key]
	if s == nil {
		if s = start(); s == nil || s.left <= 0 {
			return 0, nil
		}
		p.syncs[key] = s
	}
	for s.left > 0 {
		want := s.inBatch
		got, wait := p.bucket.take(now, want, cost)
		if got > 0 {
			if err := write(s, got); err != nil {
				delete(p.syncs, key)
				return 0, err
			}
			s.made(got)
		}
		if got < want {
			return wait, nil
		}
	}
	delete(p.syncs, key)
	return 0, nil
}

// forget drops the sync of an object that is gone.
func (p *pacer) forget(key types.NamespacedName) { delete(p.syncs, key) }
