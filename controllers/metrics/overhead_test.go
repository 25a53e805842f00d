package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestDaemonSetOverheadMismatch(t *testing.T) {
	m, reg := newMetrics(t)
	m.DaemonSetOverheadMismatch("kube-system", "agent")
	m.DaemonSetOverheadMismatch("kube-system", "agent")
	m.DaemonSetOverheadMismatch("monitoring", "exporter")
	want := `
# HELP stevedore_daemonset_overhead_mismatches_total Number of DaemonSet pods found on a new node requesting more than the node was sized with for their DaemonSet. Labeled by the DaemonSet's namespace and name.
# TYPE stevedore_daemonset_overhead_mismatches_total counter
stevedore_daemonset_overhead_mismatches_total{daemonset="agent",namespace="kube-system"} 2
stevedore_daemonset_overhead_mismatches_total{daemonset="exporter",namespace="monitoring"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), NameDaemonSetOverheadMismatches); err != nil {
		t.Error(err)
	}
	problems, err := testutil.GatherAndLint(reg, NameDaemonSetOverheadMismatches)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
	var nilMetrics *Metrics
	nilMetrics.DaemonSetOverheadMismatch("kube-system", "agent")
}
