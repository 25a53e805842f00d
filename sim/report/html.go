package report

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

//go:embed report.html.tmpl
var pageTemplateText string

var pageTemplate = template.Must(template.New("report").Parse(pageTemplateText))

// maxLogRows is how many rows each part of the HTML event log shows at most;
// the JSON has them all.
const maxLogRows = 2000

// WriteHTML writes the run as one self-contained HTML page: a summary, charts
// of the nodes by NodePool and by capacity type, the cost per hour, the
// pending and running pods and the disruptions, the event log and the nodes
// at the end. The charts are inline SVG drawn here, the style sheet is inline,
// and the page loads nothing: it opens from a file, offline, and needs no
// JavaScript. The same document gives the same bytes.
func (d *Document) WriteHTML(w io.Writer) error {
	var b bytes.Buffer
	if err := pageTemplate.Execute(&b, newPage(d)); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}

// page is what the template renders.
type page struct {
	Scenario  string
	Seed      uint64
	Start     string
	End       string
	Duration  string
	Cards     []card
	Scenarios []scenarioItem
	Problems  []string // NodePools not Ready
	Pending   []countedReason
	Warnings  []string
	Charts    []*chart
	Timeline  *timelineChart
	NodeLog   logSection
	PodLog    logSection
	Nodes     []nodeRow
}

type card struct {
	Label, Value, Note string
}

type scenarioItem struct {
	N                   int
	Clock, Offset, What string
}

type countedReason struct {
	Count  int
	Reason string
}

type logSection struct {
	Rows  []logRow
	Total int
	More  int
}

type logRow struct {
	Clock, Offset, Full     string
	Kind, Class             string
	Object, Reason, Message string
	Where, Image            string
}

type nodeRow struct {
	Name, NodePool, InstanceType, CapacityType, Zone, ImageID string
	Created                                                   string
	Ready                                                     bool
	Pods                                                      int
	Taints                                                    []string
}

// chart is a time series chart: stacked areas, lines, the scenario's events
// as numbered vertical marks, and a band per sample whose title gives the
// values there.
type chart struct {
	ID, Title, Caption, YTitle string
	Width, Height              string
	Left, Right, Top, Bottom   string // the plot's edges
	PlotHeight                 string
	MidX, MidY                 string // where the axis titles go
	YLabelX, YTitleX, MarkY    string
	XTitleY, XLabelY           string
	XTicks, YTicks             []tick
	Areas, Lines               []series
	Bands                      []band
	Marks                      []mark
	Legend                     []legendItem
	Empty                      string
}

type series struct {
	Name, Class, D string
	Dashed         bool
}

type band struct {
	X, W, Title string
}

type mark struct {
	X, Label, Title string
	Labelled        bool
}

type legendItem struct {
	Name, Class string
	Line        bool
	Dashed      bool
}

// timelineChart is the disruption timeline: a lane of scenario events, a
// lane per disruption reason with a bar per node from the decision to the
// node's deletion, a lane per reason NodeClaims were deleted for a failure,
// a lane of failed launches and one of blocked disruptions.
type timelineChart struct {
	Width, Height            string
	Left, Right, Top, Bottom string
	MidX, LabelX, MarkY      string
	PlotWidth                string
	XTitleY, XLabelY         string
	XTicks                   []tick
	Lanes                    []lane
	Marks                    []mark
	Empty                    string
}

type lane struct {
	Label, Note, Class string
	Top, Mid, Height   string
	Shade              bool // every other lane has a background
	Bars               []bar
	Points             []point
}

type bar struct {
	X, Y, W, H, Title string
	Open, Abandoned   bool
	// Label names the node beside the bar, when there is room for it.
	Label, LabelX, LabelY string
}

type point struct {
	D, Title string
}

// Colours are classes c0…c9 of the style sheet, a categorical palette.
const (
	colBlue, colOrange, colRed, colTeal, colGreen = "c0", "c1", "c2", "c3", "c4"
	colYellow, colPurple, colPink, colBrown       = "c5", "c6", "c7", "c8"
	colGrey, colLight, colAmber                   = "c9", "c10", "c11"
)

// poolColours are the colours NodePools take in turn (grey is kept for
// nodes of no NodePool).
var poolColours = []string{colBlue, colOrange, colTeal, colPurple, colGreen, colPink, colBrown, colYellow, colRed}

var capacityColours = map[string]string{"on-demand": colBlue, "spot": colOrange, "reserved": colGreen}

