package metrics

import "github.com/prometheus/client_golang/prometheus"

// Names of the voluntary-disruption metrics and of the interruption gauge,
// fully qualified.
const (
	NameDisruptionDecisions         = Namespace + "_voluntary_disruption_decisions_total"
	NameDisruptionFailedValidations = Namespace + "_voluntary_disruption_failed_validations_total"
	NameDisruptionQueueFailures     = Namespace + "_voluntary_disruption_queue_failures_total"
	// NameInterruptionHandlingEnabled is stevedore's own: Karpenter has no
	// metric that says whether interruption handling is on.
	NameInterruptionHandlingEnabled = "stevedore_interruption_handling_enabled"
)

// Label names of the voluntary-disruption metrics.
const (
	LabelDecision          = "decision"
	LabelConsolidationType = "consolidation_type"
)

// voluntary holds the disruption controller's collectors.
type voluntary struct {
	decisions         *prometheus.CounterVec
	failedValidations *prometheus.CounterVec
	queueFailures     *prometheus.CounterVec
	interruption      prometheus.Gauge
}

// registerVoluntary creates the voluntary-disruption collectors and the
// interruption gauge and registers them with reg.
func (m *Metrics) registerVoluntary(reg prometheus.Registerer) error {
	m.voluntary = voluntary{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameDisruptionDecisions,
			Help: "Number of disruption decisions carried out. Labeled by the decision (delete or replace), the disruption reason and the consolidation type.",
		}, []string{LabelDecision, LabelReason, LabelConsolidationType}),
		failedValidations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameDisruptionFailedValidations,
			Help: "Number of candidates that were selected for disruption but failed validation: their decision no longer held after the validation delay. Labeled by consolidation type.",
		}, []string{LabelConsolidationType}),
		queueFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameDisruptionQueueFailures,
			Help: "Number of disruption commands abandoned and rolled back, for example because a replacement failed to launch or initialize in time. Labeled by the decision, the disruption reason and the consolidation type.",
		}, []string{LabelDecision, LabelReason, LabelConsolidationType}),
		interruption: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: NameInterruptionHandlingEnabled,
			Help: "1 when an interruption queue is configured and spot interruptions, scheduled maintenance and instance state changes are acted on; 0 when interruption handling is off.",
		}),
	}
	for _, c := range []prometheus.Collector{m.voluntary.decisions, m.voluntary.failedValidations, m.voluntary.queueFailures, m.voluntary.interruption} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// DisruptionDecision counts one disruption command that started: decision
// is "delete" or "replace", reason the lower-case disruption reason and
// consolidationType "empty", "single", "multi" or "" (drift).
func (m *Metrics) DisruptionDecision(decision, reason, consolidationType string) {
	if m == nil {
		return
	}
	m.voluntary.decisions.WithLabelValues(decision, reason, consolidationType).Inc()
}

// DisruptionFailedValidation counts one command rejected when validated,
// by its consolidation type ("" for drift).
func (m *Metrics) DisruptionFailedValidation(consolidationType string) {
	if m == nil {
		return
	}
	m.voluntary.failedValidations.WithLabelValues(consolidationType).Inc()
}

// DisruptionQueueFailure counts one command that was rolled back.
func (m *Metrics) DisruptionQueueFailure(decision, reason, consolidationType string) {
	if m == nil {
		return
	}
	m.voluntary.queueFailures.WithLabelValues(decision, reason, consolidationType).Inc()
}

// SetInterruptionHandling publishes whether interruption handling is on.
func (m *Metrics) SetInterruptionHandling(enabled bool) {
	if m == nil {
		return
	}
	v := 0.0
	if enabled {
		v = 1
	}
	m.voluntary.interruption.Set(v)
}
