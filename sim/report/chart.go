package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The geometry of the HTML report's charts, in SVG user units. Every chart
// shares the same width and left margin, so that their time axes line up
// when the page stacks them.
const (
	chartWidth  = 1200
	chartHeight = 300
	plotLeft    = 160 // room for the y-axis title, tick labels and timeline lane names
	plotRight   = 24
	plotTop     = 26 // room for the scenario event numbers
	plotBottom  = 46 // room for the time labels and the axis title
	plotWidth   = chartWidth - plotLeft - plotRight
)

// timeAxis maps the run's time onto the horizontal axis.
type timeAxis struct {
	start, end time.Time
}

func newTimeAxis(start, end time.Time) timeAxis {
	if !end.After(start) {
		end = start.Add(time.Minute)
	}
	return timeAxis{start: start, end: end}
}

// x is the horizontal position of t, clamped to the plot.
func (a timeAxis) x(t time.Time) float64 {
	f := float64(t.Sub(a.start)) / float64(a.end.Sub(a.start))
	return plotLeft + math.Max(0, math.Min(1, f))*plotWidth
}

// tickSteps are the spacings the time axis chooses from.
var tickSteps = []time.Duration{
	10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour,
	24 * time.Hour, 2 * 24 * time.Hour, 7 * 24 * time.Hour,
}

// maxTimeTicks is how many labelled times the axis shows at most.
const maxTimeTicks = 13

// ticks returns the labelled times: round multiples of a step in UTC, at
// most maxTimeTicks of them. Labels are clock times, except that a tick at
// midnight of a run over several days, or every tick when the step is a day
// or more, shows the date instead.
func (a timeAxis) ticks() []tick {
	span := a.end.Sub(a.start)
	step := tickSteps[len(tickSteps)-1]
	for _, s := range tickSteps {
		if span/s <= maxTimeTicks-1 {
			step = s
			break
		}
	}
	multiDay := a.start.UTC().YearDay() != a.end.UTC().YearDay() || span > 24*time.Hour
	first := a.start.UTC().Truncate(step)
	if first.Before(a.start) {
		first = first.Add(step)
	}
	var out []tick
	for t := first; !t.After(a.end); t = t.Add(step) {
		u := t.UTC()
		label := u.Format("15:04")
		if step < time.Minute {
			label = u.Format("15:04:05")
		}
		if step >= 24*time.Hour || (multiDay && u.Hour() == 0 && u.Minute() == 0 && u.Second() == 0) {
			label = u.Format("Jan 2")
		}
		out = append(out, tick{Pos: num(a.x(t)), Label: label, Anchor: "middle"})
	}
	// A long label at the right edge would run off the chart.
	if n := len(out); n > 0 && a.x(a.end)-a.x(first.Add(time.Duration(n-1)*step)) < float64(len(out[n-1].Label))*4 {
		out[n-1].Anchor = "end"
	}
	return out
}

// tick is a labelled position on an axis.
type tick struct {
	Pos    string
	Label  string
	Anchor string // text-anchor of the label
}

// valueAxis maps a quantity onto the vertical axis of a chart's plot.
type valueAxis struct {
	top    float64 // the value at the top of the plot
	step   float64
	format func(float64) string
}

// newValueAxis returns an axis from zero to a round value above max (with a
// little room, so that a series at its peak stays clear of the top), in
// three to six round steps; whole numbers for counts.
func newValueAxis(max float64, whole bool, format func(float64) string) valueAxis {
	if max <= 0 || math.IsNaN(max) || math.IsInf(max, 0) {
		max = 0
	}
	max *= 1.06
	step := niceStep(max / 6)
	if whole && step < 1 {
		step = 1
	}
	if max == 0 {
		step = 1
		if !whole {
			step = 0.01
		}
	}
	top := math.Ceil(max/step-1e-9) * step
	if top == 0 {
		top = step
	}
	return valueAxis{top: top, step: step, format: format}
}

// niceStep is the smallest of 1, 2 and 5 times a power of ten at least v.
func niceStep(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v*(1-1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// y is the vertical position of v in a plot of the given height.
func (a valueAxis) y(v float64, height float64) float64 {
	return plotTop + height - v/a.top*height
}

func (a valueAxis) ticks(height float64) []tick {
	var out []tick
	n := int(math.Round(a.top / a.step))
	for i := 0; i <= n; i++ {
		v := float64(i) * a.step
		out = append(out, tick{Pos: num(a.y(v, height)), Label: a.format(v), Anchor: "end"})
	}
	return out
}

// decimals is how many decimals tell the ticks of a step apart.
func decimals(step float64) int {
	if step >= 1 {
		return 0
	}
	return int(math.Ceil(-math.Log10(step) - 1e-9))
}

// num renders a coordinate with one decimal, without a trailing ".0".
func num(v float64) string {
	s := strconv.FormatFloat(math.Round(v*10)/10, 'f', 1, 64)
	s = strings.TrimSuffix(s, ".0")
	if s == "-0" {
		s = "0"
	}
	return s
}

// stepPath is the outline of a step function between a lower and an upper
// line: sample i's values hold from xs[i] to xs[i+1], and the last one to
// xEnd. With lower nil, it is the upper line alone (for a line series).
func stepPath(xs []float64, xEnd float64, upper, lower []float64) string {
	if len(xs) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "M%s %s", num(xs[0]), num(upper[0]))
	for i := range xs {
		next := xEnd
		if i+1 < len(xs) {
			next = xs[i+1]
		}
		if i > 0 && upper[i] != upper[i-1] {
			fmt.Fprintf(&b, "V%s", num(upper[i]))
		}
		if i+1 == len(xs) || next != xs[i] {
			fmt.Fprintf(&b, "H%s", num(next))
		}
	}
	if lower == nil {
		return b.String()
	}
	last := len(xs) - 1
	fmt.Fprintf(&b, "V%s", num(lower[last]))
	for i := last; i >= 0; i-- {
		if i < last && lower[i] != lower[i+1] {
			fmt.Fprintf(&b, "V%s", num(lower[i]))
		}
		fmt.Fprintf(&b, "H%s", num(xs[i]))
	}
	b.WriteString("Z")
	return b.String()
}
