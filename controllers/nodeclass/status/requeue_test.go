package status

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
)

func TestRequeueAfter(t *testing.T) {
	ready := metav1.Condition{Type: awsv1.ConditionTypeReady, Status: metav1.ConditionTrue}
	notReady := metav1.Condition{Type: awsv1.ConditionTypeReady, Status: metav1.ConditionFalse}
	reservations := metav1.Condition{Type: awsv1.ConditionTypeCapacityReservationsReady, Status: metav1.ConditionTrue}
	terms := []awsv1.CapacityReservationSelectorTerm{{ID: "cr-0123456789abcdef0"}}
	tests := []struct {
		name       string
		terms      []awsv1.CapacityReservationSelectorTerm
		conditions []metav1.Condition
		want       time.Duration
	}{
		{"ready", nil, []metav1.Condition{ready}, ReadyRequeue},
		{"not ready", nil, []metav1.Condition{notReady}, NotReadyRequeue},
		{"ready with reservations: polled every minute", terms, []metav1.Condition{ready, reservations}, CapacityReservationRequeue},
		{"reservations not resolved (ReservedCapacity off)", terms, []metav1.Condition{ready}, ReadyRequeue},
		{"a shorter refresh interval than a minute stands", terms, []metav1.Condition{ready, reservations}, 30 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nc := &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{CapacityReservationSelectorTerms: tt.terms}, Status: awsv1.EC2NodeClassStatus{Conditions: tt.conditions}}
			interval := ReadyRequeue
			if tt.want == 30*time.Second {
				interval = tt.want
			}
			if got := requeueAfter(nc, interval); got != tt.want {
				t.Errorf("requeueAfter = %v, want %v", got, tt.want)
			}
		})
	}
}
