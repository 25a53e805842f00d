package v1

import (
	"encoding/json"
	"fmt"
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
	if s == Never {
		d.Duration = nil
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q must be %q or hours, minutes and seconds such as \"720h\" or \"1h30m\": %w", s, Never, err)
	}
	if v < 0 {
		return fmt.Errorf("duration %q must not be negative", s)
	}
	d.Duration = &v
	return nil
}

// ToUnstructured returns the API form of d for unstructured objects.
func (d NillableDuration) ToUnstructured() any {
	return d.String()
}
