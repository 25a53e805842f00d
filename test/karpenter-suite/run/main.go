// Command run drives Karpenter's regression suite (package
// test/suites/regression of sigs.k8s.io/karpenter, built unchanged from the Go
// module proxy by hack/karpenter-suite.sh) against stevedore on the local
// cluster, one spec per process, and writes what each spec did.
//
// For each spec it makes sure the local cluster and one `stevedore controller`
// (with the simulated account of cluster/) are running, runs the suite binary
// focused on that spec's file and line with a time limit, and reads the
// spec's Ginkgo JSON report. A spec that did not pass may leave objects behind
// that the next spec's clean-cluster check would trip on, so after one the
// controller is stopped and the cluster is started anew. With -parallel N,
// N workers each keep a cluster and a controller of their own (cluster-2/,
// controller-2.log, ...) and take the specs longest first.
//
// Results are merged into a results file (one entry per spec, the last run
// of each), from which the compatibility table is written. Specs listed in the
// not-applicable file are not run; each names why no local cluster can run it.
//
//	go run ./run -suite BIN -stevedore BIN -root REPO [-focus REGEX] [-spec-timeout 20m] [-parallel N]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"sigs.k8s.io/yaml"
)

func main() {
	var o options
	flag.StringVar(&o.suite, "suite", "", "the compiled regression suite (go test -c)")
	flag.StringVar(&o.stevedore, "stevedore", "", "the stevedore binary")
	flag.StringVar(&o.root, "root", ".", "stevedore's repository")
	flag.StringVar(&o.out, "out", "", "directory for logs and reports (default ROOT/.karpenter-suite)")
	flag.StringVar(&o.focus, "focus", "", "run only the specs whose full text matches this regular expression")
	flag.DurationVar(&o.specTimeout, "spec-timeout", 20*time.Minute, "time limit of one spec, its set-up and clean-up included")
	flag.BoolVar(&o.list, "list", false, "list the specs and exit")
	flag.BoolVar(&o.docOnly, "doc-only", false, "rewrite the compatibility page from the results file, and run nothing")
	flag.BoolVar(&o.skipPassed, "skip-passed", false, "skip the specs whose last recorded run passed (to finish a run that was cut short)")
	flag.BoolVar(&o.failOnFailure, "fail", false, "exit 1 when a spec run here failed")
	flag.BoolVar(&o.record, "record", true, "merge the results into the results file and rewrite the compatibility page")
	flag.IntVar(&o.parallel, "parallel", 1, "run this many specs at once, each against a local cluster and a controller of its own")
	flag.Parse()
	if o.suite == "" || (o.stevedore == "" && !o.list && !o.docOnly) {
		fmt.Fprintln(os.Stderr, "usage: run -suite BIN -stevedore BIN [-root REPO] [-focus REGEX] [-spec-timeout D] [-list] [-fail]")
		os.Exit(2)
	}
	if o.out == "" {
		o.out = filepath.Join(o.root, ".karpenter-suite")
	}
	failed, err := run(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "karpenter-suite:", err)
		os.Exit(1)
	}
	if failed > 0 && o.failOnFailure {
		os.Exit(1)
	}
}

type options struct {
	suite, stevedore, root, out, focus string
	specTimeout                        time.Duration
	parallel                           int
	list, failOnFailure, record        bool
	skipPassed, docOnly                bool
}

// The files of this module the runner reads and writes, relative to ROOT.
const (
	suiteDir          = "test/karpenter-suite"
	resultsFile       = suiteDir + "/results.json"
	notApplicableFile = suiteDir + "/not-applicable.yaml"
	docFile           = "docs/compatibility.md"
	accountDir        = suiteDir + "/cluster"
	nodePoolsFile     = suiteDir + "/nodepools.yaml" // outside accountDir: the account reads every file there
)

// spec is one It of the suite, as its dry run lists it.
type spec struct {
	Name string // containers and leaf text, joined by spaces (Ginkgo's full text)
	File string // base name of its file
	Line int
}

