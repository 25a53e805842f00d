package runner

import (
	"container/heap"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/stevedore-autoscaler/stevedore/sim/scenario"
)

// item is one thing due at a virtual time: a reconcile request for a
// controller, or a scenario event.
type item struct {
	at  time.Time
	seq uint64
	// ctrl and req: a reconcile.
	ctrl *driven
	req  reconcile.Request
	// event: a scenario event.
	event *scenario.TimedEvent
	// fn: something the runner itself does then.
	fn    func()
	index int
}

// queue orders items by time, then by the order they were added: the
// simulator's only source of ordering, so that a run is deterministic.
//
// Like a controller-runtime work queue it holds a request at most once per
// controller: adding a request that is already due no later does nothing,
// and adding it for an earlier time moves it.
type queue struct {
	items   itemHeap
	seq     uint64
	pending map[pendingKey]*item
}

type pendingKey struct {
	ctrl *driven
	req  reconcile.Request
}

func newQueue() *queue { return &queue{pending: map[pendingKey]*item{}} }

func (q *queue) addReconcile(d *driven, req reconcile.Request, at time.Time) {
	k := pendingKey{d, req}
	if it, ok := q.pending[k]; ok {
		if !it.at.After(at) {
			return
		}
		q.seq++
		it.at, it.seq = at, q.seq
		heap.Fix(&q.items, it.index)
		return
	}
	q.seq++
	it := &item{at: at, seq: q.seq, ctrl: d, req: req}
	q.pending[k] = it
	heap.Push(&q.items, it)
}

func (q *queue) addEvent(e *scenario.TimedEvent, at time.Time) {
	q.seq++
	heap.Push(&q.items, &item{at: at, seq: q.seq, event: e})
}

func (q *queue) addFunc(fn func(), at time.Time) {
	q.seq++
	heap.Push(&q.items, &item{at: at, seq: q.seq, fn: fn})
}

// peek returns the next item without removing it; nil when empty.
func (q *queue) peek() *item {
	if len(q.items) == 0 {
		return nil
	}
	return q.items[0]
}

func (q *queue) pop() *item {
	it := heap.Pop(&q.items).(*item)
	if it.ctrl != nil {
		delete(q.pending, pendingKey{it.ctrl, it.req})
	}
	return it
}

func (q *queue) len() int { return len(q.items) }

// dropDead removes the requests of controllers a restart replaced. Left in
// the queue they would keep the old controllers, and through them their
// cluster state and instance catalog, alive until each came due, which for
// a periodic controller can be hours away. The remaining items keep their
// times and sequence numbers, so the order of the run does not change.
func (q *queue) dropDead() {
	kept := q.items[:0]
	for _, it := range q.items {
		if it.ctrl != nil && it.ctrl.dead {
			delete(q.pending, pendingKey{it.ctrl, it.req})
			continue
		}
		kept = append(kept, it)
	}
	clear(q.items[len(kept):])
	q.items = kept
	for i, it := range q.items {
		it.index = i
	}
	heap.Init(&q.items)
}

type itemHeap []*item

func (h itemHeap) Len() int { return len(h) }
func (h itemHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}
func (h itemHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *itemHeap) Push(x any) {
	it := x.(*item)
	it.index = len(*h)
	*h = append(*h, it)
}
func (h *itemHeap) Pop() any {
	old := *h
	n := len(old)
	it := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	return it
}
