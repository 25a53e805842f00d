//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-autoscaler/stevedore/test/apiserver"
)

// TestChartRBAC runs the controller with the permissions the Helm chart
// gives it, not as the cluster's admin: the chart's ServiceAccount,
// ClusterRole, Roles and bindings are applied to a namespace that enforces
// the restricted Pod Security Standard, and the controller (a process of
// this test, not a pod) talks to the API server impersonating that
// ServiceAccount. It then provisions a node for pending pods and
// consolidates it once they are gone, with no request refused.
//
// The chart is rendered by hack/charttest/render with the Helm library, as
// `helm template` does; Helm stays out of this module's dependencies.
// Because the controller does not run as a pod here, the test checks the
// chart's pod separately: the Deployment's pod template is created (as a
// server-side dry run) in the restricted namespace, which Pod Security
// admission refuses if the pod breaks the restricted standard.
func TestChartRBAC(t *testing.T) {
	ctx := t.Context()
	spec := accountSpec{Cluster: "e2e-rbac", Region: "eu-central-1", Seed: 14}
	acc := serveAccount(t, spec)

	// The release's namespace, restricted as a production one should be.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:   "stevedore-" + suffix(),
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"},
	}}
	if err := kube.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteObject(t, ns) })
	release := "stevedore-rbac-" + suffix()
	objs := renderChart(t, release, ns.Name, map[string]any{"settings": map[string]any{"clusterName": spec.Cluster},
		// The chart has no default image; the controller runs as a process here.
		"controller": map[string]any{"image": map[string]any{"repository": "registry.example.com/stevedore", "tag": "e2e"}}})

	// The RBAC objects, deleted when the test ends (after the controller
	// has stopped: cleanups run last-registered first).
	var sa *corev1.ServiceAccount
	var deployment *appsv1.Deployment
	rbac := 0
	for _, obj := range objs {
		switch o := obj.(type) {
		case *corev1.ServiceAccount:
			sa = o
		case *appsv1.Deployment:
			deployment = o
			continue
		case *rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding, *rbacv1.Role, *rbacv1.RoleBinding:
			rbac++
		default:
			continue
		}
		if err := kube.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
		t.Cleanup(func() { deleteObject(t, obj) })
	}
	if sa == nil || deployment == nil || rbac == 0 {
		t.Fatalf("the chart rendered ServiceAccount %v, Deployment %v and %d RBAC objects", sa != nil, deployment != nil, rbac)
	}

	// The chart's pod is admitted by the restricted namespace.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: release + "-admission", Namespace: ns.Name, Labels: deployment.Spec.Template.Labels},
		Spec:       deployment.Spec.Template.Spec,
	}
	if err := kube.Create(ctx, pod, client.DryRunAll); err != nil {
		t.Fatalf("the chart's controller pod is refused in a namespace enforcing the restricted Pod Security Standard: %v", err)
	}

	// The controller's credentials: the ServiceAccount, by impersonation.
	user := "system:serviceaccount:" + sa.Namespace + ":" + sa.Name
	cfg := rest.CopyConfig(testCluster.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	asSA, err := client.New(cfg, client.Options{Scheme: apiserver.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	// A check that the impersonation holds: the ServiceAccount may not read
	// Secrets, which the admin may.
	if err := asSA.List(ctx, &corev1.SecretList{}, client.InNamespace(ns.Name)); !apierrors.IsForbidden(err) {
		t.Fatalf("listing Secrets as %s: got %v, want forbidden", user, err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	writeKubeconfig(t, kubeconfig, cfg)

	c := startController(t, controllerOptions{
		name: "stevedore-rbac", account: acc.URL, kubeconfig: kubeconfig,
		// The chart's Role allows the Lease of this name in its namespace.
		leaderElectionID: "karpenter-leader-election", leaderElectionNamespace: ns.Name,
	})

	pool := "rbac-" + suffix()
	createPool(t, poolSpec{Name: pool, Cluster: spec.Cluster,
		Disruption: "    consolidationPolicy: WhenEmptyOrUnderutilized\n    consolidateAfter: 1s"})
	wns := newNamespace(t, "rbac")
	create(t, workloadYAML, workloadSpec{Name: "web", Namespace: wns, Pool: pool, Replicas: 3, CPU: "500m", Memory: "1Gi"})
	waitRunning(t, 90*time.Second, wns, "web", 3)
	grown, err := readPool(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(grown.initialized()) == 0 {
		t.Fatal("the pods run but the pool has no initialized NodeClaim")
	}
	t.Logf("3 pods on %v", grown.nodeNames())

	if err := scale(ctx, wns, "web", 0); err != nil {
		t.Fatal(err)
	}
	eventually(t, 90*time.Second, "the empty nodes consolidated", func(ctx context.Context) error {
		s, err := readPool(ctx, pool)
		if err != nil {
			return err
		}
		for i := range s.nodes {
			if !s.gone(&s.nodes[i]) {
				return fmt.Errorf("node %s is still in service", s.nodes[i].Name)
			}
		}
		for _, nc := range s.claims {
			if nc.DeletionTimestamp == nil {
				return fmt.Errorf("NodeClaim %s is not being deleted", nc.Name)
			}
		}
		return nil
	})
	if err := checkNoLeaks(ctx, acc.AWS, spec.Cluster, pool); err != nil {
		t.Error(err)
	}

	// No request of the controller was refused.
	logText, err := os.ReadFile(c.Log())
	if err != nil {
		t.Fatal(err)
	}
	if lines := matchingLines(string(logText), forbidden); len(lines) > 0 {
		t.Errorf("the controller was refused %d requests with the chart's RBAC:\n%s", len(lines), strings.Join(lines, "\n"))
	}
}

// forbidden matches the API server's refusals as the controller logs them.
var forbidden = regexp.MustCompile(`(?i)forbidden|cannot (get|list|watch|create|update|patch|delete) resource`)

func matchingLines(text string, re *regexp.Regexp) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if re.MatchString(l) {
			out = append(out, l)
		}
	}
	return out
}

// renderChart renders charts/stevedore with the Helm library (through
// hack/charttest/render, a module of its own) for the release and namespace,
// with values over the chart's defaults, and decodes the manifests.
func renderChart(t *testing.T, release, namespace string, values map[string]any) []client.Object {
	t.Helper()
	root := mustRepoRoot(t)
	v, err := json.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), "go", "run", "./render",
		"-chart="+filepath.Join(root, "charts", "stevedore"), "-release="+release, "-namespace="+namespace, "-values="+string(v))
	cmd.Dir = filepath.Join(root, "hack", "charttest")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("rendering the chart: %v\n%s", err, stderr.String())
	}
	return decodeManifests(t, out)
}

// writeKubeconfig writes cfg (server, CA, client certificate, and the user
// it impersonates) as a kubeconfig file.
func writeKubeconfig(t *testing.T, path string, cfg *rest.Config) {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["e2e"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["e2e"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken,
		Impersonate: cfg.Impersonate.UserName, ImpersonateGroups: cfg.Impersonate.Groups,
	}
	kc.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "e2e"}
	kc.CurrentContext = "e2e"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
}

// deleteObject deletes obj, which may already be gone.
func deleteObject(t *testing.T, obj client.Object) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := kube.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting %T %s: %v", obj, obj.GetName(), err)
	}
}
