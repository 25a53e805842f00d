package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/validation"
	"github.com/stevedore-autoscaler/stevedore/sim/chaos"
	"github.com/stevedore-autoscaler/stevedore/sim/report"
	"github.com/stevedore-autoscaler/stevedore/sim/runner"
	"github.com/stevedore-autoscaler/stevedore/sim/scenario"
	"github.com/stevedore-autoscaler/stevedore/sim/whatif"
)

func newSimulateCommand() *cobra.Command {
	var (
		output     string
		seed       uint64
		logFile    string
		verbose    int
		reportFile string
		seedList   string
		check      bool
		changeFile string
	)
	cmd := &cobra.Command{
		Use:   "simulate PATH...",
		Short: "Run the controllers against a simulated cluster and AWS account",
		Long: `Run stevedore's own controllers against an in-memory Kubernetes API, an
in-memory AWS account and a virtual clock, and report what they did: the nodes
launched and taken away, the pods bound, evicted and left pending, and what it
cost. A simulated hour of a small cluster takes about a second, a day of a
500-node cluster a few minutes; the same input and seed give the same result,
byte for byte.

PATH is a file or a directory (searched recursively for .yaml, .yml and .json)
with NodePools, EC2NodeClasses, workloads (Deployments, StatefulSets,
DaemonSets, Jobs, Pods), PodDisruptionBudgets, PriorityClasses and existing
Nodes, and at most one Scenario (apiVersion stevedore.io/v1alpha1) that sets
the seed, the start and length of the run, the simulated AWS account and the
events injected on the way: objects applied, patched, scaled and deleted, image
releases, spot interruptions, capacity shortages, node failures, failing AWS
calls, controller restarts. Without a Scenario everything is applied at the
start and the run lasts an hour. Everything is checked before the run starts; problems are
printed as 'stevedore validate' prints them and the exit status is 1.

The default output is a summary; --output json prints the whole run (events,
time series, final state), as docs/simulate.md describes. --report FILE.html
also writes the run as one self-contained page of charts and the event log,
which opens offline in any browser.`,
		Example: `  stevedore simulate examples/drift-upgrade
  stevedore simulate examples/drift-upgrade --output json --seed 7
  stevedore simulate examples/drift-upgrade --report drift-upgrade.html
  kustomize build overlays/prod | stevedore simulate -    # - reads standard input`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, paths []string) error {
			if output != "text" && output != "json" {
				return fmt.Errorf("--output %q: use text or json", output)
			}
			if seedList != "" && !check {
				return fmt.Errorf("--seeds runs the scenario under random faults: add --check")
			}
			// --check prints a verdict per seed, not a run: refuse what it
			// would otherwise ignore.
			if check && cmd.Flags().Changed("output") {
				return fmt.Errorf("--check prints one verdict line per seed and no run: drop --output, or drop --check to get the run as %s", output)
			}
			if check && reportFile != "" {
				return fmt.Errorf("--check writes no report: drop --report; without --check a run writes its HTML page")
			}
			if check && changeFile != "" {
				return fmt.Errorf("--check and --change do not go together: --change compares two runs, --check runs under faults")
			}
			var change []scenario.Event
			var changeLines []string
			if changeFile != "" {
				data, err := os.ReadFile(changeFile)
				if err != nil {
					return fmt.Errorf("--change: %w", err)
				}
				if change, changeLines, err = scenario.ReadChange(changeFile, data); err != nil {
					return fmt.Errorf("--change: %w", err)
				}
			}
			scheme, err := newScheme()
			if err != nil {
				return err
			}
			// --check loads the scenario again for every run, so standard
			// input is read once and each load reads its own copy.
			var stdin []byte
			if slices.Contains(paths, "-") {
				if stdin, err = io.ReadAll(cmd.InOrStdin()); err != nil {
					return fmt.Errorf("reading standard input: %w", err)
				}
			}
			run, problems, err := scenario.LoadFrom(paths, bytes.NewReader(stdin), scheme)
			if errors.Is(err, scenario.ErrInvalid) {
				printProblems(cmd, problems)
				return errSilentFailure
			}
			if err != nil {
				return err
			}
			for _, p := range problems {
				fmt.Fprintln(cmd.ErrOrStderr(), p.String())
			}
			if cmd.Flags().Changed("seed") {
				run.Seed = seed
			}
			logger, closeLog, err := simulationLogger(logFile, verbose)
			if err != nil {
				return err
			}
			defer closeLog()
			// Controllers log through the context; nothing may reach the
			// global loggers, which would write to the terminal.
			ctrllog.SetLogger(logr.Discard())
			klog.SetLogger(logr.Discard())
			if check {
				seeds := []uint64{run.Seed}
				if seedList != "" {
					if seeds, err = chaos.ParseSeeds(seedList); err != nil {
						return fmt.Errorf("--seeds: %w", err)
					}
				}
				return runChaos(cmd, paths, stdin, scheme, seeds, logger)
			}
			started := time.Now()
			doc, reconciles, err := simulateOnce(cmd, run, scheme, logger)
			if err != nil {
				return err
			}
			if changeFile != "" {
				changed, problems, err := scenario.LoadChanged(paths, bytes.NewReader(stdin), scheme, change)
				if errors.Is(err, scenario.ErrInvalid) {
					printProblems(cmd, problems)
					return errSilentFailure
				}
				if err != nil {
					return err
				}
				changed.Seed = run.Seed
				after, _, err := simulateOnce(cmd, changed, scheme, logger)
				if err != nil {
					return err
				}
				if reportFile != "" {
					if err := writeReport(reportFile, after); err != nil {
						return err
					}
				}
				cmp := whatif.Compare(doc, after, changeLines)
				if output == "json" {
					return cmp.WriteJSON(cmd.OutOrStdout())
				}
				return cmp.WriteText(cmd.OutOrStdout())
			}
			if reportFile != "" {
				if err := writeReport(reportFile, doc); err != nil {
					return err
				}
			}
			if output == "json" {
				return doc.WriteJSON(cmd.OutOrStdout())
			}
			if err := doc.WriteText(cmd.OutOrStdout()); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "\nSimulated %s in %s (%d reconciles).\n", run.Duration, time.Since(started).Round(time.Millisecond), reconciles)
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text (a summary) or json (the whole run)")
	cmd.Flags().Uint64Var(&seed, "seed", scenario.DefaultSeed, "seed of every random choice; overrides the Scenario's spec.seed")
	cmd.Flags().StringVar(&logFile, "log-file", "", "write the controllers' logs, stamped with virtual time, to this file")
	cmd.Flags().IntVarP(&verbose, "verbosity", "v", 0, "log verbosity with --log-file (0 info, 1 debug)")
	cmd.Flags().StringVar(&reportFile, "report", "", "also write the run as a self-contained HTML page (charts and the event log) to this file")
	cmd.Flags().BoolVar(&check, "check", false, "run under random faults drawn from the seed (restarts, capacity shortages, spot interruptions, node failures), twice per seed, and check the safety invariants; exit 1 on a violation")
	cmd.Flags().StringVar(&changeFile, "change", "", "what if: run the scenario as it is and with the change in this file (objects to apply, events such as releaseImage, or a Scenario's events) on the same seed, and print the difference; --report writes the changed run")
	cmd.Flags().StringVar(&seedList, "seeds", "", "with --check, the seeds to run: a list of seeds and ranges such as 1-20,42")
	return cmd
}

