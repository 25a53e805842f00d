package runner

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stevedore-autoscaler/stevedore/sim/report"
	"github.com/stevedore-autoscaler/stevedore/sim/scenario"
)

// story runs the shipped scenario at path, as `stevedore simulate path`
// does, and returns its document. Unless the tests are short it runs the
// scenario a second time and fails when the two runs' JSON differs.
func story(t *testing.T, path string) *report.Document {
	t.Helper()
	first := simulate(t, path)
	if testing.Short() {
		t.Log("short: not running the scenario a second time")
	} else if second := simulate(t, path); !bytes.Equal(first, second) {
		dir := t.TempDir()
		_ = os.WriteFile(filepath.Join(dir, "first.json"), first, 0o644)
		_ = os.WriteFile(filepath.Join(dir, "second.json"), second, 0o644)
		t.Fatalf("two runs of %s with the same seed differ (see %s)", path, dir)
	}
	return decode(t, first)
}

// runLoaded runs a scenario that is already loaded (and perhaps changed by
// the test) and returns its document.
func runLoaded(t *testing.T, run *scenario.Run) *report.Document {
	t.Helper()
	return decode(t, runJSON(t, run, testScheme(t)))
}

// since is how long after the start of the run t is.
func since(doc *report.Document, t time.Time) time.Duration { return t.Sub(doc.Start) }

// index returns the position of the first event that matches, or -1. The
// log is in the order things happened, also within one instant.
func index(doc *report.Document, match func(report.Event) bool) int {
	for i, e := range doc.Events {
		if match(e) {
			return i
		}
	}
	return -1
}

// claimsOf returns the NodeClaims of the events of a kind, in log order,
// each once.
func claimsOf(events []report.Event) []string {
	var out []string
	seen := map[string]bool{}
	for _, e := range events {
		if e.NodeClaim != "" && !seen[e.NodeClaim] {
			seen[e.NodeClaim] = true
			out = append(out, e.NodeClaim)
		}
	}
	return out
}

// podsOn returns the pods bound to node and not deleted at the moment just
// before at.
func podsOn(doc *report.Document, node string, at time.Time) map[string]bool {
	pods := map[string]bool{}
	for _, e := range doc.Events {
		if !e.Time.Before(at) {
			break
		}
		if e.Node != node {
			continue
		}
		switch e.Kind {
		case report.KindPodBound:
			pods[e.Object] = true
		case report.KindPodDeleted:
			delete(pods, e.Object)
		}
	}
	return pods
}

// maxInFlight is the largest number of disruptions for one of reasons under
// way at once: from DisruptionStarted until the instance is terminating
// (when the budget stops counting the node).
func maxInFlight(doc *report.Document, reasons ...string) int {
	inFlight := map[string]bool{}
	most := 0
	for _, e := range doc.Events {
		switch e.Kind {
		case report.KindDisruptionStarted:
			for _, r := range reasons {
				if e.Reason == r {
					inFlight[e.NodeClaim] = true
				}
			}
			most = max(most, len(inFlight))
		case report.KindInstanceTerminated:
			delete(inFlight, e.NodeClaim)
		}
	}
	return most
}
