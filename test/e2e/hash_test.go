//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/drift"
	"github.com/stevedore-autoscaler/stevedore/controllers/nodepool/hash"
)

// TestHashVersionChange is a change of hash algorithm as a cluster sees it
// after an upgrade: a NodePool and its EC2NodeClass carry hash versions
// other than the current ones, and their NodeClaim yet another, and the
// NodePool's template changes at the same moment. The NodeClaim is updated
// first, so that a controller that re-stamped NodeClaims from a NodePool it
// had not seen change yet would give it a hash about to be replaced. The
// hashes cannot be compared across versions, so the NodeClaim must not
// drift: the NodePool and the EC2NodeClass are stamped with their current
// hashes and versions, and so is the NodeClaim, which then stays as it is.
func TestHashVersionChange(t *testing.T) {
	ctx := t.Context()
	spec := accountSpec{Cluster: "e2e-hash", Region: "eu-central-1", Seed: 16}
	acc := serveAccount(t, spec)
	startController(t, controllerOptions{name: "stevedore-hash", account: acc.URL})
	pool := "hash-" + suffix()
	createPool(t, poolSpec{Name: pool, Cluster: spec.Cluster})
	ns := newNamespace(t, "hash")
	create(t, workloadYAML, workloadSpec{Name: "app", Namespace: ns, Pool: pool, Replicas: 1, CPU: "500m", Memory: "1Gi"})
	waitRunning(t, 2*time.Minute, ns, "app", 1)

	caBundle := controllerCABundle(t)
	// stamped checks that the NodePool, the EC2NodeClass and the pool's one
	// NodeClaim carry the current hashes and versions, and returns the
	// NodeClaim.
	stamped := func(ctx context.Context) (*karpv1.NodeClaim, error) {
		np, class := &karpv1.NodePool{}, &awsv1.EC2NodeClass{}
		if err := kube.Get(ctx, client.ObjectKey{Name: pool}, np); err != nil {
			return nil, err
		}
		if err := kube.Get(ctx, client.ObjectKey{Name: pool}, class); err != nil {
			return nil, err
		}
		poolWant := map[string]string{
			wellknown.AnnotationNodePoolHash:        hash.Hash(np),
			wellknown.AnnotationNodePoolHashVersion: wellknown.NodePoolHashVersion,
		}
		classWant := map[string]string{
			wellknown.AnnotationEC2NodeClassHash:        drift.Hash(class, caBundle),
			wellknown.AnnotationEC2NodeClassHashVersion: wellknown.EC2NodeClassHashVersion,
		}
		claims := &karpv1.NodeClaimList{}
		if err := kube.List(ctx, claims, client.MatchingLabels{wellknown.LabelNodePool: pool}); err != nil {
			return nil, err
		}
		if len(claims.Items) != 1 {
			return nil, fmt.Errorf("%d NodeClaims, want 1", len(claims.Items))
		}
		nc := &claims.Items[0]
		for _, c := range []struct {
			what        string
			annotations map[string]string
			want        []map[string]string
		}{
			{"NodePool " + pool, np.Annotations, []map[string]string{poolWant}},
			{"EC2NodeClass " + pool, class.Annotations, []map[string]string{classWant}},
			{"NodeClaim " + nc.Name, nc.Annotations, []map[string]string{poolWant, classWant}},
		} {
			for _, want := range c.want {
				for k, v := range want {
					if c.annotations[k] != v {
						return nil, fmt.Errorf("%s: %s %q, want %q", c.what, k, c.annotations[k], v)
					}
				}
			}
		}
		return nc, nil
	}
	var claim *karpv1.NodeClaim
	eventually(t, time.Minute, "the current hashes on the NodePool, the EC2NodeClass and the NodeClaim", func(ctx context.Context) error {
		nc, err := stamped(ctx)
		claim = nc
		return err
	})

	// Other versions on all three, the NodeClaim first, and a template
	// change on the NodePool with its version change.
	patchAnnotations := func(obj client.Object, set map[string]string, mutate func()) {
		t.Helper()
		if err := kube.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Fatal(err)
		}
		base := obj.DeepCopyObject().(client.Object)
		a := obj.GetAnnotations()
		maps.Copy(a, set)
		obj.SetAnnotations(a)
		if mutate != nil {
			mutate()
		}
		if err := kube.Patch(ctx, obj, client.MergeFrom(base)); err != nil {
			t.Fatal(err)
		}
	}
	patchAnnotations(claim, map[string]string{
		wellknown.AnnotationNodePoolHash: "2", wellknown.AnnotationNodePoolHashVersion: "test-version-2",
		wellknown.AnnotationEC2NodeClassHash: "2", wellknown.AnnotationEC2NodeClassHashVersion: "test-version-2",
	}, nil)
	np := &karpv1.NodePool{}
	np.Name = pool
	patchAnnotations(np, map[string]string{
		wellknown.AnnotationNodePoolHash: "1", wellknown.AnnotationNodePoolHashVersion: "test-version-1",
	}, func() {
		np.Spec.Template.Metadata.Annotations = map[string]string{"example.com/hash-test": "changed"}
	})
	class := &awsv1.EC2NodeClass{}
	class.Name = pool
	patchAnnotations(class, map[string]string{
		wellknown.AnnotationEC2NodeClassHash: "1", wellknown.AnnotationEC2NodeClassHashVersion: "test-version-1",
	}, nil)

	eventually(t, time.Minute, "the current hashes stamped again on all three", func(ctx context.Context) error {
		nc, err := stamped(ctx)
		if err != nil {
			return err
		}
		if nc.UID != claim.UID {
			return fmt.Errorf("NodeClaim %s replaced by %s", claim.Name, nc.Name)
		}
		return nil
	})
	// And it stays so: the NodeClaim is not drifted, nor replaced.
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		nc, err := stamped(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if nc.UID != claim.UID {
			t.Fatalf("NodeClaim %s replaced by %s", claim.Name, nc.Name)
		}
		if c := meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeDrifted); c != nil {
			t.Fatalf("NodeClaim %s drifted: %s: %s", nc.Name, c.Reason, c.Message)
		}
		time.Sleep(2 * time.Second)
	}
}
