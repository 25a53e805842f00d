//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1beta1 "github.com/stevedore-autoscaler/stevedore/api/autoscaling/v1beta1"
)

// bufferYAML is a PodTemplate of 1-vCPU chunks on the pool's nodes and a
// CapacityBuffer of two of them.
const bufferYAML = `apiVersion: v1
kind: PodTemplate
metadata: {name: chunk, namespace: {{.Namespace}}}
template:
  spec:
    nodeSelector: {karpenter.sh/nodepool: {{.Pool}}}
    containers:
      - name: pause
        image: registry.invalid/pause:1
        resources: {requests: {cpu: "1", memory: 512Mi}}
---
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata: {name: headroom, namespace: {{.Namespace}}}
spec:
  podTemplateRef: {name: chunk}
  replicas: 2
`

// testCapacityBuffer: a CapacityBuffer launches nodes with no pod on them and
// reports Provisioning True (FitsExistingCapacity); consolidation (after 0s)
// leaves them; pods that take the room start at once, and the pool grows to
// refill it; once the buffer is deleted, the nodes kept for it are
// consolidated.
func testCapacityBuffer(t *testing.T) {
	pool := "buffer-" + suffix()
	createPool(t, poolSpec{Name: pool, Cluster: sharedAccount.Cluster,
		Disruption: "    consolidationPolicy: WhenEmptyOrUnderutilized\n    consolidateAfter: 0s"})
	ns := newNamespace(t, "buffer")
	create(t, bufferYAML, struct{ Namespace, Pool string }{ns, pool})
	key := client.ObjectKey{Namespace: ns, Name: "headroom"}
	provisioned := func(ctx context.Context) error {
		cb := &autoscalingv1beta1.CapacityBuffer{}
		if err := kube.Get(ctx, key, cb); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(cb.Status.Conditions, autoscalingv1beta1.ConditionReadyForProvisioning); c == nil || c.Status != metav1.ConditionTrue || cb.Status.Replicas == nil || *cb.Status.Replicas != 2 {
			return fmt.Errorf("ReadyForProvisioning %+v, replicas %v", c, cb.Status.Replicas)
		}
		c := meta.FindStatusCondition(cb.Status.Conditions, autoscalingv1beta1.ConditionProvisioning)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != autoscalingv1beta1.ReasonFitsExistingCapacity {
			return fmt.Errorf("Provisioning %+v", c)
		}
		return nil
	}
	var kept poolState
	eventually(t, 3*time.Minute, "the buffer's capacity up", func(ctx context.Context) error {
		if err := provisioned(ctx); err != nil {
			return err
		}
		var err error
		if kept, err = readPool(ctx, pool); err != nil {
			return err
		}
		if len(kept.initialized()) == 0 {
			return fmt.Errorf("no initialized NodeClaim")
		}
		return nil
	})
	held := kept.nodeNames()
	t.Logf("the buffer keeps %v", held)

	// Empty of pods and consolidatable at once, the nodes stay.
	time.Sleep(30 * time.Second)
	now, err := readPool(t.Context(), pool)
	if err != nil {
		t.Fatal(err)
	}
	for i := range now.nodes {
		if now.draining(&now.nodes[i]) {
			t.Fatalf("node %s is being disrupted though it keeps the buffer's room", now.nodes[i].Name)
		}
	}
	if len(now.nodeNames()) < len(held) {
		t.Fatalf("nodes %v, fewer than the %v the buffer keeps", now.nodeNames(), held)
	}

	// Pods take the room: they run, and the pool grows to refill it.
	create(t, workloadYAML, workloadSpec{Name: "consumer", Namespace: ns, Pool: pool, Replicas: 2, CPU: "1", Memory: "512Mi"})
	waitRunning(t, 2*time.Minute, ns, "consumer", 2)
	eventually(t, 3*time.Minute, "the buffer refilled", func(ctx context.Context) error {
		if err := provisioned(ctx); err != nil {
			return err
		}
		s, err := readPool(ctx, pool)
		if err != nil {
			return err
		}
		if n := len(s.initialized()); n <= len(kept.initialized()) {
			return fmt.Errorf("%d initialized NodeClaims, no more than before the pods", n)
		}
		return nil
	})
	// The buffer goes: the capacity kept for it is consolidated, until every
	// node of the pool runs a consumer pod. (Consolidation may also replace
	// a node by a smaller one now that no room is kept, so the count of
	// NodeClaims alone says little.)
	if err := kube.Delete(t.Context(), &autoscalingv1beta1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "headroom"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 3*time.Minute, "the buffer's capacity consolidated", func(ctx context.Context) error {
		s, err := readPool(ctx, pool)
		if err != nil {
			return err
		}
		ps, err := pods(ctx, ns, "consumer")
		if err != nil {
			return err
		}
		used := map[string]bool{}
		for i := range ps {
			used[ps[i].Spec.NodeName] = true
		}
		for _, n := range s.nodeNames() {
			if !used[n] {
				return fmt.Errorf("node %s runs no consumer pod (nodes %v)", n, s.nodeNames())
			}
		}
		if len(s.claims) != len(s.nodes) {
			return fmt.Errorf("%d NodeClaims, %d Nodes", len(s.claims), len(s.nodes))
		}
		return nil
	})
	waitRunning(t, time.Minute, ns, "consumer", 2)
}
