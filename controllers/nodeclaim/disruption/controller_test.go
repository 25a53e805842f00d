package disruption

import (
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/drift"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/controllers/nodeclaim/conditions"
	"github.com/stevedore-autoscaler/stevedore/controllers/nodeclaim/lifecycle"
	"github.com/stevedore-autoscaler/stevedore/controllers/nodepool/hash"
	decide "github.com/stevedore-autoscaler/stevedore/decide/nodeclaim"
	"github.com/stevedore-autoscaler/stevedore/test/environment"
)

func TestMain(m *testing.M) { environment.Main(m) }

// env is one test's world, with its EC2NodeClass held in memory, and the
// condition controller; the lifecycle controller takes NodeClaims up.
type env struct {
	*environment.Env
	lc *lifecycle.Reconciler
	r  *Reconciler
}

func newEnv(t *testing.T, seed uint64) *env {
	t.Helper()
	e := &env{Env: environment.New(t, environment.Options{Seed: seed, InstanceTypes: []string{"m6i.large", "m6g.large"}, NodeClassInMemory: true})}
	e.lc = lifecycle.New(e.Kube, e.Cloud, e.Clock, nil, nil)
	e.r = New(e.Kube, e.Cloud, e.Clock, e.Events)
	return e
}

// setImage makes the node class select image for amd64 instances.
func (e *env) setImage(image string) {
	e.UpdateNodeClass(func(nc *awsv1.EC2NodeClass) { nc.Status.AMIs = e.AMIs(image) })
}

// nodePool creates a NodePool for amd64 on-demand nodes of the default node
// class and stamps its hash annotations, as the NodePool status controller
// does.
func (e *env) nodePool(name string, mutate func(*karpv1.NodePool)) *karpv1.NodePool {
	e.T.Helper()
	np := environment.NewNodePool(name, "default")
	if mutate != nil {
		mutate(np)
	}
	e.Create(np)
	return e.updatePool(name, nil)
}

// updatePool changes the NodePool and stamps the hash of its new template.
func (e *env) updatePool(name string, mutate func(*karpv1.NodePool)) *karpv1.NodePool {
	e.T.Helper()
	np := &karpv1.NodePool{}
	if err := e.Kube.Get(e.Ctx, client.ObjectKey{Name: name}, np); err != nil {
		e.T.Fatal(err)
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
	if err := e.Kube.Patch(e.Ctx, np, client.MergeFrom(base)); err != nil {
		e.T.Fatal(err)
	}
	return np
}

// launched creates a NodeClaim of the NodePool, as the provisioner would,
// and drives the lifecycle controller until it is launched.
func (e *env) launched(name string, np *karpv1.NodePool) *karpv1.NodeClaim {
	e.T.Helper()
	nc := environment.NewNodeClaim(name, np.Name, "default")
	nc.Labels[wellknown.LabelEC2NodeClass] = "default"
	nc.Annotations = map[string]string{
		wellknown.AnnotationNodePoolHash:        np.Annotations[wellknown.AnnotationNodePoolHash],
		wellknown.AnnotationNodePoolHashVersion: np.Annotations[wellknown.AnnotationNodePoolHashVersion],
	}
	e.Create(nc)
	nc = e.driveLifecycle(name)
	if !meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeLaunched) {
		e.T.Fatalf("NodeClaim %s did not launch: %+v", name, nc.Status.Conditions)
	}
	return nc
}

// initialized boots the launched NodeClaim's node, registers it and marks
// it ready, and returns the initialized NodeClaim.
func (e *env) initialized(name string) *karpv1.NodeClaim {
	e.T.Helper()
	names := e.Boot()
	if len(names) != 1 {
		e.T.Fatalf("nodes %v registered, want one", names)
	}
	e.driveLifecycle(name)
	e.MarkReady(names[0])
	nc := e.driveLifecycle(name)
	if !meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeInitialized) {
		e.T.Fatalf("NodeClaim %s did not initialize: %+v", name, nc.Status.Conditions)
	}
	return nc
}

func (e *env) driveLifecycle(name string) *karpv1.NodeClaim {
	e.T.Helper()
	nc, _ := e.Settle(e.lc, name)
	if nc == nil {
		e.T.Fatalf("NodeClaim %s is gone", name)
	}
	return nc
}

