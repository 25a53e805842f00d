package chaos

import (
	"reflect"
	"testing"
	"time"
)

func TestParseSeeds(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []uint64
		ok   bool
	}{
		{"1-3,42", []uint64{1, 2, 3, 42}, true},
		{"7", []uint64{7}, true},
		{"2-3, 3-4", []uint64{2, 3, 4}, true},
		{"5-1", nil, false},
		{"x", nil, false},
		{"", nil, false},
	} {
		got, err := ParseSeeds(tc.in)
		if (err == nil) != tc.ok || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseSeeds(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// The faults are a function of the seed: the same seed gives the same
// events, another seed others; all fall between the first five minutes and
// the quiet tail, and a capacity shortage ends before the tail.
func TestGenerateIsSeededAndLeavesATail(t *testing.T) {
	w := World{Zones: []string{"us-east-1a", "us-east-1b"}, InstanceTypes: []string{"m6i.large", "c6i.large"}}
	a := Generate(7, 2*time.Hour, w, 3)
	b := Generate(7, 2*time.Hour, w, 3)
	c := Generate(8, 2*time.Hour, w, 3)
	if len(a) < 4 || !reflect.DeepEqual(a, b) {
		t.Fatalf("seed 7 gave %d and %d events, or different ones", len(a), len(b))
	}
	if reflect.DeepEqual(a, c) {
		t.Error("seeds 7 and 8 gave the same events")
	}
	tail := 2*time.Hour - 40*time.Minute
	kinds := map[string]bool{}
	for i, e := range a {
		kinds[e.Kind] = true
		if e.At < 5*time.Minute || e.At >= tail || e.At+e.For > tail || e.Event.EventKind() != e.Kind || e.Index < 3 {
			t.Errorf("event %d: %s at %s for %s (index %d)", i, e.Kind, e.At, e.For, e.Index)
		}
		if i > 0 && e.At < a[i-1].At {
			t.Errorf("event %d is before event %d", i, i-1)
		}
	}
	many := Generate(1, 24*time.Hour, w, 0)
	for _, e := range many {
		kinds[e.Kind] = true
	}
	for _, f := range Faults {
		if !kinds[f.Kind] {
			t.Errorf("no %s among the faults drawn", f.Kind)
		}
	}
}
