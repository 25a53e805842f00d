package runner

import (
	"os"
	"path/filepath"
	"testing"
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
