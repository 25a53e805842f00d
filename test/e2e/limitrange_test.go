//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// limitRangeYAML is the DaemonSet case of Karpenter's regression suite, kept
// to one pool's nodes: a LimitRange in the namespace whose item (Item,
// indented 4) gives containers cpu, a high-priority DaemonSet whose pods
// limit only memory, and a Deployment pod that requests 4 bytes of memory.
const limitRangeYAML = `apiVersion: v1
kind: LimitRange
metadata: {name: limitrange, namespace: {{.Namespace}}}
spec:
  limits:
  - type: Container
{{.Item}}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: daemon, namespace: {{.Namespace}}}
spec:
  selector: {matchLabels: {app: daemon}}
  template:
    metadata:
      labels: {app: daemon}
      annotations: {kwok.stevedore.io/stop-delay: 500ms}
    spec:
      nodeSelector: {karpenter.sh/nodepool: {{.Pool}}}
      priorityClassName: {{.PriorityClass}}
      terminationGracePeriodSeconds: 5
      containers:
        - {name: app, image: registry.invalid/daemon:1, resources: {limits: {memory: 1Gi}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: large-app, namespace: {{.Namespace}}}
spec:
  replicas: 1
  selector: {matchLabels: {app: large-app}}
  template:
    metadata:
      labels: {app: large-app}
      annotations: {kwok.stevedore.io/stop-delay: 500ms}
    spec:
      nodeSelector: {karpenter.sh/nodepool: {{.Pool}}}
      terminationGracePeriodSeconds: 5
      containers:
        - {name: app, image: registry.invalid/large-app:1, resources: {requests: {memory: "4"}}}
`

// testLimitRangeDaemonSet runs Karpenter's regression specs "should account
// for LimitRange Default (DefaultRequest) on daemonSet pods for resources":
// one node takes both the Deployment's pod and the DaemonSet's, and stays
// the only one. When the DaemonSet was sized from its template without the
// LimitRange, every new node was short of the DaemonSet's cpu, its pod
// pre-empted the Deployment's, and a NodeClaim followed another.
func testLimitRangeDaemonSet(t *testing.T, item string) {
	pool := "limitrange-" + suffix()
	createPool(t, poolSpec{Name: pool, Cluster: sharedAccount.Cluster,
		Disruption: "    consolidationPolicy: WhenEmptyOrUnderutilized\n    consolidateAfter: 0s"})
	ns := newNamespace(t, "limitrange")
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: ns + "-daemonsets"}, Value: 10000000}
	if err := kube.Create(t.Context(), pc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.Delete(context.Background(), pc) })
	create(t, limitRangeYAML, map[string]string{"Namespace": ns, "Pool": pool, "PriorityClass": pc.Name, "Item": item})

	seen := map[string]bool{}
	check := func(ctx context.Context) error {
		s, err := readPool(ctx, pool)
		if err != nil {
			return err
		}
		for _, nc := range s.claims {
			seen[nc.Name] = true
		}
		if len(seen) > 1 {
			names := make([]string, 0, len(seen))
			for n := range seen {
				names = append(names, n)
			}
			sort.Strings(names)
			return fmt.Errorf("%d NodeClaims launched: %s", len(seen), strings.Join(names, ", "))
		}
		if len(s.nodes) != 1 {
			return fmt.Errorf("%d nodes", len(s.nodes))
		}
		for _, app := range []string{"large-app", "daemon"} {
			ps, err := pods(ctx, ns, app)
			if err != nil {
				return err
			}
			if len(ps) != 1 || ps[0].Spec.NodeName != s.nodes[0].Name || !isPodReady(&ps[0]) {
				return fmt.Errorf("%s: %d pods, want one Ready on %s", app, len(ps), s.nodes[0].Name)
			}
		}
		return nil
	}
	eventually(t, 3*time.Minute, "one node runs the Deployment's pod and the DaemonSet's", check)
	// And stays the only one: no pre-emption sends the Deployment's pod
	// back to pending.
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if err := check(t.Context()); err != nil {
			t.Fatalf("after both pods ran: %v", err)
		}
		time.Sleep(time.Second)
	}
	// Nor did a DaemonSet pod find less room than its node was sized with.
	list := &corev1.EventList{}
	if err := kube.List(t.Context(), list); err != nil {
		t.Fatal(err)
	}
	for _, e := range list.Items {
		if e.Reason == "DaemonSetOverheadMismatch" && strings.Contains(e.Message, ns+"/daemon") {
			t.Errorf("overhead mismatch reported: %s", e.Message)
		}
	}
}
