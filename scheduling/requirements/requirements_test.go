package requirements

import (
	"errors"
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	zone     = "topology.kubernetes.io/zone"
	arch     = "kubernetes.io/arch"
	capacity = "karpenter.sh/capacity-type"
	team     = "example.com/team"
)

// reqs builds Requirements from alternating keys and specs.
func reqs(t testing.TB, kv ...any) Requirements {
	t.Helper()
	var out []Requirement
	for i := 0; i < len(kv); i += 2 {
		out = append(out, kv[i+1].(spec).on(t, kv[i].(string)))
	}
	return New(out...)
}

func TestNewMergesAndSorts(t *testing.T) {
	r := reqs(t, zone, in("a", "b"), arch, in("amd64"), zone, notIn("b"), team, exists())
	if got, want := r.String(), "example.com/team Exists, kubernetes.io/arch In [amd64], topology.kubernetes.io/zone In [a]"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if r.Len() != 3 {
		t.Errorf("Len() = %d, want 3", r.Len())
	}
	var keys []string
	for req := range r.All() {
		keys = append(keys, req.Key())
	}
	if !slices.IsSorted(keys) {
		t.Errorf("All() out of order: %q", keys)
	}
}

func TestAliasNormalization(t *testing.T) {
	for alias, stable := range map[string]string{
		"failure-domain.beta.kubernetes.io/zone":   "topology.kubernetes.io/zone",
		"failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region",
		"beta.kubernetes.io/arch":                  "kubernetes.io/arch",
		"beta.kubernetes.io/os":                    "kubernetes.io/os",
		"beta.kubernetes.io/instance-type":         "node.kubernetes.io/instance-type",
	} {
		t.Run(alias, func(t *testing.T) {
			r := reqs(t, alias, in("x"))
			if got := slices.Collect(r.All())[0].Key(); got != stable {
				t.Errorf("key %q normalized to %q, want %q", alias, got, stable)
			}
			if !r.Has(alias) || !r.Has(stable) {
				t.Errorf("Has(%q), Has(%q) = %v, %v; want both true", alias, stable, r.Has(alias), r.Has(stable))
			}
			if _, ok := r.Get(alias); !ok {
				t.Errorf("Get(%q) found nothing", alias)
			}
			// The alias and the stable key constrain the same label.
			both := r.Add(in("y").on(t, stable))
			if req, _ := both.Get(stable); req.Satisfiable() {
				t.Errorf("In [x] on %q and In [y] on %q gave %s, want nothing", alias, stable, req)
			}
			if got := FromLabels(map[string]string{alias: "x"}); !got.Equal(reqs(t, stable, in("x"))) {
				t.Errorf("FromLabels: got %s", got)
			}
			if err := reqs(t, stable, in("x")).Matches(map[string]string{alias: "x"}); err != nil {
				t.Errorf("a label set under the alias should count for the stable key: %v", err)
			}
			if err := reqs(t, stable, in("x")).Matches(map[string]string{alias: "y", stable: "x"}); err != nil {
				t.Errorf("the stable key should win over the alias: %v", err)
			}
		})
	}
	if got := reqs(t, "example.com/zone", in("x")); !got.Has("example.com/zone") {
		t.Errorf("a custom key was renamed: %s", got)
	}
}

