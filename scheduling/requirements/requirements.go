package requirements

import (
	"iter"
	"slices"
	"strings"

	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
)

// Requirements is a conjunction of Requirements, at most one per label key,
// kept sorted by key. The zero value has no requirements and is met by every
// node.
//
// Requirements is an immutable value: methods return new values that may
// share storage with their inputs, and nothing is ever modified in place.
type Requirements struct {
	reqs []Requirement
}

// New returns the conjunction of reqs: requirements on the same key are
// intersected.
func New(reqs ...Requirement) Requirements {
	if len(reqs) == 0 {
		return Requirements{}
	}
	out := slices.Clone(reqs)
	slices.SortStableFunc(out, func(a, b Requirement) int { return strings.Compare(a.key, b.key) })
	merged := out[:1]
	for _, r := range out[1:] {
		last := &merged[len(merged)-1]
		if last.key == r.key {
			*last = last.Intersect(r)
			continue
		}
		merged = append(merged, r)
	}
	return Requirements{reqs: slices.Clip(merged)}
}

// Add returns r with reqs added: a requirement on a key that r already
// constrains is intersected with r's.
func (r Requirements) Add(reqs ...Requirement) Requirements {
	return r.Intersect(New(reqs...))
}

// Intersect returns the requirements met by exactly the nodes that meet both
// r and o: the union of their keys, intersected key by key.
func (r Requirements) Intersect(o Requirements) Requirements {
	// Adding a pod to a claim usually changes nothing: answer that without
	// allocating.
	switch {
	case len(o.reqs) <= len(r.reqs) && covers(r.reqs, o.reqs):
		return r
	case len(r.reqs) < len(o.reqs) && covers(o.reqs, r.reqs):
		return o
	}
	out := make([]Requirement, 0, len(r.reqs)+len(o.reqs))
	a, b := r.reqs, o.reqs
	for len(a) > 0 && len(b) > 0 {
		switch c := strings.Compare(a[0].key, b[0].key); {
		case c < 0:
			out = append(out, a[0])
			a = a[1:]
		case c > 0:
			out = append(out, b[0])
			b = b[1:]
		default:
			out = append(out, a[0].Intersect(b[0]))
			a, b = a[1:], b[1:]
		}
	}
	out = append(out, a...)
	out = append(out, b...)
	return Requirements{reqs: out}
}

// covers reports whether big already implies every requirement in small, so
// that their intersection is big.
func covers(big, small []Requirement) bool {
	for i := range small {
		j, found := search(big, small[i].key)
		if !found {
			return false
		}
		big = big[j:]
		if !subset(big[0], small[i]) {
			return false
		}
	}
	return true
}

// UndefinedPolicy decides how Compatible treats a key that the other side
// constrains but the receiver does not define. It reports whether the
// receiver may still come to define key, so that only the other side's own
// satisfiability matters. When it returns false (or the policy is nil), an
// undefined key means the label will be absent, and only a requirement that
// allows absence (NotIn, DoesNotExist) is compatible.
//
// A NodePool template checked against a pod typically uses
// AllowUndefinedWellKnown: the instance type and offering chosen later define
// labels such as the zone, but nothing will ever define a custom label the
// template does not mention.
type UndefinedPolicy func(key string) bool

// RequireDefined is the UndefinedPolicy under which every undefined key means
// the label will be absent. It is the same as a nil policy.
func RequireDefined(string) bool { return false }

// AllowUndefined is the UndefinedPolicy under which every undefined key may
// still be defined.
func AllowUndefined(string) bool { return true }

// AllowUndefinedWellKnown is the UndefinedPolicy under which the well-known
// labels (wellknown.IsWellKnownLabel), which a cloud provider defines per
// instance type and offering, may still be defined, and no other key.
func AllowUndefinedWellKnown(key string) bool { return wellknown.IsWellKnownLabel(key) }

// Compatible returns nil if a node that r describes can meet other, r being
// the side that defines labels (a NodePool template, an instance type, a
// node) and other the side that requires them (a pod). It judges key by key:
// on a key both constrain, the two must intersect; a key only other
// constrains is judged by undefined (see UndefinedPolicy); keys only r
// constrains do not matter.
//
// Otherwise it returns an *IncompatibleError for the first offending key in
// sorted order. Compatible allocates only to build that error; Conflict
// answers the same question without allocating at all.
func (r Requirements) Compatible(other Requirements, undefined UndefinedPolicy) error {
	i, found := r.conflict(other, undefined)
	if !found {
		return nil
	}
	want := other.reqs[i]
	have, defined := r.Get(want.key)
	return &IncompatibleError{Key: want.key, Required: want, Offered: have, Defined: defined}
}

// Conflict returns the first key, in sorted order, on which other cannot be
// met by r, under the rules of Compatible. It does not allocate.
func (r Requirements) Conflict(other Requirements, undefined UndefinedPolicy) (key string, found bool) {
	i, found := r.conflict(other, undefined)
	if !found {
		return "", false
	}
	return other.reqs[i].key, true
}

