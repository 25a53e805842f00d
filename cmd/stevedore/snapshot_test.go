package main

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/snapshot"
	"github.com/stevedore-autoscaler/stevedore/test/apiserver"
)

func TestSnapshotRefusesAFullDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "old.yaml"), []byte("kind: Pod\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// No kubeconfig is needed to refuse: the directory is checked first.
	_, _, err := run(t, "", "snapshot", dir, "--kubeconfig", filepath.Join(dir, "missing"))
	if err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("err = %v, want the directory refused as not empty", err)
	}
	if _, _, err := run(t, "", "snapshot", dir, "--duration", "1d"); err == nil {
		t.Error("a full directory and a bad duration were accepted")
	}
	if _, _, err := run(t, "", "snapshot"); err == nil {
		t.Error("snapshot without DIR succeeded")
	}
}

func TestSnapshotBadDuration(t *testing.T) {
	_, _, err := run(t, "", "snapshot", filepath.Join(t.TempDir(), "new"), "--duration", "1d")
	if err == nil || !strings.Contains(err.Error(), "--duration") {
		t.Fatalf("err = %v, want --duration refused", err)
	}
}

// TestSnapshotAgainstAPIServer writes a snapshot of a real API server's
// objects through the command and reads the files back.
func TestSnapshotAgainstAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real API server")
	}
	srv, kubeconfig := startAPIServer(t)
	kube, err := client.New(srv.Config, client.Options{Scheme: apiserver.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	create := func(o client.Object) {
		t.Helper()
		if err := kube.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
	updateStatus := func(o client.Object) {
		t.Helper()
		if err := kube.Status().Update(ctx, o); err != nil {
			t.Fatalf("status of %T %s: %v", o, o.GetName(), err)
		}
	}

	create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}})
	class := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: awsv1.EC2NodeClassSpec{
		SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "snap-test"}}},
		SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "snap-test"}}},
		AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
		Role:                       "KarpenterNodeRole-snap-test",
	}}
	create(class)
	class.Status = awsv1.EC2NodeClassStatus{
		Subnets:        []awsv1.Subnet{{ID: "subnet-0123456789abcdef0", Zone: "eu-west-1a", ZoneID: "euw1-az1"}},
		SecurityGroups: []awsv1.SecurityGroup{{ID: "sg-0123456789abcdef0", Name: "nodes"}},
		AMIs: []awsv1.AMI{{ID: "ami-0123456789abcdef0", Name: "amazon-eks-node-al2023-x86_64-standard-1.33-v20260220",
			Requirements: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}}},
		InstanceProfile: "snap-test_1",
	}
	updateStatus(class)
	pool := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: karpv1.NodePoolSpec{
		Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
			NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{Key: "karpenter.sh/capacity-type", Operator: corev1.NodeSelectorOpIn, Values: []string{"on-demand"}}},
		}},
	}}
	create(pool)
	nodeName := "ip-10-0-1-1.eu-west-1.compute.internal"
	claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "default-abcde", Labels: map[string]string{"karpenter.sh/nodepool": "default"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "karpenter.sh/v1", Kind: "NodePool", Name: "default", UID: pool.UID}}},
		Spec: karpv1.NodeClaimSpec{
			NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{Key: "node.kubernetes.io/instance-type", Operator: corev1.NodeSelectorOpIn, Values: []string{"m6i.large"}}},
		}}
	create(claim)
	claim.Status = karpv1.NodeClaimStatus{NodeName: nodeName, ProviderID: "aws:///eu-west-1a/i-0123456789abcdef0", ImageID: "ami-0123456789abcdef0",
		Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}
	updateStatus(claim)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName, Labels: map[string]string{
		"topology.kubernetes.io/region": "eu-west-1", "topology.kubernetes.io/zone": "eu-west-1a", "karpenter.sh/nodepool": "default"}},
		Spec: corev1.NodeSpec{ProviderID: "aws:///eu-west-1a/i-0123456789abcdef0"}}
	create(node)
	node.Status = corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourcePods: resource.MustParse("29")},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1930m"), corev1.ResourcePods: resource.MustParse("29")},
		Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}}}
	updateStatus(node)

	labels := map[string]string{"app": "web"}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/web:1"}}}}
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}, Spec: appsv1.DeploymentSpec{
		Replicas: ptrTo(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template}}
	create(deploy)
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-5d8f7",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: deploy.UID, Controller: ptrTo(true)}}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptrTo(int32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template}}
	create(rs)
	running := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-5d8f7-aaaaa", Labels: labels,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptrTo(true)}}},
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: template.Spec.Containers}}
	create(running)
	running.Status.Phase = corev1.PodRunning
	updateStatus(running)
	done := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "migrate"},
		Spec: corev1.PodSpec{NodeName: nodeName, RestartPolicy: corev1.RestartPolicyNever, Containers: template.Spec.Containers}}
	create(done)
	done.Status.Phase = corev1.PodSucceeded
	updateStatus(done)
	create(&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}, Spec: policyv1.PodDisruptionBudgetSpec{
		MinAvailable: ptrTo(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels}}})

	dir := filepath.Join(t.TempDir(), "snap")
	out, stderr, err := run(t, "", "snapshot", dir, "--kubeconfig", kubeconfig, "--duration", "3h")
	if err != nil {
		t.Fatalf("snapshot: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
	}
	for _, w := range []string{"Wrote 1 Scenario, 1 EC2NodeClass, 1 NodePool, 1 NodeClaim, 1 Node, 1 PodDisruptionBudget, 1 ReplicaSet, 1 Pod to " + dir + ".",
		"1 finished pod", "Deployments (in their place, 1 ReplicaSet without the owner reference"} {
		if !strings.Contains(out, w) {
			t.Errorf("the summary does not say %q:\n%s", w, out)
		}
	}

	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := []string{"ec2nodeclasses.yaml", "nodeclaims.yaml", "nodepools.yaml", "nodes.yaml", "pods.yaml", "policies.yaml", "scenario.yaml", "workloads.yaml"}
	if !slices.Equal(names, want) {
		t.Errorf("files %v, want %v", names, want)
	}
	read := func(name string, into any) {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), "\n---\n") {
			t.Fatalf("%s holds more than one document:\n%s", name, data)
		}
		if err := yaml.UnmarshalStrict(data, into); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, data)
		}
	}

	var sc struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Spec struct {
			Start    string `json:"start"`
			Duration string `json:"duration"`
			Cluster  struct {
				Name              string `json:"name"`
				KubernetesVersion string `json:"kubernetesVersion"`
			} `json:"cluster"`
			AWS struct {
				Region  string   `json:"region"`
				Zones   []string `json:"zones"`
				Subnets []struct {
					ID   string            `json:"id"`
					Zone string            `json:"zone"`
					Tags map[string]string `json:"tags"`
				} `json:"subnets"`
				SecurityGroups []struct {
					ID   string            `json:"id"`
					Name string            `json:"name"`
					Tags map[string]string `json:"tags"`
				} `json:"securityGroups"`
				CurrentImages []map[string]string `json:"currentImages"`
			} `json:"aws"`
		} `json:"spec"`
	}
	read("scenario.yaml", &sc)
	s := sc.Spec
	if sc.APIVersion != "stevedore.io/v1alpha1" || sc.Kind != "Scenario" || sc.Metadata.Name != "snapshot" {
		t.Errorf("scenario header %s %s %s", sc.APIVersion, sc.Kind, sc.Metadata.Name)
	}
	if !regexp.MustCompile(`^1\.[0-9]{2}$`).MatchString(s.Cluster.KubernetesVersion) {
		t.Errorf("kubernetesVersion %q is not the server's minor version", s.Cluster.KubernetesVersion)
	}
	if !regexp.MustCompile(`^20[0-9]{2}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z$`).MatchString(s.Start) || s.Duration != "3h" {
		t.Errorf("start %q, duration %q", s.Start, s.Duration)
	}
	if s.Cluster.Name != "snap-test" || s.AWS.Region != "eu-west-1" || !slices.Equal(s.AWS.Zones, []string{"eu-west-1a"}) {
		t.Errorf("cluster %q, region %q, zones %v", s.Cluster.Name, s.AWS.Region, s.AWS.Zones)
	}
	if len(s.AWS.Subnets) != 1 || s.AWS.Subnets[0].ID != "subnet-0123456789abcdef0" || s.AWS.Subnets[0].Tags["karpenter.sh/discovery"] != "snap-test" {
		t.Errorf("subnets %+v", s.AWS.Subnets)
	}
	if len(s.AWS.SecurityGroups) != 1 || s.AWS.SecurityGroups[0].Name != "nodes" {
		t.Errorf("security groups %+v", s.AWS.SecurityGroups)
	}
	wantImage := map[string]string{"alias": "al2023", "arch": "x86_64", "variant": "standard", "id": "ami-0123456789abcdef0", "name": "amazon-eks-node-al2023-x86_64-standard-1.33-v20260220"}
	if len(s.AWS.CurrentImages) != 1 || !maps.Equal(s.AWS.CurrentImages[0], wantImage) {
		t.Errorf("current images %v, want [%v]", s.AWS.CurrentImages, wantImage)
	}

	var gotRS appsv1.ReplicaSet
	read("workloads.yaml", &gotRS)
	if gotRS.Name != rs.Name || gotRS.UID != rs.UID || len(gotRS.OwnerReferences) != 0 || *gotRS.Spec.Replicas != 1 || gotRS.ResourceVersion != "" {
		t.Errorf("ReplicaSet %s uid %s owners %v resourceVersion %q", gotRS.Name, gotRS.UID, gotRS.OwnerReferences, gotRS.ResourceVersion)
	}
	var gotPod corev1.Pod
	read("pods.yaml", &gotPod)
	if gotPod.Name != running.Name || gotPod.Spec.NodeName != nodeName || len(gotPod.OwnerReferences) != 1 || gotPod.OwnerReferences[0].UID != rs.UID ||
		gotPod.Status.Phase != corev1.PodRunning || !gotPod.CreationTimestamp.IsZero() || len(gotPod.ManagedFields) != 0 {
		t.Errorf("pod %s on %q owners %v phase %s created %v", gotPod.Name, gotPod.Spec.NodeName, gotPod.OwnerReferences, gotPod.Status.Phase, gotPod.CreationTimestamp)
	}
	var gotClaim karpv1.NodeClaim
	read("nodeclaims.yaml", &gotClaim)
	if gotClaim.Status.ProviderID != claim.Status.ProviderID || gotClaim.CreationTimestamp.IsZero() || gotClaim.UID != claim.UID ||
		len(gotClaim.OwnerReferences) != 1 || gotClaim.OwnerReferences[0].UID != pool.UID {
		t.Errorf("NodeClaim status %+v created %v uid %s owners %v", gotClaim.Status, gotClaim.CreationTimestamp, gotClaim.UID, gotClaim.OwnerReferences)
	}
	var gotNode corev1.Node
	read("nodes.yaml", &gotNode)
	if gotNode.Spec.ProviderID != node.Spec.ProviderID || gotNode.Status.Allocatable.Cpu().String() != "1930m" || gotNode.CreationTimestamp.IsZero() {
		t.Errorf("Node %+v", gotNode)
	}
	var gotClass awsv1.EC2NodeClass
	read("ec2nodeclasses.yaml", &gotClass)
	if gotClass.Spec.Role != class.Spec.Role || len(gotClass.Status.Subnets) != 0 || len(gotClass.Finalizers) != 0 {
		t.Errorf("EC2NodeClass spec role %q status %+v", gotClass.Spec.Role, gotClass.Status)
	}

	// A second snapshot into the same directory is refused.
	if _, _, err := run(t, "", "snapshot", dir, "--kubeconfig", kubeconfig); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("a second snapshot into %s: %v", dir, err)
	}
}

