package disruption

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/controllers/metrics"
	"github.com/stevedore-autoscaler/stevedore/controllers/node/termination"
	"github.com/stevedore-autoscaler/stevedore/decide/budget"
	decide "github.com/stevedore-autoscaler/stevedore/decide/disruption"
	"github.com/stevedore-autoscaler/stevedore/state"
	"github.com/stevedore-autoscaler/stevedore/test/environment"
)

// driftedNode sets up the drift-upgrade story of the seeds: a NodePool
// whose budget lets drift replace one node at a time, and one drifted node
// running two pods that fit on no other node.
func driftedNode(t *testing.T, name string, seed uint64) (e *env, nc *karpv1.NodeClaim, node string) {
	t.Helper()
	e = newEnv(t, name, seed)
	e.CreateNodePool(driftBudget)
	nc = e.node("m6i.large")
	node = nc.Status.NodeName
	e.pod("web-0", node, "500m")
	e.pod("web-1", node, "500m")
	e.setCondition(nc.Name, karpv1.ConditionTypeDrifted, metav1.ConditionTrue, "NodePoolDrifted")
	return e, nc, node
}

// startDrift runs the pass that starts the drift command and returns the
// command's ID and its one replacement.
func (e *env) startDrift(candidate string) (id, replacement string) {
	e.T.Helper()
	if res := e.pass(); res.RequeueAfter != Again {
		e.T.Errorf("RequeueAfter = %v after starting a command, want %v", res.RequeueAfter, Again)
	}
	id = e.NodeClaim(candidate).Annotations[AnnotationCommand]
	if id == "" {
		e.T.Fatalf("no command recorded on candidate %s; events %+v", candidate, e.Events)
	}
	reps := e.replacements(id)
	if len(reps) != 1 {
		e.T.Fatalf("%d replacements for command %s, want 1", len(reps), id)
	}
	return id, reps[0].Name
}

// TestDriftReplacesBeforeDeleting is the seeds' rollout: the drifted node is
// tainted, its replacement launched, and the node deleted only once the
// replacement is initialized; meanwhile the Drifted budget of 1 starts
// nothing else.
func TestDriftReplacesBeforeDeleting(t *testing.T) {
	e, old, node := driftedNode(t, "drift", 301)
	id, rep := e.startDrift(old.Name)

	cand := e.NodeClaim(old.Name)
	if got := cand.Annotations[AnnotationReplacements]; got != "1" {
		t.Errorf("%s = %q, want 1", AnnotationReplacements, got)
	}
	if r := e.disruptionReason(old.Name); r != string(karpv1.DisruptionReasonDrifted) {
		t.Errorf("DisruptionReason = %q, want Drifted", r)
	}
	if !e.tainted(node) || !e.marked(old.Name) || e.deleting(old.Name) {
		t.Errorf("candidate tainted %v, marked %v, deleting %v; want tainted, marked, not deleting",
			e.tainted(node), e.marked(old.Name), e.deleting(old.Name))
	}
	lines := e.Logs.LinesStartingWith("disrupting nodeclaim(s) via replace, terminating 1 nodes (2 pods) " + node + "/m6i.large/on-demand and replacing with on-demand node from types ")
	if len(lines) != 1 || !strings.Contains(lines[0], ", reason drifted") {
		t.Errorf("log lines %q, want the command's line once", lines)
	}
	if got := e.Metric(metrics.NameNodeClaimsCreated, map[string]string{metrics.LabelReason: "drifted", metrics.LabelNodePool: e.Name}); got != 1 {
		t.Errorf("nodeclaims created for drift = %v, want 1", got)
	}
	if evs := e.Events.About(old.Name, ReasonDisruptionLaunching); len(evs) != 1 || !strings.Contains(evs[0].Note, rep) {
		t.Errorf("DisruptionLaunching events %+v, want one naming %s", evs, rep)
	}

	// While the replacement comes up the candidate stays, and the budget,
	// used up by the candidate, starts nothing else.
	for range 3 {
		res := e.pass()
		if res.RequeueAfter <= 0 || res.RequeueAfter > WaitPoll {
			t.Errorf("RequeueAfter = %v while waiting, want at most %v", res.RequeueAfter, WaitPoll)
		}
		if e.deleting(old.Name) {
			t.Fatal("candidate deleted before its replacement is initialized")
		}
		e.Clock.Step(WaitPoll)
	}
	if n := len(e.poolNodeClaims()); n != 2 || len(e.replacements(id)) != 1 {
		t.Errorf("%d NodeClaims in the pool, want the candidate and its replacement", n)
	}
	// The replacement it waits for says so, once per DedupeInterval.
	waiting := environment.Event{Kind: "NodeClaim", Name: rep, Type: corev1.EventTypeNormal, Reason: ReasonDisruptionWaitingReadiness}
	if evs := e.Events.Matching(waiting); len(evs) != 1 || !strings.Contains(evs[0].Note, id) {
		t.Errorf("DisruptionWaitingReadiness events %+v, want one naming command %s", evs, id)
	}
	e.Clock.Step(DedupeInterval)
	e.pass()
	if n := len(e.Events.Matching(waiting)); n != 2 {
		t.Errorf("%d DisruptionWaitingReadiness events after %v, want 2", n, DedupeInterval)
	}
	if got := Remaining(e.State.Snapshot(e.Clock.Now()), e.Clock.Now())[e.Name][decide.ReasonDrifted]; got != 0 {
		t.Errorf("remaining Drifted budget = %d while the command runs, want 0", got)
	}

	// The replacement initializes: the candidate goes.
	e.bringUp(rep)
	e.pass()
	if !e.deleting(old.Name) {
		t.Fatal("candidate not deleted once its replacement is initialized")
	}
	if e.deleting(rep) {
		t.Error("replacement deleted")
	}
	if n := len(e.Events.Matching(waiting)); n != 2 {
		t.Errorf("%d DisruptionWaitingReadiness events once the replacement is initialized, want still 2", n)
	}
	if got := e.Metric(metrics.NameNodeClaimsDisrupted, map[string]string{
		metrics.LabelReason: "drifted", metrics.LabelNodePool: e.Name, metrics.LabelCapacityType: wellknown.CapacityTypeOnDemand,
	}); got != 1 {
		t.Errorf("nodeclaims disrupted for drift = %v, want 1", got)
	}
	for _, name := range []string{old.Name, node} {
		if evs := e.Events.About(name, ReasonDisruptionTerminating); len(evs) != 1 {
			t.Errorf("DisruptionTerminating events about %s: %+v, want one", name, evs)
		}
	}
	if !e.State.IsNominated(rep, e.Clock.Now()) {
		t.Error("the replacement is not nominated for the evicted pods")
	}
	if got := e.Metric(metrics.NameDisruptionDecisions, map[string]string{metrics.LabelDecision: "replace", metrics.LabelReason: "drifted"}); got != 1 {
		t.Errorf("decisions = %v, want 1", got)
	}
}

