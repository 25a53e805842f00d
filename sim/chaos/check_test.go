package chaos

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stevedore-autoscaler/stevedore/sim/report"
)

var t0 = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)

// healthy is a document that breaks no invariant: one NodeClaim on its
// running instance, a terminated instance of a claim gone, an eviction the
// budget allowed, budgets kept, every pod running or expected pending.
func healthy() *report.Document {
	return &report.Document{
		Evictions: []report.Eviction{{Time: t0, Pod: "ns/a", Healthy: true, Granted: true,
			Budgets: []report.PDBStatus{{Name: "ns/web", CurrentHealthy: 3, DesiredHealthy: 2, DisruptionsAllowed: 1}}},
			{Time: t0, Pod: "ns/b", Healthy: true, Granted: false, Budgets: []report.PDBStatus{{Name: "ns/web", CurrentHealthy: 2, DesiredHealthy: 2}}},
			{Time: t0, Pod: "ns/c", Healthy: false, Granted: true, Budgets: []report.PDBStatus{{Name: "ns/web", CurrentHealthy: 2, DesiredHealthy: 2}}}},
		Decisions: []report.Decision{{Time: t0, NodeClaim: "c1", BudgetUse: report.BudgetUse{NodePool: "p", Reason: "Empty", Nodes: 3, Allowed: 1, Disrupting: 1}}},
		Samples:   []report.Sample{{Time: t0, DisruptionBudgets: []report.BudgetUse{{NodePool: "p", Reason: "Drifted", Nodes: 3, Allowed: 1, Disrupting: 1, DisruptingAll: 2}}}},
		Final: report.Final{
			Nodes:      []report.Node{{Name: "n1", Ready: true}, {Name: "dead", Ready: false}},
			NodeClaims: []report.NodeClaim{{Name: "c1", InstanceID: "i-1", Node: "n1"}, {Name: "c3", InstanceID: "i-3", Deleting: &t0}},
			Instances: []report.Instance{{ID: "i-1", NodeClaim: "c1", State: "running"}, {ID: "i-2", NodeClaim: "c2", State: "terminated"},
				{ID: "i-3", NodeClaim: "c3", State: "shutting-down"}},
			Unschedulable: []report.Unschedulable{{Pod: "ns/big", Reason: "NodePool p: limit cpu exceeded"}},
			NotRunning: []report.PodState{{Pod: "ns/big", Phase: "Pending"},
				{Pod: "ns/stuck", Phase: "Running", Node: "dead", Terminating: true}},
		},
	}
}

func TestCheckFindsEachViolation(t *testing.T) {
	opts := CheckOptions{ExpectedPending: regexp.MustCompile("limit")}
	for _, tc := range []struct {
		name   string
		break_ func(d *report.Document)
		want   string // the invariant and a part of the message
	}{
		{"none", func(*report.Document) {}, ""},
		{"an instance whose NodeClaim is gone", func(d *report.Document) {
			d.Final.Instances = append(d.Final.Instances, report.Instance{ID: "i-9", NodeClaim: "c9", State: "running"})
		}, "leaked-instance: instance i-9"},
		{"a second instance for a NodeClaim", func(d *report.Document) {
			d.Final.Instances = append(d.Final.Instances, report.Instance{ID: "i-9", NodeClaim: "c1", State: "pending"})
		}, "leaked-instance: instance i-9 (, launched 0001-01-01T00:00:00Z) is pending but its NodeClaim c1 runs on i-1"},
		{"an untagged instance", func(d *report.Document) {
			d.Final.Instances = append(d.Final.Instances, report.Instance{ID: "i-9", State: "running"})
		}, "leaked-instance: instance i-9 () is running and has no NodeClaim tag"},
		{"a NodeClaim whose instance terminated", func(d *report.Document) { d.Final.Instances[0].State = "terminated" }, "missing-instance: NodeClaim c1"},
		{"a NodeClaim whose instance was never launched", func(d *report.Document) { d.Final.Instances = d.Final.Instances[1:] }, "missing-instance: NodeClaim c1 names instance i-1"},
		{"an eviction past a budget", func(d *report.Document) { d.Evictions[1].Granted = true }, "pdb-violated: 2026-01-05T00:00:00Z: pod ns/b"},
		{"a decision over budget", func(d *report.Document) { d.Decisions[0].Disrupting = 2 }, "budget-exceeded: 2026-01-05T00:00:00Z: disrupting NodeClaim c1"},
		{"a sample over budget", func(d *report.Document) { d.Samples[0].DisruptionBudgets[0].Disrupting = 2 }, "budget-exceeded: 2026-01-05T00:00:00Z to 2026-01-05T00:00:00Z: 2 of NodePool p's 3 nodes disrupted for Drifted, its budgets allow 1"},
		{"a pod pending for no expected reason", func(d *report.Document) { d.Final.Unschedulable[0].Reason = "no instance type fits" }, "pod-not-running: pod ns/big is pending: no instance type fits"},
		{"a pod terminating on a Ready node", func(d *report.Document) { d.Final.NotRunning[1].Node = "n1" }, "pod-not-running: pod ns/stuck is running on node n1"},
		{"a pod bound and not started", func(d *report.Document) {
			d.Final.NotRunning = append(d.Final.NotRunning, report.PodState{Pod: "ns/slow", Phase: "Pending", Node: "n1"})
		}, "pod-not-running: pod ns/slow is pending on node n1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := healthy()
			tc.break_(d)
			var got []string
			for _, v := range Check(d, opts) {
				got = append(got, v.String())
			}
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("violations in a healthy document: %v", got)
			case tc.want != "" && (len(got) != 1 || !strings.HasPrefix(got[0], tc.want)):
				t.Errorf("violations %q, want one starting %q", got, tc.want)
			}
		})
	}
}

