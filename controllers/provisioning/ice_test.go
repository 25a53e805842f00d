package provisioning

import (
	"fmt"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/controllers/nodeclaim/lifecycle"
	"github.com/stevedore-autoscaler/stevedore/test/environment"
)

// TestInsufficientCapacityFallsBackToAnotherOffering runs the provisioner and
// the NodeClaim lifecycle together: the first NodeClaim's spot pools are out of
// capacity, so its launch fails and it is deleted; the next batch creates a new
// NodeClaim that launches on another offering, and the pods are nominated for it.
func TestInsufficientCapacityFallsBackToAnotherOffering(t *testing.T) {
	e := newEnv(t, "prov-ice", 205)
	e.nodeClass(metav1.ConditionTrue, "Ready", "")
	e.nodePool(func(np *karpv1.NodePool) {
		for i, r := range np.Spec.Template.Spec.Requirements {
			if r.Key == wellknown.LabelCapacityType {
				np.Spec.Template.Spec.Requirements[i].Values = []string{wellknown.CapacityTypeSpot, wellknown.CapacityTypeOnDemand}
			}
		}
	})
	var pods []string
	for i := range 3 {
		pods = append(pods, e.pod(fmt.Sprintf("app-%d", i)).Name)
	}

	e.batch()
	first := e.nodeClaims()
	if len(first) != 1 {
		t.Fatalf("%d NodeClaims after the first batch, want 1", len(first))
	}
	var iceTypes []string
	for _, r := range first[0].Spec.Requirements {
		if r.Key == wellknown.LabelInstanceType {
			iceTypes = r.Values
		}
	}
	if len(iceTypes) == 0 {
		t.Fatalf("NodeClaim %s has no instance types: %+v", first[0].Name, first[0].Spec.Requirements)
	}
	// Every spot pool the first NodeClaim could launch into, in every zone,
	// is out of capacity.
	e.AWS.InjectInsufficientCapacity(iceTypes, nil, fake.CapacityTypeSpot, e.Clock.Now().Add(time.Hour))
	iced := func(instanceType, capacityType string) bool {
		return capacityType == wellknown.CapacityTypeSpot && slices.Contains(iceTypes, instanceType)
	}

	lc := lifecycle.New(e.Kube, e.Cloud, e.Clock, e.Events, nil)
	reconcileClaim := func(name string) {
		t.Helper()
		if _, err := lc.Reconcile(e.Ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}); err != nil {
			t.Fatalf("lifecycle %s: %v", name, err)
		}
	}

	// One reconcile tries the launch, fails for capacity and deletes the
	// NodeClaim; the next ones finalize it.
	fleets := e.AWS.Calls("CreateFleet")
	reconcileClaim(first[0].Name)
	if n := e.AWS.Calls("CreateFleet") - fleets; n == 0 {
		t.Fatal("the first NodeClaim's launch called CreateFleet no time")
	}
	got := &karpv1.NodeClaim{}
	err := e.Kube.Get(e.Ctx, client.ObjectKeyFromObject(&first[0]), got)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		t.Fatal(err)
	case got.DeletionTimestamp == nil:
		t.Fatalf("NodeClaim %s is not being deleted after its launch failed: %+v", got.Name, got.Status.Conditions)
	default:
		c := meta.FindStatusCondition(got.Status.Conditions, karpv1.ConditionTypeLaunched)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != lifecycle.ReasonInsufficientCapacity {
			t.Errorf("Launched condition = %+v, want False/%s", c, lifecycle.ReasonInsufficientCapacity)
		}
	}
	if len(e.Events.Matching(environment.Event{Kind: "NodeClaim", Name: first[0].Name, Reason: lifecycle.ReasonInsufficientCapacityError})) != 1 {
		t.Errorf("no %s event on NodeClaim %s: %+v", lifecycle.ReasonInsufficientCapacityError, first[0].Name, e.Events)
	}
	for range 5 {
		if err := e.Kube.Get(e.Ctx, client.ObjectKeyFromObject(&first[0]), got); apierrors.IsNotFound(err) {
			break
		}
		reconcileClaim(first[0].Name)
	}
	if err := e.Kube.Get(e.Ctx, client.ObjectKeyFromObject(&first[0]), got); !apierrors.IsNotFound(err) {
		t.Fatalf("NodeClaim %s still exists (%v): finalizers %v", first[0].Name, err, got.Finalizers)
	}
	if ids := e.AWS.InstanceIDs(); len(ids) != 0 {
		t.Fatalf("instances %v launched by a failed launch", ids)
	}
	e.State.DeleteNodeClaim(first[0].Name)

	// The next batch, past the window, creates another NodeClaim.
	e.Clock.Step(time.Minute)
	e.batch()
	second := e.nodeClaims()
	if len(second) != 1 || second[0].Name == first[0].Name {
		t.Fatalf("NodeClaims after the second batch = %d (first %s), want one new", len(second), first[0].Name)
	}
	nc := second[0]
	for range 3 {
		reconcileClaim(nc.Name)
	}
	if err := e.Kube.Get(e.Ctx, client.ObjectKeyFromObject(&nc), got); err != nil {
		t.Fatal(err)
	}
	if !meta.IsStatusConditionTrue(got.Status.Conditions, karpv1.ConditionTypeLaunched) || got.Status.ProviderID == "" {
		t.Fatalf("NodeClaim %s not launched: %+v", got.Name, got.Status.Conditions)
	}
	it, zone, ct := got.Labels[wellknown.LabelInstanceType], got.Labels[wellknown.LabelTopologyZone], got.Labels[wellknown.LabelCapacityType]
	if it == "" || zone == "" || ct == "" {
		t.Fatalf("launched NodeClaim %s lacks offering labels: %v", got.Name, got.Labels)
	}
	t.Logf("spot pools of %v out of capacity; launched on %s/%s/%s", iceTypes, it, zone, ct)
	if iced(it, ct) {
		t.Errorf("NodeClaim %s launched on %s/%s/%s, a pool out of capacity", got.Name, it, zone, ct)
	}
	ids := e.AWS.InstanceIDs()
	if len(ids) != 1 {
		t.Fatalf("instances %v, want one", ids)
	}
	inst, ok := e.AWS.Instance(ids[0])
	if !ok || inst.InstanceType != it || inst.Zone != zone || inst.CapacityType != ct {
		t.Errorf("instance %+v does not match NodeClaim %s/%s/%s", inst, it, zone, ct)
	}

	// Every pod is nominated for the NodeClaim that launched.
	for _, name := range pods {
		evs := e.podEvents(name, ReasonNominated)
		if len(evs) == 0 {
			t.Fatalf("pod %s was never nominated", name)
		}
		if last := evs[len(evs)-1].Note; last != "Pod should schedule on: nodeclaim/"+nc.Name {
			t.Errorf("pod %s last nominated %q, want nodeclaim/%s", name, last, nc.Name)
		}
	}
	if evs := e.podEvents(pods[0], ReasonFailedScheduling); len(evs) != 0 {
		t.Errorf("pod %s: %+v", pods[0], evs)
	}
}
