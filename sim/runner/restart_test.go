package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"weak"

	"github.com/stevedore-autoscaler/stevedore/sim/scenario"
	"github.com/stevedore-autoscaler/stevedore/sim/watch"
	"github.com/stevedore-autoscaler/stevedore/state"
)

// TestRestartsReleaseReplacedControllers restarts the controller every
// second for a minute, then lets the cluster run. Each restart must let go
// of the controllers it replaced (their cluster state and instance catalog
// with them), so memory stays flat however often the controller restarts;
// and once the restarts stop, the cluster must converge.
func TestRestartsReleaseReplacedControllers(t *testing.T) {
	dir := t.TempDir()
	manifests, err := os.ReadFile(filepath.Join("..", "..", "examples", "chaos", "spot-no-queue", "manifests.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var sc strings.Builder
	sc.WriteString(`apiVersion: stevedore.io/v1alpha1
kind: Scenario
metadata: {name: restarts}
spec:
  seed: 1
  duration: 8m
  cluster: {name: chaos}
  aws: {instanceTypes: [m6i.large, m6i.xlarge, c6i.large, c6i.xlarge, r6i.large]}
  events:
`)
	const restarts = 60
	for i := 1; i <= restarts; i++ {
		fmt.Fprintf(&sc, "    - {at: %ds, restartController: {}}\n", i)
	}
	for name, data := range map[string][]byte{"manifests.yaml": manifests, "scenario.yaml": []byte(sc.String())} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := testScheme(t)
	run, problems, err := scenario.Load([]string{dir}, s)
	if err != nil {
		t.Fatalf("%v: %v", err, problems)
	}
	// When the last generation is built, the one before it still runs;
	// every older one must be unreachable.
	var built []weak.Pointer[state.Cluster]
	var alive []int
	r, err := New(Options{Run: run, Scheme: s, Controllers: func(d *Deps) ([]watch.Controller, error) {
		if len(built) == restarts {
			runtime.GC()
			for i, w := range built[:restarts-1] {
				if w.Value() != nil {
					alive = append(alive, i)
				}
			}
		}
		built = append(built, weak.Make(d.State))
		return Production(d)
	}})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := r.Run()
	if err != nil {
		t.Fatal(err)
	}
	if len(built) != restarts+1 {
		t.Fatalf("controllers built %d times, want %d", len(built), restarts+1)
	}
	if len(alive) > 0 {
		t.Errorf("%d replaced controller generations still reachable at the last restart (%v); want none", len(alive), alive)
	}

	if p := doc.Final.Pods; p.Pending != 0 || p.Running == 0 {
		t.Errorf("after the restarts stopped the cluster did not converge: %+v, not running %v", p, doc.Final.NotRunning)
	}
}