// TestDriftStartsCommandsBackToBack: with a budget of two, the pass right
// after a drift command starts the next one without waiting for Period, as
// Karpenter's loop requeues at once after a command; a rollout otherwise
// goes one node per Period, whatever its budget allows.
func TestDriftStartsCommandsBackToBack(t *testing.T) {
	e := newEnv(t, "back-to-back", 307)
	e.CreateNodePool(func(np *karpv1.NodePool) {
		np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "2", Reasons: []karpv1.DisruptionReason{karpv1.DisruptionReasonDrifted}}}
	})
	var claims []string
	for i := range 2 {
		nc := e.node("m6i.large")
		e.pod(fmt.Sprintf("web-%d", i), nc.Status.NodeName, "500m")
		e.setCondition(nc.Name, karpv1.ConditionTypeDrifted, metav1.ConditionTrue, "NodePoolDrifted")
		claims = append(claims, nc.Name)
	}
	started := func() int {
		n := 0
		for _, c := range claims {
			if e.NodeClaim(c).Annotations[AnnotationCommand] != "" {
				n++
			}
		}
		return n
	}
	for want := 1; want <= 2; want++ {
		if res := e.pass(); res.RequeueAfter != Again {
			t.Fatalf("pass %d: RequeueAfter = %v after starting a command, want %v", want, res.RequeueAfter, Again)
		}
		if got := started(); got != want {
			t.Fatalf("after pass %d at the same instant: %d commands started, want %d", want, got, want)
		}
	}
}

// TestEmptyNodeDeletedAfterValidation: an empty node is deleted only after
// the validation delay, and then without a replacement.
func TestEmptyNodeDeletedAfterValidation(t *testing.T) {
	e := newEnv(t, "empty", 302)
	e.CreateNodePool()
	nc := e.node("m6i.large")
	node := nc.Status.NodeName
	e.setCondition(nc.Name, karpv1.ConditionTypeConsolidatable, metav1.ConditionTrue, "Consolidatable")

	if res := e.pass(); res.RequeueAfter != DefaultValidationDelay {
		t.Errorf("RequeueAfter = %v after deciding, want the validation delay", res.RequeueAfter)
	}
	e.Clock.Step(5 * time.Second)
	if res := e.pass(); res.RequeueAfter != DefaultValidationDelay-5*time.Second {
		t.Errorf("RequeueAfter = %v during the delay, want the rest of it", res.RequeueAfter)
	}
	if e.tainted(node) || e.deleting(nc.Name) || e.disruptionReason(nc.Name) != "" {
		t.Fatal("the empty node was touched before the validation delay passed")
	}

	e.Clock.Step(DefaultValidationDelay - 5*time.Second)
	e.pass()
	if !e.deleting(nc.Name) {
		t.Fatalf("empty node not deleted after validation; events %+v", e.Events)
	}
	if !e.tainted(node) || e.disruptionReason(nc.Name) != string(karpv1.DisruptionReasonEmpty) {
		t.Errorf("deleted node tainted %v, reason %q; want tainted, Empty", e.tainted(node), e.disruptionReason(nc.Name))
	}
	if n := len(e.poolNodeClaims()); n != 1 {
		t.Errorf("%d NodeClaims, want no replacement", n)
	}
	if got := e.Metric(metrics.NameNodeClaimsDisrupted, map[string]string{metrics.LabelReason: "empty", metrics.LabelNodePool: e.Name}); got != 1 {
		t.Errorf("nodeclaims disrupted as empty = %v, want 1", got)
	}
	if evs := e.Events.About(nc.Name, ReasonDisruptionTerminating); len(evs) != 1 {
		t.Errorf("DisruptionTerminating events %+v, want one", evs)
	}
	if len(e.Logs.LinesStartingWith("disrupting nodeclaim(s) via delete, terminating 1 nodes (0 pods) "+node+"/m6i.large/on-demand, reason empty")) != 1 {
		t.Errorf("no command log line in %q", e.Logs)
	}
}

