package runner

import (
	"bytes"
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
