package environment

// Metric returns the sum of the values of the series of the counter or
// gauge name in the Env's registry whose labels include those given (all
// of its series for none), 0 when there are none.
func (e *Env) Metric(name string, labels map[string]string) float64 {
	e.T.Helper()
	families, err := e.Registry.Gather()
	if err != nil {
		e.T.Fatal(err)
	}
	total := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			has := map[string]string{}
			for _, l := range m.GetLabel() {
				has[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if got, ok := has[k]; !ok || got != v {
					continue series
				}
			}
			total += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return total
}
