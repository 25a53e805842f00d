package main

import (
	"bytes"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/stevedore-autoscaler/stevedore/sim/chaos"
	"github.com/stevedore-autoscaler/stevedore/sim/report"
	"github.com/stevedore-autoscaler/stevedore/sim/runner"
	"github.com/stevedore-autoscaler/stevedore/sim/scenario"
)

// runChaos runs the scenario once per seed with random faults drawn from
// the seed, twice each (stdin is what "-" among the paths reads), and checks the safety invariants of every run
// (--check). It prints a line per seed and a summary, and fails when any
// invariant is violated.
func runChaos(cmd *cobra.Command, paths []string, stdin []byte, scheme *runtime.Scheme, seeds []uint64, logger logr.Logger) error {
	name := ""
	cfg := chaos.Config{
		Load: func() (*scenario.Run, error) {
			run, _, err := scenario.LoadFrom(paths, bytes.NewReader(stdin), scheme)
			if run != nil {
				name = run.Name
			}
			return run, err
		},
		Simulate: func(run *scenario.Run) (*report.Document, error) {
			r, err := runner.New(runner.Options{Run: run, Scheme: scheme, Log: logger})
			if err != nil {
				return nil, err
			}
			return r.Run()
		},
	}
	var sum chaos.Summary
	started := time.Now()
	for _, seed := range seeds {
		res, err := cfg.RunSeed(seed)
		if err != nil {
			return err
		}
		sum.Add(res)
		if err := chaos.WriteLine(cmd.OutOrStdout(), name, res); err != nil {
			return err
		}
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s (in %s)\n", sum, time.Since(started).Round(time.Millisecond))
	if sum.Violations > 0 {
		return errSilentFailure
	}
	return nil
}
