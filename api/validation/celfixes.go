package validation

import (
	"fmt"
	"regexp"
	"strings"
)

// celFixRule gives the fix for the CEL rules whose message matches re. The
// fix may refer to submatches as $1, $2, ...
type celFixRule struct {
	re  *regexp.Regexp
	fix string
}

func celRule(re, fix string) celFixRule { return celFixRule{regexp.MustCompile(re), fix} }

// celFixes are fixes for CEL rule messages that do not carry their own. Most
// rules of the served CRDs say what is wrong, a colon, and what to do; the
// part after the colon is the fix.
var celFixes = []celFixRule{
	// CapacityBuffer's rules, whose wording the generic rules below would
	// turn into nonsense.
	celRule(`^If podTemplateRef is set, replicas or limits must also be set$`, "set spec.replicas or spec.limits: a PodTemplate gives the shape of a chunk, not how many chunks to keep"),
	celRule(`^You must define either PodTemplateRef or ScalableRef, but not both$`, "keep either podTemplateRef or scalableRef and remove the other"),
	celRule(`^taint effect must be (.*)$`, "set effect to $1"),
	celRule(`^(.+?) must not be (.+)$`, "change $1 so that it is not $2"),
	celRule(`^(.+?) must be (.+)$`, "use $2 for $1"),
	celRule(`^(.+?) must have (.+)$`, "give $1 $2"),
	celRule(`^(.+?) needs? (.+)$`, "add $2"),
	celRule(`^(.+?) is required(.*)$`, "add $1$2"),
	celRule(`^(.+?) (is|are) immutable$`, "keep $1 as it was; create a new object to change it"),
}

// celFix returns the fix for a failed CEL rule, or "" when detail is not the
// message of one of the CRD's rules.
func (sk *servedKind) celFix(detail string) string {
	r, ok := sk.rules[detail]
	if !ok {
		return ""
	}
	if f := celMessageFix(detail); f != "" {
		return f
	}
	return fmt.Sprintf("change the value so that the rule %s holds", strings.TrimSpace(r.Rule))
}

// celMessageFix derives a fix from the text of a CEL rule message. Messages
// of the form "<what is wrong>: <what to do>" carry their fix after the
// colon; messages that start with what to do are the fix; others are
// rephrased by celFixes.
func celMessageFix(msg string) string {
	before, after, hasColon := strings.Cut(msg, ": ")
	if hasColon && after != "" {
		if imperative(before) {
			return before
		}
		if strings.HasPrefix(after, "for example") {
			if f := rephrase(before); f != "" {
				return f + ", " + after
			}
			return "follow that form, " + after
		}
		return after
	}
	if imperative(msg) {
		return msg
	}
	return rephrase(msg)
}

// rephrase turns a statement of a rule into an instruction, keeping a
// trailing ", for example ..." at the end.
func rephrase(s string) string {
	example := ""
	if i := strings.Index(s, ", for example "); i >= 0 {
		s, example = s[:i], s[i:]
	}
	for _, f := range celFixes {
		if m := f.re.FindStringSubmatchIndex(s); m != nil {
			return string(f.re.ExpandString(nil, f.fix, s, m)) + example
		}
	}
	return ""
}

var imperativeVerbs = []string{"add", "change", "choose", "delete", "give", "keep", "list", "lower", "move", "quote", "raise", "remove", "rename", "select", "set", "shorten", "use", "write"}

// imperative reports whether s starts with an instruction.
func imperative(s string) bool {
	first, _, _ := strings.Cut(s, " ")
	for _, v := range imperativeVerbs {
		if first == v {
			return true
		}
	}
	return false
}
