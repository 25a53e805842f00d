package provisioning

import (
	"sync"
	"time"
)

// Batch window defaults.
const (
	// DefaultBatchIdle is how long a window stays open without a new trigger.
	DefaultBatchIdle = time.Second
	// DefaultBatchMax is the longest a window stays open in total.
	DefaultBatchMax = 10 * time.Second
)

// Batcher gathers triggers into windows, so that pods that become pending
// together are provisioned for together. A window opens at the first trigger
// and closes once idle has passed without a new trigger, or once max has
// passed since it opened, whichever comes first.
//
// It reads no clock: callers pass the time. It is safe for concurrent use,
// since triggers come from watch handlers while the provisioner polls it.
type Batcher struct {
	idle, max time.Duration

	mu    sync.Mutex
	open  bool
	start time.Time // first trigger of the open window
	last  time.Time // latest trigger of the open window
}

// NewBatcher returns a Batcher; a zero or negative idle or max takes its
// default, and max is at least idle.
func NewBatcher(idle, max time.Duration) *Batcher {
	if idle <= 0 {
		idle = DefaultBatchIdle
	}
	if max <= 0 {
		max = DefaultBatchMax
	}
	if max < idle {
		max = idle
	}
	return &Batcher{idle: idle, max: max}
}

// Trigger records that something worth provisioning for happened at now,
// opening a window if none is open.
func (b *Batcher) Trigger(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.open {
		b.open, b.start, b.last = true, now, now
		return
	}
	if now.After(b.last) {
		b.last = now
	}
}

// Ready reports whether the open window has closed at now. A closed window is
// handed out once: Ready returns true and forgets it, so the next trigger
// opens a new one. While the window is still open, wait is how long until it
// closes if no trigger arrives meanwhile. With no window open, Ready returns
// false and a zero wait.
func (b *Batcher) Ready(now time.Time) (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.open {
		return false, 0
	}
	closes := b.last.Add(b.idle)
	if limit := b.start.Add(b.max); limit.Before(closes) {
		closes = limit
	}
	if !now.Before(closes) {
		b.open = false
		return true, 0
	}
	return false, closes.Sub(now)
}

// Open reports whether a window is open.
func (b *Batcher) Open() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.open
}