// TestSnapshotClusterRole checks the read-only ClusterRole of
// docs/snapshot.md against a real API server: with it, a snapshot reads
// every kind; without any one of its rules, the read fails at the kind that
// rule grants.
func TestSnapshotClusterRole(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real API server")
	}
	doc, err := os.ReadFile("../../docs/snapshot.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "```yaml\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\n")
	if !ok {
		t.Fatal("docs/snapshot.md has no ClusterRole block")
	}
	block, _, _ = strings.Cut(block, "```")
	var role rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict([]byte("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\n"+block), &role); err != nil {
		t.Fatal(err)
	}
	// The kind Read lists first among those each rule grants.
	firstKind := map[string]string{"karpenter.sh": "NodePool", "karpenter.k8s.aws": "EC2NodeClass", "": "Node", "policy": "PodDisruptionBudget",
		"apps": "DaemonSet", "batch": "Job", "scheduling.k8s.io": "PriorityClass"}
	if len(role.Rules) != len(firstKind) {
		t.Fatalf("the ClusterRole has %d rules, want one for each of the %d API groups read", len(role.Rules), len(firstKind))
	}

	srv, _ := startAPIServer(t)
	admin, err := client.New(srv.Config, client.Options{Scheme: apiserver.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	// read reads the cluster as user, bound to role, until the result is
	// what want says or 20 seconds pass (RBAC changes take a moment).
	read := func(user string, r *rbacv1.ClusterRole, want func(error) bool) error {
		t.Helper()
		r = r.DeepCopy()
		r.Name = user
		if err := admin.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: user},
			Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: user}}}
		if err := admin.Create(ctx, binding); err != nil {
			t.Fatal(err)
		}
		cfg := rest.CopyConfig(srv.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
		kube, err := client.New(cfg, client.Options{Scheme: apiserver.Scheme()})
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			_, err := snapshot.Read(ctx, kube, "1.33")
			if want(err) || time.Now().After(deadline) {
				return err
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if err := read("snapshot-reader", &role, func(err error) bool { return err == nil }); err != nil {
		t.Fatalf("with the ClusterRole of docs/snapshot.md: %v", err)
	}
	for i, rule := range role.Rules {
		group := rule.APIGroups[0]
		less := role.DeepCopy()
		less.Rules = slices.Delete(less.Rules, i, i+1)
		wantMsg := "listing " + firstKind[group] + "s:"
		err := read(fmt.Sprintf("snapshot-reader-%d", i), less, func(err error) bool { return err != nil && strings.Contains(err.Error(), wantMsg) })
		if err == nil || !strings.Contains(err.Error(), wantMsg) || !strings.Contains(err.Error(), "docs/snapshot.md") {
			t.Errorf("without the rule for API group %q: %v, want an error %q that points at docs/snapshot.md", group, err, wantMsg)
		}
	}
}
