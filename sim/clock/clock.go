// Package clock is the simulator's virtual clock. Every part of the simulated
// world and every controller reads time from one Clock, and only the runner
// moves it, forward, to the time of the next thing that happens. Idle time is
// skipped, so a simulated day takes as long as the work done in it.
//
// The Clock implements k8s.io/utils/clock.WithTicker so that it can be handed
// to the controllers like the real clock. Its timers and tickers fire (their
// channels receive) when the runner moves time past them, but nothing in the
// simulator waits on them: the runner schedules work through its own queue,
// which is what keeps a run deterministic.
package clock

import (
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// DefaultStart is the virtual start of a run that names none: Monday
// 5 January 2026, 00:00 UTC. A Monday, so that weekday budget schedules
// behave as in an ordinary week.
var DefaultStart = time.Date(2026, time.January, 5, 0, 0, 0, 0, time.UTC)

// Clock is the virtual clock.
type Clock struct {
	*clocktesting.FakeClock
}

// New returns a Clock that reads start until it is moved.
func New(start time.Time) *Clock {
	return &Clock{FakeClock: clocktesting.NewFakeClock(start.UTC())}
}

// AdvanceTo moves the clock to t. A t before the clock's time is ignored:
// virtual time never goes backwards.
func (c *Clock) AdvanceTo(t time.Time) {
	if t.After(c.Now()) {
		c.SetTime(t)
	}
}
