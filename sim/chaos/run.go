package chaos

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/stevedore-autoscaler/stevedore/sim/report"
	"github.com/stevedore-autoscaler/stevedore/sim/scenario"
)

// Result is the verdict on one seed.
type Result struct {
	Seed uint64
	// Faults are the events injected.
	Faults []scenario.TimedEvent
	// SHA256 is the hash of the report's JSON.
	SHA256     string
	Violations []Violation
}

// Config runs seeds of one scenario.
type Config struct {
	// Load returns the scenario, freshly loaded: each run gets its own.
	Load func() (*scenario.Run, error)
	// Simulate runs a scenario to its end.
	Simulate func(*scenario.Run) (*report.Document, error)
}

// RunSeed runs the scenario with seed's faults twice, compares the two
// reports' bytes and checks the first.
func (c Config) RunSeed(seed uint64) (Result, error) {
	res := Result{Seed: seed}
	var expect CheckOptions
	var first *report.Document
	for i := range 2 {
		run, err := c.Load()
		if err != nil {
			return res, err
		}
		if expect.ExpectedPending, err = ExpectedPending(run.Annotations); err != nil {
			return res, err
		}
		faults := Inject(run, seed)
		doc, err := c.Simulate(run)
		if err != nil {
			return res, fmt.Errorf("seed %d: %w", seed, err)
		}
		sum, err := hashJSON(doc)
		if err != nil {
			return res, err
		}
		if i == 0 {
			first, res.Faults, res.SHA256 = doc, faults, sum
			continue
		}
		if sum != res.SHA256 {
			res.Violations = append(res.Violations, Violation{NotDeterministic,
				fmt.Sprintf("two runs of seed %d gave different reports (sha256 %s and %s)", seed, short(res.SHA256), short(sum))})
		}
	}
	res.Violations = append(Check(first, expect), res.Violations...)
	return res, nil
}

func short(h string) string { return h[:12] }

func hashJSON(doc *report.Document) (string, error) {
	var b bytes.Buffer
	if err := doc.WriteJSON(&b); err != nil {
		return "", err
	}
	sum := sha256.Sum256(b.Bytes())
	return hex.EncodeToString(sum[:]), nil
}

// Summary tallies results.
type Summary struct {
	Runs, Failed, Violations int
}

// WriteLine prints a seed's verdict: one line, then its violations
// indented below it.
func WriteLine(w io.Writer, scenarioName string, r Result) error {
	verdict := "ok"
	if len(r.Violations) > 0 {
		verdict = "FAIL"
	}
	if _, err := fmt.Fprintf(w, "%s seed %d: %s, %d faults, %d violations, sha256 %s\n", scenarioName, r.Seed, verdict, len(r.Faults), len(r.Violations), short(r.SHA256)); err != nil {
		return err
	}
	for _, v := range r.Violations {
		if _, err := fmt.Fprintf(w, "  %s\n", v); err != nil {
			return err
		}
	}
	return nil
}

// Add counts a result.
func (s *Summary) Add(r Result) {
	s.Runs++
	s.Violations += len(r.Violations)
	if len(r.Violations) > 0 {
		s.Failed++
	}
}

func (s Summary) String() string {
	return fmt.Sprintf("%d runs, %d violations (%d runs failed; pods created less than %s before the end may be pending)", s.Runs, s.Violations, s.Failed, PendingGrace)
}
