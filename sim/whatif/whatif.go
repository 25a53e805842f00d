// Package whatif compares two simulated runs of the same cluster on the same
// seed: as it is, and with a change (a NodePool or EC2NodeClass edit, a new
// object, an image release). It answers what a platform team asks before the
// change reaches their cluster: how many nodes are replaced and when, how
// long the rollout takes, which disruptions happen for which reasons, how
// many pods wait and for how long, which PodDisruptionBudgets hold the
// rollout up, and what the cluster costs per hour before and after.
//
// Everything here is a pure function of the two reports (package
// sim/report); `stevedore simulate SNAPSHOT --change FILE` runs the two
// simulations and prints the comparison.
package whatif

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/stevedore-autoscaler/stevedore/sim/report"
)

// Summary is what one run did, in the terms of the comparison.
type Summary struct {
	// NodesAtStart and NodesAtEnd count the nodes of the first and last
	// samples.
	NodesAtStart int `json:"nodesAtStart"`
	NodesAtEnd   int `json:"nodesAtEnd"`
	// Launched counts NodeClaims launched during the run.
	Launched int `json:"launched"`
	// Replaced are the NodeClaims disrupted during the run, in the order
	// their disruption started.
	Replaced []Replacement `json:"replaced"`
	// RolloutStart and RolloutEnd span the disruptions: from the first one
	// started to the last one finished (zero without disruptions; End is
	// zero while one is still going at the end of the run).
	RolloutStart *time.Time `json:"rolloutStart,omitempty"`
	RolloutEnd   *time.Time `json:"rolloutEnd,omitempty"`
	// Disruptions counts the nodes taken away, by reason.
	Disruptions map[string]int `json:"disruptions"`
	// PendingPeak is the most pods pending at a sample; PendingPodMinutes
	// the pending pods summed over the samples, times the sample interval.
	PendingPeak       int     `json:"pendingPeak"`
	PendingPodMinutes float64 `json:"pendingPodMinutes"`
	// LongestPending is the longest a pod waited from being found
	// unschedulable to being bound (or to the end of the run), and which.
	LongestPending    time.Duration `json:"longestPending"`
	LongestPendingPod string        `json:"longestPendingPod,omitempty"`
	// PendingAtEnd counts pods still pending at the end.
	PendingAtEnd int `json:"pendingAtEnd"`
	// BudgetWaits are the PodDisruptionBudgets that refused evictions.
	BudgetWaits []BudgetWait `json:"budgetWaits"`
	// BudgetPeaks are, for each NodePool and reason that disrupted nodes,
	// the most of its nodes being disrupted for the reason right after a
	// decision, and the least the NodePool's budgets allowed then: a rollout
	// under a budget of one node shows 1 and 1.
	BudgetPeaks []BudgetPeak `json:"budgetPeaks"`
	// CostPerHourAtStart and CostPerHourAtEnd are the first and last
	// samples' cost per hour; Cost is the whole run's, in USD.
	CostPerHourAtStart float64 `json:"costPerHourAtStart"`
	CostPerHourAtEnd   float64 `json:"costPerHourAtEnd"`
	Cost               float64 `json:"cost"`
}

// Replacement is a NodeClaim disrupted during the run.
type Replacement struct {
	NodeClaim    string     `json:"nodeClaim"`
	Node         string     `json:"node,omitempty"`
	Reason       string     `json:"reason"`
	InstanceType string     `json:"instanceType,omitempty"`
	Zone         string     `json:"zone,omitempty"`
	Started      time.Time  `json:"started"`
	Finished     *time.Time `json:"finished,omitempty"`
}

// BudgetWait is a PodDisruptionBudget that refused evictions: how many, and
// the longest a pod it selects waited from its first refused eviction to
// the one granted (or to the end of the run).
type BudgetWait struct {
	Budget      string        `json:"budget"`
	Refusals    int           `json:"refusals"`
	LongestWait time.Duration `json:"longestWait"`
}

// BudgetPeak is the heaviest use of a NodePool's disruption budget for a
// reason.
type BudgetPeak struct {
	NodePool   string `json:"nodePool"`
	Reason     string `json:"reason"`
	Disrupting int    `json:"disrupting"`
	Allowed    int    `json:"allowed"`
}

