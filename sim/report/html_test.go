package report

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// htmlDocument is a small run with a bit of everything the report draws:
// two NodePools and a node of none, both capacity types, a node the samples
// saw before the log registered it, the scenario's events (one with markup
// in its message), disruptions finished, abandoned, still going, from an
// interruption notice, and blocked (logged on the NodeClaim and its Node), and
// a NodeClaim whose launches failed until it was deleted.
func htmlDocument() *Document {
	at := func(m, s int) time.Time { return t0.Add(time.Duration(m)*time.Minute + time.Duration(s)*time.Second) }
	a := Event{NodePool: "default", NodeClaim: "default-a", Node: "node-a", InstanceType: "m6i.large", CapacityType: "spot", Zone: "us-east-1a"}
	b := Event{NodePool: "batch", NodeClaim: "batch-b", Node: "node-b", InstanceType: "c6i.xlarge", CapacityType: "on-demand", Zone: "us-east-1b"}
	c := Event{NodePool: "default", NodeClaim: "default-c", Node: "node-c", InstanceType: "m6i.large", CapacityType: "spot", Zone: "us-east-1c"}
	x := Event{NodePool: "default", NodeClaim: "default-x", Node: "node-x", InstanceType: "m6i.large", CapacityType: "spot", Zone: "us-east-1a"}
	f := Event{NodePool: "batch", NodeClaim: "batch-f", InstanceType: "c6i.xlarge", CapacityType: "on-demand", Zone: "us-east-1b"}
	ev := func(base Event, t time.Time, kind, object, reason, message string) Event {
		base.Time, base.Kind, base.Object, base.Reason, base.Message = t, kind, object, reason, message
		return base
	}
	d := &Document{SchemaVersion: SchemaVersion, Scenario: "report-test", Seed: 7, Start: t0, End: at(10, 0)}
	d.Events = []Event{
		ev(f, at(0, 10), KindNodeClaimCreated, "NodeClaim/batch-f", "", "cpu 2"),
		ev(f, at(0, 20), KindNodeClaimLaunchFailed, "NodeClaim/batch-f", "Unauthorized", "not allowed to iam:PassRole"),
		ev(a, at(0, 30), KindNodeRegistered, "Node/node-a", "", ""),
		ev(b, at(0, 40), KindNodeRegistered, "Node/node-b", "", ""),
		ev(Event{}, at(1, 0), KindScenarioEvent, "Deployment/shop/web", "Scale", `scaled to 5 <script>alert("x")</script> & <img src="https://example.com/x.png">`),
		ev(c, at(2, 0), KindNodeRegistered, "Node/node-c", "", ""),
		ev(a, at(3, 0), KindDisruptionStarted, "NodeClaim/default-a", ReasonDrifted, "disrupting via replace"),
		ev(c, at(3, 10), KindDisruptionBlocked, "NodeClaim/default-c", "", "NodePool default allows 0 more Drifted disruption(s) now"),
		ev(c, at(3, 10), KindDisruptionBlocked, "Node/node-c", "", "NodePool default allows 0 more Drifted disruption(s) now"),
		ev(a, at(4, 0), KindPodEvicted, "Pod/shop/web-1", "", ""),
		ev(f, at(4, 20), KindNodeClaimLaunchFailed, "NodeClaim/batch-f", "InsufficientCapacity", "no capacity"),
		ev(f, at(4, 30), KindNodeClaimDeleted, "NodeClaim/batch-f", "RegistrationTimeout", "not registered within 15m"),
		ev(a, at(5, 0), KindNodeDeleted, "Node/node-a", "", ""),
		ev(a, at(5, 0), KindDisruptionFinished, "NodeClaim/default-a", ReasonDrifted, ""),
		ev(a, at(5, 0), KindNodeClaimDeleted, "NodeClaim/default-a", ReasonDrifted, ""),
		ev(Event{}, at(6, 0), KindScenarioEvent, "", "SpotInterruption", "interrupted 1 spot node(s): node-x"),
		ev(x, at(6, 0), KindInterruptionReceived, "NodeClaim/default-x", "SpotInterrupted", "two minutes"),
		ev(x, at(6, 30), KindDisruptionFinished, "NodeClaim/default-x", ReasonInterrupted, ""),
		ev(b, at(7, 0), KindDisruptionStarted, "NodeClaim/batch-b", ReasonUnderutilized, "disrupting via delete"),
		ev(b, at(8, 0), KindDisruptionFinished, "NodeClaim/batch-b", ReasonUnderutilized, "abandoned"),
		ev(c, at(9, 0), KindDisruptionStarted, "NodeClaim/default-c", ReasonEmpty, "disrupting via delete"),
	}
	// static-1 is there from the start; a, b and c as registered; at 10m a
	// node the log has not registered yet.
	nodes := []int{1, 3, 4, 4, 4, 3, 3, 3, 3, 3, 4}
	for m, n := range nodes {
		d.Samples = append(d.Samples, Sample{Time: at(m, 0), Nodes: n, ReadyNodes: max(n-1, 0), PendingPods: 10 - m, RunningPods: m,
			CostPerHour: money(0.05 * float64(n)), Disrupting: 0})
	}
	d.Final = Final{
		Nodes: []Node{
			{Name: "node-b", NodePool: "batch", NodeClaim: "batch-b", InstanceType: "c6i.xlarge", CapacityType: "on-demand", Zone: "us-east-1b", Created: at(0, 40), Ready: true, Pods: 3},
			{Name: "node-c", NodePool: "default", NodeClaim: "default-c", InstanceType: "m6i.large", CapacityType: "spot", Zone: "us-east-1c", Created: at(2, 0), Ready: true, Pods: 2,
				Taints: []string{"karpenter.sh/disrupted:NoSchedule"}},
			{Name: "static-1", Created: t0.Add(-time.Hour), Ready: true, Pods: 1},
		},
		Pods:          PodCounts{Total: 12, Running: 10, Pending: 2},
		Unschedulable: []Unschedulable{{Pod: "shop/web-9", Reason: "no NodePool admits it"}, {Pod: "shop/web-8", Reason: "no NodePool admits it"}},
		NodeHours:     0.5, Cost: 0.123456,
		Disruptions: map[string]int{ReasonDrifted: 1, ReasonInterrupted: 1},
		NodePools:   []NodePool{{Name: "batch", Ready: true, Nodes: 1}, {Name: "default", Ready: true, Nodes: 1}, {Name: "gpu", Message: "NodeClassReady: NotFound: no EC2NodeClass gpu"}},
	}
	d.Warnings = []string{"scenario event 3 failed: <not found>"}
	return d
}

