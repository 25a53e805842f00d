package requirements

import (
	"fmt"
	"iter"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
)

// Karpenter's inclusive integer operators, which NodePool and NodeClaim
// requirements accept beside the core node selector operators:
// "Gte 8" is met by a label whose integer value is at least 8, "Lte 16" by
// one at most 16.
const (
	OpGte corev1.NodeSelectorOperator = "Gte"
	OpLte corev1.NodeSelectorOperator = "Lte"
)

// Requirement constrains the value of one label key on a node.
//
// The zero Requirement has an empty key and can never be met. Build one with
// NewRequirement, or from API objects with the From functions.
//
// Internally a Requirement is always in canonical form:
//
//   - values is sorted and free of duplicates;
//   - a finite set carries no bounds (values outside them are dropped);
//   - a complement set with bounds excludes only values inside the bounds, and
//     its bounds always admit at least one integer (an empty range becomes the
//     empty finite set);
//   - bounds are inclusive, as Karpenter keeps them: Gt n is held as Gte n+1
//     and Lt n as Lte n-1, so that "Gt 7" and "Gte 8" are the same
//     requirement and compare Equal.
//
// Canonical form makes Equal a structural comparison.
type Requirement struct {
	key string
	// values are the allowed values of a finite set, or the excluded values
	// of a complement set.
	values []string
	// Inclusive integer bounds on the value, when hasGte and hasLte say so:
	// gte <= value <= lte. A value that does not parse as an integer fails
	// any bound.
	gte, lte int64
	// minValues is the minimum number of distinct values that the instance
	// types chosen for a NodeClaim must offer for this key.
	minValues      int
	complement     bool
	absent         bool // a node without the label meets the requirement
	hasGte, hasLte bool
	hasMinValues   bool
}

// NewRequirement returns the requirement that a node selector requirement
// with this key, operator and values expresses, with the key normalized.
//
// As the API server does, it rejects In and NotIn without values, Exists and
// DoesNotExist with values, and Gt, Lt, Gte or Lte without exactly one
// integer value. Gte and Lte are Karpenter's inclusive bounds (NodePool and
// NodeClaim requirements accept them; pod node affinity does not).
func NewRequirement(key string, operator corev1.NodeSelectorOperator, values ...string) (Requirement, error) {
	r := Requirement{key: normalizeKey(key)}
	switch operator {
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
		if len(values) == 0 {
			return Requirement{}, fmt.Errorf("requirement on %q: operator %s needs at least one value", key, operator)
		}
		r.values = sortedSet(values)
		if operator == corev1.NodeSelectorOpNotIn {
			r.complement, r.absent = true, true
		}
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		if len(values) != 0 {
			return Requirement{}, fmt.Errorf("requirement on %q: operator %s takes no values, got %q", key, operator, values)
		}
		if operator == corev1.NodeSelectorOpExists {
			r.complement = true
		} else {
			r.absent = true
		}
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, OpGte, OpLte:
		if len(values) != 1 {
			return Requirement{}, fmt.Errorf("requirement on %q: operator %s needs exactly one integer value, got %q", key, operator, values)
		}
		bound, err := strconv.ParseInt(values[0], 10, 64)
		if err != nil {
			return Requirement{}, fmt.Errorf("requirement on %q: operator %s needs an integer value, got %q", key, operator, values[0])
		}
		r.complement = true
		switch operator {
		case corev1.NodeSelectorOpGt:
			if bound == math.MaxInt64 { // no integer is greater
				return Requirement{key: r.key}, nil
			}
			r.hasGte, r.gte = true, bound+1
		case corev1.NodeSelectorOpLt:
			if bound == math.MinInt64 { // no integer is smaller
				return Requirement{key: r.key}, nil
			}
			r.hasLte, r.lte = true, bound-1
		case OpGte:
			r.hasGte, r.gte = true, bound
		default:
			r.hasLte, r.lte = true, bound
		}
	default:
		return Requirement{}, fmt.Errorf("requirement on %q: unknown operator %q; use In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte or Lte", key, operator)
	}
	return r, nil
}

// WithMinValues returns r requiring that the instance types chosen for a
// NodeClaim offer at least n distinct values for the key.
func (r Requirement) WithMinValues(n int) Requirement {
	r.hasMinValues, r.minValues = true, n
	return r
}

// Key returns the normalized label key that r constrains.
func (r Requirement) Key() string { return r.key }

// MinValues returns the minimum number of distinct values, if one is set.
func (r Requirement) MinValues() (n int, ok bool) { return r.minValues, r.hasMinValues }

// Finite reports whether r allows only a finite list of values (In,
// DoesNotExist, or an intersection that came down to a list).
func (r Requirement) Finite() bool { return !r.complement }