// Comparison is the two runs side by side.
type Comparison struct {
	Scenario string    `json:"scenario"`
	Seed     uint64    `json:"seed"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	// Change describes what the changed run did differently, one line per
	// document of the change.
	Change  []string `json:"change"`
	AsIs    Summary  `json:"asIs"`
	Changed Summary  `json:"changed"`
}

// Compare summarises both runs. change describes the change.
func Compare(asIs, changed *report.Document, change []string) Comparison {
	return Comparison{
		Scenario: asIs.Scenario, Seed: asIs.Seed, Start: asIs.Start, End: asIs.End,
		Change: change, AsIs: Summarize(asIs), Changed: Summarize(changed),
	}
}

// Summarize reads one run's report.
func Summarize(doc *report.Document) Summary {
	s := Summary{Disruptions: map[string]int{}, Replaced: []Replacement{}, BudgetWaits: []BudgetWait{}}
	maps.Copy(s.Disruptions, doc.Final.Disruptions)
	if n := len(doc.Samples); n > 0 {
		first, last := doc.Samples[0], doc.Samples[n-1]
		s.NodesAtStart, s.NodesAtEnd = first.Nodes, last.Nodes
		s.CostPerHourAtStart, s.CostPerHourAtEnd = first.CostPerHour, last.CostPerHour
		for i, smp := range doc.Samples {
			s.PendingPeak = max(s.PendingPeak, smp.PendingPods)
			if i > 0 {
				s.PendingPodMinutes += float64(doc.Samples[i-1].PendingPods) * smp.Time.Sub(doc.Samples[i-1].Time).Minutes()
			}
		}
	}
	s.Cost = doc.Final.Cost
	s.PendingAtEnd = doc.Final.Pods.Pending
	s.replacements(doc)
	s.pending(doc)
	s.budgets(doc)
	s.budgetPeaks(doc)
	return s
}

// budgetPeaks reads the decisions' budget figures.
func (s *Summary) budgetPeaks(doc *report.Document) {
	s.BudgetPeaks = []BudgetPeak{}
	at := map[[2]string]int{}
	for _, d := range doc.Decisions {
		k := [2]string{d.NodePool, d.Reason}
		i, ok := at[k]
		if !ok {
			i = len(s.BudgetPeaks)
			at[k] = i
			s.BudgetPeaks = append(s.BudgetPeaks, BudgetPeak{NodePool: d.NodePool, Reason: d.Reason, Allowed: d.Allowed})
		}
		p := &s.BudgetPeaks[i]
		p.Disrupting = max(p.Disrupting, d.Disrupting)
		p.Allowed = min(p.Allowed, d.Allowed)
	}
	slices.SortFunc(s.BudgetPeaks, func(a, b BudgetPeak) int {
		return cmp.Or(cmp.Compare(a.NodePool, b.NodePool), cmp.Compare(a.Reason, b.Reason))
	})
}

// replacements reads the disruptions and launches from the event log.
func (s *Summary) replacements(doc *report.Document) {
	open := map[string]int{}
	for _, e := range doc.Events {
		switch e.Kind {
		case report.KindNodeClaimLaunched:
			s.Launched++
		case report.KindDisruptionStarted:
			if _, ok := open[e.NodeClaim]; ok {
				continue
			}
			open[e.NodeClaim] = len(s.Replaced)
			s.Replaced = append(s.Replaced, Replacement{NodeClaim: e.NodeClaim, Node: e.Node, Reason: e.Reason,
				InstanceType: e.InstanceType, Zone: e.Zone, Started: e.Time})
			if s.RolloutStart == nil {
				t := e.Time
				s.RolloutStart = &t
			}
		case report.KindDisruptionFinished:
			i, ok := open[e.NodeClaim]
			if !ok {
				continue
			}
			delete(open, e.NodeClaim)
			if e.Message == "abandoned" {
				s.Replaced = slices.Delete(s.Replaced, i, i+1)
				for k, j := range open {
					if j > i {
						open[k] = j - 1
					}
				}
				continue
			}
			t := e.Time
			s.Replaced[i].Finished = &t
		}
	}
	if len(s.Replaced) == 0 {
		s.RolloutStart = nil
		return
	}
	if len(open) > 0 {
		return
	}
	end := *s.Replaced[0].Finished
	for _, r := range s.Replaced {
		if r.Finished.After(end) {
			end = *r.Finished
		}
	}
	s.RolloutEnd = &end
}

// pending finds the longest wait from a pod's first unschedulable report
// to its binding.
func (s *Summary) pending(doc *report.Document) {
	since := map[string]time.Time{}
	longest := func(pod string, d time.Duration) {
		if d > s.LongestPending || (d == s.LongestPending && d > 0 && pod < s.LongestPendingPod) {
			s.LongestPending, s.LongestPendingPod = d, pod
		}
	}
	for _, e := range doc.Events {
		switch e.Kind {
		case report.KindPodUnschedulable:
			if _, ok := since[e.Object]; !ok {
				since[e.Object] = e.Time
			}
		case report.KindPodBound, report.KindPodDeleted:
			if t, ok := since[e.Object]; ok {
				longest(podName(e.Object), e.Time.Sub(t))
				delete(since, e.Object)
			}
		}
	}
	for _, obj := range slices.Sorted(maps.Keys(since)) {
		longest(podName(obj), doc.End.Sub(since[obj]))
	}
}

// budgets counts the evictions each PodDisruptionBudget refused, and the
// longest a pod waited for its eviction to be granted.
func (s *Summary) budgets(doc *report.Document) {
	byName := map[string]*BudgetWait{}
	firstRefused := map[string]time.Time{}
	blocking := map[string]string{}
	for _, ev := range doc.Evictions {
		if !ev.Granted {
			for _, b := range ev.Budgets {
				if b.DisruptionsAllowed > 0 {
					continue
				}
				w := byName[b.Name]
				if w == nil {
					w = &BudgetWait{Budget: b.Name}
					byName[b.Name] = w
				}
				w.Refusals++
				if _, ok := firstRefused[ev.Pod]; !ok {
					firstRefused[ev.Pod] = ev.Time
					blocking[ev.Pod] = b.Name
				}
			}
			continue
		}
		if t, ok := firstRefused[ev.Pod]; ok {
			w := byName[blocking[ev.Pod]]
			w.LongestWait = max(w.LongestWait, ev.Time.Sub(t))
			delete(firstRefused, ev.Pod)
		}
	}
	for pod, t := range firstRefused {
		w := byName[blocking[pod]]
		w.LongestWait = max(w.LongestWait, doc.End.Sub(t))
	}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		s.BudgetWaits = append(s.BudgetWaits, *byName[name])
	}
	slices.SortStableFunc(s.BudgetWaits, func(a, b BudgetWait) int { return cmp.Compare(b.Refusals, a.Refusals) })
}

// podName turns Pod/namespace/name into namespace/name.
func podName(object string) string {
	if len(object) > 4 && object[:4] == "Pod/" {
		return object[4:]
	}
	return object
}
