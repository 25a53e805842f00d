package validation

import (
	"os"
	"sort"
	"strings"
	"testing"
)

// TestInvalidManifests checks every file of testdata/invalid: the validator
// reports the problem its header describes, at its field, and no error at a
// field the header does not name.
func TestInvalidManifests(t *testing.T) {
	v := testValidator(t)
	for _, c := range readInvalidCases(t) {
		t.Run(strings.TrimSuffix(c.file[len("testdata/invalid/"):], ".yaml"), func(t *testing.T) {
			data, err := os.ReadFile(c.file)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(splitYAML(data)); n != 1 {
				t.Fatalf("holds %d documents, want one object", n)
			}
			problems, err := v.Documents(c.file, strings.NewReader(string(data)))
			if err != nil {
				t.Fatal(err)
			}
			p, ok := find(problems, c.field, c.severity, c.message)
			if !ok {
				t.Fatalf("no %s at %s with a message containing %q; got:%s", c.severity, c.field, c.message, dump(problems))
			}
			if !strings.Contains(p.Fix, c.fix) {
				t.Errorf("fix %q does not contain %q", p.Fix, c.fix)
			}
			if p.Fix == "" {
				t.Errorf("no fix for %s", p)
			}
			allowed := map[string]bool{c.field: true}
			also := readHeader(string(data), "also")
			for _, f := range strings.Split(also, ",") {
				if f = strings.TrimSpace(f); f != "" {
					allowed[f] = true
					if _, ok := find(problems, f, SeverityError, ""); !ok {
						t.Errorf("no error at %s, which the header lists; got:%s", f, dump(problems))
					}
				}
			}
			for _, e := range errorsOf(problems) {
				if !allowed[e.Field] {
					t.Errorf("unexpected error: %s", e)
				}
			}
		})
	}
}

func readHeader(data, key string) string {
	for _, line := range strings.Split(data, "\n") {
		if !strings.HasPrefix(line, "#") {
			break
		}
		k, v, ok := strings.Cut(strings.TrimSpace(strings.TrimPrefix(line, "#")), ":")
		if ok && k == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// TestEveryCELRuleHasACase checks that every x-kubernetes-validations rule of
// the served CRDs that applies on create fails for at least one file in
// testdata/invalid, and that its fix is derived from the rule's message
// rather than the generic fallback.
func TestEveryCELRuleHasACase(t *testing.T) {
	v := testValidator(t)
	var messages []string
	for _, c := range readInvalidCases(t) {
		problems, err := v.Paths([]string{c.file}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			messages = append(messages, p.Message)
		}
	}
	fired := func(msg string) bool {
		for _, m := range messages {
			if strings.HasSuffix(m, ": "+msg) {
				return true
			}
		}
		return false
	}
	var missing []string
	for gvk, sk := range v.served {
		for msg, r := range sk.rules {
			if strings.Contains(r.Rule, "oldSelf") {
				continue // transition rules do not run on create
			}
			if !fired(msg) {
				missing = append(missing, gvk.Kind+": "+msg)
			}
			if celMessageFix(msg) == "" {
				t.Errorf("%s: no fix can be derived from the message of rule %s: %q", gvk.Kind, r.Rule, msg)
			}
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("no file in testdata/invalid makes the rule with this message fail: %q", m)
	}
}

// TestDocsListEveryRule checks that docs/validation.md lists the message of
// every CRD rule that applies on create.
func TestDocsListEveryRule(t *testing.T) {
	v := testValidator(t)
	data, err := os.ReadFile("../../docs/validation.md")
	if err != nil {
		t.Fatal(err)
	}
	docs := string(data)
	for gvk, sk := range v.served {
		for msg, r := range sk.rules {
			if strings.Contains(r.Rule, "oldSelf") {
				continue
			}
			what, _, _ := strings.Cut(msg, ": ")
			if !strings.Contains(docs, "`"+what+"`") {
				t.Errorf("docs/validation.md does not list the %s rule message %q", gvk.Kind, what)
			}
		}
	}
}
