package environment

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Event is one event a controller recorded.
type Event struct {
	// Kind is the type of the object the event is about: "NodeClaim".
	Kind      string
	Namespace string
	Name      string
	// Type is Normal or Warning.
	Type   string
	Reason string
	// Note is the message, formatted.
	Note string
}

func (ev Event) String() string {
	name := ev.Name
	if ev.Namespace != "" {
		name = ev.Namespace + "/" + name
	}
	return fmt.Sprintf("%s %s %s %s: %s", ev.Kind, name, ev.Type, ev.Reason, ev.Note)
}

// Recorder is an event recorder that keeps the events. It is safe for
// concurrent use.
type Recorder struct {
	mu     sync.Mutex
	events []Event
}

// Eventf records an event about regarding.
func (r *Recorder) Eventf(regarding runtime.Object, _ runtime.Object, eventType, reason, _, note string, args ...any) {
	ev := Event{Kind: kindOf(regarding), Type: eventType, Reason: reason, Note: fmt.Sprintf(note, args...)}
	if o, ok := regarding.(client.Object); ok {
		ev.Namespace, ev.Name = o.GetNamespace(), o.GetName()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
}

// All returns the events recorded, in order.
func (r *Recorder) All() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// Matching returns the events recorded, in order, that have every field
// that want sets.
func (r *Recorder) Matching(want Event) []Event {
	var out []Event
	for _, ev := range r.All() {
		if matches(want.Kind, ev.Kind) && matches(want.Namespace, ev.Namespace) && matches(want.Name, ev.Name) &&
			matches(want.Type, ev.Type) && matches(want.Reason, ev.Reason) && matches(want.Note, ev.Note) {
			out = append(out, ev)
		}
	}
	return out
}

// About returns the events recorded, in order, about objects named name
// with the reason given.
func (r *Recorder) About(name, reason string) []Event {
	return r.Matching(Event{Name: name, Reason: reason})
}

func matches(want, got string) bool { return want == "" || want == got }

// String lists the events, one a line, for failure messages.
func (r *Recorder) String() string {
	var b strings.Builder
	for _, ev := range r.All() {
		b.WriteString(ev.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// Logs keeps the lines logged through an Env's context, as logr's funcr
// formats them: `"level"=0 "msg"="created nodeclaim" "nodepool"="a" ...`.
// It is safe for concurrent use.
type Logs struct {
	mu    sync.Mutex
	lines []string
}

func (l *Logs) add(_, args string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, args)
}

// Lines returns the lines whose message is msg.
func (l *Logs) Lines(msg string) []string {
	return l.filter(func(m string) bool { return m == msg })
}

// LinesStartingWith returns the lines whose message starts with prefix.
func (l *Logs) LinesStartingWith(prefix string) []string {
	return l.filter(func(m string) bool { return strings.HasPrefix(m, prefix) })
}

func (l *Logs) filter(keep func(msg string) bool) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		if msg, ok := message(line); ok && keep(msg) {
			out = append(out, line)
		}
	}
	return out
}

// message returns the message of a funcr line.
func message(line string) (string, bool) {
	const key = `"msg"=`
	i := strings.Index(line, key)
	if i < 0 {
		return "", false
	}
	quoted, err := strconv.QuotedPrefix(line[i+len(key):])
	if err != nil {
		return "", false
	}
	msg, err := strconv.Unquote(quoted)
	return msg, err == nil
}

// String returns the lines, one a line, for failure messages.
func (l *Logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}
