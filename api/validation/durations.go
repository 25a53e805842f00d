package validation

import (
	"fmt"
	"strings"
	"time"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
)

// maxDurationHours is the longest whole number of hours a Go time.Duration
// (and so the API's duration fields, as every controller decodes them) can
// hold: about 292 years.
var maxDurationHours = int64(karpv1.MaxDuration / time.Hour)

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
// pattern; the controller decodes such a value as the longest duration
// there is (see karpv1.Duration), refuses the NodePool by name and launches
// nothing from it, and `stevedore validate`, `plan` and the simulator refuse
// the file, naming the field. Values that are not strings, or do not parse
// for another reason, are left to the schema check.
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
		if !karpv1.DurationTooLong(s) {
			continue
		}
		out = append(out, Problem{
			Field:    path,
			Message:  fmt.Sprintf("%q is longer than the longest duration there is, %dh (about 292 years): the API server stores it, but it cannot mean what it says, and stevedore launches nothing from the NodePool", s, maxDurationHours),
			Fix:      fmt.Sprintf("use at most %dh%s", maxDurationHours, neverHint(path)),
			Severity: SeverityError,
		})
	}
	return out
}

// neverHint suggests Never where the field takes it.
func neverHint(path string) string {
	if strings.HasSuffix(path, "expireAfter") || strings.HasSuffix(path, "consolidateAfter") {
		return ", or Never"
	}
	return ""
}