// reasonOrder and reasonColours fix the disruption lanes' order and colours.
var reasonOrder = []string{ReasonDrifted, ReasonExpired, ReasonEmpty, ReasonUnderutilized, ReasonInterrupted, ReasonUnhealthy}

var reasonColours = map[string]string{
	ReasonDrifted: colBlue, ReasonExpired: colBrown, ReasonEmpty: colTeal, ReasonUnderutilized: colGreen,
	ReasonInterrupted: colOrange, ReasonUnhealthy: colRed,
}

// kindClasses group the log's kinds for their badge colours.
var kindClasses = map[string]string{
	KindScenarioEvent:         "k-scenario",
	KindNodeClaimCreated:      "k-up",
	KindNodeClaimLaunched:     "k-up",
	KindNodeRegistered:        "k-up",
	KindNodeInitialized:       "k-up",
	KindNodeClaimDeleted:      "k-down",
	KindNodeDeleted:           "k-down",
	KindInstanceTerminated:    "k-down",
	KindDisruptionStarted:     "k-disruption",
	KindDisruptionFinished:    "k-disruption",
	KindDisruptionBlocked:     "k-blocked",
	KindUnconsolidatable:      "k-blocked",
	KindInterruptionReceived:  "k-disruption",
	KindNodeClaimLaunchFailed: "k-failure",
	KindPodUnschedulable:      "k-failure",
	KindPodBound:              "k-pod",
	KindPodEvicted:            "k-pod",
	KindPodDeleted:            "k-pod",
}

func newPage(d *Document) *page {
	ax := newTimeAxis(d.Start, d.End)
	p := &page{
		Scenario: d.Scenario,
		Seed:     d.Seed,
		Start:    d.Start.UTC().Format("Mon 2 Jan 2006 15:04:05"),
		End:      endLabel(d.Start, d.End),
		Duration: d.End.Sub(d.Start).String(),
		Warnings: d.Warnings,
	}
	var scenarioEvents []Event
	for _, e := range d.Events {
		if e.Kind == KindScenarioEvent {
			scenarioEvents = append(scenarioEvents, e)
			p.Scenarios = append(p.Scenarios, scenarioItem{N: len(scenarioEvents), Clock: clock(e.Time), Offset: Offset(e.Time.Sub(d.Start)),
				What: scenarioWhat(e)})
		}
	}
	marks := scenarioMarks(ax, d.Start, scenarioEvents)

	p.Cards = summaryCards(d)
	for _, np := range d.Final.NodePools {
		if !np.Ready {
			p.Problems = append(p.Problems, fmt.Sprintf("NodePool %s is not Ready: %s", np.Name, np.Message))
		}
	}
	byReason := map[string]int{}
	for _, u := range d.Final.Unschedulable {
		byReason[u.Reason]++
	}
	for _, r := range sortedKeys(byReason) {
		p.Pending = append(p.Pending, countedReason{Count: byReason[r], Reason: r})
	}

	spans := nodeSpans(d)
	p.Charts = []*chart{
		nodesChart(d, ax, marks, spans, "nodes-by-nodepool", "Nodes by NodePool",
			"Nodes that exist at each sample, stacked by NodePool; the dashed line counts those Ready.",
			func(s nodeSpan) string { return s.pool }, poolSeries),
		nodesChart(d, ax, marks, spans, "nodes-by-capacity-type", "Nodes by capacity type",
			"The same nodes, stacked by capacity type.",
			func(s nodeSpan) string { return s.capacity }, capacitySeries),
		costChart(d, ax, marks),
		podsChart(d, ax, marks),
	}
	p.Timeline = disruptionTimeline(d, ax, marks)
	p.NodeLog, p.PodLog = eventLog(d)
	for _, n := range d.Final.Nodes {
		p.Nodes = append(p.Nodes, nodeRow{Name: n.Name, NodePool: n.NodePool, InstanceType: n.InstanceType, CapacityType: n.CapacityType,
			Zone: n.Zone, ImageID: n.ImageID, Created: clock(n.Created), Ready: n.Ready, Pods: n.Pods, Taints: n.Taints})
	}
	return p
}

// endLabel renders the end of the run, without the date when it is the
// start's.
func endLabel(start, end time.Time) string {
	s, e := start.UTC(), end.UTC()
	if s.Year() == e.Year() && s.YearDay() == e.YearDay() {
		return e.Format("15:04:05")
	}
	return e.Format("Mon 2 Jan 2006 15:04:05")
}

