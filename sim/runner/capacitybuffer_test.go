package runner

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

const bufferExample = "../../examples/capacity-buffer"

// TestCapacityBufferHeadroom runs examples/capacity-buffer: a CapacityBuffer
// of two 1-vCPU chunks on 2-vCPU nodes keeps two nodes up with no pod on
// them, and consolidation leaves them; when real pods take that room they
// start there and the buffer is refilled with a node per pod; when the
// buffer is deleted its nodes are consolidated away.
func TestCapacityBufferHeadroom(t *testing.T) {
	first := simulate(t, bufferExample)
	if second := simulate(t, bufferExample); !bytes.Equal(first, second) {
		t.Fatal("two runs of the same scenario differ")
	}
	doc := decode(t, first)
	for _, step := range []struct {
		at           time.Duration
		nodes, ready int
		running      int
	}{
		{19 * time.Minute, 2, 2, 0}, // the headroom, kept though empty
		{22 * time.Minute, 2, 2, 2}, // the pods started in it at once
		{39 * time.Minute, 4, 4, 2}, // two more nodes refill it
		{time.Hour, 2, 2, 2},        // the buffer gone, its nodes go
	} {
		s := sampleAt(t, doc, step.at)
		if s.Nodes < step.nodes || s.ReadyNodes < step.ready || s.RunningPods != step.running ||
			(step.at != 22*time.Minute && (s.Nodes != step.nodes || s.ReadyNodes != step.ready)) {
			t.Errorf("at %s: %d nodes (%d ready), %d running pods; want %d (%d), %d", step.at, s.Nodes, s.ReadyNodes, s.RunningPods, step.nodes, step.ready, step.running)
		}
	}
	if got := doc.Final.Disruptions; len(got) == 0 {
		t.Errorf("no disruption after the buffer was deleted")
	}
}

// TestCapacityBufferWithoutGate: without the CapacityBuffer gate a buffer
// does nothing, as in Karpenter.
func TestCapacityBufferWithoutGate(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join(bufferExample, "manifests.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	scenario := "apiVersion: stevedore.io/v1alpha1\nkind: Scenario\nmetadata: {name: buffer}\nspec:\n" +
		"  duration: 20m\n  cluster: {name: buffers}\n  aws: {instanceTypes: [c6i.large, c6i.xlarge]}\n"
	for name, body := range map[string]string{"manifests.yaml": string(data), "scenario.yaml": scenario} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	doc := decode(t, simulate(t, dir))
	if len(doc.Final.Nodes) != 0 {
		t.Fatalf("final nodes = %d, want none", len(doc.Final.Nodes))
	}
}