func renderHTML(t *testing.T, d *Document) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := d.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestHTMLIsDeterministic(t *testing.T) {
	first := renderHTML(t, htmlDocument())
	for i := 0; i < 5; i++ {
		if again := renderHTML(t, htmlDocument()); !bytes.Equal(first, again) {
			t.Fatalf("render %d differs from the first", i+2)
		}
	}
}

// TestHTMLIsSelfContained checks that the page would load nothing: no
// element that fetches, no attribute naming a URL, no url() or @import in
// the style sheet, and no markup from the run's own text.
func TestHTMLIsSelfContained(t *testing.T) {
	page := renderHTML(t, htmlDocument())
	fetching := map[string]bool{"script": true, "link": true, "img": true, "iframe": true, "frame": true, "object": true, "embed": true,
		"audio": true, "video": true, "source": true, "track": true, "base": true, "image": true, "use": true, "feimage": true, "form": true}
	z := html.NewTokenizer(bytes.NewReader(page))
	inStyle := false
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			if z.Err() != io.EOF {
				t.Fatal(z.Err())
			}
			break
		}
		tok := z.Token()
		switch tt {
		case html.StartTagToken, html.SelfClosingTagToken:
			if fetching[strings.ToLower(tok.Data)] {
				t.Errorf("element <%s> would load something", tok.Data)
			}
			for _, a := range tok.Attr {
				key, val := strings.ToLower(a.Key), strings.ToLower(a.Val)
				if key == "src" || key == "href" || key == "srcset" || key == "action" || key == "data" || key == "poster" || strings.HasPrefix(key, "on") {
					t.Errorf("<%s %s=%q>", tok.Data, a.Key, a.Val)
				}
				for _, bad := range []string{"http:", "https:", "//", "url(", "javascript:", "data:"} {
					if strings.Contains(val, bad) {
						t.Errorf("<%s %s=%q> names a URL", tok.Data, a.Key, a.Val)
					}
				}
			}
			inStyle = tok.Data == "style"
		case html.TextToken:
			if inStyle {
				css := strings.ToLower(tok.Data)
				for _, bad := range []string{"url(", "@import", "@font-face", "http:", "https:", "//"} {
					if strings.Contains(css, bad) {
						t.Errorf("the style sheet has %q", bad)
					}
				}
			}
		case html.EndTagToken:
			inStyle = false
		}
	}
	// The run's text is escaped: the scenario event's markup is text.
	if !bytes.Contains(page, []byte("&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; &lt;img src=&#34;https://example.com/x.png&#34;&gt;")) {
		t.Error("the scenario event's message is not escaped as text")
	}
	// Without URLs in the run's own text, none appears anywhere.
	clean := htmlDocument()
	for i, e := range clean.Events {
		if e.Kind == KindScenarioEvent {
			clean.Events[i].Message = "scaled"
		}
	}
	for _, bad := range []string{"http:", "https:", "//", "url(", "src=", "href="} {
		if i := bytes.Index(renderHTML(t, clean), []byte(bad)); i >= 0 {
			t.Errorf("the page has %q", bad)
		}
	}
}

