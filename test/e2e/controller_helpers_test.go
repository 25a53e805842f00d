//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/template"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/sim/account"
	simkubelet "github.com/stevedore-autoscaler/stevedore/sim/kubelet"
	"github.com/stevedore-autoscaler/stevedore/test/apiserver"
	"github.com/stevedore-autoscaler/stevedore/test/e2e/cluster"
)

// stevedoreBin is the stevedore binary TestMain builds for the suite.
var stevedoreBin string

// buildStevedore builds cmd/stevedore into dir, as `make build` would.
//
// STEVEDORE_E2E_BIN names a binary built already (hack/e2e.sh builds one
// for all of its shards) and skips the build.
func buildStevedore(dir string) (string, error) {
	if bin := os.Getenv("STEVEDORE_E2E_BIN"); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			return "", fmt.Errorf("STEVEDORE_E2E_BIN: %w", err)
		}
		return bin, nil
	}
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "stevedore")
	cmd := exec.Command(goCommand(), "build", "-o", out, "./cmd/stevedore")
	cmd.Dir = root
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/stevedore: %w\n%s", err, msg)
	}
	return out, nil
}

// repoRoot is the repository's root directory (the local cluster's
// configuration is in hack/local-cluster under it).
func repoRoot() (string, error) {
	config, err := cluster.ConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Dir(filepath.Dir(config)), nil
}

// mustRepoRoot is repoRoot for a test.
func mustRepoRoot(t *testing.T) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// goCommand is the go command: $GO, else go.
func goCommand() string {
	if g := os.Getenv("GO"); g != "" {
		return g
	}
	return "go"
}

// The simulated accounts of the tests: each names its own cluster and region,
// so that Node names (ip-…<region>.compute.internal) never collide between
// accounts. Instances boot in 3 s and are Ready 2 s after they register.
// Each enforces the controller policy of Karpenter's reference template on
// every call, as the IAM role of a user who swaps Karpenter for stevedore
// would; serveAccount fails the test if any call was refused.
const accountTemplate = `apiVersion: stevedore.io/v1alpha1
kind: Scenario
metadata: {name: {{.Cluster}}}
spec:
  seed: {{.Seed}}
  cluster: {name: {{.Cluster}}, kubernetesVersion: "1.33"}
  aws:
    region: {{.Region}}
    images:
      - {id: ` + amiOld + `, name: amazon-eks-node-al2023-x86_64-standard-1.32-v20250601, arch: x86_64}
      - {id: ` + amiNew + `, name: amazon-eks-node-al2023-x86_64-standard-1.33-v20250701, arch: x86_64}
    interruptionQueue: {{.Cluster}}
    controllerPolicy: Karpenter
    bootTime: 3s
    readyTime: 2s
`

// The AMIs of the accounts: the image nodes start on, and the upgrade's.
const (
	amiOld = "ami-0e2e0000000000001"
	amiNew = "ami-0e2e0000000000002"
)

type accountSpec struct {
	Cluster, Region string
	Seed            int
}

func (a accountSpec) yaml() string {
	var b strings.Builder
	if err := template.Must(template.New("account").Parse(accountTemplate)).Execute(&b, a); err != nil {
		panic(err)
	}
	return b.String()
}

