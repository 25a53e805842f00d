package disruption

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/drift"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/settings"
	"github.com/stevedore-autoscaler/stevedore/controllers/nodeclaim/conditions"
	"github.com/stevedore-autoscaler/stevedore/controllers/nodeclaim/lifecycle"
	"github.com/stevedore-autoscaler/stevedore/controllers/nodepool/hash"
	decide "github.com/stevedore-autoscaler/stevedore/decide/nodeclaim"
	"github.com/stevedore-autoscaler/stevedore/test/apiserver"
	"github.com/stevedore-autoscaler/stevedore/test/kubelet"
)

const clusterName = "test"

var (
	kube    client.Client
	kubeCfg *rest.Config
	scheme  = apiserver.Scheme()
)

func TestMain(m *testing.M) {
	os.Exit(apiserver.RunTests(m, func(cfg *rest.Config, c client.Client) { kubeCfg, kube = cfg, c }))
}

// recorder keeps the events the reconciler records.
type recorder struct {
	mu     sync.Mutex
	events []string // "<reason>: <note>"
}

func (r *recorder) Eventf(_ runtime.Object, _ runtime.Object, _, reason, _, note string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, reason+": "+fmt.Sprintf(note, args...))
}

func (r *recorder) count(reason string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.events {
		if strings.HasPrefix(e, reason+": ") {
			n++
		}
	}
	return n
}

// env is one test's world: its own in-memory AWS and clock, sharing the API
// server with the other tests (so each test uses its own names).
type env struct {
	t     *testing.T
	ctx   context.Context
	clk   *clocktesting.FakeClock
	aws   *fake.AWS
	world *fake.ClusterWorld
	ncMu  sync.Mutex // guards nc, which the provider reads from controller goroutines
	nc    *awsv1.EC2NodeClass
	// afterNodeClassRead, when set, runs each time the provider has read
	// the node class, before the provider goes on with what it read.
	afterNodeClassRead func()
	p                  *aws.Provider
	rec                *recorder
	lc                 *lifecycle.Reconciler
	r                  *Reconciler
}