func summaryCards(d *Document) []card {
	ready, peakNodes, peakCost, peakPending := 0, 0, 0.0, 0
	for _, n := range d.Final.Nodes {
		if n.Ready {
			ready++
		}
	}
	for _, s := range d.Samples {
		peakNodes = max(peakNodes, s.Nodes)
		peakCost = max(peakCost, s.CostPerHour)
		peakPending = max(peakPending, s.PendingPods)
	}
	disrupted, parts := 0, []string{}
	for _, r := range sortedKeys(d.Final.Disruptions) {
		disrupted += d.Final.Disruptions[r]
		parts = append(parts, fmt.Sprintf("%s %d", r, d.Final.Disruptions[r]))
	}
	disruptionNote := "none"
	if len(parts) > 0 {
		disruptionNote = strings.Join(parts, ", ")
	}
	pods := d.Final.Pods
	return []card{
		{Label: "Cost", Value: usd(d.Final.Cost), Note: fmt.Sprintf("peak %s per hour", usd(peakCost))},
		{Label: "Node-hours", Value: strconv.FormatFloat(math.Round(d.Final.NodeHours*100)/100, 'f', 2, 64), Note: fmt.Sprintf("over %s", d.End.Sub(d.Start))},
		{Label: "Nodes at the end", Value: strconv.Itoa(len(d.Final.Nodes)), Note: fmt.Sprintf("%d ready, peak %d", ready, peakNodes)},
		{Label: "Pods at the end", Value: fmt.Sprintf("%d running", pods.Running), Note: fmt.Sprintf("%d pending (peak %d), %d in all", pods.Pending, peakPending, pods.Total)},
		{Label: "Disruptions", Value: strconv.Itoa(disrupted), Note: disruptionNote},
	}
}

// scenarioWhat renders what a scenario event did: "object · reason: message".
func scenarioWhat(e Event) string {
	var parts []string
	for _, s := range []string{e.Object, e.Reason} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	s := strings.Join(parts, " · ")
	if e.Message != "" {
		if s != "" {
			s += ": "
		}
		s += e.Message
	}
	return s
}

// scenarioMarks numbers the scenario's events for the charts, labelling a
// mark only when it is clear of the previous label.
func scenarioMarks(ax timeAxis, start time.Time, events []Event) []mark {
	var out []mark
	lastLabel := math.Inf(-1)
	for i, e := range events {
		x := ax.x(e.Time)
		m := mark{X: num(x), Label: strconv.Itoa(i + 1), Title: fmt.Sprintf("%d. %s (+%s) %s", i+1, clock(e.Time), Offset(e.Time.Sub(start)), scenarioWhat(e))}
		if x-lastLabel >= 16 {
			m.Labelled = true
			lastLabel = x
		}
		out = append(out, m)
	}
	return out
}

// nodeSpan is a node's life as the event log tells it: from its
// registration (or the start, for a node that was there already) to its
// deletion (zero while it lives).
type nodeSpan struct {
	name, pool, capacity string
	from, to             time.Time
}

func (s nodeSpan) alive(t time.Time) bool {
	return !s.from.After(t) && (s.to.IsZero() || t.Before(s.to))
}

func eventNode(e Event) string {
	if e.Node != "" {
		return e.Node
	}
	return strings.TrimPrefix(e.Object, "Node/")
}

func nodeSpans(d *Document) []nodeSpan {
	var spans []nodeSpan
	open := map[string]int{}
	seen := map[string]bool{}
	for _, e := range d.Events {
		switch e.Kind {
		case KindNodeRegistered:
			name := eventNode(e)
			if _, ok := open[name]; ok || name == "" {
				continue
			}
			open[name], seen[name] = len(spans), true
			spans = append(spans, nodeSpan{name: name, pool: e.NodePool, capacity: e.CapacityType, from: e.Time})
		case KindNodeDeleted:
			name := eventNode(e)
			if i, ok := open[name]; ok {
				spans[i].to = e.Time
				delete(open, name)
			} else if !seen[name] && name != "" {
				// A node that was there from the start.
				seen[name] = true
				spans = append(spans, nodeSpan{name: name, pool: e.NodePool, capacity: e.CapacityType, from: d.Start, to: e.Time})
			}
		}
	}
	for _, n := range d.Final.Nodes {
		if seen[n.Name] {
			continue
		}
		from := n.Created
		if from.Before(d.Start) {
			from = d.Start
		}
		spans = append(spans, nodeSpan{name: n.Name, pool: n.NodePool, capacity: n.CapacityType, from: from})
	}
	return spans
}

const (
	noNodePool  = "(no NodePool)"
	unknownType = "(unknown)"
	otherNodes  = "(joining)"
)

// seriesDef is one series of a stacked chart: the key its nodes have, its
// name in the legend and its colour.
type seriesDef struct {
	key, name, class string
}

