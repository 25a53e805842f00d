package validation

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"
)

// maxDurationHours is the longest whole number of hours a Go time.Duration
// (and so the API's duration fields, as every controller decodes them) can
// hold: about 292 years.
var maxDurationHours = int64(math.MaxInt64 / int64(time.Hour))

// durationFields lists, per kind, the duration fields whose values the
// schema's pattern accepts however large they are. A budget's duration is
// found in every budget.
var durationFields = map[string][]string{
	kindNodePool:  {"spec.template.spec.expireAfter", "spec.template.spec.terminationGracePeriod", "spec.disruption.consolidateAfter"},
	kindNodeClaim: {"spec.expireAfter", "spec.terminationGracePeriod"},
}

// DurationProblems reports the duration fields of obj (a NodePool or a
// NodeClaim, as decoded from YAML or JSON) whose values are too long for a
// duration: the API server accepts them, since they match the schema's
// pattern, but no controller can decode the object then, and neither can
// `stevedore plan` or the simulator, which call this first to say which field
// is at fault. Values that are not strings, or do not parse for another
// reason, are left to the schema check.
func DurationProblems(kind string, obj map[string]interface{}) []Problem {
	var paths []string
	paths = append(paths, durationFields[kind]...)
	if kind == kindNodePool {
		budgets, _ := valueAt(obj, "spec.disruption.budgets")
		list, _ := budgets.([]interface{})
		for i := range list {
			paths = append(paths, fmt.Sprintf("spec.disruption.budgets[%d].duration", i))
		}
	}
	var out []Problem
	for _, path := range paths {
		raw, ok := valueAt(obj, path)
		if !ok {
			continue
		}
		s, ok := raw.(string)
		if !ok || s == "" || s == "Never" {
			continue
		}
		if _, err := time.ParseDuration(s); err == nil || !durationOverflows(s) {
			continue
		}
		out = append(out, Problem{
			Field:    path,
			Message:  fmt.Sprintf("%q is longer than the longest duration there is, %dh (about 292 years): the API server stores it, but no controller can read the object", s, maxDurationHours),
			Fix:      fmt.Sprintf("use at most %dh%s", maxDurationHours, neverHint(path)),
			Severity: SeverityError,
		})
	}
	return out
}

// durationOverflows reports whether s, which time.ParseDuration refused, is
// a run of number-unit pairs (as the schema's pattern allows), so that only
// its length can be at fault.
func durationOverflows(s string) bool { return durationShapeRE.MatchString(s) }

// durationShapeRE is a Go duration without a sign.
var durationShapeRE = regexp.MustCompile(`^([0-9]*\.?[0-9]+(ns|us|µs|ms|s|m|h))+$`)

// neverHint suggests Never where the field takes it.
func neverHint(path string) string {
	if strings.HasSuffix(path, "expireAfter") || strings.HasSuffix(path, "consolidateAfter") {
		return ", or Never"
	}
	return ""
}