func request(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: client.ObjectKey{Name: name}}
}

// reconcile runs the condition controller once and returns the NodeClaim.
func (e *env) reconcile(name string) (*karpv1.NodeClaim, reconcile.Result) {
	e.T.Helper()
	res, err := e.r.Reconcile(e.Ctx, request(name))
	if err != nil {
		e.T.Fatalf("Reconcile %s: %v", name, err)
	}
	return e.NodeClaim(name), res
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
	if !since.Time.Equal(e.Clock.Now()) {
		t.Errorf("Drifted transition = %s, want the clock's %s", since, e.Clock.Now())
	}
	// The Drifted event is the status watch's, as in Karpenter, not this
	// controller's.
	if n := len(e.Events.Matching(environment.Event{Reason: ReasonDrifted})); n != 0 {
		t.Errorf("%d Drifted events from the controller, want 0: %v", n, e.Events)
	}

	// Reconciling again changes nothing: the transition time stays.
	e.Clock.Step(time.Minute)
	nc, _ = e.reconcile("drift-a")
	if got := condition(nc, karpv1.ConditionTypeDrifted).LastTransitionTime; !got.Equal(&since) {
		t.Errorf("transition %s, want %s", got, since)
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
	before := e.AWS.Calls("DescribeInstances")
	nc, _ := e.reconcile("cloud-drift")
	wantDrift(t, nc, "")
	if got := e.AWS.Calls("DescribeInstances"); got != before {
		t.Errorf("%d DescribeInstances calls for an uninitialized NodeClaim", got-before)
	}

	e.initialized("cloud-drift")
	nc, _ = e.reconcile("cloud-drift")
	wantDrift(t, nc, "")
	asked := e.AWS.Calls("DescribeInstances")

	// AWS releases a new AL2023 image and the node class resolves to it.
	img, err := e.AWS.ReleaseImage(fake.FamilyAL2023, "1.33", "x86_64", "standard", fake.Image{Name: "al2023-new"})
	if err != nil {
		t.Fatal(err)
	}
	e.setImage(img.ID)

	// Within DriftInterval the last answer is reused: no cloud call.
	nc, _ = e.reconcile("cloud-drift")
	wantDrift(t, nc, "")
	if got := e.AWS.Calls("DescribeInstances"); got != asked {
		t.Errorf("%d DescribeInstances calls within the drift interval, want 0", got-asked)
	}

	// A change to the node class maps to its NodeClaims and forgets the
	// answer; the next reconcile asks the cloud.
	reqs := e.r.nodeClaimsForNodeClass(e.Ctx, e.NodeClass())
	if len(reqs) != 1 || reqs[0].Name != "cloud-drift" {
		t.Fatalf("node class maps to %v", reqs)
	}
	nc, _ = e.reconcile("cloud-drift")
	wantDrift(t, nc, string(drift.AMIDrift))

	// The node class goes back to the node's image; after DriftInterval the
	// cloud is asked again and the condition goes.
	e.setImage(e.World.Images["al2023/x86_64/standard"])
	e.Clock.Step(DriftInterval)
	nc, _ = e.reconcile("cloud-drift")
	wantDrift(t, nc, "")

	// NodePool drift wins over the cloud's.
	e.setImage(img.ID)
	e.updatePool(np.Name, func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "example.com/dedicated", Effect: corev1.TaintEffectNoSchedule}}
	})
	e.Clock.Step(DriftInterval)
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

	img, err := e.AWS.ReleaseImage(fake.FamilyAL2023, "1.33", "x86_64", "standard", fake.Image{Name: "al2023-during"})
	if err != nil {
		t.Fatal(err)
	}
	var mapped []reconcile.Request
	var once sync.Once
	e.AfterNodeClassRead(func() {
		// On the first read only: the class resolves to the new image, and
		// its watch maps the change to the NodeClaim, while the reconcile
		// goes on with the copy it read.
		once.Do(func() {
			e.setImage(img.ID)
			mapped = e.r.nodeClaimsForNodeClass(e.Ctx, e.NodeClass())
		})
	})
	nc, _ := e.reconcile("class-race")
	wantDrift(t, nc, "")
	if len(mapped) != 1 || mapped[0].Name != "class-race" {
		t.Fatalf("the node class change maps to %v", mapped)
	}

	// The reconcile the change enqueued, at the same instant.
	asked := e.AWS.Calls("DescribeInstances")
	nc, _ = e.reconcile("class-race")
	wantDrift(t, nc, string(drift.AMIDrift))
	if got := e.AWS.Calls("DescribeInstances"); got != asked+1 {
		t.Errorf("%d DescribeInstances calls after the change, want 1", got-asked)
	}
}

