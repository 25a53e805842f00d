package controllers

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stevedore-autoscaler/stevedore/cloud"
	"github.com/stevedore-autoscaler/stevedore/controllers/metrics"
)

// pricingCloud is a cloud provider that only reports on its pricing API.
type pricingCloud struct {
	cloud.CloudProvider
	report func(error)
}

func (p *pricingCloud) ReportPricingTo(f func(error)) { p.report = f }

// TestWatchPricing: each change the provider reports sets the gauge and
// writes one log line.
func TestWatchPricing(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	logger := funcr.New(func(prefix, args string) { lines = append(lines, prefix+" "+args) }, funcr.Options{})
	cp := &pricingCloud{}
	watchPricing(cp, m, logger.WithName(NamePricing))
	if cp.report == nil {
		t.Fatal("watchPricing did not ask the provider for pricing reports")
	}
	gauge := func() float64 {
		t.Helper()
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			if f.GetName() == metrics.NamePricingFallback {
				return f.GetMetric()[0].GetGauge().GetValue()
			}
		}
		t.Fatalf("%s is not registered", metrics.NamePricingFallback)
		return 0
	}
	for i, step := range []struct {
		err       error
		wantGauge float64
		wantLog   string
	}{
		{err: errors.New("GetProducts: 404 Not yet implemented"), wantGauge: 1, wantLog: "the pricing API is failing"},
		{err: nil, wantGauge: 0, wantLog: "the pricing API answers again"},
	} {
		cp.report(step.err)
		if got := gauge(); got != step.wantGauge {
			t.Errorf("step %d: %s = %v, want %v", i, metrics.NamePricingFallback, got, step.wantGauge)
		}
		if len(lines) != i+1 {
			t.Fatalf("step %d: %d log lines, want %d: %q", i, len(lines), i+1, lines)
		}
		if !strings.Contains(lines[i], step.wantLog) || !strings.HasPrefix(lines[i], NamePricing) {
			t.Errorf("step %d: log line %q, want %q from logger %q", i, lines[i], step.wantLog, NamePricing)
		}
	}
	if n, err := promtestutil.GatherAndCount(reg, metrics.NamePricingFallback); err != nil || n != 1 {
		t.Errorf("%s: %d series, %v", metrics.NamePricingFallback, n, err)
	}
}