func newEnv(t *testing.T, seed uint64) *env {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	f := fake.New(fake.Options{Seed: seed, Clock: clk, InstanceTypes: []string{"m6i.large", "m6g.large"}})
	w, err := f.StandardCluster(clusterName, "1.33")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.AddInstanceProfile("test-profile", w.NodeRole); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, ctx: context.Background(), clk: clk, aws: f, world: w, rec: &recorder{}}
	e.nc = e.nodeClass()
	s := settings.Default()
	s.ClusterName = clusterName
	p, err := aws.New(aws.Options{
		Clients:  f.Clients(),
		Settings: s,
		Clock:    clk,
		NodeClass: func(_ context.Context, name string) (*awsv1.EC2NodeClass, error) {
			e.ncMu.Lock()
			var nc *awsv1.EC2NodeClass
			if e.nc != nil && e.nc.Name == name {
				nc = e.nc.DeepCopy()
			}
			after := e.afterNodeClassRead
			e.ncMu.Unlock()
			if after != nil {
				after()
			}
			return nc, nil
		},
		Cluster: aws.ClusterInfo{Endpoint: "https://example.eks.amazonaws.com", CABundle: "Q0E=", ServiceCIDR: "10.100.0.0/16", DNS: []string{"10.100.0.10"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	e.p = p
	e.lc = lifecycle.New(kube, p, clk, nil, nil)
	e.r = New(kube, p, clk, e.rec)
	t.Cleanup(e.cleanup)
	return e
}

// nodeClass is a resolved EC2NodeClass, held in memory and served to the
// provider by its getter.
func (e *env) nodeClass() *awsv1.EC2NodeClass {
	var subnets []awsv1.Subnet
	for i, id := range e.world.SubnetIDs {
		z := e.aws.Zones()[i]
		zid, _ := e.aws.ZoneID(z)
		subnets = append(subnets, awsv1.Subnet{ID: id, Zone: z, ZoneID: zid})
	}
	return &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default", Generation: 1},
		Spec: awsv1.EC2NodeClassSpec{
			AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			Role:             e.world.NodeRole,
		},
		Status: awsv1.EC2NodeClassStatus{
			Subnets:         subnets,
			SecurityGroups:  []awsv1.SecurityGroup{{ID: e.world.SecurityGroupID}},
			AMIs:            e.amis(e.world.Images["al2023/x86_64/standard"]),
			InstanceProfile: "test-profile",
			Conditions: []metav1.Condition{{
				Type: awsv1.ConditionTypeReady, Status: metav1.ConditionTrue, ObservedGeneration: 1, Reason: "Ready",
				LastTransitionTime: metav1.NewTime(e.clk.Now()),
			}},
		},
	}
}

// setImage makes the node class select image for amd64 instances.
func (e *env) setImage(image string) {
	e.ncMu.Lock()
	defer e.ncMu.Unlock()
	e.nc.Status.AMIs = e.amis(image)
}

func (e *env) amis(amd64 string) []awsv1.AMI {
	arch := func(a string) []corev1.NodeSelectorRequirement {
		return []corev1.NodeSelectorRequirement{{Key: wellknown.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{a}}}
	}
	return []awsv1.AMI{
		{ID: amd64, Requirements: arch(wellknown.ArchAMD64)},
		{ID: e.world.Images["al2023/arm64/standard"], Requirements: arch(wellknown.ArchARM64)},
	}
}

// cleanup removes what the test left in the shared API server.
func (e *env) cleanup() {
	ctx := context.Background()
	var nodes corev1.NodeList
	if err := kube.List(ctx, &nodes); err == nil {
		for i := range nodes.Items {
			n := &nodes.Items[i]
			if len(n.Finalizers) > 0 {
				base := n.DeepCopy()
				n.Finalizers = nil
				_ = kube.Patch(ctx, n, client.MergeFrom(base))
			}
			_ = kube.Delete(ctx, n)
		}
	}
	var ncs karpv1.NodeClaimList
	if err := kube.List(ctx, &ncs); err == nil {
		for i := range ncs.Items {
			n := &ncs.Items[i]
			if len(n.Finalizers) > 0 {
				base := n.DeepCopy()
				n.Finalizers = nil
				_ = kube.Patch(ctx, n, client.MergeFrom(base))
			}
			_ = kube.Delete(ctx, n)
		}
	}
	var pods corev1.PodList
	if err := kube.List(ctx, &pods, client.InNamespace("default")); err == nil {
		for i := range pods.Items {
			_ = kube.Delete(ctx, &pods.Items[i], client.GracePeriodSeconds(0))
		}
	}
}

// nodePool creates a NodePool for amd64 on-demand nodes of the default node
// class and stamps its hash annotations, as the NodePool status controller
// does.
func (e *env) nodePool(name string, mutate func(*karpv1.NodePool)) *karpv1.NodePool {
	e.t.Helper()
	np := &karpv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: karpv1.NodePoolSpec{
			Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
				Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
					{Key: wellknown.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{wellknown.ArchAMD64}},
					{Key: wellknown.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{wellknown.CapacityTypeOnDemand}},
				},
				NodeClassRef: &karpv1.NodeClassReference{Group: wellknown.GroupAWS, Kind: "EC2NodeClass", Name: "default"},
			}},
		},
	}
	if mutate != nil {
		mutate(np)
	}
	if err := kube.Create(e.ctx, np); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = kube.Delete(context.Background(), np) })
	return e.updatePool(name, nil)
}

// updatePool changes the NodePool and stamps the hash of its new template.
func (e *env) updatePool(name string, mutate func(*karpv1.NodePool)) *karpv1.NodePool {
	e.t.Helper()
	np := &karpv1.NodePool{}
	if err := kube.Get(e.ctx, client.ObjectKey{Name: name}, np); err != nil {
		e.t.Fatal(err)
	}
	base := np.DeepCopy()
	if mutate != nil {
		mutate(np)
	}
	if np.Annotations == nil {
		np.Annotations = map[string]string{}
	}
	np.Annotations[wellknown.AnnotationNodePoolHash] = hash.Hash(np)
	if np.Annotations[wellknown.AnnotationNodePoolHashVersion] == "" {
		np.Annotations[wellknown.AnnotationNodePoolHashVersion] = hash.Version
	}
	if err := kube.Patch(e.ctx, np, client.MergeFrom(base)); err != nil {
		e.t.Fatal(err)
	}
	return np
}

// launched creates a NodeClaim of the NodePool, as the provisioner would,
// and drives the lifecycle controller until it is launched.
func (e *env) launched(name string, np *karpv1.NodePool) *karpv1.NodeClaim {
	e.t.Helper()
	nc := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:   name,
			Labels: map[string]string{wellknown.LabelNodePool: np.Name, wellknown.LabelEC2NodeClass: "default"},
			Annotations: map[string]string{
				wellknown.AnnotationNodePoolHash:        np.Annotations[wellknown.AnnotationNodePoolHash],
				wellknown.AnnotationNodePoolHashVersion: np.Annotations[wellknown.AnnotationNodePoolHashVersion],
			},
		},
		Spec: karpv1.NodeClaimSpec{
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
				{Key: wellknown.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{wellknown.CapacityTypeOnDemand}},
				{Key: wellknown.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{wellknown.ArchAMD64}},
			},
			Resources:    karpv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
			NodeClassRef: &karpv1.NodeClassReference{Group: wellknown.GroupAWS, Kind: "EC2NodeClass", Name: "default"},
		},
	}
	if err := kube.Create(e.ctx, nc); err != nil {
		e.t.Fatal(err)
	}
	nc = e.driveLifecycle(name)
	if !meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeLaunched) {
		e.t.Fatalf("NodeClaim %s did not launch: %+v", name, nc.Status.Conditions)
	}
	return nc
}

