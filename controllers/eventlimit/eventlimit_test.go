package eventlimit

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

type notes struct{ got []string }

func (n *notes) Eventf(_ runtime.Object, _ runtime.Object, _, reason, _, note string, args ...any) {
	n.got = append(n.got, reason+": "+fmt.Sprintf(note, args...))
}

func TestRateLimit(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	rec := &notes{}
	r := New(rec, time.Minute)
	a := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a", UID: "1"}}
	b := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "b", UID: "2"}}

	for _, step := range []struct {
		obj    *corev1.Node
		reason string
		after  time.Duration
		want   bool
	}{
		{a, "Blocked", 0, true},
		{a, "Blocked", 30 * time.Second, false}, // same object and reason within the interval
		{a, "Other", 0, true},                   // another reason
		{b, "Blocked", 0, true},                 // another object
		{a, "Blocked", 30 * time.Second, true},  // a minute after the first
	} {
		now = now.Add(step.after)
		if got := r.Eventf(now, step.obj, nil, corev1.EventTypeNormal, step.reason, "Act", "node %s", step.obj.Name); got != step.want {
			t.Errorf("%s/%s at %s: recorded %v, want %v", step.obj.Name, step.reason, now.Format(time.TimeOnly), got, step.want)
		}
	}
	if len(rec.got) != 4 || rec.got[0] != "Blocked: node a" {
		t.Errorf("events = %q", rec.got)
	}

	// A recreated object (another UID) is another object.
	a2 := a.DeepCopy()
	a2.UID = "3"
	if !r.Eventf(now, a2, nil, corev1.EventTypeNormal, "Blocked", "Act", "again") {
		t.Error("an object recreated under the same name was held back")
	}

	r.Forget(now.Add(time.Minute))
	r.mu.Lock()
	left := len(r.sent)
	r.mu.Unlock()
	if left != 0 {
		t.Errorf("%d entries remembered after the interval, want 0", left)
	}
}

func TestLongNotesAreCut(t *testing.T) {
	rec := &notes{}
	r := New(rec, time.Minute)
	r.Eventf(time.Now(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, nil, corev1.EventTypeNormal, "R", "Act", "%s", strings.Repeat("x", 2*MaxNoteLength))
	if n := len(rec.got[0]) - len("R: "); n != MaxNoteLength || !strings.HasSuffix(rec.got[0], "...") {
		t.Errorf("note of %d bytes, want %d ending in ...", n, MaxNoteLength)
	}
}

func TestNilDropsEvents(t *testing.T) {
	var r *Recorder
	if r.Eventf(time.Now(), &corev1.Node{}, nil, corev1.EventTypeNormal, "R", "Act", "x") {
		t.Error("a nil Recorder recorded an event")
	}
	r.Forget(time.Now())
	if New(nil, time.Minute).Eventf(time.Now(), &corev1.Node{}, nil, corev1.EventTypeNormal, "R", "Act", "x") {
		t.Error("a Recorder without an EventRecorder recorded an event")
	}
}

func TestRateLimitBy(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	rec := &notes{}
	r := New(rec, 2*time.Minute)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "1"}}
	for i, step := range []struct {
		by    string
		after time.Duration
		want  bool
	}{
		{"12:05", 0, true},
		{"12:05", time.Minute, false}, // same object, reason and by within the interval
		{"12:10", 0, true},            // another by
		{"", 0, true},                 // Eventf's empty by is one more
		{"12:05", time.Minute, true},  // the interval is over
	} {
		now = now.Add(step.after)
		if got := r.EventfBy(now, step.by, pod, nil, corev1.EventTypeNormal, "Until", "Act", "by %s", step.by); got != step.want {
			t.Errorf("step %d (by %q): recorded %v, want %v", i, step.by, got, step.want)
		}
	}
	if r.Eventf(now, pod, nil, corev1.EventTypeNormal, "Until", "Act", "plain") {
		t.Error("Eventf recorded within the interval of EventfBy with an empty by")
	}
	if len(rec.got) != 4 {
		t.Errorf("events = %q, want 4", rec.got)
	}
}
