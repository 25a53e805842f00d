package runner

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stevedore-autoscaler/stevedore/sim/report"
)

// cluster is a small cluster for event tests: one NodePool (of the capacity
// types given) on al2023@latest, a 6-replica web Deployment with a budget,
// and a catalog of four instance types, which keeps runs fast.
const cluster = `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: KarpenterNodeRole-demo
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [CAPACITY]}]
  disruption:
    consolidateAfter: 1h
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 6
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: web, resources: {requests: {cpu: 500m, memory: 1Gi}}}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: shop}
spec:
  maxUnavailable: 1
  selector: {matchLabels: {app: web}}
`

// scenarioDir writes the cluster (capacity types as a YAML list body, such
// as "spot") and a Scenario whose spec is spec.
func scenarioDir(t *testing.T, capacity, spec string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"cluster.yaml": strings.ReplaceAll(cluster, "CAPACITY", capacity),
		"scenario.yaml": "apiVersion: stevedore.io/v1alpha1\nkind: Scenario\nmetadata: {name: test}\nspec:\n" +
			"  aws: {instanceTypes: [m6i.large, m6i.xlarge, c6i.large, c6i.xlarge]" + awsExtra(spec) + "}\n" + stripAWS(spec),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// awsExtra pulls an "  aws: ..." line's fields out of spec, to merge them
// with the instance types.
func awsExtra(spec string) string {
	for _, line := range strings.Split(spec, "\n") {
		if rest, ok := strings.CutPrefix(line, "  aws: {"); ok {
			return ", " + strings.TrimSuffix(rest, "}")
		}
	}
	return ""
}

func stripAWS(spec string) string {
	var out []string
	for _, line := range strings.Split(spec, "\n") {
		if !strings.HasPrefix(line, "  aws: {") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

func run(t *testing.T, capacity, spec string) *report.Document {
	t.Helper()
	return decode(t, simulate(t, scenarioDir(t, capacity, spec)))
}

func allRunning(t *testing.T, doc *report.Document, want int) {
	t.Helper()
	if p := doc.Final.Pods; p.Running != want || p.Pending != 0 {
		t.Errorf("final pods %+v, want %d running; unschedulable %v", p, want, doc.Final.Unschedulable)
	}
}

func TestSpotInterruptionWithQueue(t *testing.T) {
	doc := run(t, "spot", "  duration: 30m\n  aws: {interruptionQueue: demo}\n  events: [{at: 10m, spotInterruption: {count: 1}}]\n")
	got := eventsOf(doc, report.KindInterruptionReceived)
	if len(got) != 1 || got[0].Reason != "SpotInterrupted" {
		t.Fatalf("interruptions %+v", got)
	}
	victim := got[0].NodeClaim
	var terminated, replaced time.Time
	for _, e := range doc.Events {
		if e.Kind == report.KindInstanceTerminated && e.NodeClaim == victim && terminated.IsZero() {
			terminated = e.Time
		}
		if e.Kind == report.KindNodeClaimCreated && e.Time.After(got[0].Time.Add(-time.Second)) && replaced.IsZero() {
			replaced = e.Time
		}
	}
	if replaced.IsZero() || !replaced.Before(doc.Start.Add(12*time.Minute)) {
		t.Errorf("replacement created at %s, want within the two-minute warning", replaced.Sub(doc.Start))
	}
	if evicted := eventsOf(doc, report.KindPodEvicted); len(evicted) == 0 {
		t.Error("the interrupted node was not drained")
	}
	if doc.Final.Disruptions[report.ReasonInterrupted] != 1 {
		t.Errorf("disruptions %v", doc.Final.Disruptions)
	}
	allRunning(t, doc, 6)
}

func TestSpotInterruptionWithoutQueue(t *testing.T) {
	doc := run(t, "spot", "  duration: 30m\n  events: [{at: 10m, spotInterruption: {count: 1}}]\n")
	if got := eventsOf(doc, report.KindInterruptionReceived); len(got) != 0 {
		t.Errorf("interruptions handled without a queue: %+v", got)
	}
	terminated := eventsOf(doc, report.KindInstanceTerminated)
	if len(terminated) != 1 || !terminated[0].Time.Equal(doc.Start.Add(12*time.Minute)) {
		t.Fatalf("terminations %+v, want one two minutes after the notice", terminated)
	}
	node := terminated[0].Node
	for _, e := range eventsOf(doc, report.KindPodEvicted) {
		if e.Node == node {
			t.Errorf("pod %s was drained from %s although no warning was handled", e.Object, node)
		}
	}
	if !nodeDeleted(doc, node) {
		t.Errorf("node %s of the terminated instance is still there", node)
	}
	allRunning(t, doc, 6)
}

// Pods that come and go after an unhandled spot interruption wake the
// doomed node's kubelet before the instance ends; that wake must not replace
// the one at the termination. The node still goes NotReady and away with its
// instance, and its pods are replaced.
func TestSpotInterruptionWithoutQueueAndChurn(t *testing.T) {
	doc := run(t, "spot", "  duration: 40m\n  events:\n"+
		"  - {at: 10m, spotInterruption: {count: 1}}\n"+
		"  - {at: 10m10s, scale: {kind: Deployment, namespace: shop, name: web, replicas: 2}}\n"+
		"  - {at: 10m40s, scale: {kind: Deployment, namespace: shop, name: web, replicas: 6}}\n")
	terminated := eventsOf(doc, report.KindInstanceTerminated)
	if len(terminated) == 0 || !terminated[0].Time.Equal(doc.Start.Add(12*time.Minute)) {
		t.Fatalf("terminations %+v, want the first two minutes after the notice", terminated)
	}
	node := terminated[0].Node
	if !nodeDeleted(doc, node) {
		t.Errorf("node %s of the terminated instance is still there at the end", node)
	}
	allRunning(t, doc, 6)
}

// nodeDeleted reports whether the run deleted the node.
func nodeDeleted(doc *report.Document, node string) bool {
	for _, e := range eventsOf(doc, report.KindNodeDeleted) {
		if e.Node == node {
			return true
		}
	}
	return false
}

func TestInsufficientCapacityFallsBack(t *testing.T) {
	doc := run(t, "spot", "  duration: 15m\n  events: [{at: 0s, insufficientCapacity: {instanceTypes: [c6i.large, m6i.large], capacityType: spot}}]\n")
	for _, n := range doc.Final.Nodes {
		if n.InstanceType == "c6i.large" || n.InstanceType == "m6i.large" {
			t.Errorf("node %s launched into a pool without capacity", n.Name)
		}
	}
	if len(doc.Final.Nodes) == 0 {
		t.Fatal("no nodes")
	}
	allRunning(t, doc, 6)
}

func TestReleaseImageDriftsAliasNodes(t *testing.T) {
	doc := run(t, "on-demand", "  duration: 1h\n  events: [{at: 20m, releaseImage: {alias: al2023, id: ami-00000000000000001}}]\n")
	if doc.Final.Disruptions[report.ReasonDrifted] == 0 {
		t.Errorf("no drift after the release: %v", doc.Final.Disruptions)
	}
	for _, n := range doc.Final.Nodes {
		if n.ImageID != "ami-00000000000000001" {
			t.Errorf("node %s still runs %s", n.Name, n.ImageID)
		}
	}
	allRunning(t, doc, 6)
}

func TestNodeFailureIsRepaired(t *testing.T) {
	doc := run(t, "on-demand", "  duration: 1h30m\n  controller: {feature-gates: NodeRepair=true}\n  events: [{at: 10m, nodeFailure: {count: 1}}]\n")
	if doc.Final.Disruptions[report.ReasonUnhealthy] != 1 {
		t.Errorf("disruptions %v, want one Unhealthy", doc.Final.Disruptions)
	}
	for _, n := range doc.Final.Nodes {
		if !n.Ready {
			t.Errorf("node %s is not ready at the end", n.Name)
		}
	}
	allRunning(t, doc, 6)
}

func TestRestartLosesNothing(t *testing.T) {
	// Restarts while the first nodes launch, and again during a drift
	// replacement.
	doc := run(t, "on-demand", "  duration: 1h\n  events:\n"+
		"    - {at: 1s, restartController: {}}\n"+
		"    - {at: 20m, releaseImage: {alias: al2023, id: ami-00000000000000002}}\n"+
		"    - {at: 20m50s, restartController: {}}\n"+
		"    - {at: 21m30s, restartController: {}}\n")
	launched := map[string]bool{}
	for _, e := range eventsOf(doc, report.KindNodeClaimLaunched) {
		launched[e.NodeClaim] = true
	}
	deleted := map[string]bool{}
	for _, e := range eventsOf(doc, report.KindNodeClaimDeleted) {
		deleted[e.NodeClaim] = true
	}
	if alive := len(launched) - len(deleted); alive != len(doc.Final.Nodes) {
		t.Errorf("%d NodeClaims launched and not deleted, %d nodes at the end", alive, len(doc.Final.Nodes))
	}
	for _, n := range doc.Final.Nodes {
		if n.ImageID != "ami-00000000000000002" {
			t.Errorf("node %s still runs %s", n.Name, n.ImageID)
		}
	}
	if s := doc.Samples[len(doc.Samples)-1]; s.Nodes != len(doc.Final.Nodes) {
		t.Errorf("last sample %+v", s)
	}
	allRunning(t, doc, 6)
	if len(doc.Warnings) > 0 {
		t.Errorf("warnings %v", doc.Warnings)
	}
}

func TestObjectEvents(t *testing.T) {
	doc := run(t, "on-demand", "  duration: 20m\n  events:\n"+
		"    - {at: 1m, scale: {kind: Deployment, namespace: shop, name: web, replicas: 2}}\n"+
		"    - {at: 2m, patch: {kind: Deployment, namespace: shop, name: web, type: json, patch: [{op: replace, path: /spec/replicas, value: 3}]}}\n"+
		"    - at: 3m\n      apply: {apiVersion: v1, kind: Pod, metadata: {name: solo, namespace: tools}, spec: {containers: [{name: c, image: c}]}}\n"+
		"    - {at: 4m, delete: {kind: PodDisruptionBudget, namespace: shop, name: web}}\n"+
		"    - {at: 5m, patch: {kind: Deployment, namespace: shop, name: missing, patch: {spec: {replicas: 1}}}}\n"+
		"    - {at: 6m, patch: {kind: NodePool, name: default, patch: {spec: {weight: 1000}}}}\n")
	var reasons []string
	for _, e := range eventsOf(doc, report.KindScenarioEvent) {
		reasons = append(reasons, e.Reason)
	}
	if got := strings.Join(reasons, ","); got != "Scale,Patch,Apply,Delete,Failed,Failed" {
		t.Errorf("scenario events %s", got)
	}
	if len(doc.Warnings) != 2 || !strings.Contains(doc.Warnings[1], "weight") {
		t.Errorf("warnings %v", doc.Warnings)
	}
	allRunning(t, doc, 4)
}

// TestEveryEventKindIsDeterministic runs a scenario with every kind of
// event twice and compares the bytes.
func TestEveryEventKindIsDeterministic(t *testing.T) {
	spec := "  duration: 2h\n  aws: {interruptionQueue: demo}\n  controller: {feature-gates: NodeRepair=true, enable-zonal-shift: true}\n  events:\n" +
		"    - {at: 5m, scale: {kind: Deployment, namespace: shop, name: web, replicas: 12}}\n" +
		"    - {at: 10m, spotInterruption: {count: 1}}\n" +
		"    - {at: 15m, insufficientCapacity: {instanceTypes: [c6i.large], capacityType: spot, for: 20m}}\n" +
		"    - {at: 20m, nodeFailure: {count: 1}}\n" +
		"    - {at: 25m, restartController: {}}\n" +
		"    - {at: 30m, zonalShift: {zone: us-east-1a, for: 20m}}\n" +
		"    - {at: 40m, releaseImage: {alias: al2023, id: ami-00000000000000003}}\n" +
		"    - at: 50m\n      apply: {apiVersion: batch/v1, kind: Job, metadata: {name: report, namespace: shop}, spec: {parallelism: 3, completions: 6, template: {metadata: {annotations: {simulate.stevedore.io/duration: 10m}}, spec: {restartPolicy: Never, containers: [{name: c, image: c, resources: {requests: {cpu: 1}}}]}}}}\n" +
		"    - {at: 1h, delete: {kind: Deployment, namespace: shop, name: web}}\n"
	dir := scenarioDir(t, "spot", spec)
	first, second := simulate(t, dir), simulate(t, dir)
	if !bytes.Equal(first, second) {
		t.Fatal("two runs of the same scenario and seed differ")
	}
	doc := decode(t, first)
	for _, kind := range []string{report.KindInterruptionReceived, report.KindDisruptionStarted, report.KindPodEvicted, report.KindNodeClaimDeleted} {
		if len(eventsOf(doc, kind)) == 0 {
			t.Errorf("no %s event", kind)
		}
	}
	if len(doc.Warnings) > 0 {
		t.Errorf("warnings %v", doc.Warnings)
	}
	// The Deployment is gone and the Job finished: nothing runs at the end.
	if p := doc.Final.Pods; p.Total != 0 {
		t.Errorf("final pods %+v", p)
	}
}

func TestApplyKeepsWhatControllersAdded(t *testing.T) {
	doc := run(t, "on-demand", "  duration: 10m\n  events:\n"+
		"    - at: 5m\n      apply:\n"+
		"        apiVersion: karpenter.k8s.aws/v1\n        kind: EC2NodeClass\n        metadata: {name: default, labels: {team: web}}\n"+
		"        spec: {role: KarpenterNodeRole-demo, amiSelectorTerms: [{alias: al2023@latest}], subnetSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}], securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]}\n")
	got := eventsOf(doc, report.KindScenarioEvent)
	if len(got) != 1 || got[0].Reason != "Apply" || got[0].Message != "configured" {
		t.Fatalf("apply: %+v", got)
	}
	for _, np := range doc.Final.NodePools {
		if !np.Ready {
			t.Errorf("NodePool %s not ready after re-applying its node class: %s", np.Name, np.Message)
		}
	}
	allRunning(t, doc, 6)
}

// TestAWSFaults throttles or breaks AWS calls: the controllers keep trying,
// and once the fault is over the pods run.
func TestAWSFaults(t *testing.T) {
	scaleUp := "    - {at: 10m, scale: {kind: Deployment, namespace: shop, name: web, replicas: 12}}\n"
	for _, tc := range []struct {
		name, events string
		// launches fail during [from, until); none succeeds in it.
		from, until time.Duration
		message     string
		running     int
	}{
		{"CreateFleet throttled for 10 minutes", "    - {at: 0s, awsFault: {operations: [CreateFleet], error: throttling, for: 10m}}\n", 0, 10 * time.Minute,
			"CreateFleet fail with RequestLimitExceeded until 2026-01-05T00:10:00Z", 6},
		{"CreateFleet and DescribeInstances unavailable for 5 minutes", "    - {at: 0s, awsFault: {operations: [CreateFleet, DescribeInstances], error: unavailable, for: 5m}}\n", 0, 5 * time.Minute,
			"CreateFleet, DescribeInstances fail with ServiceUnavailable until 2026-01-05T00:05:00Z", 6},
		{"the next 3 launches fail", "    - {at: 10m, awsFault: {operations: [CreateFleet], error: serverError, times: 3}}\n" + scaleUp, 10 * time.Minute, 10*time.Minute + 5*time.Second,
			"the next 3 calls of CreateFleet fail with InternalError", 12},
		{"denied twice", "    - {at: 10m, awsFault: {operations: [CreateFleet], error: UnauthorizedOperation, times: 2}}\n" + scaleUp, 10 * time.Minute, 10*time.Minute + 5*time.Second,
			"the next 2 calls of CreateFleet fail with UnauthorizedOperation", 12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := run(t, "on-demand", "  duration: 30m\n  events:\n"+tc.events)
			var faults []report.Event
			for _, e := range eventsOf(doc, report.KindScenarioEvent) {
				if e.Reason == "AWSFault" {
					faults = append(faults, e)
				}
			}
			if len(faults) != 1 || faults[0].Message != tc.message {
				t.Fatalf("scenario events %+v, want one AWSFault: %s", faults, tc.message)
			}
			failed := 0
			for _, e := range eventsOf(doc, report.KindNodeClaimLaunchFailed) {
				if at := e.Time.Sub(doc.Start); at >= tc.from && at < tc.until {
					failed++
				}
			}
			if failed == 0 {
				t.Errorf("no launch failed between %s and %s", tc.from, tc.until)
			}
			for _, e := range eventsOf(doc, report.KindNodeClaimLaunched) {
				if at := e.Time.Sub(doc.Start); at >= tc.from && at < tc.until {
					t.Errorf("%s launched at %s, during the fault", e.NodeClaim, at)
				}
			}
			allRunning(t, doc, tc.running)
		})
	}
}