// voidElements have no end tag.
var voidElements = map[string]bool{"area": true, "base": true, "br": true, "col": true, "embed": true, "hr": true, "img": true,
	"input": true, "link": true, "meta": true, "source": true, "track": true, "wbr": true}

// TestHTMLIsWellFormed checks that every element the page opens it closes,
// in order, and that an HTML5 parser finds the structure the page means.
func TestHTMLIsWellFormed(t *testing.T) {
	page := renderHTML(t, htmlDocument())
	if !bytes.HasPrefix(page, []byte("<!DOCTYPE html>\n")) {
		t.Error("the page does not start with the doctype")
	}
	z := html.NewTokenizer(bytes.NewReader(page))
	var stack []string
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			if z.Err() != io.EOF {
				t.Fatal(z.Err())
			}
			break
		}
		name, _ := z.TagName()
		tag := string(name)
		switch tt {
		case html.StartTagToken:
			if !voidElements[tag] {
				stack = append(stack, tag)
			}
		case html.EndTagToken:
			if len(stack) == 0 || stack[len(stack)-1] != tag {
				t.Fatalf("</%s> closes %v", tag, stack)
			}
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) > 0 {
		t.Fatalf("left open: %v", stack)
	}
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	var svgs []string
	walk(doc, func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "svg" {
			if n.Namespace != "svg" {
				t.Errorf("an svg element parsed in namespace %q", n.Namespace)
			}
			svgs = append(svgs, attr(n.Parent, "id"))
		}
	})
	want := "nodes-by-nodepool,nodes-by-capacity-type,cost-per-hour,pods,disruptions"
	if got := strings.Join(svgs, ","); got != want {
		t.Errorf("charts %s, want %s", got, want)
	}
	if title := text(find(doc, func(n *html.Node) bool { return n.DataAtom == atom.Title && n.Parent.DataAtom == atom.Head })); title != "report-test · stevedore simulate" {
		t.Errorf("title %q", title)
	}
}