// simulateOnce runs a loaded scenario and returns its report and how many
// reconciles it took.
func simulateOnce(cmd *cobra.Command, run *scenario.Run, scheme *runtime.Scheme, logger logr.Logger) (*report.Document, int, error) {
	opts := runner.Options{Run: run, Scheme: scheme, Log: logger}
	// Progress goes to a terminal only, so that what is written to a file
	// or a pipe stays the same from run to run.
	if isTerminal(cmd.ErrOrStderr()) {
		opts.Progress = progressLine(cmd.ErrOrStderr(), run, time.Now)
	}
	r, err := runner.New(opts)
	if err != nil {
		return nil, 0, err
	}
	doc, err := r.Run()
	if err != nil {
		return nil, 0, err
	}
	if opts.Progress != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "\r%s\r", strings.Repeat(" ", 72))
	}
	return doc, r.Stats().Reconciles, nil
}

// writeReport writes the run's HTML report to path.
func writeReport(path string, doc *report.Document) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--report: %w", err)
	}
	if err := doc.WriteHTML(f); err != nil {
		_ = f.Close()
		return fmt.Errorf("--report: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("--report: %w", err)
	}
	return nil
}

func printProblems(cmd *cobra.Command, problems []validation.Problem) {
	errs := 0
	for _, p := range problems {
		fmt.Fprintln(cmd.OutOrStdout(), p.String())
		if p.Severity == validation.SeverityError {
			errs++
		}
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "%d errors, %d warnings: fix them before simulating\n", errs, len(problems)-errs)
}

// simulationLogger returns a logger writing to path, or one that discards
// everything when path is empty. Lines carry no wall-clock time, so that
// logs of the same run compare equal; the runner adds virtual time.
func simulationLogger(path string, verbosity int) (logr.Logger, func(), error) {
	if path == "" {
		return logr.Discard(), func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return logr.Logger{}, nil, fmt.Errorf("--log-file: %w", err)
	}
	l := funcr.New(func(prefix, args string) {
		if prefix != "" {
			fmt.Fprintf(f, "%s: %s\n", prefix, args)
			return
		}
		fmt.Fprintln(f, args)
	}, funcr.Options{Verbosity: verbosity})
	return l, func() { _ = f.Close() }, nil
}

// isTerminal reports whether w is a terminal, where a progress line makes
// sense.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// progressInterval is the least wall time between two progress lines.
const progressInterval = 250 * time.Millisecond

// progressLine shows how far the run is in virtual time, such as
// "simulated 3h10m of 24h (13%)", redrawn in place at most every
// progressInterval of wall time (wall). It only reads the virtual time the
// runner hands it.
func progressLine(w io.Writer, run *scenario.Run, wall func() time.Time) func(time.Time) {
	var last time.Time
	return func(now time.Time) {
		t := wall()
		if !last.IsZero() && t.Sub(last) < progressInterval {
			return
		}
		last = t
		done := now.Sub(run.Start)
		line := fmt.Sprintf("simulated %s of %s (%d%%)", karpv1.FormatDuration(done.Round(time.Second)), karpv1.FormatDuration(run.Duration.Round(time.Second)), int(100*done/max(run.Duration, 1)))
		fmt.Fprintf(w, "\r%-72s", line)
	}
}
