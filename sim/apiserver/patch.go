package apiserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MergeFrom is client.MergeFromWithOptions for the simulated world's own
// controllers: the same merge patch, with the same data for any client, but
// which this server applies without computing it when base is still exactly
// what it stores. Applying the merge patch from base to obj to an object
// equal to base gives obj as it reads back from JSON (a merge patch cannot
// set null, and decoding null into a zero field leaves it zero), so the
// server decodes obj instead of marshalling three objects and diffing and
// merging two documents, which made patches the largest part of the
// simulated controllers' writes.
func MergeFrom(base client.Object, opts ...client.MergeFromOption) client.Patch {
	var o client.MergeFromOptions
	for _, opt := range opts {
		opt.ApplyToMergeFrom(&o)
	}
	return &mergeFrom{Patch: client.MergeFromWithOptions(base, opts...), base: base, lock: o.OptimisticLock}
}

type mergeFrom struct {
	client.Patch
	base client.Object
	lock bool
}

// applyTo returns what applying the patch of obj to cur gives, with ok set,
// when cur equals the base; otherwise ok is false and the patch must be
// applied the long way. With status set, only the result's status and
// resource version are filled in, as a write to the status subresource
// uses no more: the rest of obj need not go through JSON.
func (m *mergeFrom) applyTo(cur, obj client.Object, status bool) (client.Object, bool, error) {
	if !reflect.DeepEqual(m.base, cur) {
		return nil, false, nil
	}
	if m.lock {
		// The patch carries the base's resource version (and Data
		// fails without one).
		v := m.base.GetResourceVersion()
		if v == "" {
			return nil, false, nil
		}
		was := obj.GetResourceVersion()
		obj.SetResourceVersion(v)
		defer obj.SetResourceVersion(was)
	}
	out := zeroOf(cur).(client.Object)
	if f, ok := reflect.TypeOf(obj).Elem().FieldByName("Status"); status && ok && strings.Split(f.Tag.Get("json"), ",")[0] == "status" {
		data, err := json.Marshal(reflect.ValueOf(obj).Elem().FieldByIndex(f.Index).Interface())
		if err != nil {
			return nil, false, err
		}
		if err := json.Unmarshal(data, reflect.ValueOf(out).Elem().FieldByIndex(f.Index).Addr().Interface()); err != nil {
			return nil, false, apierrors.NewBadRequest(fmt.Sprintf("decoding patched object: %v", err))
		}
		out.SetResourceVersion(obj.GetResourceVersion())
		return out, true, nil
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, false, err
	}
	if err := json.Unmarshal(data, out); err != nil {
		return nil, false, apierrors.NewBadRequest(fmt.Sprintf("decoding patched object: %v", err))
	}
	return out, true, nil
}

// MergePatch applies a JSON merge patch (RFC 7386) to doc: objects merge key
// by key, null deletes a key, and anything else replaces the target.
func MergePatch(doc, patch []byte) ([]byte, error) {
	d, err := decodeJSON(doc)
	if err != nil {
		return nil, fmt.Errorf("document: %w", err)
	}
	p, err := decodeJSON(patch)
	if err != nil {
		return nil, fmt.Errorf("patch: %w", err)
	}
	return json.Marshal(mergeValue(d, p))
}

func mergeValue(target, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	tm, ok := target.(map[string]any)
	if !ok {
		tm = map[string]any{}
	}
	for k, v := range pm {
		if v == nil {
			delete(tm, k)
			continue
		}
		tm[k] = mergeValue(tm[k], v)
	}
	return tm
}

// decodeJSON decodes keeping numbers exact, so that large integers survive
// a round trip.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// JSONPatch applies a JSON patch (RFC 6902) to doc: a list of add, remove,
// replace, move, copy and test operations on JSON pointers.
func JSONPatch(doc, patch []byte) ([]byte, error) {
	d, err := decodeJSON(doc)
	if err != nil {
		return nil, fmt.Errorf("document: %w", err)
	}
	var ops []struct {
		Op    string          `json:"op"`
		Path  string          `json:"path"`
		From  string          `json:"from"`
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(patch, &ops); err != nil {
		return nil, fmt.Errorf("patch: %w", err)
	}
	for i, op := range ops {
		var value any
		if len(op.Value) > 0 {
			if value, err = decodeJSON(op.Value); err != nil {
				return nil, fmt.Errorf("operation %d: value: %w", i, err)
			}
		}
		switch op.Op {
		case "add":
			d, err = pointerSet(d, op.Path, value, true)
		case "replace":
			d, err = pointerSet(d, op.Path, value, false)
		case "remove":
			d, _, err = pointerRemove(d, op.Path)
		case "move", "copy":
			var v any
			if op.Op == "move" {
				d, v, err = pointerRemove(d, op.From)
			} else {
				v, err = pointerGet(d, op.From)
			}
			if err == nil {
				d, err = pointerSet(d, op.Path, v, true)
			}
		case "test":
			var v any
			if v, err = pointerGet(d, op.Path); err == nil {
				a, _ := json.Marshal(v)
				b, _ := json.Marshal(value)
				if !bytes.Equal(a, b) {
					err = fmt.Errorf("test failed: %s is %s, not %s", op.Path, a, b)
				}
			}
		default:
			err = fmt.Errorf("unknown op %q: use add, remove, replace, move, copy or test", op.Op)
		}
		if err != nil {
			return nil, fmt.Errorf("operation %d (%s %s): %w", i, op.Op, op.Path, err)
		}
	}
	return json.Marshal(d)
}

func splitPointer(p string) ([]string, error) {
	if p == "" {
		return nil, nil
	}
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("path %q must start with /", p)
	}
	parts := strings.Split(p[1:], "/")
	for i, s := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return parts, nil
}

