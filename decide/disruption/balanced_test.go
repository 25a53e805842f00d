package disruption

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
)

func TestScoreMove(t *testing.T) {
	// The worked examples of Karpenter's balanced-consolidation design, in
	// USD per day (the unit cancels out).
	for _, tc := range []struct {
		name                                   string
		savings, disruption, cost, poolDisrupt float64
		want                                   float64
		approved                               bool
	}{
		{"oversized node replaced", 7.26, 3, 58.08, 80, 3.33, true},
		{"spare capacity delete", 4.84, 4, 58.08, 80, 1.67, true},
		{"marginal move", 2.42, 8, 58.08, 80, 0.42, false},
		{"uniform pool replace at half price sits on the threshold", 2.42, 8, 48.40, 80, 0.50, true},
		{"scale invariant", 7.26, 3, 580.80, 800, 3.33, true},
		{"expensive pods", 4.84, 31, 58.08, 107, 0.29, false},
		{"single-node pool delete", 5, 3, 5, 3, 1, true},
		{"no savings", 0, 3, 58.08, 80, 0, false},
		{"a loss", -1, 3, 58.08, 80, 0, false},
		{"a pool that costs nothing", 1, 3, 0, 80, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := ScoreMove(tc.savings, tc.disruption, tc.cost, tc.poolDisrupt)
			if math.Abs(s.Value-tc.want) > 0.005 || s.Approved != tc.approved {
				t.Fatalf("score = %.4f approved %v, want %.2f approved %v", s.Value, s.Approved, tc.want, tc.approved)
			}
			if s.Threshold != 0.5 {
				t.Errorf("threshold = %v, want 1/k with k = 2", s.Threshold)
			}
		})
	}
}

func balanced(np *karpv1.NodePool) {
	np.Spec.Disruption.ConsolidationPolicy = karpv1.ConsolidationPolicyBalanced
}

// marginalReplace is a NodePool of three m6i.xlarge: two full with one pod
// each, and one whose four small pods would fit on an m6i.large. Replacing
// it saves $0.096/h of the pool's $0.576/h (16.7%) and disrupts 5 of the
// pool's 9 (55.6%): a score of 0.30.
func marginalReplace(t *testing.T, opts ...poolOpt) (*fixture, string) {
	f := newFixture(t)
	f.pool("p", family, []string{wellknown.CapacityTypeOnDemand}, opts...)
	for i := range 2 {
		n := f.node(nodeSpec{pool: "p", itype: xlarge})
		f.pod(fmt.Sprintf("full-%d", i), n, "3500m", "1Gi")
	}
	a := f.node(nodeSpec{pool: "p", itype: xlarge})
	for i := range 4 {
		f.pod(fmt.Sprintf("small-%d", i), a, "400m", "256Mi")
	}
	return f, a
}