// result is what one run of a spec gave.
type result struct {
	Name    string `json:"name"`
	Where   string `json:"where"`             // file:line in the suite
	State   string `json:"state"`             // passed, failed, not applicable
	Reason  string `json:"reason,omitempty"`  // the failure, or why not applicable
	Note    string `json:"note,omitempty"`    // the NodePool it ran with, when not the default
	Seconds int    `json:"seconds,omitempty"` // the spec's run time
	// Usage is the controller's memory and CPU while the spec ran, sampled
	// from /proc (the suite's own figures come from the Metrics API, which
	// the local cluster does not serve for a controller outside it).
	Usage  *usage `json:"controllerUsage,omitempty"`
	Commit string `json:"commit,omitempty"` // stevedore's commit it ran against
	Date   string `json:"date,omitempty"`   // when (UTC day)
}

func run(o options) (int, error) {
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return 0, err
	}
	specs, err := listSpecs(o)
	if err != nil {
		return 0, err
	}
	if o.list {
		for _, s := range specs {
			fmt.Printf("%s:%d\t%s\n", s.File, s.Line, s.Name)
		}
		return 0, nil
	}
	na, err := readNotApplicable(filepath.Join(o.root, notApplicableFile))
	if err != nil {
		return 0, err
	}
	pools, err := readNodePools(filepath.Join(o.root, nodePoolsFile))
	if err != nil {
		return 0, err
	}
	var focus *regexp.Regexp
	if o.focus != "" {
		if focus, err = regexp.Compile(o.focus); err != nil {
			return 0, fmt.Errorf("-focus: %w", err)
		}
	}
	results, err := readResults(filepath.Join(o.root, resultsFile))
	if err != nil {
		return 0, err
	}
	if o.docOnly {
		return 0, writeDoc(filepath.Join(o.root, docFile), specs, results)
	}
	commit := gitCommit(o.root)
	day := time.Now().UTC().Format("2006-01-02")

	var todo []int
	for i, s := range specs {
		if focus != nil && !focus.MatchString(s.Name) {
			continue
		}
		if why, ok := na.reason(s.Name); ok {
			results.Specs[s.Name] = result{Name: s.Name, Where: fmt.Sprintf("%s:%d", s.File, s.Line), State: "not applicable", Reason: why, Commit: commit, Date: day}
			continue
		}
		if o.skipPassed && results.Specs[s.Name].State == "passed" {
			continue
		}
		todo = append(todo, i)
	}
	if o.parallel > 1 {
		// Longest first, by the last recorded run: the slow specs (those
		// that wait out a 10- or 15-minute timer) then overlap with many
		// quick ones instead of ending the run alone.
		// A spec never timed goes first too: it may be one of the slow.
		seconds := func(i int) int {
			if r, ok := results.Specs[specs[i].Name]; ok && r.Seconds > 0 {
				return r.Seconds
			}
			return math.MaxInt
		}
		sort.SliceStable(todo, func(a, b int) bool { return seconds(todo[a]) > seconds(todo[b]) })
	}

	start := time.Now()
	ran, failed := 0, 0
	var mu sync.Mutex // guards results, ran, failed, stopErr and the output
	var stopErr error
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < max(o.parallel, 1); w++ {
		env := &environment{o: o, pools: pools, worker: w}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer env.stop()
			for i := range next {
				mu.Lock()
				stopped := stopErr != nil
				mu.Unlock()
				if stopped {
					continue
				}
				s := specs[i]
				r := env.runSpec(i, s)
				mu.Lock()
				if strings.HasPrefix(r.Reason, environmentFailure) {
					// Not the spec's doing: stop rather than record every
					// spec after it as failed for the same reason.
					if stopErr == nil {
						stopErr = fmt.Errorf("%s: %s", s.Name, r.Reason)
					}
					mu.Unlock()
					continue
				}
				r.Commit, r.Date = commit, day
				results.Specs[s.Name] = r
				ran++
				if r.State != "passed" {
					failed++
				}
				fmt.Printf("[%d/%d] %s\n        %s in %ds%s%s\n", i+1, len(specs), s.Name, r.State, r.Seconds, r.Usage, firstLine(r.Reason))
				if r.State != "passed" && o.failOnFailure {
					// Where the run is a gate (make test), its output is all
					// a reader may get: show the end of the spec's log.
					printTail(specLog(o.out, i), 80)
				}
				if o.record && stopErr == nil {
					// The page too, so that a run cut short leaves it up to date.
					err := writeResults(filepath.Join(o.root, resultsFile), results)
					if err == nil {
						err = writeDoc(filepath.Join(o.root, docFile), specs, results)
					}
					if err != nil {
						stopErr = err
					}
				}
				mu.Unlock()
			}
		}()
	}
	for _, i := range todo {
		mu.Lock()
		stopped := stopErr != nil
		mu.Unlock()
		if stopped {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if stopErr != nil {
		return failed, stopErr
	}
	wall := time.Since(start).Round(time.Second)
	fmt.Printf("ran %d specs in %s: %d did not pass; logs in %s\n", ran, wall, failed, o.out)
	if !o.record {
		return failed, nil
	}
	if focus == nil && !o.skipPassed {
		results.FullRun = &fullRun{Commit: commit, Date: day, Seconds: int(wall.Seconds())}
	}
	if err := writeResults(filepath.Join(o.root, resultsFile), results); err != nil {
		return failed, err
	}
	if err := writeDoc(filepath.Join(o.root, docFile), specs, results); err != nil {
		return failed, err
	}
	return failed, nil
}

// specLog is the log of the i-th spec (counting from 0) of the suite.
func specLog(out string, i int) string {
	return filepath.Join(out, fmt.Sprintf("spec-%03d.log", i+1))
}

// printTail prints the last n lines of a file.
func printTail(path string, n int) {
	data, err := os.ReadFile(path)
	if err != nil {
		return
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	fmt.Printf("        --- the end of %s ---\n", path)
	for _, l := range lines {
		fmt.Println("        " + l)
	}
}

func firstLine(s string) string {
	if s == "" {
		return ""
	}
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return ": " + s
}

// ginkgoReport holds the fields of Ginkgo's JSON report that the runner reads.
type ginkgoReport []struct {
	SpecReports []struct {
		ContainerHierarchyTexts []string
		LeafNodeType            string
		LeafNodeText            string
		LeafNodeLocation        struct {
			FileName   string
			LineNumber int
		}
		State   string
		RunTime int64 // nanoseconds
		Failure struct {
			Message  string
			Location struct {
				FileName   string
				LineNumber int
			}
			FailureNodeType string
		}
	}
}

func readReport(path string) (ginkgoReport, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r ginkgoReport
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// listSpecs asks the suite for its specs with a dry run.
func listSpecs(o options) ([]spec, error) {
	report := filepath.Join(o.out, "dry-run.json")
	cmd := exec.Command(o.suite, "--ginkgo.dry-run", "--ginkgo.no-color", "--ginkgo.json-report="+report)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("listing the suite's specs: %v\n%s", err, out)
	}
	r, err := readReport(report)
	if err != nil {
		return nil, err
	}
	var specs []spec
	for _, suite := range r {
		for _, sr := range suite.SpecReports {
			if sr.LeafNodeType != "It" {
				continue
			}
			specs = append(specs, spec{
				Name: strings.Join(append(append([]string{}, sr.ContainerHierarchyTexts...), sr.LeafNodeText), " "),
				File: filepath.Base(sr.LeafNodeLocation.FileName),
				Line: sr.LeafNodeLocation.LineNumber,
			})
		}
	}
	sort.SliceStable(specs, func(i, j int) bool {
		if specs[i].File != specs[j].File {
			return specs[i].File < specs[j].File
		}
		return specs[i].Line < specs[j].Line
	})
	return specs, nil
}

// notApplicable maps spec-name patterns to the reason no local cluster can
// run them.
type notApplicable []struct {
	Spec   string `json:"spec"` // a regular expression over the full spec text
	Reason string `json:"reason"`
	re     *regexp.Regexp
}

func readNotApplicable(path string) (notApplicable, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var na notApplicable
	if err := yaml.UnmarshalStrict(data, &na); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for i := range na {
		if na[i].Reason == "" {
			return nil, fmt.Errorf("%s: entry %d (%q) gives no reason", path, i, na[i].Spec)
		}
		re, err := regexp.Compile(na[i].Spec)
		if err != nil {
			return nil, fmt.Errorf("%s: entry %d: %w", path, i, err)
		}
		na[i].re = re
	}
	return na, nil
}

// nodePools gives some specs a default NodePool other than nodepool.yaml:
// the EC2 form of what a spec does to the NodePool only when the suite runs
// with Karpenter's KWOK provider (env.IsDefaultNodeClassKWOK), on which the
// spec's expectations rest.
type nodePools []struct {
	Spec     string `json:"spec"`     // a regular expression over the full spec text
	NodePool string `json:"nodePool"` // a file beside nodepool.yaml
	Why      string `json:"why"`
	re       *regexp.Regexp
}

func readNodePools(path string) (nodePools, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ps nodePools
	if err := yaml.UnmarshalStrict(data, &ps); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for i := range ps {
		if ps[i].NodePool == "" || ps[i].Why == "" {
			return nil, fmt.Errorf("%s: entry %d (%q) needs nodePool and why", path, i, ps[i].Spec)
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(path), "cluster", ps[i].NodePool)); err != nil {
			return nil, fmt.Errorf("%s: entry %d: %w", path, i, err)
		}
		re, err := regexp.Compile(ps[i].Spec)
		if err != nil {
			return nil, fmt.Errorf("%s: entry %d: %w", path, i, err)
		}
		ps[i].re = re
	}
	return ps, nil
}

func (ps nodePools) forSpec(name string) (file, why string, ok bool) {
	for _, p := range ps {
		if p.re.MatchString(name) {
			return p.NodePool, p.Why, true
		}
	}
	return "", "", false
}

func (na notApplicable) reason(name string) (string, bool) {
	for _, e := range na {
		if e.re.MatchString(name) {
			return e.Reason, true
		}
	}
	return "", false
}

// results are the last run of each spec, by name, and the last run of the
// whole suite.
type results struct {
	FullRun *fullRun
	Specs   map[string]result
}

// resultsFileFormat is how results are stored: the specs as a list in name order,
// so that the file diffs well.
type resultsFileFormat struct {
	FullRun *fullRun `json:"fullRun,omitempty"`
	Specs   []result `json:"specs"`
}

// fullRun records the last run of every spec in one go.
type fullRun struct {
	Commit  string `json:"commit"`
	Date    string `json:"date"`
	Seconds int    `json:"seconds"`
}

func readResults(path string) (*results, error) {
	out := &results{Specs: map[string]result{}}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	var f resultsFileFormat
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out.FullRun = f.FullRun
	for _, r := range f.Specs {
		out.Specs[r.Name] = r
	}
	return out, nil
}

func writeResults(path string, rs *results) error {
	f := resultsFileFormat{FullRun: rs.FullRun, Specs: make([]result, 0, len(rs.Specs))}
	for _, r := range rs.Specs {
		f.Specs = append(f.Specs, r)
	}
	sort.Slice(f.Specs, func(i, j int) bool { return f.Specs[i].Name < f.Specs[j].Name })
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

func gitCommit(root string) string {
	out, err := exec.Command("git", "-C", root, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		c += "+changes"
	}
	return c
}

// featureGates is FEATURE_GATES for the controller: Karpenter's defaults,
// with the gates its suite runs turned on.
const featureGates = "NodeRepair=true,ReservedCapacity=true,SpotToSpotConsolidation=false,NodeOverlay=false,StaticCapacity=true,CapacityBuffer=true"

// environment is the local cluster and the controller the specs run against.
type environment struct {
	o          options
	pools      nodePools
	worker     int // which of the parallel workers; each has its own cluster and log
	clusterUp  bool
	controller *exec.Cmd
	exited     chan error
	kubeconfig string
}

func (e *environment) clusterDir() string { return filepath.Join(e.o.out, e.suffixed("cluster")) }

// suffixed names a worker's own copy of a file or directory: the first
// worker's is the plain name, the others' carry their number.
func (e *environment) suffixed(name string) string {
	if e.worker == 0 {
		return name
	}
	return fmt.Sprintf("%s-%d", name, e.worker+1)
}

func (e *environment) script(arg string) error {
	cmd := exec.Command(filepath.Join(e.o.root, "hack/local-cluster.sh"), arg)
	cmd.Env = append(os.Environ(), "STEVEDORE_CLUSTER_DIR="+e.clusterDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("hack/local-cluster.sh %s: %v\n%s", arg, err, out)
	}
	return nil
}

// ensure starts what is not running: the cluster, then the controller.
func (e *environment) ensure() error {
	if !e.clusterUp {
		_ = e.script("down")
		if err := e.script("up"); err != nil {
			return err
		}
		e.clusterUp = true
		e.kubeconfig = filepath.Join(e.clusterDir(), "kubeconfig")
	}
	if e.controller != nil {
		select {
		case err := <-e.exited:
			fmt.Printf("        the controller had exited (%v); starting it again\n", err)
			e.controller = nil
		default:
		}
	}
	if e.controller == nil {
		return e.startController()
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startController runs `stevedore controller` with the simulated account, as
// a user of the local cluster would (docs/development.md), with the
// controller's default timings and the feature gates Karpenter's own runs of
// the suite turn on (its Makefile's HELM_OPTS: nodeRepair, capacityBuffer,
// staticCapacity), so that their specs test something.
func (e *environment) startController() error {
	metrics, err := freePort()
	if err != nil {
		return err
	}
	probe, err := freePort()
	if err != nil {
		return err
	}
	logPath := filepath.Join(e.o.out, e.suffixed("controller")+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(e.o.stevedore, "controller",
		"--kubeconfig="+e.kubeconfig,
		"--cloud=simulated",
		"--simulated-account="+filepath.Join(e.o.root, accountDir),
		"--leader-elect=false",
		"--metrics-bind-address=127.0.0.1:"+strconv.Itoa(metrics),
		"--health-probe-bind-address=127.0.0.1:"+strconv.Itoa(probe),
	)
	cmd.Env = append(os.Environ(), "FEATURE_GATES="+featureGates)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); logFile.Close() }()
	health := fmt.Sprintf("http://127.0.0.1:%d/healthz", probe)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		select {
		case err := <-exited:
			return fmt.Errorf("the controller exited while starting (%v); see %s", err, logPath)
		default:
		}
		if resp, err := http.Get(health); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			return fmt.Errorf("the controller is not healthy after 2 minutes; see %s", logPath)
		}
		time.Sleep(500 * time.Millisecond)
		continue
	}
	e.controller, e.exited = cmd, exited
	return nil
}

// stop stops the controller (SIGTERM, then SIGKILL) and the cluster.
func (e *environment) stop() {
	e.stopController()
	if e.clusterUp {
		_ = e.script("down")
		e.clusterUp = false
	}
}

func (e *environment) stopController() {
	if e.controller == nil {
		return
	}
	_ = e.controller.Process.Signal(syscall.SIGTERM)
	select {
	case <-e.exited:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-e.controller.Process.Pid, syscall.SIGKILL)
		<-e.exited
	}
	e.controller = nil
}