// initialized boots the launched NodeClaim's node, registers it and marks
// it ready, and returns the initialized NodeClaim.
func (e *env) initialized(name string) *karpv1.NodeClaim {
	e.t.Helper()
	e.clk.Step(fake.DefaultBootDelay + time.Second)
	names, err := kubelet.Sync(e.ctx, kube, e.aws, clusterName)
	if err != nil || len(names) != 1 {
		e.t.Fatalf("kubelet.Sync = %v, %v; want one node", names, err)
	}
	e.driveLifecycle(name)
	if err := kubelet.MarkReady(e.ctx, kube, names[0]); err != nil {
		e.t.Fatal(err)
	}
	nc := e.driveLifecycle(name)
	if !meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeInitialized) {
		e.t.Fatalf("NodeClaim %s did not initialize: %+v", name, nc.Status.Conditions)
	}
	return nc
}

func (e *env) driveLifecycle(name string) *karpv1.NodeClaim {
	e.t.Helper()
	last := ""
	for range 20 {
		if _, err := e.lc.Reconcile(e.ctx, request(name)); err != nil {
			e.t.Logf("lifecycle %s: %v", name, err)
		}
		nc := e.get(name)
		if nc.ResourceVersion == last {
			return nc
		}
		last = nc.ResourceVersion
	}
	e.t.Fatalf("NodeClaim %s kept changing", name)
	return nil
}

func request(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: client.ObjectKey{Name: name}}
}

func (e *env) get(name string) *karpv1.NodeClaim {
	e.t.Helper()
	nc := &karpv1.NodeClaim{}
	if err := kube.Get(e.ctx, client.ObjectKey{Name: name}, nc); err != nil {
		e.t.Fatal(err)
	}
	return nc
}

// reconcile runs the condition controller once and returns the NodeClaim.
func (e *env) reconcile(name string) (*karpv1.NodeClaim, reconcile.Result) {
	e.t.Helper()
	res, err := e.r.Reconcile(e.ctx, request(name))
	if err != nil {
		e.t.Fatalf("Reconcile %s: %v", name, err)
	}
	return e.get(name), res
}

func condition(nc *karpv1.NodeClaim, typ string) *metav1.Condition {
	return meta.FindStatusCondition(nc.Status.Conditions, typ)
}

func wantDrift(t *testing.T, nc *karpv1.NodeClaim, reason string) {
	t.Helper()
	c := condition(nc, karpv1.ConditionTypeDrifted)
	switch {
	case reason == "" && c != nil:
		t.Fatalf("Drifted = %s/%s (%s), want no condition", c.Status, c.Reason, c.Message)
	case reason != "" && (c == nil || c.Status != metav1.ConditionTrue || c.Reason != reason):
		t.Fatalf("Drifted = %+v, want True/%s", c, reason)
	}
}

