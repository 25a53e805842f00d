// Command planbench times `stevedore plan` end to end (read, validate,
// solve, bound, print) at scale, as a user runs it: for each size it writes
// that many of Karpenter's benchmark pods (scheduling/workloads/
// karpenterbench, the diverse workload of Karpenter's scheduling benchmark)
// as a PodList, with a NodePool that admits every instance type of the
// embedded catalog, runs the stevedore binary on them, and prints the wall
// clock, the CPU time and the peak resident memory of the process, with the
// plan's nodes, price, lower bound and ratio. hack/bench-plan.sh runs it.
//
// Usage: go run ./hack/planbench -stevedore bin/stevedore -sizes 5000,20000,100000 [-output text]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stevedore-autoscaler/stevedore/scheduling/workloads/karpenterbench"
)

// nodePool admits every catalog type, spot and on-demand, on an al2023
// EC2NodeClass.
const nodePool = `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: KarpenterNodeRole-bench
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: bench}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: bench}}]
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}
`

// summary is what is printed of a plan.
type summary struct {
	nodes, unplaced     int
	price, bound, ratio float64
}

// textSummary matches the totals of the text form: "N NodeClaims for M
// pods: $P/hour", "lower bound: $B/hour, ratio R" and "K pods
// unschedulable" when some are.
var (
	textClaims = regexp.MustCompile(`(?m)^(\d+) NodeClaims? for \d+ pods?: \$([0-9.]+)/hour$`)
	textBound  = regexp.MustCompile(`(?m)^lower bound: \$([0-9.]+)/hour, ratio ([0-9.]+)$`)
	textFailed = regexp.MustCompile(`(?m)^(\d+) pods? unschedulable`)
)

func readPlan(output string, b []byte) (summary, error) {
	var s summary
	if output != "json" {
		c, l := textClaims.FindSubmatch(b), textBound.FindSubmatch(b)
		if c == nil || l == nil {
			return s, fmt.Errorf("no totals in the text form:\n%s", b[max(0, len(b)-2000):])
		}
		s.nodes, _ = strconv.Atoi(string(c[1]))
		s.price, _ = strconv.ParseFloat(string(c[2]), 64)
		s.bound, _ = strconv.ParseFloat(string(l[1]), 64)
		s.ratio = s.price / s.bound
		if f := textFailed.FindSubmatch(b); f != nil {
			s.unplaced, _ = strconv.Atoi(string(f[1]))
		}
		return s, nil
	}
	var r report
	if err := json.Unmarshal(b, &r); err != nil {
		return s, err
	}
	return summary{nodes: len(r.NodeClaims), unplaced: len(r.Unschedulable), price: r.PricePerHour,
		bound: r.LowerBound.PricePerHour, ratio: r.LowerBound.Ratio}, nil
}

// report is the part of `stevedore plan -o json` printed here.
type report struct {
	NodeClaims   []json.RawMessage `json:"nodeClaims"`
	PricePerHour float64           `json:"pricePerHour"`
	LowerBound   struct {
		PricePerHour float64 `json:"pricePerHour"`
		Ratio        float64 `json:"ratio"`
	} `json:"lowerBound"`
	Unschedulable []json.RawMessage `json:"unschedulable"`
}

func main() {
	bin := flag.String("stevedore", "bin/stevedore", "the stevedore binary")
	sizes := flag.String("sizes", "5000,20000,100000", "pod counts, comma-separated")
	output := flag.String("output", "json", "the plan's output: json (-o json, every placement) or text (the table)")
	flag.Parse()
	dir, err := os.MkdirTemp("", "planbench")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "nodepool.yaml"), []byte(nodePool), 0o644); err != nil {
		log.Fatal(err)
	}
	fmt.Println("| pods | wall | CPU (user+sys) | peak RSS | nodes | $/hour | lower bound $/hour | cost / lower bound |")
	fmt.Println("|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			log.Fatalf("-sizes: %q is not a pod count", s)
		}
		pods := filepath.Join(dir, fmt.Sprintf("pods-%d.json", n))
		if err := writePods(pods, n); err != nil {
			log.Fatal(err)
		}
		// The plan goes to a file, as a user would redirect it: a pipe into
		// this process would make it copy half a gigabyte of JSON on the
		// same two cores while the command is being timed.
		outPath := filepath.Join(dir, fmt.Sprintf("plan-%d.out", n))
		out, err := os.Create(outPath)
		if err != nil {
			log.Fatal(err)
		}
		args := []string{"plan", "-f", filepath.Join(dir, "nodepool.yaml"), "--pods", pods}
		if *output == "json" {
			args = append(args, "-o", "json")
		}
		cmd := exec.Command(*bin, args...)
		cmd.Stdout, cmd.Stderr = out, os.Stderr
		start := time.Now()
		if err := cmd.Run(); err != nil {
			log.Fatalf("%d pods: %s plan: %v", n, *bin, err)
		}
		wall := time.Since(start)
		cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		var rss int64
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			rss = ru.Maxrss // KiB on Linux
		}
		if err := out.Close(); err != nil {
			log.Fatal(err)
		}
		b, err := os.ReadFile(outPath)
		if err != nil {
			log.Fatal(err)
		}
		os.Remove(outPath)
		r, err := readPlan(*output, b)
		if err != nil {
			log.Fatalf("%d pods: reading the plan: %v", n, err)
		}
		if r.unplaced > 0 {
			log.Fatalf("%d pods: %d could not be placed", n, r.unplaced)
		}
		fmt.Printf("| %d | %.1f s | %.1f s | %d MB | %d | %.2f | %.2f | %.3f |\n", n, wall.Seconds(), cpu.Seconds(), rss/1024,
			r.nodes, r.price, r.bound, r.ratio)
	}
}

func writePods(path string, n int) error {
	list := corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}}
	for _, p := range karpenterbench.DiversePods(n) {
		p.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
		list.Items = append(list.Items, *p)
	}
	b, err := json.Marshal(list)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
