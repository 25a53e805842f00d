package validation

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/stevedore-autoscaler/stevedore/api/karpenter/v1alpha1"
)

// Well-known values stevedore understands.
const (
	labelCapacityType = "karpenter.sh/capacity-type"
	labelArch         = "kubernetes.io/arch"
	groupAWS          = "karpenter.k8s.aws"
	groupCore         = "karpenter.sh"
	kindNodePool      = "NodePool"
	kindNodeClaim     = "NodeClaim"
	kindEC2NodeClass  = "EC2NodeClass"
	kindNodeOverlay   = "NodeOverlay"
)

var (
	capacityTypes = []string{"spot", "on-demand", "reserved"}
	architectures = []string{"amd64", "arm64"}
	// archSynonyms are names people use for the architectures Kubernetes calls
	// amd64 and arm64.
	archSynonyms = map[string]string{
		"x86_64": "amd64", "x86-64": "amd64", "x64": "amd64", "amd": "amd64", "intel": "amd64",
		"aarch64": "arm64", "arm": "arm64", "graviton": "arm64",
	}
	// betaLabelAliases maps deprecated node label keys to their stable
	// equivalents; stevedore normalizes them, like Karpenter.
	betaLabelAliases = map[string]string{
		"beta.kubernetes.io/arch":                  "kubernetes.io/arch",
		"beta.kubernetes.io/os":                    "kubernetes.io/os",
		"beta.kubernetes.io/instance-type":         "node.kubernetes.io/instance-type",
		"failure-domain.beta.kubernetes.io/zone":   "topology.kubernetes.io/zone",
		"failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region",
	}
	// scheduleReference is the instant from which schedules are checked for
	// ever firing; a fixed time keeps the output the same on every run.
	scheduleReference = time.Date(2025, time.January, 1, 0, 0, 0, 0, time.UTC)
)

// semanticChecks runs the checks the API server cannot do on a served object
// after defaulting. The problems carry only Field, Message, Fix and Severity.
func semanticChecks(kind string, obj map[string]interface{}) []Problem {
	out := DurationProblems(kind, obj)
	switch kind {
	case kindNodePool:
		out = append(out, checkBudgets(obj)...)
		out = append(out, checkClaimSpec("spec.template.spec", obj)...)
		out = append(out, checkNegativeQuantities("spec.limits", obj,
			"must be greater than or equal to 0; the API server accepts a negative limit, but the NodePool could then launch no node",
			"set the limit to zero or more (zero stops launches on purpose), or remove it for no limit")...)
	case kindNodeOverlay:
		out = append(out, checkRequirements("spec.requirements", obj)...)
		out = append(out, checkOverlay(obj)...)
	case kindCapacityBuffer:
		out = append(out, checkCapacityBuffer(obj)...)
	case kindNodeClaim:
		out = append(out, checkClaimSpec("spec", obj)...)
		out = append(out, checkNegativeQuantities("spec.resources.requests", obj,
			"must be greater than or equal to 0",
			"request zero or more, or remove the request")...)
	}
	return out
}

// checkOverlay reports what stevedore's NodeOverlay controller refuses
// although the API server accepts it (see NodeOverlay.RuntimeProblems):
// such an overlay applies nowhere.
func checkOverlay(obj map[string]interface{}) []Problem {
	o := &v1alpha1.NodeOverlay{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, o); err != nil {
		// The schema check has reported what does not decode.
		return nil
	}
	var out []Problem
	for _, f := range o.RuntimeProblems() {
		out = append(out, Problem{Field: f.Path, Message: f.Message + "; the overlay would apply nowhere", Fix: f.Fix, Severity: SeverityError})
	}
	return out
}

func checkBudgets(obj map[string]interface{}) []Problem {
	var out []Problem
	budgets, _ := valueAt(obj, "spec.disruption.budgets")
	list, _ := budgets.([]interface{})
	for i, raw := range list {
		b, ok := raw.(map[string]interface{})
		if !ok {
			continue
		}
		path := fmt.Sprintf("spec.disruption.budgets[%d]", i)
		schedule, hasSchedule := b["schedule"].(string)
		if hasSchedule {
			out = append(out, checkSchedule(path+".schedule", schedule)...)
		}
		nodes, _ := b["nodes"].(string)
		reasons, _ := b["reasons"].([]interface{})
		if (nodes == "0" || nodes == "0%") && !hasSchedule && len(reasons) == 0 {
			out = append(out, Problem{
				Field:    path + ".nodes",
				Message:  fmt.Sprintf("a budget of nodes: %q with no schedule and no reasons blocks all voluntary disruption of this pool forever", nodes),
				Fix:      "add a schedule and duration to make it a freeze window, or reasons (for example [Drifted]) to block only some disruption, or remove the budget",
				Severity: SeverityWarning,
			})
		}
	}
	return out
}

