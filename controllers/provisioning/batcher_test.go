package provisioning

import (
	"testing"
	"time"
)

func TestBatcher(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	type step struct {
		trigger bool // trigger at ms, otherwise ask Ready at ms
		ms      int
		ready   bool
		wait    time.Duration
	}
	tests := []struct {
		name      string
		idle, max time.Duration
		steps     []step
	}{
		{"no trigger, no window", 0, 0, []step{
			{ms: 0, ready: false, wait: 0},
			{ms: 5000, ready: false, wait: 0},
		}},
		{"closes after idle", 0, 0, []step{
			{trigger: true, ms: 0},
			{ms: 0, wait: time.Second},
			{ms: 400, wait: 600 * time.Millisecond},
			{ms: 1000, ready: true},
			{ms: 1001, ready: false, wait: 0}, // handed out once
		}},
		{"triggers extend the idle window", 0, 0, []step{
			{trigger: true, ms: 0},
			{trigger: true, ms: 800},
			{ms: 1000, wait: 800 * time.Millisecond},
			{trigger: true, ms: 1500},
			{ms: 2400, wait: 100 * time.Millisecond},
			{ms: 2500, ready: true},
		}},
		{"max caps a busy window", 0, 0, []step{
			{trigger: true, ms: 0},
			{trigger: true, ms: 900},
			{trigger: true, ms: 1800},
			{trigger: true, ms: 2700},
			{trigger: true, ms: 3600},
			{trigger: true, ms: 4500},
			{trigger: true, ms: 5400},
			{trigger: true, ms: 6300},
			{trigger: true, ms: 7200},
			{trigger: true, ms: 8100},
			{trigger: true, ms: 9000},
			{ms: 9500, wait: 500 * time.Millisecond}, // max, not idle, is nearer
			{trigger: true, ms: 9900},
			{ms: 10000, ready: true},
		}},
		{"a new window after one closed", 0, 0, []step{
			{trigger: true, ms: 0},
			{ms: 1200, ready: true},
			{trigger: true, ms: 3000},
			{ms: 3500, wait: 500 * time.Millisecond},
			{ms: 4000, ready: true},
		}},
		{"custom durations", 200 * time.Millisecond, 500 * time.Millisecond, []step{
			{trigger: true, ms: 0},
			{ms: 100, wait: 100 * time.Millisecond},
			{trigger: true, ms: 150},
			{trigger: true, ms: 300},
			{trigger: true, ms: 450},
			{ms: 460, wait: 40 * time.Millisecond},
			{ms: 500, ready: true},
		}},
		{"max below idle is raised to idle", 2 * time.Second, time.Second, []step{
			{trigger: true, ms: 0},
			{ms: 1500, wait: 500 * time.Millisecond},
			{ms: 2000, ready: true},
		}},
		{"a late trigger does not move the window back", 0, 0, []step{
			{trigger: true, ms: 500},
			{trigger: true, ms: 100},
			{ms: 1000, wait: 500 * time.Millisecond},
			{ms: 1500, ready: true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBatcher(tt.idle, tt.max)
			for i, s := range tt.steps {
				if s.trigger {
					b.Trigger(at(s.ms))
					continue
				}
				ready, wait := b.Ready(at(s.ms))
				if ready != s.ready || wait != s.wait {
					t.Fatalf("step %d: Ready(+%dms) = %v, %s; want %v, %s", i, s.ms, ready, wait, s.ready, s.wait)
				}
			}
		})
	}
}
