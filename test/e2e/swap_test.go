//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/test/e2e/cluster"
)

// The release the swap replaces in place, as Karpenter's getting-started
// guide names it, and stevedore's image as the test's values name it.
const (
	swapRelease     = "karpenter"
	swapImage       = "registry.example.com/stevedore"
	karpenterModule = "github.com/aws/karpenter-provider-aws@v1.14.1"
	karpenterCore   = "sigs.k8s.io/karpenter@v1.14.1"
)

// swapTools are what TestHelmSwap runs besides stevedore: the helm command,
// Karpenter's controller and Karpenter's chart, all built or read from
// their own Go modules (helm.sh/helm/v3 in hack/charttest; sigs.k8s.io/karpenter
// in test/karpenter-suite; the chart from github.com/aws/karpenter-provider-aws).
//
// The Karpenter controller is Karpenter v1.14.1's core (provisioner,
// disruption, NodeClaim lifecycle, leader election: the same code as the
// AWS build) with its KWOK cloud provider, whose "instances" are Nodes it
// creates itself: it runs without an AWS account. Its NodePools reference
// a KWOKNodeClass; stevedore's reference an EC2NodeClass.
type swapTools struct {
	helm, karpenter, chart, kwokCRD string
	// karpenterCRDs is the directory of Karpenter's CRDs (NodePool,
	// NodeClaim, EC2NodeClass, NodeOverlay, CapacityBuffer).
	karpenterCRDs string
}

// moduleDir is the directory of a module in the Go module cache, without
// downloading it (hack/e2e.sh has fetched it).
func moduleDir(t *testing.T, mod string) string {
	t.Helper()
	cmd := exec.Command(goCommand(), "mod", "download", "-json", mod)
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	var m struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &m); err != nil || jerr != nil || m.Dir == "" {
		t.Fatalf("the Go module %s is not in the module cache (%v %s): hack/e2e.sh fetches it", mod, err, m.Error)
	}
	return m.Dir
}

// buildTool is the binary named by env, as hack/e2e.sh builds it, or else
// built here from pkg in the module at dir (relative to the repository),
// offline.
func buildTool(t *testing.T, env, dir, pkg string) string {
	t.Helper()
	if bin := os.Getenv(env); bin != "" {
		return bin
	}
	root := mustRepoRoot(t)
	out := filepath.Join(t.TempDir(), filepath.Base(pkg))
	cmd := exec.Command(goCommand(), "build", "-o", out, pkg)
	cmd.Dir = filepath.Join(root, dir)
	cmd.Env = append(os.Environ(), "GOPROXY=off")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s is not set, and building %s in %s failed (hack/e2e.sh builds it): %v\n%s", env, pkg, dir, err, msg)
	}
	return out
}

func getSwapTools(t *testing.T) swapTools {
	return swapTools{
		helm:          buildTool(t, "STEVEDORE_E2E_HELM", "hack/charttest", "helm.sh/helm/v3/cmd/helm"),
		karpenter:     buildTool(t, "STEVEDORE_E2E_KARPENTER", "test/karpenter-suite", "sigs.k8s.io/karpenter/kwok"),
		chart:         filepath.Join(moduleDir(t, karpenterModule), "charts", "karpenter"),
		karpenterCRDs: filepath.Join(moduleDir(t, karpenterModule), "pkg", "apis", "crds"),
		kwokCRD:       filepath.Join(moduleDir(t, karpenterCore), "kwok", "apis", "crds", "karpenter.kwok.sh_kwoknodeclasses.yaml"),
	}
}

