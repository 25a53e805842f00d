package apiserver

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
)

// ObjectRef names an object an event is about.
type ObjectRef struct {
	Kind      string
	Namespace string
	Name      string
	UID       string
}

// String renders the reference as Kind/namespace/name (Kind/name when
// cluster-scoped).
func (r ObjectRef) String() string {
	if r.Kind == "" {
		return ""
	}
	if r.Namespace == "" {
		return r.Kind + "/" + r.Name
	}
	return r.Kind + "/" + r.Namespace + "/" + r.Name
}

// Event is one event a controller recorded.
type Event struct {
	// Source is the controller that recorded it.
	Source    string
	Type      string
	Reason    string
	Action    string
	Note      string
	Regarding ObjectRef
	Related   ObjectRef
}

// Recorder returns an EventRecorder that records events under source. The
// events come out of Drain with the changes.
func (s *Server) Recorder(source string) events.EventRecorder {
	return recorder{s: s, source: source}
}

type recorder struct {
	s      *Server
	source string
}

func (r recorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	r.s.recordEventLocked(r.source, regarding, related, eventtype, reason, action, note, args...)
}

func (s *Server) recordEventLocked(source string, regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	if len(args) > 0 {
		note = fmt.Sprintf(note, args...)
	}
	e := Event{
		Source: source, Type: eventtype, Reason: reason, Action: action, Note: note,
		Regarding: s.refOf(regarding), Related: s.refOf(related),
	}
	s.events = append(s.events, e)
}

func (s *Server) refOf(o runtime.Object) ObjectRef {
	if o == nil {
		return ObjectRef{}
	}
	acc, err := meta.Accessor(o)
	if err != nil {
		return ObjectRef{}
	}
	kind := o.GetObjectKind().GroupVersionKind().Kind
	if kind == "" {
		if gvks, _, err := s.scheme.ObjectKinds(o); err == nil && len(gvks) > 0 {
			kind = gvks[0].Kind
		}
	}
	return ObjectRef{Kind: kind, Namespace: acc.GetNamespace(), Name: acc.GetName(), UID: string(acc.GetUID())}
}

// KindOf returns the kind of a typed object the server's scheme knows.
func (s *Server) KindOf(o runtime.Object) (schema.GroupVersionKind, error) { return s.gvkFor(o) }
