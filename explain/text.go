package explain

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// maxListed is how many instance types or pods a text line lists before it
// says how many more there are; JSON lists them all.
const maxListed = 8

// WriteText renders e for a terminal: the verdict and summary, the reasons
// with their codes, and the details of its kind.
func (e *Explanation) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%s %s: %s\n", e.Kind, e.Name, e.Verdict)
	fmt.Fprintf(bw, "  %s\n", e.Summary)
	fmt.Fprintf(bw, "  (as of %s)\n", e.Time.UTC().Format(time.RFC3339))
	if len(e.Reasons) > 0 {
		fmt.Fprintln(bw, "\nReasons:")
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		for _, r := range e.Reasons {
			fmt.Fprintf(tw, "  %s\t%s\n", r.Code, e.reasonText(r))
		}
		tw.Flush()
	}
	switch {
	case e.Pod != nil:
		e.podText(bw)
	case e.Node != nil:
		e.nodeText(bw)
	case e.NodePool != nil:
		e.nodePoolText(bw)
	}
	for _, n := range e.Notes {
		fmt.Fprintf(bw, "\nNote: %s\n", n)
	}
	return bw.Flush()
}

func (e *Explanation) reasonText(r Reason) string {
	var scope []string
	if r.NodePool != "" {
		scope = append(scope, "NodePool "+r.NodePool)
	}
	if r.Method != "" {
		scope = append(scope, r.Method)
	}
	s := r.Message
	if len(scope) > 0 {
		s = strings.Join(scope, ", ") + ": " + s
	}
	if r.Until != nil {
		s += fmt.Sprintf(" [until %s, %s]", r.Until.UTC().Format(time.RFC3339), e.in(*r.Until))
	}
	return s
}

// in says how far t is from the explanation's time.
func (e *Explanation) in(t time.Time) string {
	d := t.Sub(e.Time).Round(time.Second)
	if d < 0 {
		return duration(-d) + " ago"
	}
	return "in " + duration(d)
}

// duration renders d as Go does, except that two days or more read as days
// and hours: "29d0h" rather than "696h0m0s".
func duration(d time.Duration) string {
	if d < 48*time.Hour {
		return d.String()
	}
	days := d / (24 * time.Hour)
	hours := (d - days*24*time.Hour) / time.Hour
	return fmt.Sprintf("%dd%dh", days, hours)
}

func (e *Explanation) at(t *time.Time) string {
	return fmt.Sprintf("%s (%s)", t.UTC().Format(time.RFC3339), e.in(*t))
}

func table(w io.Writer, title string, rows [][2]string) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s:\n", title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintf(tw, "  %s\t%s\n", r[0], r[1])
	}
	tw.Flush()
}

