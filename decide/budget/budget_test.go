package budget

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/state"
)

const pool = "default"

var (
	drifted       = karpv1.DisruptionReasonDrifted
	empty         = karpv1.DisruptionReasonEmpty
	underutilized = karpv1.DisruptionReasonUnderutilized
)

// Tuesday 3 March 2026, and the rest of that week, in UTC.
func at(day, hour, minute, second int) time.Time {
	return time.Date(2026, 3, day, hour, minute, second, 0, time.UTC)
}

var (
	tue1000 = at(3, 10, 0, 0)
	tue1800 = at(3, 18, 0, 0)
	sat1200 = at(7, 12, 0, 0)
)

func TestCalendar(t *testing.T) {
	if tue1000.Weekday() != time.Tuesday || sat1200.Weekday() != time.Saturday {
		t.Fatalf("the test's dates are off: %v, %v", tue1000.Weekday(), sat1200.Weekday())
	}
}

func ptr[T any](v T) *T { return &v }

func scheduled(nodes, schedule string, d time.Duration, reasons ...karpv1.DisruptionReason) karpv1.Budget {
	return karpv1.Budget{Nodes: nodes, Schedule: ptr(schedule), Duration: &karpv1.Duration{Duration: d}, Reasons: reasons}
}

func always(nodes string, reasons ...karpv1.DisruptionReason) karpv1.Budget {
	return karpv1.Budget{Nodes: nodes, Reasons: reasons}
}

func nodePool(budgets ...karpv1.Budget) *karpv1.NodePool {
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: pool}}
	np.Spec.Disruption.Budgets = budgets
	return np
}

// Examples operators use.
var (
	// (a) at most 20%, none during weekday business hours.
	businessHours = []karpv1.Budget{always("20%"), scheduled("0", "0 9 * * mon-fri", 8*time.Hour)}
	// (b) one drifted node at a time, consolidation unlimited.
	driftOneAtATime = []karpv1.Budget{always("1", drifted), always("100%", empty, underutilized)}
	// (c) nothing at all.
	frozen = []karpv1.Budget{always("0")}
)

// nodeOpt changes a node built by node.
type nodeOpt func(*state.StateNode)

var (
	notReady = func(n *state.StateNode) {
		n.Node.Status.Conditions[0].Status = corev1.ConditionFalse
	}
	noReadyCondition = func(n *state.StateNode) { n.Node.Status.Conditions = nil }
	marked           = func(n *state.StateNode) { n.MarkedForDeletion = true }
	deleting         = func(n *state.StateNode) { n.NodeClaim.DeletionTimestamp = &metav1.Time{Time: tue1000} }
	nodeDeleting     = func(n *state.StateNode) { n.Node.DeletionTimestamp = &metav1.Time{Time: tue1000} }
	uninitialized    = func(n *state.StateNode) { n.NodeClaim.Status.Conditions = nil }
	inFlight         = func(n *state.StateNode) { n.Node = nil; n.NodeClaim.Status.Conditions = nil }
	unmanaged        = func(n *state.StateNode) { n.NodeClaim = nil }
	terminating      = func(n *state.StateNode) {
		n.NodeClaim.Status.Conditions = append(n.NodeClaim.Status.Conditions,
			metav1.Condition{Type: karpv1.ConditionTypeInstanceTerminating, Status: metav1.ConditionTrue})
	}
	initializedByLabel = func(n *state.StateNode) {
		n.NodeClaim.Status.Conditions = nil
		n.Node.Labels[wellknown.LabelInitialized] = wellknown.LabelValueTrue
	}
)

func inPool(p string) nodeOpt {
	return func(n *state.StateNode) {
		n.Node.Labels[wellknown.LabelNodePool] = p
		if n.NodeClaim != nil {
			n.NodeClaim.Labels[wellknown.LabelNodePool] = p
		}
	}
}

var serial int

// node returns a managed, initialized, Ready node of the pool "default".
func node(opts ...nodeOpt) *state.StateNode {
	serial++
	name := fmt.Sprintf("node-%d", serial)
	n := &state.StateNode{
		Node: &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{wellknown.LabelNodePool: pool}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue},
			}},
		},
		NodeClaim: &karpv1.NodeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{wellknown.LabelNodePool: pool}},
			Status: karpv1.NodeClaimStatus{Conditions: []metav1.Condition{
				{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue},
			}},
		},
	}
	for _, o := range opts {
		o(n)
	}
	return n
}