func TestCompatible(t *testing.T) {
	template := func(t *testing.T) Requirements {
		return reqs(t,
			zone, in("us-east-1a", "us-east-1b"),
			capacity, in("on-demand", "spot"),
			"example.com/gpu", doesNotExist(),
			"example.com/generation", gt(4),
		)
	}
	for _, tc := range []struct {
		name      string
		pod       Requirements
		undefined UndefinedPolicy
		wantKey   string // "" when compatible
	}{
		{name: "no requirements", pod: Requirements{}},
		{name: "intersecting In", pod: reqs(t, zone, in("us-east-1b", "us-east-1c"))},
		{name: "disjoint In", pod: reqs(t, zone, in("us-east-1c")), wantKey: zone},
		{name: "NotIn leaving values", pod: reqs(t, capacity, notIn("spot"))},
		{name: "NotIn excluding all", pod: reqs(t, capacity, notIn("spot", "on-demand")), wantKey: capacity},
		{name: "DoesNotExist meets DoesNotExist", pod: reqs(t, "example.com/gpu", doesNotExist())},
		{name: "NotIn meets DoesNotExist", pod: reqs(t, "example.com/gpu", notIn("a100"))},
		{name: "Exists against DoesNotExist", pod: reqs(t, "example.com/gpu", exists()), wantKey: "example.com/gpu"},
		{name: "DoesNotExist against In", pod: reqs(t, zone, doesNotExist()), wantKey: zone},
		{name: "Lt above Gt", pod: reqs(t, "example.com/generation", lt(7))},
		{name: "Lt at Gt", pod: reqs(t, "example.com/generation", lt(5)), wantKey: "example.com/generation"},
		{name: "Lte at the Gt bound", pod: reqs(t, "example.com/generation", lte(4)), wantKey: "example.com/generation"},
		{name: "Lte one above the Gt bound", pod: reqs(t, "example.com/generation", lte(5))},
		{name: "Gte above Gt", pod: reqs(t, "example.com/generation", gte(100))},
		{name: "undefined Gte, RequireDefined", pod: reqs(t, team, gte(1)), wantKey: team},
		{name: "first offending key in order", pod: reqs(t, zone, in("x"), capacity, in("reserved")), wantKey: capacity},

		{name: "undefined In, RequireDefined", pod: reqs(t, team, in("a")), undefined: RequireDefined, wantKey: team},
		{name: "undefined In, nil policy", pod: reqs(t, team, in("a")), wantKey: team},
		{name: "undefined Exists, RequireDefined", pod: reqs(t, team, exists()), wantKey: team},
		{name: "undefined Gt, RequireDefined", pod: reqs(t, team, gt(1)), wantKey: team},
		{name: "undefined NotIn, RequireDefined", pod: reqs(t, team, notIn("a"))},
		{name: "undefined DoesNotExist, RequireDefined", pod: reqs(t, team, doesNotExist())},
		{name: "undefined well-known In, AllowUndefinedWellKnown", pod: reqs(t, arch, in("arm64")), undefined: AllowUndefinedWellKnown},
		{name: "undefined well-known In, RequireDefined", pod: reqs(t, arch, in("arm64")), undefined: RequireDefined, wantKey: arch},
		{name: "undefined custom In, AllowUndefinedWellKnown", pod: reqs(t, team, in("a")), undefined: AllowUndefinedWellKnown, wantKey: team},
		{name: "undefined custom In, AllowUndefined", pod: reqs(t, team, in("a")), undefined: AllowUndefined},
		{name: "undefined but unsatisfiable, AllowUndefined", pod: reqs(t, team, in("a"), team, notIn("a")), undefined: AllowUndefined, wantKey: team},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmpl := template(t)
			err := tmpl.Compatible(tc.pod, tc.undefined)
			key, found := tmpl.Conflict(tc.pod, tc.undefined)
			if tc.wantKey == "" {
				if err != nil || found {
					t.Fatalf("Compatible = %v, Conflict = %q; want compatible", err, key)
				}
				return
			}
			var ie *IncompatibleError
			if !errors.As(err, &ie) {
				t.Fatalf("Compatible = %v, want an *IncompatibleError", err)
			}
			if ie.Key != tc.wantKey || key != tc.wantKey || !found {
				t.Errorf("Compatible names %q, Conflict %q (%v); want %q", ie.Key, key, found, tc.wantKey)
			}
			want, _ := tc.pod.Get(tc.wantKey)
			have, defined := tmpl.Get(tc.wantKey)
			if !ie.Required.Equal(want) || ie.Defined != defined || defined && !ie.Offered.Equal(have) {
				t.Errorf("error sides: required %s, offered %s (defined %v)", ie.Required, ie.Offered, ie.Defined)
			}
		})
	}
}

func TestIncompatibleErrorMessage(t *testing.T) {
	many := make([]string, 20)
	for i := range many {
		many[i] = string(rune('a'+i)) + "x"
	}
	for _, tc := range []struct {
		name      string
		have, pod Requirements
		want      string
	}{
		{
			name: "defined",
			have: reqs(t, arch, in("amd64")),
			pod:  reqs(t, arch, in("arm64")),
			want: `label "kubernetes.io/arch": requires In [arm64], offered In [amd64]`,
		},
		{
			name: "undefined",
			pod:  reqs(t, team, in("a")),
			want: `label "example.com/team": requires In [a], but the label is undefined`,
		},
		{
			name: "long lists are cut",
			have: reqs(t, team, in(many...)),
			pod:  reqs(t, team, notIn(many...).min(2)),
			want: `label "example.com/team": requires NotIn [ax bx cx dx ex fx gx hx and 12 more] minValues 2, offered In [ax bx cx dx ex fx gx hx and 12 more]`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.have.Compatible(tc.pod, RequireDefined)
			if err == nil || err.Error() != tc.want {
				t.Errorf("got %v, want %s", err, tc.want)
			}
		})
	}
}