// writeAccount writes the account's Scenario to a file for
// --simulated-account.
func writeAccount(t *testing.T, a accountSpec) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), a.Cluster+".yaml")
	if err := os.WriteFile(path, []byte(a.yaml()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// servedAccount is an account held by the test process and served on
// loopback to the controllers (--simulated-account=http://…); its kubelets
// run here too. The test reaches the in-memory AWS directly: to interrupt
// an instance, or to check that no instance leaked.
type servedAccount struct {
	*account.Account
	URL string
}

func serveAccount(t *testing.T, a accountSpec) *servedAccount {
	t.Helper()
	acc, err := account.Load(writeAccount(t, a), account.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := account.ListenLoopback("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(testCluster.LogDir(), "account-"+a.Cluster+".log"))
	if err != nil {
		t.Fatal(err)
	}
	var logMu sync.Mutex
	logger := funcr.New(func(prefix, args string) {
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintf(logFile, "%s %s %s\n", time.Now().UTC().Format(time.RFC3339Nano), prefix, args)
	}, funcr.Options{})
	ctx, cancel := context.WithCancel(log.IntoContext(context.Background(), logger))
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := acc.Serve(ctx, l); err != nil {
			t.Errorf("serving the simulated account: %v", err)
		}
	})
	wg.Go(func() { _ = acc.Kubelets(kube).Start(ctx) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		_ = logFile.Close()
		for _, d := range acc.AWS.DenialSummary() {
			t.Errorf("account %s: Karpenter's controller policy refused %s", a.Cluster, d)
		}
	})
	return &servedAccount{Account: acc, URL: "http://" + l.Addr().String()}
}

// controller is a `stevedore controller` process under test.
type controller struct {
	*cluster.Process
	name    string
	metrics string // its /metrics URL
	killed  bool
}

type controllerOptions struct {
	// name of the process (and of its log file); unique in the suite.
	name string
	// account is --simulated-account: a file or a served account's URL.
	account string
	// leaderElectionID turns on leader election with that Lease (in
	// leaderElectionNamespace, default "default"); empty runs without.
	leaderElectionID, leaderElectionNamespace string
	// kubeconfig is the controller's credentials; empty is the cluster's
	// admin.
	kubeconfig string
	// featureGates is --feature-gates; empty leaves the default.
	featureGates string
	// cloud, when set, replaces --cloud=simulated and
	// --simulated-account (account is then unused); env is added to the
	// process's environment.
	cloud, env []string
}

// startController starts the controller binary against the cluster and
// waits until it answers its health probe. It is stopped (SIGTERM) when the
// test ends; a controller that died on its own fails the test.
func startController(t *testing.T, o controllerOptions) *controller {
	t.Helper()
	metrics, probe := freePort(t), freePort(t)
	if o.kubeconfig == "" {
		o.kubeconfig = testCluster.Kubeconfig
	}
	if o.leaderElectionNamespace == "" {
		o.leaderElectionNamespace = "default"
	}
	args := []string{
		"controller",
		"--kubeconfig=" + o.kubeconfig,
		"--metrics-bind-address=127.0.0.1:" + metrics,
		"--health-probe-bind-address=127.0.0.1:" + probe,
		// Shorter than the defaults, to keep the suite short.
		"--batch-idle-duration=1s",
		"--batch-max-duration=5s",
		"--disruption-validation-delay=5s",
	}
	if o.cloud == nil {
		o.cloud = []string{"--cloud=simulated", "--simulated-account=" + o.account}
	}
	args = append(args, o.cloud...)
	if o.featureGates != "" {
		args = append(args, "--feature-gates="+o.featureGates)
	}
	if o.leaderElectionID != "" {
		args = append(args, "--leader-elect=true", "--leader-election-namespace="+o.leaderElectionNamespace, "--leader-election-id="+o.leaderElectionID)
	} else {
		args = append(args, "--leader-elect=false")
	}
	p, err := testCluster.StartProcess(t.Context(), cluster.ProcessOptions{
		Name: o.name, Path: stevedoreBin, Args: args, Env: o.env, Health: "http://127.0.0.1:" + probe + "/healthz",
	})
	if err != nil {
		t.Fatalf("starting the controller: %v", err)
	}
	c := &controller{Process: p, name: o.name, metrics: "http://127.0.0.1:" + metrics + "/metrics"}
	t.Cleanup(func() {
		if done, err := p.Exited(); done && !c.killed {
			t.Errorf("controller %s exited during the test (%v); the end of %s:\n%s", o.name, err, p.Log(), p.Tail(40))
			return
		}
		if t.Failed() && !c.killed {
			t.Logf("the end of %s:\n%s", p.Log(), p.Tail(40))
		}
		if err := p.Stop(20 * time.Second); err != nil {
			t.Errorf("stopping controller %s: %v", o.name, err)
		}
	})
	t.Logf("controller %s started (pid %d, log %s)", o.name, p.PID(), p.Log())
	return c
}

// kill ends the controller with SIGKILL: no Lease released, no cleanup.
func (c *controller) kill() {
	c.killed = true
	c.Kill()
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// decoder reads the manifests the tests create.
var decoder = serializer.NewCodecFactory(apiserver.Scheme()).UniversalDeserializer()

// manifests renders a template of YAML documents with data and decodes
// them.
func manifests(t *testing.T, text string, data any) []client.Object {
	t.Helper()
	var b bytes.Buffer
	if err := template.Must(template.New("manifests").Option("missingkey=error").Parse(text)).Execute(&b, data); err != nil {
		t.Fatal(err)
	}
	return decodeManifests(t, b.Bytes())
}

// decodeManifests decodes a stream of YAML documents.
func decodeManifests(t *testing.T, stream []byte) []client.Object {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(stream)))
	var out []client.Object
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, _, err := decoder.Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("decoding %s: %v", doc, err)
		}
		out = append(out, obj.(client.Object))
	}
	return out
}

