package requirements

import (
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// fuzzValues are the label values that fuzzed requirements are built from
// and probed with: integers in several spellings, and words.
var fuzzValues = []string{"0", "1", "2", "3", "5", "05", "8", "13", "-2", "+3", "a", "b", "x9"}

// probeValues adds values that no fuzzed requirement names.
var probeValues = append([]string{"4", "6", "7", "003", "-1", "z", "99"}, fuzzValues...)

var fuzzKeys = []string{"example.com/a", "example.com/b", "topology.kubernetes.io/zone"}

// reader turns fuzz input into small choices.
type reader struct{ data []byte }

func (r *reader) next(n int) int {
	if len(r.data) == 0 {
		return 0
	}
	b := r.data[0]
	r.data = r.data[1:]
	return int(b) % n
}

func (r *reader) requirement(key string) Requirement {
	var (
		op     corev1.NodeSelectorOperator
		values []string
	)
	switch r.next(8) {
	case 0:
		op = corev1.NodeSelectorOpIn
	case 1:
		op = corev1.NodeSelectorOpNotIn
	case 2:
		op = corev1.NodeSelectorOpExists
	case 3:
		op = corev1.NodeSelectorOpDoesNotExist
	case 4:
		op = corev1.NodeSelectorOpGt
	case 5:
		op = corev1.NodeSelectorOpLt
	case 6:
		op = OpGte
	case 7:
		op = OpLte
	}
	switch op {
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
		for n := 1 + r.next(4); n > 0; n-- {
			values = append(values, fuzzValues[r.next(len(fuzzValues))])
		}
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, OpGte, OpLte:
		values = []string{strconv.Itoa(r.next(12) - 3)}
	}
	req, err := NewRequirement(key, op, values...)
	if err != nil {
		panic(err)
	}
	if n := r.next(4); n > 0 {
		req = req.WithMinValues(n)
	}
	return req
}

func (r *reader) requirements() Requirements {
	var out []Requirement
	for n := r.next(5); n > 0; n-- {
		out = append(out, r.requirement(fuzzKeys[r.next(len(fuzzKeys))]))
	}
	return New(out...)
}

func (r *reader) labels() map[string]string {
	labels := map[string]string{}
	for _, k := range fuzzKeys {
		if i := r.next(len(probeValues) + 1); i < len(probeValues) {
			labels[k] = probeValues[i]
		}
	}
	return labels
}

// FuzzAlgebra checks the algebraic laws that the packer relies on, on
// random requirements: intersection is commutative, idempotent and
// associative and means "both", Compatible agrees with Matches, and a
// requirement survives a round trip through node selector requirements.
func FuzzAlgebra(f *testing.F) {
	f.Add([]byte{0, 3, 1, 2, 4, 5})
	f.Add([]byte{4, 5, 5, 2, 1, 0, 7, 3, 3, 9, 1, 1})
	f.Add([]byte{2, 1, 0, 0, 0, 1, 1, 4, 8, 6, 2, 5, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		in := &reader{data: data}
		a, b, c := in.requirement("k"), in.requirement("k"), in.requirement("k")

		ab := a.Intersect(b)
		if !ab.Equal(b.Intersect(a)) {
			t.Fatalf("not commutative: %s ∩ %s = %s, reversed %s", a, b, ab, b.Intersect(a))
		}
		if got, want := subset(a, b), ab.Equal(a); got != want {
			t.Fatalf("subset(%s, %s) = %v, but the intersection %s equals the first: %v", a, b, got, ab, want)
		}
		if !a.Intersect(a).Equal(a) {
			t.Fatalf("not idempotent: %s ∩ itself = %s", a, a.Intersect(a))
		}
		if l, r := ab.Intersect(c), a.Intersect(b.Intersect(c)); !l.Equal(r) {
			t.Fatalf("not associative: (%s ∩ %s) ∩ %s = %s, other way %s", a, b, c, l, r)
		}
		for _, v := range probeValues {
			if got, want := ab.Allows(v), a.Allows(v) && b.Allows(v); got != want {
				t.Fatalf("%s ∩ %s = %s allows %q: %v, want %v", a, b, ab, v, got, want)
			}
		}
		if got, want := ab.AllowsAbsent(), a.AllowsAbsent() && b.AllowsAbsent(); got != want {
			t.Fatalf("%s ∩ %s = %s allows absence: %v, want %v", a, b, ab, got, want)
		}
		if got, want := intersects(a, b), ab.Satisfiable(); got != want {
			t.Fatalf("intersects(%s, %s) = %v, but the intersection %s is satisfiable: %v", a, b, got, ab, want)
		}
		if (a.String() == b.String()) != a.Equal(b) {
			t.Fatalf("String and Equal disagree on %s and %s", a, b)
		}
		back, err := FromNodeSelectorRequirements(ab.NodeSelectorRequirements())
		if err != nil {
			t.Fatalf("%s: %v", ab, err)
		}
		if got, _ := back.Get("k"); !got.Equal(stripMinValues(ab)) {
			t.Fatalf("round trip of %s gave %s", ab, got)
		}

		r, o := in.requirements(), in.requirements()
		if !r.Intersect(o).Equal(o.Intersect(r)) || !r.Intersect(r).Equal(r) {
			t.Fatalf("Requirements intersection laws fail for %s and %s", r, o)
		}
		if got, want := r.Intersects(o), sharedKeysIntersect(r, o); got != want {
			t.Fatalf("%s Intersects %s = %v, want %v", r, o, got, want)
		}

		labels := in.labels()
		node := FromLabels(labels)
		matches := r.Matches(labels) == nil
		if both := r.Intersect(o).Matches(labels) == nil; both != (matches && o.Matches(labels) == nil) {
			t.Fatalf("%s ∩ %s matches %v: %v, want %v", r, o, labels, both, !both)
		}
		if compatible := node.Compatible(r, RequireDefined) == nil; matches != compatible {
			t.Fatalf("%s: Matches(%v) = %v but FromLabels(labels).Compatible = %v", r, labels, matches, compatible)
		}
		if matches && !node.Intersects(r) {
			t.Fatalf("%s matches %v but does not intersect its labels", r, labels)
		}
		if matches && r.Compatible(node, AllowUndefined) != nil {
			t.Fatalf("%s matches %v but is not compatible with its labels", r, labels)
		}
	})
}

func stripMinValues(r Requirement) Requirement {
	r.hasMinValues, r.minValues = false, 0
	return r
}

// sharedKeysIntersect is Intersects the slow way: on every key that both
// constrain, the intersection can be met.
func sharedKeysIntersect(r, o Requirements) bool {
	for req := range r.All() {
		if other, ok := o.Get(req.Key()); ok && !req.Intersect(other).Satisfiable() {
			return false
		}
	}
	return true
}

// FuzzParseInt checks that parseInt agrees with strconv.ParseInt.
func FuzzParseInt(f *testing.F) {
	for _, s := range []string{"0", "-1", "+1", "9223372036854775807", "-9223372036854775808", "1e3", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := strconv.ParseInt(s, 10, 64)
		got, ok := parseInt(s)
		if ok != (err == nil) || ok && got != want {
			t.Fatalf("parseInt(%q) = %d, %v; strconv says %d, %v", s, got, ok, want, err)
		}
	})
}