// nodes returns count nodes with the same options.
func nodes(count int, opts ...nodeOpt) []*state.StateNode {
	out := make([]*state.StateNode, count)
	for i := range out {
		out[i] = node(opts...)
	}
	return out
}

func join(groups ...[]*state.StateNode) []*state.StateNode {
	var out []*state.StateNode
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

// want is an Allowance without its reason, the same for every reason
// unless a test says otherwise.
type want struct{ nodes, budget, allowed, disrupting, remaining int }

func (w want) check(t *testing.T, got Allowance) {
	t.Helper()
	g := want{got.Nodes, got.Budget, got.Allowed, got.Disrupting, got.Remaining}
	if g != w {
		t.Errorf("%s: got {nodes %d, budget %d, allowed %d, disrupting %d, remaining %d}, want {nodes %d, budget %d, allowed %d, disrupting %d, remaining %d}",
			got.Reason, g.nodes, g.budget, g.allowed, g.disrupting, g.remaining, w.nodes, w.budget, w.allowed, w.disrupting, w.remaining)
	}
}

func TestCompute(t *testing.T) {
	ten := nodes(10)
	tests := []struct {
		name    string
		budgets []karpv1.Budget
		nodes   []*state.StateNode
		now     time.Time
		all     *want                             // the same for every reason
		per     map[karpv1.DisruptionReason]*want // per reason
		invalid []int
	}{
		{
			name: "default is 10%", nodes: ten, now: tue1000,
			all: &want{nodes: 10, budget: 0, allowed: 1, remaining: 1},
		},
		{
			name: "default with no nodes allows none", now: tue1000,
			all: &want{nodes: 0, budget: 0, allowed: 0, remaining: 0},
		},
		{
			name: "percentages round up: 5% of 10 is 1", budgets: []karpv1.Budget{always("5%")}, nodes: ten, now: tue1000,
			all: &want{nodes: 10, budget: 0, allowed: 1, remaining: 1},
		},
		{
			name: "percentages round up: 10% of 11 is 2", budgets: []karpv1.Budget{always("10%")}, nodes: nodes(11), now: tue1000,
			all: &want{nodes: 11, budget: 0, allowed: 2, remaining: 2},
		},
		{
			name: "10% of 0 is 0", budgets: []karpv1.Budget{always("10%")}, now: tue1000,
			all: &want{nodes: 0, budget: 0, allowed: 0, remaining: 0},
		},
		{
			name: "a count is taken as it is", budgets: []karpv1.Budget{always("5")}, nodes: ten, now: tue1000,
			all: &want{nodes: 10, budget: 0, allowed: 5, remaining: 5},
		},
		{
			name: "the smallest applying budget wins", budgets: []karpv1.Budget{always("50%"), always("3"), always("40%")}, nodes: ten, now: tue1000,
			all: &want{nodes: 10, budget: 1, allowed: 3, remaining: 3},
		},
		{
			name: "business hours: none on Tuesday at 10:00", budgets: businessHours, nodes: ten, now: tue1000,
			all: &want{nodes: 10, budget: 1, allowed: 0, remaining: 0},
		},
		{
			name: "business hours: 20% on Tuesday at 18:00", budgets: businessHours, nodes: ten, now: tue1800,
			all: &want{nodes: 10, budget: 0, allowed: 2, remaining: 2},
		},
		{
			name: "business hours: 20% on Saturday", budgets: businessHours, nodes: ten, now: sat1200,
			all: &want{nodes: 10, budget: 0, allowed: 2, remaining: 2},
		},
		{
			name: "business hours: the window opens at 09:00:00", budgets: businessHours, nodes: ten, now: at(3, 9, 0, 0),
			all: &want{nodes: 10, budget: 1, allowed: 0, remaining: 0},
		},
		{
			name: "business hours: not yet at 08:59:59", budgets: businessHours, nodes: ten, now: at(3, 8, 59, 59),
			all: &want{nodes: 10, budget: 0, allowed: 2, remaining: 2},
		},
		{
			name: "business hours: still closed at 16:59:59", budgets: businessHours, nodes: ten, now: at(3, 16, 59, 59),
			all: &want{nodes: 10, budget: 1, allowed: 0, remaining: 0},
		},
		{
			name: "business hours: the window ends at 17:00:00", budgets: businessHours, nodes: ten, now: at(3, 17, 0, 0),
			all: &want{nodes: 10, budget: 0, allowed: 2, remaining: 2},
		},
		{
			name: "business hours: time zones of now do not matter", budgets: businessHours, nodes: ten,
			now: tue1000.In(time.FixedZone("UTC-5", -5*3600)),
			all: &want{nodes: 10, budget: 1, allowed: 0, remaining: 0},
		},
		{
			name: "drift one at a time, consolidation unlimited", budgets: driftOneAtATime, nodes: ten, now: tue1000,
			per: map[karpv1.DisruptionReason]*want{
				drifted:       {nodes: 10, budget: 0, allowed: 1, remaining: 1},
				empty:         {nodes: 10, budget: 1, allowed: 10, remaining: 10},
				underutilized: {nodes: 10, budget: 1, allowed: 10, remaining: 10},
			},
		},
		{
			name: "frozen", budgets: frozen, nodes: ten, now: tue1000,
			all: &want{nodes: 10, budget: 0, allowed: 0, remaining: 0},
		},
		{
			name: "a reason no budget names is unbounded", budgets: []karpv1.Budget{always("2", drifted)}, nodes: ten, now: tue1000,
			per: map[karpv1.DisruptionReason]*want{
				drifted:       {nodes: 10, budget: 0, allowed: 2, remaining: 2},
				empty:         {nodes: 10, budget: NoBudget, allowed: Unbounded, remaining: Unbounded},
				underutilized: {nodes: 10, budget: NoBudget, allowed: Unbounded, remaining: Unbounded},
			},
		},
		{
			name: "no budget applying is unbounded", budgets: []karpv1.Budget{scheduled("0", "0 9 * * mon-fri", 8*time.Hour)}, nodes: ten, now: sat1200,
			all: &want{nodes: 10, budget: NoBudget, allowed: Unbounded, remaining: Unbounded},
		},
		{
			name: "unbounded less disrupting", budgets: []karpv1.Budget{scheduled("0", "0 9 * * mon-fri", 8*time.Hour)},
			nodes: join(nodes(8), nodes(2, marked)), now: sat1200,
			all: &want{nodes: 10, budget: NoBudget, allowed: Unbounded, disrupting: 2, remaining: Unbounded - 2},
		},
		{
			name: "not ready, marked and deleting nodes use the allowance", budgets: []karpv1.Budget{always("30%")},
			nodes: join(nodes(6), nodes(1, notReady), nodes(1, noReadyCondition), nodes(1, marked), nodes(1, deleting)), now: tue1000,
			all: &want{nodes: 10, budget: 0, allowed: 3, disrupting: 4, remaining: 0},
		},
		{
			name: "a node being deleted uses the allowance", budgets: []karpv1.Budget{always("3")},
			nodes: join(nodes(9), nodes(1, nodeDeleting)), now: tue1000,
			all: &want{nodes: 10, budget: 0, allowed: 3, disrupting: 1, remaining: 2},
		},
		{
			name: "nodes not initialized are not counted", budgets: []karpv1.Budget{always("10%")},
			nodes: join(ten, nodes(5, uninitialized), nodes(5, uninitialized, notReady), nodes(3, inFlight)), now: tue1000,
			all: &want{nodes: 10, budget: 0, allowed: 1, remaining: 1},
		},
		{
			name: "the initialized label counts", budgets: []karpv1.Budget{always("100%")},
			nodes: nodes(4, initializedByLabel), now: tue1000,
			all: &want{nodes: 4, budget: 0, allowed: 4, remaining: 4},
		},
		{
			name: "terminating instances are not counted", budgets: []karpv1.Budget{always("10%")},
			nodes: join(ten, nodes(5, terminating, deleting)), now: tue1000,
			all: &want{nodes: 10, budget: 0, allowed: 1, remaining: 1},
		},
		{
			name: "other pools and unmanaged nodes are not counted", budgets: []karpv1.Budget{always("100%")},
			nodes: join(nodes(3), nodes(4, inPool("other")), nodes(2, unmanaged), nodes(2, inPool("other"), marked)), now: tue1000,
			all: &want{nodes: 3, budget: 0, allowed: 3, remaining: 3},
		},
		{
			name: "@daily applies for its duration after midnight", budgets: []karpv1.Budget{always("5"), scheduled("1", "@daily", time.Hour)},
			nodes: ten, now: at(4, 0, 30, 0),
			all: &want{nodes: 10, budget: 1, allowed: 1, remaining: 1},
		},
		{
			name: "@daily ends after its duration", budgets: []karpv1.Budget{always("5"), scheduled("1", "@daily", time.Hour)},
			nodes: ten, now: at(4, 1, 0, 0),
			all: &want{nodes: 10, budget: 0, allowed: 5, remaining: 5},
		},
		{
			name: "overlapping windows merge", budgets: []karpv1.Budget{scheduled("1", "0 * * * *", 90*time.Minute)},
			nodes: ten, now: at(4, 13, 59, 59),
			all: &want{nodes: 10, budget: 0, allowed: 1, remaining: 1},
		},
		{
			name: "a schedule that never fires never applies", budgets: []karpv1.Budget{scheduled("0", "0 0 30 2 *", 24*time.Hour)},
			nodes: ten, now: tue1000,
			all: &want{nodes: 10, budget: NoBudget, allowed: Unbounded, remaining: Unbounded},
		},
		{
			name: "a zero duration never applies", budgets: []karpv1.Budget{scheduled("0", "0 10 * * *", 0)},
			nodes: ten, now: tue1000,
			all: &want{nodes: 10, budget: NoBudget, allowed: Unbounded, remaining: Unbounded},
		},
		{
			name: "a bad cron fails closed for every reason", budgets: []karpv1.Budget{always("50%"), scheduled("5", "0 25 * * *", time.Hour, drifted)},
			nodes: ten, now: tue1000, invalid: []int{1},
			all: &want{nodes: 10, budget: 1, allowed: 0, remaining: 0},
		},
		{
			name: "a time zone fails closed", budgets: []karpv1.Budget{scheduled("5", "TZ=Europe/Paris 0 9 * * *", time.Hour)},
			nodes: ten, now: tue1000, invalid: []int{0},
			all: &want{nodes: 10, budget: 0, allowed: 0, remaining: 0},
		},
		{
			name: "a duration without a schedule fails closed", budgets: []karpv1.Budget{{Nodes: "5", Duration: &karpv1.Duration{Duration: time.Hour}}},
			nodes: ten, now: tue1000, invalid: []int{0},
			all: &want{nodes: 10, budget: 0, allowed: 0, remaining: 0},
		},
		{
			name: "bad nodes fail closed", budgets: []karpv1.Budget{always("3"), always("many"), always("x%")},
			nodes: ten, now: tue1000, invalid: []int{1, 2},
			all: &want{nodes: 10, budget: 1, allowed: 0, remaining: 0},
		},
		{
			name: "bad nodes of a budget that does not apply are not read", budgets: []karpv1.Budget{always("3"), scheduled("many", "0 9 * * mon-fri", time.Hour)},
			nodes: ten, now: sat1200,
			all: &want{nodes: 10, budget: 0, allowed: 3, remaining: 3},
		},
		{
			// Capped at Unbounded, such a budget limits nothing.
			name: "huge counts do not wrap", budgets: []karpv1.Budget{always("99999999999")},
			nodes: ten, now: tue1000,
			all: &want{nodes: 10, budget: NoBudget, allowed: Unbounded, remaining: Unbounded},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Compute(nodePool(tt.budgets...), tt.nodes, tt.now)
			if got.NodePool != pool || !got.Time.Equal(tt.now) {
				t.Errorf("NodePool, Time = %s, %v", got.NodePool, got.Time)
			}
			if len(got.ByReason) != len(Reasons) {
				t.Fatalf("%d allowances, want %d", len(got.ByReason), len(Reasons))
			}
			for i, r := range Reasons {
				if got.ByReason[i].Reason != r {
					t.Errorf("ByReason[%d] is %s, want %s", i, got.ByReason[i].Reason, r)
				}
				w := tt.all
				if w == nil {
					w = tt.per[r]
				}
				w.check(t, got.For(r))
				if got.Remaining(r) != w.remaining {
					t.Errorf("Remaining(%s) = %d, want %d", r, got.Remaining(r), w.remaining)
				}
			}
			var invalid []int
			for _, e := range got.Invalid {
				invalid = append(invalid, e.Index)
			}
			if fmt.Sprint(invalid) != fmt.Sprint(tt.invalid) {
				t.Errorf("invalid budgets %v, want %v (%v)", invalid, tt.invalid, got.Invalid)
			}
		})
	}
}