func TestNodePoolDrift(t *testing.T) {
	e := newEnv(t, 301)
	np := e.nodePool("drift-pool", nil)
	e.launched("drift-a", np)

	nc, res := e.reconcile("drift-a")
	wantDrift(t, nc, "")
	if c := condition(nc, karpv1.ConditionTypeConsolidatable); c != nil {
		t.Errorf("Consolidatable = %+v on a node that is not initialized", c)
	}
	if res.RequeueAfter != DriftInterval {
		t.Errorf("RequeueAfter = %s, want %s", res.RequeueAfter, DriftInterval)
	}

	// A template change that only a new node can apply: static drift.
	e.updatePool(np.Name, func(np *karpv1.NodePool) {
		np.Spec.Template.Metadata.Annotations = map[string]string{"example.com/owner": "team-b"}
	})
	nc, _ = e.reconcile("drift-a")
	wantDrift(t, nc, decide.ReasonNodePoolDrifted)
	since := condition(nc, karpv1.ConditionTypeDrifted).LastTransitionTime
	if !since.Time.Equal(e.clk.Now()) {
		t.Errorf("Drifted transition = %s, want the clock's %s", since, e.clk.Now())
	}
	if n := e.rec.count(ReasonDrifted); n != 1 {
		t.Errorf("%d Drifted events, want 1: %v", n, e.rec.events)
	}

	// Reconciling again changes nothing: the transition time stays, no
	// second event.
	e.clk.Step(time.Minute)
	nc, _ = e.reconcile("drift-a")
	if got := condition(nc, karpv1.ConditionTypeDrifted).LastTransitionTime; !got.Equal(&since) || e.rec.count(ReasonDrifted) != 1 {
		t.Errorf("transition %s (want %s), %d events", got, since, e.rec.count(ReasonDrifted))
	}

	// The hash algorithm changes (an upgrade): the hashes cannot be
	// compared, but the recorded drift stands and the NodeClaim keeps its
	// old hash.
	e.updatePool(np.Name, func(np *karpv1.NodePool) {
		np.Annotations[wellknown.AnnotationNodePoolHashVersion] = "other-version"
	})
	nc, _ = e.reconcile("drift-a")
	wantDrift(t, nc, decide.ReasonNodePoolDrifted)
	if v := nc.Annotations[wellknown.AnnotationNodePoolHashVersion]; v != hash.Version {
		t.Errorf("a drifted NodeClaim was re-stamped with version %q", v)
	}

	// Back to the launch template and version: no drift.
	e.updatePool(np.Name, func(np *karpv1.NodePool) {
		np.Spec.Template.Metadata.Annotations = nil
		np.Annotations[wellknown.AnnotationNodePoolHashVersion] = hash.Version
	})
	nc, _ = e.reconcile("drift-a")
	wantDrift(t, nc, "")

	// A hash version change with no drift: while the versions differ the
	// hashes are not compared, even across a template change, and the
	// NodeClaim is left as it is (re-stamping is the NodePool status
	// controller's, when the NodePool's version changes). Once the versions
	// agree again the hashes are compared again.
	e.updatePool(np.Name, func(np *karpv1.NodePool) {
		np.Annotations[wellknown.AnnotationNodePoolHashVersion] = "other-version"
		np.Spec.Template.Metadata.Annotations = map[string]string{"example.com/owner": "team-c"}
	})
	nc, _ = e.reconcile("drift-a")
	wantDrift(t, nc, "")
	if v := nc.Annotations[wellknown.AnnotationNodePoolHashVersion]; v != hash.Version {
		t.Errorf("hash version = %q, want %s left alone", v, hash.Version)
	}
	e.updatePool(np.Name, func(np *karpv1.NodePool) {
		np.Annotations[wellknown.AnnotationNodePoolHashVersion] = hash.Version
	})
	nc, _ = e.reconcile("drift-a")
	wantDrift(t, nc, decide.ReasonNodePoolDrifted)
	e.updatePool(np.Name, func(np *karpv1.NodePool) {
		np.Spec.Template.Metadata.Annotations = nil
	})
	nc, _ = e.reconcile("drift-a")
	wantDrift(t, nc, "")

	// The NodePool now wants arm64 nodes: requirements drift.
	e.updatePool(np.Name, func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.Requirements[0].Values = []string{wellknown.ArchARM64}
	})
	nc, _ = e.reconcile("drift-a")
	wantDrift(t, nc, decide.ReasonRequirementsDrifted)
	if msg := condition(nc, karpv1.ConditionTypeDrifted).Message; !strings.Contains(msg, wellknown.LabelArch) {
		t.Errorf("Drifted message %q does not name the label", msg)
	}

	// Widened again to include amd64: the condition goes.
	e.updatePool(np.Name, func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.Requirements[0].Values = []string{wellknown.ArchAMD64, wellknown.ArchARM64}
	})
	nc, _ = e.reconcile("drift-a")
	wantDrift(t, nc, "")
}

func TestCloudDrift(t *testing.T) {
	e := newEnv(t, 302)
	np := e.nodePool("cloud-drift-pool", nil)
	e.launched("cloud-drift", np)

	// Launched but not initialized: the cloud is not asked.
	before := e.aws.Calls("DescribeInstances")
	nc, _ := e.reconcile("cloud-drift")
	wantDrift(t, nc, "")
	if got := e.aws.Calls("DescribeInstances"); got != before {
		t.Errorf("%d DescribeInstances calls for an uninitialized NodeClaim", got-before)
	}

	e.initialized("cloud-drift")
	nc, _ = e.reconcile("cloud-drift")
	wantDrift(t, nc, "")
	asked := e.aws.Calls("DescribeInstances")

	// AWS releases a new AL2023 image and the node class resolves to it.
	img, err := e.aws.ReleaseImage(fake.FamilyAL2023, "1.33", "x86_64", "standard", fake.Image{Name: "al2023-new"})
	if err != nil {
		t.Fatal(err)
	}
	e.setImage(img.ID)

	// Within DriftInterval the last answer is reused: no cloud call.
	nc, _ = e.reconcile("cloud-drift")
	wantDrift(t, nc, "")
	if got := e.aws.Calls("DescribeInstances"); got != asked {
		t.Errorf("%d DescribeInstances calls within the drift interval, want 0", got-asked)
	}

	// A change to the node class maps to its NodeClaims and forgets the
	// answer; the next reconcile asks the cloud.
	reqs := e.r.nodeClaimsForNodeClass(e.ctx, e.nc)
	if len(reqs) != 1 || reqs[0].Name != "cloud-drift" {
		t.Fatalf("node class maps to %v", reqs)
	}
	nc, _ = e.reconcile("cloud-drift")
	wantDrift(t, nc, string(drift.AMIDrift))

	// The node class goes back to the node's image; after DriftInterval the
	// cloud is asked again and the condition goes.
	e.setImage(e.world.Images["al2023/x86_64/standard"])
	e.clk.Step(DriftInterval)
	nc, _ = e.reconcile("cloud-drift")
	wantDrift(t, nc, "")

	// NodePool drift wins over the cloud's.
	e.setImage(img.ID)
	e.updatePool(np.Name, func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "example.com/dedicated", Effect: corev1.TaintEffectNoSchedule}}
	})
	e.clk.Step(DriftInterval)
	nc, _ = e.reconcile("cloud-drift")
	wantDrift(t, nc, decide.ReasonNodePoolDrifted)
}

