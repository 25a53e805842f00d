package controllers

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	fakeclient "sigs.k8s.io/controller-runtime/pkg/client/fake"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/interruption"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/interruption/queue"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/settings"
)

// TestCapacityReservationInterruptionMarksReservation checks that a
// capacity reservation interruption keeps the replacement out of the
// reservation being reclaimed, as Karpenter marks it unavailable.
func TestCapacityReservationInterruptionMarksReservation(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	f := fake.New(fake.Options{Seed: 1, Clock: clk, InstanceTypes: []string{"m6i.large"}})
	w, err := f.StandardCluster("test", "1.33")
	if err != nil {
		t.Fatal(err)
	}
	id, err := f.AddCapacityReservation(fake.CapacityReservation{InstanceType: "m6i.large", Zone: f.Zones()[0], Total: 2})
	if err != nil {
		t.Fatal(err)
	}
	nodeClass := &awsv1.EC2NodeClass{}
	nodeClass.Name = "default"
	nodeClass.Status.Subnets = []awsv1.Subnet{{ID: w.SubnetIDs[0], Zone: f.Zones()[0]}}
	nodeClass.Status.CapacityReservations = []awsv1.CapacityReservation{{ID: id, InstanceType: "m6i.large", AvailabilityZone: f.Zones()[0], State: awsv1.CapacityReservationStateActive}}
	s := settings.Default()
	s.ClusterName = "test"
	p, err := aws.New(aws.Options{Clients: f.Clients(), Region: f.Region(), Settings: s, Clock: clk,
		NodeClass: func(context.Context, string) (*awsv1.EC2NodeClass, error) { return nodeClass.DeepCopy(), nil }})
	if err != nil {
		t.Fatal(err)
	}
	np := &karpv1.NodePool{}
	np.Spec.Template.Spec.NodeClassRef = &karpv1.NodeClassReference{Name: "default"}
	if _, err := p.GetInstanceTypes(ctx, np); err != nil {
		t.Fatal(err)
	}
	if n := p.ReservationAvailable(id); n != 2 {
		t.Fatalf("reservation has %d left before the interruption, want 2", n)
	}

	scheme := runtime.NewScheme()
	if err := karpv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	nc := nodeClaim("nc", "aws:///us-east-1a/i-1")
	nc.Labels = map[string]string{wellknown.LabelCapacityReservationID: id}
	kube := fakeclient.NewClientBuilder().WithScheme(scheme).WithObjects(nc).Build()
	h := &interruptionHandler{kube: kube, rec: &eventLog{}, cloud: p}
	a := queue.Action{Event: interruption.Event{Kind: interruption.KindCapacityReservationInterrupted, ID: "e1"}, InstanceID: "i-1", NodeClaim: "nc"}
	if err := h.handle(ctx, a); err != nil {
		t.Fatal(err)
	}
	if n := p.ReservationAvailable(id); n != 0 {
		t.Errorf("reservation has %d left after its interruption, want 0", n)
	}
}