// poolSeries orders NodePools by name, nodes of no NodePool last.
func poolSeries(keys []string) []seriesDef {
	var out []seriesDef
	for _, k := range keys {
		if k != "" {
			out = append(out, seriesDef{k, k, poolColours[len(out)%len(poolColours)]})
		}
	}
	if contains(keys, "") {
		out = append(out, seriesDef{"", noNodePool, colGrey})
	}
	return out
}

// capacitySeries orders capacity types on-demand, reserved, spot, others by
// name, unknown last.
func capacitySeries(keys []string) []seriesDef {
	var out []seriesDef
	for _, k := range []string{"on-demand", "reserved", "spot"} {
		if contains(keys, k) {
			out = append(out, seriesDef{k, k, capacityColours[k]})
		}
	}
	for _, k := range keys {
		if k != "" && capacityColours[k] == "" {
			out = append(out, seriesDef{k, k, colPink})
		}
	}
	if contains(keys, "") {
		out = append(out, seriesDef{"", unknownType, colGrey})
	}
	return out
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// sampleXs are the samples' positions, and where the last one ends.
func sampleXs(d *Document, ax timeAxis) ([]float64, float64) {
	xs := make([]float64, len(d.Samples))
	for i, s := range d.Samples {
		xs[i] = ax.x(s.Time)
	}
	return xs, ax.x(d.End)
}

func newChart(id, title, caption, yTitle string, ax timeAxis, marks []mark) *chart {
	return &chart{
		ID: id, Title: title, Caption: caption, YTitle: yTitle,
		Width: num(chartWidth), Height: num(chartHeight),
		Left: num(plotLeft), Right: num(plotLeft + plotWidth), Top: num(plotTop), Bottom: num(chartHeight - plotBottom),
		PlotHeight: num(plotHeight), MidX: num(plotLeft + plotWidth/2.0), MidY: num(plotTop + plotHeight/2.0),
		YLabelX: num(plotLeft - 8), YTitleX: num(plotLeft - 84), MarkY: num(plotTop - 12),
		XLabelY: num(chartHeight - plotBottom + 18), XTitleY: num(chartHeight - 8),
		XTicks: ax.ticks(), Marks: marks,
	}
}

const plotHeight = chartHeight - plotTop - plotBottom

// bands returns a hover band per sample, titled with the time and what
// describe says of sample i.
func sampleBands(d *Document, xs []float64, xEnd float64, describe func(i int) string) []band {
	out := make([]band, len(xs))
	for i := range xs {
		next := xEnd
		if i+1 < len(xs) {
			next = xs[i+1]
		}
		t := d.Samples[i].Time
		out[i] = band{X: num(xs[i]), W: num(math.Max(next-xs[i], 0.5)),
			Title: fmt.Sprintf("%s (+%s)\n%s", clock(t), Offset(t.Sub(d.Start)), describe(i))}
	}
	return out
}

func nodesChart(d *Document, ax timeAxis, marks []mark, spans []nodeSpan, id, title, caption string,
	key func(nodeSpan) string, order func([]string) []seriesDef) *chart {
	c := newChart(id, title, caption, "nodes", ax, marks)
	if len(d.Samples) == 0 {
		c.Empty = "No samples were taken."
		return c
	}
	keySet := map[string]bool{}
	for _, s := range spans {
		keySet[key(s)] = true
	}
	defs := order(sortedKeys(keySet))
	index := map[string]int{}
	for i, def := range defs {
		index[def.key] = i
	}
	// counts[k][i]: nodes of series k alive at sample i; the last series
	// counts the nodes a sample saw that the log has not registered yet.
	counts := make([][]float64, len(defs)+1)
	for k := range counts {
		counts[k] = make([]float64, len(d.Samples))
	}
	joining := false
	for i, smp := range d.Samples {
		total := 0
		for _, s := range spans {
			if s.alive(smp.Time) {
				counts[index[key(s)]][i]++
				total++
			}
		}
		if rest := smp.Nodes - total; rest > 0 {
			counts[len(defs)][i] = float64(rest)
			joining = true
		}
	}
	if joining {
		defs = append(defs, seriesDef{name: otherNodes, class: colLight})
	} else {
		counts = counts[:len(defs)]
	}
	peak := 0.0
	for i := range d.Samples {
		sum := 0.0
		for k := range counts {
			sum += counts[k][i]
		}
		peak = max(peak, sum, float64(d.Samples[i].Nodes))
	}
	if peak == 0 {
		c.Empty = "No node registered during the run."
	}
	yax := newValueAxis(peak, true, func(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) })
	c.YTicks = yax.ticks(plotHeight)
	xs, xEnd := sampleXs(d, ax)
	lower := make([]float64, len(xs))
	cum := make([]float64, len(xs))
	for i := range lower {
		lower[i] = yax.y(0, plotHeight)
	}
	for k, def := range defs {
		upper := make([]float64, len(xs))
		for i := range xs {
			cum[i] += counts[k][i]
			upper[i] = yax.y(cum[i], plotHeight)
		}
		c.Areas = append(c.Areas, series{Name: def.name, Class: def.class, D: stepPath(xs, xEnd, upper, lower)})
		c.Legend = append(c.Legend, legendItem{Name: def.name, Class: def.class})
		lower = upper
	}
	readyYs := make([]float64, len(xs))
	for i, s := range d.Samples {
		readyYs[i] = yax.y(float64(s.ReadyNodes), plotHeight)
	}
	c.Lines = append(c.Lines, series{Name: "Ready", Class: "ink", D: stepPath(xs, xEnd, readyYs, nil), Dashed: true})
	c.Legend = append(c.Legend, legendItem{Name: "Ready", Class: "ink", Line: true, Dashed: true})
	c.Bands = sampleBands(d, xs, xEnd, func(i int) string {
		var parts []string
		for k, def := range defs {
			if counts[k][i] > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", def.name, int(counts[k][i])))
			}
		}
		s := d.Samples[i]
		line := fmt.Sprintf("%d nodes, %d Ready", s.Nodes, s.ReadyNodes)
		if s.Disrupting > 0 {
			line += fmt.Sprintf(", %d being disrupted", s.Disrupting)
		}
		if len(parts) > 0 {
			line += "\n" + strings.Join(parts, ", ")
		}
		return line
	})
	return c
}