// checkSchedule parses a budget schedule the way stevedore evaluates it: the
// standard five-field cron syntax or a descriptor, in UTC.
func checkSchedule(path, schedule string) []Problem {
	trimmed := strings.TrimSpace(schedule)
	if strings.HasPrefix(trimmed, "TZ=") || strings.HasPrefix(trimmed, "CRON_TZ=") {
		return []Problem{{
			Field:    path,
			Message:  fmt.Sprintf("invalid cron schedule %q: time zones are not supported; budget schedules are evaluated in UTC", schedule),
			Fix:      "remove the time-zone prefix and write the schedule in UTC",
			Severity: SeverityError,
		}}
	}
	sched, err := cron.ParseStandard("TZ=UTC " + schedule)
	if err != nil {
		return []Problem{{
			Field:    path,
			Message:  fmt.Sprintf("invalid cron schedule %q: %v", schedule, err),
			Fix:      `write five fields (minute hour day-of-month month day-of-week), for example "0 9 * * mon-fri", or a descriptor such as @daily; schedules are evaluated in UTC`,
			Severity: SeverityError,
		}}
	}
	if sched.Next(scheduleReference).IsZero() {
		return []Problem{{
			Field:    path,
			Message:  fmt.Sprintf("cron schedule %q never fires, so this budget is never active", schedule),
			Fix:      "use a day of month that exists in the chosen months",
			Severity: SeverityWarning,
		}}
	}
	return nil
}

// checkClaimSpec checks a NodeClaim spec, or the template spec of a NodePool,
// found at specPath.
func checkClaimSpec(specPath string, obj map[string]interface{}) []Problem {
	var out []Problem
	out = append(out, checkRequirements(specPath+".requirements", obj)...)
	out = append(out, checkNodeClassRef(specPath+".nodeClassRef", obj)...)
	out = append(out, checkTaints(specPath, obj)...)
	return out
}

func checkRequirements(path string, obj map[string]interface{}) []Problem {
	var out []Problem
	raw, _ := valueAt(obj, path)
	list, _ := raw.([]interface{})
	for i, r := range list {
		req, ok := r.(map[string]interface{})
		if !ok {
			continue
		}
		p := fmt.Sprintf("%s[%d]", path, i)
		key, _ := req["key"].(string)
		op, _ := req["operator"].(string)
		var values []string
		rawValues, _ := req["values"].([]interface{})
		for _, v := range rawValues {
			if s, ok := v.(string); ok {
				values = append(values, s)
			}
		}
		if stable, ok := betaLabelAliases[key]; ok {
			out = append(out, Problem{
				Field:    p + ".key",
				Message:  fmt.Sprintf("%q is a deprecated alias of %q", key, stable),
				Fix:      fmt.Sprintf("use key: %s", stable),
				Severity: SeverityWarning,
			})
			key = stable
		}
		switch key {
		case labelCapacityType:
			out = append(out, checkCapacityType(p, op, values)...)
		case labelArch:
			if op == "In" {
				for j, v := range values {
					if slices.Contains(architectures, v) {
						continue
					}
					fix := "use amd64 or arm64"
					if s, ok := archSynonyms[strings.ToLower(v)]; ok {
						fix = "use " + s
					} else if g := closest(v, architectures); g != "" {
						fix = "use " + g
					}
					out = append(out, Problem{
						Field:    fmt.Sprintf("%s.values[%d]", p, j),
						Message:  fmt.Sprintf("%q is not an architecture stevedore launches (amd64, arm64); no instance type matches it", v),
						Fix:      fix,
						Severity: SeverityWarning,
					})
				}
			}
		}
	}
	return out
}

