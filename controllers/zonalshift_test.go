package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	fakeclient "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/zonalshift"
	"github.com/stevedore-autoscaler/stevedore/test/environment"
)

// TestZonalShiftLoop: the loop reads the shifts at once and then every
// zonalshift.DefaultInterval, and ends with its context.
func TestZonalShiftLoop(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	f := fake.New(fake.Options{Clock: clk, InstanceTypes: []string{"m5.large"}})
	if _, err := f.AddCluster(fake.Cluster{Name: "demo"}); err != nil {
		t.Fatal(err)
	}
	zone, _ := f.ZoneID(fake.DefaultRegion + "a")
	id, err := f.StartZonalShift("demo", zone, time.Hour, "")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := zonalshift.New(f, f, "demo", clk)
	if err != nil {
		t.Fatal(err)
	}
	w := NewZonalShiftWatcher(tr, fakeclient.NewClientBuilder().WithScheme(zonalShiftScheme(t)).Build(), nil, clk)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- zonalShiftLoop(w, Deps{Clock: clk})(ctx) }()

	// waitFor polls (in real time) until the tracker agrees.
	waitFor := func(step string, shifted bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if tr.Shifted(zone) == shifted {
				return
			}
		}
		t.Fatalf("%s: Shifted(%s) stayed %v", step, zone, !shifted)
	}
	waitFor("first read", true)

	if err := f.CancelZonalShift(id); err != nil {
		t.Fatal(err)
	}
	// The next read comes with the ticker, not before.
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	if !tr.Shifted(zone) {
		t.Fatal("read again before the interval")
	}
	clk.Step(zonalshift.DefaultInterval)
	waitFor("read after the interval", false)

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the loop did not end with its context")
	}
}

func zonalShiftScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := karpv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := awsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return scheme
}

// TestZonalShiftEvents: when the zones under a zonal shift change, each
// NodePool that can launch into a zone shifted away from gets
// ZonalShiftActive, and ZonalShiftCleared once the shift ends; NodePools
// whose requirements or node class keep them out of the zone, and another
// provider's, get none.
func TestZonalShiftEvents(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	f := fake.New(fake.Options{Clock: clk, InstanceTypes: []string{"m5.large"}})
	if _, err := f.AddCluster(fake.Cluster{Name: "demo"}); err != nil {
		t.Fatal(err)
	}
	zones := f.Zones()
	a, b, c := zones[0], zones[1], zones[2]
	id := func(zone string) string {
		zid, ok := f.ZoneID(zone)
		if !ok {
			t.Fatalf("no zone ID for %s", zone)
		}
		return zid
	}
	class := func(name string, zones ...string) *awsv1.EC2NodeClass {
		nc := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
		for i, z := range zones {
			nc.Status.Subnets = append(nc.Status.Subnets, awsv1.Subnet{ID: fmt.Sprintf("subnet-%s-%d", name, i), Zone: z, ZoneID: id(z)})
		}
		return nc
	}
	pool := func(name, class string, reqs ...karpv1.NodeSelectorRequirementWithMinValues) *karpv1.NodePool {
		np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
		np.Spec.Template.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: wellknown.GroupAWS, Kind: wellknown.KindEC2NodeClass, Name: class}
		np.Spec.Template.Spec.Requirements = reqs
		return np
	}
	in := func(key string, values ...string) karpv1.NodeSelectorRequirementWithMinValues {
		return karpv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
	}
	kwok := pool("kwok", "default")
	kwok.Spec.Template.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"}
	kube := fakeclient.NewClientBuilder().WithScheme(zonalShiftScheme(t)).WithObjects(
		class("default", a, b), class("other", c),
		pool("any", "default"),
		pool("zone-b", "default", in(wellknown.LabelTopologyZone, b)),
		pool("zone-a-by-id", "default", in(wellknown.LabelTopologyZoneID, id(a))),
		pool("not-zone-a", "default", in(wellknown.LabelTopologyZone, b, c)),
		pool("other-subnets", "other"),
		pool("no-class", "missing"),
		kwok,
	).Build()
	tr, err := zonalshift.New(f, f, "demo", clk)
	if err != nil {
		t.Fatal(err)
	}
	rec := &environment.Recorder{}
	w := NewZonalShiftWatcher(tr, kube, rec, clk)
	// events returns the events recorded since the last call, as
	// "reason nodepool zone-id".
	seen := 0
	shift := ""
	events := func() []string {
		var out []string
		all := rec.All()
		for _, ev := range all[seen:] {
			if ev.Kind != "NodePool" {
				t.Errorf("event on a %s: %v", ev.Kind, ev)
			}
			wantType := corev1.EventTypeNormal
			if ev.Reason == ReasonZonalShiftActive {
				wantType = corev1.EventTypeWarning
			}
			if ev.Type != wantType {
				t.Errorf("%s is %s, want %s", ev.Reason, ev.Type, wantType)
			}
			zid := ""
			for _, z := range zones {
				if strings.Contains(ev.Note, "("+id(z)+")") && strings.Contains(ev.Note, z+" ") {
					zid = id(z)
				}
			}
			out = append(out, ev.Reason+" "+ev.Name+" "+zid)
		}
		seen = len(all)
		return out
	}
	for _, step := range []struct {
		name   string
		act    func()
		events []string
	}{
		{"nothing shifted", func() {}, nil},
		{"zone a shifted", func() {
			if shift, err = f.StartZonalShift("demo", a, time.Hour, ""); err != nil {
				t.Fatal(err)
			}
		}, []string{ReasonZonalShiftActive + " any " + id(a), ReasonZonalShiftActive + " zone-a-by-id " + id(a)}},
		{"no change", func() { clk.Step(time.Minute) }, nil},
		{"shift moves to zone b", func() {
			if err := f.CancelZonalShift(shift); err != nil {
				t.Fatal(err)
			}
			if _, err := f.StartZonalShift("demo", b, time.Hour, ""); err != nil {
				t.Fatal(err)
			}
		}, []string{
			// NodePool by NodePool, in name order.
			ReasonZonalShiftActive + " any " + id(b), ReasonZonalShiftCleared + " any " + id(a),
			ReasonZonalShiftActive + " not-zone-a " + id(b),
			ReasonZonalShiftCleared + " zone-a-by-id " + id(a),
			ReasonZonalShiftActive + " zone-b " + id(b),
		}},
		{"the shift expires", func() { clk.Step(time.Hour) }, []string{
			ReasonZonalShiftCleared + " any " + id(b), ReasonZonalShiftCleared + " not-zone-a " + id(b), ReasonZonalShiftCleared + " zone-b " + id(b),
		}},
	} {
		step.act()
		if err := w.Poll(ctx); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if got := events(); !slices.Equal(got, step.events) {
			t.Errorf("%s: events %q, want %q", step.name, got, step.events)
		}
	}
}

