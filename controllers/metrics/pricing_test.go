package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestPricingFallback(t *testing.T) {
	m, reg := newMetrics(t)
	for i, step := range []struct {
		on   bool
		want float64
	}{{true, 1}, {true, 1}, {false, 0}, {true, 1}} {
		m.PricingFallback(step.on)
		if got := testutil.ToFloat64(m.pricingFallback); got != step.want {
			t.Errorf("step %d: %s = %v, want %v", i, NamePricingFallback, got, step.want)
		}
	}
	problems, err := testutil.GatherAndLint(reg, NamePricingFallback)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
	var nilMetrics *Metrics
	nilMetrics.PricingFallback(true)
}