// Consecutive samples over a budget are one violation.
func TestBudgetSpellsAreReportedOnce(t *testing.T) {
	d := &report.Document{}
	for i, over := range []bool{false, true, true, false, true} {
		u := report.BudgetUse{NodePool: "p", Reason: "Empty", Nodes: 4, Allowed: 1, Disrupting: 1}
		if over {
			u.Disrupting = 2
		}
		d.Samples = append(d.Samples, report.Sample{Time: t0.Add(time.Duration(i) * time.Minute), DisruptionBudgets: []report.BudgetUse{u}})
	}
	v := checkBudgets(d)
	if len(v) != 2 || !strings.Contains(v[0].Message, "00:01:00Z to 2026-01-05T00:02:00Z") || !strings.Contains(v[1].Message, "00:04:00Z to 2026-01-05T00:04:00Z") {
		t.Errorf("violations %v, want two spells", v)
	}
}

// A pod created less than PendingGrace before the end may still be starting;
// one pending longer, or terminating, still breaks pod-not-running.
func TestPendingGrace(t *testing.T) {
	end := t0.Add(2 * time.Hour)
	for _, tc := range []struct {
		name    string
		pod     report.PodState
		violate bool
	}{
		{"created a minute before the end, unbound", report.PodState{Pod: "ns/new", Phase: "Pending", Created: end.Add(-time.Minute)}, false},
		{"created a minute before the end, bound", report.PodState{Pod: "ns/new", Phase: "Pending", Node: "n1", Created: end.Add(-time.Minute)}, false},
		{"pending for ten minutes", report.PodState{Pod: "ns/stuck", Phase: "Pending", Created: end.Add(-10 * time.Minute)}, true},
		{"pending since just past the grace", report.PodState{Pod: "ns/stuck", Phase: "Pending", Created: end.Add(-PendingGrace)}, true},
		{"young but terminating on a Ready node", report.PodState{Pod: "ns/gone", Phase: "Running", Node: "n1", Terminating: true, Created: end.Add(-time.Minute)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &report.Document{End: end, Final: report.Final{Nodes: []report.Node{{Name: "n1", Ready: true}}, NotRunning: []report.PodState{tc.pod}}}
			if got := len(checkPods(d, CheckOptions{})) > 0; got != tc.violate {
				t.Errorf("violation = %v, want %v", got, tc.violate)
			}
		})
	}
	if s := (Summary{Runs: 1}).String(); !strings.Contains(s, PendingGrace.String()) {
		t.Errorf("summary %q does not state the grace", s)
	}
}

// A budget window that closes while an allowed disruption runs is no
// violation; a disruption started while it is closed is.
func TestBudgetWindowClosingDuringADisruption(t *testing.T) {
	d := &report.Document{}
	for i, u := range []struct{ allowed, disrupting int }{
		{1, 1}, // the window is open: one disruption starts
		{0, 1}, // the window closes while it runs
		{0, 1},
		{0, 0}, // it ends
		{0, 1}, // one starts while the window is closed
	} {
		d.Samples = append(d.Samples, report.Sample{Time: t0.Add(time.Duration(i) * time.Minute),
			DisruptionBudgets: []report.BudgetUse{{NodePool: "p", Reason: "Drifted", Nodes: 4, Allowed: u.allowed, Disrupting: u.disrupting}}})
	}
	v := checkBudgets(d)
	if len(v) != 1 || !strings.Contains(v[0].Message, "00:04:00Z to 2026-01-05T00:04:00Z") {
		t.Errorf("violations %v, want only the disruption started at 00:04 while closed", v)
	}
}
