package schedulerdiff

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
)

// casesEnv raises (or lowers) the number of random clusters.
const casesEnv = "SCHEDULERDIFF_CASES"

func numCases(t *testing.T) int {
	n := 3000
	if testing.Short() {
		n = 300
	}
	if s := os.Getenv(casesEnv); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 0 {
			t.Fatalf("%s=%q: want a number of cases", casesEnv, s)
		}
		n = v
	}
	return n
}

// comparison is both sides' answer for one node.
type comparison struct {
	oracle Verdict
	packer error
}

func (c comparison) agree() bool {
	return !isPanic(c.packer) && c.oracle.Fits == (c.packer == nil)
}

func isPanic(err error) bool {
	var p *panicked
	return errors.As(err, &p)
}

// panicked is a panic inside packer.Feasible, which is always a
// disagreement.
type panicked struct {
	value any
	at    string
}

func (p *panicked) Error() string { return fmt.Sprintf("PANIC: %v at %s", p.value, p.at) }

// feasible calls packer.Feasible, turning a panic into an error.
func feasible(c *Cluster, nodes []packer.Node, i int) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &panicked{value: v, at: panicSite()}
		}
	}()
	return packer.Feasible(c.Pod, nodes, i, c.Namespaces)
}

// panicSite is the innermost frame of the packer in the panicking stack.
func panicSite() string {
	pcs := make([]uintptr, 32)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)])
	for {
		f, more := frames.Next()
		if strings.Contains(f.Function, "/scheduling/") {
			return fmt.Sprintf("%s (%s:%d)", f.Function, filepath.Base(f.File), f.Line)
		}
		if !more {
			return "unknown"
		}
	}
}

func (c comparison) String() string {
	p := "packer.Feasible: nil (fits)"
	if c.packer != nil {
		p = fmt.Sprintf("packer.Feasible: %v", c.packer)
	}
	return fmt.Sprintf("kube-scheduler: %v\n%s", c.oracle, p)
}

func compare(t *testing.T, o *Oracle, c *Cluster, i int) comparison {
	t.Helper()
	verdicts, err := o.Filter(c)
	if err != nil {
		t.Fatalf("kube-scheduler: %v\n%s", err, c.Describe(i))
	}
	return comparison{oracle: verdicts[i], packer: feasible(c, c.PackerNodes(), i)}
}

type example struct {
	seed    uint64
	cluster *Cluster
	target  int
	cmp     comparison
}

// TestFeasibleAgreesWithKubeScheduler generates random clusters and, for
// every node of each, asks packer.Feasible and kube-scheduler's filters
// whether the pending pod may run there. Disagreements are shrunk to a
// minimal case and grouped by direction, rejecting plugin and the features
// the pending pod still uses.
func TestFeasibleAgreesWithKubeScheduler(t *testing.T) {
	o := newOracle(t)
	n := numCases(t)
	start := time.Now()
	// How many disagreements to shrink, for panics and for the others.
	maxShrunk := map[bool]int{true: 20, false: 400}
	shrunkKind := map[bool]int{}
	classes := map[string][]example{}
	var disagreements, comparisons, fits, shrunk int
	for seed := range uint64(n) {
		c := Generate(rand.New(rand.NewPCG(seed, 0)))
		pn := c.PackerNodes()
		verdicts, err := o.Filter(c)
		if err != nil {
			t.Fatalf("seed %d: kube-scheduler: %v\n%s", seed, err, c.Describe(-1))
		}
		// Shrink, per cluster, the first panic and the first other
		// disagreement, up to a bound; a shrink keeps the kind.
		shrinkAt := map[bool]int{}
		for i := range c.Nodes {
			cmp := comparison{oracle: verdicts[i], packer: feasible(c, pn, i)}
			comparisons++
			if cmp.oracle.Fits {
				fits++
			}
			if cmp.agree() {
				continue
			}
			disagreements++
			if _, ok := shrinkAt[isPanic(cmp.packer)]; !ok {
				shrinkAt[isPanic(cmp.packer)] = i
			}
		}
		for _, kind := range []bool{true, false} {
			first, ok := shrinkAt[kind]
			if !ok || shrunkKind[kind] >= maxShrunk[kind] {
				continue
			}
			shrunkKind[kind]++
			shrunk++
			small, target := Shrink(c, first, func(c *Cluster, i int) bool {
				cmp := compare(t, o, c, i)
				return !cmp.agree() && isPanic(cmp.packer) == kind
			})
			cmp := compare(t, o, small, target)
			class := "packer admits, kube-scheduler rejects by " + strings.Join(rejectingPlugins(cmp.oracle), "+")
			var p *panicked
			switch {
			case errors.As(cmp.packer, &p):
				class = "packer panics at " + p.at
			case cmp.oracle.Fits:
				class = "packer rejects, kube-scheduler admits"
			}
			class += "; pending pod uses: " + Features(small.Pod)
			classes[class] = append(classes[class], example{seed: seed, cluster: small, target: target, cmp: cmp})
		}
	}
	t.Logf("%d clusters, %d node verdicts (%d fit), %d disagreements, in %v",
		n, comparisons, fits, disagreements, time.Since(start).Round(time.Millisecond))
	if disagreements == 0 {
		return
	}
	names := slices.Sorted(maps.Keys(classes))
	t.Errorf("%d of %d node verdicts disagree; %d shrunk into %d classes (reproduce one with Generate(rand.New(rand.NewPCG(seed, 0))))",
		disagreements, comparisons, shrunk, len(names))
	for _, name := range names {
		ex := classes[name]
		var b strings.Builder
		fmt.Fprintf(&b, "\n=== %s (%d shrunk cases, seeds", name, len(ex))
		for i, e := range ex {
			if i == 8 {
				b.WriteString(" …")
				break
			}
			fmt.Fprintf(&b, " %d", e.seed)
		}
		b.WriteString(")\n")
		e := smallest(ex)
		fmt.Fprintf(&b, "minimal case (seed %d, node %s marked *):\n%s%s\n", e.seed, e.cluster.Nodes[e.target].Name, e.cluster.Describe(e.target), e.cmp)
		t.Error(b.String())
	}
}

func rejectingPlugins(v Verdict) []string {
	var out []string
	for _, r := range v.Reasons {
		name, _, _ := strings.Cut(r, ":")
		out = append(out, name)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// smallest is the example with the fewest nodes and pods.
func smallest(ex []example) example {
	best := ex[0]
	size := func(e example) int { return len(e.cluster.Nodes) + len(e.cluster.Pods) }
	for _, e := range ex[1:] {
		if size(e) < size(best) {
			best = e
		}
	}
	return best
}
