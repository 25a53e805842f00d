package runner

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stevedore-autoscaler/stevedore/api/karpenter/v1alpha1"
	"github.com/stevedore-autoscaler/stevedore/sim/scenario"
)

// overlayDir writes a Scenario with the given controller settings next to
// the overlay testdata's cluster and, when withOverlay, its NodeOverlay.
func overlayDir(t *testing.T, controller string, withOverlay bool) string {
	t.Helper()
	dir := t.TempDir()
	files := []string{"cluster.yaml"}
	if withOverlay {
		files = append(files, "overlay.yaml")
	}
	for _, name := range files {
		data, err := os.ReadFile(filepath.Join("testdata", "overlay", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	scenario := "apiVersion: stevedore.io/v1alpha1\nkind: Scenario\nmetadata: {name: overlay}\nspec:\n" +
		"  duration: 10m\n  aws: {instanceTypes: [m6i.large, c6i.large]}\n" + controller
	if err := os.WriteFile(filepath.Join(dir, "scenario.yaml"), []byte(scenario), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// finalTypes lists the instance types of the nodes at the end.
func finalTypes(t *testing.T, data []byte) string {
	t.Helper()
	var types []string
	for _, n := range decode(t, data).Final.Nodes {
		types = append(types, n.InstanceType)
	}
	return strings.Join(types, ",")
}

// TestNodeOverlayChangesTheInstanceType: two pods fit on one c6i.large or
// one m6i.large, and the c6i.large is cheaper. A NodeOverlay tripling the
// price of c6i types makes stevedore settle on the m6i.large: the launch
// still lets EC2 pick the cheapest of the NodeClaim's types at its own
// price, as Karpenter's does, and consolidation then replaces the c6i.large,
// which the overlay prices above the m6i.large. Without the overlay, or with
// it but without the NodeOverlay feature gate, the c6i.large stays.
func TestNodeOverlayChangesTheInstanceType(t *testing.T) {
	gate := "  controller: {feature-gates: NodeOverlay=true}\n"
	for _, tc := range []struct {
		name, controller string
		overlay          bool
		want             string
	}{
		{"without overlay", gate, false, "c6i.large"},
		{"with overlay", gate, true, "m6i.large"},
		{"gate off", "", true, "c6i.large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := overlayDir(t, tc.controller, tc.overlay)
			first := simulate(t, dir)
			if got := finalTypes(t, first); got != tc.want {
				t.Fatalf("final nodes %s, want %s", got, tc.want)
			}
			if second := simulate(t, dir); !bytes.Equal(first, second) {
				t.Fatal("two runs of the same scenario differ")
			}
		})
	}
}

// TestNodeOverlayStatusInSimulation: the NodeOverlay status controller runs
// in the simulator with the gate and writes the overlay's conditions.
func TestNodeOverlayStatusInSimulation(t *testing.T) {
	s := testScheme(t)
	run, problems, err := scenario.Load([]string{overlayDir(t, "  controller: {feature-gates: NodeOverlay=true}\n", true)}, s)
	if err != nil {
		t.Fatalf("%v: %v", err, problems)
	}
	r, err := New(Options{Run: run, Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(); err != nil {
		t.Fatal(err)
	}
	objs := r.api.Objects(nodeOverlayGVK)
	if len(objs) != 1 {
		t.Fatalf("%d NodeOverlays, want 1", len(objs))
	}
	o := objs[0].(*v1alpha1.NodeOverlay)
	c := meta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionTypeReady)
	if c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("conditions %+v, want Ready True", o.Status.Conditions)
	}
}
