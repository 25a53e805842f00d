package runner

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// bufferDir copies the capacity-buffer cluster next to a Scenario whose
// spec is spec.
func bufferDir(t *testing.T, spec string) string {
	t.Helper()
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join("testdata", "capacity-buffer", "cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"cluster.yaml": string(data),
		"scenario.yaml": "apiVersion: stevedore.io/v1alpha1\nkind: Scenario\nmetadata: {name: buffer}\nspec:\n" +
			"  aws: {instanceTypes: [c6i.large, c6i.xlarge]}\n" + spec,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestCapacityBufferHeadroom: a CapacityBuffer of two 1-vCPU chunks on
// 2-vCPU nodes keeps two nodes up with no pod on them, and consolidation
// leaves them; when real pods take that room the buffer is refilled with a
// node per pod; when the buffer is deleted its nodes are consolidated away.
func TestCapacityBufferHeadroom(t *testing.T) {
	dir := bufferDir(t, "  duration: 1h\n  sampleEvery: 1m\n  controller: {feature-gates: CapacityBuffer=true}\n  events:\n"+
		"    - {at: 20m, scale: {kind: Deployment, name: web, namespace: default, replicas: 2}}\n"+
		"    - {at: 40m, delete: {kind: CapacityBuffer, name: headroom, namespace: default}}\n")
	first := simulate(t, dir)
	if second := simulate(t, dir); !bytes.Equal(first, second) {
		t.Fatal("two runs of the same scenario differ")
	}
	doc := decode(t, first)
	for _, step := range []struct {
		at           time.Duration
		nodes, ready int
		running      int
	}{
		{19 * time.Minute, 2, 2, 0}, // the headroom, kept though empty
		{39 * time.Minute, 4, 4, 2}, // the pods took it; two more nodes refill it
		{time.Hour, 2, 2, 2},        // the buffer gone, its nodes go
	} {
		s := sampleAt(t, doc, step.at)
		if s.Nodes != step.nodes || s.ReadyNodes != step.ready || s.RunningPods != step.running {
			t.Errorf("at %s: %d nodes (%d ready), %d running pods; want %d (%d), %d", step.at, s.Nodes, s.ReadyNodes, s.RunningPods, step.nodes, step.ready, step.running)
		}
	}
}

// TestCapacityBufferWithoutGate: without the CapacityBuffer gate a buffer
// does nothing, as in Karpenter.
func TestCapacityBufferWithoutGate(t *testing.T) {
	doc := decode(t, simulate(t, bufferDir(t, "  duration: 20m\n")))
	if len(doc.Final.Nodes) != 0 {
		t.Fatalf("final nodes = %d, want none", len(doc.Final.Nodes))
	}
}