// TestZonalShiftEventsRetried: when the NodePools cannot be listed, the
// change is reported on the next poll instead.
func TestZonalShiftEventsRetried(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	f := fake.New(fake.Options{Clock: clk, InstanceTypes: []string{"m5.large"}})
	if _, err := f.AddCluster(fake.Cluster{Name: "demo"}); err != nil {
		t.Fatal(err)
	}
	zone := f.Zones()[0]
	zid, _ := f.ZoneID(zone)
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	np.Spec.Template.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: wellknown.GroupAWS, Kind: wellknown.KindEC2NodeClass, Name: "default"}
	class := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	class.Status.Subnets = []awsv1.Subnet{{ID: "subnet-1", Zone: zone, ZoneID: zid}}
	failing := true
	kube := fakeclient.NewClientBuilder().WithScheme(zonalShiftScheme(t)).WithObjects(np, class).
		WithInterceptorFuncs(interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if failing {
				return errors.New("the API server is away")
			}
			return c.List(ctx, list, opts...)
		}}).Build()
	tr, err := zonalshift.New(f, f, "demo", clk)
	if err != nil {
		t.Fatal(err)
	}
	rec := &environment.Recorder{}
	w := NewZonalShiftWatcher(tr, kube, rec, clk)
	if _, err := f.StartZonalShift("demo", zone, time.Hour, ""); err != nil {
		t.Fatal(err)
	}
	if err := w.Poll(ctx); err == nil {
		t.Fatal("Poll succeeded without the NodePools")
	}
	if !tr.Shifted(zid) {
		t.Error("the shift was not read")
	}
	failing = false
	if err := w.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	if evs := rec.Matching(environment.Event{Name: "default", Reason: ReasonZonalShiftActive}); len(evs) != 1 {
		t.Errorf("%s events %v after the retry, want 1", ReasonZonalShiftActive, evs)
	}
}