func checkCapacityType(p, op string, values []string) []Problem {
	var known, unknown []string
	for _, v := range values {
		if slices.Contains(capacityTypes, v) {
			known = append(known, v)
		} else {
			unknown = append(unknown, v)
		}
	}
	var out []Problem
	switch op {
	case "In":
		if len(known) == 0 {
			fix := "include at least one of spot, on-demand, reserved in values"
			for _, v := range unknown {
				if g := closest(v, capacityTypes); g != "" {
					fix = fmt.Sprintf("write %s instead of %q", g, v)
					break
				}
			}
			out = append(out, Problem{
				Field:    p + ".values",
				Message:  fmt.Sprintf("karpenter.sh/capacity-type In %s allows none of spot, on-demand, reserved, so no capacity matches", quoteList(values)),
				Fix:      fix,
				Severity: SeverityError,
			})
			return out
		}
		for _, v := range unknown {
			fix := "remove it; capacity types are spot, on-demand and reserved"
			if g := closest(v, capacityTypes); g != "" {
				fix = fmt.Sprintf("write %s instead of %q", g, v)
			}
			out = append(out, Problem{
				Field:    p + ".values",
				Message:  fmt.Sprintf("%q is not a capacity type; it never matches", v),
				Fix:      fix,
				Severity: SeverityWarning,
			})
		}
	case "NotIn":
		excluded := 0
		for _, c := range capacityTypes {
			if slices.Contains(values, c) {
				excluded++
			}
		}
		if excluded == len(capacityTypes) {
			out = append(out, Problem{
				Field:    p + ".values",
				Message:  "karpenter.sh/capacity-type NotIn excludes spot, on-demand and reserved, so no capacity matches",
				Fix:      "remove at least one capacity type from values",
				Severity: SeverityError,
			})
		}
	case "DoesNotExist":
		out = append(out, Problem{
			Field:    p + ".operator",
			Message:  "every node has a karpenter.sh/capacity-type label, so DoesNotExist matches no capacity",
			Fix:      "use In or NotIn with spot, on-demand or reserved, or remove the requirement",
			Severity: SeverityError,
		})
	}
	return out
}

func quoteList(values []string) string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = fmt.Sprintf("%q", v)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func checkNodeClassRef(path string, obj map[string]interface{}) []Problem {
	raw, ok := valueAt(obj, path)
	ref, _ := raw.(map[string]interface{})
	if !ok || ref == nil {
		return nil
	}
	group, _ := ref["group"].(string)
	kind, _ := ref["kind"].(string)
	switch {
	case group == "" || strings.Contains(group, "/"):
		return nil // the CRD's own rules report these
	case group == groupAWS:
		if kind == "" || kind == kindEC2NodeClass {
			return nil
		}
		return []Problem{{
			Field:    path + ".kind",
			Message:  fmt.Sprintf("unsupported NodeClass kind %q in group %s; the supported kinds are: %s", kind, groupAWS, kindEC2NodeClass),
			Fix:      "set kind: " + kindEC2NodeClass,
			Severity: SeverityError,
		}}
	default:
		return []Problem{{
			Field:    path + ".group",
			Message:  fmt.Sprintf("unsupported NodeClass group %q; stevedore serves %s/%s", group, groupAWS, kindEC2NodeClass),
			Fix:      fmt.Sprintf("set group: %s and kind: %s, and name an EC2NodeClass", groupAWS, kindEC2NodeClass),
			Severity: SeverityError,
		}}
	}
}

// checkTaints reports key/effect pairs that occur more than once across
// taints and startupTaints; stevedore rejects such a spec at run time.
func checkTaints(specPath string, obj map[string]interface{}) []Problem {
	var out []Problem
	seen := map[string]string{}
	for _, list := range []string{"taints", "startupTaints"} {
		path := specPath + "." + list
		raw, _ := valueAt(obj, path)
		taints, _ := raw.([]interface{})
		for i, t := range taints {
			taint, ok := t.(map[string]interface{})
			if !ok {
				continue
			}
			key, _ := taint["key"].(string)
			effect, _ := taint["effect"].(string)
			pair := key + "=" + effect
			p := fmt.Sprintf("%s[%d]", path, i)
			if first, dup := seen[pair]; dup {
				out = append(out, Problem{
					Field:    p,
					Message:  fmt.Sprintf("duplicate taint Key/Effect pair %s (first at %s)", pair, first),
					Fix:      "remove one of the two taints, or change its key or effect",
					Severity: SeverityError,
				})
				continue
			}
			seen[pair] = p
		}
	}
	return out
}
