package report

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// timelineKinds are the events the text summary's timeline shows; the
// per-pod events are left to the JSON.
var timelineKinds = map[string]bool{
	KindScenarioEvent: true, KindNodeClaimLaunched: true, KindNodeClaimLaunchFailed: true, KindNodeInitialized: true,
	KindNodeClaimDeleted: true, KindDisruptionStarted: true, KindDisruptionFinished: true, KindInterruptionReceived: true,
	KindInstanceTerminated: true,
}

// maxTimeline is how many timeline lines the summary prints at most.
const maxTimeline = 60

// WriteText writes the human summary of the run.
func (d *Document) WriteText(w io.Writer) error {
	b := &strings.Builder{}
	fmt.Fprintf(b, "Scenario %s, seed %d: %s to %s (%s of virtual time)\n\n", d.Scenario, d.Seed,
		d.Start.UTC().Format(time.RFC3339), d.End.UTC().Format(time.RFC3339), d.End.Sub(d.Start))

	ready := 0
	for _, n := range d.Final.Nodes {
		if n.Ready {
			ready++
		}
	}
	fmt.Fprintf(b, "Nodes at the end: %d (%d ready)\n", len(d.Final.Nodes), ready)
	if len(d.Final.Nodes) > 0 {
		type group struct{ pool, typ, capacity, zone string }
		counts := map[group]int{}
		for _, n := range d.Final.Nodes {
			pool := n.NodePool
			if pool == "" {
				pool = "(unmanaged)"
			}
			counts[group{pool, n.InstanceType, n.CapacityType, n.Zone}]++
		}
		keys := make([]group, 0, len(counts))
		for k := range counts {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			a, b := keys[i], keys[j]
			return a.pool+"\x00"+a.typ+"\x00"+a.capacity+"\x00"+a.zone < b.pool+"\x00"+b.typ+"\x00"+b.capacity+"\x00"+b.zone
		})
		tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  NODEPOOL\tINSTANCE TYPE\tCAPACITY\tZONE\tNODES")
		for _, k := range keys {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%d\n", k.pool, dash(k.typ), dash(k.capacity), dash(k.zone), counts[k])
		}
		_ = tw.Flush()
	}
	for _, np := range d.Final.NodePools {
		if !np.Ready {
			fmt.Fprintf(b, "  NodePool %s is not Ready: %s\n", np.Name, np.Message)
		}
	}
	p := d.Final.Pods
	fmt.Fprintf(b, "\nPods: %d running, %d pending (%d in all)\n", p.Running, p.Pending, p.Total)
	if len(d.Final.Unschedulable) > 0 {
		byReason := map[string]int{}
		for _, u := range d.Final.Unschedulable {
			byReason[u.Reason]++
		}
		reasons := make([]string, 0, len(byReason))
		for r := range byReason {
			reasons = append(reasons, r)
		}
		sort.Strings(reasons)
		for _, r := range reasons {
			fmt.Fprintf(b, "  %d pending: %s\n", byReason[r], r)
		}
	}
	fmt.Fprintf(b, "\nDisruptions: %s\n", disruptions(d.Final.Disruptions))
	peak := 0.0
	for _, s := range d.Samples {
		peak = max(peak, s.CostPerHour)
	}
	fmt.Fprintf(b, "Node-hours: %.2f   Cost: $%.2f   (peak $%.4f/h)\n", d.Final.NodeHours, d.Final.Cost, peak)

	var lines []Event
	for _, e := range d.Events {
		if timelineKinds[e.Kind] {
			lines = append(lines, e)
		}
	}
	if len(lines) > 0 {
		fmt.Fprintf(b, "\nTimeline (since the start):\n")
		tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
		shown := lines
		if len(shown) > maxTimeline {
			shown = shown[:maxTimeline]
		}
		for _, e := range shown {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", Offset(e.Time.Sub(d.Start)), e.Kind, describe(e))
		}
		_ = tw.Flush()
		if len(lines) > len(shown) {
			fmt.Fprintf(b, "  … %d more (see --output json)\n", len(lines)-len(shown))
		}
	}
	if len(d.Warnings) > 0 {
		fmt.Fprintf(b, "\nWarnings:\n")
		for _, w := range d.Warnings {
			fmt.Fprintf(b, "  %s\n", w)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func disruptions(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// Offset renders a time since the start as h:mm:ss.
func Offset(d time.Duration) string {
	d = d.Round(time.Second)
	h := d / time.Hour
	m := (d % time.Hour) / time.Minute
	s := (d % time.Minute) / time.Second
	return fmt.Sprintf("%d:%02d:%02d", h, m, s)
}

// describe renders an event's details on one line.
func describe(e Event) string {
	var parts []string
	if e.Object != "" {
		parts = append(parts, e.Object)
	}
	if e.Reason != "" {
		parts = append(parts, e.Reason)
	}
	var where []string
	for _, s := range []string{e.NodePool, e.InstanceType, e.CapacityType, e.Zone, e.ImageID} {
		if s != "" {
			where = append(where, s)
		}
	}
	if len(where) > 0 {
		parts = append(parts, "("+strings.Join(where, " ")+")")
	}
	if e.Message != "" {
		msg := e.Message
		if len(msg) > 220 {
			msg = msg[:217] + "..."
		}
		parts = append(parts, msg)
	}
	return strings.Join(parts, " ")
}