// TestCloudDriftClassChangesDuringCheck: the node class changes while a
// reconcile is asking the cloud about the class as it was. The answer that
// reconcile works out must not stand in for the class as it is now: the
// reconcile the change enqueues asks again and finds the drift, rather than
// reusing the stale answer until DriftInterval runs out.
func TestCloudDriftClassChangesDuringCheck(t *testing.T) {
	e := newEnv(t, 304)
	np := e.nodePool("class-race-pool", nil)
	e.launched("class-race", np)
	e.initialized("class-race")

	img, err := e.aws.ReleaseImage(fake.FamilyAL2023, "1.33", "x86_64", "standard", fake.Image{Name: "al2023-during"})
	if err != nil {
		t.Fatal(err)
	}
	var mapped []reconcile.Request
	var once sync.Once
	e.afterNodeClassRead = func() {
		// On the first read only: the class resolves to the new image, and
		// its watch maps the change to the NodeClaim, while the reconcile
		// goes on with the copy it read.
		once.Do(func() {
			e.setImage(img.ID)
			mapped = e.r.nodeClaimsForNodeClass(e.ctx, e.nc)
		})
	}
	nc, _ := e.reconcile("class-race")
	wantDrift(t, nc, "")
	if len(mapped) != 1 || mapped[0].Name != "class-race" {
		t.Fatalf("the node class change maps to %v", mapped)
	}

	// The reconcile the change enqueued, at the same instant.
	asked := e.aws.Calls("DescribeInstances")
	nc, _ = e.reconcile("class-race")
	wantDrift(t, nc, string(drift.AMIDrift))
	if got := e.aws.Calls("DescribeInstances"); got != asked+1 {
		t.Errorf("%d DescribeInstances calls after the change, want 1", got-asked)
	}
}

func TestCloudDriftErrorKeepsCondition(t *testing.T) {
	e := newEnv(t, 303)
	np := e.nodePool("drift-error-pool", nil)
	e.launched("drift-error", np)
	e.initialized("drift-error")
	img, err := e.aws.ReleaseImage(fake.FamilyAL2023, "1.33", "x86_64", "standard", fake.Image{Name: "al2023-next"})
	if err != nil {
		t.Fatal(err)
	}
	e.setImage(img.ID)
	nc, _ := e.reconcile("drift-error")
	wantDrift(t, nc, string(drift.AMIDrift))

	// The node class loses its resolved images: drift cannot be decided,
	// and the condition stays as it was rather than being cleared.
	e.ncMu.Lock()
	e.nc.Status.AMIs = nil
	e.ncMu.Unlock()
	e.clk.Step(DriftInterval)
	if _, err := e.r.Reconcile(e.ctx, request("drift-error")); err == nil {
		t.Error("Reconcile succeeded although drift could not be decided")
	}
	wantDrift(t, e.get("drift-error"), string(drift.AMIDrift))

	// The instance is terminated behind stevedore's back: there is nothing
	// to judge and nothing to retry (garbage collection deletes the
	// NodeClaim); the condition stays.
	e.setImage(img.ID)
	if err := e.p.Delete(e.ctx, e.get("drift-error")); err != nil {
		t.Fatal(err)
	}
	e.clk.Step(fake.DefaultShutdownDelay + DriftInterval)
	nc, res := e.reconcile("drift-error")
	wantDrift(t, nc, string(drift.AMIDrift))
	if res.RequeueAfter != DriftInterval {
		t.Errorf("RequeueAfter = %s for a NodeClaim whose instance is gone", res.RequeueAfter)
	}
}

