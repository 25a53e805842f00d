package runner

import (
	"slices"
	"testing"
	"time"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/sim/report"
	"github.com/stevedore-autoscaler/stevedore/sim/scenario"
	"github.com/stevedore-autoscaler/stevedore/sim/whatif"
)

// TestRestoredCluster runs a cluster as a snapshot records it: the
// NodeClaim's instance is running from the start with the network its node
// class selects and the current image, so nothing is launched, drifted or
// disrupted; the ReplicaSet owns its two pods through the UIDs recorded
// with them, so it makes no pod of its own; the instance is billed from the
// start of the run and the NodeClaim keeps its age. The same cluster with
// a new AMI released drifts the node and replaces it once, within the
// PodDisruptionBudget.
func TestRestoredCluster(t *testing.T) {
	s := testScheme(t)
	paths := []string{"testdata/restored"}
	run, problems, err := scenario.Load(paths, s)
	if err != nil {
		t.Fatalf("%v: %v", err, problems)
	}
	if len(problems) > 0 {
		t.Errorf("a snapshot loads without problems, got %v", problems)
	}
	r, doc := runDoc(t, run, s)

	info, ok := r.AWS().Instance("i-0aaaaaaaaaaaaaaa1")
	if !ok {
		t.Fatal("the NodeClaim's instance is not in the account")
	}
	if info.State != fake.StateRunning || info.PrivateDNSName != "ip-10-0-1-5.us-west-2.compute.internal" ||
		info.SubnetID != "subnet-0aaaaaaaaaaaaaaa1" || !slices.Equal(info.SecurityGroupIDs, []string{"sg-0aaaaaaaaaaaaaaa1"}) ||
		info.ImageID != "ami-0aaaaaaaaaaaaaaa1" {
		t.Errorf("restored instance = %+v, want it running as ip-10-0-1-5 in subnet-0aaaaaaaaaaaaaaa1 with sg-0aaaaaaaaaaaaaaa1 and ami-0aaaaaaaaaaaaaaa1", info)
	}
	for _, e := range doc.Events {
		switch e.Kind {
		case report.KindNodeClaimCreated, report.KindNodeClaimLaunched, report.KindDisruptionStarted, report.KindNodeRegistered, report.KindNodeInitialized:
			t.Errorf("as it is, the cluster logs %s %s", e.Kind, e.Object)
		}
	}
	if doc.Final.Pods.Total != 2 || doc.Final.Pods.Running != 2 {
		t.Errorf("pods at the end = %+v, want the ReplicaSet's 2, running (a new pod means its owner reference was lost)", doc.Final.Pods)
	}
	// 30 minutes of one m5.large at the catalog's on-demand price: billed
	// from the start, not from the NodeClaim's creation a day before.
	if want := 0.5; doc.Final.NodeHours != want {
		t.Errorf("node-hours = %v, want %v", doc.Final.NodeHours, want)
	}
	claims := r.API().Objects(nodeClaimGVK)
	if len(claims) != 1 {
		t.Fatalf("%d NodeClaims at the end, want the restored one", len(claims))
	}
	if got := claims[0].GetCreationTimestamp().UTC().Format(time.RFC3339); got != "2026-01-04T00:00:00Z" {
		t.Errorf("the NodeClaim was created at %s in the simulation, want its recorded 2026-01-04T00:00:00Z", got)
	}

	change, lines, err := scenario.ReadChange("change.yaml", []byte("releaseImage: {alias: al2023, id: ami-0bbbbbbbbbbbbbbb1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	changedRun, problems, err := scenario.LoadChanged(paths, nil, s, change)
	if err != nil {
		t.Fatalf("%v: %v", err, problems)
	}
	_, after := runDoc(t, changedRun, s)
	cmp := whatif.Compare(doc, after, lines)
	if n := len(cmp.AsIs.Replaced); n != 0 {
		t.Errorf("as it is, %d nodes are disrupted", n)
	}
	x := cmp.Changed
	if len(x.Replaced) != 1 || x.Replaced[0].Reason != "Drifted" || x.Replaced[0].NodeClaim != "default-x7k2p" || x.Replaced[0].Finished == nil {
		t.Errorf("changed run replaced %+v, want default-x7k2p drifted and gone", x.Replaced)
	}
	if x.Launched != 1 || x.NodesAtEnd != 1 || x.PendingAtEnd != 0 {
		t.Errorf("changed run: %d launched, %d nodes and %d pods pending at the end; want 1, 1, 0", x.Launched, x.NodesAtEnd, x.PendingAtEnd)
	}
	if len(x.BudgetWaits) != 1 || x.BudgetWaits[0].Budget != "shop/web" {
		t.Errorf("budget waits = %+v, want shop/web's (maxUnavailable 1 over 2 pods lets one go at a time)", x.BudgetWaits)
	}
}
