package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stevedore-autoscaler/stevedore/plan"
)

// minValuesPlan asks for three instance types where only two of those
// listed (m5.xlarge and m5.2xlarge) fit the pod's 3 cpu.
const minValuesPlan = `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  role: KarpenterNodeRole-test
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: test}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: test}}]
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - key: node.kubernetes.io/instance-type
          operator: In
          values: [m5.large, m5.xlarge, m5.2xlarge]
          minValues: 3
---
apiVersion: v1
kind: Pod
metadata: {name: app, namespace: default}
spec:
  containers:
    - name: c
      image: registry.example.com/app:1.0
      resources: {requests: {cpu: "3"}}
`

// TestPlanMinValuesPolicy: by default the pod is unschedulable for the
// NodePool's minValues; with --min-values-policy BestEffort the plan
// launches it on a NodeClaim marked relaxed.
func TestPlanMinValuesPolicy(t *testing.T) {
	report := func(args ...string) plan.Report {
		t.Helper()
		out, stderr, err := runPlan(t, minValuesPlan, append([]string{"-f", "-", "-o", "json"}, args...)...)
		if err != nil {
			t.Fatalf("%v\n%s", err, stderr)
		}
		var r plan.Report
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("not the JSON report: %v\n%s", err, out)
		}
		return r
	}
	strict := report()
	if len(strict.NodeClaims) != 0 || len(strict.Unschedulable) != 1 || strict.Assumptions.MinValuesPolicy != "Strict" {
		t.Fatalf("default policy: claims %+v, unschedulable %+v, policy %q", strict.NodeClaims, strict.Unschedulable, strict.Assumptions.MinValuesPolicy)
	}
	if v := strict.Unschedulable[0].NodePools; len(v) != 1 || v[0].Code != "MinValuesUnsatisfiable" {
		t.Errorf("verdicts %+v, want MinValuesUnsatisfiable", v)
	}
	relaxed := report("--min-values-policy", "BestEffort")
	if len(relaxed.NodeClaims) != 1 || len(relaxed.Unschedulable) != 0 || !relaxed.NodeClaims[0].MinValuesRelaxed ||
		relaxed.Assumptions.MinValuesPolicy != "BestEffort" {
		t.Fatalf("BestEffort: claims %+v, unschedulable %+v, policy %q", relaxed.NodeClaims, relaxed.Unschedulable, relaxed.Assumptions.MinValuesPolicy)
	}
	if got := relaxed.NodeClaims[0].InstanceTypes; len(got) != 2 {
		t.Errorf("instance types %v, want m5.xlarge and m5.2xlarge", got)
	}
	out, _, err := runPlan(t, minValuesPlan, "-f", "-", "--min-values-policy", "BestEffort")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"1 NodeClaim with minValues relaxed", "minValues policy BestEffort"} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
	if _, _, err := runPlan(t, minValuesPlan, "-f", "-", "--min-values-policy", "Loose"); err == nil || !strings.Contains(err.Error(), "--min-values-policy") {
		t.Errorf("an unknown policy: err = %v", err)
	}
}
