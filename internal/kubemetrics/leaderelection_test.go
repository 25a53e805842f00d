package kubemetrics

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }

// memoryLock is a Lease held in memory.
type memoryLock struct {
	identity string
	rec      *resourcelock.LeaderElectionRecord
}

func (m *memoryLock) Get(context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	r := *m.rec
	return &r, []byte(r.HolderIdentity), nil
}
func (m *memoryLock) Create(_ context.Context, r resourcelock.LeaderElectionRecord) error {
	m.rec = &r
	return nil
}
func (m *memoryLock) Update(_ context.Context, r resourcelock.LeaderElectionRecord) error {
	m.rec = &r
	return nil
}
func (m *memoryLock) RecordEvent(string) {}
func (m *memoryLock) Identity() string   { return m.identity }
func (m *memoryLock) Describe() string   { return "memory" }
func held(by string) resourcelock.LeaderElectionRecord {
	return resourcelock.LeaderElectionRecord{HolderIdentity: by}
}

// TestSlowpathCountsRenewalsAfterARead drives the lock through the calls
// client-go's elector makes in each case and checks which count.
func TestSlowpathCountsRenewalsAfterARead(t *testing.T) {
	const me, other = "me", "other"
	get := func(l resourcelock.Interface) {
		if _, _, err := l.Get(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	update := func(l resourcelock.Interface, r resourcelock.LeaderElectionRecord) {
		if err := l.Update(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name   string
		holder string // who holds the Lease at the start
		calls  func(l resourcelock.Interface)
		want   float64
	}{
		{"fast-path renewal", me, func(l resourcelock.Interface) { update(l, held(me)) }, 0},
		{"slow-path renewal", me, func(l resourcelock.Interface) { get(l); update(l, held(me)) }, 1},
		{"two slow-path renewals", me, func(l resourcelock.Interface) {
			get(l)
			update(l, held(me))
			get(l)
			update(l, held(me))
		}, 2},
		{"fast path after a slow path", me, func(l resourcelock.Interface) {
			get(l)
			update(l, held(me))
			update(l, held(me))
		}, 1},
		{"acquisition", other, func(l resourcelock.Interface) { get(l); update(l, held(me)) }, 0},
		{"release", me, func(l resourcelock.Interface) { get(l); update(l, held("")) }, 0},
		{"lease read but not written", me, func(l resourcelock.Interface) { get(l) }, 0},
		{"creation", "", func(l resourcelock.Interface) {
			if err := l.Create(context.Background(), held(me)); err != nil {
				t.Fatal(err)
			}
			update(l, held(me))
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			c, err := SlowpathCounter(reg)
			if err != nil {
				t.Fatal(err)
			}
			rec := held(tc.holder)
			l := CountSlowpath(&memoryLock{identity: me, rec: &rec}, "stevedore-leader-election", c)
			tc.calls(l)
			if got := testutil.ToFloat64(c.WithLabelValues("stevedore-leader-election")); got != tc.want {
				t.Errorf("slow paths counted %v, want %v", got, tc.want)
			}
		})
	}
}
