package runner

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stevedore-autoscaler/stevedore/sim/report"
)

// staticDir copies the parity-static cluster next to a Scenario whose spec
// is spec.
func staticDir(t *testing.T, spec string) string {
	t.Helper()
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join("testdata", "parity-static", "cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"cluster.yaml": string(data),
		"scenario.yaml": "apiVersion: stevedore.io/v1alpha1\nkind: Scenario\nmetadata: {name: static}\nspec:\n" +
			"  aws: {instanceTypes: [m6i.large, m6i.xlarge, c6i.large, c6i.xlarge]}\n" + spec,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestStaticNodePoolHoldsReplicas(t *testing.T) {
	doc := decode(t, simulate(t, staticDir(t, "  duration: 1h\n  controller: {feature-gates: StaticCapacity=true}\n")))
	if len(doc.Final.Nodes) != 3 {
		t.Fatalf("final nodes = %d, want the 3 replicas of an empty static NodePool, never consolidated", len(doc.Final.Nodes))
	}
}

func TestStaticNodePoolWithoutGate(t *testing.T) {
	doc := decode(t, simulate(t, staticDir(t, "  duration: 30m\n")))
	if len(doc.Final.Nodes) != 0 {
		t.Fatalf("final nodes = %d, want none: replicas act only with the StaticCapacity gate, as in Karpenter", len(doc.Final.Nodes))
	}
}

// TestStaticNodePoolScaleEvent scales a static NodePool mid-run, as kubectl
// scale nodepool does through the scale subresource (spec.replicas), with a
// scale event and with a patch of spec.replicas: the controller launches the
// missing nodes and deletes the surplus.
func TestStaticNodePoolScaleEvent(t *testing.T) {
	for _, tc := range []struct {
		name, events string
		want         []string
	}{
		{"scale", "    - {at: 15m, scale: {kind: NodePool, name: static, replicas: 5}}\n" +
			"    - {at: 35m, scale: {kind: NodePool, name: static, replicas: 1}}\n",
			[]string{"Scale NodePool/static: scaled to 5 replicas", "Scale NodePool/static: scaled to 1 replicas"}},
		{"patch", "    - {at: 15m, patch: {kind: NodePool, name: static, patch: {spec: {replicas: 5}}}}\n" +
			"    - {at: 35m, patch: {kind: NodePool, name: static, type: json, patch: [{op: replace, path: /spec/replicas, value: 1}]}}\n",
			[]string{"Patch NodePool/static: patched", "Patch NodePool/static: patched"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := staticDir(t, "  duration: 1h\n  sampleEvery: 1m\n  controller: {feature-gates: StaticCapacity=true}\n  events:\n"+tc.events)
			first := simulate(t, dir)
			if second := simulate(t, dir); !bytes.Equal(first, second) {
				t.Fatal("two runs of the same scenario differ")
			}
			doc := decode(t, first)
			var got []string
			for _, e := range eventsOf(doc, report.KindScenarioEvent) {
				got = append(got, e.Reason+" "+e.Object+": "+e.Message)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("scenario events %q, want %q", got, tc.want)
			}
			for _, step := range []struct {
				at    time.Duration
				nodes int
			}{{14 * time.Minute, 3}, {34 * time.Minute, 5}, {time.Hour, 1}} {
				if s := sampleAt(t, doc, step.at); s.Nodes != step.nodes || s.ReadyNodes != step.nodes {
					t.Errorf("at %s: %d nodes (%d ready), want %d", step.at, s.Nodes, s.ReadyNodes, step.nodes)
				}
			}
			if len(doc.Final.Nodes) != 1 {
				t.Errorf("final nodes = %d, want 1", len(doc.Final.Nodes))
			}
		})
	}
}

// TestScaleDynamicNodePool: the API server refuses to scale a dynamic
// NodePool (it would turn static), and so does the simulator.
func TestScaleDynamicNodePool(t *testing.T) {
	dir := staticDir(t, "  duration: 10m\n  events: [{at: 1m, scale: {kind: NodePool, name: dynamic, replicas: 2}}]\n")
	pool := "---\napiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: dynamic}\nspec:\n  template:\n    spec:\n" +
		"      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n" +
		"      requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]\n"
	f, err := os.OpenFile(filepath.Join(dir, "cluster.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(pool); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	doc := decode(t, simulate(t, dir))
	evs := eventsOf(doc, report.KindScenarioEvent)
	if len(evs) != 1 || evs[0].Reason != reasonFailed || !strings.Contains(evs[0].Message, "NodePool dynamic is dynamic") {
		t.Fatalf("scenario events %+v, want the scale refused", evs)
	}
	if len(doc.Final.Nodes) != 0 {
		t.Errorf("final nodes = %d, want none", len(doc.Final.Nodes))
	}
}

// balancedDir copies the parity-balanced cluster next to a NodePool of the
// consolidation policy and a Scenario that scales the small pods to peak,
// then to 10.
func balancedDir(t *testing.T, policy string, peak int) string {
	t.Helper()
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join("testdata", "parity-balanced", "cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"cluster.yaml": string(data),
		"nodepool.yaml": "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: default}\nspec:\n  template:\n    spec:\n" +
			"      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n" +
			"      requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]\n" +
			"  disruption: {consolidationPolicy: " + policy + ", consolidateAfter: 0s, budgets: [{nodes: \"100%\"}]}\n",
		"scenario.yaml": "apiVersion: stevedore.io/v1alpha1\nkind: Scenario\nmetadata: {name: balanced}\nspec:\n" +
			"  aws: {instanceTypes: [m6i.large, m6i.xlarge, m6i.4xlarge]}\n  duration: 1h\n  sampleEvery: 1m\n  events:\n" +
			fmt.Sprintf("    - {at: 1m, scale: {kind: Deployment, name: small, replicas: %d}}\n", peak) +
			"    - {at: 20m, scale: {kind: Deployment, name: small, replicas: 10}}\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// balancedRun runs the parity-balanced scenario and returns its report,
// after checking that a second run gives the same bytes.
func balancedRun(t *testing.T, policy string, peak int) *report.Document {
	t.Helper()
	dir := balancedDir(t, policy, peak)
	first := simulate(t, dir)
	if second := simulate(t, dir); !bytes.Equal(first, second) {
		t.Fatal("two runs of the same scenario differ")
	}
	return decode(t, first)
}

// balancedOutcome is what a parity-balanced run did with the small pods'
// node after they were scaled down.
type balancedOutcome struct {
	// replaced: a consolidation replace was started.
	replaced bool
	// rejected: a BalancedScoreTooLow verdict was recorded.
	rejected bool
	// smallNode is the instance type the 10 small pods end on.
	smallNode string
	cost      float64
}

func outcome(doc *report.Document) balancedOutcome {
	var o balancedOutcome
	for _, e := range doc.Events {
		switch {
		case e.Kind == report.KindDisruptionStarted && strings.Contains(e.Message, "via replace"):
			o.replaced = true
		case e.Kind == report.KindUnconsolidatable && strings.Contains(e.Message, "(BalancedScoreTooLow)"):
			o.rejected = true
		}
	}
	for _, n := range doc.Final.Nodes {
		if n.Pods == 10 {
			o.smallNode = n.InstanceType
		}
	}
	o.cost = doc.Final.Cost
	return o
}

// TestBalancedRejectsLowSavingsMove: with the small pods' m6i.xlarge down
// to 10 of them, replacing it with an m6i.large saves a quarter of the
// NodePool's cost but moves 11 of its 13 disruption units: score 0.30,
// below 1/2. WhenEmptyOrUnderutilized takes the move; Balanced keeps the
// node and records why.
func TestBalancedRejectsLowSavingsMove(t *testing.T) {
	def := outcome(balancedRun(t, "WhenEmptyOrUnderutilized", 30))
	if !def.replaced || def.rejected || def.smallNode != "m6i.large" {
		t.Fatalf("WhenEmptyOrUnderutilized: %+v, want the m6i.xlarge replaced by an m6i.large", def)
	}
	doc := balancedRun(t, "Balanced", 30)
	bal := outcome(doc)
	if bal.replaced || !bal.rejected || bal.smallNode != "m6i.xlarge" {
		t.Fatalf("Balanced: %+v, want the m6i.xlarge kept with a BalancedScoreTooLow verdict", bal)
	}
	if bal.cost <= def.cost {
		t.Errorf("Balanced cost $%.4f, want more than WhenEmptyOrUnderutilized's $%.4f: it kept the larger node", bal.cost, def.cost)
	}
	for _, e := range eventsOf(doc, report.KindUnconsolidatable) {
		if strings.Contains(e.Message, "BalancedScoreTooLow") && !strings.Contains(e.Message, "score 0.30 < threshold 0.50") {
			t.Errorf("verdict %q, want score 0.30 against 0.50", e.Message)
		}
	}
}

// TestBalancedTakesHighSavingsMove: the same NodePool under Balanced, the
// small pods' node an m6i.4xlarge: replacing it saves at least $0.576/h of
// $0.960/h (60%; the replacement may be an m6i.large or m6i.xlarge) for the
// same 11 of 13 disruption units, score 0.71, and it is replaced.
func TestBalancedTakesHighSavingsMove(t *testing.T) {
	o := outcome(balancedRun(t, "Balanced", 100))
	if !o.replaced || o.rejected || o.smallNode != "m6i.large" {
		t.Fatalf("Balanced: %+v, want the m6i.4xlarge replaced by an m6i.large without a BalancedScoreTooLow verdict", o)
	}
}