// helmRun runs helm as the cluster's administrator, with its own
// configuration, cache and data directories.
func helmRun(t *testing.T, tools swapTools, home string, args ...string) {
	t.Helper()
	out, err := helmCommand(tools, home, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("helm %s:\n%s", strings.Join(args, " "), firstLines(string(out), 6))
}

func helmCommand(tools swapTools, home string, args ...string) *exec.Cmd {
	cmd := exec.Command(tools.helm, append([]string{"--kubeconfig", testCluster.Kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+home+"/config", "HELM_CACHE_HOME="+home+"/cache", "HELM_DATA_HOME="+home+"/data")
	return cmd
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

// podRunner plays the kubelet's part for the release's controller pods: for
// each of its pods that kwok reports Running it starts the binary the pod's
// image stands for (Karpenter's image: Karpenter's controller; stevedore's:
// stevedore) with the container's arguments and environment, and stops it
// with SIGTERM once the pod is being deleted or gone. So the Deployment's
// own rolling update, run by kube-controller-manager, decides when each
// binary starts and stops, as it would on a cluster; kwok removes a deleted
// pod at once, so a new pod may start before the old one's process has
// exited, which is a harder hand-over than a real kubelet's.
type podRunner struct {
	t                    *testing.T
	ns                   string
	tools                swapTools
	account              string
	karpenterKubeconfig  string
	stevedoreKubeconfig  string
	mu                   sync.Mutex
	running              map[string]*cluster.Process // by pod name
	starting, failed     map[string]bool
	started              []string // "pod=binary", in order
	wg                   sync.WaitGroup
	stopped, stopRequest chan struct{}
}

func (r *podRunner) run(ctx context.Context) {
	defer close(r.stopped)
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.stopRequest:
			return
		case <-time.After(300 * time.Millisecond):
		}
		list := &corev1.PodList{}
		if err := kube.List(ctx, list, client.InNamespace(r.ns), client.MatchingLabels{"app.kubernetes.io/instance": swapRelease}); err != nil {
			continue
		}
		live := map[string]bool{}
		for i := range list.Items {
			p := &list.Items[i]
			if p.DeletionTimestamp != nil {
				continue
			}
			live[p.Name] = true
			r.mu.Lock()
			busy := r.running[p.Name] != nil || r.starting[p.Name] || r.failed[p.Name]
			if !busy && p.Status.Phase == corev1.PodRunning {
				r.starting[p.Name] = true
				pod := p.DeepCopy()
				r.wg.Go(func() { r.start(ctx, pod) })
			}
			r.mu.Unlock()
		}
		r.mu.Lock()
		for name, proc := range r.running {
			if !live[name] {
				delete(r.running, name)
				r.wg.Go(func() { r.stop(name, proc) })
			}
		}
		r.mu.Unlock()
	}
}

func (r *podRunner) start(ctx context.Context, p *corev1.Pod) {
	// A pod is started once; a process that fails to start fails the test.
	defer func() {
		r.mu.Lock()
		if r.running[p.Name] == nil {
			r.failed[p.Name] = true
		}
		delete(r.starting, p.Name)
		r.mu.Unlock()
	}()
	c := p.Spec.Containers[0]
	var env []string
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env = append(env, e.Name+"="+e.Value)
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			env = append(env, e.Name+"="+p.Namespace)
		}
	}
	var bin, binary string
	args := slices.Clone(c.Args)
	switch {
	case strings.Contains(c.Image, "karpenter/controller"):
		bin, binary = r.tools.karpenter, "karpenter"
		// In a pod, Karpenter finds its Lease's namespace in the service
		// account's namespace file; out of one, it needs to be told.
		env = append(env, "KUBECONFIG="+r.karpenterKubeconfig, "LEADER_ELECTION_NAMESPACE="+p.Namespace)
	case strings.HasPrefix(c.Image, swapImage+":"):
		bin, binary = stevedoreBin, "stevedore"
		env = append(env, "KUBECONFIG="+r.stevedoreKubeconfig)
		// The image's entrypoint is `/stevedore controller`; the pod's
		// arguments follow it.
		args = slices.Concat([]string{"controller"}, args, []string{"--cloud=simulated", "--simulated-account=" + r.account})
	default:
		r.t.Errorf("pod %s runs the image %s, which is neither Karpenter's nor stevedore's", p.Name, c.Image)
		return
	}
	// Metrics and probes of both bind every interface, as in a pod, on
	// ports of their own (the container's are the same for every pod).
	metrics, probe := freePort(r.t), freePort(r.t)
	env = append(env, "METRICS_PORT="+metrics, "HEALTH_PROBE_PORT="+probe)
	proc, err := testCluster.StartProcess(ctx, cluster.ProcessOptions{
		Name: "swap-" + p.Name, Path: bin, Args: args, Env: env,
		Health: "http://127.0.0.1:" + probe + "/healthz",
	})
	if err != nil {
		if ctx.Err() == nil {
			r.t.Errorf("starting %s for pod %s: %v", binary, p.Name, err)
		}
		return
	}
	r.mu.Lock()
	r.running[p.Name] = proc
	r.started = append(r.started, p.Name+"="+binary)
	r.mu.Unlock()
	r.t.Logf("pod %s: %s started (pid %d, log %s)", p.Name, binary, proc.PID(), proc.Log())
}

