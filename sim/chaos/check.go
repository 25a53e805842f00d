package chaos

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/sim/report"
)

// Invariants Check looks at, as Violation.Invariant names them.
const (
	LeakedInstance     = "leaked-instance"
	MissingInstance    = "missing-instance"
	PDBViolated        = "pdb-violated"
	BudgetExceeded     = "budget-exceeded"
	PodNotRunning      = "pod-not-running"
	NotDeterministic   = "not-deterministic"
	AnnotationExpected = "chaos.stevedore.io/expected-pending"
)

// PendingGrace is how long before the end of a run a pod may have been
// created and still not be running without breaking pod-not-running: its
// NodeClaim may still be launching, its node booting. Summary lines state it.
const PendingGrace = 3 * time.Minute

// Violation is one broken invariant.
type Violation struct {
	Invariant string
	Message   string
}

func (v Violation) String() string { return v.Invariant + ": " + v.Message }

// CheckOptions shape Check.
type CheckOptions struct {
	// ExpectedPending matches the reasons for which a pod may be pending at
	// the end (a NodePool's limit the scenario reaches on purpose).
	ExpectedPending *regexp.Regexp
}

// ExpectedPending reads the expected-pending annotation of a Scenario: a
// regular expression matching the reasons pods may be left pending for.
func ExpectedPending(annotations map[string]string) (*regexp.Regexp, error) {
	v := annotations[AnnotationExpected]
	if v == "" {
		return nil, nil
	}
	re, err := regexp.Compile(v)
	if err != nil {
		return nil, fmt.Errorf("metadata.annotations[%s]: %w", AnnotationExpected, err)
	}
	return re, nil
}

// Check returns the violations of the safety invariants in a run's report,
// in the order of the checks below and, within one, of the document.
func Check(doc *report.Document, opts CheckOptions) []Violation {
	var out []Violation
	out = append(out, checkInstances(doc)...)
	out = append(out, checkEvictions(doc)...)
	out = append(out, checkBudgets(doc)...)
	out = append(out, checkPods(doc, opts)...)
	return out
}

func live(state string) bool { return state == fake.StatePending || state == fake.StateRunning }

// checkInstances: at the end, every instance that is not terminated or
// terminating belongs to a NodeClaim that exists and records it, and every
// NodeClaim that was launched and is not being deleted has a live
// instance.
func checkInstances(doc *report.Document) []Violation {
	var out []Violation
	claims := map[string]report.NodeClaim{}
	for _, c := range doc.Final.NodeClaims {
		claims[c.Name] = c
	}
	instances := map[string]report.Instance{}
	for _, in := range doc.Final.Instances {
		instances[in.ID] = in
		if !live(in.State) {
			continue
		}
		c, ok := claims[in.NodeClaim]
		switch {
		case in.NodeClaim == "":
			out = append(out, Violation{LeakedInstance, fmt.Sprintf("instance %s (%s) is %s and has no NodeClaim tag", in.ID, in.InstanceType, in.State)})
		case !ok:
			out = append(out, Violation{LeakedInstance, fmt.Sprintf("instance %s (%s, launched %s) is %s but its NodeClaim %s is gone",
				in.ID, in.InstanceType, in.LaunchTime.Format(time.RFC3339), in.State, in.NodeClaim)})
		case c.InstanceID != "" && c.InstanceID != in.ID:
			out = append(out, Violation{LeakedInstance, fmt.Sprintf("instance %s (%s, launched %s) is %s but its NodeClaim %s runs on %s",
				in.ID, in.InstanceType, in.LaunchTime.Format(time.RFC3339), in.State, in.NodeClaim, c.InstanceID)})
		}
	}
	for _, c := range doc.Final.NodeClaims {
		if c.InstanceID == "" || c.Deleting != nil {
			continue
		}
		in, ok := instances[c.InstanceID]
		switch {
		case !ok:
			out = append(out, Violation{MissingInstance, fmt.Sprintf("NodeClaim %s names instance %s, which the run never launched", c.Name, c.InstanceID)})
		case !live(in.State):
			out = append(out, Violation{MissingInstance, fmt.Sprintf("NodeClaim %s is not being deleted but its instance %s is %s", c.Name, c.InstanceID, in.State)})
		}
	}
	return out
}

