package snapshot

import (
	"path/filepath"
	"strings"
	"testing"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/sim/report"
	"github.com/stevedore-autoscaler/stevedore/sim/runner"
	"github.com/stevedore-autoscaler/stevedore/sim/scenario"
	"github.com/stevedore-autoscaler/stevedore/test/apiserver"
)

// TestSnapshotRoundTrip writes a snapshot, loads it as `stevedore simulate`
// does and runs it: it loads without a problem, and the cluster runs on as
// it was — the restored node keeps its pods, nothing is launched or
// disrupted, and the ReplicaSet written without its Deployment keeps its two
// pods rather than making new ones.
func TestSnapshotRoundTrip(t *testing.T) {
	c := testCluster()
	// The test cluster's node taint and consolidation would rightly move
	// pods around; here the cluster is to stay as it is.
	c.Nodes[1].Spec.Taints = nil
	c.NodePools[0].Spec.Disruption.ConsolidationPolicy = karpv1.ConsolidationPolicyWhenEmpty
	r := build(t, c, Options{Duration: "30m"})
	dir := filepath.Join(t.TempDir(), "snap")
	if err := Write(dir, r.Files); err != nil {
		t.Fatal(err)
	}
	s := apiserver.Scheme()
	run, problems, err := scenario.Load([]string{dir}, s)
	if err != nil {
		t.Fatalf("%v: %v", err, problems)
	}
	for _, p := range problems {
		t.Errorf("a snapshot loads without problems, got %s", p)
	}
	if run.Name != ScenarioName || run.ClusterName != "demo" || run.AWS.Region != "us-west-2" || len(run.AWS.CurrentImages) != 4 || len(run.AWS.Images) != 1 {
		t.Errorf("run %s, cluster %s, region %s, %d current images, %d images", run.Name, run.ClusterName, run.AWS.Region, len(run.AWS.CurrentImages), len(run.AWS.Images))
	}
	if len(run.Skipped) > 0 {
		t.Errorf("the simulator skips %v", run.Skipped)
	}

	sim, err := runner.New(runner.Options{Run: run, Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := sim.Run()
	if err != nil {
		t.Fatal(err)
	}
	given := map[string]bool{}
	for _, p := range c.Pods {
		given["Pod/"+p.Namespace+"/"+p.Name] = true
	}
	var created []string
	for _, e := range doc.Events {
		switch e.Kind {
		case report.KindNodeClaimCreated, report.KindNodeClaimLaunched, report.KindDisruptionStarted, report.KindNodeRegistered:
			t.Errorf("the cluster as it was logs %s %s %s", e.Kind, e.Object, e.Message)
		case report.KindPodDeleted:
			t.Errorf("%s was deleted", e.Object)
		case report.KindPodBound:
			if !given[e.Object] {
				created = append(created, e.Object)
			}
		}
	}
	// The ReplicaSet of the Deployment has its two pods, the StatefulSet
	// and the DaemonSet theirs: only the canary ReplicaSet and the running
	// Job, whose pods were not in the cluster, make one each.
	for _, name := range created {
		if !strings.HasPrefix(name, "Pod/shop/canary-77c9d-") && !strings.HasPrefix(name, "Pod/batch/report-") {
			t.Errorf("%s was made in the simulation", name)
		}
	}
	if len(created) != 2 || doc.Final.Pods.Total != 6 || doc.Final.Pods.Running != 6 {
		t.Errorf("pods made %v; at the end %+v, want the 4 written and 2 new, running", created, doc.Final.Pods)
	}
}