// TestLeavesOtherProvidersNodeClaims: beside stevedore's empty node, which
// is deleted, another provider's nodes are left alone: an empty, drifted,
// consolidatable one is neither disrupted nor interrupted, and one that
// provider is taking away itself (tainted, with a DisruptionReason) is not
// rolled back.
func TestLeavesOtherProvidersNodeClaims(t *testing.T) {
	e := newEnv(t, "foreign", 311)
	e.CreateNodePool()
	theirs := environment.NewNodePool(e.Name+"-kwok", e.Name)
	theirs.Spec.Template.Spec.NodeClassRef = environment.KWOKNodeClassRef()
	theirs.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "100%"}}
	e.Create(theirs)
	ours := e.node("m6i.large")
	e.setCondition(ours.Name, karpv1.ConditionTypeConsolidatable, metav1.ConditionTrue, "Consolidatable")
	withCondition := func(typ, reason string) func(*karpv1.NodeClaim) {
		return func(nc *karpv1.NodeClaim) {
			nc.Status.Conditions = append(nc.Status.Conditions, metav1.Condition{
				Type: typ, Status: metav1.ConditionTrue, Reason: reason, LastTransitionTime: metav1.NewTime(e.Clock.Now()),
			})
		}
	}
	idle, _ := e.CreateForeign(e.Name+"-kwok-idle", theirs.Name,
		withCondition(karpv1.ConditionTypeConsolidatable, "Consolidatable"), withCondition(karpv1.ConditionTypeDrifted, "NodePoolDrifted"))
	going, _ := e.CreateForeign(e.Name+"-kwok-going", theirs.Name, withCondition(karpv1.ConditionTypeDisruptionReason, string(karpv1.DisruptionReasonDrifted)))
	if err := e.c.taint(e.Ctx, going.Status.NodeName); err != nil {
		t.Fatal(err)
	}

	e.pass()
	e.Clock.Step(DefaultValidationDelay)
	e.pass()
	if !e.deleting(ours.Name) {
		t.Fatalf("stevedore's empty node not deleted; events %+v", e.Events)
	}
	if err := e.c.Interrupt(e.Ctx, idle.Name, "EC2 will reclaim the spot instance in two minutes"); err != nil {
		t.Fatal(err)
	}
	e.pass()

	if e.deleting(idle.Name) || e.tainted(idle.Status.NodeName) || e.disruptionReason(idle.Name) != "" {
		t.Errorf("another provider's idle node: deleting %t, tainted %t, DisruptionReason %q; want it left alone",
			e.deleting(idle.Name), e.tainted(idle.Status.NodeName), e.disruptionReason(idle.Name))
	}
	if e.deleting(going.Name) || !e.tainted(going.Status.NodeName) || e.disruptionReason(going.Name) != string(karpv1.DisruptionReasonDrifted) {
		t.Errorf("another provider's node being taken away: deleting %t, tainted %t, DisruptionReason %q; want it as that provider left it",
			e.deleting(going.Name), e.tainted(going.Status.NodeName), e.disruptionReason(going.Name))
	}
	for _, nc := range []*karpv1.NodeClaim{idle, going} {
		if got := e.NodeClaim(nc.Name).Annotations[AnnotationCommand]; got != "" {
			t.Errorf("%s carries command %q", nc.Name, got)
		}
		if evs := e.Events.About(nc.Name, ""); len(evs) > 0 {
			t.Errorf("events about another provider's NodeClaim %s: %v", nc.Name, evs)
		}
	}
	if n := len(e.poolNodeClaims()); n != 1 {
		t.Errorf("%d NodeClaims in stevedore's pool, want the deleted one only", n)
	}
}

// TestUnderutilizedReplacedAfterValidation: a node bigger than its pod needs
// is replaced by a cheaper one, after the validation delay, and deleted once
// the replacement is up.
func TestUnderutilizedReplacedAfterValidation(t *testing.T) {
	e := newEnv(t, "underutilized", 314)
	e.CreateNodePool()
	nc := e.node("m6i.xlarge")
	node := nc.Status.NodeName
	e.pod("small", node, "500m")
	e.setCondition(nc.Name, karpv1.ConditionTypeConsolidatable, metav1.ConditionTrue, "Consolidatable")

	if res := e.pass(); res.RequeueAfter != DefaultValidationDelay {
		t.Fatalf("RequeueAfter = %v, want the validation delay; events %+v", res.RequeueAfter, e.Events)
	}
	if n := len(e.poolNodeClaims()); n != 1 {
		t.Fatalf("%d NodeClaims before validation, want 1", n)
	}
	e.Clock.Step(DefaultValidationDelay)
	if res := e.pass(); res.RequeueAfter != Again {
		t.Errorf("RequeueAfter = %v after starting, want %v", res.RequeueAfter, Again)
	}
	id := e.NodeClaim(nc.Name).Annotations[AnnotationCommand]
	reps := e.replacements(id)
	if len(reps) != 1 || e.disruptionReason(nc.Name) != string(karpv1.DisruptionReasonUnderutilized) || !e.tainted(node) {
		t.Fatalf("replacements %d, reason %q, tainted %v", len(reps), e.disruptionReason(nc.Name), e.tainted(node))
	}
	for _, r := range reps[0].Spec.Requirements {
		if r.Key == wellknown.LabelInstanceType && slices.Contains(r.Values, "m6i.xlarge") {
			t.Errorf("replacement may be as expensive as the node: %v", r.Values)
		}
	}
	if got := e.Metric(metrics.NameNodeClaimsCreated, map[string]string{metrics.LabelReason: "underutilized"}); got != 1 {
		t.Errorf("nodeclaims created for consolidation = %v, want 1", got)
	}
	e.pass()
	if e.deleting(nc.Name) {
		t.Fatal("candidate deleted before its replacement is up")
	}
	e.bringUp(reps[0].Name)
	e.pass()
	if !e.deleting(nc.Name) {
		t.Fatal("candidate not deleted once its replacement is up")
	}
	if got := e.Metric(metrics.NameDisruptionDecisions, map[string]string{
		metrics.LabelDecision: "replace", metrics.LabelReason: "underutilized", metrics.LabelConsolidationType: "single",
	}); got != 1 {
		t.Errorf("decisions = %v, want 1", got)
	}
}