func TestBlocked(t *testing.T) {
	tests := []struct {
		name    string
		budgets []karpv1.Budget
		nodes   []*state.StateNode
		now     time.Time
		want    []karpv1.DisruptionReason
	}{
		{name: "business hours", budgets: businessHours, nodes: nodes(3), now: tue1000, want: Reasons},
		{name: "after hours", budgets: businessHours, nodes: nodes(3), now: tue1800},
		{name: "no nodes is not blocked", budgets: frozen, now: tue1000},
		{name: "used up is not blocked", budgets: []karpv1.Budget{always("1")}, nodes: join(nodes(2), nodes(1, marked)), now: tue1000},
		{name: "drift frozen", budgets: []karpv1.Budget{always("0", drifted)}, nodes: nodes(3), now: tue1000, want: []karpv1.DisruptionReason{drifted}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := Compute(nodePool(tt.budgets...), tt.nodes, tt.now)
			var got []karpv1.DisruptionReason
			for _, al := range a.ByReason {
				if al.Blocked() {
					got = append(got, al.Reason)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("blocked %v, want %v", got, tt.want)
			}
		})
	}
}

func TestForUnknownReason(t *testing.T) {
	a := Compute(nodePool(frozen...), nodes(2), tue1000)
	if got := a.For("Expired"); got.Remaining != Unbounded || got.Budget != NoBudget {
		t.Errorf("For(Expired) = %+v, want unbounded", got)
	}
}

