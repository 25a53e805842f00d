package scenario

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// ReadChange reads a what-if change (`stevedore simulate --change FILE`):
// YAML or JSON documents, each one of
//
//   - a Kubernetes object, applied at the start of the run as kubectl apply
//     would (a new object, or one merged into the object of that name: a
//     NodePool with new requirements, an EC2NodeClass with a new AMI);
//   - a Scenario event without apiVersion and kind ({releaseImage: {...}},
//     {patch: {...}}, {at: 30m, scale: {...}}), at the start of the run
//     unless it says when;
//   - a Scenario, whose spec.events are taken.
//
// It returns the events and a line describing each document.
func ReadChange(file string, data []byte) ([]Event, []string, error) {
	docs, err := documents(file, data)
	if err != nil {
		return nil, nil, err
	}
	if len(docs) == 0 {
		return nil, nil, fmt.Errorf("%s: no change in it: write an object to apply, an event (such as releaseImage) or a Scenario with events", file)
	}
	var events []Event
	var lines []string
	for _, d := range docs {
		apiVersion, _ := d.obj["apiVersion"].(string)
		kind, _ := d.obj["kind"].(string)
		switch {
		case apiVersion == "" && kind == "":
			var problems []string
			unknownFields(d.obj, reflect.TypeOf(Event{}), "", func(field, msg, fix string) {
				problems = append(problems, fmt.Sprintf("%s: %s (%s)", field, msg, fix))
			})
			if len(problems) > 0 {
				return nil, nil, fmt.Errorf("%s: %s", d.source, strings.Join(problems, "; "))
			}
			e, err := decodeEvent(d.obj)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", d.source, err)
			}
			if len(e.kinds()) != 1 {
				return nil, nil, fmt.Errorf("%s: an event needs exactly one of %s", d.source, strings.Join(EventKinds, ", "))
			}
			events = append(events, e)
			lines = append(lines, describeChange(e))
		case kind == Kind && strings.HasPrefix(apiVersion, "stevedore.io/"):
			spec, _ := d.obj["spec"].(map[string]any)
			list, _ := spec["events"].([]any)
			if len(list) == 0 {
				return nil, nil, fmt.Errorf("%s: the Scenario has no spec.events; a change takes only its events", d.source)
			}
			for i, item := range list {
				m, ok := item.(map[string]any)
				if !ok {
					return nil, nil, fmt.Errorf("%s: spec.events[%d] is not an event", d.source, i)
				}
				e, err := decodeEvent(m)
				if err != nil {
					return nil, nil, fmt.Errorf("%s: spec.events[%d]: %w", d.source, i, err)
				}
				events = append(events, e)
				lines = append(lines, describeChange(e))
			}
		case apiVersion == "" || kind == "":
			return nil, nil, fmt.Errorf("%s: a Kubernetes object needs both apiVersion and kind; an event has neither", d.source)
		default:
			e := Event{At: "0s", Apply: d.obj}
			events = append(events, e)
			lines = append(lines, describeChange(e))
		}
	}
	return events, lines, nil
}

func decodeEvent(m map[string]any) (Event, error) {
	data, err := json.Marshal(m)
	if err != nil {
		return Event{}, err
	}
	var e Event
	if err := json.Unmarshal(data, &e); err != nil {
		return Event{}, err
	}
	if e.At == "" {
		e.At = "0s"
	}
	return e, nil
}

// describeChange is one line saying what an event of a change does.
func describeChange(e Event) string {
	when := ""
	if e.At != "0s" && e.At != "0" {
		when = " at " + string(e.At)
	}
	ref := func(r ObjectRef) string {
		return strings.TrimPrefix(r.Kind+"/"+strings.TrimPrefix(r.Namespace+"/"+r.Name, "/"), "/")
	}
	switch {
	case e.Apply != nil:
		kind, _ := e.Apply["kind"].(string)
		return "apply " + kind + "/" + nameOf(e.Apply) + when
	case e.Patch != nil:
		return "patch " + ref(e.Patch.ObjectRef) + " " + string(e.Patch.Patch) + when
	case e.Delete != nil:
		return "delete " + ref(*e.Delete) + when
	case e.Scale != nil && e.Scale.Replicas != nil:
		return fmt.Sprintf("scale %s to %d%s", ref(e.Scale.ObjectRef), *e.Scale.Replicas, when)
	case e.ReleaseImage != nil:
		r := e.ReleaseImage
		alias := r.Alias
		if alias == "" {
			alias = "al2023"
		}
		id := r.ID
		if id == "" {
			id = "a new image"
		}
		return fmt.Sprintf("release %s as %s@latest%s", id, alias, when)
	}
	return e.EventKind() + when
}
