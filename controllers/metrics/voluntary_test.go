package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestVoluntaryDisruptionAndInterruption(t *testing.T) {
	m, reg := newMetrics(t)
	m.DisruptionDecision("replace", "drifted", "")
	m.DisruptionDecision("delete", "underutilized", "multi")
	m.DisruptionDecision("delete", "underutilized", "multi")
	m.DisruptionFailedValidation("empty")
	m.DisruptionQueueFailure("replace", "drifted", "")
	m.SetInterruptionHandling(false)

	want := `
# HELP karpenter_voluntary_disruption_decisions_total Number of disruption decisions carried out. Labeled by the decision (delete or replace), the disruption reason and the consolidation type.
# TYPE karpenter_voluntary_disruption_decisions_total counter
karpenter_voluntary_disruption_decisions_total{consolidation_type="",decision="replace",reason="drifted"} 1
karpenter_voluntary_disruption_decisions_total{consolidation_type="multi",decision="delete",reason="underutilized"} 2
# HELP karpenter_voluntary_disruption_failed_validations_total Number of candidates that were selected for disruption but failed validation: their decision no longer held after the validation delay. Labeled by consolidation type.
# TYPE karpenter_voluntary_disruption_failed_validations_total counter
karpenter_voluntary_disruption_failed_validations_total{consolidation_type="empty"} 1
# HELP karpenter_voluntary_disruption_queue_failures_total Number of disruption commands abandoned and rolled back, for example because a replacement failed to launch or initialize in time. Labeled by the decision, the disruption reason and the consolidation type.
# TYPE karpenter_voluntary_disruption_queue_failures_total counter
karpenter_voluntary_disruption_queue_failures_total{consolidation_type="",decision="replace",reason="drifted"} 1
# HELP stevedore_interruption_handling_enabled 1 when an interruption queue is configured and spot interruptions, scheduled maintenance and instance state changes are acted on; 0 when interruption handling is off.
# TYPE stevedore_interruption_handling_enabled gauge
stevedore_interruption_handling_enabled 0
`
	names := []string{NameDisruptionDecisions, NameDisruptionFailedValidations, NameDisruptionQueueFailures, NameInterruptionHandlingEnabled}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
	m.SetInterruptionHandling(true)
	if got := testutil.ToFloat64(m.voluntary.interruption); got != 1 {
		t.Errorf("%s = %v after enabling, want 1", NameInterruptionHandlingEnabled, got)
	}
	problems, err := testutil.GatherAndLint(reg, names...)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}

	var nilMetrics *Metrics
	nilMetrics.DisruptionDecision("delete", "empty", "empty")
	nilMetrics.DisruptionFailedValidation("empty")
	nilMetrics.DisruptionQueueFailure("delete", "empty", "empty")
	nilMetrics.SetInterruptionHandling(true)
}
