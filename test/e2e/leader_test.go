//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
)

// TestLeaderElection runs two controller processes, as two replicas of the
// Deployment would run, against one simulated account. The account has to
// be one for both, as an AWS account is: the test process holds it and
// serves it to both on loopback (--simulated-account=http://127.0.0.1:…),
// and plays its kubelets. The first controller takes the Lease; in the middle
// of a drift rollout (a replacement launched, the old node tainted) it is
// killed with SIGKILL, so it neither releases the Lease nor finishes what
// it started. The second takes over once the Lease expires, finds the
// command in the API and completes the rollout. Nothing leaks: at the end
// every instance of the pool belongs to a NodeClaim and every NodeClaim has
// its instance, and no node is left tainted.
func TestLeaderElection(t *testing.T) {
	ctx := t.Context()
	spec := accountSpec{Cluster: "e2e-leader", Region: "eu-west-1", Seed: 12}
	acc := serveAccount(t, spec)
	lease := "stevedore-e2e-" + suffix()
	holder := func(ctx context.Context) (string, error) {
		l := &coordinationv1.Lease{}
		if err := kube.Get(ctx, client.ObjectKey{Namespace: "default", Name: lease}, l); err != nil {
			return "", err
		}
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
			return "", errors.New("no holder")
		}
		return *l.Spec.HolderIdentity, nil
	}

	first := startController(t, controllerOptions{name: "stevedore-leader-a", account: acc.URL, leaderElectionID: lease})
	var leader string
	eventually(t, time.Minute, "the first controller holds the Lease", func(ctx context.Context) (err error) {
		leader, err = holder(ctx)
		return err
	})
	startController(t, controllerOptions{name: "stevedore-leader-b", account: acc.URL, leaderElectionID: lease})

	pool := "leader-" + suffix()
	createPool(t, poolSpec{
		Name: pool, Cluster: spec.Cluster,
		Disruption: `    consolidationPolicy: WhenEmpty
    consolidateAfter: 30s
    budgets:
      - {nodes: "1", reasons: [Drifted]}`,
	})
	ns := newNamespace(t, "leader")
	create(t, workloadYAML, workloadSpec{
		Name: "api", Namespace: ns, Pool: pool, Replicas: 3, CPU: "1", Memory: "2Gi", Group: "api",
		Extra: `      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {group: api}}}`,
	})
	waitRunning(t, 2*time.Minute, ns, "api", 3)
	s, err := readPool(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	oldNodes := s.nodeNames()
	t.Logf("3 replicas on %v", oldNodes)

	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"amiSelectorTerms":[{"id":"`+amiNew+`"}]}}`))
	if err := kube.Patch(ctx, &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: pool}}, patch); err != nil {
		t.Fatal(err)
	}
	// Mid-rollout: a replacement exists and its old node is tainted.
	eventually(t, 2*time.Minute, "a drift replacement under way", func(ctx context.Context) error {
		s, err := readPool(ctx, pool)
		if err != nil {
			return err
		}
		replacement := slices.ContainsFunc(s.claims, func(nc karpv1.NodeClaim) bool {
			return nc.Annotations["stevedore.io/replacement-for"] != ""
		})
		tainted := false
		for i := range s.nodes {
			tainted = tainted || (slices.Contains(oldNodes, s.nodes[i].Name) && disrupted(&s.nodes[i]))
		}
		if !replacement || !tainted {
			return fmt.Errorf("replacement NodeClaim %v, old node tainted %v", replacement, tainted)
		}
		return nil
	})
	killed := time.Now()
	first.kill()
	t.Logf("killed the leader (pid %d) with SIGKILL", first.PID())
	eventually(t, time.Minute, "the second controller holds the Lease", func(ctx context.Context) error {
		h, err := holder(ctx)
		if err != nil {
			return err
		}
		if h == leader {
			return fmt.Errorf("still held by %s", h)
		}
		t.Logf("Lease taken over by %s %s after the kill", h, time.Since(killed).Round(100*time.Millisecond))
		return nil
	})

	eventually(t, 4*time.Minute, "the rollout completed by the new leader", func(ctx context.Context) error {
		s, err := readPool(ctx, pool)
		if err != nil {
			return err
		}
		for i := range s.nodes {
			if slices.Contains(oldNodes, s.nodes[i].Name) && !s.gone(&s.nodes[i]) {
				return fmt.Errorf("old node %s still in use", s.nodes[i].Name)
			}
		}
		for _, nc := range s.claims {
			if nc.DeletionTimestamp == nil && nc.Status.ImageID != amiNew {
				return fmt.Errorf("NodeClaim %s runs image %q", nc.Name, nc.Status.ImageID)
			}
		}
		return nil
	})
	waitRunning(t, 2*time.Minute, ns, "api", 3)
	eventually(t, 2*time.Minute, "nothing leaked, nothing left tainted", func(ctx context.Context) error {
		if err := checkNoLeaks(ctx, acc.AWS, spec.Cluster, pool); err != nil {
			return err
		}
		s, err := readPool(ctx, pool)
		if err != nil {
			return err
		}
		for i := range s.nodes {
			if n := &s.nodes[i]; n.DeletionTimestamp == nil && disrupted(n) {
				return fmt.Errorf("node %s is tainted %s but not being deleted", n.Name, wellknown.TaintKeyDisrupted)
			}
		}
		for _, nc := range s.claims {
			if nc.DeletionTimestamp == nil && meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeDisruptionReason) {
				return fmt.Errorf("NodeClaim %s is marked for disruption but not being deleted", nc.Name)
			}
		}
		return nil
	})
}