func costChart(d *Document, ax timeAxis, marks []mark) *chart {
	c := newChart("cost-per-hour", "Cost per hour",
		fmt.Sprintf("What the running instances cost at each sample, in USD per hour; %s in all for %.2f node-hours.", usd(d.Final.Cost), d.Final.NodeHours),
		"USD per hour", ax, marks)
	if len(d.Samples) == 0 {
		c.Empty = "No samples were taken."
		return c
	}
	peak := 0.0
	for _, s := range d.Samples {
		peak = max(peak, s.CostPerHour)
	}
	if peak == 0 {
		c.Empty = "No instance ran."
	}
	yax := newValueAxis(peak, false, nil)
	dec := decimals(yax.step)
	yax.format = func(v float64) string { return "$" + strconv.FormatFloat(v, 'f', dec, 64) }
	c.YTicks = yax.ticks(plotHeight)
	xs, xEnd := sampleXs(d, ax)
	upper, lower := make([]float64, len(xs)), make([]float64, len(xs))
	for i, s := range d.Samples {
		upper[i], lower[i] = yax.y(s.CostPerHour, plotHeight), yax.y(0, plotHeight)
	}
	c.Areas = []series{{Name: "USD per hour", Class: colPurple, D: stepPath(xs, xEnd, upper, lower)}}
	c.Legend = []legendItem{{Name: "USD per hour", Class: colPurple}}
	c.Bands = sampleBands(d, xs, xEnd, func(i int) string {
		s := d.Samples[i]
		return fmt.Sprintf("%s per hour, %d nodes", usd(s.CostPerHour), s.Nodes)
	})
	return c
}

func podsChart(d *Document, ax timeAxis, marks []mark) *chart {
	c := newChart("pods", "Pending and running pods",
		"Pods Running and Pending (not yet bound, or bound and starting) at each sample.", "pods", ax, marks)
	if len(d.Samples) == 0 {
		c.Empty = "No samples were taken."
		return c
	}
	peak := 0
	for _, s := range d.Samples {
		peak = max(peak, s.RunningPods, s.PendingPods)
	}
	yax := newValueAxis(float64(peak), true, func(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) })
	c.YTicks = yax.ticks(plotHeight)
	xs, xEnd := sampleXs(d, ax)
	running, pending := make([]float64, len(xs)), make([]float64, len(xs))
	for i, s := range d.Samples {
		running[i], pending[i] = yax.y(float64(s.RunningPods), plotHeight), yax.y(float64(s.PendingPods), plotHeight)
	}
	c.Lines = []series{
		{Name: "Running", Class: colGreen, D: stepPath(xs, xEnd, running, nil)},
		{Name: "Pending", Class: colRed, D: stepPath(xs, xEnd, pending, nil)},
	}
	c.Legend = []legendItem{{Name: "Running", Class: colGreen, Line: true}, {Name: "Pending", Class: colRed, Line: true}}
	c.Bands = sampleBands(d, xs, xEnd, func(i int) string {
		s := d.Samples[i]
		return fmt.Sprintf("%d running, %d pending", s.RunningPods, s.PendingPods)
	})
	return c
}