func TestIntersects(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b Requirements
		want bool
	}{
		{name: "empty", want: true},
		{name: "disjoint keys", a: reqs(t, zone, in("a")), b: reqs(t, team, in("x")), want: true},
		{name: "shared key intersecting", a: reqs(t, zone, in("a", "b")), b: reqs(t, zone, notIn("a"), team, in("x")), want: true},
		{name: "shared key disjoint", a: reqs(t, zone, in("a"), team, in("x")), b: reqs(t, team, in("y")), want: false},
		{name: "both allow absence", a: reqs(t, team, doesNotExist()), b: reqs(t, team, notIn("x")), want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.a.Intersects(tc.b); got != tc.want {
				t.Errorf("a.Intersects(b) = %v, want %v", got, tc.want)
			}
			if got := tc.b.Intersects(tc.a); got != tc.want {
				t.Errorf("b.Intersects(a) = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMatches(t *testing.T) {
	labels := map[string]string{zone: "a", "example.com/generation": "6", "example.com/name": "six"}
	for _, tc := range []struct {
		name string
		r    Requirements
		want bool
	}{
		{name: "In present", r: reqs(t, zone, in("a", "b")), want: true},
		{name: "In wrong value", r: reqs(t, zone, in("b")), want: false},
		{name: "In missing", r: reqs(t, team, in("x")), want: false},
		{name: "NotIn present and excluded", r: reqs(t, zone, notIn("a")), want: false},
		{name: "NotIn present and allowed", r: reqs(t, zone, notIn("b")), want: true},
		{name: "NotIn missing", r: reqs(t, team, notIn("x")), want: true},
		{name: "Exists present", r: reqs(t, zone, exists()), want: true},
		{name: "Exists missing", r: reqs(t, team, exists()), want: false},
		{name: "DoesNotExist present", r: reqs(t, zone, doesNotExist()), want: false},
		{name: "DoesNotExist missing", r: reqs(t, team, doesNotExist()), want: true},
		{name: "Gt met", r: reqs(t, "example.com/generation", gt(5)), want: true},
		{name: "Gt not met", r: reqs(t, "example.com/generation", gt(6)), want: false},
		{name: "Gt missing", r: reqs(t, team, gt(0)), want: false},
		{name: "Gt on a non-integer label", r: reqs(t, "example.com/name", gt(0)), want: false},
		{name: "Lt met", r: reqs(t, "example.com/generation", lt(7)), want: true},
		{name: "Lt missing", r: reqs(t, team, lt(7)), want: false},
		{name: "Gte met at the bound", r: reqs(t, "example.com/generation", gte(6)), want: true},
		{name: "Gte not met", r: reqs(t, "example.com/generation", gte(7)), want: false},
		{name: "Lte met at the bound", r: reqs(t, "example.com/generation", lte(6)), want: true},
		{name: "Lte not met", r: reqs(t, "example.com/generation", lte(5)), want: false},
		{name: "Gte Lte around the value", r: reqs(t, "example.com/generation", gte(6), "example.com/generation", lte(6)), want: true},
		{name: "Gte missing", r: reqs(t, team, gte(0)), want: false},
		{name: "Lte on a non-integer label", r: reqs(t, "example.com/name", lte(100)), want: false},
		{name: "all of several", r: reqs(t, zone, in("a"), team, doesNotExist(), "example.com/generation", gt(1)), want: true},
		{name: "one of several fails", r: reqs(t, zone, in("a"), team, exists()), want: false},
		{name: "no requirements", want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.r.Matches(labels)
			if got := err == nil; got != tc.want {
				t.Errorf("Matches = %v, want match %v", err, tc.want)
			}
			// Matches is Compatible against the node's labels as the defining side.
			if got := FromLabels(labels).Compatible(tc.r, RequireDefined) == nil; got != tc.want {
				t.Errorf("FromLabels(labels).Compatible = %v, want %v", !got, tc.want)
			}
		})
	}
}

func TestMatchesError(t *testing.T) {
	err := reqs(t, zone, in("b")).Matches(map[string]string{zone: "a"})
	if got, want := err.Error(), `label "topology.kubernetes.io/zone": requires In [b], offered In [a]`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	err = reqs(t, team, exists()).Matches(nil)
	if got, want := err.Error(), `label "example.com/team": requires Exists, but the label is undefined`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestLabels(t *testing.T) {
	r := reqs(t,
		zone, in("a"),
		arch, in("amd64", "arm64"),
		capacity, in("spot", "on-demand"), capacity, notIn("on-demand"),
		team, exists(),
		"example.com/gpu", doesNotExist(),
		"example.com/generation", gt(3),
	)
	want := map[string]string{zone: "a", capacity: "spot"}
	if got := r.Labels(); !maps.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestStringIsDeterministic(t *testing.T) {
	labels := map[string]string{}
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		labels["example.com/"+k] = k
	}
	want := FromLabels(labels).String()
	for range 20 {
		if got := FromLabels(maps.Clone(labels)).String(); got != want {
			t.Fatalf("String changed between runs: %q vs %q", got, want)
		}
	}
}

func TestIntersectRequirements(t *testing.T) {
	a := reqs(t, zone, in("a", "b"), arch, in("amd64"))
	b := reqs(t, zone, notIn("a"), team, exists())
	got := a.Intersect(b)
	if want := "example.com/team Exists, kubernetes.io/arch In [amd64], topology.kubernetes.io/zone In [b]"; got.String() != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if !got.Equal(b.Intersect(a)) {
		t.Errorf("not commutative: %s vs %s", got, b.Intersect(a))
	}
	// The inputs are unchanged.
	if a.String() != "kubernetes.io/arch In [amd64], topology.kubernetes.io/zone In [a b]" || b.String() != "example.com/team Exists, topology.kubernetes.io/zone NotIn [a]" {
		t.Errorf("inputs changed: %s; %s", a, b)
	}
	if got := a.Add(notIn("b").on(t, zone)); got.String() != "kubernetes.io/arch In [amd64], topology.kubernetes.io/zone In [a]" {
		t.Errorf("Add: got %s", got)
	}
}

func TestIntersectUnchangedDoesNotAllocate(t *testing.T) {
	claim := reqs(t, zone, in("a"), arch, in("amd64"), team, in("x"), capacity, in("spot", "on-demand"))
	pod := reqs(t, zone, in("a", "b"), capacity, notIn("reserved"))
	if got := claim.Intersect(pod); !got.Equal(claim) {
		t.Fatalf("got %s, want %s", got, claim)
	}
	if got := pod.Intersect(claim); !got.Equal(claim) {
		t.Fatalf("reversed: got %s, want %s", got, claim)
	}
	if n := testing.AllocsPerRun(100, func() { _ = claim.Intersect(pod) }); n != 0 {
		t.Errorf("Intersect allocated %v times, want 0", n)
	}
}

func TestFromExpressions(t *testing.T) {
	two, three := 2, 3
	r, err := FromExpressions([]Expression{
		{Key: "node.kubernetes.io/instance-type", Operator: opIn, Values: []string{"m5.large", "m5.xlarge", "c5.large"}, MinValues: &two},
		{Key: "beta.kubernetes.io/instance-type", Operator: opNotIn, Values: []string{"c5.large"}, MinValues: &three},
		{Key: capacity, Operator: opIn, Values: []string{"spot"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "karpenter.sh/capacity-type In [spot], node.kubernetes.io/instance-type In [m5.large m5.xlarge] minValues 3"
	if got := r.String(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	req, _ := r.Get("node.kubernetes.io/instance-type")
	if n, ok := req.MinValues(); !ok || n != 3 {
		t.Errorf("MinValues() = %d, %v; want 3, true", n, ok)
	}
	req, _ = r.Get(capacity)
	if _, ok := req.MinValues(); ok {
		t.Errorf("capacity-type has minValues, want none")
	}
	if _, err := FromExpressions([]Expression{{Key: team, Operator: opGt, Values: []string{"x"}}}); err == nil {
		t.Errorf("Gt x: want an error")
	}
}

func TestFromNodeSelectorTerm(t *testing.T) {
	r, err := FromNodeSelectorTerm(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: zone, Operator: opIn, Values: []string{"a", "b"}},
		{Key: zone, Operator: opNotIn, Values: []string{"b"}},
		{Key: team, Operator: opExists},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.String(), "example.com/team Exists, topology.kubernetes.io/zone In [a]"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, err := FromNodeSelectorTerm(corev1.NodeSelectorTerm{}); !errors.Is(err, ErrEmptyTerm) {
		t.Errorf("empty term: got %v, want ErrEmptyTerm", err)
	}
	fields := corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: opIn, Values: []string{"n"}}}}
	if _, err := FromNodeSelectorTerm(fields); !errors.Is(err, ErrMatchFields) {
		t.Errorf("matchFields: got %v, want ErrMatchFields", err)
	}
	bad := corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: team, Operator: opIn}}}
	if _, err := FromNodeSelectorTerm(bad); err == nil {
		t.Errorf("In without values: want an error")
	}
}

func TestFromPod(t *testing.T) {
	term := func(nsrs ...corev1.NodeSelectorRequirement) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: nsrs}
	}
	pod := func(selector map[string]string, terms ...corev1.NodeSelectorTerm) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p"}}
		p.Spec.NodeSelector = selector
		if terms != nil {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms},
			}}
		}
		return p
	}
	zoneIn := func(v ...string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: zone, Operator: opIn, Values: v}
	}
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		want    []string
		wantErr error
	}{
		{name: "nothing", pod: pod(nil), want: []string{""}},
		{name: "node selector only", pod: pod(map[string]string{arch: "amd64", "beta.kubernetes.io/os": "linux"}),
			want: []string{"kubernetes.io/arch In [amd64], kubernetes.io/os In [linux]"}},
		{name: "one term with node selector", pod: pod(map[string]string{arch: "amd64"}, term(zoneIn("a", "b"))),
			want: []string{"kubernetes.io/arch In [amd64], topology.kubernetes.io/zone In [a b]"}},
		{name: "terms are alternatives in order", pod: pod(map[string]string{zone: "a"}, term(zoneIn("a", "b")), term(zoneIn("c"))),
			want: []string{"topology.kubernetes.io/zone In [a]", "topology.kubernetes.io/zone In []"}},
		{name: "empty terms are skipped", pod: pod(nil, term(), term(zoneIn("c"))),
			want: []string{"topology.kubernetes.io/zone In [c]"}},
		{name: "only empty terms", pod: pod(nil, term()), wantErr: errors.New("no non-empty term")},
		{name: "match fields", pod: pod(nil, corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: opIn, Values: []string{"n"}}}}),
			wantErr: ErrMatchFields},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FromPod(tc.pod)
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("got %v, want an error", got)
				}
				if errors.Is(tc.wantErr, ErrMatchFields) && !errors.Is(err, ErrMatchFields) {
					t.Errorf("got %v, want ErrMatchFields", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var strs []string
			for _, r := range got {
				strs = append(strs, r.String())
			}
			if !slices.Equal(strs, tc.want) {
				t.Errorf("got %q, want %q", strs, tc.want)
			}
		})
	}
}

