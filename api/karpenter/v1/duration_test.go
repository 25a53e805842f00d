package v1

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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

func TestDurationTooLong(t *testing.T) {
	for s, want := range map[string]bool{
		"9999999999h": true, "2562048h": true, "2562047h": false, "1h30m": false, "1.5h": false,
		"h": false, "10": false, "1d": false, "-9999999999h": false, "": false,
	} {
		if got := DurationTooLong(s); got != want {
			t.Errorf("DurationTooLong(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestDurationsTooLongStillDecode: a stored object whose duration is longer
// than a time.Duration holds must still decode, or one such object would
// stop a controller from listing all the others of its kind. The value is
// read as the longest duration, reported by TooLong, and written back as it
// came.
func TestDurationsTooLongStillDecode(t *testing.T) {
	const in = `{"spec":{"template":{"spec":{"expireAfter":"9999999999h","terminationGracePeriod":"9999999999h",` +
		`"nodeClassRef":{"group":"karpenter.k8s.aws","kind":"EC2NodeClass","name":"default"},"requirements":[]}},` +
		`"disruption":{"consolidateAfter":"9999999999h","budgets":[{"nodes":"0","schedule":"@daily","duration":"9999999999h"}]}}}`
	var np NodePool
	if err := json.Unmarshal([]byte(in), &np); err != nil {
		t.Fatalf("a NodePool with too-long durations does not decode: %v", err)
	}
	ts := np.Spec.Template.Spec
	for name, got := range map[string]struct {
		d       time.Duration
		tooLong bool
	}{
		"expireAfter":            {*ts.ExpireAfter.Duration, ts.ExpireAfter.TooLong()},
		"terminationGracePeriod": {ts.TerminationGracePeriod.Duration, ts.TerminationGracePeriod.TooLong()},
		"consolidateAfter":       {*np.Spec.Disruption.ConsolidateAfter.Duration, np.Spec.Disruption.ConsolidateAfter.TooLong()},
		"budgets[0].duration":    {np.Spec.Disruption.Budgets[0].Duration.Duration, np.Spec.Disruption.Budgets[0].Duration.TooLong()},
	} {
		if got.d != MaxDuration || !got.tooLong {
			t.Errorf("%s decoded to %v (too long: %v), want %v and too long", name, got.d, got.tooLong, MaxDuration)
		}
	}
	out, err := json.Marshal(&np)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(out), `"9999999999h"`); n != 4 {
		t.Errorf("written back with %d of the 4 values as given: %s", n, out)
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&np)
	if err != nil {
		t.Fatal(err)
	}
	if got, _, _ := unstructured.NestedString(u, "spec", "template", "spec", "terminationGracePeriod"); got != "9999999999h" {
		t.Errorf("unstructured terminationGracePeriod = %q, want the value as given", got)
	}
}

func TestDurationJSON(t *testing.T) {
	for _, tt := range []struct {
		in, out string
		d       time.Duration
		err     bool
	}{
		{in: `"1h30m"`, out: `"1h30m0s"`, d: 90 * time.Minute},
		{in: `"0s"`, out: `"0s"`},
		{in: `"-1h"`, err: true},
		{in: `"1d"`, err: true},
		{in: `5`, err: true},
	} {
		var d Duration
		err := json.Unmarshal([]byte(tt.in), &d)
		if (err != nil) != tt.err {
			t.Errorf("Unmarshal(%s) error %v, want error %v", tt.in, err, tt.err)
			continue
		}
		if tt.err {
			continue
		}
		out, _ := json.Marshal(d)
		if d.Duration != tt.d || string(out) != tt.out || d.TooLong() {
			t.Errorf("Unmarshal(%s) = %v, written %s; want %v, %s", tt.in, d.Duration, out, tt.d, tt.out)
		}
	}
}