// TestValidationRejectsWhenPodLands: a pod bound to the empty node during the
// validation delay cancels the command.
func TestValidationRejectsWhenPodLands(t *testing.T) {
	e := newEnv(t, "reject", 303)
	e.CreateNodePool()
	nc := e.node("m6i.large")
	node := nc.Status.NodeName
	e.setCondition(nc.Name, karpv1.ConditionTypeConsolidatable, metav1.ConditionTrue, "Consolidatable")
	e.pass()

	e.pod("late", node, "500m")
	e.Clock.Step(DefaultValidationDelay)
	e.pass()
	if e.deleting(nc.Name) || e.tainted(node) || e.disruptionReason(nc.Name) != "" {
		t.Fatal("the command went ahead although a pod landed on the node")
	}
	for _, name := range []string{nc.Name, node} {
		evs := e.Events.About(name, ReasonConsolidationRejected)
		if len(evs) != 1 || !strings.Contains(evs[0].Note, "("+decide.RejectChurn+")") || !strings.Contains(evs[0].Note, "no longer empty") {
			t.Errorf("ConsolidationRejected events about %s: %+v, want one tagged %s", name, evs, decide.RejectChurn)
		}
	}
	if got := e.Metric(metrics.NameDisruptionFailedValidations, map[string]string{metrics.LabelConsolidationType: "empty"}); got != 1 {
		t.Errorf("failed validations = %v, want 1", got)
	}
}

// TestReplacementTimeoutRollsBack: a replacement that never initializes
// ends the command after the timeout; the candidate is left as it was.
func TestReplacementTimeoutRollsBack(t *testing.T) {
	e, old, node := driftedNode(t, "timeout", 304)
	id, rep := e.startDrift(old.Name)

	e.Clock.Step(DefaultReplacementTimeout - time.Second)
	e.pass()
	if !e.tainted(node) || e.deleting(old.Name) {
		t.Fatal("the command ended before its timeout")
	}
	e.Clock.Step(2 * time.Second)
	e.pass()
	e.wantRolledBack(old.Name, node)
	if evs := e.Events.About(old.Name, ReasonDisruptionFailed); len(evs) != 1 || !strings.Contains(evs[0].Note, "did not initialize within 10m0s") {
		t.Errorf("DisruptionFailed events %+v, want one about the timeout", evs)
	}
	if evs := e.Events.About(node, ReasonDisruptionFailed); len(evs) != 1 {
		t.Errorf("DisruptionFailed events on the node %+v, want one", evs)
	}
	if got := e.Metric(metrics.NameDisruptionQueueFailures, map[string]string{metrics.LabelReason: "drifted"}); got != 1 {
		t.Errorf("queue failures = %v, want 1", got)
	}
	// The replacement stays: it may still come up and be used.
	if len(e.replacements(id)) != 1 || e.deleting(rep) {
		t.Error("the replacement was removed by the rollback")
	}
	// The controller does not try again on the spot.
	e.pass()
	if e.tainted(node) {
		t.Error("the node was disrupted again right after the rollback")
	}
}

// TestFailedReplacementRollsBack: a replacement deleted before it
// initialized (its launch failed) ends the command at once.
func TestFailedReplacementRollsBack(t *testing.T) {
	e, old, node := driftedNode(t, "failed", 305)
	_, rep := e.startDrift(old.Name)
	if err := e.Kube.Delete(e.Ctx, e.NodeClaim(rep)); err != nil {
		t.Fatal(err)
	}
	e.pass()
	e.wantRolledBack(old.Name, node)
	if evs := e.Events.About(old.Name, ReasonDisruptionFailed); len(evs) != 1 || !strings.Contains(evs[0].Note, rep) {
		t.Errorf("DisruptionFailed events %+v, want one naming %s", evs, rep)
	}
}

// laggingCache makes the controller's client behave like the manager's cache
// just after the controller created a NodeClaim: Get does not find it until
// caughtUp is called.
type laggingCache struct {
	mu      sync.Mutex
	created map[string]bool
}