// chartCounts is what each chart of htmlDocument must draw.
type chartCounts struct {
	areas, lines, bands, marks int
	series                     string
}

// TestHTMLCharts checks each chart's series and markers against the
// document.
func TestHTMLCharts(t *testing.T) {
	doc, err := html.Parse(bytes.NewReader(renderHTML(t, htmlDocument())))
	if err != nil {
		t.Fatal(err)
	}
	checkCharts(t, doc)
}

// checkCharts checks the charts of htmlDocument's page, as parsed from the
// page or from a browser's DOM.
func checkCharts(t *testing.T, doc *html.Node) {
	t.Helper()
	want := map[string]chartCounts{
		"nodes-by-nodepool":      {areas: 4, lines: 1, bands: 11, marks: 2, series: "batch,default,(no NodePool),(joining),Ready"},
		"nodes-by-capacity-type": {areas: 4, lines: 1, bands: 11, marks: 2, series: "on-demand,spot,(unknown),(joining),Ready"},
		"cost-per-hour":          {areas: 1, lines: 0, bands: 11, marks: 2, series: "USD per hour"},
		"pods":                   {areas: 0, lines: 2, bands: 11, marks: 2, series: "Running,Pending"},
	}
	for id, w := range want {
		svg := chartSVG(t, doc, id)
		got := chartCounts{
			areas: len(findAll(svg, hasClass("area"))),
			lines: len(findAll(svg, hasClass("line"))),
			bands: len(findAll(find(svg, hasClass("bands")), isElement("rect"))),
			marks: len(findAll(svg, hasClass("mark"))),
		}
		var names []string
		for _, p := range findAll(svg, func(n *html.Node) bool { return attr(n, "data-series") != "" }) {
			names = append(names, attr(p, "data-series"))
		}
		got.series = strings.Join(names, ",")
		if got != w {
			t.Errorf("%s: %+v, want %+v", id, got, w)
		}
		if labels := findAll(svg, func(n *html.Node) bool { return hasClass("axis-title")(n) }); len(labels) != 2 {
			t.Errorf("%s: %d axis titles, want 2", id, len(labels))
		}
	}

	// The stacks at 0:05: node-a is gone, static-1, b and c remain.
	bands := findAll(find(chartSVG(t, doc, "nodes-by-nodepool"), hasClass("bands")), isElement("rect"))
	if got := text(bands[5]); got != "00:05:00 (+0:05:00)\n3 nodes, 2 Ready\nbatch 1, default 1, (no NodePool) 1" {
		t.Errorf("band at 0:05: %q", got)
	}
	if got := text(bands[10]); !strings.HasSuffix(got, "(joining) 1") {
		t.Errorf("band at 0:10: %q", got)
	}

	// The disruption timeline: a lane for the scenario's events, one per
	// reason in a fixed order, one for the blocked disruptions (logged
	// twice, drawn once).
	tl := chartSVG(t, doc, "disruptions")
	type laneCounts struct {
		bars, points int
	}
	var lanes []string
	counts := map[string]laneCounts{}
	for _, l := range findAll(tl, hasClass("lane")) {
		name := attr(l, "data-lane")
		lanes = append(lanes, name)
		counts[name] = laneCounts{bars: len(findAll(l, hasClass("bar"))), points: len(findAll(l, hasClass("point")))}
	}
	if got, want := strings.Join(lanes, ","), "Scenario,Drifted,Empty,Underutilized,Interrupted,RegistrationTimeout,Launch failed,Blocked"; got != want {
		t.Errorf("lanes %s, want %s", got, want)
	}
	wantLanes := map[string]laneCounts{"Scenario": {0, 2}, "Drifted": {1, 0}, "Empty": {1, 0}, "Underutilized": {1, 0}, "Interrupted": {1, 0},
		"RegistrationTimeout": {1, 0}, "Launch failed": {0, 2}, "Blocked": {0, 1}}
	for name, w := range wantLanes {
		if counts[name] != w {
			t.Errorf("lane %s: %+v, want %+v", name, counts[name], w)
		}
	}
	if n := len(findAll(tl, hasClass("mark"))); n != 2 {
		t.Errorf("timeline: %d scenario marks, want 2", n)
	}
	// Each bar names its node on hover.
	for name, node := range map[string]string{"Drifted": "node-a", "Empty": "node-c", "Underutilized": "node-b", "Interrupted": "node-x"} {
		l := find(tl, func(n *html.Node) bool { return attr(n, "data-lane") == name })
		b := find(l, hasClass("bar"))
		if title := text(find(b, isElement("title"))); !strings.Contains(title, "node "+node) {
			t.Errorf("%s bar's title %q lacks its node", name, title)
		}
	}
	checks := map[string]string{
		"Underutilized":       "abandoned",
		"Empty":               "still going at the end",
		"Interrupted":         "00:06:00 → 00:06:30",
		"RegistrationTimeout": "NodeClaim batch-f (batch c6i.xlarge on-demand us-east-1b), no node\ncreated 00:00:10 → 00:04:30 (4m20s) deleted\nnot registered within 15m",
	}
	for name, want := range checks {
		l := find(tl, func(n *html.Node) bool { return attr(n, "data-lane") == name })
		if title := text(find(find(l, hasClass("bar")), isElement("title"))); !strings.Contains(title, want) {
			t.Errorf("%s bar's title %q lacks %q", name, title, want)
		}
	}

	// The event log: node events in the table, pod events under details.
	log := find(doc, func(n *html.Node) bool { return attr(n, "id") == "event-log" })
	if rows := findAll(find(log, hasClass("log")), isElement("tr")); len(rows) != 1+20 {
		t.Errorf("%d rows in the node log, want a header and 20", len(rows))
	}
	if rows := findAll(find(log, isElement("details")), isElement("tr")); len(rows) != 1+1 {
		t.Errorf("%d rows in the pod log, want a header and 1", len(rows))
	}
}

