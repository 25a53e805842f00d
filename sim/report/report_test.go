package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/sim/apiserver"
)

var t0 = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)

func newClaim(mod func(*karpv1.NodeClaim)) *karpv1.NodeClaim {
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c1", Labels: map[string]string{wellknown.LabelNodePool: "default"}}}
	if mod != nil {
		mod(nc)
	}
	return nc
}

func cond(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason}
}

func TestRecorderTurnsChangesIntoEvents(t *testing.T) {
	r := NewRecorder("test", 1, t0, t0.Add(time.Hour), nil)
	launched := newClaim(func(nc *karpv1.NodeClaim) {
		nc.Labels[wellknown.LabelInstanceType] = "m6i.large"
		nc.Labels[wellknown.LabelCapacityType] = "spot"
		nc.Labels[wellknown.LabelTopologyZone] = "us-east-1a"
		nc.Status.ImageID = "ami-1"
		nc.Status.Conditions = []metav1.Condition{cond(karpv1.ConditionTypeLaunched, metav1.ConditionTrue, "Launched")}
	})
	registered := launched.DeepCopy()
	registered.Status.NodeName = "node-1"
	registered.Status.Conditions = append(registered.Status.Conditions, cond(karpv1.ConditionTypeRegistered, metav1.ConditionTrue, "Registered"))
	drifted := registered.DeepCopy()
	drifted.Status.Conditions = append(drifted.Status.Conditions, cond(karpv1.ConditionTypeDisruptionReason, metav1.ConditionTrue, ReasonDrifted))
	pending := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	unschedulable := pending.DeepCopy()
	unschedulable.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/0 nodes"}}
	bound := unschedulable.DeepCopy()
	bound.Spec.NodeName = "node-1"
	bound.Status.Conditions = nil

	ncGVK, podGVK := karpv1.GroupVersion.WithKind("NodeClaim"), corev1.SchemeGroupVersion.WithKind("Pod")
	steps := []struct {
		typ      apiserver.ChangeType
		old, obj client.Object
	}{
		{apiserver.Added, nil, newClaim(nil)},
		{apiserver.Modified, newClaim(nil), launched},
		{apiserver.Modified, launched, registered},
		{apiserver.Added, nil, pending},
		{apiserver.Modified, pending, unschedulable},
		{apiserver.Modified, unschedulable, bound},
		{apiserver.Modified, registered, drifted},
		{apiserver.Deleted, drifted, drifted},
	}
	for i, s := range steps {
		gvk := ncGVK
		if _, ok := s.obj.(*corev1.Pod); ok {
			gvk = podGVK
		}
		r.Change(t0.Add(time.Duration(i)*time.Minute), apiserver.Change{Type: s.typ, GVK: gvk, Object: s.obj, Old: s.old})
	}
	r.Event(t0.Add(10*time.Minute), apiserver.Event{Source: apiserver.SourceEviction, Reason: apiserver.ReasonEvicted,
		Regarding: apiserver.ObjectRef{Kind: "Pod", Namespace: "ns", Name: "p"}})
	doc := r.Finish(t0.Add(time.Hour), mustServer(t))
	var kinds []string
	for _, e := range doc.Events {
		kinds = append(kinds, e.Kind)
	}
	want := "NodeClaimCreated,NodeClaimLaunched,NodeRegistered,PodUnschedulable,PodBound,DisruptionStarted,DisruptionFinished,NodeClaimDeleted,PodEvicted"
	if got := strings.Join(kinds, ","); got != want {
		t.Errorf("events\n%s\nwant\n%s", got, want)
	}
	if e := doc.Events[1]; e.InstanceType != "m6i.large" || e.CapacityType != "spot" || e.Zone != "us-east-1a" || e.ImageID != "ami-1" || e.NodePool != "default" {
		t.Errorf("launch event %+v", e)
	}
	if e := doc.Events[4]; e.Node != "node-1" || e.NodeClaim != "c1" {
		t.Errorf("bind event %+v", e)
	}
	if e := doc.Events[8]; e.Node != "node-1" {
		t.Errorf("eviction event %+v", e)
	}
	if doc.Final.Disruptions[ReasonDrifted] != 1 {
		t.Errorf("disruptions %v", doc.Final.Disruptions)
	}
}