func (l *laggingCache) client(t *testing.T, scheme *runtime.Scheme) client.Client {
	t.Helper()
	direct, err := client.NewWithWatch(environment.Config(), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return interceptor.NewClient(direct, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := c.Create(ctx, obj, opts...); err != nil {
				return err
			}
			if _, ok := obj.(*karpv1.NodeClaim); ok {
				l.mu.Lock()
				l.created[obj.GetName()] = true
				l.mu.Unlock()
			}
			return nil
		},
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			l.mu.Lock()
			hidden := l.created[key.Name]
			l.mu.Unlock()
			if _, ok := obj.(*karpv1.NodeClaim); ok && hidden {
				return apierrors.NewNotFound(schema.GroupResource{Group: karpv1.GroupVersion.Group, Resource: "nodeclaims"}, key.Name)
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
}

// lagBehind gives the environment a controller that reads through a
// laggingCache, with the API server as its live reader.
func (e *env) lagBehind() *laggingCache {
	e.T.Helper()
	lag := &laggingCache{created: map[string]bool{}}
	e.opts.LiveReader = e.Kube
	e.c = New(lag.client(e.T, e.Kube.Scheme()), e.State, e.Cloud, e.Clock, e.Events, e.opts, e.Metrics)
	return lag
}

func (l *laggingCache) caughtUp() {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.created)
}

// TestReplacementNotCachedYet: a replacement the cache does not show right
// after its creation is looked up on the API server, not taken for one
// deleted; the command waits for it. One deleted on the API server too ends
// the command at once.
func TestReplacementNotCachedYet(t *testing.T) {
	t.Run("the cache catches up", func(t *testing.T) {
		e, old, node := driftedNode(t, "lag", 311)
		lag := e.lagBehind()
		_, rep := e.startDrift(old.Name)
		e.Clock.Step(WaitPoll)
		e.pass()
		if !e.tainted(node) || len(e.Events.About(old.Name, ReasonDisruptionFailed)) != 0 {
			t.Fatalf("the command was rolled back while the cache had not seen its replacement: events %+v", e.Events.About(old.Name, ReasonDisruptionFailed))
		}
		lag.caughtUp()
		e.bringUp(rep)
		e.Clock.Step(WaitPoll)
		e.pass()
		if !e.deleting(old.Name) {
			t.Fatal("candidate not deleted once its replacement is initialized")
		}
	})
	t.Run("deleted before the cache saw it", func(t *testing.T) {
		e, old, node := driftedNode(t, "lag", 312)
		e.lagBehind()
		_, rep := e.startDrift(old.Name)
		if err := e.Kube.Delete(e.Ctx, e.NodeClaim(rep)); err != nil {
			t.Fatal(err)
		}
		e.pass()
		e.wantRolledBack(old.Name, node)
		if evs := e.Events.About(old.Name, ReasonDisruptionFailed); len(evs) != 1 || !strings.Contains(evs[0].Note, rep+" was deleted") {
			t.Errorf("DisruptionFailed events %+v, want one saying %s was deleted", evs, rep)
		}
	})
}

// wantRolledBack checks that nothing of a command is left on its candidate.
func (e *env) wantRolledBack(nodeClaim, node string) {
	e.T.Helper()
	if e.deleting(nodeClaim) {
		e.T.Fatal("the candidate was deleted")
	}
	if e.tainted(node) {
		e.T.Error("the node is still tainted")
	}
	if r := e.disruptionReason(nodeClaim); r != "" {
		e.T.Errorf("DisruptionReason %q is still set", r)
	}
	for _, k := range []string{AnnotationCommand, AnnotationReplacements, AnnotationStarted} {
		if v, ok := e.NodeClaim(nodeClaim).Annotations[k]; ok {
			e.T.Errorf("annotation %s=%q is still set", k, v)
		}
	}
	if e.marked(nodeClaim) {
		e.T.Error("the candidate is still marked for deletion")
	}
}

// TestRestartResumes: a new controller with a state rebuilt from the API
// takes over a command whose replacement is still coming up, counts it
// against the budget, deletes the candidate only once the replacement is
// initialized, and also resumes a command whose replacement is initialized
// already.
func TestRestartResumes(t *testing.T) {
	e, old, node := driftedNode(t, "resume", 306)
	id, rep := e.startDrift(old.Name)

	e.restart()
	e.pass()
	if e.deleting(old.Name) {
		t.Fatal("candidate deleted after the restart before its replacement is initialized")
	}
	if !e.tainted(node) || !e.marked(old.Name) || e.disruptionReason(old.Name) != string(karpv1.DisruptionReasonDrifted) {
		t.Errorf("after the restart: tainted %v, marked %v, reason %q", e.tainted(node), e.marked(old.Name), e.disruptionReason(old.Name))
	}
	if len(e.Logs.LinesStartingWith("resuming disruption command")) == 0 {
		t.Error("no resume logged")
	}
	if got := Remaining(e.State.Snapshot(e.Clock.Now()), e.Clock.Now())[e.Name][decide.ReasonDrifted]; got != 0 {
		t.Errorf("remaining Drifted budget after the restart = %d, want 0", got)
	}
	e.Clock.Step(Period)
	e.pass()
	if n := len(e.poolNodeClaims()); n != 2 || len(e.replacements(id)) != 1 {
		t.Errorf("%d NodeClaims after the restart, want the candidate and its one replacement", n)
	}

	// Another restart, after the replacement came up: the candidate goes on
	// the first pass.
	e.bringUp(rep)
	e.restart()
	e.pass()
	if !e.deleting(old.Name) {
		t.Fatal("resumed command did not delete its candidate once the replacement was initialized")
	}
}

// TestRestartRollsBack: after a restart, a command whose replacement is gone
// is rolled back, and the candidate is not deleted.
func TestRestartRollsBack(t *testing.T) {
	e, old, node := driftedNode(t, "rollback", 307)
	_, rep := e.startDrift(old.Name)
	if err := e.Kube.Delete(e.Ctx, e.NodeClaim(rep)); err != nil {
		t.Fatal(err)
	}
	e.restart()
	e.pass()
	e.wantRolledBack(old.Name, node)
	if evs := e.Events.About(old.Name, ReasonDisruptionFailed); len(evs) != 1 || !strings.Contains(evs[0].Note, "only 0 of its 1 replacement(s) exist") {
		t.Errorf("DisruptionFailed events %+v", evs)
	}
}

// TestStaleMarksRemoved: a taint without a DisruptionReason, and a budgeted
// DisruptionReason without a command (a crash between the condition and the
// annotations), are removed; a forceful DisruptionReason is left alone.
func TestStaleMarksRemoved(t *testing.T) {
	e := newEnv(t, "stale", 308)
	e.CreateNodePool(func(np *karpv1.NodePool) {
		np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "0"}}
	})
	a, b, c := e.node("m6i.large"), e.node("m6i.large"), e.node("m6i.large")
	ctx := context.Background()
	for _, nc := range []*karpv1.NodeClaim{a, b, c} {
		if err := e.c.taint(ctx, nc.Status.NodeName); err != nil {
			t.Fatal(err)
		}
	}
	e.setCondition(b.Name, karpv1.ConditionTypeDisruptionReason, metav1.ConditionTrue, string(karpv1.DisruptionReasonDrifted))
	e.setCondition(c.Name, karpv1.ConditionTypeDisruptionReason, metav1.ConditionTrue, "Expired")
	e.pass()
	e.wantRolledBack(a.Name, a.Status.NodeName)
	e.wantRolledBack(b.Name, b.Status.NodeName)
	if !e.tainted(c.Status.NodeName) || e.disruptionReason(c.Name) != "Expired" {
		t.Error("a forceful disruption's taint or condition was removed")
	}
}