// Replace lowers a minValues, which Add cannot (an intersection keeps the
// larger), and leaves the other keys and the original untouched.
func TestReplace(t *testing.T) {
	base := reqs(t, zone, in("a", "b", "c"), arch, in("amd64"))
	zr, _ := base.Get(zone)
	three := base.Replace(zr.WithMinValues(3))
	one := three.Replace(zr.WithMinValues(1))
	if got, want := one.String(), "kubernetes.io/arch In [amd64], topology.kubernetes.io/zone In [a b c] minValues 1"; got != want {
		t.Errorf("Replace lowered to %q, want %q", got, want)
	}
	if got := three.Add(zr.WithMinValues(1)); !got.Equal(three) {
		t.Errorf("Add lowered minValues: %q", got)
	}
	if got, want := three.String(), "kubernetes.io/arch In [amd64], topology.kubernetes.io/zone In [a b c] minValues 3"; got != want {
		t.Errorf("Replace changed its receiver: %q, want %q", got, want)
	}
	added := base.Replace(in("x").on(t, team))
	if got, want := added.String(), "example.com/team In [x], kubernetes.io/arch In [amd64], topology.kubernetes.io/zone In [a b c]"; got != want {
		t.Errorf("Replace on a new key gave %q, want %q", got, want)
	}
}