// conflict returns the index in other of the first requirement that r
// cannot meet.
func (r Requirements) conflict(other Requirements, undefined UndefinedPolicy) (int, bool) {
	rest := r.reqs
	for i := range other.reqs {
		want := &other.reqs[i]
		j, defined := search(rest, want.key)
		rest = rest[j:]
		switch {
		case defined:
			if !intersects(rest[0], *want) {
				return i, true
			}
		case undefined != nil && undefined(want.key):
			if !want.Satisfiable() {
				return i, true
			}
		default:
			if !want.absent {
				return i, true
			}
		}
	}
	return 0, false
}

// Intersects reports whether, on every key that both r and o constrain, some
// value (or the label's absence) meets both. Keys only one side constrains
// are ignored. It does not allocate.
func (r Requirements) Intersects(o Requirements) bool {
	a, b := r.reqs, o.reqs
	if len(a) > len(b) {
		a, b = b, a
	}
	for i := range a {
		j, found := search(b, a[i].key)
		b = b[j:]
		if found && !intersects(a[i], b[0]) {
			return false
		}
	}
	return true
}

// Has reports whether r constrains key.
func (r Requirements) Has(key string) bool {
	_, found := search(r.reqs, normalizeKey(key))
	return found
}

// Get returns the requirement on key, if r constrains it.
func (r Requirements) Get(key string) (Requirement, bool) {
	i, found := search(r.reqs, normalizeKey(key))
	if !found {
		return Requirement{}, false
	}
	return r.reqs[i], true
}

// Replace returns r with the requirement on q's key set to q, added when r
// does not constrain the key. Unlike Add it does not intersect, so it can
// lower a minValues, which an intersection never does (it keeps the larger).
func (r Requirements) Replace(q Requirement) Requirements {
	i, found := search(r.reqs, q.key)
	out := make([]Requirement, 0, len(r.reqs)+1)
	out = append(out, r.reqs[:i]...)
	out = append(out, q)
	if found {
		i++
	}
	out = append(out, r.reqs[i:]...)
	return Requirements{reqs: out}
}

// Len returns the number of keys that r constrains.
func (r Requirements) Len() int { return len(r.reqs) }

// All yields r's requirements in key order.
func (r Requirements) All() iter.Seq[Requirement] { return slices.Values(r.reqs) }

// Equal reports whether r and o are the same requirements.
func (r Requirements) Equal(o Requirements) bool {
	return slices.EqualFunc(r.reqs, o.reqs, Requirement.Equal)
}

// Labels returns the labels that r pins down: the key and value of every
// requirement that allows exactly one value and not the label's absence.
func (r Requirements) Labels() map[string]string {
	labels := map[string]string{}
	for _, req := range r.reqs {
		if !req.complement && !req.absent && len(req.values) == 1 {
			labels[req.key] = req.values[0]
		}
	}
	return labels
}

// Matches returns nil if a node with these labels meets r, and otherwise an
// *IncompatibleError for the first requirement, in key order, that it fails.
// A missing label meets NotIn and DoesNotExist and fails In, Exists, Gt and
// Lt. A label set only under a deprecated alias of a key (for example
// failure-domain.beta.kubernetes.io/zone) counts for the stable key, as it
// does in FromLabels.
func (r Requirements) Matches(labels map[string]string) error {
	for _, req := range r.reqs {
		value, ok := lookup(labels, req.key)
		if ok && req.Allows(value) || !ok && req.absent {
			continue
		}
		err := &IncompatibleError{Key: req.key, Required: req, Defined: ok}
		if ok {
			err.Offered = Requirement{key: req.key, values: []string{value}}
		}
		return err
	}
	return nil
}

// String returns r's requirements, in key order, separated by ", ". It lists
// every value, so two Requirements have the same String exactly when they
// are Equal.
func (r Requirements) String() string {
	var b strings.Builder
	for i, req := range r.reqs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(req.key)
		b.WriteByte(' ')
		req.describe(&b, -1)
	}
	return b.String()
}

// search returns the index of the requirement on key in sorted reqs, or
// where it would go. It is slices.BinarySearchFunc without copying a
// Requirement per comparison.
func search(reqs []Requirement, key string) (int, bool) {
	lo, hi := 0, len(reqs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if reqs[m].key < key {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < len(reqs) && reqs[lo].key == key
}

// aliases maps each stable label key to the deprecated keys that normalize
// to it, sorted.
var aliases = func() map[string][]string {
	out := map[string][]string{}
	for _, key := range wellknown.WellKnownLabels() {
		if stable := wellknown.NormalizeLabel(key); stable != key {
			out[stable] = append(out[stable], key)
		}
	}
	return out
}()

// lookup returns the value of the label key, or of a deprecated alias of it
// when key itself is not set.
func lookup(labels map[string]string, key string) (string, bool) {
	if value, ok := labels[key]; ok {
		return value, true
	}
	for _, alias := range aliases[key] {
		if value, ok := labels[alias]; ok {
			return value, true
		}
	}
	return "", false
}
