package disruption

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/controllers/nodeclaim/lifecycle"
	"github.com/stevedore-autoscaler/stevedore/state"
	"github.com/stevedore-autoscaler/stevedore/test/environment"
)

func TestMain(m *testing.M) { environment.Main(m) }

// env is one test's world (with its EC2NodeClass, Ready) and the disruption
// controller. The test plays the informers (sync), the kubelets and the
// controllers other than the one under test, each at the moment it chooses.
type env struct {
	*environment.Env
	opts Options
	c    *Controller
	lc   *lifecycle.Reconciler
}

func newEnv(t *testing.T, name string, seed uint64) *env {
	t.Helper()
	e := &env{Env: environment.New(t, environment.Options{
		Name: name, Seed: seed, InstanceTypes: []string{"c6i.large", "m6i.large", "c6i.xlarge", "m6i.xlarge"},
		// The API server stamps creation and deletion times with its own
		// clock; the controller compares them with the fake clock's.
		WallClock: true,
	})}
	e.c = New(e.Kube, e.State, e.Cloud, e.Clock, e.Events, e.opts, e.Metrics)
	e.lc = lifecycle.New(e.Kube, e.Cloud, e.Clock, e.Events, e.Metrics)
	e.CreateNodeClass()
	return e
}

// restart replaces the controller and the cluster state with new ones, as a
// new process (or a new leader) would start: the state is rebuilt from the
// API server, and nothing the old controller remembered survives.
func (e *env) restart() {
	e.State = state.NewCluster()
	e.c = New(e.Kube, e.State, e.Cloud, e.Clock, e.Events, e.opts, e.Metrics)
}

// driftBudget is the seeds' rollout budget: drifted nodes one at a time.
func driftBudget(np *karpv1.NodePool) {
	np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "1", Reasons: []karpv1.DisruptionReason{karpv1.DisruptionReasonDrifted}}}
}

// node launches an instance of the given type for a new NodeClaim of the
// test's NodePool and brings it up: launched, registered, initialized. It
// returns the NodeClaim.
func (e *env) node(instanceType string) *karpv1.NodeClaim {
	e.T.Helper()
	nc := environment.NewNodeClaim("", e.Name, e.Name)
	nc.GenerateName = e.Name + "-"
	nc.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{
		{Key: wellknown.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{instanceType}},
		{Key: wellknown.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{wellknown.CapacityTypeOnDemand}},
		{Key: wellknown.LabelNodePool, Operator: corev1.NodeSelectorOpIn, Values: []string{e.Name}},
	}
	e.Create(nc)
	e.bringUp(nc.Name)
	return e.NodeClaim(nc.Name)
}

// drive reconciles a NodeClaim with the lifecycle controller a few times.
func (e *env) drive(name string) {
	e.T.Helper()
	for range 4 {
		if _, err := e.lc.Reconcile(e.Ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}); err != nil {
			e.T.Fatalf("lifecycle %s: %v", name, err)
		}
	}
}

// bringUp takes a NodeClaim from created to initialized, playing the
// lifecycle controller and the kubelet.
func (e *env) bringUp(name string) {
	e.T.Helper()
	e.drive(name)
	if !meta.IsStatusConditionTrue(e.NodeClaim(name).Status.Conditions, karpv1.ConditionTypeLaunched) {
		e.T.Fatalf("NodeClaim %s did not launch: %+v", name, e.NodeClaim(name).Status.Conditions)
	}
	e.Boot()
	e.drive(name)
	nc := e.NodeClaim(name)
	if nc.Status.NodeName == "" {
		e.T.Fatalf("NodeClaim %s did not register: %+v", name, nc.Status.Conditions)
	}
	e.MarkReady(nc.Status.NodeName)
	e.drive(name)
	if !meta.IsStatusConditionTrue(e.NodeClaim(name).Status.Conditions, karpv1.ConditionTypeInitialized) {
		e.T.Fatalf("NodeClaim %s did not initialize: %+v", name, e.NodeClaim(name).Status.Conditions)
	}
}

// setCondition sets a condition on a NodeClaim, playing the controllers
// that own it (Drifted and Consolidatable are the NodeClaim disruption
// controller's).
func (e *env) setCondition(name, typ string, status metav1.ConditionStatus, reason string) {
	e.T.Helper()
	nc := e.NodeClaim(name)
	base := nc.DeepCopy()
	meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, ObservedGeneration: nc.Generation, LastTransitionTime: metav1.NewTime(e.Clock.Now()),
	})
	if err := e.Kube.Status().Patch(e.Ctx, nc, client.MergeFrom(base)); err != nil {
		e.T.Fatal(err)
	}
}

// pod creates a running, ready pod labelled app=web bound to the node,
// requesting cpu.
func (e *env) pod(name, node, cpu string, change ...func(*corev1.Pod)) *corev1.Pod {
	e.T.Helper()
	p := environment.NewPod(name, cpu, "256Mi")
	p.Labels = map[string]string{"app": "web"}
	for _, c := range change {
		c(p)
	}
	return e.CreateRunning(p, node)
}

// pdb creates a PodDisruptionBudget over the app=web pods, with the
// disruptions allowed its status says.
func (e *env) pdb(maxUnavailable int32, allowed int32) *policyv1.PodDisruptionBudget {
	e.T.Helper()
	return e.CreatePDB("web", map[string]string{"app": "web"}, maxUnavailable, allowed)
}

// pass syncs the state and runs one pass of the controller.
func (e *env) pass() reconcile.Result {
	e.T.Helper()
	e.SyncState()
	res, err := e.c.Reconcile(e.Ctx, Request())
	if err != nil {
		e.T.Fatalf("Reconcile: %v", err)
	}
	return res
}

// replacements returns the NodeClaims launched for the command with ID id.
func (e *env) replacements(id string) []karpv1.NodeClaim {
	e.T.Helper()
	var list karpv1.NodeClaimList
	if err := e.Kube.List(e.Ctx, &list); err != nil {
		e.T.Fatal(err)
	}
	return slices.DeleteFunc(list.Items, func(nc karpv1.NodeClaim) bool { return nc.Annotations[AnnotationReplacementFor] != id || id == "" })
}

// tainted reports whether the node carries the disrupted taint.
func (e *env) tainted(node string) bool {
	e.T.Helper()
	return hasDisruptedTaint(e.Node(node))
}

// disruptionReason returns the reason of the NodeClaim's DisruptionReason
// condition, "" when it has none.
func (e *env) disruptionReason(name string) string {
	e.T.Helper()
	c := meta.FindStatusCondition(e.NodeClaim(name).Status.Conditions, karpv1.ConditionTypeDisruptionReason)
	if c == nil || c.Status != metav1.ConditionTrue {
		return ""
	}
	return c.Reason
}

// deleting reports whether the NodeClaim is being deleted (or gone).
func (e *env) deleting(name string) bool {
	e.T.Helper()
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
	return !e.Exists(nc) || !nc.DeletionTimestamp.IsZero()
}

// marked reports whether the state has the node marked for deletion.
func (e *env) marked(name string) bool {
	n, ok := e.State.Snapshot(e.Clock.Now()).Node(name)
	return ok && n.MarkedForDeletion
}
