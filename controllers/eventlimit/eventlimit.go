// Package eventlimit records Kubernetes events without flooding: an event of a
// given reason about a given object is recorded at most once per interval.
//
// Controllers that look at the whole cluster on every pass (the provisioner,
// the disruption controller) would otherwise repeat the same warning about
// the same pod or node every few seconds. Time is passed in by the caller, so
// the same code behaves the same under a real and a simulated clock.
package eventlimit

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MaxNoteLength is the longest note the events API accepts; longer notes are
// cut short with "...".
const MaxNoteLength = 1024

// Recorder records events through an events.EventRecorder, at most one per
// object, reason and interval. Create it with New; it is safe for concurrent
// use. A nil Recorder, or one without an EventRecorder, drops every event.
type Recorder struct {
	rec      events.EventRecorder
	interval time.Duration

	mu sync.Mutex
	// sent remembers when an event was last recorded, by object and reason.
	sent map[string]time.Time
}

// New returns a Recorder that passes events to rec, at most one per object
// and reason within interval. rec may be nil, which drops events.
func New(rec events.EventRecorder, interval time.Duration) *Recorder {
	return &Recorder{rec: rec, interval: interval, sent: map[string]time.Time{}}
}

// Eventf records an event about obj unless one with the same reason was
// recorded about it within the interval before now. It reports whether the
// event was recorded.
func (r *Recorder) Eventf(now time.Time, obj client.Object, related runtime.Object, eventType, reason, action, note string, args ...any) bool {
	return r.EventfBy(now, "", obj, related, eventType, reason, action, note, args...)
}

// EventfBy is Eventf for an event whose occurrences differ by more than
// their object and reason: by tells them apart (a pod's deadline, the issue
// a check found), so that an event of the same object and reason but
// another by is recorded within the interval. Eventf is EventfBy with an
// empty by.
func (r *Recorder) EventfBy(now time.Time, by string, obj client.Object, related runtime.Object, eventType, reason, action, note string, args ...any) bool {
	if r == nil || r.rec == nil {
		return false
	}
	// The UID tells apart an object deleted and created again under the
	// same name, which deserves its own events.
	key := fmt.Sprintf("%T/%s/%s/%s/%s/%s", obj, obj.GetNamespace(), obj.GetName(), obj.GetUID(), reason, by)
	r.mu.Lock()
	last, seen := r.sent[key]
	if seen && now.Sub(last) < r.interval {
		r.mu.Unlock()
		return false
	}
	r.sent[key] = now
	r.mu.Unlock()
	msg := fmt.Sprintf(note, args...)
	if len(msg) > MaxNoteLength {
		msg = strings.ToValidUTF8(msg[:MaxNoteLength-3], "") + "..."
	}
	r.rec.Eventf(obj, related, eventType, reason, action, "%s", msg)
	return true
}

// Forget drops what the Recorder remembers about events older than the
// interval, which no longer hold anything back. Call it now and then so that
// memory does not grow with every object ever seen.
func (r *Recorder) Forget(now time.Time) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, t := range r.sent {
		if now.Sub(t) >= r.interval {
			delete(r.sent, k)
		}
	}
}