// disruption is a node being taken away, from the decision (or the
// interruption notice) to the deletion of its NodeClaim.
type disruption struct {
	reason, nodeClaim, node, detail string
	from, to                        time.Time
	open, abandoned                 bool
	// failed is set for a NodeClaim deleted for a failure, not disrupted.
	failed bool
	note   string
}

// disruptionSpans pairs the log's DisruptionStarted and DisruptionFinished
// events per NodeClaim. An interruption has no DisruptionStarted: it starts
// with the notice.
func disruptionSpans(d *Document) []disruption {
	var out []disruption
	open := map[string]int{}
	notice := map[string]time.Time{}
	closeAt := func(i int, t time.Time) {
		out[i].to, out[i].open = t, false
	}
	for _, e := range d.Events {
		switch e.Kind {
		case KindInterruptionReceived:
			if interruptionReasons[e.Reason] {
				if _, ok := notice[e.NodeClaim]; !ok {
					notice[e.NodeClaim] = e.Time
				}
			}
		case KindDisruptionStarted:
			if i, ok := open[e.NodeClaim]; ok {
				closeAt(i, e.Time)
				out[i].note = "became " + e.Reason
			}
			open[e.NodeClaim] = len(out)
			out = append(out, disruption{reason: e.Reason, nodeClaim: e.NodeClaim, node: e.Node, detail: where(e), from: e.Time, open: true, note: e.Message})
		case KindDisruptionFinished:
			i, ok := open[e.NodeClaim]
			if !ok {
				from := e.Time
				if t, ok := notice[e.NodeClaim]; ok {
					from = t
				}
				i = len(out)
				out = append(out, disruption{reason: e.Reason, nodeClaim: e.NodeClaim, node: e.Node, detail: where(e), from: from})
			}
			closeAt(i, e.Time)
			delete(open, e.NodeClaim)
			if e.Message == "abandoned" {
				out[i].abandoned = true
			}
			if out[i].node == "" {
				out[i].node = e.Node
			}
		}
	}
	for i := range out {
		if out[i].open {
			out[i].to = d.End
		}
	}
	return out
}

// where renders an event's NodePool, instance type, capacity type and zone.
func where(e Event) string {
	var parts []string
	for _, s := range []string{e.NodePool, e.InstanceType, e.CapacityType, e.Zone} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, " ")
}

const (
	rowHeight  = 18 // a sub-row of a lane: one bar
	lanePad    = 8
	maxSubrows = 8
)