// A NodeClaim deleted because its Node was deleted says so.
func TestNodeClaimDeletedWithItsNode(t *testing.T) {
	r := NewRecorder("test", 1, t0, t0.Add(time.Hour), nil)
	ncGVK := karpv1.GroupVersion.WithKind("NodeClaim")
	nc := newClaim(nil)
	r.Change(t0, apiserver.Change{Type: apiserver.Added, GVK: ncGVK, Object: nc})
	r.Event(t0.Add(time.Minute), apiserver.Event{Reason: "DeletedNodeClaim", Note: "deleted nodeclaim because its node node-1 is being deleted",
		Regarding: apiserver.ObjectRef{Kind: "NodeClaim", Name: nc.Name}})
	r.Change(t0.Add(time.Minute), apiserver.Change{Type: apiserver.Deleted, GVK: ncGVK, Object: nc, Old: nc})
	doc := r.Finish(t0.Add(time.Hour), mustServer(t))
	last := doc.Events[len(doc.Events)-1]
	if last.Kind != KindNodeClaimDeleted || last.Reason != "DeletedNodeClaim" || !strings.Contains(last.Message, "node node-1") {
		t.Errorf("last event %+v, want NodeClaimDeleted with reason DeletedNodeClaim", last)
	}
}

func mustServer(t *testing.T) *apiserver.Server {
	t.Helper()
	s, err := apiserver.New(apiserver.Options{Scheme: newScheme(t), Clock: fixedClock{}, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestTextSummary(t *testing.T) {
	doc := &Document{Scenario: "demo", Seed: 3, Start: t0, End: t0.Add(3 * time.Hour),
		Events: []Event{{Time: t0.Add(90 * time.Second), Kind: KindNodeClaimLaunched, Object: "NodeClaim/a", NodePool: "default", InstanceType: "m6i.large"},
			{Time: t0.Add(time.Minute), Kind: KindPodBound, Object: "Pod/x/y"}},
		Samples: []Sample{{CostPerHour: 0.5}},
		Final: Final{
			Nodes:         []Node{{Name: "a", NodePool: "default", InstanceType: "m6i.large", CapacityType: "spot", Zone: "us-east-1a", Ready: true}},
			Pods:          PodCounts{Total: 3, Running: 2, Pending: 1},
			Unschedulable: []Unschedulable{{Pod: "x/z", Reason: "no room"}},
			NodeHours:     2.5, Cost: 1.25, Disruptions: map[string]int{ReasonDrifted: 2, ReasonEmpty: 1},
		}}
	var b bytes.Buffer
	if err := doc.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"Scenario demo, seed 3", "3h0m0s of virtual time", "Nodes at the end: 1 (1 ready)", "default   m6i.large",
		"Pods: 2 running, 1 pending (3 in all)", "1 pending: no room", "Disruptions: Drifted 2, Empty 1", "Cost: $1.25", "0:01:30  NodeClaimLaunched"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "PodBound") {
		t.Error("per-pod events belong to the JSON, not the summary")
	}
}

// Events recorded across several of the recorder's chunks all come out, in
// time order, with those recorded at one time in the order they came.
func TestRecorderKeepsEveryEventInOrder(t *testing.T) {
	r := NewRecorder("test", 1, t0, t0.Add(24*time.Hour), nil)
	const n = 3*eventChunk + 17
	for i := range n {
		// Two events per second: the order within a second must hold.
		r.ScenarioEvent(t0.Add(time.Duration(i/2)*time.Second), "Step", fmt.Sprintf("Scenario/%d", i), "")
	}
	doc := r.Finish(t0.Add(24*time.Hour), mustServer(t))
	if len(doc.Events) != n {
		t.Fatalf("%d events, want %d", len(doc.Events), n)
	}
	for i, e := range doc.Events {
		if want := fmt.Sprintf("Scenario/%d", i); e.Object != want {
			t.Fatalf("event %d is %s, want %s", i, e.Object, want)
		}
	}
}