func TestInvalidError(t *testing.T) {
	a := Compute(nodePool(scheduled("1", "0 25 * * *", time.Hour)), nil, tue1000)
	if len(a.Invalid) != 1 {
		t.Fatalf("Invalid = %v", a.Invalid)
	}
	msg := a.Invalid[0].Error()
	if !strings.HasPrefix(msg, "spec.disruption.budgets[0].schedule: ") || !strings.Contains(msg, `"0 25 * * *"`) {
		t.Errorf("error %q should name the field and the schedule", msg)
	}
	var be *BudgetError
	if !errors.As(error(a.Invalid[0]), &be) || errors.Unwrap(be) == nil {
		t.Errorf("error %v does not unwrap", a.Invalid[0])
	}
}

func TestBudgets(t *testing.T) {
	if got := Budgets(nodePool()); len(got) != 1 || got[0].Nodes != "10%" || got[0].Schedule != nil || got[0].Reasons != nil {
		t.Errorf("default budgets = %+v, want one of 10%%", got)
	}
	np := nodePool(frozen...)
	if got := Budgets(np); len(got) != 1 || got[0].Nodes != "0" {
		t.Errorf("budgets = %+v, want the NodePool's own", got)
	}
	// budgets: [] is the user's "no limit"; only an absent field defaults.
	none := nodePool()
	none.Spec.Disruption.Budgets = []karpv1.Budget{}
	if got := Budgets(none); len(got) != 0 {
		t.Errorf("budgets of budgets: [] = %+v, want none", got)
	}
	a := Compute(none, nil, time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC))
	for _, al := range a.ByReason {
		if al.Allowed != Unbounded || al.Budget != NoBudget {
			t.Errorf("budgets: [] allows %d %s disruptions (budget %d), want unbounded", al.Allowed, al.Reason, al.Budget)
		}
	}
}