// Values returns, sorted, the values that r allows if it is Finite, and the
// values that it excludes otherwise.
func (r Requirement) Values() iter.Seq[string] { return slices.Values(r.values) }

// Len returns the number of values that Values yields.
func (r Requirement) Len() int { return len(r.values) }

// Gte returns the inclusive lower integer bound, if there is one.
func (r Requirement) Gte() (int64, bool) { return r.gte, r.hasGte }

// Lte returns the inclusive upper integer bound, if there is one.
func (r Requirement) Lte() (int64, bool) { return r.lte, r.hasLte }

// Allows reports whether a node whose label is set to value meets r.
func (r Requirement) Allows(value string) bool {
	if r.complement {
		return !contains(r.values, value) && r.withinBounds(value)
	}
	return contains(r.values, value)
}

// AllowsAbsent reports whether a node without the label meets r.
func (r Requirement) AllowsAbsent() bool { return r.absent }

// Satisfiable reports whether any node can meet r.
func (r Requirement) Satisfiable() bool {
	return r.absent || r.complement || len(r.values) > 0
}

// Intersect returns the requirement met by exactly the nodes that meet both r
// and o, carrying the larger of their minValues. The result has r's key:
// intersecting requirements on different keys is meaningless.
func (r Requirement) Intersect(o Requirement) Requirement {
	out := Requirement{key: r.key, absent: r.absent && o.absent}
	out.hasMinValues = r.hasMinValues || o.hasMinValues
	out.minValues = max(r.minValues, o.minValues)
	switch {
	case r.complement && o.complement:
		out.hasGte, out.gte = tighterGte(r, o)
		out.hasLte, out.lte = tighterLte(r, o)
		if rangeEmpty(out.hasGte, out.gte, out.hasLte, out.lte) {
			out.hasGte, out.gte, out.hasLte, out.lte = false, 0, false, 0
			return out
		}
		out.complement = true
		out.values = unionWithin(r.values, o.values, out)
	case r.complement:
		out.values = keepAllowed(o.values, r)
	case o.complement:
		out.values = keepAllowed(r.values, o)
	default:
		out.values = intersectSorted(r.values, o.values)
	}
	return out
}

// subset reports whether every node that meets a meets b, minValues
// included: whether Intersect(a, b) is Equal to a. It does not allocate.
func subset(a, b Requirement) bool {
	if a.absent && !b.absent || b.hasMinValues && (!a.hasMinValues || a.minValues < b.minValues) {
		return false
	}
	switch {
	case !a.complement:
		for _, v := range a.values {
			if !b.Allows(v) {
				return false
			}
		}
		return true
	case !b.complement:
		return false // a complement set is infinite
	}
	if b.hasGte && (!a.hasGte || a.gte < b.gte) || b.hasLte && (!a.hasLte || a.lte > b.lte) {
		return false
	}
	for _, v := range b.values {
		if a.Allows(v) {
			return false
		}
	}
	return true
}

// intersects reports whether some node meets both a and b: Intersect(a,
// b).Satisfiable() without building the intersection.
func intersects(a, b Requirement) bool {
	if a.absent && b.absent {
		return true
	}
	switch {
	case a.complement && b.complement:
		hasGte, gte := tighterGte(a, b)
		hasLte, lte := tighterLte(a, b)
		return !rangeEmpty(hasGte, gte, hasLte, lte)
	case a.complement:
		return anyAllowed(b.values, a)
	case b.complement:
		return anyAllowed(a.values, b)
	default:
		return haveCommon(a.values, b.values)
	}
}

// Equal reports whether r and o are the same requirement, minValues
// included.
func (r Requirement) Equal(o Requirement) bool {
	return r.key == o.key && r.complement == o.complement && r.absent == o.absent &&
		r.hasGte == o.hasGte && r.gte == o.gte && r.hasLte == o.hasLte && r.lte == o.lte &&
		r.hasMinValues == o.hasMinValues && r.minValues == o.minValues &&
		slices.Equal(r.values, o.values)
}

