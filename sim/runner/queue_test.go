package runner

import (
	"slices"
	"testing"
	"time"

	"github.com/stevedore-autoscaler/stevedore/sim/watch"
)

// TestQueueDropDead: a restart's purge takes out exactly the replaced
// controllers' requests and leaves the rest in their order, still
// de-duplicated.
func TestQueueDropDead(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	old, cur := &driven{}, &driven{}
	q := newQueue()
	for i, c := range []struct {
		d    *driven
		name string
	}{{old, "a"}, {cur, "b"}, {old, "c"}, {cur, "d"}, {old, "e"}, {cur, "f"}} {
		q.addReconcile(c.d, watch.Named(c.name), t0.Add(time.Duration(6-i)*time.Second))
	}
	old.dead = true
	q.dropDead()
	if len(q.pending) != 3 {
		t.Fatalf("pending holds %d requests after the purge, want 3", len(q.pending))
	}
	// Re-adding a live request later must not duplicate it.
	q.addReconcile(cur, watch.Named("b"), t0.Add(time.Hour))
	var got []string
	for q.len() > 0 {
		it := q.pop()
		if it.ctrl != cur {
			t.Fatalf("request %s of a replaced controller survived the purge", it.req)
		}
		got = append(got, it.req.Name)
	}
	if want := []string{"f", "d", "b"}; !slices.Equal(got, want) {
		t.Errorf("order after the purge %v, want %v", got, want)
	}
}