func (r *podRunner) stop(name string, proc *cluster.Process) {
	if done, err := proc.Exited(); done {
		r.t.Errorf("the process of pod %s had exited on its own (%v); the end of %s:\n%s", name, err, proc.Log(), proc.Tail(30))
		return
	}
	if err := proc.Stop(30 * time.Second); err != nil {
		r.t.Errorf("stopping the process of pod %s: %v", name, err)
	}
	r.t.Logf("pod %s: process stopped", name)
}

// binaries is how many processes of each binary run now.
func (r *podRunner) binaries() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for name := range r.running {
		for _, s := range r.started {
			if pod, bin, _ := strings.Cut(s, "="); pod == name {
				out[bin]++
			}
		}
	}
	return out
}

// TestHelmSwap swaps a running Karpenter release for stevedore in place
// with Helm and back, as the runbook (docs/migrate-from-karpenter.md) says:
//
//  1. `helm install karpenter` Karpenter's own chart with its own
//     values.yaml; Karpenter's controller runs its pods and provisions for
//     its NodePool.
//  2. `helm upgrade karpenter <stevedore's chart> -f <Karpenter's
//     values.yaml>` with stevedore's image: every object keeps its name and
//     UID, the Deployment rolls pod by pod, and stevedore provisions for its
//     NodePool, whose pods waited while Karpenter led.
//  3. `helm rollback karpenter 1`: Karpenter is back and provisions again.
//  4. `helm upgrade` to stevedore again (a GitOps tool syncing once more).
//
// The pods' processes are the real binaries (see podRunner), so during each
// rolling update a Karpenter and a stevedore process run side by side. The
// API server's audit log then shows who wrote what: every write of either
// controller must fall while it held the leader-election Lease, i.e. after
// its own last write of the Lease and before the other's next one. Two
// controllers that acted at once (as with separate Leases) fail the test.
func TestHelmSwap(t *testing.T) {
	ctx := t.Context()
	tools := getSwapTools(t)
	spec := accountSpec{Cluster: "e2e-swap", Region: "ap-southeast-2", Seed: 15}
	acc := serveAccount(t, spec)
	home := t.TempDir()

	karpUser, err := testCluster.AddUser("karpenter", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	stevUser, err := testCluster.AddUser("stevedore", "system:masters")
	if err != nil {
		t.Fatal(err)
	}

	// The release's namespace, and three nodes of a managed node group
	// (no karpenter.sh/nodepool label) in three zones for its pods.
	ns := newNamespace(t, "swap")
	for _, zone := range []string{"a", "b", "c"} {
		n := kwokNode(t, "m5.large", spec.Region+zone)
		for _, l := range []string{wellknown.LabelNodePool, wellknown.LabelRegistered, wellknown.LabelInitialized, wellknown.LabelCapacityType} {
			delete(n.Labels, l)
		}
		n.Labels["eks.amazonaws.com/nodegroup"] = "system"
		createNode(t, n)
	}

	// Karpenter's KWOKNodeClass, its NodePool and stevedore's.
	createUnstructured(t, mustRead(t, tools.kwokCRD))
	eventually(t, time.Minute, "the KWOKNodeClass CRD served", func(ctx context.Context) error {
		return kube.List(ctx, kwokClassList())
	})
	createUnstructured(t, []byte("apiVersion: karpenter.kwok.sh/v1alpha1\nkind: KWOKNodeClass\nmetadata: {name: swap}\n"))
	create(t, `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: swap-karpenter}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: swap}
      requirements:
        - {key: kubernetes.io/arch, operator: In, values: [amd64]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
  disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: 1h}
`, nil)
	create(t, nodePoolYAML, poolSpec{Name: "swap-stevedore", Cluster: spec.Cluster, AMI: amiOld, Discovery: spec.Cluster,
		CapacityType: wellknown.CapacityTypeOnDemand, Disruption: "    consolidationPolicy: WhenEmpty\n    consolidateAfter: 1h"})
	t.Cleanup(func() { removeSwapPools(t) })
	work := newNamespace(t, "swap-work")

	runner := &podRunner{t: t, ns: ns, tools: tools, account: acc.URL, karpenterKubeconfig: karpUser, stevedoreKubeconfig: stevUser,
		running: map[string]*cluster.Process{}, starting: map[string]bool{}, failed: map[string]bool{}, stopped: make(chan struct{}), stopRequest: make(chan struct{})}
	go runner.run(ctx)
	t.Cleanup(func() {
		close(runner.stopRequest)
		<-runner.stopped
		runner.wg.Wait()
		runner.mu.Lock()
		defer runner.mu.Unlock()
		for name, proc := range runner.running {
			runner.wg.Go(func() { runner.stop(name, proc) })
		}
		runner.wg.Wait()
	})

	t.Cleanup(func() {
		if out, err := helmCommand(tools, home, "uninstall", swapRelease, "-n", ns).CombinedOutput(); err != nil {
			t.Errorf("helm uninstall: %v\n%s", err, out)
		}
	})
	values := filepath.Join(tools.chart, "values.yaml")
	stevedoreChart := filepath.Join(mustRepoRoot(t), "charts", "stevedore")
	clusterName := "settings.clusterName=" + spec.Cluster
	toStevedore := []string{"upgrade", swapRelease, stevedoreChart, "-n", ns, "-f", values, "--set", clusterName,
		"--set", "controller.image.repository=" + swapImage, "--set", "controller.image.tag=e2e", "--set", "controller.image.digest="}
	waitBinaries := func(bin string) {
		eventually(t, 3*time.Minute, "both pods run "+bin+" and nothing else", func(ctx context.Context) error {
			if got := runner.binaries(); got[bin] != 2 || len(got) != 1 {
				return fmt.Errorf("processes running: %v", got)
			}
			return nil
		})
	}

	// Karpenter's CRDs, as Karpenter's install left them; stevedore's are
	// applied over them at each swap to stevedore, and Karpenter's again at
	// the rollback, with a server-side apply as the runbook says. The
	// objects in them must come through each time.
	applyCRDs(t, "helm", karpenterCRDs(t, tools))
	t.Cleanup(func() {
		if _, err := applyCRDObjects(context.Background(), "kubectl", stevedoreCRDs(t)); err != nil {
			t.Errorf("putting stevedore's CRDs back: %v", err)
		}
	})

	// 1. Karpenter, from its own chart and values.
	helmRun(t, tools, home, "install", swapRelease, tools.chart, "-n", ns, "-f", values, "--set", clusterName)
	waitBinaries("karpenter")
	before := releaseObjects(t, ns)
	// Every workload pod needs a node of its own, so that each phase
	// provisions.
	workload := func(name, pool string, replicas int) {
		create(t, workloadYAML, workloadSpec{Name: name, Namespace: work, Pool: pool, Replicas: replicas, CPU: "1", Memory: "1Gi", Group: "swap",
			Extra: `      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {group: swap}}}`})
	}
	workload("k1", "swap-karpenter", 2)
	workload("s1", "swap-stevedore", 2)
	waitRunning(t, 2*time.Minute, work, "k1", 2)

	// 2. In place: stevedore's CRDs and chart, Karpenter's values file.
	objects := countObjects(t)
	applyCRDs(t, "kubectl", stevedoreCRDs(t))
	// A name that would change the Deployment's selector is stopped before
	// anything changes, with the fix.
	if out, err := helmCommand(tools, home, append(toStevedore, "--set", "nameOverride=autoscaler")...).CombinedOutput(); err == nil ||
		!strings.Contains(string(out), `set nameOverride to "karpenter"`) {
		t.Errorf("helm upgrade with a selector Kubernetes cannot change: %v\n%s", err, out)
	}
	helmRun(t, tools, home, toStevedore...)
	waitBinaries("stevedore")
	after := releaseObjects(t, ns)
	if now := countObjects(t); now != objects {
		t.Errorf("NodePools, NodeClaims and node classes before the CRDs were replaced: %s; after: %s", objects, now)
	}
	for k, uid := range before {
		if after[k] != uid {
			t.Errorf("%s: UID %s before the upgrade, %q after: Helm deleted or replaced it", k, uid, after[k])
		}
	}
	t.Logf("%d objects of the release kept their UIDs through the upgrade", len(before))
	waitRunning(t, 3*time.Minute, work, "s1", 2)
	workload("k2", "swap-karpenter", 1)

	// 3. Rollback to Karpenter: its CRDs back first.
	applyCRDs(t, "kubectl", karpenterCRDs(t, tools))
	helmRun(t, tools, home, "rollback", swapRelease, "1", "-n", ns)
	waitBinaries("karpenter")
	waitRunning(t, 3*time.Minute, work, "k2", 1)
	workload("s2", "swap-stevedore", 1)

	// 4. Forward again.
	applyCRDs(t, "kubectl", stevedoreCRDs(t))
	helmRun(t, tools, home, toStevedore...)
	waitBinaries("stevedore")
	waitRunning(t, 3*time.Minute, work, "s2", 1)

	checkOneActorAtATime(t, ns)
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func kwokClassList() *unstructured.UnstructuredList {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(schema.GroupVersionKind{Group: "karpenter.kwok.sh", Version: "v1alpha1", Kind: "KWOKNodeClassList"})
	return l
}

// releaseObjects maps "Kind namespace/name" to the UID of every object a
// Helm release of either chart makes (both charts make the same set).
func releaseObjects(t *testing.T, ns string) map[string]types.UID {
	t.Helper()
	out := map[string]types.UID{}
	for _, o := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: swapRelease}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: swapRelease}},
	} {
		if err := kube.Get(t.Context(), client.ObjectKeyFromObject(o), o); err != nil {
			t.Fatal(err)
		}
		out[fmt.Sprintf("%T %s/%s", o, ns, o.GetName())] = o.GetUID()
	}
	for _, g := range []struct {
		kind, ns string
		names    []string
	}{
		{"Deployment", ns, []string{swapRelease}},
		{"PodDisruptionBudget", ns, []string{swapRelease}},
		{"Role", ns, []string{swapRelease}},
		{"RoleBinding", ns, []string{swapRelease}},
		{"Role", "kube-system", []string{swapRelease + "-dns"}},
		{"RoleBinding", "kube-system", []string{swapRelease + "-dns"}},
		{"ClusterRole", "", []string{swapRelease, swapRelease + "-core", swapRelease + "-admin"}},
		{"ClusterRoleBinding", "", []string{swapRelease, swapRelease + "-core"}},
	} {
		for _, name := range g.names {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvkOf(g.kind))
			if err := kube.Get(t.Context(), client.ObjectKey{Namespace: g.ns, Name: name}, u); err != nil {
				t.Fatalf("%s %s/%s: %v", g.kind, g.ns, name, err)
			}
			out[fmt.Sprintf("%s %s/%s", g.kind, g.ns, name)] = u.GetUID()
		}
	}
	return out
}

