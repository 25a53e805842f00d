package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/nodeclass"
	"github.com/stevedore-autoscaler/stevedore/diagnose"
	"github.com/stevedore-autoscaler/stevedore/explain"
)

func TestExplainAndDiagnoseFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"diagnose", "-o", "xml"}, "--output"},
		{[]string{"explain", "node", "n", "-o", "yaml"}, "--output"},
		{[]string{"diagnose", "--controller-service-account", "stevedore"}, "NAMESPACE/NAME"},
		{[]string{"explain", "node"}, "accepts 1 arg"},
		{[]string{"diagnose", "extra"}, "unknown command"},
		{[]string{"diagnose", "--at", "10m"}, "with --scenario"},
		{[]string{"explain", "pod", "web", "--scenario", "../../examples/drift-upgrade", "--at", "3h"}, "past the end of the scenario"},
		{[]string{"diagnose", "--scenario", "no-such-dir"}, "no-such-dir"},
	} {
		if _, _, err := run(t, "", tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error naming %q", tc.args, err, tc.want)
		}
	}
	out, _, err := run(t, "", "explain", "--help")
	if err != nil || !strings.Contains(out, "explain nodepool NAME") || !strings.Contains(out, "--scenario") {
		t.Errorf("explain --help: %v\n%s", err, out)
	}
}

// TestExplainAndDiagnoseScenario reads the simulated world a scenario is in
// ten minutes after its start.
func TestExplainAndDiagnoseScenario(t *testing.T) {
	out, stderr, err := run(t, "", "diagnose", "--scenario", "../../examples/drift-upgrade", "--at", "10m")
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, stderr, out)
	}
	for _, want := range []string{"PASS  nodeclass-conditions", "EC2NodeClass default: Ready", "PASS  nodeclaim-registration",
		"Note: simulated: scenario drift-upgrade at 2026-03-02T10:10:00Z (10m0s after its start)"} {
		if !strings.Contains(out, want) {
			t.Errorf("diagnose --scenario lacks %q:\n%s", want, out)
		}
	}
	out, stderr, err = run(t, "", "explain", "nodepool", "default", "--scenario", "../../examples/drift-upgrade", "--at", "10m", "-o", "json")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var e explain.Explanation
	if err := json.Unmarshal([]byte(out), &e); err != nil || e.Kind != explain.KindNodePool || e.NodePool.Nodes == 0 {
		t.Errorf("explain nodepool --scenario: %v\n%s", err, out)
	}
}

// unauthorizedNodes is the guide's "EC2 running, no node" case as a
// scenario: no node role has an access entry, so instances boot and their
// kubelets are refused.
var unauthorizedNodes = map[string]string{
	"scenario.yaml": `apiVersion: stevedore.io/v1alpha1
kind: Scenario
metadata: {name: unauthorized-nodes}
spec:
  seed: 1
  start: "2026-03-02T10:00:00Z"
  duration: 20m
  cluster: {name: stuck, kubernetesVersion: "1.31"}
  aws:
    accessEntries: []
    instanceTypes: [m6i.large, m6i.xlarge]
`,
	"manifests.yaml": `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: KarpenterNodeRole-stuck
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: stuck}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: stuck}}]
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: web
          image: registry.example.com/web:1.0
          resources: {requests: {cpu: "1", memory: 1Gi}}
`,
}

