// Package chaos runs a scenario under random faults and checks that
// stevedore keeps its safety promises through them.
//
// Inject adds to a loaded scenario events drawn from a seed: controller
// restarts, capacity shortages, spot interruptions, node failures and
// failing AWS calls (throttling, 5xx answers, permission errors),
// spread over the run, with a quiet tail at the end in which the cluster
// settles. Check then looks at the run's report (package sim/report) for
// violations of the invariants: no instance leaked, no PodDisruptionBudget
// broken by an eviction, no NodePool disruption budget exceeded, and every
// pod running at the end or pending for a reason the scenario expects.
// Both are pure functions: the same scenario and seed give the same events,
// and the same document the same verdict.
package chaos

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/sim/scenario"
)

// World is what a fault may pick from.
type World struct {
	Zones         []string
	InstanceTypes []string
	// Window is the part of the run faults fall in, from the start; a
	// fault that lasts (a capacity shortage) ends within it.
	Window time.Duration
}

// Fault is a kind of fault the generator injects: Weight is its share of
// the events, Event draws one at a time at (within w.Window).
type Fault struct {
	Kind   string
	Weight int
	Event  func(rng *rand.Rand, w World, at time.Duration) scenario.Event
}

// Faults are the kinds of faults Inject draws from. A new kind is one entry
// here.
var Faults = []Fault{
	{Kind: "restartController", Weight: 3, Event: func(*rand.Rand, World, time.Duration) scenario.Event {
		return scenario.Event{RestartController: &struct{}{}}
	}},
	{Kind: "spotInterruption", Weight: 3, Event: func(rng *rand.Rand, _ World, _ time.Duration) scenario.Event {
		return scenario.Event{SpotInterruption: &scenario.Selection{Count: 1 + rng.IntN(2),
			NodeSelector: map[string]string{wellknown.LabelCapacityType: fake.CapacityTypeSpot}}}
	}},
	{Kind: "nodeFailure", Weight: 2, Event: func(*rand.Rand, World, time.Duration) scenario.Event {
		return scenario.Event{NodeFailure: &scenario.NodeFailure{Selection: scenario.Selection{Count: 1}}}
	}},
	{Kind: "insufficientCapacity", Weight: 2, Event: func(rng *rand.Rand, w World, at time.Duration) scenario.Event {
		ice := &scenario.InsufficientCapacity{CapacityType: pick(rng, []string{fake.CapacityTypeSpot, fake.CapacityTypeSpot, fake.CapacityTypeOnDemand, ""})}
		if len(w.Zones) > 0 && rng.IntN(2) == 0 {
			ice.Zones = []string{pick(rng, w.Zones)}
		}
		if len(w.InstanceTypes) > 0 && rng.IntN(2) == 0 {
			ice.InstanceTypes = []string{pick(rng, w.InstanceTypes)}
		}
		// 5 to 30 minutes, over by the end of the window.
		d := time.Duration(5+rng.IntN(26)) * time.Minute
		d = max(min(d, w.Window-at), time.Minute)
		ice.For = scenario.Duration(d.String())
		return scenario.Event{InsufficientCapacity: ice}
	}},
	{Kind: "awsFault", Weight: 3, Event: func(rng *rand.Rand, w World, at time.Duration) scenario.Event {
		f := &scenario.AWSFault{
			Operations: []string{pick(rng, faultOperations)},
			Error:      pick(rng, faultErrors),
		}
		if rng.IntN(2) == 0 {
			f.Times = 1 + rng.IntN(5)
		} else {
			// 1 to 15 minutes, over by the end of the window.
			d := time.Duration(1+rng.IntN(15)) * time.Minute
			d = max(min(d, w.Window-at), time.Minute)
			f.For = scenario.Duration(d.String())
		}
		return scenario.Event{AWSFault: f}
	}},
}

