package metrics

import "github.com/prometheus/client_golang/prometheus"

// NamePricingFallback is stevedore's own: Karpenter only logs a failed
// pricing refresh, so nothing in its metrics says that on-demand prices
// are not the pricing API's.
const NamePricingFallback = "stevedore_pricing_fallback"

// registerPricing creates the pricing gauge and registers it with reg.
func (m *Metrics) registerPricing(reg prometheus.Registerer) error {
	m.pricingFallback = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: NamePricingFallback,
		Help: "1 while the cloud provider's pricing API (the AWS Price List API) fails and on-demand prices are the last ones it gave or the built-in ones; 0 while it answers, or when it is not used.",
	})
	return reg.Register(m.pricingFallback)
}

// PricingFallback sets the pricing gauge: on is true while on-demand prices
// come from the fallback because the pricing API fails.
func (m *Metrics) PricingFallback(on bool) {
	if m == nil {
		return
	}
	v := 0.0
	if on {
		v = 1
	}
	m.pricingFallback.Set(v)
}