func TestBalanced(t *testing.T) {
	t.Run("WhenEmptyOrUnderutilized takes a marginal replace", func(t *testing.T) {
		f, a := marginalReplace(t)
		d := Decide(f.input())
		c := d.Command
		if c == nil || c.Method != MethodReplace || !slices.Equal(candidateNames(c), []string{a}) {
			t.Fatalf("command = %v; blocked %v", c, d.Blocked)
		}
		if c.Score != nil {
			t.Errorf("score = %v, want none outside Balanced", c.Score)
		}
	})
	t.Run("Balanced rejects it, with the numbers", func(t *testing.T) {
		f, a := marginalReplace(t, balanced)
		d := Decide(f.input())
		if d.Command != nil {
			t.Fatalf("command = %s", d.Command)
		}
		var got *Blocked
		for i, b := range d.Blocked {
			if b.Node == a && b.Code == CodeBalancedScore {
				got = &d.Blocked[i]
			}
		}
		if got == nil || got.Score == nil {
			t.Fatalf("no %s for %s: %v", CodeBalancedScore, a, d.Blocked)
		}
		s := got.Score
		if s.Approved || math.Abs(s.Value-0.30) > 0.005 || s.NodePool != "p" || s.Policy != karpv1.ConsolidationPolicyBalanced {
			t.Errorf("score = %+v", *s)
		}
		if math.Abs(s.PoolDisruption-9) > 1e-9 || math.Abs(s.Disruption-5) > 1e-9 {
			t.Errorf("disruption %v of %v, want 5 of 9", s.Disruption, s.PoolDisruption)
		}
		for _, want := range []string{"score 0.30 < threshold 0.50", "disruption 5.0 of 9.0"} {
			if !strings.Contains(got.Message, want) {
				t.Errorf("message %q lacks %q", got.Message, want)
			}
		}
		if got.Method != MethodReplace {
			t.Errorf("rejected move's method = %q, want %q", got.Method, MethodReplace)
		}
		if !slices.ContainsFunc(d.Verdicts, func(b Blocked) bool { return b.Code == CodeBalancedScore && b.Score != nil }) {
			t.Errorf("verdicts %v lack the scored rejection", d.Verdicts)
		}
	})
	t.Run("Balanced takes a replace that saves much for little disruption", func(t *testing.T) {
		f := newFixture(t)
		f.pool("p", family, []string{wellknown.CapacityTypeOnDemand}, balanced)
		for i := range 2 {
			n := f.node(nodeSpec{pool: "p", itype: xlarge})
			f.pod(fmt.Sprintf("full-%d", i), n, "3500m", "1Gi")
		}
		big := f.node(nodeSpec{pool: "p", itype: x2})
		f.pod("lone", big, "1", "1Gi")
		d := Decide(f.input())
		c := d.Command
		if c == nil || c.Method != MethodReplace || !slices.Equal(candidateNames(c), []string{big}) {
			t.Fatalf("command = %v; blocked %v", c, d.Blocked)
		}
		// The savings count the replacement at its worst-case price (an
		// m6i.xlarge among its types): $0.192/h of $0.768/h (25%) for 2 of
		// 6 (33.3%).
		if c.Score == nil || !c.Score.Approved || math.Abs(c.Score.Value-0.75) > 0.005 {
			t.Fatalf("score = %+v", c.Score)
		}
		if len(c.Scores) != 1 || c.Scores[0] != *c.Score {
			t.Errorf("scores = %+v, want the one NodePool's, %+v", c.Scores, *c.Score)
		}
		if !strings.Contains(c.String(), "score 0.75 >= threshold 0.50") {
			t.Errorf("log line %q lacks the score", c.String())
		}
	})
	t.Run("empty nodes are emptiness's and pass unscored", func(t *testing.T) {
		f := newFixture(t)
		f.pool("p", family, []string{wellknown.CapacityTypeOnDemand}, balanced)
		n := f.node(nodeSpec{pool: "p", itype: xlarge})
		d := Decide(f.input())
		if d.Command == nil || d.Command.Reason != ReasonEmpty || !slices.Equal(candidateNames(d.Command), []string{n}) {
			t.Fatalf("command = %v; blocked %v", d.Command, d.Blocked)
		}
	})
}

// TestBalancedScoreEveryPool: a move over several NodePools is scored for
// each Balanced one, on its share of the savings, and every score is kept
// when all approve.
func TestBalancedScoreEveryPool(t *testing.T) {
	pool := func(name string, policy karpv1.ConsolidationPolicy) *karpv1.NodePool {
		np := &karpv1.NodePool{}
		np.Name = name
		np.Spec.Disruption.ConsolidationPolicy = policy
		return np
	}
	a, b := pool("a", karpv1.ConsolidationPolicyBalanced), pool("b", karpv1.ConsolidationPolicyBalanced)
	other := pool("c", karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized)
	totals := map[string]poolTotals{"a": {cost: 2, disruption: 4}, "b": {cost: 1, disruption: 2}}
	for _, tc := range []struct {
		name       string
		cands      []*Candidate
		savings    float64
		wantOK     bool
		wantPools  []string
		wantReject string
	}{
		{"two Balanced pools approve", []*Candidate{{NodePool: a, Price: 1}, {NodePool: b, Price: 1}}, 1, true, []string{"a", "b"}, ""},
		{"a pool of another policy is not scored", []*Candidate{{NodePool: a, Price: 1}, {NodePool: other, Price: 1}}, 1, true, []string{"a"}, ""},
		{"one rejection rejects the move", []*Candidate{{NodePool: a, Price: 1}, {NodePool: b, Price: 1}}, 0.2, true, nil, "a"},
		{"no Balanced pool", []*Candidate{{NodePool: other, Price: 1}}, 1, false, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := &Command{Candidates: tc.cands, SavingsPerHour: tc.savings}
			s, all, ok := balancedScore(cmd, totals)
			if ok != tc.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tc.wantOK)
			}
			var pools []string
			for _, sc := range all {
				if !sc.Approved {
					t.Errorf("a rejecting score among all: %+v", sc)
				}
				pools = append(pools, sc.NodePool)
			}
			if !slices.Equal(pools, tc.wantPools) {
				t.Errorf("scored pools %v, want %v", pools, tc.wantPools)
			}
			if tc.wantReject != "" && (s.Approved || s.NodePool != tc.wantReject) {
				t.Errorf("score %+v, want %s's rejection", s, tc.wantReject)
			}
		})
	}
}
