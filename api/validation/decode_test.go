package validation

import (
	"fmt"
	"strings"
	"testing"
)

// TestYAMLErrorLines checks that a YAML syntax error names the line of the
// file it is on, whether the YAML parser or its scanner finds it, on the
// first line of a document or a later one, in the first document or a later
// one.
func TestYAMLErrorLines(t *testing.T) {
	v := testValidator(t)
	for _, tc := range []struct {
		name string
		doc  string
		line int // the line of doc the error is on, from 1
	}{
		{"tab at the start of the first line", "\tbad: x\n", 1},
		{"a key missing on the first line", ": :\n", 1},
		{"a mapping value on the first line", "a: b: c\n", 1},
		{"a character that cannot start a token on the first line", "@a: b\n", 1},
		{"an unknown escape on the first line", "a: \"\\q\"\n", 1},
		{"a key missing on the second line", "a: b\n: :\n", 2},
		{"a mapping value on the second line", "x: 1\na: b: c\n", 2},
		{"wrong indentation", "a: b\nc: d\n  e: f\n", 3},
		{"a sequence after a mapping key", "- a\nb: c\n", 2},
		{"a mapping in a sequence", "a:\n  - b\n  c: d\n", 3},
		{"a tab in the indentation", "a: b\n\tbad: x\n", 2},
		{"after comments and a blank line", "# one\n# two\n\n: :\n", 4},
		{"an unclosed flow mapping at the end", "a: b\nc: {x: y\n", 2},
		{"an unclosed flow sequence at the end, no final line break", "a: b\nc: [", 2},
		{"an unclosed quote at the end", "a: b\nc: \"x\n", 2},
	} {
		for _, before := range []struct {
			name, text string
			lines      int
		}{
			{"first document", "", 0},
			{"after a leading ---", "---\n", 1},
			{"second document", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n", 4},
			{"third document", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n# a comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n---\n", 10},
		} {
			t.Run(tc.name+"/"+before.name, func(t *testing.T) {
				problems := validate(t, v, before.text+tc.doc)
				want := fmt.Sprintf("yaml: line %d: ", before.lines+tc.line)
				var got []string
				for _, p := range problems {
					if strings.HasPrefix(p.Message, "yaml:") {
						got = append(got, p.Message)
					}
				}
				if len(got) != 1 || !strings.HasPrefix(got[0], want) {
					t.Errorf("want one YAML error starting %q, got:%s", want, dump(problems))
				}
			})
		}
	}
}

// TestYAMLErrorsWithoutAPosition checks that errors that are not about a
// place in the text are left as the YAML decoder writes them.
func TestYAMLErrorsWithoutAPosition(t *testing.T) {
	v := testValidator(t)
	problems := validate(t, v, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {a: *x}\n")
	if len(problems) != 1 || problems[0].Message != "yaml: unknown anchor 'x' referenced" {
		t.Errorf("got:%s", dump(problems))
	}
}