// create creates the objects of a manifest template.
func create(t *testing.T, text string, data any) {
	t.Helper()
	for _, obj := range manifests(t, text, data) {
		if err := kube.Create(t.Context(), obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
	}
}

// nodePoolYAML is an EC2NodeClass and a NodePool of the same name for the
// account's cluster, on the old AMI, with the given disruption settings
// (YAML under spec.disruption) and template spec additions. Pods choose the
// pool by its karpenter.sh/nodepool label.
const nodePoolYAML = `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: {{.Name}}}
spec:
  role: KarpenterNodeRole-{{.Cluster}}
{{- if .Alias}}
  amiSelectorTerms: [{alias: {{.Alias}}}]
{{- else}}
  amiFamily: AL2023
  amiSelectorTerms: [{id: {{.AMI}}}]
{{- end}}
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: {{.Discovery}}}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: {{.Cluster}}}}]
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: {{.Name}}}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: {{.Name}}}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [{{.CapacityType}}]}
        - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
        - {key: karpenter.k8s.aws/instance-generation, operator: Gt, values: ["5"]}
{{- range .Requirements}}
        - {{.}}
{{- end}}
{{.Template}}
  disruption:
{{.Disruption}}
`

type poolSpec struct {
	Name, Cluster string
	// AMI defaults to amiOld; Discovery (the subnets' tag) to Cluster;
	// CapacityType to on-demand.
	AMI, Discovery, CapacityType string
	// Alias, when set, selects the image by alias (al2023@latest) instead
	// of AMI.
	Alias string
	// Requirements are added to the pool's, each a flow mapping such as
	// {key: kubernetes.io/arch, operator: In, values: [amd64]}.
	Requirements []string
	// Template is YAML added under spec.template.spec (indented 6).
	Template string
	// Disruption is YAML under spec.disruption (indented 4).
	Disruption string
}

// createPool creates the node class and pool, and deletes them when the
// test ends, after their NodeClaims and Nodes are gone (which needs the
// controller: start it before calling createPool). Create the test's
// namespace after the pool, so that its workloads and budgets are deleted
// first and cannot hold up the drain of the pool's nodes.
func createPool(t *testing.T, p poolSpec) {
	t.Helper()
	createPoolObjects(t, p)
	t.Cleanup(func() { deletePool(t, p.Name) })
}

// createPoolObjects creates the node class and pool and leaves them when the
// test ends.
func createPoolObjects(t *testing.T, p poolSpec) {
	t.Helper()
	if p.AMI == "" {
		p.AMI = amiOld
	}
	if p.Discovery == "" {
		p.Discovery = p.Cluster
	}
	if p.CapacityType == "" {
		p.CapacityType = wellknown.CapacityTypeOnDemand
	}
	if p.Disruption == "" {
		p.Disruption = "    consolidationPolicy: WhenEmpty\n    consolidateAfter: 30s"
	}
	create(t, nodePoolYAML, p)
}

// deletePool deletes a NodePool, its NodeClaims and its EC2NodeClass and
// waits until its Nodes are gone.
func deletePool(t *testing.T, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := kube.Delete(ctx, np); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting NodePool %s: %v", name, err)
	}
	if err := kube.DeleteAllOf(ctx, &karpv1.NodeClaim{}, client.MatchingLabels{wellknown.LabelNodePool: name}); err != nil {
		t.Errorf("deleting the NodeClaims of %s: %v", name, err)
	}
	for {
		claims := &karpv1.NodeClaimList{}
		nodes := &corev1.NodeList{}
		err := kube.List(ctx, claims, client.MatchingLabels{wellknown.LabelNodePool: name})
		if err == nil {
			err = kube.List(ctx, nodes, client.MatchingLabels{wellknown.LabelNodePool: name})
		}
		if err == nil && len(claims.Items) == 0 && len(nodes.Items) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Errorf("NodePool %s: %d NodeClaims and %d Nodes left after the test (%v)", name, len(claims.Items), len(nodes.Items), err)
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
	deleteNodeClass(ctx, t, name)
}

// deleteNodeClass deletes an EC2NodeClass and waits until ctx ends for the
// controller to finalize it. The EC2NodeClass is gone only once the
// controller, which must still run, has deleted its launch templates and
// instance profile: left behind with its finalizer, the next test's
// controller would finalize it in another account.
func deleteNodeClass(ctx context.Context, t *testing.T, name string) {
	nc := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := kube.Delete(ctx, nc); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting EC2NodeClass %s: %v", name, err)
	}
	for {
		err := kube.Get(ctx, client.ObjectKey{Name: name}, nc)
		if apierrors.IsNotFound(err) {
			return
		}
		select {
		case <-ctx.Done():
			t.Errorf("EC2NodeClass %s is still there after the test (finalizers %v, %v); removing its finalizers", name, nc.Finalizers, err)
			patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
			if err := kube.Patch(context.Background(), nc, patch); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("removing the finalizers of EC2NodeClass %s: %v", name, err)
			}
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// workloadYAML is a Deployment of pods that ask for cpu and memory on the
// pool's nodes; Extra is YAML added to the pod spec (indented 6), Annotations
// to the pod template's annotations (indented 8).
const workloadYAML = `apiVersion: apps/v1
kind: Deployment
metadata: {name: {{.Name}}, namespace: {{.Namespace}}}
spec:
  replicas: {{.Replicas}}
  selector: {matchLabels: {app: {{.Name}}}}
  template:
    metadata:
      labels: {app: {{.Name}}{{if .Group}}, group: {{.Group}}{{end}}}
      annotations:
        kwok.stevedore.io/stop-delay: 500ms
{{.Annotations}}
    spec:
      nodeSelector: {karpenter.sh/nodepool: {{.Pool}}}
      terminationGracePeriodSeconds: 5
      containers:
        - name: app
          image: registry.invalid/{{.Name}}:1
          resources: {requests: {cpu: {{.CPU}}, memory: {{.Memory}}}}
{{.Extra}}
`

type workloadSpec struct {
	Name, Namespace, Pool string
	Replicas              int
	CPU, Memory           string
	// Group, when set, labels the pods group=<Group>.
	Group              string
	Annotations, Extra string
}

// pods lists the pods of a workload that are not being deleted.
func pods(ctx context.Context, ns, app string) ([]corev1.Pod, error) {
	list := &corev1.PodList{}
	if err := kube.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{"app": app}); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(list.Items, func(p corev1.Pod) bool { return p.DeletionTimestamp != nil }), nil
}

// waitRunning waits until n pods of the workload are Running and Ready (and
// no more exist), and returns them.
func waitRunning(t *testing.T, timeout time.Duration, ns, app string, n int) []corev1.Pod {
	t.Helper()
	var out []corev1.Pod
	eventually(t, timeout, fmt.Sprintf("%d pods of %s Running", n, app), func(ctx context.Context) error {
		ps, err := pods(ctx, ns, app)
		if err != nil {
			return err
		}
		ready := 0
		for i := range ps {
			if ps[i].Status.Phase == corev1.PodRunning && isPodReady(&ps[i]) {
				ready++
			}
		}
		if ready != n || len(ps) != n {
			return fmt.Errorf("%d pods, %d Running and Ready", len(ps), ready)
		}
		out = ps
		return nil
	})
	return out
}

// poolState is a pool's NodeClaims and Nodes.
type poolState struct {
	claims []karpv1.NodeClaim
	nodes  []corev1.Node
}

func readPool(ctx context.Context, pool string) (poolState, error) {
	var s poolState
	claims := &karpv1.NodeClaimList{}
	if err := kube.List(ctx, claims, client.MatchingLabels{wellknown.LabelNodePool: pool}); err != nil {
		return s, err
	}
	nodes := &corev1.NodeList{}
	if err := kube.List(ctx, nodes, client.MatchingLabels{wellknown.LabelNodePool: pool}); err != nil {
		return s, err
	}
	s.claims, s.nodes = claims.Items, nodes.Items
	return s, nil
}

// initialized returns the names of the NodeClaims that are initialized and
// not being deleted.
func (s poolState) initialized() []string {
	var out []string
	for _, nc := range s.claims {
		if nc.DeletionTimestamp == nil && meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeInitialized) {
			out = append(out, nc.Name)
		}
	}
	return out
}

