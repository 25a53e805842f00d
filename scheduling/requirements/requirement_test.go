package requirements

import (
	"math"
	"reflect"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

const (
	opIn           = corev1.NodeSelectorOpIn
	opNotIn        = corev1.NodeSelectorOpNotIn
	opExists       = corev1.NodeSelectorOpExists
	opDoesNotExist = corev1.NodeSelectorOpDoesNotExist
	opGt           = corev1.NodeSelectorOpGt
	opLt           = corev1.NodeSelectorOpLt
	opGte          = OpGte
	opLte          = OpLte
)

// spec describes a requirement in a test table.
type spec struct {
	op        corev1.NodeSelectorOperator
	values    []string
	minValues int // 0: unset
}

func in(values ...string) spec    { return spec{op: opIn, values: values} }
func notIn(values ...string) spec { return spec{op: opNotIn, values: values} }
func exists() spec                { return spec{op: opExists} }
func doesNotExist() spec          { return spec{op: opDoesNotExist} }
func gt(n int64) spec             { return spec{op: opGt, values: []string{strconv.FormatInt(n, 10)}} }
func lt(n int64) spec             { return spec{op: opLt, values: []string{strconv.FormatInt(n, 10)}} }
func gte(n int64) spec            { return spec{op: opGte, values: []string{strconv.FormatInt(n, 10)}} }
func lte(n int64) spec            { return spec{op: opLte, values: []string{strconv.FormatInt(n, 10)}} }

func (s spec) min(n int) spec { s.minValues = n; return s }

func (s spec) on(t testing.TB, key string) Requirement {
	t.Helper()
	r, err := NewRequirement(key, s.op, s.values...)
	if err != nil {
		t.Fatalf("NewRequirement(%q, %s, %q): %v", key, s.op, s.values, err)
	}
	if s.minValues > 0 {
		r = r.WithMinValues(s.minValues)
	}
	return r
}

func (s spec) req(t testing.TB) Requirement { t.Helper(); return s.on(t, "k") }

func TestNewRequirement(t *testing.T) {
	for _, tc := range []struct {
		name    string
		op      corev1.NodeSelectorOperator
		values  []string
		want    string
		wantErr bool
	}{
		{name: "In sorts and dedupes", op: opIn, values: []string{"b", "a", "b"}, want: "k In [a b]"},
		{name: "NotIn", op: opNotIn, values: []string{"b", "a"}, want: "k NotIn [a b]"},
		{name: "Exists", op: opExists, want: "k Exists"},
		{name: "DoesNotExist", op: opDoesNotExist, want: "k DoesNotExist"},
		{name: "Gt is held as Gte the next integer", op: opGt, values: []string{"4"}, want: "k Gte 5"},
		{name: "Lt is held as Lte the previous integer", op: opLt, values: []string{"-4"}, want: "k Lte -5"},
		{name: "Gte", op: opGte, values: []string{"8"}, want: "k Gte 8"},
		{name: "Lte", op: opLte, values: []string{"16"}, want: "k Lte 16"},
		{name: "Gte min int", op: opGte, values: []string{strconv.FormatInt(math.MinInt64, 10)}, want: "k Gte -9223372036854775808"},
		{name: "Lte max int", op: opLte, values: []string{strconv.FormatInt(math.MaxInt64, 10)}, want: "k Lte 9223372036854775807"},
		{name: "Gte without value", op: opGte, wantErr: true},
		{name: "Lte with two values", op: opLte, values: []string{"1", "2"}, wantErr: true},
		{name: "Gte with non-integer", op: opGte, values: []string{"eight"}, wantErr: true},
		{name: "Gt max int is empty", op: opGt, values: []string{strconv.FormatInt(math.MaxInt64, 10)}, want: "k In []"},
		{name: "Lt min int is empty", op: opLt, values: []string{strconv.FormatInt(math.MinInt64, 10)}, want: "k In []"},
		{name: "In without values", op: opIn, wantErr: true},
		{name: "NotIn without values", op: opNotIn, wantErr: true},
		{name: "Exists with values", op: opExists, values: []string{"a"}, wantErr: true},
		{name: "DoesNotExist with values", op: opDoesNotExist, values: []string{"a"}, wantErr: true},
		{name: "Gt without value", op: opGt, wantErr: true},
		{name: "Gt with two values", op: opGt, values: []string{"1", "2"}, wantErr: true},
		{name: "Gt with non-integer", op: opGt, values: []string{"four"}, wantErr: true},
		{name: "Lt overflowing", op: opLt, values: []string{"9223372036854775808"}, wantErr: true},
		{name: "unknown operator", op: "Near", values: []string{"a"}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewRequirement("k", tc.op, tc.values...)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("got %v, want an error", r)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := r.String(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestNewRequirementCopiesValues(t *testing.T) {
	values := []string{"b", "a"}
	r, err := NewRequirement("k", opIn, values...)
	if err != nil {
		t.Fatal(err)
	}
	values[0] = "z"
	if got := r.String(); got != "k In [a b]" {
		t.Errorf("requirement changed with its input: %q", got)
	}
}

func TestIntersect(t *testing.T) {
	for _, tc := range []struct {
		name            string
		a, b            spec
		want            string
		wantSatisfiable bool
	}{
		{name: "In∩In", a: in("a", "b", "c"), b: in("b", "c", "d"), want: "k In [b c]", wantSatisfiable: true},
		{name: "In∩In disjoint", a: in("a"), b: in("b"), want: "k In []"},
		{name: "In∩NotIn", a: in("a", "b", "c"), b: notIn("b"), want: "k In [a c]", wantSatisfiable: true},
		{name: "In∩NotIn all excluded", a: in("a"), b: notIn("a", "z"), want: "k In []"},
		{name: "In∩Exists", a: in("a", "b"), b: exists(), want: "k In [a b]", wantSatisfiable: true},
		{name: "In∩DoesNotExist", a: in("a"), b: doesNotExist(), want: "k In []"},
		{name: "NotIn∩NotIn is the union of exclusions", a: notIn("a"), b: notIn("b"), want: "k NotIn [a b]", wantSatisfiable: true},
		{name: "NotIn∩Exists", a: notIn("a"), b: exists(), want: "k Exists NotIn [a]", wantSatisfiable: true},
		{name: "NotIn∩DoesNotExist", a: notIn("a"), b: doesNotExist(), want: "k DoesNotExist", wantSatisfiable: true},
		{name: "Exists∩Exists", a: exists(), b: exists(), want: "k Exists", wantSatisfiable: true},
		{name: "Exists∩DoesNotExist", a: exists(), b: doesNotExist(), want: "k In []"},
		{name: "DoesNotExist∩DoesNotExist", a: doesNotExist(), b: doesNotExist(), want: "k DoesNotExist", wantSatisfiable: true},
		{name: "Gt∩Lt non-empty", a: gt(3), b: lt(6), want: "k Gte 4 Lte 5", wantSatisfiable: true},
		{name: "Gt∩Lt one integer", a: gt(3), b: lt(5), want: "k Gte 4 Lte 4", wantSatisfiable: true},
		{name: "Gt∩Lt no integer between", a: gt(3), b: lt(4), want: "k In []"},
		{name: "Gt∩Lt crossed", a: gt(9), b: lt(2), want: "k In []"},
		{name: "Gt∩Gt keeps the larger", a: gt(3), b: gt(7), want: "k Gte 8", wantSatisfiable: true},
		{name: "Lt∩Lt keeps the smaller", a: lt(3), b: lt(7), want: "k Lte 2", wantSatisfiable: true},
		{name: "Gt∩In drops non-integers and values out of range", a: gt(4), b: in("a", "4", "5", "10", "05"), want: "k In [05 10 5]", wantSatisfiable: true},
		{name: "Gt∩In nothing in range", a: gt(4), b: in("a", "3"), want: "k In []"},
		{name: "Gt∩NotIn keeps exclusions in range", a: gt(5), b: notIn("x", "7", "2"), want: "k Gte 6 NotIn [7]", wantSatisfiable: true},
		{name: "Gt∩NotIn", a: gt(1), b: notIn("2"), want: "k Gte 2 NotIn [2]", wantSatisfiable: true},
		{name: "Gt∩Exists", a: gt(1), b: exists(), want: "k Gte 2", wantSatisfiable: true},
		{name: "Gt∩DoesNotExist", a: gt(1), b: doesNotExist(), want: "k In []"},
		{name: "Gte∩Lte single integer", a: gte(8), b: lte(8), want: "k Gte 8 Lte 8", wantSatisfiable: true},
		{name: "Gte∩Lte crossed", a: gte(9), b: lte(8), want: "k In []"},
		{name: "Gte∩Lte range", a: gte(8), b: lte(16), want: "k Gte 8 Lte 16", wantSatisfiable: true},
		{name: "Gte equals Gt one below", a: gte(8), b: gt(7), want: "k Gte 8", wantSatisfiable: true},
		{name: "Gte∩Gt keeps the tighter", a: gte(8), b: gt(8), want: "k Gte 9", wantSatisfiable: true},
		{name: "Lte equals Lt one above", a: lte(16), b: lt(17), want: "k Lte 16", wantSatisfiable: true},
		{name: "Lte∩Lt keeps the tighter", a: lte(16), b: lt(16), want: "k Lte 15", wantSatisfiable: true},
		{name: "Gte∩Lt meeting at one integer", a: gte(4), b: lt(5), want: "k Gte 4 Lte 4", wantSatisfiable: true},
		{name: "Gt∩Lte no integer", a: gt(4), b: lte(4), want: "k In []"},
		{name: "Gte∩In keeps the bound itself", a: gte(8), b: in("4", "8", "16", "x"), want: "k In [16 8]", wantSatisfiable: true},
		{name: "Lte∩In keeps the bound itself", a: lte(16), b: in("8", "16", "32"), want: "k In [16 8]", wantSatisfiable: true},
		{name: "Gte∩In nothing in range", a: gte(8), b: in("4", "7"), want: "k In []"},
		{name: "Lte∩NotIn keeps exclusions in range", a: lte(16), b: notIn("16", "32"), want: "k Lte 16 NotIn [16]", wantSatisfiable: true},
		{name: "Gte∩DoesNotExist", a: gte(0), b: doesNotExist(), want: "k In []"},
		{name: "minValues is the max", a: in("a", "b", "c").min(2), b: in("a", "b").min(3), want: "k In [a b] minValues 3", wantSatisfiable: true},
		{name: "minValues from one side", a: exists().min(2), b: in("a", "b"), want: "k In [a b] minValues 2", wantSatisfiable: true},
		{name: "minValues on complement", a: notIn("a").min(4), b: notIn("b").min(1), want: "k NotIn [a b] minValues 4", wantSatisfiable: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := tc.a.req(t), tc.b.req(t)
			ab, ba := a.Intersect(b), b.Intersect(a)
			if got := ab.String(); got != tc.want {
				t.Errorf("a∩b = %q, want %q", got, tc.want)
			}
			if !ab.Equal(ba) {
				t.Errorf("a∩b = %q but b∩a = %q", ab, ba)
			}
			if got := ab.Satisfiable(); got != tc.wantSatisfiable {
				t.Errorf("Satisfiable() = %v, want %v", got, tc.wantSatisfiable)
			}
			if got := intersects(a, b); got != tc.wantSatisfiable {
				t.Errorf("intersects = %v, want %v", got, tc.wantSatisfiable)
			}
		})
	}
}

// A range whose every integer is excluded in one spelling still admits the
// others: "02" parses as 2 just as "2" does.
func TestIntersectRangeKeepsOtherSpellings(t *testing.T) {
	r := gt(1).req(t).Intersect(lt(3).req(t)).Intersect(notIn("2").req(t))
	if got, want := r.String(), "k Gte 2 Lte 2 NotIn [2]"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if !r.Satisfiable() || !r.Allows("02") || r.Allows("2") || r.Allows("3") {
		t.Errorf("%s: want satisfiable by 02, not by 2 or 3", r)
	}
}

func TestSubset(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b spec
		want bool
	}{
		{name: "In ⊆ larger In", a: in("a"), b: in("a", "b"), want: true},
		{name: "In ⊄ smaller In", a: in("a", "b"), b: in("a")},
		{name: "In ⊆ NotIn", a: in("a"), b: notIn("b"), want: true},
		{name: "In ⊄ NotIn of it", a: in("a"), b: notIn("a")},
		{name: "In ⊆ Exists", a: in("a"), b: exists(), want: true},
		{name: "DoesNotExist ⊆ NotIn", a: doesNotExist(), b: notIn("a"), want: true},
		{name: "DoesNotExist ⊄ In", a: doesNotExist(), b: in("a")},
		{name: "DoesNotExist ⊄ Exists", a: doesNotExist(), b: exists()},
		{name: "NotIn ⊄ Exists", a: notIn("a"), b: exists()},
		{name: "Exists ⊄ In", a: exists(), b: in("a")},
		{name: "Exists ⊆ NotIn", a: exists(), b: notIn("a")},
		{name: "Gt 5 ⊆ Gt 3", a: gt(5), b: gt(3), want: true},
		{name: "Gt 3 ⊄ Gt 5", a: gt(3), b: gt(5)},
		{name: "Gt ⊆ Exists", a: gt(3), b: exists(), want: true},
		{name: "Exists ⊄ Gt", a: exists(), b: gt(3)},
		{name: "Gt 3 ⊆ NotIn below range", a: gt(3), b: notIn("2"), want: true},
		{name: "In ⊆ Gt", a: in("5", "7"), b: gt(4), want: true},
		{name: "In ⊄ Gt with a word", a: in("5", "x"), b: gt(4)},
		{name: "Gte 8 ⊆ Gt 7 and back", a: gte(8), b: gt(7), want: true},
		{name: "Gt 7 ⊆ Gte 8", a: gt(7), b: gte(8), want: true},
		{name: "Gte 8 ⊄ Gt 8", a: gte(8), b: gt(8)},
		{name: "Lte 16 ⊆ Lt 17", a: lte(16), b: lt(17), want: true},
		{name: "Lte 16 ⊄ Lt 16", a: lte(16), b: lt(16)},
		{name: "In [8] ⊆ Gte 8", a: in("8"), b: gte(8), want: true},
		{name: "In [8] ⊄ Gt 8", a: in("8"), b: gt(8)},
		{name: "In [16] ⊆ Lte 16", a: in("16"), b: lte(16), want: true},
		{name: "Gte Lte ⊆ Exists", a: gte(8), b: exists(), want: true},
		{name: "minValues must be as large", a: in("a").min(1), b: in("a").min(2)},
		{name: "minValues larger is fine", a: in("a").min(3), b: in("a").min(2), want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := tc.a.req(t), tc.b.req(t)
			if got := subset(a, b); got != tc.want {
				t.Errorf("subset(%s, %s) = %v, want %v", a, b, got, tc.want)
			}
			if got := a.Intersect(b).Equal(a); got != tc.want {
				t.Errorf("%s ∩ %s = %s; equal to the first: %v, want %v", a, b, a.Intersect(b), got, tc.want)
			}
		})
	}
}

func TestAllows(t *testing.T) {
	type check struct {
		value string // "" stands for the label being absent
		want  bool
	}
	for _, tc := range []struct {
		name   string
		req    spec
		checks []check
	}{
		{name: "In", req: in("a", "b"), checks: []check{{"a", true}, {"c", false}, {"", false}}},
		{name: "NotIn", req: notIn("a"), checks: []check{{"a", false}, {"c", true}, {"", true}}},
		{name: "Exists", req: exists(), checks: []check{{"a", true}, {"", false}}},
		{name: "DoesNotExist", req: doesNotExist(), checks: []check{{"a", false}, {"", true}}},
		{name: "Gt", req: gt(4), checks: []check{{"5", true}, {"05", true}, {"+5", true}, {"4", false}, {"-5", false}, {"5a", false}, {"five", false}, {"", false}}},
		{name: "Lt", req: lt(4), checks: []check{{"3", true}, {"-3", true}, {"4", false}, {"x", false}, {"", false}}},
		{name: "Gte", req: gte(8), checks: []check{{"8", true}, {"08", true}, {"9", true}, {"7", false}, {"-8", false}, {"x", false}, {"", false}}},
		{name: "Lte", req: lte(16), checks: []check{{"16", true}, {"15", true}, {"0", true}, {"17", false}, {"32", false}, {"x", false}, {"", false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.req.req(t)
			for _, c := range tc.checks {
				var got bool
				if c.value == "" {
					got = r.AllowsAbsent()
				} else {
					got = r.Allows(c.value)
				}
				if got != c.want {
					t.Errorf("%s allows %q: got %v, want %v", r, c.value, got, c.want)
				}
			}
		})
	}
}

func TestNodeSelectorRequirementsRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  Requirement
		ops  int
	}{
		{name: "In", req: in("a", "b").req(t), ops: 1},
		{name: "NotIn", req: notIn("a").req(t), ops: 1},
		{name: "Exists", req: exists().req(t), ops: 1},
		{name: "DoesNotExist", req: doesNotExist().req(t), ops: 1},
		{name: "Exists NotIn", req: exists().req(t).Intersect(notIn("a").req(t)), ops: 2},
		{name: "Gt Lt NotIn", req: gt(1).req(t).Intersect(lt(9).req(t)).Intersect(notIn("4").req(t)), ops: 3},
		{name: "Gte", req: gte(8).req(t), ops: 1},
		{name: "Lte", req: lte(16).req(t), ops: 1},
		{name: "Gte Lte", req: gte(8).req(t).Intersect(lte(16).req(t)), ops: 2},
		{name: "empty", req: in("a").req(t).Intersect(in("b").req(t)), ops: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nsrs := tc.req.NodeSelectorRequirements()
			if len(nsrs) != tc.ops {
				t.Errorf("got %d node selector requirements %v, want %d", len(nsrs), nsrs, tc.ops)
			}
			back, err := FromNodeSelectorRequirements(nsrs)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := back.Get("k")
			if !got.Equal(tc.req) {
				t.Errorf("round trip gave %q, want %q", got, tc.req)
			}
		})
	}
}

