package validation

import (
	"sort"
	"strconv"
	"strings"
)

// Severity says whether a problem blocks the object.
type Severity string

const (
	// SeverityError marks a problem that makes the API server (or stevedore at
	// run time) reject the object.
	SeverityError Severity = "error"
	// SeverityWarning marks a problem worth a look that does not block the object.
	SeverityWarning Severity = "warning"
)

// Problem is one finding about one object.
type Problem struct {
	// Source names the document: the file name and the 1-based index of the
	// document in it, e.g. "examples/spot-mix.yaml#2" ("-" is stdin).
	Source string `json:"source"`
	// Kind and Name identify the object, e.g. "NodePool" and "default".
	// Both may be empty when the document could not be decoded.
	Kind string `json:"kind,omitempty"`
	Name string `json:"name,omitempty"`
	// Field is the path in API server format, e.g.
	// "spec.disruption.budgets[1].duration". Empty for document-level problems.
	Field string `json:"field,omitempty"`
	// Message says what is wrong. For problems the API server also reports,
	// it is the server's own text.
	Message string `json:"message"`
	// Fix says what to do, in one sentence.
	Fix string `json:"fix"`
	// Severity is SeverityError or SeverityWarning.
	Severity Severity `json:"severity"`
}

// String renders the problem on one line:
// "<source>: <Kind>/<name>: <field>: <message>; fix: <fix>".
// Parts that are empty are left out.
func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.Source)
	b.WriteString(": ")
	if p.Kind != "" {
		b.WriteString(p.Kind)
		if p.Name != "" {
			b.WriteString("/")
			b.WriteString(p.Name)
		}
		b.WriteString(": ")
	} else if p.Name != "" {
		b.WriteString(p.Name)
		b.WriteString(": ")
	}
	if p.Field != "" {
		b.WriteString(p.Field)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	if p.Fix != "" {
		b.WriteString("; fix: ")
		b.WriteString(p.Fix)
	}
	return b.String()
}

// HasErrors reports whether any problem is an error.
func HasErrors(problems []Problem) bool {
	for _, p := range problems {
		if p.Severity == SeverityError {
			return true
		}
	}
	return false
}

// sortByField orders the problems of one document by field path (indexes
// compare as numbers, so budgets[2] comes before budgets[10]), then errors
// before warnings, then by message, so that the order never depends on map
// iteration inside the checks.
func sortByField(problems []Problem) {
	sort.SliceStable(problems, func(i, j int) bool {
		a, b := problems[i], problems[j]
		if c := compareFieldPaths(a.Field, b.Field); c != 0 {
			return c < 0
		}
		if a.Severity != b.Severity {
			return a.Severity == SeverityError
		}
		return a.Message < b.Message
	})
}

// compareFieldPaths compares two field paths segment by segment. A segment is
// a field name or a bracketed subscript; numeric subscripts compare as numbers.
func compareFieldPaths(a, b string) int {
	as, bs := splitFieldPath(a), splitFieldPath(b)
	for i := 0; i < len(as) && i < len(bs); i++ {
		if c := compareSegments(as[i], bs[i]); c != 0 {
			return c
		}
	}
	return len(as) - len(bs)
}

func compareSegments(a, b string) int {
	ai, aerr := strconv.Atoi(strings.Trim(a, "[]"))
	bi, berr := strconv.Atoi(strings.Trim(b, "[]"))
	if aerr == nil && berr == nil && strings.HasPrefix(a, "[") && strings.HasPrefix(b, "[") {
		return ai - bi
	}
	return strings.Compare(a, b)
}

// splitFieldPath splits "spec.budgets[1].nodes" into
// ["spec", "budgets", "[1]", "nodes"]. Brackets may hold map keys with dots.
func splitFieldPath(p string) []string {
	var out []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, cur.String())
			cur.Reset()
		}
	}
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '.':
			flush()
		case '[':
			flush()
			end := strings.IndexByte(p[i:], ']')
			if end < 0 {
				cur.WriteString(p[i:])
				i = len(p)
				continue
			}
			out = append(out, p[i:i+end+1])
			i += end
		default:
			cur.WriteByte(c)
		}
	}
	flush()
	return out
}
