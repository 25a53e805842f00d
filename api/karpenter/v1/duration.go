package v1

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Never is the API value of a NillableDuration that never elapses.
const Never = "Never"

// NillableDuration is a length of time that may also be Never. In the API it
// is a string: either "Never" or a sequence of whole hours, minutes and
// seconds such as "720h", "1h30m" or "0s".
//
// The zero value is Never. Fields of this type are pointers so that a nil
// field means "not set" and the API server's default applies.
//
// +kubebuilder:validation:Type=string
type NillableDuration struct {
	// Duration is the length of time, or nil for Never.
	Duration *time.Duration `json:"-"`
	// TooLongValue is the API value when it was longer than a
	// time.Duration holds, and empty otherwise (see Duration).
	TooLongValue string `json:"-"`
}

// NewNillableDuration returns a NillableDuration of length d.
func NewNillableDuration(d time.Duration) *NillableDuration {
	return &NillableDuration{Duration: &d}
}

// NeverDuration returns a NillableDuration that never elapses.
func NeverDuration() *NillableDuration {
	return &NillableDuration{}
}

// IsNever reports whether d never elapses.
func (d NillableDuration) IsNever() bool {
	return d.Duration == nil
}

// String returns the API form of d: "Never", or hours, minutes and seconds
// with zero parts left out ("720h", "1h30m", "0s").
func (d NillableDuration) String() string {
	if d.TooLongValue != "" {
		return d.TooLongValue
	}
	if d.Duration == nil {
		return Never
	}
	return FormatDuration(*d.Duration)
}

// FormatDuration writes whole durations in the shortest h/m/s form, which is
// what users write and what the API pattern accepts. A duration with a
// fractional second falls back to time.Duration's own form.
func FormatDuration(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	if d < 0 || d%time.Second != 0 {
		return d.String()
	}
	var b strings.Builder
	h, m, s := d/time.Hour, (d%time.Hour)/time.Minute, (d%time.Minute)/time.Second
	for _, part := range []struct {
		n    time.Duration
		unit string
	}{{h, "h"}, {m, "m"}, {s, "s"}} {
		if part.n != 0 {
			b.WriteString(strconv.FormatInt(int64(part.n), 10))
			b.WriteString(part.unit)
		}
	}
	return b.String()
}

// MarshalJSON writes d as a JSON string (see String).
func (d NillableDuration) MarshalJSON() ([]byte, error) {
	return json.Marshal(d.String())
}

// UnmarshalJSON reads "Never" or a non-negative Go duration string. JSON null
// leaves d unchanged.
func (d *NillableDuration) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string such as \"720h\" or %q: %w", Never, err)
	}
	d.TooLongValue = ""
	if s == Never {
		d.Duration = nil
		return nil
	}
	v, tooLong, err := parseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q must be %q or hours, minutes and seconds such as \"720h\" or \"1h30m\": %w", s, Never, err)
	}
	d.Duration, d.TooLongValue = &v, tooLong
	return nil
}

// TooLong reports whether the API value was longer than the longest
// time.Duration; Duration then holds that longest duration.
func (d NillableDuration) TooLong() bool { return d.TooLongValue != "" }

// ToUnstructured returns the API form of d for unstructured objects.
func (d NillableDuration) ToUnstructured() any {
	return d.String()
}

// MaxDuration is the longest time.Duration, about 292 years. An API duration
// longer than that decodes to it (see Duration).
const MaxDuration = time.Duration(math.MaxInt64)

// Duration is a length of time written as a Go duration string ("1h",
// "720h", "1h30m"), like metav1.Duration, which it replaces in the API types
// for one reason: the API's patterns accept any number of hours, and a
// value longer than a time.Duration holds (say "9999999999h") makes
// metav1.Duration's decoding fail. Since a list decodes as a whole, one such
// stored object would stop a controller's informer from listing any object
// of its kind. Duration instead decodes such a value to MaxDuration, which
// is what the value means in practice, and keeps the text: it is written
// back unchanged, and TooLong lets validation refuse the object by name
// while every other object carries on.
//
// +kubebuilder:validation:Type=string
type Duration struct {
	Duration time.Duration `json:"-"`
	// TooLongValue is the API value when it was longer than MaxDuration,
	// and empty otherwise. It is exported only so that reflection-based
	// comparisons (equality.Semantic) can see it.
	TooLongValue string `json:"-"`
}

// TooLong reports whether the API value was longer than MaxDuration.
func (d Duration) TooLong() bool { return d.TooLongValue != "" }

// String returns the API value: the text decoded when it was too long, and
// time.Duration's own form otherwise.
func (d Duration) String() string {
	if d.TooLongValue != "" {
		return d.TooLongValue
	}
	return d.Duration.String()
}

// MarshalJSON writes d as metav1.Duration does, or the text it was decoded
// from when that was too long.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a Go duration string. JSON null leaves d unchanged.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string such as \"1h30m\": %w", err)
	}
	v, tooLong, err := parseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q must be hours, minutes and seconds such as \"1h30m\": %w", s, err)
	}
	d.Duration, d.TooLongValue = v, tooLong
	return nil
}

// ToUnstructured returns the API form of d for unstructured objects.
func (d Duration) ToUnstructured() any { return d.String() }

// parseDuration parses a non-negative Go duration. A run of number-unit
// pairs too long for a time.Duration gives MaxDuration and s itself as
// tooLong.
func parseDuration(s string) (d time.Duration, tooLong string, err error) {
	d, err = time.ParseDuration(s)
	if err != nil {
		if DurationTooLong(s) {
			return MaxDuration, s, nil
		}
		return 0, "", err
	}
	if d < 0 {
		return 0, "", fmt.Errorf("must not be negative")
	}
	return d, "", nil
}

// DurationTooLong reports whether s is a well-formed, unsigned Go duration
// that is longer than MaxDuration.
func DurationTooLong(s string) bool {
	if !durationShapeRE.MatchString(s) {
		return false
	}
	_, err := time.ParseDuration(s)
	return err != nil
}

// durationShapeRE is a Go duration without a sign.
var durationShapeRE = regexp.MustCompile(`^([0-9]*\.?[0-9]+(ns|us|µs|ms|s|m|h))+$`)

// TooLongDurations returns the paths of np's duration fields whose values
// were longer than MaxDuration. Such a NodePool decodes (see Duration), but
// it is not what its author meant, and the controller does not launch from
// it.
func (np *NodePool) TooLongDurations() []string {
	var out []string
	ts := np.Spec.Template.Spec
	if d := ts.ExpireAfter; d != nil && d.TooLong() {
		out = append(out, "spec.template.spec.expireAfter")
	}
	if d := ts.TerminationGracePeriod; d != nil && d.TooLong() {
		out = append(out, "spec.template.spec.terminationGracePeriod")
	}
	if d := np.Spec.Disruption.ConsolidateAfter; d != nil && d.TooLong() {
		out = append(out, "spec.disruption.consolidateAfter")
	}
	for i, b := range np.Spec.Disruption.Budgets {
		if b.Duration != nil && b.Duration.TooLong() {
			out = append(out, fmt.Sprintf("spec.disruption.budgets[%d].duration", i))
		}
	}
	return out
}