func TestConsolidatable(t *testing.T) {
	e := newEnv(t, 304)
	np := e.nodePool("consolidate-pool", func(np *karpv1.NodePool) {
		np.Spec.Disruption.ConsolidateAfter = karpv1.NewNillableDuration(3 * time.Minute)
	})
	e.launched("consolidate", np)
	e.initialized("consolidate")

	// Initialized just now: the window runs from here.
	nc, res := e.reconcile("consolidate")
	c := condition(nc, karpv1.ConditionTypeConsolidatable)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != decide.ReasonConsolidateAfterNotElapsed {
		t.Fatalf("Consolidatable = %+v, want False/%s", c, decide.ReasonConsolidateAfterNotElapsed)
	}
	if res.RequeueAfter != 3*time.Minute {
		t.Errorf("RequeueAfter = %s, want the 3m left", res.RequeueAfter)
	}

	e.clk.Step(time.Minute)
	if _, res = e.reconcile("consolidate"); res.RequeueAfter != 2*time.Minute {
		t.Errorf("RequeueAfter = %s, want the 2m left", res.RequeueAfter)
	}
	e.clk.Step(2 * time.Minute)
	nc, res = e.reconcile("consolidate")
	c = condition(nc, karpv1.ConditionTypeConsolidatable)
	if c == nil || c.Status != metav1.ConditionTrue || !c.LastTransitionTime.Time.Equal(e.clk.Now()) {
		t.Fatalf("Consolidatable = %+v, want True since now", c)
	}
	if res.RequeueAfter != DriftInterval {
		t.Errorf("RequeueAfter = %s, want %s", res.RequeueAfter, DriftInterval)
	}

	// A pod lands on the node: the window starts again.
	if _, err := e.r.ReconcilePodEvent(e.ctx, request("consolidate")); err != nil {
		t.Fatal(err)
	}
	nc, res = e.reconcile("consolidate")
	if !nc.Status.LastPodEventTime.Time.Equal(e.clk.Now()) {
		t.Errorf("lastPodEventTime = %s, want %s", nc.Status.LastPodEventTime, e.clk.Now())
	}
	if c = condition(nc, karpv1.ConditionTypeConsolidatable); c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "last pod event") {
		t.Errorf("Consolidatable = %+v after a pod event", c)
	}
	if res.RequeueAfter != 3*time.Minute {
		t.Errorf("RequeueAfter = %s after a pod event, want 3m", res.RequeueAfter)
	}

	// consolidateAfter: Never.
	e.updatePool(np.Name, func(np *karpv1.NodePool) {
		np.Spec.Disruption.ConsolidateAfter = karpv1.NeverDuration()
	})
	nc, res = e.reconcile("consolidate")
	if c = condition(nc, karpv1.ConditionTypeConsolidatable); c.Status != metav1.ConditionFalse || c.Reason != decide.ReasonConsolidateAfterNever {
		t.Errorf("Consolidatable = %+v, want False/%s", c, decide.ReasonConsolidateAfterNever)
	}
	if res.RequeueAfter != DriftInterval {
		t.Errorf("RequeueAfter = %s, want %s", res.RequeueAfter, DriftInterval)
	}
}

func TestPodEventDedupe(t *testing.T) {
	e := newEnv(t, 305)
	np := e.nodePool("podevent-pool", nil)
	e.launched("podevent", np)

	res, err := e.r.ReconcilePodEvent(e.ctx, request("podevent"))
	if err != nil || res.RequeueAfter != 0 {
		t.Fatalf("ReconcilePodEvent = %+v, %v", res, err)
	}
	first := e.get("podevent").Status.LastPodEventTime
	if !first.Time.Equal(e.clk.Now()) {
		t.Fatalf("lastPodEventTime = %s, want %s", first, e.clk.Now())
	}

	// Another event 4s later is not written now, but comes back when the
	// dedupe interval is over.
	e.clk.Step(4 * time.Second)
	res, err = e.r.ReconcilePodEvent(e.ctx, request("podevent"))
	if err != nil || res.RequeueAfter != 6*time.Second {
		t.Fatalf("ReconcilePodEvent = %+v, %v; want a requeue after 6s", res, err)
	}
	if got := e.get("podevent").Status.LastPodEventTime; !got.Equal(&first) {
		t.Errorf("lastPodEventTime moved to %s within the dedupe interval", got)
	}
	e.clk.Step(6 * time.Second)
	if _, err := e.r.ReconcilePodEvent(e.ctx, request("podevent")); err != nil {
		t.Fatal(err)
	}
	if got := e.get("podevent").Status.LastPodEventTime; !got.Time.Equal(e.clk.Now()) {
		t.Errorf("lastPodEventTime = %s, want %s", got, e.clk.Now())
	}

	// A NodeClaim that is gone is not an error.
	if _, err := e.r.ReconcilePodEvent(e.ctx, request("podevent-missing")); err != nil {
		t.Error(err)
	}
}