// environmentFailure starts the reason of a spec that could not run because
// the cluster or the controller would not start.
const environmentFailure = "environment: "

// runSpec runs one spec in a process of its own and reads its report.
func (e *environment) runSpec(i int, s spec) result {
	r := result{Name: s.Name, Where: fmt.Sprintf("%s:%d", s.File, s.Line)}
	if err := e.ensure(); err != nil {
		r.State, r.Reason = "failed", environmentFailure+err.Error()
		e.stop()
		return r
	}
	nodePool := "nodepool.yaml"
	if p, why, ok := e.pools.forSpec(s.Name); ok {
		nodePool = p
		r.Note = fmt.Sprintf("with %s: %s", p, why)
	}
	base := strings.TrimSuffix(specLog(e.o.out, i), ".log")
	report := base + ".json"
	_ = os.Remove(report)
	logFile, err := os.Create(base + ".log")
	if err != nil {
		r.State, r.Reason = "failed", err.Error()
		return r
	}
	defer logFile.Close()
	// Ginkgo's own timeout interrupts the spec and still runs its clean-up
	// and writes the report; the context's deadline, a little later, ends a
	// process that did not stop.
	ctx, cancel := context.WithTimeout(context.Background(), e.o.specTimeout+2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.o.suite,
		"--ginkgo.focus-file="+regexp.QuoteMeta(s.File)+":"+strconv.Itoa(s.Line),
		"--ginkgo.timeout="+e.o.specTimeout.String(),
		"--ginkgo.grace-period=60s",
		"--ginkgo.no-color",
		"--ginkgo.v",
		"--ginkgo.json-report="+report,
		"--default-nodeclass="+filepath.Join(e.o.root, accountDir, "ec2nodeclass.yaml"),
		"--default-nodepool="+filepath.Join(e.o.root, accountDir, nodePool),
	)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+e.kubeconfig)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	started := time.Now()
	sampler := sampleUsage(e.controller.Process.Pid, time.Second)
	runErr := cmd.Run()
	r.Seconds = int(time.Since(started).Seconds())
	r.Usage = sampler.stop()

	rep, err := readReport(report)
	switch {
	case err != nil:
		r.State = "failed"
		r.Reason = fmt.Sprintf("no report (%v); the process ended with %v after %ds", err, runErr, r.Seconds)
	default:
		r.State, r.Reason = summarize(rep, s)
	}
	if r.State != "passed" {
		// What a failed spec left behind would fail the next one's
		// clean-cluster check: start everything anew.
		e.stop()
	}
	return r
}