func disruptionTimeline(d *Document, ax timeAxis, marks []mark) *timelineChart {
	tl := &timelineChart{Width: num(chartWidth), Left: num(plotLeft), Right: num(plotLeft + plotWidth), Top: num(plotTop),
		MidX: num(plotLeft + plotWidth/2.0), LabelX: num(plotLeft - 10), MarkY: num(plotTop - 12), PlotWidth: num(plotWidth),
		XTicks: ax.ticks(), Marks: marks}
	y := float64(plotTop)
	addLane := func(l lane, rows int) *lane {
		h := float64(rows*rowHeight + 2*lanePad)
		l.Top, l.Mid, l.Height = num(y), num(y+h/2), num(h)
		l.Shade = len(tl.Lanes)%2 == 1
		tl.Lanes = append(tl.Lanes, l)
		y += h
		return &tl.Lanes[len(tl.Lanes)-1]
	}

	// The scenario's events.
	var scenario []point
	for _, e := range d.Events {
		if e.Kind == KindScenarioEvent {
			scenario = append(scenario, point{Title: fmt.Sprintf("%d. %s (+%s) %s", len(scenario)+1, clock(e.Time), Offset(e.Time.Sub(d.Start)), scenarioWhat(e)),
				D: diamond(ax.x(e.Time), y+lanePad+rowHeight/2)})
		}
	}
	if len(scenario) > 0 {
		addLane(lane{Label: "Scenario", Class: "ink", Points: scenario}, 1)
	}

	// A lane per disruption reason.
	byReason := map[string][]disruption{}
	for _, x := range disruptionSpans(d) {
		byReason[x.reason] = append(byReason[x.reason], x)
	}
	reasons := append([]string{}, reasonOrder...)
	for _, r := range sortedKeys(byReason) {
		if !contains(reasons, r) {
			reasons = append(reasons, r)
		}
	}
	for _, r := range reasons {
		if list := byReason[r]; len(list) > 0 {
			colour := reasonColours[r]
			if colour == "" {
				colour = colPink
			}
			barLane(ax, addLane, y, r, colour, list)
		}
	}

	// A lane per reason a controller deleted NodeClaims for, other than a
	// disruption (a registration or launch timeout, a vanished instance).
	failures := failedClaims(d)
	for _, r := range sortedKeys(failures) {
		barLane(ax, addLane, y, r, colRed, failures[r])
	}

	// Launches that failed, once per NodeClaim and reason at an instant.
	var launches []point
	seenLaunch := map[string]bool{}
	for _, e := range d.Events {
		if e.Kind != KindNodeClaimLaunchFailed {
			continue
		}
		k := e.Time.String() + "\x00" + e.NodeClaim + "\x00" + e.Reason
		if seenLaunch[k] {
			continue
		}
		seenLaunch[k] = true
		launches = append(launches, point{Title: fmt.Sprintf("%s (+%s) NodeClaim %s: %s\n%s", clock(e.Time), Offset(e.Time.Sub(d.Start)), e.NodeClaim, e.Reason, e.Message),
			D: tickMark(ax.x(e.Time), y+lanePad, rowHeight)})
	}
	if len(launches) > 0 {
		addLane(lane{Label: "Launch failed", Note: count(len(launches), "time", "times"), Class: colRed, Points: launches}, 1)
	}

	// Disruptions the budgets or the pods held back; the log records each
	// on the NodeClaim and on its Node, so one mark stands for both.
	var blocked []point
	seen := map[string]bool{}
	for _, e := range d.Events {
		if e.Kind != KindDisruptionBlocked {
			continue
		}
		who := e.NodeClaim
		if who == "" {
			who = e.Object
		}
		k := e.Time.String() + "\x00" + who + "\x00" + e.Message
		if seen[k] {
			continue
		}
		seen[k] = true
		subject := e.Object
		if e.NodeClaim != "" {
			subject = "NodeClaim " + e.NodeClaim
			if e.Node != "" {
				subject += ", node " + e.Node
			}
		}
		blocked = append(blocked, point{Title: fmt.Sprintf("%s (+%s) %s\n%s", clock(e.Time), Offset(e.Time.Sub(d.Start)), subject, e.Message),
			D: tickMark(ax.x(e.Time), y+lanePad, rowHeight)})
	}
	if len(blocked) > 0 {
		addLane(lane{Label: "Blocked", Note: count(len(blocked), "time", "times"), Class: colAmber, Points: blocked}, 1)
	}
	if len(tl.Lanes) == 0 {
		tl.Empty = "No scenario events, disruptions or failed NodeClaims."
		addLane(lane{}, 1)
	}
	tl.Bottom = num(y)
	tl.XLabelY = num(y + 18)
	tl.XTitleY = num(y + plotBottom - 8)
	tl.Height = num(y + plotBottom)
	return tl
}

