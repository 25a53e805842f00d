package whatif

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/stevedore-autoscaler/stevedore/sim/report"
)

// maxReplacements is how many replaced nodes the text lists at most.
const maxReplacements = 40

// WriteJSON writes the comparison as one indented JSON document.
func (c Comparison) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// WriteText writes the comparison as a table, the as-is run beside the
// changed one, then the nodes the changed run replaced.
func (c Comparison) WriteText(w io.Writer) error {
	b := &strings.Builder{}
	fmt.Fprintf(b, "What if, %s, seed %d: %s to %s (%s of virtual time)\n", c.Scenario, c.Seed,
		c.Start.UTC().Format(time.RFC3339), c.End.UTC().Format(time.RFC3339), c.End.Sub(c.Start))
	for _, ch := range c.Change {
		fmt.Fprintf(b, "  change: %s\n", ch)
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(b, 0, 0, 3, ' ', 0)
	a, x := c.AsIs, c.Changed
	row := func(name, asIs, changed string) { fmt.Fprintf(tw, "  %s\t%s\t%s\n", name, asIs, changed) }
	row("", "as it is", "changed")
	row("nodes at the start", fmt.Sprint(a.NodesAtStart), fmt.Sprint(x.NodesAtStart))
	row("nodes at the end", fmt.Sprint(a.NodesAtEnd), fmt.Sprint(x.NodesAtEnd))
	row("NodeClaims launched", fmt.Sprint(a.Launched), fmt.Sprint(x.Launched))
	row("nodes disrupted", fmt.Sprint(len(a.Replaced)), fmt.Sprint(len(x.Replaced)))
	row("disruptions by reason", reasons(a.Disruptions), reasons(x.Disruptions))
	row("rollout", rollout(c.Start, a), rollout(c.Start, x))
	row("pods pending, peak", fmt.Sprint(a.PendingPeak), fmt.Sprint(x.PendingPeak))
	row("pod-minutes pending", fmt.Sprintf("%.1f", a.PendingPodMinutes), fmt.Sprintf("%.1f", x.PendingPodMinutes))
	row("longest pending", waited(a.LongestPending), waited(x.LongestPending))
	row("pods pending at the end", fmt.Sprint(a.PendingAtEnd), fmt.Sprint(x.PendingAtEnd))
	row("evictions refused by PDBs", fmt.Sprint(refusals(a)), fmt.Sprint(refusals(x)))
	row("cost per hour at the start", dollars(a.CostPerHourAtStart), dollars(x.CostPerHourAtStart))
	row("cost per hour at the end", dollars(a.CostPerHourAtEnd), dollars(x.CostPerHourAtEnd))
	row("cost of the run", dollars(a.Cost), dollars(x.Cost))
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(x.BudgetPeaks) > 0 {
		b.WriteString("\nDisruption budgets in the changed run (most nodes disrupting at once, of those allowed):\n")
		tw = tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
		for _, p := range x.BudgetPeaks {
			fmt.Fprintf(tw, "  %s\t%s\t%d of %s\n", p.NodePool, p.Reason, p.Disrupting, allowed(p.Allowed))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(x.BudgetWaits) > 0 {
		b.WriteString("\nPodDisruptionBudgets that held the changed run up:\n")
		tw = tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
		for _, bw := range x.BudgetWaits {
			fmt.Fprintf(tw, "  %s\t%d evictions refused\tlongest wait %s\n", bw.Budget, bw.Refusals, waited(bw.LongestWait))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(x.Replaced) > 0 {
		b.WriteString("\nNodes disrupted in the changed run (since the start):\n")
		tw = tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
		for i, r := range x.Replaced {
			if i == maxReplacements {
				break
			}
			done := "not finished at the end"
			if r.Finished != nil {
				done = "gone " + report.Offset(r.Finished.Sub(c.Start))
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s %s\t%s\n", report.Offset(r.Started.Sub(c.Start)), r.Reason, "NodeClaim/"+r.NodeClaim, r.InstanceType, r.Zone, done)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if len(x.Replaced) > maxReplacements {
			fmt.Fprintf(b, "  … %d more (see --output json)\n", len(x.Replaced)-maxReplacements)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func reasons(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func rollout(start time.Time, s Summary) string {
	if s.RolloutStart == nil {
		return "-"
	}
	from := report.Offset(s.RolloutStart.Sub(start))
	if s.RolloutEnd == nil {
		return from + " to past the end"
	}
	return fmt.Sprintf("%s to %s (%s)", from, report.Offset(s.RolloutEnd.Sub(start)), s.RolloutEnd.Sub(*s.RolloutStart).Round(time.Second))
}

func waited(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return d.Round(time.Second).String()
}

func refusals(s Summary) int {
	n := 0
	for _, b := range s.BudgetWaits {
		n += b.Refusals
	}
	return n
}

func allowed(n int) string {
	if n == math.MaxInt32 {
		return "any"
	}
	return fmt.Sprint(n)
}

func dollars(v float64) string { return fmt.Sprintf("$%.4f", v) }
