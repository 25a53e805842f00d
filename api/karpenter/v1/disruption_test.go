package v1

import (
	"encoding/json"
	"testing"
	"time"
)

// TestDisruptionMarshalsConsolidateAfter checks that a NodePool built in Go
// without ConsolidateAfter is written with the 0s it has always meant, since
// the API requires the field whenever disruption is given, and that a set
// value is written unchanged.
func TestDisruptionMarshalsConsolidateAfter(t *testing.T) {
	for _, tc := range []struct {
		in   Disruption
		want string
	}{
		{Disruption{}, `{"consolidateAfter":"0s"}`},
		{Disruption{ConsolidationPolicy: ConsolidationPolicyBalanced}, `{"consolidationPolicy":"Balanced","consolidateAfter":"0s"}`},
		{Disruption{ConsolidateAfter: NewNillableDuration(5 * time.Minute)}, `{"consolidateAfter":"5m"}`},
		{Disruption{ConsolidateAfter: NeverDuration()}, `{"consolidateAfter":"Never"}`},
	} {
		got, err := json.Marshal(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Errorf("got %s, want %s", got, tc.want)
		}
	}
	// Inside a NodePool too, where Disruption is a value field.
	got, err := json.Marshal(NodePoolSpec{})
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Disruption map[string]any `json:"disruption"`
	}
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	if back.Disruption["consolidateAfter"] != "0s" {
		t.Errorf("NodePoolSpec{} marshals disruption as %v, want consolidateAfter 0s", back.Disruption)
	}
}
