package metrics

import "testing"

// TestEveryKarpenterMetric records one of everything and checks that the
// registry gathers every metric of the table with its type and exactly its
// label names.
func TestEveryKarpenterMetric(t *testing.T) {
	m, reg := newMetrics(t)
	exercise(t, m, func() {
		if _, err := reg.Gather(); err != nil {
			t.Fatal(err)
		}
	})
	checkAgainstTable(t, reg, "metrics")
}