// nodeNames returns the names of the pool's Nodes.
func (s poolState) nodeNames() []string {
	var out []string
	for _, n := range s.nodes {
		out = append(out, n.Name)
	}
	slices.Sort(out)
	return out
}

// draining reports whether the node is being taken away and its pods have
// not all left yet: it is tainted for disruption or being deleted, and its
// NodeClaim is not yet Drained. (A drained node whose instance is shutting
// down no longer counts against a disruption budget.)
func (s poolState) draining(n *corev1.Node) bool {
	if !disrupted(n) {
		return false
	}
	for _, nc := range s.claims {
		if nc.Status.NodeName == n.Name {
			return !meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeDrained) &&
				!meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeInstanceTerminating)
		}
	}
	return true
}

// gone reports whether the node is gone for every practical purpose: its
// NodeClaim is drained and its instance is shutting down (the Node object
// stays until the instance has terminated, 30 s later).
func (s poolState) gone(n *corev1.Node) bool {
	for _, nc := range s.claims {
		if nc.Status.NodeName == n.Name {
			return nc.DeletionTimestamp != nil && meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeInstanceTerminating)
		}
	}
	return n.DeletionTimestamp != nil
}

// disrupted reports whether the node is tainted for disruption or being
// deleted.
func disrupted(n *corev1.Node) bool {
	if n.DeletionTimestamp != nil {
		return true
	}
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == wellknown.TaintKeyDisrupted })
}