// NodeSelectorRequirements returns node selector requirements whose
// conjunction is r (minValues aside). Most requirements need one; an Exists
// with exclusions, or a bounded range, needs more; a requirement that nothing
// meets is written as Exists together with DoesNotExist. Integer bounds are
// written as Karpenter writes them, inclusive: Gte and Lte (a NodePool's
// "Gt 7" becomes a NodeClaim's "Gte 8"). Those operators are Karpenter's:
// the result suits NodePool and NodeClaim requirements, not pod affinity.
func (r Requirement) NodeSelectorRequirements() []corev1.NodeSelectorRequirement {
	nsr := func(op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: r.key, Operator: op, Values: values}
	}
	if !r.complement {
		switch {
		case len(r.values) > 0:
			return []corev1.NodeSelectorRequirement{nsr(corev1.NodeSelectorOpIn, slices.Clone(r.values)...)}
		case r.absent:
			return []corev1.NodeSelectorRequirement{nsr(corev1.NodeSelectorOpDoesNotExist)}
		default:
			return []corev1.NodeSelectorRequirement{nsr(corev1.NodeSelectorOpExists), nsr(corev1.NodeSelectorOpDoesNotExist)}
		}
	}
	var out []corev1.NodeSelectorRequirement
	if !r.absent && !r.hasGte && !r.hasLte {
		out = append(out, nsr(corev1.NodeSelectorOpExists))
	}
	if r.hasGte {
		out = append(out, nsr(OpGte, strconv.FormatInt(r.gte, 10)))
	}
	if r.hasLte {
		out = append(out, nsr(OpLte, strconv.FormatInt(r.lte, 10)))
	}
	if len(r.values) > 0 {
		out = append(out, nsr(corev1.NodeSelectorOpNotIn, slices.Clone(r.values)...))
	}
	return out
}

// String returns r in a stable form that lists every value, for example
// "kubernetes.io/arch In [amd64 arm64]", "example.com/team Exists NotIn [a]",
// "example.com/gen Gte 5 Lte 8" (bounds are inclusive, so "Gt 4" prints as
// "Gte 5", as Karpenter canonicalizes it) or
// "topology.kubernetes.io/zone In [a] minValues 2".
// Two requirements have the same String exactly when they are Equal.
func (r Requirement) String() string {
	var b strings.Builder
	b.WriteString(r.key)
	b.WriteByte(' ')
	r.describe(&b, -1)
	return b.String()
}

// describe writes r without its key, listing at most limit values (all of
// them when limit is negative).
func (r Requirement) describe(b *strings.Builder, limit int) {
	list := func(op string) {
		b.WriteString(op)
		b.WriteString(" [")
		for i, v := range r.values {
			if limit >= 0 && i == limit {
				fmt.Fprintf(b, " and %d more", len(r.values)-limit)
				break
			}
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(v)
		}
		b.WriteByte(']')
	}
	var parts int
	sep := func() {
		if parts > 0 {
			b.WriteByte(' ')
		}
		parts++
	}
	switch {
	case !r.complement && len(r.values) == 0 && r.absent:
		sep()
		b.WriteString("DoesNotExist")
	case !r.complement:
		sep()
		list("In")
		if r.absent {
			b.WriteString(" or DoesNotExist")
		}
	default:
		if !r.absent && !r.hasGte && !r.hasLte {
			sep()
			b.WriteString("Exists")
		}
		if r.hasGte {
			sep()
			fmt.Fprintf(b, "Gte %d", r.gte)
		}
		if r.hasLte {
			sep()
			fmt.Fprintf(b, "Lte %d", r.lte)
		}
		if len(r.values) > 0 || r.absent {
			sep()
			list("NotIn")
		}
	}
	if r.hasMinValues {
		sep()
		fmt.Fprintf(b, "minValues %d", r.minValues)
	}
}

// withinBounds reports whether value meets r's integer bounds; with no bounds,
// every value does.
func (r Requirement) withinBounds(value string) bool {
	if !r.hasGte && !r.hasLte {
		return true
	}
	n, ok := parseInt(value)
	if !ok {
		return false
	}
	return (!r.hasGte || n >= r.gte) && (!r.hasLte || n <= r.lte)
}

// normalizeKey maps deprecated beta label keys to their stable names.
func normalizeKey(key string) string { return wellknown.NormalizeLabel(key) }

// tighterGte returns the larger of two optional lower bounds.
func tighterGte(a, b Requirement) (bool, int64) {
	switch {
	case a.hasGte && b.hasGte:
		return true, max(a.gte, b.gte)
	case a.hasGte:
		return true, a.gte
	default:
		return b.hasGte, b.gte
	}
}

// tighterLte returns the smaller of two optional upper bounds.
func tighterLte(a, b Requirement) (bool, int64) {
	switch {
	case a.hasLte && b.hasLte:
		return true, min(a.lte, b.lte)
	case a.hasLte:
		return true, a.lte
	default:
		return b.hasLte, b.lte
	}
}

// rangeEmpty reports whether no int64 n satisfies gte <= n <= lte. A
// non-empty range admits infinitely many label values ("7", "07", "007",
// ...), so the complement of any finite list within it is never empty.
func rangeEmpty(hasGte bool, gte int64, hasLte bool, lte int64) bool {
	return hasGte && hasLte && gte > lte
}

