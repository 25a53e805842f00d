package garbagecollection

import (
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws"
	"github.com/stevedore-autoscaler/stevedore/test/environment"
)

func TestMain(m *testing.M) { environment.Main(m) }

// registered creates a NodeClaim, launches its instance and marks it
// Registered, as the lifecycle controller would.
func registered(e *environment.Env, name string) *karpv1.NodeClaim {
	e.T.Helper()
	nc := environment.NewNodeClaim(name, "default", "default")
	e.Create(nc)
	launched, err := e.Cloud.Create(e.Ctx, nc)
	if err != nil {
		e.T.Fatalf("launching %s: %v", name, err)
	}
	now := metav1.NewTime(e.Clock.Now())
	nc.Status.ProviderID = launched.Status.ProviderID
	nc.Status.NodeName = name
	nc.Status.Conditions = []metav1.Condition{
		{Type: karpv1.ConditionTypeLaunched, Status: metav1.ConditionTrue, Reason: "Launched", LastTransitionTime: now},
		{Type: karpv1.ConditionTypeRegistered, Status: metav1.ConditionTrue, Reason: "Registered", LastTransitionTime: now},
	}
	if err := e.Kube.Status().Update(e.Ctx, nc); err != nil {
		e.T.Fatal(err)
	}
	return nc
}

// node creates the Node of a NodeClaim.
func node(e *environment.Env, nc *karpv1.NodeClaim) {
	e.T.Helper()
	e.Create(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nc.Status.NodeName}, Spec: corev1.NodeSpec{ProviderID: nc.Status.ProviderID}})
}

func terminate(e *environment.Env, nc *karpv1.NodeClaim) {
	e.T.Helper()
	id := aws.InstanceID(nc.Status.ProviderID)
	if _, err := e.AWS.TerminateInstances(e.Ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}}); err != nil {
		e.T.Fatal(err)
	}
}

// exists reports whether the NodeClaim is in the API server.
func exists(e *environment.Env, name string) bool {
	e.T.Helper()
	return e.Exists(&karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}})
}

func TestCollectsNodeClaimsWithoutInstance(t *testing.T) {
	e := environment.New(t, environment.Options{Seed: 301, InstanceTypes: []string{"c6i.large", "m6i.large"}, NodeClassInMemory: true})
	r := New(e.Kube, e.Cloud, e.Clock, e.Events)

	alive := registered(e, "gc-alive")
	gone := registered(e, "gc-gone")
	goneNotReady := registered(e, "gc-gone-notready")
	goneReady := registered(e, "gc-gone-ready")
	node(e, goneNotReady)
	node(e, goneReady)
	e.MarkReady(goneReady.Status.NodeName)
	// Another provider's, registered, whose Node is not Ready and whose
	// provider ID no EC2 instance has: left to that provider.
	other, otherNode := e.CreateForeign("gc-kwok", "kwok")
	otherNode.Status.Conditions[0].Status = corev1.ConditionFalse
	if err := e.Kube.Status().Update(e.Ctx, otherNode); err != nil {
		t.Fatal(err)
	}
	// Not registered: left to the lifecycle controller's timeouts.
	unregistered := registered(e, "gc-unregistered")
	unregistered.Status.Conditions[1].Status = metav1.ConditionUnknown
	unregistered.Status.Conditions[1].Reason = "NodeNotFound"
	if err := e.Kube.Status().Update(e.Ctx, unregistered); err != nil {
		t.Fatal(err)
	}

	// Nothing is missing yet.
	res, err := r.Reconcile(e.Ctx, Request())
	if err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter != Interval {
		t.Errorf("RequeueAfter = %s, want %s", res.RequeueAfter, Interval)
	}
	if evs := e.Events.All(); len(evs) != 0 {
		t.Fatalf("collected with every instance alive: %v", evs)
	}

	for _, nc := range []*karpv1.NodeClaim{gone, goneNotReady, goneReady, unregistered} {
		terminate(e, nc)
	}
	if res, err = r.Reconcile(e.Ctx, Request()); err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter != Interval {
		t.Errorf("RequeueAfter = %s, want %s", res.RequeueAfter, Interval)
	}
	for name, want := range map[string]bool{
		alive.Name:        true,
		gone.Name:         false,
		goneNotReady.Name: false,
		goneReady.Name:    true,
		unregistered.Name: true,
	} {
		if got := exists(e, name); got != want {
			t.Errorf("NodeClaim %s exists = %t, want %t", name, got, want)
		}
	}
	if nc := e.NodeClaim(other.Name); !nc.DeletionTimestamp.IsZero() {
		t.Errorf("another provider's NodeClaim %s was deleted", other.Name)
	}
	var events []string
	for _, ev := range e.Events.All() {
		events = append(events, ev.Name+"/"+ev.Reason)
	}
	slices.Sort(events)
	if want := []string{"gc-gone-notready/" + ReasonInstanceNotFound, "gc-gone/" + ReasonInstanceNotFound}; !slices.Equal(events, want) {
		t.Errorf("events = %v, want %v", events, want)
	}
	if n := len(e.Logs.Lines("garbage collecting nodeclaim with no cloudprovider instance")); n != 2 {
		t.Errorf("%d log lines for 2 collected NodeClaims", n)
	}
}
