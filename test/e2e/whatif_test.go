//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	"github.com/stevedore-autoscaler/stevedore/sim/whatif"
)

// whatIfAccount is TestWhatIf's account, a region of its own.
var whatIfAccount = accountSpec{Cluster: "whatif", Region: "eu-west-1", Seed: 17}

// TestWhatIf is the what-if path on a live cluster: four nodes run a
// Deployment of four pods (one per node) under a PodDisruptionBudget of
// maxUnavailable 1; `stevedore snapshot` writes the cluster, and
// `stevedore simulate SNAPSHOT --change` simulates moving the EC2NodeClass
// to a new AMI under a Drifted budget of 1. The same change is then made
// on the cluster, and the real rollout is checked against the simulated
// one: the same NodeClaims replaced, one at a time in both (the budget's
// count at each decision in the simulation, the nodes draining at once on
// the cluster), every one of them finished, and durations of the same
// order.
func TestWhatIf(t *testing.T) {
	ctx := t.Context()
	acc := serveAccount(t, whatIfAccount)
	startController(t, controllerOptions{name: "stevedore-whatif", account: acc.URL})
	pool := "whatif-" + suffix()
	createPool(t, poolSpec{
		Name: pool, Cluster: whatIfAccount.Cluster,
		Disruption: `    consolidationPolicy: WhenEmpty
    consolidateAfter: 30s
    budgets:
      - {nodes: "1", reasons: [Drifted]}
      - {nodes: "100%", reasons: [Empty, Underutilized]}`,
	})
	ns := newNamespace(t, "whatif")
	const replicas = 4
	create(t, workloadYAML, workloadSpec{
		Name: "web", Namespace: ns, Pool: pool, Replicas: replicas, CPU: "500m", Memory: "512Mi",
		Extra: `      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - {labelSelector: {matchLabels: {app: web}}, topologyKey: kubernetes.io/hostname}`,
	})
	create(t, `apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: {{.}}}
spec:
  maxUnavailable: 1
  selector: {matchLabels: {app: web}}
`, ns)
	waitRunning(t, 2*time.Minute, ns, "web", replicas)
	var before poolState
	eventually(t, time.Minute, "one initialized NodeClaim per pod", func(ctx context.Context) error {
		var err error
		if before, err = readPool(ctx, pool); err != nil {
			return err
		}
		if n := len(before.initialized()); n != replicas || len(before.claims) != replicas {
			return fmt.Errorf("%d NodeClaims, %d initialized", len(before.claims), n)
		}
		return nil
	})
	waitForBudget(t, ns, "web", replicas, 1)
	oldClaims := before.initialized()
	slices.Sort(oldClaims)

	// The snapshot, with the account's boot and ready times and the
	// controller's timers of this suite, as a user would set their own.
	dir := filepath.Join(t.TempDir(), "snapshot")
	out := runStevedore(t, "snapshot", dir, "--kubeconfig="+testCluster.Kubeconfig,
		"--cluster-name="+whatIfAccount.Cluster, "--region="+whatIfAccount.Region, "--duration=20m")
	t.Logf("snapshot: %s", out)
	t.Cleanup(func() {
		// Keep the snapshot with the component logs when the test fails.
		if t.Failed() {
			keep := filepath.Join(testCluster.LogDir(), "whatif-snapshot")
			if err := os.CopyFS(keep, os.DirFS(dir)); err == nil {
				t.Logf("the snapshot is kept in %s", keep)
			}
		}
	})
	tuneSnapshot(t, filepath.Join(dir, "scenario.yaml"))
	change := filepath.Join(t.TempDir(), "change.yaml")
	patch := `{"spec":{"amiSelectorTerms":[{"id":"` + amiNew + `"}]}}`
	if err := os.WriteFile(change, []byte("patch: {kind: EC2NodeClass, name: "+pool+", patch: "+patch+"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var cmp whatif.Comparison
	if err := json.Unmarshal([]byte(runStevedore(t, "simulate", dir, "--change", change, "-o", "json")), &cmp); err != nil {
		t.Fatal(err)
	}
	asIs, simulated := ofPool(cmp.AsIs.Replaced, pool), ofPool(cmp.Changed.Replaced, pool)
	if len(asIs) != 0 {
		t.Errorf("as it is, the simulation disrupts %+v", asIs)
	}
	if got := claimNames(simulated); !slices.Equal(got, oldClaims) {
		t.Errorf("the simulation replaces %v, want every old NodeClaim %v", got, oldClaims)
	}
	for _, r := range simulated {
		if r.Reason != "Drifted" || r.Finished == nil {
			t.Errorf("simulated replacement %+v: want Drifted and finished", r)
		}
	}
	peak := false
	for _, p := range cmp.Changed.BudgetPeaks {
		if p.NodePool == pool && p.Reason == "Drifted" {
			peak = true
			if p.Disrupting != 1 || p.Allowed != 1 {
				t.Errorf("the simulation disrupts %d nodes at once for drift, %d allowed; want 1 of 1", p.Disrupting, p.Allowed)
			}
		}
	}
	if !peak {
		t.Errorf("the simulation reports no Drifted budget use for %s: %+v", pool, cmp.Changed.BudgetPeaks)
	}
	if cmp.Changed.PendingAtEnd != 0 {
		t.Errorf("%d pods pending at the end of the simulated rollout", cmp.Changed.PendingAtEnd)
	}
	simTook := rolloutSpan(simulated)

	// The real rollout.
	mon := monitor(t, 250*time.Millisecond, func(ctx context.Context, m *observation) error {
		s, err := readPool(ctx, pool)
		if err != nil {
			return err
		}
		busy := 0
		for i := range s.nodes {
			if s.draining(&s.nodes[i]) {
				busy++
			}
		}
		m.max("nodes draining at once", busy)
		return nil
	})
	started := time.Now()
	if err := kube.Patch(ctx, &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: pool}}, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
	eventually(t, 6*time.Minute, "every old NodeClaim replaced by one on the new AMI", func(ctx context.Context) error {
		s, err := readPool(ctx, pool)
		if err != nil {
			return err
		}
		var left []string
		for _, nc := range s.claims {
			if slices.Contains(oldClaims, nc.Name) {
				left = append(left, nc.Name)
			} else if nc.Status.ImageID != amiNew {
				return fmt.Errorf("NodeClaim %s runs image %q", nc.Name, nc.Status.ImageID)
			}
		}
		if len(left) > 0 {
			return fmt.Errorf("old NodeClaims left: %v", left)
		}
		return nil
	})
	realTook := time.Since(started)
	waitRunning(t, 2*time.Minute, ns, "web", replicas)
	obs := mon.stop()
	t.Logf("rollout of %d nodes: simulated %s, real %s; %s", len(oldClaims), simTook.Round(time.Second), realTook.Round(time.Second), obs)
	if got := obs.maxs["nodes draining at once"]; got > 1 {
		t.Errorf("%d nodes drained at once on the cluster; the Drifted budget allows 1", got)
	}
	// The simulation runs the same controllers with the same timers on
	// virtual time; the cluster adds API and kubelet latency (KWOK, the
	// real scheduler) on a shared machine. Same order of magnitude, no
	// closer: a factor of 3 either way, with 30 s of slack.
	if simTook > 3*realTook+30*time.Second || realTook > 3*simTook+30*time.Second {
		t.Errorf("the simulated rollout took %s and the real one %s: more than 3 times apart", simTook, realTook)
	}
}

// runStevedore runs the suite's stevedore binary and returns its standard
// output; a failure fails the test with its standard error.
func runStevedore(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), stevedoreBin, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("stevedore %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// tuneSnapshot sets, in a snapshot's Scenario, what the snapshot cannot
// read from the cluster: the account's boot and ready times, and the
// controller settings this suite runs the controller with.
func tuneSnapshot(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var sc map[string]any
	if err := yaml.Unmarshal(data, &sc); err != nil {
		t.Fatal(err)
	}
	spec, _ := sc["spec"].(map[string]any)
	aws, _ := spec["aws"].(map[string]any)
	if spec == nil || aws == nil {
		t.Fatalf("%s has no spec.aws:\n%s", path, data)
	}
	aws["bootTime"], aws["readyTime"] = "3s", "2s"
	spec["controller"] = map[string]any{"batch-idle-duration": "1s", "batch-max-duration": "5s", "disruption-validation-delay": "5s"}
	if data, err = yaml.Marshal(sc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// ofPool keeps the replacements of the pool's NodeClaims (named
// <pool>-<suffix>).
func ofPool(rs []whatif.Replacement, pool string) []whatif.Replacement {
	var out []whatif.Replacement
	for _, r := range rs {
		if strings.HasPrefix(r.NodeClaim, pool+"-") {
			out = append(out, r)
		}
	}
	return out
}

func claimNames(rs []whatif.Replacement) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.NodeClaim)
	}
	slices.Sort(out)
	return out
}

// rolloutSpan is the time from the first replacement's start to the last
// one's end.
func rolloutSpan(rs []whatif.Replacement) time.Duration {
	if len(rs) == 0 {
		return 0
	}
	first, last := rs[0].Started, rs[0].Started
	for _, r := range rs {
		if r.Started.Before(first) {
			first = r.Started
		}
		if r.Finished != nil && r.Finished.After(last) {
			last = *r.Finished
		}
	}
	return last.Sub(first)
}
