package validation

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testValidator returns the Validator for the CRDs stevedore serves.
func testValidator(t testing.TB) *Validator {
	t.Helper()
	v, err := Default()
	if err != nil {
		t.Fatalf("building the validator from the served CRDs: %v", err)
	}
	return v
}

// validate runs Documents on a YAML string.
func validate(t testing.TB, v *Validator, yaml string) []Problem {
	t.Helper()
	problems, err := v.Documents("test.yaml", strings.NewReader(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return problems
}

// errorsOf returns the problems that are errors.
func errorsOf(problems []Problem) []Problem {
	var out []Problem
	for _, p := range problems {
		if p.Severity == SeverityError {
			out = append(out, p)
		}
	}
	return out
}

// find returns the first problem at field with the given severity whose
// message contains msg.
func find(problems []Problem, field string, severity Severity, msg string) (Problem, bool) {
	for _, p := range problems {
		if p.Field == field && p.Severity == severity && strings.Contains(p.Message, msg) {
			return p, true
		}
	}
	return Problem{}, false
}

func dump(problems []Problem) string {
	var b strings.Builder
	for _, p := range problems {
		b.WriteString("\n  ")
		b.WriteString(string(p.Severity))
		b.WriteString(" ")
		b.WriteString(p.String())
	}
	if b.Len() == 0 {
		return " (none)"
	}
	return b.String()
}

// invalidCase is one file of testdata/invalid.
type invalidCase struct {
	file        string
	field       string   // "# field:" the path the problem is reported at
	offlineOnly bool     // "# offline-only: true": the API server accepts the object
	severity    Severity // "# severity:" error unless stated
	message     string   // "# message:" a part of the problem message
	fix         string   // "# fix:" a part of the fix
}

// readInvalidCases reads the header comments of every file in
// testdata/invalid.
func readInvalidCases(t testing.TB) []invalidCase {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "invalid", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []invalidCase
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		c := invalidCase{file: f, severity: SeverityError}
		for _, line := range strings.Split(string(data), "\n") {
			if !strings.HasPrefix(line, "#") {
				break
			}
			key, value, ok := strings.Cut(strings.TrimSpace(strings.TrimPrefix(line, "#")), ":")
			if !ok {
				continue
			}
			value = strings.TrimSpace(value)
			switch key {
			case "field":
				c.field = value
			case "offline-only":
				c.offlineOnly = value == "true"
			case "severity":
				c.severity = Severity(value)
			case "message":
				c.message = value
			case "fix":
				c.fix = value
			}
		}
		if c.field == "" {
			t.Errorf("%s: no leading \"# field: <path>\" comment", f)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		t.Fatal("no files in testdata/invalid")
	}
	return out
}