// sortedSet returns a sorted, duplicate-free copy of values.
func sortedSet(values []string) []string {
	out := slices.Clone(values)
	slices.Sort(out)
	return slices.Compact(out)
}

// contains reports whether sorted holds value.
func contains(sorted []string, value string) bool {
	_, found := slices.BinarySearch(sorted, value)
	return found
}

// haveCommon reports whether two sorted lists share a value. It walks the
// shorter list and binary-searches the longer one, narrowing the search as
// it goes.
func haveCommon(a, b []string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	for _, v := range a {
		i, found := slices.BinarySearch(b, v)
		if found {
			return true
		}
		b = b[i:]
		if len(b) == 0 {
			return false
		}
	}
	return false
}

// anyAllowed reports whether complement set c allows any of values.
func anyAllowed(values []string, c Requirement) bool {
	for _, v := range values {
		if c.Allows(v) {
			return true
		}
	}
	return false
}

// intersectSorted returns the values in both sorted lists. It returns one of
// its arguments when that is the answer, and allocates only otherwise.
func intersectSorted(a, b []string) []string {
	n := 0
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch c := strings.Compare(a[i], b[j]); {
		case c < 0:
			i++
		case c > 0:
			j++
		default:
			n++
			i++
			j++
		}
	}
	switch {
	case n == 0:
		return nil
	case n == len(a):
		return a
	case n == len(b):
		return b
	}
	out := make([]string, 0, n)
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch c := strings.Compare(a[i], b[j]); {
		case c < 0:
			i++
		case c > 0:
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	return out
}

// keepAllowed returns the values that complement set c allows, reusing
// values when c allows them all.
func keepAllowed(values []string, c Requirement) []string {
	n := 0
	for _, v := range values {
		if c.Allows(v) {
			n++
		}
	}
	switch n {
	case 0:
		return nil
	case len(values):
		return values
	}
	out := make([]string, 0, n)
	for _, v := range values {
		if c.Allows(v) {
			out = append(out, v)
		}
	}
	return out
}

// unionWithin returns the union of two sorted exclusion lists, keeping only
// values within bounds' integer bounds (the bounds exclude the rest already).
// It returns one of its arguments when that is the answer.
func unionWithin(a, b []string, bounds Requirement) []string {
	keep := func(s []string) []string {
		if !bounds.hasGte && !bounds.hasLte {
			return s
		}
		return keepWithin(s, bounds)
	}
	a, b = keep(a), keep(b)
	switch {
	case len(b) == 0:
		return a
	case len(a) == 0:
		return b
	}
	n := 0
	for i, j := 0, 0; i < len(a) || j < len(b); n++ {
		switch {
		case j == len(b):
			i++
		case i == len(a):
			j++
		default:
			switch c := strings.Compare(a[i], b[j]); {
			case c < 0:
				i++
			case c > 0:
				j++
			default:
				i++
				j++
			}
		}
	}
	switch n {
	case len(a):
		return a
	case len(b):
		return b
	}
	out := make([]string, 0, n)
	for i, j := 0, 0; i < len(a) || j < len(b); {
		switch {
		case j == len(b):
			out = append(out, a[i])
			i++
		case i == len(a):
			out = append(out, b[j])
			j++
		default:
			switch c := strings.Compare(a[i], b[j]); {
			case c < 0:
				out = append(out, a[i])
				i++
			case c > 0:
				out = append(out, b[j])
				j++
			default:
				out = append(out, a[i])
				i++
				j++
			}
		}
	}
	return out
}

// keepWithin returns the values that meet bounds' integer bounds, reusing
// values when they all do.
func keepWithin(values []string, bounds Requirement) []string {
	n := 0
	for _, v := range values {
		if bounds.withinBounds(v) {
			n++
		}
	}
	switch n {
	case 0:
		return nil
	case len(values):
		return values
	}
	out := make([]string, 0, n)
	for _, v := range values {
		if bounds.withinBounds(v) {
			out = append(out, v)
		}
	}
	return out
}

// parseInt parses s as strconv.ParseInt(s, 10, 64) does, without allocating
// an error when s is not an integer.
func parseInt(s string) (int64, bool) {
	i, neg := 0, false
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		i = 1
	}
	if i == len(s) {
		return 0, false
	}
	limit := uint64(math.MaxInt64)
	if neg {
		limit++
	}
	var n uint64
	for ; i < len(s); i++ {
		d := uint64(s[i] - '0')
		if s[i] < '0' || s[i] > '9' || n > (limit-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	if neg {
		return -int64(n), true // -(1<<63) wraps to itself, which is MinInt64
	}
	return int64(n), true
}