// barLane adds a lane of bars with addLane, one per span, packed into
// sub-rows so that spans that overlap stay visible, each labelled with its
// node where there is room. top is where the lane starts.
func barLane(ax timeAxis, addLane func(lane, int) *lane, top float64, label, colour string, list []disruption) {
	rowEnds := []float64{}
	rowOf := make([]int, len(list))
	for i, x := range list {
		x0 := ax.x(x.from)
		row := -1
		for j, end := range rowEnds {
			if end <= x0 {
				row = j
				break
			}
		}
		if row < 0 {
			if len(rowEnds) < maxSubrows {
				row = len(rowEnds)
				rowEnds = append(rowEnds, 0)
			} else {
				row = len(rowEnds) - 1
			}
		}
		rowOf[i] = row
		rowEnds[row] = math.Max(ax.x(x.to), x0+4) + 2
	}
	// Where each bar's row is taken again: the next bar in its row, or the
	// end of the plot.
	free := make([]float64, len(list))
	last := map[int]int{}
	for i := range list {
		free[i] = plotLeft + plotWidth
		if j, ok := last[rowOf[i]]; ok {
			free[j] = ax.x(list[i].from)
		}
		last[rowOf[i]] = i
	}
	noun, nouns := "node", "nodes"
	if list[0].failed {
		noun, nouns = "NodeClaim", "NodeClaims"
	}
	l := addLane(lane{Label: label, Note: count(len(list), noun, nouns), Class: colour}, len(rowEnds))
	for i, x := range list {
		x0, x1 := ax.x(x.from), ax.x(x.to)
		status := fmt.Sprintf("%s → %s (%s)", clock(x.from), clock(x.to), x.to.Sub(x.from).Round(time.Second))
		switch {
		case x.open:
			status = fmt.Sprintf("%s → still going at the end", clock(x.from))
		case x.abandoned:
			status += ", abandoned"
		case x.failed:
			status = "created " + status + " deleted"
		}
		title := fmt.Sprintf("%s: node %s\nNodeClaim %s (%s)\n%s", label, dash(x.node), x.nodeClaim, x.detail, status)
		if x.failed && x.node == "" {
			title = fmt.Sprintf("%s: NodeClaim %s (%s), no node\n%s", label, x.nodeClaim, x.detail, status)
		}
		if x.note != "" {
			title += "\n" + x.note
		}
		row := top + lanePad + float64(rowOf[i])*rowHeight
		b := bar{X: num(x0), Y: num(row + 2), W: num(math.Max(x1-x0, 4)), H: num(rowHeight - 4), Title: title, Open: x.open, Abandoned: x.abandoned}
		name := x.node
		if name == "" {
			name = x.nodeClaim
		}
		if end := math.Max(x1, x0+4) + 5; end+labelWidth(name) <= free[i]-4 {
			b.Label, b.LabelX, b.LabelY = name, num(end), num(row+rowHeight/2+4)
		}
		l.Bars = append(l.Bars, b)
	}
}

// failedClaims are the NodeClaims that controllers deleted for something
// other than a disruption, by the reason logged with the deletion: spans from
// the NodeClaim's creation to its deletion.
func failedClaims(d *Document) map[string][]disruption {
	created := map[string]time.Time{}
	disrupted := map[string]bool{}
	out := map[string][]disruption{}
	for _, e := range d.Events {
		switch e.Kind {
		case KindNodeClaimCreated:
			if _, ok := created[e.NodeClaim]; !ok {
				created[e.NodeClaim] = e.Time
			}
		case KindDisruptionFinished:
			disrupted[e.NodeClaim] = true
		case KindNodeClaimDeleted:
			if e.Reason == "" || disrupted[e.NodeClaim] || contains(reasonOrder, e.Reason) {
				continue
			}
			from, ok := created[e.NodeClaim]
			if !ok {
				from = e.Time
			}
			out[e.Reason] = append(out[e.Reason], disruption{reason: e.Reason, nodeClaim: e.NodeClaim, node: e.Node, detail: where(e),
				from: from, to: e.Time, failed: true, note: e.Message})
		}
	}
	return out
}

// labelWidth is about how wide a bar's label is drawn (12px text).
func labelWidth(s string) float64 {
	return float64(len(s)) * 6.8
}

// diamond is the outline of a scenario event's marker.
func diamond(x, y float64) string {
	return fmt.Sprintf("M%s %sl6 7-6 7-6-7z", num(x), num(y-7))
}

// tickMark is the outline of a blocked disruption's marker: a thin bar.
func tickMark(x, top, h float64) string {
	return fmt.Sprintf("M%s %sh3v%sh-3z", num(x-1.5), num(top+1), num(h-2))
}

func eventLog(d *Document) (nodes, pods logSection) {
	for _, e := range d.Events {
		sec := &nodes
		if strings.HasPrefix(e.Kind, "Pod") {
			sec = &pods
		}
		sec.Total++
		if len(sec.Rows) >= maxLogRows {
			sec.More++
			continue
		}
		class := kindClasses[e.Kind]
		if class == "" {
			class = "k-other"
		}
		sec.Rows = append(sec.Rows, logRow{Clock: clock(e.Time), Offset: Offset(e.Time.Sub(d.Start)), Full: e.Time.UTC().Format(time.RFC3339Nano),
			Kind: e.Kind, Class: class, Object: e.Object, Reason: e.Reason, Message: e.Message, Where: where(e), Image: e.ImageID})
	}
	return nodes, pods
}

// count renders n with the noun in the singular or the plural.
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// usd renders an amount of dollars: cents from a dollar up, four decimals
// below.
func usd(v float64) string {
	if math.Abs(v) >= 1 {
		return "$" + strconv.FormatFloat(v, 'f', 2, 64)
	}
	return "$" + strconv.FormatFloat(v, 'f', 4, 64)
}

// clock renders a time as UTC hh:mm:ss.
func clock(t time.Time) string {
	return t.UTC().Format("15:04:05")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
