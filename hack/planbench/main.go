// Command planbench times `stevedore plan` end to end (read, validate,
// solve, bound, print) at scale, as a user runs it: for each size it writes
// that many of Karpenter's benchmark pods (scheduling/workloads/
// karpenterbench, the diverse workload of Karpenter's scheduling benchmark)
// as a PodList, with a NodePool that admits every instance type of the
// embedded catalog, runs the stevedore binary on them, and prints the wall
// clock, the CPU time and the peak resident memory of the process, with the
// plan's nodes, price, lower bound and ratio. hack/bench-plan.sh runs it.
//
// Usage: go run ./hack/planbench -stevedore bin/stevedore -sizes 5000,20000,100000
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
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
		var out bytes.Buffer
		cmd := exec.Command(*bin, "plan", "-f", filepath.Join(dir, "nodepool.yaml"), "--pods", pods, "-o", "json")
		cmd.Stdout, cmd.Stderr = &out, os.Stderr
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
		var r report
		if err := json.Unmarshal(out.Bytes(), &r); err != nil {
			log.Fatalf("%d pods: reading the plan: %v", n, err)
		}
		if len(r.Unschedulable) > 0 {
			log.Fatalf("%d pods: %d could not be placed", n, len(r.Unschedulable))
		}
		fmt.Printf("| %d | %.1f s | %.1f s | %d MB | %d | %.2f | %.2f | %.3f |\n", n, wall.Seconds(), cpu.Seconds(), rss/1024,
			len(r.NodeClaims), r.PricePerHour, r.LowerBound.PricePerHour, r.LowerBound.Ratio)
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