func TestCloudDriftErrorKeepsCondition(t *testing.T) {
	e := newEnv(t, 303)
	np := e.nodePool("drift-error-pool", nil)
	e.launched("drift-error", np)
	e.initialized("drift-error")
	img, err := e.AWS.ReleaseImage(fake.FamilyAL2023, "1.33", "x86_64", "standard", fake.Image{Name: "al2023-next"})
	if err != nil {
		t.Fatal(err)
	}
	e.setImage(img.ID)
	nc, _ := e.reconcile("drift-error")
	wantDrift(t, nc, string(drift.AMIDrift))

	// The node class loses its resolved images: drift cannot be decided,
	// and the condition stays as it was rather than being cleared.
	e.UpdateNodeClass(func(nc *awsv1.EC2NodeClass) { nc.Status.AMIs = nil })
	e.Clock.Step(DriftInterval)
	if _, err := e.r.Reconcile(e.Ctx, request("drift-error")); err == nil {
		t.Error("Reconcile succeeded although drift could not be decided")
	}
	wantDrift(t, e.NodeClaim("drift-error"), string(drift.AMIDrift))

	// The instance is terminated behind stevedore's back: there is nothing
	// to judge and nothing to retry (garbage collection deletes the
	// NodeClaim); the condition stays.
	e.setImage(img.ID)
	if err := e.Cloud.Delete(e.Ctx, e.NodeClaim("drift-error")); err != nil {
		t.Fatal(err)
	}
	e.Clock.Step(fake.DefaultShutdownDelay + DriftInterval)
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

	e.Clock.Step(time.Minute)
	if _, res = e.reconcile("consolidate"); res.RequeueAfter != 2*time.Minute {
		t.Errorf("RequeueAfter = %s, want the 2m left", res.RequeueAfter)
	}
	e.Clock.Step(2 * time.Minute)
	nc, res = e.reconcile("consolidate")
	c = condition(nc, karpv1.ConditionTypeConsolidatable)
	if c == nil || c.Status != metav1.ConditionTrue || !c.LastTransitionTime.Time.Equal(e.Clock.Now()) {
		t.Fatalf("Consolidatable = %+v, want True since now", c)
	}
	if res.RequeueAfter != DriftInterval {
		t.Errorf("RequeueAfter = %s, want %s", res.RequeueAfter, DriftInterval)
	}

	// A pod lands on the node: the window starts again.
	if _, err := e.r.ReconcilePodEvent(e.Ctx, request("consolidate")); err != nil {
		t.Fatal(err)
	}
	nc, res = e.reconcile("consolidate")
	if !nc.Status.LastPodEventTime.Time.Equal(e.Clock.Now()) {
		t.Errorf("lastPodEventTime = %s, want %s", nc.Status.LastPodEventTime, e.Clock.Now())
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

	res, err := e.r.ReconcilePodEvent(e.Ctx, request("podevent"))
	if err != nil || res.RequeueAfter != 0 {
		t.Fatalf("ReconcilePodEvent = %+v, %v", res, err)
	}
	first := e.NodeClaim("podevent").Status.LastPodEventTime
	if !first.Time.Equal(e.Clock.Now()) {
		t.Fatalf("lastPodEventTime = %s, want %s", first, e.Clock.Now())
	}

	// Another event 4s later is not written now, but comes back when the
	// dedupe interval is over.
	e.Clock.Step(4 * time.Second)
	res, err = e.r.ReconcilePodEvent(e.Ctx, request("podevent"))
	if err != nil || res.RequeueAfter != 6*time.Second {
		t.Fatalf("ReconcilePodEvent = %+v, %v; want a requeue after 6s", res, err)
	}
	if got := e.NodeClaim("podevent").Status.LastPodEventTime; !got.Equal(&first) {
		t.Errorf("lastPodEventTime moved to %s within the dedupe interval", got)
	}
	e.Clock.Step(6 * time.Second)
	if _, err := e.r.ReconcilePodEvent(e.Ctx, request("podevent")); err != nil {
		t.Fatal(err)
	}
	if got := e.NodeClaim("podevent").Status.LastPodEventTime; !got.Time.Equal(e.Clock.Now()) {
		t.Errorf("lastPodEventTime = %s, want %s", got, e.Clock.Now())
	}

	// A NodeClaim that is gone is not an error.
	if _, err := e.r.ReconcilePodEvent(e.Ctx, request("podevent-missing")); err != nil {
		t.Error(err)
	}
}

func TestNodeClaimsOnNodeAndNodePool(t *testing.T) {
	e := newEnv(t, 306)
	np := e.nodePool("mapping-pool", nil)
	e.launched("mapping", np)
	nc := e.initialized("mapping")
	if reqs := e.r.nodeClaimsOnNode(e.Ctx, nc.Status.NodeName); len(reqs) != 1 || reqs[0].Name != "mapping" {
		t.Errorf("node %s maps to %v", nc.Status.NodeName, reqs)
	}
	if reqs := e.r.nodeClaimsOnNode(e.Ctx, "no-such-node"); len(reqs) != 0 {
		t.Errorf("unknown node maps to %v", reqs)
	}
	if reqs := e.r.nodeClaimsForNodePool(e.Ctx, np); len(reqs) != 1 || reqs[0].Name != "mapping" {
		t.Errorf("NodePool maps to %v", reqs)
	}
	other := e.NodeClass()
	other.Name = "other"
	if reqs := e.r.nodeClaimsForNodeClass(e.Ctx, other); len(reqs) != 0 {
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
	nc := environment.NewNodeClaim("skip-unlaunched", np.Name, "default")
	nc.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{{Key: wellknown.LabelArch, Operator: corev1.NodeSelectorOpExists}}
	e.Create(nc)
	got, res := e.reconcile(nc.Name)
	if len(got.Status.Conditions) != 0 || res.RequeueAfter != 0 {
		t.Errorf("unlaunched NodeClaim: conditions %+v, result %+v", got.Status.Conditions, res)
	}

	// Gone: no error.
	if _, err := e.r.Reconcile(e.Ctx, request("skip-missing")); err != nil && !apierrors.IsNotFound(err) {
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

	e.AWS.SetOffered(typ, zone, false)
	e.Clock.SetTime(created.Add(30 * time.Minute))
	nc, _ = e.reconcile("type-drift")
	wantDrift(t, nc, "")

	e.Clock.SetTime(created.Add(decide.InstanceTypeCheckMinAge + time.Minute))
	nc, _ = e.reconcile("type-drift")
	wantDrift(t, nc, decide.ReasonInstanceTypeNotFound)
	if c := condition(nc, karpv1.ConditionTypeDrifted); !strings.Contains(c.Message, typ) || !strings.Contains(c.Message, zone) {
		t.Errorf("message %q names neither %s nor %s", c.Message, typ, zone)
	}

	// Offered again: the verdict stands until the interval has passed.
	e.AWS.SetOffered(typ, zone, true)
	e.Clock.Step(DriftInterval)
	nc, _ = e.reconcile("type-drift")
	wantDrift(t, nc, decide.ReasonInstanceTypeNotFound)
	e.Clock.Step(decide.InstanceTypeCheckInterval)
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
	e.Clock.Step(time.Minute)
	if nc, _ = e.reconcile("write"); nc.ResourceVersion != rv {
		t.Errorf("a reconcile that changed nothing wrote the NodeClaim (resourceVersion %s -> %s)", rv, nc.ResourceVersion)
	}

	// The window runs out: the condition flips, and is written.
	e.Clock.Step(2 * time.Minute)
	nc, _ = e.reconcile("write")
	if c := condition(nc, karpv1.ConditionTypeConsolidatable); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("Consolidatable = %+v, want True", c)
	}
	if nc.ResourceVersion == rv {
		t.Error("the changed condition was not written")
	}
	if got := e.NodeClaim("write"); !equality.Semantic.DeepEqual(got.Status.Conditions, nc.Status.Conditions) {
		t.Errorf("stored conditions %+v, want %+v", got.Status.Conditions, nc.Status.Conditions)
	}

	// A copy older than the stored NodeClaim is not written over it.
	stale := nc.DeepCopy()
	if _, err := e.r.ReconcilePodEvent(e.Ctx, request("write")); err != nil {
		t.Fatal(err)
	}
	meta.RemoveStatusCondition(&stale.Status.Conditions, karpv1.ConditionTypeConsolidatable)
	if err := conditions.Patch(e.Ctx, e.r.client, stale); !apierrors.IsConflict(err) {
		t.Errorf("patching a stale copy: %v, want a conflict", err)
	}

	// Emptying the conditions removes them.
	cur := e.NodeClaim("write")
	cur.Status.Conditions = nil
	if err := conditions.Patch(e.Ctx, e.r.client, cur); err != nil {
		t.Fatal(err)
	}
	if got := e.NodeClaim("write"); len(got.Status.Conditions) != 0 {
		t.Errorf("conditions after emptying them: %+v", got.Status.Conditions)
	}
}

// daemonPod makes p a DaemonSet's pod.
func daemonPod(p *corev1.Pod) *corev1.Pod {
	yes := true
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", Controller: &yes}}
	return p
}

// TestLeavesOtherProvidersNodeClaims: a NodeClaim of another provider's
// node class gets no Drifted or Consolidatable condition and no pod event
// time, even when its NodePool's template has moved on and its
// consolidateAfter has passed, while stevedore's own NodeClaim in the same
// situation gets them.
func TestLeavesOtherProvidersNodeClaims(t *testing.T) {
	e := newEnv(t, 308)
	consolidateNow := func(np *karpv1.NodePool) {
		np.Spec.Disruption.ConsolidateAfter = karpv1.NewNillableDuration(0)
	}
	ours := e.nodePool("signals-ours", consolidateNow)
	theirs := e.nodePool("signals-kwok", func(np *karpv1.NodePool) {
		consolidateNow(np)
		np.Spec.Template.Spec.NodeClassRef = environment.KWOKNodeClassRef()
	})
	e.launched("signals-ours", ours)
	e.initialized("signals-ours")
	other, _ := e.CreateForeign("signals-kwok", theirs.Name, func(nc *karpv1.NodeClaim) {
		nc.Annotations = map[string]string{
			wellknown.AnnotationNodePoolHash:        theirs.Annotations[wellknown.AnnotationNodePoolHash],
			wellknown.AnnotationNodePoolHashVersion: hash.Version,
		}
	})
	// Both templates move on: both NodeClaims are behind their NodePools.
	for _, name := range []string{ours.Name, theirs.Name} {
		e.updatePool(name, func(np *karpv1.NodePool) {
			np.Spec.Template.Metadata.Annotations = map[string]string{"example.com/owner": "team-b"}
		})
	}
	e.Clock.Step(time.Minute)

	for _, tc := range []struct {
		name    string
		signals bool
	}{
		{"signals-ours", true},
		{other.Name, false},
	} {
		before := e.NodeClaim(tc.name)
		e.reconcile(tc.name)
		if _, err := e.r.ReconcilePodEvent(e.Ctx, request(tc.name)); err != nil {
			t.Fatal(err)
		}
		nc := e.NodeClaim(tc.name)
		drifted := condition(nc, karpv1.ConditionTypeDrifted) != nil
		consolidatable := condition(nc, karpv1.ConditionTypeConsolidatable) != nil
		podEvent := !nc.Status.LastPodEventTime.IsZero()
		if drifted != tc.signals || consolidatable != tc.signals || podEvent != tc.signals {
			t.Errorf("%s: Drifted %t, Consolidatable %t, lastPodEventTime %t; want each %t", tc.name, drifted, consolidatable, podEvent, tc.signals)
		}
		if !tc.signals && nc.ResourceVersion != before.ResourceVersion {
			t.Errorf("%s was written: %+v", tc.name, nc.Status)
		}
	}
	if evs := e.Events.About(other.Name, ""); len(evs) > 0 {
		t.Errorf("events about another provider's NodeClaim: %v", evs)
	}
}
