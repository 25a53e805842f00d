package metrics

import "github.com/prometheus/client_golang/prometheus"

// Names of the Balanced consolidation metrics, fully qualified.
const (
	NameConsolidationScore = Namespace + "_consolidation_score"
	NameConsolidationMoves = Namespace + "_consolidation_moves_total"
)

// LabelPolicy is the consolidation policy of the NodePool a move was scored
// for.
const LabelPolicy = "policy"

// balancedMetrics holds the collectors of scored consolidation moves.
type balancedMetrics struct {
	score *prometheus.HistogramVec
	moves *prometheus.CounterVec
}

// registerBalanced creates the Balanced consolidation collectors and
// registers them with reg.
func (m *Metrics) registerBalanced(reg prometheus.Registerer) error {
	labels := []string{LabelDecision, LabelNodePool, LabelPolicy}
	m.balanced = balancedMetrics{
		score: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    NameConsolidationScore,
			Help:    "Score of balanced consolidation moves. Labeled by decision (approved or rejected), NodePool, and policy.",
			Buckets: []float64{0.1, 0.25, 0.33, 0.5, 1, 2, 5, 10},
		}, labels),
		moves: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameConsolidationMoves,
			Help: "Number of balanced consolidation moves. Labeled by decision (approved or rejected), NodePool, and policy.",
		}, labels),
	}
	for _, c := range []prometheus.Collector{m.balanced.score, m.balanced.moves} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// ConsolidationMove records one scored consolidation move of a NodePool
// whose policy scores moves: its score and whether it was approved.
func (m *Metrics) ConsolidationMove(nodePool, policy string, score float64, approved bool) {
	if m == nil {
		return
	}
	decision := "rejected"
	if approved {
		decision = "approved"
	}
	m.balanced.score.WithLabelValues(decision, nodePool, policy).Observe(score)
	m.balanced.moves.WithLabelValues(decision, nodePool, policy).Inc()
}