// checkEvictions: no eviction of a healthy pod was granted while one of
// its budgets allowed no disruption.
func checkEvictions(doc *report.Document) []Violation {
	var out []Violation
	for _, e := range doc.Evictions {
		if !e.Granted || !e.Healthy {
			continue
		}
		for _, b := range e.Budgets {
			if b.DisruptionsAllowed < 1 {
				out = append(out, Violation{PDBViolated, fmt.Sprintf("%s: pod %s was evicted while PodDisruptionBudget %s allowed no disruption (%d healthy, %d desired)",
					e.Time.Format(time.RFC3339), e.Pod, b.Name, b.CurrentHealthy, b.DesiredHealthy)})
			}
		}
	}
	return out
}

// checkBudgets: at no disruption decision and in no sample were more of a
// NodePool's nodes disrupted for a reason than its budgets allowed. A
// NodePool and reason over its budget in consecutive samples is reported
// once, with the first sample and how long it lasted.
func checkBudgets(doc *report.Document) []Violation {
	var out []Violation
	for _, d := range doc.Decisions {
		if d.Disrupting > d.Allowed {
			out = append(out, Violation{BudgetExceeded, fmt.Sprintf("%s: disrupting NodeClaim %s made %d of NodePool %s's %d nodes disrupted for %s, its budgets allow %d",
				d.Time.Format(time.RFC3339), d.NodeClaim, d.Disrupting, d.NodePool, d.Nodes, d.Reason, d.Allowed)})
		}
	}
	type key struct{ pool, reason string }
	type spell struct {
		first, last time.Time
		worst       report.BudgetUse
	}
	open := map[key]*spell{}
	var order []key
	// carried counts, per pool and reason, the disruptions in flight that
	// a budget allowed when they started: a budget window that closes while
	// they run does not make them a violation (budgets limit starting a
	// disruption, not finishing one). A disruption started while closed is
	// caught by the decisions above, and by the samples when it exceeds
	// what was carried.
	carried := map[key]int{}
	flush := func(k key) {
		s := open[k]
		delete(open, k)
		out = append(out, Violation{BudgetExceeded, fmt.Sprintf("%s to %s: %d of NodePool %s's %d nodes disrupted for %s, its budgets allow %d",
			s.first.Format(time.RFC3339), s.last.Format(time.RFC3339), s.worst.Disrupting, k.pool, s.worst.Nodes, k.reason, s.worst.Allowed)})
	}
	for _, smp := range doc.Samples {
		over := map[key]bool{}
		for _, u := range smp.DisruptionBudgets {
			k := key{u.NodePool, u.Reason}
			permitted := max(u.Allowed, carried[k])
			carried[k] = min(u.Disrupting, permitted)
			if u.Disrupting <= permitted {
				continue
			}
			over[k] = true
			s := open[k]
			if s == nil {
				s = &spell{first: smp.Time}
				open[k] = s
				order = append(order, k)
			}
			s.last = smp.Time
			if u.Disrupting-u.Allowed > s.worst.Disrupting-s.worst.Allowed {
				s.worst = u
			}
		}
		kept := order[:0]
		for _, k := range order {
			if over[k] {
				kept = append(kept, k)
			} else {
				flush(k)
			}
		}
		order = kept
	}
	for _, k := range order {
		flush(k)
	}
	return out
}

// checkPods: every pod that has not finished is running at the end, or
// pending, unbound, for a reason the scenario expects, or terminating on a
// node that is not Ready (its kubelet is gone: the pod waits for its node
// to be removed, as it does in Kubernetes), or was created less than
// PendingGrace before the end.
func checkPods(doc *report.Document, opts CheckOptions) []Violation {
	var out []Violation
	ready := map[string]bool{}
	for _, n := range doc.Final.Nodes {
		ready[n.Name] = n.Ready
	}
	reasons := map[string]string{}
	for _, u := range doc.Final.Unschedulable {
		reasons[u.Pod] = u.Reason
	}
	for _, p := range doc.Final.NotRunning {
		switch {
		case !p.Terminating && !p.Created.IsZero() && doc.End.Sub(p.Created) < PendingGrace:
			// Still starting: created less than PendingGrace before the end.
		case p.Terminating && p.Node != "" && !ready[p.Node]:
		case p.Node == "" && p.Terminating:
			out = append(out, Violation{PodNotRunning, fmt.Sprintf("pod %s is terminating and bound to no node", p.Pod)})
		case p.Node == "":
			reason, ok := reasons[p.Pod]
			if ok && opts.ExpectedPending != nil && opts.ExpectedPending.MatchString(reason) {
				continue
			}
			out = append(out, Violation{PodNotRunning, fmt.Sprintf("pod %s is pending: %s", p.Pod, oneLine(reason))})
		default:
			out = append(out, Violation{PodNotRunning, fmt.Sprintf("pod %s is %s on node %s", p.Pod, strings.ToLower(p.Phase), p.Node)})
		}
	}
	return out
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
