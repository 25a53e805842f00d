package whatif

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stevedore-autoscaler/stevedore/sim/report"
)

var t0 = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)

func at(min float64) time.Time { return t0.Add(time.Duration(min * float64(time.Minute))) }

// driftRun is a run in which two nodes drift one after the other, one
// replacement is abandoned, a pod waits 3 minutes for a node and another is
// still waiting at the end, and a budget refuses two evictions of one pod
// over 2 minutes.
func driftRun() *report.Document {
	refused := []report.PDBStatus{{Name: "shop/web", DisruptionsAllowed: 0}}
	return &report.Document{
		Scenario: "snap", Seed: 7, Start: t0, End: at(60),
		Events: []report.Event{
			{Time: at(1), Kind: report.KindDisruptionStarted, NodeClaim: "a", Reason: "Drifted", InstanceType: "m5.large", Zone: "z1"},
			{Time: at(1.5), Kind: report.KindNodeClaimLaunched, NodeClaim: "a2"},
			{Time: at(2), Kind: report.KindPodUnschedulable, Object: "Pod/shop/web-1"},
			{Time: at(3), Kind: report.KindDisruptionStarted, NodeClaim: "c", Reason: "Underutilized"},
			{Time: at(4), Kind: report.KindDisruptionFinished, NodeClaim: "c", Reason: "Underutilized", Message: "abandoned"},
			{Time: at(5), Kind: report.KindPodBound, Object: "Pod/shop/web-1"},
			{Time: at(6), Kind: report.KindDisruptionFinished, NodeClaim: "a", Reason: "Drifted"},
			{Time: at(7), Kind: report.KindDisruptionStarted, NodeClaim: "b", Reason: "Drifted"},
			{Time: at(12), Kind: report.KindDisruptionFinished, NodeClaim: "b", Reason: "Drifted"},
			{Time: at(50), Kind: report.KindPodUnschedulable, Object: "Pod/shop/big-1"},
		},
		Samples: []report.Sample{
			{Time: at(0), Nodes: 2, CostPerHour: 0.192},
			{Time: at(1), Nodes: 3, PendingPods: 2},
			{Time: at(2), Nodes: 3, PendingPods: 1},
			{Time: at(60), Nodes: 2, CostPerHour: 0.2},
		},
		Evictions: []report.Eviction{
			{Time: at(7.5), Pod: "shop/web-2", Budgets: refused},
			{Time: at(8), Pod: "shop/web-2", Budgets: refused},
			{Time: at(9.5), Pod: "shop/web-2", Granted: true},
		},
		Decisions: []report.Decision{
			{Time: at(1), NodeClaim: "a", BudgetUse: report.BudgetUse{NodePool: "web", Reason: "Drifted", Allowed: 1, Disrupting: 1}},
			{Time: at(3), NodeClaim: "c", BudgetUse: report.BudgetUse{NodePool: "web", Reason: "Underutilized", Allowed: 2147483647, Disrupting: 1}},
			{Time: at(7), NodeClaim: "b", BudgetUse: report.BudgetUse{NodePool: "web", Reason: "Drifted", Allowed: 2, Disrupting: 2}},
		},
		Final: report.Final{Cost: 0.21, Disruptions: map[string]int{"Drifted": 2}, Pods: report.PodCounts{Pending: 1}},
	}
}

func TestSummarize(t *testing.T) {
	s := Summarize(driftRun())
	if len(s.Replaced) != 2 || s.Replaced[0].NodeClaim != "a" || s.Replaced[1].NodeClaim != "b" {
		t.Fatalf("replaced = %+v, want a then b (c was abandoned)", s.Replaced)
	}
	if !s.RolloutStart.Equal(at(1)) || s.RolloutEnd == nil || !s.RolloutEnd.Equal(at(12)) {
		t.Errorf("rollout %v to %v, want 0:01 to 0:12", s.RolloutStart, s.RolloutEnd)
	}
	if s.Launched != 1 || s.NodesAtStart != 2 || s.NodesAtEnd != 2 {
		t.Errorf("launched %d, nodes %d to %d; want 1, 2 to 2", s.Launched, s.NodesAtStart, s.NodesAtEnd)
	}
	if s.PendingPeak != 2 || s.PendingPodMinutes != 2+58 {
		t.Errorf("pending peak %d, %v pod-minutes; want 2 and 60 (2 for a minute, then 1 for 58)", s.PendingPeak, s.PendingPodMinutes)
	}
	if s.LongestPending != 10*time.Minute || s.LongestPendingPod != "shop/big-1" {
		t.Errorf("longest pending %s (%s), want 10m of shop/big-1, still pending at the end", s.LongestPending, s.LongestPendingPod)
	}
	if len(s.BudgetWaits) != 1 || s.BudgetWaits[0] != (BudgetWait{Budget: "shop/web", Refusals: 2, LongestWait: 2 * time.Minute}) {
		t.Errorf("budget waits = %+v, want shop/web: 2 refusals, 2m", s.BudgetWaits)
	}
	if want := []BudgetPeak{{"web", "Drifted", 2, 1}, {"web", "Underutilized", 1, 2147483647}}; !slices.Equal(s.BudgetPeaks, want) {
		t.Errorf("budget peaks = %+v, want %+v", s.BudgetPeaks, want)
	}
	if s.CostPerHourAtStart != 0.192 || s.CostPerHourAtEnd != 0.2 || s.Cost != 0.21 || s.PendingAtEnd != 1 {
		t.Errorf("costs %v/%v/%v, pending at end %d", s.CostPerHourAtStart, s.CostPerHourAtEnd, s.Cost, s.PendingAtEnd)
	}
}

func TestRolloutStillGoing(t *testing.T) {
	doc := driftRun()
	doc.Events = doc.Events[:len(doc.Events)-3] // b never finishes
	doc.Events = append(doc.Events, report.Event{Time: at(7), Kind: report.KindDisruptionStarted, NodeClaim: "b", Reason: "Drifted"})
	s := Summarize(doc)
	if s.RolloutEnd != nil || len(s.Replaced) != 2 || s.Replaced[1].Finished != nil {
		t.Errorf("a disruption still going: rollout end %v, replaced %+v", s.RolloutEnd, s.Replaced)
	}
}

func TestWriteText(t *testing.T) {
	asIs := &report.Document{Scenario: "snap", Seed: 7, Start: t0, End: at(60), Final: report.Final{Disruptions: map[string]int{}}}
	c := Compare(asIs, driftRun(), []string{"release ami-0bbbbbbbbbbbbbbb1 as al2023@latest"})
	var b bytes.Buffer
	if err := c.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"change: release ami-0bbbbbbbbbbbbbbb1 as al2023@latest",
		"disruptions by reason        none       Drifted 2",
		"0:01:00 to 0:12:00 (11m0s)",
		"shop/web  2 evictions refused  longest wait 2m0s",
		"0:07:00  Drifted  NodeClaim/b",
		"web  Drifted        2 of 1",
		"web  Underutilized  1 of any",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
}