func TestDiagnoseScenarioUnauthorizedNodes(t *testing.T) {
	dir := t.TempDir()
	for name, body := range unauthorizedNodes {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, _, err := run(t, "", "diagnose", "--scenario", dir, "--at", "10m")
	if !errors.Is(err, errSilentFailure) {
		t.Fatalf("diagnose: %v, want exit status 1\n%s", err, out)
	}
	for _, want := range []string{
		"WARN  pending-pods", "although NodeClaim default-",
		"FAIL  node-role-access", "node role KarpenterNodeRole-stuck has no EKS access entry",
		"FAIL  nodeclaim-registration", "not registered; instance i-", "is running",
		"fix: aws eks create-access-entry --cluster-name stuck --principal-arn arn:aws:iam::123456789012:role/KarpenterNodeRole-stuck --type EC2_LINUX",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestExplainAndDiagnoseAgainstAPIServer reads a real API server, with the
// in-memory AWS behind the AWS clients, the way the commands read a live
// cluster.
func TestExplainAndDiagnoseAgainstAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real API server")
	}
	srv, kubeconfig := startAPIServer(t)
	ctx := context.Background()
	scheme, err := newScheme()
	if err != nil {
		t.Fatal(err)
	}
	kube, err := client.New(srv.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}

	// The AWS account: a correctly set-up cluster whose node role has lost
	// its access entry.
	f := fake.New(fake.Options{Seed: 3, InstanceTypes: []string{"m6i.large", "m6i.xlarge"}})
	cw, err := f.StandardCluster("cli", "1.33")
	if err != nil {
		t.Fatal(err)
	}
	f.RemoveAccessEntry("cli", cw.NodeRoleARN)

	nc := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: awsv1.EC2NodeClassSpec{
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{fake.DiscoveryTag: "cli"}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{fake.DiscoveryTag: "cli"}}},
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			Role:                       cw.NodeRole,
		},
	}
	create(t, kube, nc)
	st, err := nodeclass.NewResolver(f.Clients(), nodeclass.Options{ClusterName: "cli", Region: f.Region()}).Resolve(ctx, nc, "1.33")
	if err != nil {
		t.Fatal(err)
	}
	nc.Status = st
	if err := kube.Status().Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
	create(t, kube, &karpv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
			NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{Key: wellknown.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{"on-demand"}}},
		}}},
	})
	for _, p := range []struct{ name, cpu string }{{"web", "1"}, {"huge", "500"}} {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: p.name},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example.com/app:1",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(p.cpu)}}}}},
		}
		create(t, kube, pod)
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, LastTransitionTime: metav1.Now()}}
		if err := kube.Status().Update(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}

	src := &sourceOptions{kubeconfig: kubeconfig, clusterName: "cli", interruptionQueue: cw.QueueName}
	w, err := loadWorld(ctx, src, awsAccess{clients: f.Clients(), region: f.Region()}, time.Now())
	if err != nil {
		t.Fatal(err)
	}

	var out bytes.Buffer
	if err := writeDiagnosis(ctx, w, "text", &out); !errors.Is(err, errSilentFailure) {
		t.Fatalf("diagnose: %v, want the silent failure of a failed check\n%s", err, out.String())
	}
	for _, want := range []string{
		"FAIL  pending-pods", "Pod default/huge: 1 pod(s) fit nowhere", "NoInstanceTypeFits",
		"FAIL  node-role-access", "has no EKS access entry", "fix: aws eks create-access-entry --cluster-name cli",
		"WARN  risk-ami-latest", "al2023@latest",
		"WARN  controller-credentials", "not checked: the controller's pods were not found",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("diagnose output lacks %q:\n%s", want, out.String())
		}
	}
	t.Logf("stevedore diagnose:\n%s", out.String())
	out.Reset()
	_ = writeDiagnosis(ctx, w, "json", &out)
	var report diagnose.Report
	if err := json.Unmarshal(out.Bytes(), &report); err != nil || !report.Failed() {
		t.Errorf("diagnose -o json: %v\n%s", err, out.String())
	}

	out.Reset()
	if err := writeExplanation(w, explain.KindPod, "huge", "default", "text", &out); err != nil {
		t.Fatal(err)
	}
	t.Logf("stevedore explain pod huge:\n%s", out.String())
	if !strings.Contains(out.String(), "Pod default/huge: Unschedulable") || !strings.Contains(out.String(), "NoInstanceTypeFits  NodePool default") {
		t.Errorf("explain pod huge:\n%s", out.String())
	}
	out.Reset()
	if err := writeExplanation(w, explain.KindPod, "default/web", "", "json", &out); err != nil {
		t.Fatal(err)
	}
	var e explain.Explanation
	if err := json.Unmarshal(out.Bytes(), &e); err != nil || e.Verdict != explain.VerdictWouldLaunch || e.Pod.NewNodeClaim.InstanceTypes[0] != "m6i.large" {
		t.Errorf("explain pod web -o json: %v\n%s", err, out.String())
	}
	out.Reset()
	if err := writeExplanation(w, explain.KindNodePool, "default", "", "text", &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "NodePool default: Open") || !strings.Contains(out.String(), `#0  nodes "10%"  active`) {
		t.Errorf("explain nodepool default:\n%s", out.String())
	}
	if err := writeExplanation(w, explain.KindNode, "nope", "", "text", &out); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("explain node nope: %v", err)
	}
}

func create(t *testing.T, c client.Client, o client.Object) {
	t.Helper()
	if err := c.Create(context.Background(), o); err != nil {
		t.Fatal(err)
	}
}