// TestDrainHonoursPDB: once the replacement is up the candidate is deleted,
// and its drain (the termination controller's) evicts the pods only as fast
// as their PodDisruptionBudget allows.
func TestDrainHonoursPDB(t *testing.T) {
	e, old, node := driftedNode(t, "pdb", 309)
	pdb := e.pdb(1, 1)
	_, rep := e.startDrift(old.Name)
	e.bringUp(rep)
	e.pass()
	if !e.deleting(old.Name) {
		t.Fatal("candidate not deleted once its replacement is initialized")
	}

	// The NodeClaim's finalizer deletes the Node; the Node's drains it.
	e.drive(old.Name)
	term := termination.New(e.Kube, e.Cloud, e.Clock, e.Events)
	drain := func() {
		t.Helper()
		if _, err := term.Reconcile(e.Ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: node}}); err != nil {
			t.Fatalf("termination: %v", err)
		}
	}
	drain()
	running, terminating := e.Pods()
	if len(running) != 1 || len(terminating) != 1 {
		t.Fatalf("running %v, terminating %v; want one pod evicted, as the PodDisruptionBudget allows", running, terminating)
	}
	e.Clock.Step(termination.EvictionMaxDelay)
	drain()
	if _, terminating := e.Pods(); len(terminating) != 1 {
		t.Fatalf("terminating %v after the budget was spent, want still one", terminating)
	}
	// The evicted pod goes and the budget is restored: the next one goes.
	e.FinishTerminating()
	e.AllowDisruptions(pdb, 1)
	e.Clock.Step(termination.EvictionMaxDelay)
	drain()
	if running, terminating := e.Pods(); len(running) != 0 || len(terminating) != 1 {
		t.Fatalf("running %v, terminating %v; want the second pod evicted", running, terminating)
	}
}

// TestInterruptLaunchesReplacementAndDeletes: an interruption bypasses the
// budget (here 0), taints the node, launches capacity for its pods and
// deletes the NodeClaim at once; a redelivered message launches nothing
// more.
func TestInterruptLaunchesReplacementAndDeletes(t *testing.T) {
	e := newEnv(t, "interrupt", 310)
	e.CreateNodePool(func(np *karpv1.NodePool) {
		np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "0"}}
	})
	nc := e.node("m6i.large")
	node := nc.Status.NodeName
	e.pod("web-0", node, "500m")
	e.pod("web-1", node, "500m")
	e.SyncState()

	if err := e.c.Interrupt(e.Ctx, nc.Name, "EC2 will reclaim the spot instance in two minutes"); err != nil {
		t.Fatal(err)
	}
	if !e.deleting(nc.Name) {
		t.Fatal("interrupted NodeClaim not deleted")
	}
	if r := e.disruptionReason(nc.Name); r != string(decide.ReasonInterrupted) || !e.tainted(node) {
		t.Errorf("DisruptionReason %q, tainted %v; want Interrupted, tainted", r, e.tainted(node))
	}
	id := e.NodeClaim(nc.Name).Annotations[AnnotationCommand]
	reps := e.replacements(id)
	if len(reps) != 1 {
		t.Fatalf("%d replacements, want 1", len(reps))
	}
	if got := e.Metric(metrics.NameNodeClaimsCreated, map[string]string{metrics.LabelReason: "interrupted", metrics.LabelNodePool: e.Name}); got != 1 {
		t.Errorf("nodeclaims created for the interruption = %v, want 1", got)
	}
	if got := e.Metric(metrics.NameNodeClaimsDisrupted, map[string]string{metrics.LabelReason: "interrupted", metrics.LabelNodePool: e.Name}); got != 1 {
		t.Errorf("nodeclaims disrupted by the interruption = %v, want 1", got)
	}
	if evs := e.Events.About(nc.Name, ReasonDisruptionTerminating); len(evs) != 1 || !strings.Contains(evs[0].Note, reps[0].Name) {
		t.Errorf("DisruptionTerminating events %+v, want one naming the replacement", evs)
	}

	// The message comes again.
	e.SyncState()
	if err := e.c.Interrupt(e.Ctx, nc.Name, "EC2 will reclaim the spot instance in two minutes"); err != nil {
		t.Fatal(err)
	}
	if n := len(e.poolNodeClaims()); n != 2 {
		t.Errorf("%d NodeClaims after a redelivery, want 2", n)
	}
	// The disruption controller leaves the interrupted node to its
	// termination.
	e.pass()
	if !e.tainted(node) {
		t.Error("the disruption controller untainted an interrupted node")
	}
}