func TestNodeClaimsOnNodeAndNodePool(t *testing.T) {
	e := newEnv(t, 306)
	np := e.nodePool("mapping-pool", nil)
	e.launched("mapping", np)
	nc := e.initialized("mapping")
	if reqs := e.r.nodeClaimsOnNode(e.ctx, nc.Status.NodeName); len(reqs) != 1 || reqs[0].Name != "mapping" {
		t.Errorf("node %s maps to %v", nc.Status.NodeName, reqs)
	}
	if reqs := e.r.nodeClaimsOnNode(e.ctx, "no-such-node"); len(reqs) != 0 {
		t.Errorf("unknown node maps to %v", reqs)
	}
	if reqs := e.r.nodeClaimsForNodePool(e.ctx, np); len(reqs) != 1 || reqs[0].Name != "mapping" {
		t.Errorf("NodePool maps to %v", reqs)
	}
	other := e.nc.DeepCopy()
	other.Name = "other"
	if reqs := e.r.nodeClaimsForNodeClass(e.ctx, other); len(reqs) != 0 {
		t.Errorf("another node class maps to %v", reqs)
	}
}

func TestSkipped(t *testing.T) {
	e := newEnv(t, 307)
	np := e.nodePool("skip-pool", func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.Requirements[0].Values = []string{wellknown.ArchARM64}
	})

	// Not launched yet: nothing is written, even though the labels do not
	// meet the NodePool's requirements.
	nc := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "skip-unlaunched", Labels: map[string]string{wellknown.LabelNodePool: np.Name}},
		Spec: karpv1.NodeClaimSpec{
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{Key: wellknown.LabelArch, Operator: corev1.NodeSelectorOpExists}},
			NodeClassRef: &karpv1.NodeClassReference{Group: wellknown.GroupAWS, Kind: "EC2NodeClass", Name: "default"},
		},
	}
	if err := kube.Create(e.ctx, nc); err != nil {
		t.Fatal(err)
	}
	got, res := e.reconcile(nc.Name)
	if len(got.Status.Conditions) != 0 || res.RequeueAfter != 0 {
		t.Errorf("unlaunched NodeClaim: conditions %+v, result %+v", got.Status.Conditions, res)
	}

	// Gone: no error.
	if _, err := e.r.Reconcile(e.ctx, request("skip-missing")); err != nil && !apierrors.IsNotFound(err) {
		t.Error(err)
	}
}