// faultOperations are the AWS calls an awsFault fault breaks: the ones a
// launch, a termination, a garbage collection, an interruption and a
// NodeClass's readiness depend on.
var faultOperations = []string{
	"CreateFleet", "CreateFleet", "DescribeInstances", "TerminateInstances",
	"CreateLaunchTemplate", "DescribeSubnets", "DescribeImages", "ReceiveMessage",
	"DescribeInstanceTypeOfferings", "DescribeSpotPriceHistory",
}

// faultErrors are the failures it draws from: the service's throttling, its
// 500 and 503 answers, and a permission error.
var faultErrors = []string{
	scenario.FaultThrottling, scenario.FaultThrottling, scenario.FaultServerError,
	scenario.FaultUnavailable, "UnauthorizedOperation",
}

func pick(rng *rand.Rand, s []string) string { return s[rng.IntN(len(s))] }

// Generate returns the faults for a run of the given duration from seed,
// as timed events in time order, indexed after the scenario's own first
// events (first): one per 15 minutes of the window (at least four), drawn
// from Faults by weight, none in the first five minutes and none in the
// quiet tail (45 minutes, or a third of a shorter run) in which the
// cluster settles.
func Generate(seed uint64, duration time.Duration, w World, first int) []scenario.TimedEvent {
	faults := Faults
	tail := min(45*time.Minute, duration/3)
	// Nothing happens in the first five minutes: the cluster comes up.
	start := min(5*time.Minute, duration/10)
	w.Window = duration - tail
	if w.Window <= start {
		return nil
	}
	n := max(4, int((w.Window-start)/(15*time.Minute)))
	total := 0
	for _, f := range faults {
		total += f.Weight
	}
	if total == 0 {
		return nil
	}
	rng := rand.New(rand.NewPCG(seed, 0xc4a05))
	out := make([]scenario.TimedEvent, 0, n)
	for i := range n {
		// Whole seconds, so that the events print as the scenario would
		// write them.
		at := start + time.Duration(rng.Int64N(int64((w.Window-start)/time.Second)))*time.Second
		x := rng.IntN(total)
		var f Fault
		for _, f = range faults {
			if x < f.Weight {
				break
			}
			x -= f.Weight
		}
		ev := f.Event(rng, w, at)
		ev.At = scenario.Duration(at.String())
		te := scenario.TimedEvent{At: at, Index: first + i, Kind: f.Kind, Event: ev}
		switch {
		case ev.InsufficientCapacity != nil:
			te.For, _ = time.ParseDuration(string(ev.InsufficientCapacity.For))
		case ev.AWSFault != nil && ev.AWSFault.For != "":
			te.For, _ = time.ParseDuration(string(ev.AWSFault.For))
		}
		out = append(out, te)
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].At < out[b].At })
	return out
}

// Inject adds the faults drawn from seed to run, which it also sets to run
// with that seed, and returns them.
func Inject(run *scenario.Run, seed uint64) []scenario.TimedEvent {
	run.Seed = seed
	w := World{Zones: run.AWS.Zones, InstanceTypes: run.AWS.InstanceTypes}
	faults := Generate(seed, run.Duration, w, len(run.Events))
	run.Events = append(run.Events, faults...)
	sort.SliceStable(run.Events, func(a, b int) bool { return run.Events[a].At < run.Events[b].At })
	return faults
}

// ParseSeeds reads a list of seeds and ranges, such as "1-20,42".
func ParseSeeds(s string) ([]uint64, error) {
	var out []uint64
	seen := map[uint64]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.ParseUint(strings.TrimSpace(lo), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a seed or a range of seeds such as 1-20", part)
		}
		b := a
		if isRange {
			if b, err = strconv.ParseUint(strings.TrimSpace(hi), 10, 64); err != nil || b < a {
				return nil, fmt.Errorf("%q is not a range of seeds such as 1-20", part)
			}
		}
		if b-a >= 1_000_000 {
			return nil, fmt.Errorf("%q has more than a million seeds", part)
		}
		for x := a; ; x++ {
			if !seen[x] {
				seen[x] = true
				out = append(out, x)
			}
			if x == b {
				break
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no seeds in %q", s)
	}
	return out, nil
}