// TestBlockedEvents: a drifted node kept by a do-not-disrupt pod gets
// DisruptionBlocked on its Node and NodeClaim; a node consolidation cannot
// act on gets Unconsolidatable, on both too; both are rate-limited.
func TestBlockedEvents(t *testing.T) {
	e := newEnv(t, "blocked", 311)
	e.CreateNodePool()
	kept := e.node("m6i.large")
	e.pod("precious", kept.Status.NodeName, "500m", func(p *corev1.Pod) {
		p.Annotations = map[string]string{wellknown.AnnotationDoNotDisrupt: "true"}
	})
	e.setCondition(kept.Name, karpv1.ConditionTypeDrifted, metav1.ConditionTrue, "NodePoolDrifted")
	busy := e.node("m6i.large")
	e.pod("busy", busy.Status.NodeName, "500m")

	e.pass()
	for _, name := range []string{kept.Name, kept.Status.NodeName} {
		evs := e.Events.About(name, ReasonDisruptionBlocked)
		if len(evs) != 1 || !strings.Contains(evs[0].Note, "do-not-disrupt") || !strings.Contains(evs[0].Note, "("+decide.CodeDoNotDisruptPod+")") {
			t.Errorf("DisruptionBlocked events about %s: %+v", name, evs)
		}
	}
	for _, name := range []string{busy.Name, busy.Status.NodeName} {
		if evs := e.Events.About(name, ReasonUnconsolidatable); len(evs) != 1 || !strings.Contains(evs[0].Note, decide.CodeNotConsolidatable) {
			t.Errorf("Unconsolidatable events about %s: %+v", name, evs)
		}
	}
	if e.tainted(kept.Status.NodeName) {
		t.Error("a node with a do-not-disrupt pod was disrupted")
	}
	e.Clock.Step(Period)
	e.pass()
	if n := len(e.Events.About(kept.Name, ReasonDisruptionBlocked)); n != 1 {
		t.Errorf("%d DisruptionBlocked events within the interval, want 1", n)
	}
}

// TestSkipsDecidingWhenNothingChanged: the decision is not made again while
// the snapshot is the same, but is after FullPassInterval and as soon as
// something changes.
func TestSkipsDecidingWhenNothingChanged(t *testing.T) {
	e := newEnv(t, "skip", 312)
	e.CreateNodePool()
	nc := e.node("m6i.large")
	e.pod("web", nc.Status.NodeName, "500m")
	e.pass()
	first := e.c.lastFull
	if first.IsZero() {
		t.Fatal("the first pass did not decide")
	}
	e.Clock.Step(Period)
	e.pass()
	if !e.c.lastFull.Equal(first) {
		t.Error("decided again although nothing changed")
	}
	e.pod("web-2", nc.Status.NodeName, "500m")
	e.Clock.Step(Period)
	e.pass()
	second := e.c.lastFull
	if second.Equal(first) {
		t.Error("did not decide again after a pod landed")
	}
	e.Clock.Step(FullPassInterval)
	e.pass()
	if e.c.lastFull.Equal(second) {
		t.Errorf("did not decide again after %s", FullPassInterval)
	}
}

// TestSkipsWholePassWhileQuiet: after a pass that found nothing to do, the
// next passes are skipped whole while the cluster state has not changed, at
// most until the next budget window edge; a change ends it.
func TestSkipsWholePassWhileQuiet(t *testing.T) {
	e := newEnv(t, "quiet", 313)
	schedule := "0 9 * * *"
	np := e.CreateNodePool(func(np *karpv1.NodePool) {
		np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "0", Schedule: &schedule, Duration: &karpv1.Duration{Duration: time.Hour}}}
	})
	nc := e.node("m6i.large")
	e.pod("web", nc.Status.NodeName, "500m")
	e.pass()
	if e.c.quietUntil.IsZero() || e.c.lastPass.IsZero() {
		t.Fatalf("a pass that found nothing to do did not mark the controller quiet (until %v)", e.c.quietUntil)
	}
	if next, ok := budget.NextChange(np, e.Clock.Now()); !ok || e.c.quietUntil.After(next) {
		t.Errorf("quiet until %v, past the budget's next window edge %v", e.c.quietUntil, next)
	}

	// Nothing changed in the state: the pass is skipped whole.
	last := e.c.lastPass
	e.Clock.Step(Period)
	if _, err := e.c.Reconcile(e.Ctx, Request()); err != nil {
		t.Fatal(err)
	}
	if !e.c.lastPass.Equal(last) {
		t.Error("a pass ran although nothing changed")
	}

	// A pod lands: the state changes and the next pass runs.
	e.pod("web-2", nc.Status.NodeName, "500m")
	e.Clock.Step(Period)
	e.pass()
	if e.c.lastPass.Equal(last) {
		t.Error("no pass after the state changed")
	}

	// Once the quiet period is over a pass runs even without a change.
	last = e.c.lastPass
	e.Clock.SetTime(e.c.quietUntil)
	if _, err := e.c.Reconcile(e.Ctx, Request()); err != nil {
		t.Fatal(err)
	}
	if e.c.lastPass.Equal(last) {
		t.Error("no pass at the end of the quiet period")
	}
}

// TestWaitsForSync: no decision from a state that has not caught up.
func TestWaitsForSync(t *testing.T) {
	e := newEnv(t, "sync", 313)
	e.CreateNodePool()
	e.node("m6i.large")
	// The state knows nothing of the node.
	res, err := e.c.Reconcile(e.Ctx, Request())
	if err != nil || res.RequeueAfter != SyncRetry {
		t.Fatalf("Reconcile = %+v, %v; want a retry after %s", res, err, SyncRetry)
	}
}

