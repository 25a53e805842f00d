package metrics

import (
	"bufio"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// TableFile lists every Karpenter metric with its type and label names; see
// its header.
const tableFile = "testdata/karpenter-metrics.txt"

// tableMetric is one line of the table.
type tableMetric struct {
	Name, Type string
	Labels     []string
	Source     string
}

// readTable parses the metric table.
func readTable(t *testing.T) []tableMetric {
	t.Helper()
	f, err := os.Open(tableFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []tableMetric
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Fields(text)
		if len(fields) != 4 {
			t.Fatalf("%s:%d: want 4 fields (name, type, labels, source), got %d", tableFile, line, len(fields))
		}
		m := tableMetric{Name: fields[0], Type: fields[1], Source: fields[3]}
		if fields[2] != "-" {
			m.Labels = strings.Split(fields[2], ",")
		}
		slices.Sort(m.Labels)
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// tablePrefixes are the prefixes of the table's families: a family of one
// of them that is gathered must be in the table.
var tablePrefixes = []string{"karpenter_", "operator_", "aws_sdk_go_", "client_go_", "controller_runtime_", "workqueue_", "leader_election_"}

func servedPrefix(name string) bool {
	for _, p := range tablePrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// checkAgainstTable fails t for every metric of the table from source that g
// does not gather, or gathers with another type or other label names, and
// for every metric of the table's prefixes g gathers that the table lacks.
func checkAgainstTable(t *testing.T, g prometheus.Gatherer, source string) {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, f := range families {
		byName[f.GetName()] = f
	}
	table := readTable(t)
	known := map[string]bool{}
	for _, want := range table {
		known[want.Name] = true
		if want.Source != source {
			continue
		}
		f, ok := byName[want.Name]
		if !ok {
			t.Errorf("%s (%s) not gathered", want.Name, want.Type)
			continue
		}
		if got := strings.ToLower(f.GetType().String()); got != want.Type {
			t.Errorf("%s: type %s, want %s", want.Name, got, want.Type)
		}
		for _, m := range f.GetMetric() {
			var got []string
			for _, l := range m.GetLabel() {
				got = append(got, l.GetName())
			}
			slices.Sort(got)
			if !slices.Equal(got, want.Labels) {
				t.Errorf("%s: labels %v, want %v", want.Name, got, want.Labels)
				break
			}
		}
	}
	for name := range byName {
		if servedPrefix(name) && !known[name] {
			t.Errorf("%s is gathered but not in %s", name, tableFile)
		}
	}
}
