package metrics

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	clocktesting "k8s.io/utils/clock/testing"
)

// seriesValue returns the value of the series of family name whose labels
// include want, and whether there is one.
func seriesValue(t *testing.T, families []*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	t.Helper()
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if got[k] != v {
					continue series
				}
			}
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue(), true
			}
			return m.GetCounter().GetValue(), true
		}
	}
	return 0, false
}

// TestNodeGaugesCountPods checks the pods resource of the per-node gauges
// (each pod counts 1, DaemonSet pods also in the daemon gauges) and the
// managed label of the node and pod gauges, as Karpenter publishes them.
func TestNodeGaugesCountPods(t *testing.T) {
	m, reg := newMetrics(t)
	clk := clocktesting.NewFakeClock(t0)
	m.WatchState(StateOptions{Clock: clk})
	clk.Step(time.Hour)
	m.WatchState(StateOptions{State: exerciseState(clk), Clock: clk})
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n1 := map[string]string{LabelNodeName: "n1", LabelManaged: "true"}
	with := func(extra map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range n1 {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{Namespace + "_nodes_total_pod_requests", with(map[string]string{LabelResourceType: "pods"}), 2},
		{Namespace + "_nodes_total_pod_limits", with(map[string]string{LabelResourceType: "pods"}), 2},
		{Namespace + "_nodes_total_daemon_requests", with(map[string]string{LabelResourceType: "pods"}), 1},
		{Namespace + "_nodes_total_daemon_limits", with(map[string]string{LabelResourceType: "pods"}), 1},
		{Namespace + "_nodes_total_pod_requests", with(map[string]string{LabelResourceType: "cpu"}), 0.2},
		{Namespace + "_nodes_total_daemon_limits", with(map[string]string{LabelResourceType: "cpu"}), 0.2},
		{Namespace + "_nodes_current_lifetime_seconds", n1, time.Hour.Seconds()},
		{namePodsState, map[string]string{"name": "app-1", LabelManaged: "true", LabelNodePool: "default"}, 1},
		{namePodsState, map[string]string{"name": "pending-1", LabelManaged: "false", LabelNodePool: ""}, 1},
	} {
		got, ok := seriesValue(t, families, tc.name, tc.labels)
		if !ok {
			t.Errorf("%s: no series with %v", tc.name, tc.labels)
			continue
		}
		if got != tc.want {
			t.Errorf("%s %v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
}