func TestFingerprint(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	st := state.NewCluster()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", ResourceVersion: "1"}, Spec: corev1.NodeSpec{ProviderID: "aws:///z/i-1"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", ResourceVersion: "1"}, Spec: corev1.PodSpec{NodeName: "n"}}
	st.UpdateNode(node)
	st.UpdatePod(pod)
	rem := map[string]map[decide.Reason]int{"pool": {decide.ReasonEmpty: 1, decide.ReasonDrifted: 1}}
	base := fingerprint(st.Snapshot(now), rem)
	if got := fingerprint(st.Snapshot(now.Add(time.Minute)), rem); got != base {
		t.Error("the same cluster gave another fingerprint")
	}
	for name, change := range map[string]func() (state.Snapshot, map[string]map[decide.Reason]int){
		"pod version": func() (state.Snapshot, map[string]map[decide.Reason]int) {
			st2 := state.NewCluster()
			st2.UpdateNode(node)
			p := pod.DeepCopy()
			p.ResourceVersion = "2"
			st2.UpdatePod(p)
			return st2.Snapshot(now), rem
		},
		"budget": func() (state.Snapshot, map[string]map[decide.Reason]int) {
			return st.Snapshot(now), map[string]map[decide.Reason]int{"pool": {decide.ReasonEmpty: 0, decide.ReasonDrifted: 1}}
		},
		"mark": func() (state.Snapshot, map[string]map[decide.Reason]int) {
			st2 := state.NewCluster()
			st2.UpdateNode(node)
			st2.UpdatePod(pod)
			st2.MarkForDeletion("n")
			return st2.Snapshot(now), rem
		},
	} {
		if got := fingerprint(change()); got == base {
			t.Errorf("%s: fingerprint unchanged", name)
		}
	}
}

func TestCommandIDAndTimeout(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	a := commandID(decide.ReasonDrifted, []string{"b", "a"}, at)
	if b := commandID(decide.ReasonDrifted, []string{"a", "b"}, at); a != b {
		t.Errorf("IDs %s and %s differ by candidate order", a, b)
	}
	if b := commandID(decide.ReasonDrifted, []string{"a", "b"}, at.Add(time.Second)); a == b {
		t.Error("a later command got the same ID")
	}
	if !strings.HasPrefix(a, "drifted-") {
		t.Errorf("ID %s does not name its reason", a)
	}
	c := New(nil, state.NewCluster(), nil, clocktesting.NewFakePassiveClock(at), nil, Options{}, nil)
	for queued, want := range map[int]time.Duration{1: DefaultReplacementTimeout, 10000: 800 * time.Second, 1000000: MaxReplacementTimeout} {
		if got := c.replacementTimeout(queued); got != want {
			t.Errorf("replacementTimeout(%d) = %v, want %v", queued, got, want)
		}
	}
}

// TestRegister checks that the Controller can be wired into a manager.
func TestRegister(t *testing.T) {
	mgr := environment.NewManager(t)
	clk := clocktesting.NewFakeClock(environment.Start)
	if err := New(mgr.GetClient(), state.NewCluster(), nil, clk, nil, Options{}, nil).Register(mgr); err != nil {
		t.Fatal(err)
	}
}

// poolNodeClaims returns the NodeClaims of the test's NodePool.
func (e *env) poolNodeClaims() []karpv1.NodeClaim {
	e.T.Helper()
	var list karpv1.NodeClaimList
	if err := e.Kube.List(e.Ctx, &list, client.MatchingLabels{wellknown.LabelNodePool: e.Name}); err != nil {
		e.T.Fatal(err)
	}
	return list.Items
}

// TestConsolidationMemo: after a consolidation that found nothing, pods
// landing do not make the controller consolidate again, but a pod leaving
// does, and so does the memo's age limit.
func TestConsolidationMemo(t *testing.T) {
	e := newEnv(t, "memo", 315)
	e.CreateNodePool()
	// No cheaper type holds 3.5 CPUs: the node cannot be consolidated.
	nc := e.node("c6i.xlarge")
	node := nc.Status.NodeName
	big := e.pod("big", node, "3500m")
	e.setCondition(nc.Name, karpv1.ConditionTypeConsolidatable, metav1.ConditionTrue, "Consolidatable")
	e.pass()
	memo := e.c.memo
	if memo == nil || len(memo.verdicts) == 0 {
		t.Fatalf("no memo of a consolidation that found nothing: %+v", memo)
	}

	// A pod lands: the decision is made again, without consolidation.
	e.pod("small", node, "100m")
	e.Clock.Step(Period)
	fp := e.c.lastFingerprint
	e.pass()
	if e.c.lastFingerprint == fp {
		t.Fatal("no decision after a pod landed")
	}
	if e.c.memo != memo {
		t.Error("consolidation ran again although only a pod landed")
	}

	// The memo ages out.
	e.Clock.Step(ConsolidationMemoLimit)
	e.pass()
	if e.c.memo == memo || e.c.memo == nil {
		t.Errorf("consolidation did not run again after %s (memo %p, was %p)", ConsolidationMemoLimit, e.c.memo, memo)
	}

	// The big pod leaves: now the node can be replaced by a cheaper one.
	if err := e.Kube.Delete(e.Ctx, big, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	e.Clock.Step(Period)
	if res := e.pass(); res.RequeueAfter != DefaultValidationDelay || e.c.memo != nil {
		t.Errorf("after the pod left: RequeueAfter %v (want the validation delay of a command), memo %+v", res.RequeueAfter, e.c.memo)
	}
}