func gvkOf(kind string) schema.GroupVersionKind {
	switch kind {
	case "Deployment":
		return schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: kind}
	case "PodDisruptionBudget":
		return schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: kind}
	default:
		return schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: kind}
	}
}

// karpenterCRDs reads Karpenter's CRDs from its module.
func karpenterCRDs(t *testing.T, tools swapTools) []byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(tools.karpenterCRDs, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("Karpenter's CRDs in %s: %v", tools.karpenterCRDs, err)
	}
	slices.Sort(files)
	var all []byte
	for _, f := range files {
		all = append(append(all, mustRead(t, f)...), "\n---\n"...)
	}
	return all
}

// stevedoreCRDs is what `stevedore crds` prints.
func stevedoreCRDs(t *testing.T) []byte {
	t.Helper()
	out, err := exec.Command(stevedoreBin, "crds").Output()
	if err != nil {
		t.Fatalf("stevedore crds: %v", err)
	}
	return out
}

// applyCRDs applies a stream of CRDs server-side as manager, taking over
// the fields another manager set (kubectl apply --server-side
// --force-conflicts), and waits until each is established.
func applyCRDs(t *testing.T, manager string, stream []byte) {
	t.Helper()
	names, err := applyCRDObjects(t.Context(), manager, stream)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, fmt.Sprintf("%d CRDs established", len(names)), func(ctx context.Context) error {
		for _, n := range names {
			crd := &unstructured.Unstructured{}
			crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
			if err := kube.Get(ctx, client.ObjectKey{Name: n}, crd); err != nil {
				return err
			}
			conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
			established := slices.ContainsFunc(conds, func(c any) bool {
				m, _ := c.(map[string]any)
				return m["type"] == "Established" && m["status"] == "True"
			})
			if !established {
				return fmt.Errorf("%s not established", n)
			}
		}
		return nil
	})
}

