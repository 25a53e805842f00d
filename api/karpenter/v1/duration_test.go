package v1

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
)

func TestNillableDurationJSON(t *testing.T) {
	tests := []struct {
		in    string        // JSON input
		never bool          // whether it decodes to Never
		d     time.Duration // the decoded duration otherwise
		out   string        // JSON it encodes back to
	}{
		{in: `"Never"`, never: true, out: `"Never"`},
		{in: `"720h"`, d: 720 * time.Hour, out: `"720h"`},
		{in: `"0s"`, d: 0, out: `"0s"`},
		{in: `"1h30m"`, d: 90 * time.Minute, out: `"1h30m"`},
		{in: `"90m"`, d: 90 * time.Minute, out: `"1h30m"`},
		{in: `"720h0m0s"`, d: 720 * time.Hour, out: `"720h"`},
		{in: `"30s"`, d: 30 * time.Second, out: `"30s"`},
		{in: `"1h0m1s"`, d: time.Hour + time.Second, out: `"1h1s"`},
	}
	for _, tt := range tests {
		var d NillableDuration
		if err := json.Unmarshal([]byte(tt.in), &d); err != nil {
			t.Errorf("Unmarshal(%s): %v", tt.in, err)
			continue
		}
		if d.IsNever() != tt.never {
			t.Errorf("Unmarshal(%s): IsNever() = %v, want %v", tt.in, d.IsNever(), tt.never)
		}
		if !tt.never && (d.Duration == nil || *d.Duration != tt.d) {
			t.Errorf("Unmarshal(%s): Duration = %v, want %v", tt.in, d.Duration, tt.d)
		}
		out, err := json.Marshal(d)
		if err != nil {
			t.Errorf("Marshal(%s): %v", tt.in, err)
			continue
		}
		if string(out) != tt.out {
			t.Errorf("Marshal(Unmarshal(%s)) = %s, want %s", tt.in, out, tt.out)
		}
		// The encoded form decodes to the same value.
		var again NillableDuration
		if err := json.Unmarshal(out, &again); err != nil || again.String() != d.String() {
			t.Errorf("Unmarshal(%s) = %v, %v; want %v", out, again, err, d)
		}
	}
}

func TestNillableDurationRejects(t *testing.T) {
	for _, in := range []string{`"1d"`, `"-1h"`, `"never"`, `""`, `720`, `{}`} {
		var d NillableDuration
		if err := json.Unmarshal([]byte(in), &d); err == nil {
			t.Errorf("Unmarshal(%s) = %v, want an error", in, d)
		}
	}
}

func TestNillableDurationNullKeepsValue(t *testing.T) {
	d := *NewNillableDuration(time.Minute)
	if err := d.UnmarshalJSON([]byte("null")); err != nil {
		t.Fatal(err)
	}
	if d.String() != "1m" {
		t.Errorf("null changed the value to %v", d)
	}
}

func TestNillableDurationConstructors(t *testing.T) {
	if var0 := (NillableDuration{}); !var0.IsNever() || var0.String() != Never {
		t.Errorf("the zero value is %v, want Never", var0)
	}
	if d := NeverDuration(); !d.IsNever() {
		t.Errorf("NeverDuration() = %v", d)
	}
	if d := NewNillableDuration(2 * time.Hour); d.IsNever() || d.String() != "2h" {
		t.Errorf("NewNillableDuration(2h) = %v", d)
	}
	if got := NewNillableDuration(1500 * time.Millisecond).String(); got != "1.5s" {
		t.Errorf("a fractional duration is written %q, want 1.5s", got)
	}
}

func TestNillableDurationFields(t *testing.T) {
	// An unset field is left out, so that the API server's default applies;
	// Never is written out.
	spec := NodeClaimTemplateSpec{NodeClassRef: &NodeClassReference{Group: "g", Kind: "k", Name: "n"}}
	out, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "expireAfter") {
		t.Errorf("unset expireAfter was written: %s", out)
	}
	spec.ExpireAfter = NeverDuration()
	if out, _ = json.Marshal(spec); !strings.Contains(string(out), `"expireAfter":"Never"`) {
		t.Errorf("Never was not written: %s", out)
	}

	// Unstructured conversion uses the same form as JSON.
	np := &NodePool{Spec: NodePoolSpec{Template: NodeClaimTemplate{Spec: spec}, Disruption: Disruption{ConsolidateAfter: NewNillableDuration(30 * time.Second)}}}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(np)
	if err != nil {
		t.Fatal(err)
	}
	disruption := u["spec"].(map[string]any)["disruption"].(map[string]any)
	if got := disruption["consolidateAfter"]; got != "30s" {
		t.Errorf("unstructured consolidateAfter = %#v, want \"30s\"", got)
	}
	var back NodePool
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, &back); err != nil {
		t.Fatal(err)
	}
	if back.Spec.Disruption.ConsolidateAfter.String() != "30s" || !back.Spec.Template.Spec.ExpireAfter.IsNever() {
		t.Errorf("unstructured round trip gave %v and %v", back.Spec.Disruption.ConsolidateAfter, back.Spec.Template.Spec.ExpireAfter)
	}
}
