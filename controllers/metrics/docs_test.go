package metrics

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// docsFile holds the operator's metrics table, one row per family of
// tableFile.
const docsFile = "../../docs/operations.md"

// TestDocsListEveryMetric checks the metrics table of docs/operations.md
// against tableFile: the same families, each with its type and label names
// (the per-node gauges name the well-known node labels as a group, so only
// the labels they list are checked).
func TestDocsListEveryMetric(t *testing.T) {
	data, err := os.ReadFile(docsFile)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	start := strings.Index(text, "### Karpenter metric → stevedore")
	if start < 0 {
		t.Fatalf("%s has no metrics table heading", docsFile)
	}
	text = text[start:]
	if end := strings.Index(text[4:], "\n## "); end >= 0 {
		text = text[:end+4]
	}
	ticked := regexp.MustCompile("`([a-z_0-9]+)`")
	type row struct {
		typ      string
		labels   []string
		nodeWide bool
	}
	docs := map[string]row{}
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 5 {
			t.Fatalf("%s: short row %q", docsFile, line)
		}
		name := strings.Trim(strings.TrimSpace(cells[1]), "`")
		r := row{typ: strings.TrimSpace(cells[2]), nodeWide: strings.Contains(cells[3], "well-known node labels")}
		for _, m := range ticked.FindAllStringSubmatch(cells[3], -1) {
			r.labels = append(r.labels, m[1])
		}
		slices.Sort(r.labels)
		if _, dup := docs[name]; dup {
			t.Errorf("%s lists %s twice", docsFile, name)
		}
		docs[name] = r
	}
	table := readTable(t)
	for _, want := range table {
		got, ok := docs[want.Name]
		if !ok {
			t.Errorf("%s does not list %s", docsFile, want.Name)
			continue
		}
		delete(docs, want.Name)
		if got.typ != want.Type {
			t.Errorf("%s: %s says %s, the table %s", want.Name, docsFile, got.typ, want.Type)
		}
		if got.nodeWide {
			for _, l := range got.labels {
				if !slices.Contains(want.Labels, l) {
					t.Errorf("%s: %s names label %s, which the table lacks", want.Name, docsFile, l)
				}
			}
			continue
		}
		if !slices.Equal(got.labels, want.Labels) {
			t.Errorf("%s: %s says labels %v, the table %v", want.Name, docsFile, got.labels, want.Labels)
		}
	}
	for name := range docs {
		t.Errorf("%s lists %s, which %s lacks", docsFile, name, tableFile)
	}
	if len(table) != 126 {
		t.Errorf("%s lists %d families; Karpenter v1.14.1's reference has 122, and 4 more are served", tableFile, len(table))
	}
}