// summarize reads the spec's outcome from its report: the It itself, and
// the suite nodes around it (BeforeSuite, AfterSuite) when they failed.
func summarize(rep ginkgoReport, s spec) (string, string) {
	state, reason, found := "", "", false
	for _, suite := range rep {
		for _, sr := range suite.SpecReports {
			failed := sr.State != "passed" && sr.State != "skipped" && sr.State != "pending"
			if sr.LeafNodeType == "It" {
				if filepath.Base(sr.LeafNodeLocation.FileName) != s.File || sr.LeafNodeLocation.LineNumber != s.Line {
					continue
				}
				found = true
				if sr.State == "skipped" {
					return "failed", "the spec was skipped (it should not be: the suite skips nothing unless told)"
				}
				if !failed {
					if state == "" {
						state = "passed"
					}
					continue
				}
			} else if !failed {
				continue
			}
			state = "failed"
			loc := fmt.Sprintf("%s:%d", filepath.Base(sr.Failure.Location.FileName), sr.Failure.Location.LineNumber)
			msg := strings.TrimSpace(sr.Failure.Message)
			if len(msg) > 600 {
				msg = msg[:600] + " …"
			}
			where := sr.Failure.FailureNodeType
			if where == "" {
				where = sr.LeafNodeType
			}
			reason = fmt.Sprintf("%s in %s at %s: %s", sr.State, where, loc, msg)
		}
	}
	if !found {
		return "failed", "the report has no such spec: the focus matched nothing"
	}
	return state, reason
}