func TestPodEventPredicate(t *testing.T) {
	now := metav1.Now()
	pod := func(node string, phase corev1.PodPhase, deleting bool) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase}}
		if deleting {
			p.DeletionTimestamp = &now
		}
		return p
	}
	for _, tc := range []struct {
		name      string
		prev, cur *corev1.Pod
		want      bool
	}{
		{"bound", pod("", corev1.PodPending, false), pod("n", corev1.PodPending, false), true},
		{"still pending", pod("", corev1.PodPending, false), pod("", corev1.PodPending, false), false},
		{"started running", pod("n", corev1.PodPending, false), pod("n", corev1.PodRunning, false), false},
		{"succeeded", pod("n", corev1.PodRunning, false), pod("n", corev1.PodSucceeded, false), true},
		{"failed", pod("n", corev1.PodRunning, false), pod("n", corev1.PodFailed, false), true},
		{"terminal already", pod("n", corev1.PodFailed, false), pod("n", corev1.PodFailed, false), false},
		{"terminating", pod("n", corev1.PodRunning, false), pod("n", corev1.PodRunning, true), true},
		{"terminating already", pod("n", corev1.PodRunning, true), pod("n", corev1.PodRunning, true), false},
		{"unbound pod deleted", pod("", corev1.PodPending, false), pod("", corev1.PodPending, true), false},
		{"DaemonSet pod bound", pod("", corev1.PodPending, false), daemonPod(pod("n", corev1.PodPending, false)), false},
		{"DaemonSet pod terminating", daemonPod(pod("n", corev1.PodRunning, false)), daemonPod(pod("n", corev1.PodRunning, true)), false},
	} {
		if got := PodEvent(tc.prev, tc.cur); got != tc.want {
			t.Errorf("%s: podEvent = %v, want %v", tc.name, got, tc.want)
		}
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"force-deleted running pod", pod("n", corev1.PodRunning, false), true},
		{"deleted after terminating", pod("n", corev1.PodRunning, true), false},
		{"deleted after completing", pod("n", corev1.PodSucceeded, false), false},
		{"deleted while unbound", pod("", corev1.PodPending, false), false},
		{"force-deleted DaemonSet pod", daemonPod(pod("n", corev1.PodRunning, false)), false},
	} {
		if got := PodGoneEvent(tc.pod); got != tc.want {
			t.Errorf("%s: podGoneEvent = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestInstanceTypeDrift: a NodeClaim whose instance type is withdrawn from
// its zone drifts with InstanceTypeNotFound, but only once it is an hour
// old, and a verdict stands for 30 minutes.
func TestInstanceTypeDrift(t *testing.T) {
	e := newEnv(t, 303)
	np := e.nodePool("type-drift-pool", nil)
	e.launched("type-drift", np)
	nc := e.initialized("type-drift")
	typ, zone := nc.Labels[wellknown.LabelInstanceType], nc.Labels[wellknown.LabelTopologyZone]
	if typ == "" || zone == "" {
		t.Fatalf("launched NodeClaim lacks type or zone labels: %v", nc.Labels)
	}
	created := nc.CreationTimestamp.Time

	e.aws.SetOffered(typ, zone, false)
	e.clk.SetTime(created.Add(30 * time.Minute))
	nc, _ = e.reconcile("type-drift")
	wantDrift(t, nc, "")

	e.clk.SetTime(created.Add(decide.InstanceTypeCheckMinAge + time.Minute))
	nc, _ = e.reconcile("type-drift")
	wantDrift(t, nc, decide.ReasonInstanceTypeNotFound)
	if c := condition(nc, karpv1.ConditionTypeDrifted); !strings.Contains(c.Message, typ) || !strings.Contains(c.Message, zone) {
		t.Errorf("message %q names neither %s nor %s", c.Message, typ, zone)
	}

	// Offered again: the verdict stands until the interval has passed.
	e.aws.SetOffered(typ, zone, true)
	e.clk.Step(DriftInterval)
	nc, _ = e.reconcile("type-drift")
	wantDrift(t, nc, decide.ReasonInstanceTypeNotFound)
	e.clk.Step(decide.InstanceTypeCheckInterval)
	nc, _ = e.reconcile("type-drift")
	wantDrift(t, nc, "")
}

// TestStatusWrittenOnChange: a reconcile that changes no condition writes
// nothing; one that does writes the conditions, guarded by the resource
// version.
func TestStatusWrittenOnChange(t *testing.T) {
	e := newEnv(t, 306)
	np := e.nodePool("write-pool", func(np *karpv1.NodePool) {
		np.Spec.Disruption.ConsolidateAfter = karpv1.NewNillableDuration(3 * time.Minute)
	})
	e.launched("write", np)
	e.initialized("write")
	nc, _ := e.reconcile("write")
	if condition(nc, karpv1.ConditionTypeConsolidatable) == nil {
		t.Fatalf("no Consolidatable condition: %+v", nc.Status.Conditions)
	}

	rv := nc.ResourceVersion
	e.clk.Step(time.Minute)
	if nc, _ = e.reconcile("write"); nc.ResourceVersion != rv {
		t.Errorf("a reconcile that changed nothing wrote the NodeClaim (resourceVersion %s -> %s)", rv, nc.ResourceVersion)
	}

	// The window runs out: the condition flips, and is written.
	e.clk.Step(2 * time.Minute)
	nc, _ = e.reconcile("write")
	if c := condition(nc, karpv1.ConditionTypeConsolidatable); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("Consolidatable = %+v, want True", c)
	}
	if nc.ResourceVersion == rv {
		t.Error("the changed condition was not written")
	}
	if got := e.get("write"); !equality.Semantic.DeepEqual(got.Status.Conditions, nc.Status.Conditions) {
		t.Errorf("stored conditions %+v, want %+v", got.Status.Conditions, nc.Status.Conditions)
	}

	// A copy older than the stored NodeClaim is not written over it.
	stale := nc.DeepCopy()
	if _, err := e.r.ReconcilePodEvent(e.ctx, request("write")); err != nil {
		t.Fatal(err)
	}
	meta.RemoveStatusCondition(&stale.Status.Conditions, karpv1.ConditionTypeConsolidatable)
	if err := conditions.Patch(e.ctx, e.r.client, stale); !apierrors.IsConflict(err) {
		t.Errorf("patching a stale copy: %v, want a conflict", err)
	}

	// Emptying the conditions removes them.
	cur := e.get("write")
	cur.Status.Conditions = nil
	if err := conditions.Patch(e.ctx, e.r.client, cur); err != nil {
		t.Fatal(err)
	}
	if got := e.get("write"); len(got.Status.Conditions) != 0 {
		t.Errorf("conditions after emptying them: %+v", got.Status.Conditions)
	}
}

// daemonPod makes p a DaemonSet's pod.
func daemonPod(p *corev1.Pod) *corev1.Pod {
	yes := true
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", Controller: &yes}}
	return p
}
