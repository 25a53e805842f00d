package scenario

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
)

// unknownFields walks a decoded JSON value against the Go type it will be
// decoded into and reports every key the type does not have, with its path
// (spec.events[2].spotInteruption) and the fields that would be valid.
// Values of type any (an apply event's object, a patch) are not walked.
func unknownFields(v any, t reflect.Type, path string, report func(field, msg, fix string)) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		fields := jsonFields(t)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ft, ok := fields[k]
			if !ok {
				names := make([]string, 0, len(fields))
				for n := range fields {
					names = append(names, n)
				}
				slices.Sort(names)
				if t == reflect.TypeOf(Event{}) {
					valid := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == "at" })
					report(join(path, k), fmt.Sprintf("unknown event kind %q", k),
						"use one of "+strings.Join(valid, ", ")+suggest(k, valid))
					continue
				}
				report(join(path, k), fmt.Sprintf("unknown field %q", k), "remove it, or use one of "+strings.Join(names, ", ")+suggest(k, names))
				continue
			}
			unknownFields(m[k], ft, join(path, k), report)
		}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return
		}
		l, ok := v.([]any)
		if !ok {
			return
		}
		for i, e := range l {
			unknownFields(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i), report)
		}
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			unknownFields(m[k], t.Elem(), join(path, k), report)
		}
	}
}

// jsonFields returns the JSON names of a struct's fields, with embedded
// structs flattened, and their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if tag == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			for k, v := range jsonFields(f.Type) {
				out[k] = v
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// suggest returns " (did you mean X?)" for the valid name closest to s, when
// one is close enough to be a likely typo.
func suggest(s string, valid []string) string {
	best, bestD := "", 3
	for _, v := range valid {
		if d := distance(strings.ToLower(s), strings.ToLower(v)); d < bestD {
			best, bestD = v, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", best)
}

// distance is the Levenshtein distance between a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