func pointerGet(d any, p string) (any, error) {
	parts, err := splitPointer(p)
	if err != nil {
		return nil, err
	}
	cur := d
	for _, k := range parts {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[k]
			if !ok {
				return nil, fmt.Errorf("%s: no key %q", p, k)
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(c) {
				return nil, fmt.Errorf("%s: no index %q", p, k)
			}
			cur = c[i]
		default:
			return nil, fmt.Errorf("%s: %q is not inside an object or list", p, k)
		}
	}
	return cur, nil
}

// pointerSet sets the value at p; insert adds (to lists, before the index, or
// at the end for "-"), otherwise the location must exist.
func pointerSet(d any, p string, value any, insert bool) (any, error) {
	parts, err := splitPointer(p)
	if err != nil {
		return nil, err
	}
	if len(parts) == 0 {
		return value, nil
	}
	parent, err := pointerGet(d, "/"+strings.Join(escape(parts[:len(parts)-1]), "/"))
	if len(parts) == 1 {
		parent, err = d, nil
	}
	if err != nil {
		return nil, err
	}
	last := parts[len(parts)-1]
	switch c := parent.(type) {
	case map[string]any:
		if _, ok := c[last]; !ok && !insert {
			return nil, fmt.Errorf("%s: no key %q to replace", p, last)
		}
		c[last] = value
		return d, nil
	case []any:
		var list []any
		if last == "-" && insert {
			list = append(c, value)
		} else {
			i, err := strconv.Atoi(last)
			if err != nil || i < 0 || i > len(c) || (!insert && i == len(c)) {
				return nil, fmt.Errorf("%s: bad index %q", p, last)
			}
			if insert {
				list = append(append(append([]any{}, c[:i]...), value), c[i:]...)
			} else {
				c[i] = value
				list = c
			}
		}
		return replaceAt(d, parts[:len(parts)-1], list)
	}
	return nil, fmt.Errorf("%s: parent is not an object or list", p)
}

func pointerRemove(d any, p string) (any, any, error) {
	parts, err := splitPointer(p)
	if err != nil || len(parts) == 0 {
		return nil, nil, fmt.Errorf("cannot remove %q", p)
	}
	parentPath := "/" + strings.Join(escape(parts[:len(parts)-1]), "/")
	parent := d
	if len(parts) > 1 {
		if parent, err = pointerGet(d, parentPath); err != nil {
			return nil, nil, err
		}
	}
	last := parts[len(parts)-1]
	switch c := parent.(type) {
	case map[string]any:
		v, ok := c[last]
		if !ok {
			return nil, nil, fmt.Errorf("%s: no key %q", p, last)
		}
		delete(c, last)
		return d, v, nil
	case []any:
		i, err := strconv.Atoi(last)
		if err != nil || i < 0 || i >= len(c) {
			return nil, nil, fmt.Errorf("%s: no index %q", p, last)
		}
		v := c[i]
		list := append(append([]any{}, c[:i]...), c[i+1:]...)
		out, err := replaceAt(d, parts[:len(parts)-1], list)
		return out, v, err
	}
	return nil, nil, fmt.Errorf("%s: parent is not an object or list", p)
}

// replaceAt puts v at the location of parts (lists change length, so their
// parent must point at the new slice).
func replaceAt(d any, parts []string, v any) (any, error) {
	if len(parts) == 0 {
		return v, nil
	}
	return pointerSet(d, "/"+strings.Join(escape(parts), "/"), v, false)
}

func escape(parts []string) []string {
	out := make([]string, len(parts))
	for i, s := range parts {
		out[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
	}
	return out
}