func TestParseInt(t *testing.T) {
	for _, s := range []string{
		"0", "7", "-7", "+7", "007", "-0", "", "+", "-", "1a", "a1", " 1", "1_000", "0x10",
		"9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
		"99999999999999999999",
	} {
		want, err := strconv.ParseInt(s, 10, 64)
		got, ok := parseInt(s)
		if ok != (err == nil) || ok && got != want {
			t.Errorf("parseInt(%q) = %d, %v; strconv says %d, %v", s, got, ok, want, err)
		}
	}
}

// TestNodeSelectorRequirementsWriteInclusiveBounds checks the operators that
// bounds are written back with: Karpenter writes a NodePool's "Gt 7" into
// the NodeClaim as "Gte 8", and keeps Gte and Lte as they are.
func TestNodeSelectorRequirementsWriteInclusiveBounds(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  spec
		want []corev1.NodeSelectorRequirement
	}{
		{name: "Gt", req: gt(7), want: []corev1.NodeSelectorRequirement{{Key: "k", Operator: opGte, Values: []string{"8"}}}},
		{name: "Lt", req: lt(17), want: []corev1.NodeSelectorRequirement{{Key: "k", Operator: opLte, Values: []string{"16"}}}},
		{name: "Gte", req: gte(8), want: []corev1.NodeSelectorRequirement{{Key: "k", Operator: opGte, Values: []string{"8"}}}},
		{name: "Lte", req: lte(16), want: []corev1.NodeSelectorRequirement{{Key: "k", Operator: opLte, Values: []string{"16"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.req.req(t).NodeSelectorRequirements()
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