func list(items []string) string {
	if len(items) <= maxListed {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s (+%d more)", strings.Join(items[:maxListed], ", "), len(items)-maxListed)
}

func (e *Explanation) podText(w io.Writer) {
	p := e.Pod
	var rows [][2]string
	if p.Phase != "" {
		rows = append(rows, [2]string{"phase", p.Phase})
	}
	if p.Node != "" {
		node := p.Node
		if p.InFlight {
			node += " (in-flight NodeClaim)"
		}
		rows = append(rows, [2]string{"node", node})
	}
	if p.NodePool != "" && p.NewNodeClaim == nil {
		rows = append(rows, [2]string{"NodePool", p.NodePool})
	}
	if p.Pending > 0 {
		rows = append(rows, [2]string{"pending pods", fmt.Sprintf("%d packed together, as the provisioner packs them", p.Pending)})
	}
	table(w, "Pod", rows)
	if c := p.NewNodeClaim; c != nil {
		table(w, "New NodeClaim", newNodeClaimRows(c))
	}
}

func newNodeClaimRows(c *NewNodeClaim) [][2]string {
	return [][2]string{
		{"NodePool", c.NodePool},
		{"instance types", fmt.Sprintf("%d, cheapest first: %s", len(c.InstanceTypes), list(c.InstanceTypes))},
		{"capacity types", strings.Join(c.CapacityTypes, ", ")},
		{"zones", strings.Join(c.Zones, ", ")},
		{"price", fmt.Sprintf("$%.4f/h (cheapest available offering)", c.PricePerHour)},
		{"requests", c.Requests + " (pods plus DaemonSet overhead)"},
		{"pods", list(c.Pods)},
	}
}

func (e *Explanation) nodeText(w io.Writer) {
	d := e.Node
	var rows [][2]string
	if d.NodeClaim != "" {
		rows = append(rows, [2]string{"NodeClaim", d.NodeClaim})
	}
	if d.Managed {
		rows = append(rows, [2]string{"NodePool", d.NodePool})
	} else {
		rows = append(rows, [2]string{"NodePool", "(not managed by stevedore)"})
	}
	offering := strings.Join(nonEmpty(d.InstanceType, d.CapacityType), " ")
	if d.Zone != "" {
		offering += " in " + d.Zone
	}
	if d.PricePerHour != nil {
		offering += fmt.Sprintf(" at $%.4f/h", *d.PricePerHour)
	} else if d.InstanceType != "" {
		offering += ", price unknown"
	}
	if strings.TrimSpace(offering) != "" {
		rows = append(rows, [2]string{"offering", strings.TrimSpace(offering)})
	}
	rows = append(rows, [2]string{"pods to move", fmt.Sprint(d.Pods)})
	if !d.Initialized {
		rows = append(rows, [2]string{"initialized", "no"})
	}
	if c := d.Consolidation; c != nil {
		state := "yes"
		if !c.Consolidatable {
			state = "not yet"
			if c.At == nil {
				state = "no"
			}
		}
		v := state + ": " + c.Message
		if c.At != nil && !c.Consolidatable {
			v += " (" + e.in(*c.At) + ")"
		}
		rows = append(rows, [2]string{"consolidatable", v})
	}
	if c := d.Drifted; c != nil {
		v := c.Reason
		if c.Since != nil {
			v += " since " + e.at(c.Since)
		}
		if c.Message != "" {
			v += ": " + c.Message
		}
		rows = append(rows, [2]string{"drifted", v + "; replaced within the Drifted budget"})
	}
	if c := d.Disruption; c != nil {
		v := c.Reason
		if c.Since != nil {
			v += " since " + e.at(c.Since)
		}
		if c.Message != "" {
			v += ": " + c.Message
		}
		rows = append(rows, [2]string{"disruption", v})
	}
	if d.ExpiresAt != nil {
		rows = append(rows, [2]string{"expires", e.at(d.ExpiresAt) + "; expiry is forceful: do-not-disrupt, PDBs and budgets do not stop it"})
	}
	if h := d.Health; h != nil {
		v := h.Message
		if h.RepairAt != nil {
			v += "; repair at " + e.at(h.RepairAt)
		}
		rows = append(rows, [2]string{"health", v})
	}
	table(w, "Node", rows)
	if len(d.After) > 0 {
		fmt.Fprintln(w, "\nCommands for other nodes that come first:")
		for i, c := range d.After {
			fmt.Fprintf(w, "  %d. %s\n", i+1, c)
		}
	}
	if c := d.Command; c != nil {
		fmt.Fprintf(w, "\nCommand:\n  %s\n", c.Log)
		if c.SavingsPerHour > 0 {
			fmt.Fprintf(w, "  saves $%.4f/h\n", c.SavingsPerHour)
		}
		for i := range c.Replacements {
			table(w, fmt.Sprintf("Replacement %d", i+1), newNodeClaimRows(&c.Replacements[i]))
		}
	}
}

func (e *Explanation) nodePoolText(w io.Writer) {
	d := e.NodePool
	launch := "no"
	if d.Launchable {
		launch = fmt.Sprintf("yes (%d instance types)", d.InstanceTypes)
	}
	rows := [][2]string{
		{"launchable", launch},
		{"weight", fmt.Sprint(d.Weight)},
		{"consolidation", fmt.Sprintf("%s, consolidateAfter %s", d.ConsolidationPolicy, d.ConsolidateAfter)},
		{"nodes", fmt.Sprint(d.Nodes)},
	}
	if d.Ready != nil {
		v := d.Ready.Reason
		if d.Ready.Message != "" {
			v += ": " + d.Ready.Message
		}
		rows = append(rows, [2]string{"ready", v})
	}
	table(w, "NodePool", rows)

	var limits [][2]string
	for _, l := range d.Limits {
		v := l.Used + " used"
		if l.Limit != "" {
			v += " of " + l.Limit
			if l.Reached {
				v += " (reached)"
			}
		} else {
			v += " (no limit)"
		}
		limits = append(limits, [2]string{l.Resource, v})
	}
	table(w, "Limits", limits)

	var budgets [][2]string
	for _, b := range d.Budgets {
		v := b.Description
		switch {
		case b.Invalid != "":
			v += "  invalid: " + b.Invalid
		case b.Active:
			v += "  active"
		default:
			v += "  inactive"
		}
		budgets = append(budgets, [2]string{fmt.Sprintf("#%d", b.Index), v})
	}
	table(w, "Budgets", budgets)

	var allowed [][2]string
	for _, a := range d.Allowed {
		by := "no budget applies"
		if a.Budget != nil {
			by = fmt.Sprintf("budget #%d", *a.Budget)
		}
		allowed = append(allowed, [2]string{a.Reason, fmt.Sprintf("%s remaining (%s allowed of %d node(s) by %s, %d disrupting)", a.Remaining, a.Allowed, a.Nodes, by, a.Disrupting)})
	}
	table(w, "Allowed disruptions now", allowed)
	if d.NextBudgetChange != nil {
		fmt.Fprintf(w, "\nNext budget change: %s\n", e.at(d.NextBudgetChange))
	} else {
		fmt.Fprintln(w, "\nNext budget change: none (no budget has a schedule)")
	}
}