func TestHTMLSummary(t *testing.T) {
	page := string(renderHTML(t, htmlDocument()))
	for _, want := range []string{
		"Seed 7 · Mon 5 Jan 2026 00:00:00 to 00:10:00 UTC · 10m0s of virtual time",
		`<div class="value">$0.1235</div>`,
		"NodePool gpu is not Ready: NodeClassReady: NotFound: no EC2NodeClass gpu",
		"<li>2: no NodePool admits it</li>",
		"scenario event 3 failed: &lt;not found&gt;",
		"Drifted 1, Interrupted 1",
		`<span class="when">00:06:00 (+0:06:00)</span> SpotInterruption: interrupted 1 spot node(s): node-x`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

func TestHTMLWithoutSamplesOrEvents(t *testing.T) {
	d := &Document{Scenario: "empty", Start: t0, End: t0.Add(time.Hour), Events: []Event{}, Samples: []Sample{}}
	page := string(renderHTML(t, d))
	for _, want := range []string{"No samples were taken.", "No scenario events, disruptions or failed NodeClaims.", "No nodes."} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	d.Samples = []Sample{{Time: t0, PendingPods: 3}, {Time: t0.Add(time.Minute), PendingPods: 3}}
	page = string(renderHTML(t, d))
	if strings.Count(page, "No node registered during the run.") != 2 || !strings.Contains(page, "No instance ran.") {
		t.Error("the node and cost charts do not say that nothing ran")
	}
}

func TestHTMLLogIsCapped(t *testing.T) {
	d := htmlDocument()
	for i := 0; i < maxLogRows+5; i++ {
		d.Events = append(d.Events, Event{Time: d.End, Kind: KindPodBound, Object: fmt.Sprintf("Pod/shop/p-%d", i)})
	}
	page := string(renderHTML(t, d))
	if !strings.Contains(page, "… and 6 more; the JSON output") || !strings.Contains(page, fmt.Sprintf("Pod events (%d)", maxLogRows+6)) {
		t.Error("the pod log is not capped with a note")
	}
}

func TestTimeTicks(t *testing.T) {
	for _, tc := range []struct {
		start    time.Time
		span     time.Duration
		n        int
		first    string
		last     string
		interval string
	}{
		{t0, time.Hour, 13, "00:00", "01:00", "00:05"},
		{t0.Add(7 * time.Minute), time.Hour, 12, "00:10", "01:05", "00:15"},
		{t0, 24 * time.Hour, 13, "Jan 5", "Jan 6", "02:00"},
		{t0, 7 * 24 * time.Hour, 8, "Jan 5", "Jan 12", "Jan 6"},
		{t0, 90 * time.Second, 10, "00:00:00", "00:01:30", "00:00:10"},
	} {
		ticks := newTimeAxis(tc.start, tc.start.Add(tc.span)).ticks()
		if len(ticks) != tc.n || ticks[0].Label != tc.first || ticks[len(ticks)-1].Label != tc.last || ticks[1].Label != tc.interval {
			t.Errorf("%s from %s: %d ticks %v", tc.span, tc.start.Format("15:04"), len(ticks), ticks)
		}
	}
}

func TestValueAxis(t *testing.T) {
	for _, tc := range []struct {
		max       float64
		whole     bool
		top, step float64
	}{
		{0, true, 1, 1}, {0, false, 0.01, 0.01}, {3, true, 4, 1}, {6, true, 8, 2}, {10, true, 12, 2}, {0.0735, false, 0.08, 0.02}, {487, true, 600, 100},
	} {
		a := newValueAxis(tc.max, tc.whole, nil)
		if a.top != tc.top || a.step != tc.step {
			t.Errorf("axis for %v: top %v step %v, want %v %v", tc.max, a.top, a.step, tc.top, tc.step)
		}
	}
}

func TestStepPath(t *testing.T) {
	xs := []float64{0, 10, 20}
	if got := stepPath(xs, 30, []float64{5, 5, 8}, nil); got != "M0 5H10H20V8H30" {
		t.Errorf("line %q", got)
	}
	if got := stepPath(xs, 30, []float64{5, 4, 4}, []float64{9, 9, 7}); got != "M0 5H10V4H20H30V7H20V9H10H0Z" {
		t.Errorf("area %q", got)
	}
}

func walk(n *html.Node, f func(*html.Node)) {
	if n == nil {
		return
	}
	f(n)
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, f)
	}
}

func findAll(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	walk(n, func(n *html.Node) {
		if n.Type == html.ElementNode && match(n) {
			out = append(out, n)
		}
	})
	return out
}

func find(n *html.Node, match func(*html.Node) bool) *html.Node {
	if all := findAll(n, match); len(all) > 0 {
		return all[0]
	}
	return nil
}

func attr(n *html.Node, key string) string {
	if n == nil {
		return ""
	}
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasClass(c string) func(*html.Node) bool {
	return func(n *html.Node) bool {
		for _, f := range strings.Fields(attr(n, "class")) {
			if f == c {
				return true
			}
		}
		return false
	}
}

func isElement(name string) func(*html.Node) bool {
	return func(n *html.Node) bool { return n.Data == name }
}

func text(n *html.Node) string {
	var b strings.Builder
	walk(n, func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
	})
	return b.String()
}

// chartSVG is the svg element of the chart section with the given id.
func chartSVG(t *testing.T, doc *html.Node, id string) *html.Node {
	t.Helper()
	sec := find(doc, func(n *html.Node) bool { return attr(n, "id") == id })
	svg := find(sec, isElement("svg"))
	if svg == nil {
		t.Fatalf("no chart %s", id)
	}
	return svg
}