func applyCRDObjects(ctx context.Context, manager string, stream []byte) ([]string, error) {
	docs, err := unstructuredDocs(stream)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, u := range docs {
		if err := kube.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(manager), client.ForceOwnership); err != nil {
			return nil, fmt.Errorf("applying the CRD %s as %s: %w", u.GetName(), manager, err)
		}
		names = append(names, u.GetName())
	}
	return names, nil
}

// countObjects counts the NodePools, NodeClaims and EC2NodeClasses.
func countObjects(t *testing.T) string {
	t.Helper()
	pools, claims, classes := &karpv1.NodePoolList{}, &karpv1.NodeClaimList{}, &awsv1.EC2NodeClassList{}
	for _, l := range []client.ObjectList{pools, claims, classes} {
		if err := kube.List(t.Context(), l); err != nil {
			t.Fatal(err)
		}
	}
	return fmt.Sprintf("%d NodePools, %d NodeClaims, %d EC2NodeClasses", len(pools.Items), len(claims.Items), len(classes.Items))
}

// auditEvent is the part of an audit log line the check reads.
type auditEvent struct {
	Verb string `json:"verb"`
	User struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef struct {
		Resource, Namespace, Name, APIGroup, Subresource string
	} `json:"objectRef"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceived metav1.MicroTime `json:"requestReceivedTimestamp"`
	Stage           metav1.MicroTime `json:"stageTimestamp"`
}

func (e auditEvent) String() string {
	r := e.ObjectRef.Resource
	if e.ObjectRef.Subresource != "" {
		r += "/" + e.ObjectRef.Subresource
	}
	return fmt.Sprintf("%s %s %s %s/%s (%d) at %s", e.User.Username, e.Verb, r, e.ObjectRef.Namespace, e.ObjectRef.Name,
		e.ResponseStatus.Code, e.RequestReceived.UTC().Format("15:04:05.000000"))
}

// checkOneActorAtATime reads the audit log: the successful writes of the
// leader-election Lease in ns tell who led from when; every other write of
// the users "karpenter" and "stevedore" must come from the one whose Lease
// write came last before it was received.
func checkOneActorAtATime(t *testing.T, ns string) {
	t.Helper()
	f, err := os.Open(testCluster.AuditLog())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lease, writes []auditEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("audit log: %v", err)
		}
		switch {
		case e.ObjectRef.Resource == "leases" && e.ObjectRef.Namespace == ns && e.ObjectRef.Name == "karpenter-leader-election":
			if e.ResponseStatus.Code < 300 {
				lease = append(lease, e)
			}
		case e.ObjectRef.Resource == "leases":
			// Another Lease (none expected, but not an act on the cluster).
		default:
			writes = append(writes, e)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	sort.SliceStable(lease, func(i, j int) bool { return lease[i].Stage.Before(&lease[j].Stage) })
	sort.SliceStable(writes, func(i, j int) bool { return writes[i].RequestReceived.Before(&writes[j].RequestReceived) })

	// Leadership hand-overs, and each controller's writes.
	var handovers []string
	for i, e := range lease {
		if i == 0 || lease[i-1].User.Username != e.User.Username {
			handovers = append(handovers, e.User.Username+" from "+e.Stage.UTC().Format("15:04:05.000"))
		}
	}
	t.Logf("the Lease was held by: %s", strings.Join(handovers, ", "))
	counts := map[string]map[string]int{}
	var bad, foreign []string
	for _, w := range writes {
		u := w.User.Username
		if counts[u] == nil {
			counts[u] = map[string]int{}
		}
		counts[u][w.ObjectRef.Resource]++
		// The last Lease write completed before this write was received.
		i := sort.Search(len(lease), func(i int) bool { return !lease[i].Stage.Before(&w.RequestReceived) })
		switch {
		case i == 0:
			bad = append(bad, fmt.Sprintf("%s, before anyone held the Lease", w))
		case lease[i-1].User.Username != u:
			bad = append(bad, fmt.Sprintf("%s, while %s held the Lease (its write at %s)", w, lease[i-1].User.Username,
				lease[i-1].Stage.UTC().Format("15:04:05.000000")))
		}
		// Neither touches the other's NodePool, NodeClaims or Nodes:
		// Karpenter's are named after its pool (kwok-swap-karpenter-… for
		// Nodes), stevedore's after its pool and ip-… for Nodes.
		if other := othersObject(u, w); other {
			foreign = append(foreign, w.String())
		}
	}
	t.Logf("writes by controller and resource: %v", counts)
	if len(bad) > 0 {
		t.Errorf("%d writes by a controller that did not hold the Lease, e.g.:\n%s", len(bad), strings.Join(bad[:min(len(bad), 15)], "\n"))
	}
	if len(foreign) > 0 {
		t.Errorf("%d writes to the other controller's NodePool, NodeClaims or Nodes, e.g.:\n%s", len(foreign), strings.Join(foreign[:min(len(foreign), 15)], "\n"))
	}
	// The test means something only if both acted, and the Lease changed
	// hands at each of the three swaps.
	if counts["karpenter"]["nodeclaims"] == 0 || counts["stevedore"]["nodeclaims"] == 0 {
		t.Errorf("NodeClaim writes: karpenter %d, stevedore %d; both should have provisioned", counts["karpenter"]["nodeclaims"], counts["stevedore"]["nodeclaims"])
	}
	if len(handovers) != 4 {
		t.Errorf("the Lease changed hands %d times (%v), want karpenter, stevedore, karpenter, stevedore", len(handovers)-1, handovers)
	}
}

// othersObject reports whether the write w by user u is to the other
// controller's NodePool, or a NodeClaim or Node of it.
func othersObject(u string, w auditEvent) bool {
	name := w.ObjectRef.Name
	switch w.ObjectRef.Resource {
	case "nodeclaims":
		return (u == "stevedore" && strings.HasPrefix(name, "swap-karpenter-")) || (u == "karpenter" && strings.HasPrefix(name, "swap-stevedore-"))
	case "nodes":
		return (u == "stevedore" && strings.HasPrefix(name, "kwok-")) || (u == "karpenter" && strings.HasPrefix(name, "ip-"))
	case "nodepools":
		return (u == "stevedore" && name == "swap-karpenter") || (u == "karpenter" && name == "swap-stevedore")
	}
	return false
}

// removeSwapPools deletes the two NodePools, their NodeClaims and Nodes
// and the node classes once both controllers are gone, lifting the
// finalizers no controller is left to remove.
func removeSwapPools(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	unfinalize := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
	for _, pool := range []string{"swap-karpenter", "swap-stevedore"} {
		_ = kube.Delete(ctx, &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: pool}})
		claims := &karpv1.NodeClaimList{}
		if err := kube.List(ctx, claims, client.MatchingLabels{wellknown.LabelNodePool: pool}); err == nil {
			for i := range claims.Items {
				_ = kube.Patch(ctx, &claims.Items[i], unfinalize)
				_ = kube.Delete(ctx, &claims.Items[i])
			}
		}
		nodes := &corev1.NodeList{}
		if err := kube.List(ctx, nodes, client.MatchingLabels{wellknown.LabelNodePool: pool}); err == nil {
			for i := range nodes.Items {
				_ = kube.Patch(ctx, &nodes.Items[i], unfinalize)
				_ = kube.Delete(ctx, &nodes.Items[i])
			}
		}
	}
	nc := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "swap-stevedore"}}
	_ = kube.Patch(ctx, nc, unfinalize)
	_ = kube.Delete(ctx, nc)
	kc := &unstructured.Unstructured{}
	kc.SetGroupVersionKind(schema.GroupVersionKind{Group: "karpenter.kwok.sh", Version: "v1alpha1", Kind: "KWOKNodeClass"})
	kc.SetName("swap")
	_ = kube.Patch(ctx, kc, unfinalize)
	_ = kube.Delete(ctx, kc)
}

// createUnstructured creates the objects of a YAML stream of kinds the
// suite's scheme does not know (a CRD, a KWOKNodeClass); one that exists
// already is left as it is.
func createUnstructured(t *testing.T, stream []byte) {
	t.Helper()
	docs, err := unstructuredDocs(stream)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range docs {
		if err := kube.Create(t.Context(), u); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
}

// unstructuredDocs decodes a stream of YAML documents without a scheme.
func unstructuredDocs(stream []byte) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split(string(stream), "\n---") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			return nil, err
		}
		if len(m) > 0 {
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
	return out, nil
}