func TestActive(t *testing.T) {
	tests := []struct {
		name    string
		budgets []karpv1.Budget
		now     time.Time
		want    []int
	}{
		{name: "default", now: tue1000, want: []int{0}},
		{name: "business hours", budgets: businessHours, now: tue1000, want: []int{0, 1}},
		{name: "after hours", budgets: businessHours, now: tue1800, want: []int{0}},
		{name: "weekend", budgets: businessHours, now: sat1200, want: []int{0}},
		{name: "bad cron is not listed", budgets: []karpv1.Budget{scheduled("1", "0 25 * * *", time.Hour), always("2")}, now: tue1000, want: []int{1}},
		{name: "none", budgets: []karpv1.Budget{scheduled("1", "@daily", time.Hour)}, now: tue1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Active(nodePool(tt.budgets...), tt.now); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("Active = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNextChange(t *testing.T) {
	tests := []struct {
		name    string
		budgets []karpv1.Budget
		now     time.Time
		want    time.Time // zero: none
	}{
		{name: "no schedule", budgets: []karpv1.Budget{always("10%")}, now: tue1000},
		{name: "default", now: tue1000},
		{name: "in business hours: they end", budgets: businessHours, now: tue1000, want: at(3, 17, 0, 0)},
		{name: "at the opening: they end", budgets: businessHours, now: at(3, 9, 0, 0), want: at(3, 17, 0, 0)},
		{name: "at the end: the next opening", budgets: businessHours, now: at(3, 17, 0, 0), want: at(4, 9, 0, 0)},
		{name: "in the evening: the next morning", budgets: businessHours, now: tue1800, want: at(4, 9, 0, 0)},
		{name: "Friday evening: Monday morning", budgets: businessHours, now: at(6, 18, 0, 0), want: at(9, 9, 0, 0)},
		{name: "Saturday: Monday morning", budgets: businessHours, now: sat1200, want: at(9, 9, 0, 0)},
		{name: "the earliest of several", budgets: []karpv1.Budget{
			scheduled("0", "0 9 * * mon-fri", 8*time.Hour), scheduled("1", "@daily", 2*time.Hour),
		}, now: at(3, 23, 0, 0), want: at(4, 0, 0, 0)},
		{name: "@daily ends", budgets: []karpv1.Budget{scheduled("1", "@daily", time.Hour)}, now: at(4, 0, 30, 0), want: at(4, 1, 0, 0)},
		{name: "overlapping windows end after the last", budgets: []karpv1.Budget{scheduled("1", "0 9-11 * * *", 90*time.Minute)},
			now: at(3, 9, 10, 0), want: at(3, 12, 30, 0)},
		{name: "touching windows merge", budgets: []karpv1.Budget{scheduled("1", "0 9,10 * * *", time.Hour)},
			now: at(3, 9, 30, 0), want: at(3, 11, 0, 0)},
		{name: "bad cron waits for nothing", budgets: []karpv1.Budget{scheduled("1", "0 25 * * *", time.Hour)}, now: tue1000},
		{name: "never fires", budgets: []karpv1.Budget{scheduled("1", "0 0 30 2 *", time.Hour)}, now: tue1000},
		{name: "zero duration", budgets: []karpv1.Budget{scheduled("1", "0 9 * * *", 0)}, now: tue1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			np := nodePool(tt.budgets...)
			got, ok := NextChange(np, tt.now)
			if ok != !tt.want.IsZero() || !got.Equal(tt.want) {
				t.Fatalf("NextChange = %v, %v; want %v", got, ok, tt.want)
			}
			if !ok {
				return
			}
			// Nothing changes before it, and something does at it.
			before := fmt.Sprint(Active(np, tt.now))
			if mid := fmt.Sprint(Active(np, got.Add(-time.Second))); mid != before {
				t.Errorf("active budgets changed before %v: %s -> %s", got, before, mid)
			}
			if after := fmt.Sprint(Active(np, got)); after == before {
				t.Errorf("active budgets %s did not change at %v", before, got)
			}
		})
	}
}

// A window that never closes (a schedule firing more often than its
// duration) ends the walk early, at a time up to which it surely applies.
func TestNextChangeOfAWindowThatNeverCloses(t *testing.T) {
	np := nodePool(scheduled("1", "* * * * *", time.Hour))
	got, ok := NextChange(np, tue1000)
	if !ok || !got.After(tue1000.Add(24*time.Hour)) {
		t.Fatalf("NextChange = %v, %v; want a time days ahead", got, ok)
	}
	for _, probe := range []time.Time{tue1000, got.Add(-time.Second)} {
		if a := Active(np, probe); len(a) != 1 {
			t.Errorf("not active at %v", probe)
		}
	}
}

func TestDescribe(t *testing.T) {
	tests := []struct {
		b    karpv1.Budget
		want string
	}{
		{always("10%"), `nodes "10%"`},
		{businessHours[1], `nodes "0", schedule "0 9 * * mon-fri", duration 8h0m0s`},
		{driftOneAtATime[1], `nodes "100%", reasons [Empty Underutilized]`},
	}
	for _, tt := range tests {
		if got := Describe(tt.b); got != tt.want {
			t.Errorf("Describe = %s, want %s", got, tt.want)
		}
	}
}

// The same inputs give the same result, whatever order the nodes come in.
func TestDeterministic(t *testing.T) {
	ns := join(nodes(5), nodes(2, marked), nodes(3, inPool("other")), nodes(2, uninitialized))
	np := nodePool(businessHours...)
	first := fmt.Sprintf("%+v", Compute(np, ns, tue1800))
	for i := range 5 {
		rev := make([]*state.StateNode, len(ns))
		for j := range ns {
			rev[(j*7+i)%len(ns)] = ns[j]
		}
		if got := fmt.Sprintf("%+v", Compute(np, rev, tue1800)); got != first {
			t.Fatalf("result changed with node order:\n%s\n%s", first, got)
		}
	}
}
