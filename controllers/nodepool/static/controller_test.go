package static

import (
	"testing"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/test/environment"
)

func TestMain(m *testing.M) { environment.Main(m) }

// TestLeavesOtherProvidersPools: a static NodePool of stevedore's gets the
// NodeClaim it lacks, while one of another provider's node class, short of
// a replica too, is not even looked at: its provider scales it.
func TestLeavesOtherProvidersPools(t *testing.T) {
	e := environment.New(t, environment.Options{Name: "static", Seed: 1, InstanceTypes: []string{"m6i.large"}})
	e.CreateNodeClass()
	replicas := func(n int64) func(*karpv1.NodePool) {
		return func(np *karpv1.NodePool) { np.Spec.Replicas = &n }
	}
	ours := e.CreateNodePool(replicas(1))
	theirs := environment.NewNodePool(e.Name+"-kwok", e.Name)
	theirs.Spec.Template.Spec.NodeClassRef = environment.KWOKNodeClassRef()
	// The name of stevedore's Ready EC2NodeClass: only group and kind differ.
	theirs.Spec.Template.Spec.NodeClassRef.Name = e.Name
	replicas(2)(theirs)
	e.Create(theirs)
	e.CreateForeign(e.Name+"-kwok-1", theirs.Name)

	c := New(e.Kube, e.State, e.Cloud, e.Clock, e.Metrics, 0)
	for range 2 {
		e.SyncState()
		if _, err := c.Reconcile(e.Ctx, Request()); err != nil {
			t.Fatal(err)
		}
	}

	var list karpv1.NodeClaimList
	if err := e.Kube.List(e.Ctx, &list); err != nil {
		t.Fatal(err)
	}
	byPool := map[string]int{}
	for _, nc := range list.Items {
		byPool[nc.Labels[wellknown.LabelNodePool]]++
	}
	if byPool[ours.Name] != 1 || byPool[theirs.Name] != 1 || len(byPool) != 2 {
		t.Errorf("NodeClaims by NodePool %v, want one each: stevedore's new one and the other provider's", byPool)
	}
	for _, msg := range []string{"static nodepool cannot launch now", "static nodepool node limit reached", "static nodepool has no available instance type"} {
		if lines := e.Logs.Lines(msg); len(lines) > 0 {
			t.Errorf("log lines %q: another provider's NodePool was looked at", lines)
		}
	}
}
