package runner

import (
	"os"
	"path/filepath"
	"testing"
)

// limitRangeCluster is the DaemonSet case of Karpenter's regression suite:
// a LimitRange in the namespace (its items are the test's), a high-priority
// DaemonSet whose pods limit only memory, and a Deployment pod requesting 4
// bytes of memory, in a pool that consolidates at once.
const limitRangeCluster = `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: KarpenterNodeRole-demo
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 0s
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high-priority-daemonsets}
value: 10000000
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: daemon, namespace: default}
spec:
  selector: {matchLabels: {app: daemon}}
  template:
    metadata: {labels: {app: daemon}}
    spec:
      priorityClassName: high-priority-daemonsets
      containers:
      - {name: app, image: registry.k8s.io/pause:3.10, resources: {limits: {memory: 1Gi}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: large-app, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: large-app}}
  template:
    metadata: {labels: {app: large-app}}
    spec:
      containers:
      - {name: app, image: registry.k8s.io/pause:3.10, resources: {requests: {memory: "4"}}}
---
apiVersion: v1
kind: LimitRange
metadata: {name: limitrange, namespace: default}
spec:
  limits:
  - type: Container
`

// TestLimitRangeDaemonSetOverhead: the simulator's API server gives the
// pods the LimitRange's defaults, and the controller sizes the node with
// them for the DaemonSet's pod too, so one node takes both pods and
// nothing more is launched: not a node after each pre-emption of the
// Deployment's pod by the DaemonSet's.
func TestLimitRangeDaemonSetOverhead(t *testing.T) {
	for _, tc := range []struct{ name, item string }{
		{"Default", "    default: {cpu: \"2\", memory: 1Gi}\n"},
		{"DefaultRequest", "    defaultRequest: {cpu: \"2\", memory: 1Gi}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{
				"cluster.yaml": limitRangeCluster + tc.item,
				"scenario.yaml": "apiVersion: stevedore.io/v1alpha1\nkind: Scenario\nmetadata: {name: limitrange}\nspec:\n" +
					"  aws: {instanceTypes: [m6i.large, m6i.xlarge, m6i.2xlarge, c6i.large, c6i.xlarge, c6i.2xlarge]}\n" +
					"  duration: 15m\n",
			}
			for name, body := range files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			doc := decode(t, simulate(t, dir))
			if len(doc.Final.Instances) != 1 || len(doc.Final.Nodes) != 1 {
				t.Fatalf("%d instances launched, %d nodes at the end, want one of each; instances %+v", len(doc.Final.Instances), len(doc.Final.Nodes), doc.Final.Instances)
			}
			if len(doc.Final.NotRunning) != 0 {
				t.Fatalf("pods not running at the end: %+v", doc.Final.NotRunning)
			}
			if doc.Final.Pods.Running != 2 {
				t.Fatalf("pods at the end %+v, want both running", doc.Final.Pods)
			}
		})
	}
}