// events lists the events about an object (any namespace) with the reason.
func events(ctx context.Context, name, reason string) ([]corev1.Event, error) {
	list := &corev1.EventList{}
	if err := kube.List(ctx, list); err != nil {
		return nil, err
	}
	var out []corev1.Event
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name && (reason == "" || e.Reason == reason) {
			out = append(out, e)
		}
	}
	return out, nil
}

// checkNoLeaks checks the account against the cluster: every instance of
// the pool that is not terminating belongs to a NodeClaim, and every
// NodeClaim of the pool with a provider ID that is not being deleted has its
// instance.
func checkNoLeaks(ctx context.Context, aws *fake.AWS, clusterName, pool string) error {
	s, err := readPool(ctx, pool)
	if err != nil {
		return err
	}
	claimed := map[string]string{}
	for _, nc := range s.claims {
		if id := simkubelet.InstanceID(nc.Status.ProviderID); id != "" {
			claimed[id] = nc.Name
		}
	}
	var problems []string
	live := map[string]bool{}
	for _, id := range aws.InstanceIDs() {
		info, ok := aws.Instance(id)
		if !ok || !simkubelet.InCluster(info, clusterName) || info.Tags[wellknown.TagNodePool] != pool {
			continue
		}
		if info.State == fake.StateTerminated || info.State == fake.StateShuttingDown {
			continue
		}
		live[id] = true
		if _, ok := claimed[id]; !ok {
			problems = append(problems, fmt.Sprintf("instance %s (%s, %s) belongs to no NodeClaim", id, info.InstanceType, info.State))
		}
	}
	for _, nc := range s.claims {
		id := simkubelet.InstanceID(nc.Status.ProviderID)
		if id != "" && !live[id] && nc.DeletionTimestamp == nil {
			problems = append(problems, fmt.Sprintf("NodeClaim %s has no running instance (%s)", nc.Name, id))
		}
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// scrape reads the controller's metrics and sums the samples of a metric
// whose labels contain every given label="value" pair.
func scrape(ctx context.Context, url, metric string, labels ...string) (float64, error) {
	page, err := scrapePage(ctx, url)
	if err != nil {
		return 0, err
	}
	return sumMetric(page, metric, labels...)
}

// scrapePage reads the controller's metrics page. Read it once for several
// sums: with a sample per pod, the page of a large cluster is tens of
// megabytes, and each read costs the controller CPU and memory that a
// measurement would then count.
func scrapePage(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	return string(body), nil
}

// sumMetric sums the samples of a metric on a metrics page whose labels
// contain every given label="value" pair.
func sumMetric(page, metric string, labels ...string) (float64, error) {
	sum := 0.0
	for line := range strings.SplitSeq(page, "\n") {
		if !strings.HasPrefix(line, metric+"{") && !strings.HasPrefix(line, metric+" ") {
			continue
		}
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(line, l)
		}
		if !ok {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			return 0, fmt.Errorf("metric line %q: %w", line, err)
		}
		sum += v
	}
	return sum, nil
}
