package cloud

import (
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestErrorPredicates(t *testing.T) {
	base := errors.New("boom")
	tests := []struct {
		name                            string
		err                             error
		ice, notReady, create, notFound bool
	}{
		{name: "nil", err: nil},
		{name: "plain", err: base},
		{name: "ice", err: NewInsufficientCapacityError(base), ice: true},
		{name: "wrapped ice", err: fmt.Errorf("launch: %w", NewInsufficientCapacityError(base)), ice: true},
		{name: "not ready", err: NewNodeClassNotReadyError(base), notReady: true},
		{name: "create", err: NewCreateError(base, ReasonUnauthorized, "not allowed"), create: true},
		{name: "wrapped not found", err: fmt.Errorf("get: %w", NewNodeClaimNotFoundError(base)), notFound: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsInsufficientCapacityError(tt.err); got != tt.ice {
				t.Errorf("IsInsufficientCapacityError = %v, want %v", got, tt.ice)
			}
			if got := IsNodeClassNotReadyError(tt.err); got != tt.notReady {
				t.Errorf("IsNodeClassNotReadyError = %v, want %v", got, tt.notReady)
			}
			if got := IsCreateError(tt.err); got != tt.create {
				t.Errorf("IsCreateError = %v, want %v", got, tt.create)
			}
			if got := IsNodeClaimNotFoundError(tt.err); got != tt.notFound {
				t.Errorf("IsNodeClaimNotFoundError = %v, want %v", got, tt.notFound)
			}
			if tt.err != nil && !errors.Is(tt.err, base) {
				t.Errorf("%v does not wrap its cause", tt.err)
			}
			if got := IgnoreNodeClaimNotFoundError(tt.err); (got == nil) != (tt.err == nil || tt.notFound) {
				t.Errorf("IgnoreNodeClaimNotFoundError(%v) = %v", tt.err, got)
			}
		})
	}
}

func TestCreateErrorMessage(t *testing.T) {
	tests := []struct {
		err  *CreateError
		want string
	}{
		{NewCreateError(nil, ReasonImageNotFound, "image ami-1 does not exist"), "creating instance (AMINotFound): image ami-1 does not exist"},
		{NewCreateError(errors.New("403"), ReasonUnauthorized, "CreateFleet refused"), "creating instance (Unauthorized): CreateFleet refused: 403"},
		{NewCreateError(errors.New("x"), ReasonLaunchFailed, ""), "creating instance (LaunchFailed): x"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
	ce, ok := AsCreateError(fmt.Errorf("wrap: %w", tests[0].err))
	if !ok || ce.Reason != ReasonImageNotFound {
		t.Errorf("AsCreateError = %v, %v", ce, ok)
	}
}

func TestRepairPolicyUnhealthy(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	p := RepairPolicy{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionFalse, TolerationDuration: 30 * time.Minute}
	cond := func(s corev1.ConditionStatus, ago time.Duration) corev1.NodeCondition {
		return corev1.NodeCondition{Type: corev1.NodeReady, Status: s, LastTransitionTime: metav1.NewTime(now.Add(-ago))}
	}
	tests := []struct {
		name string
		cond corev1.NodeCondition
		want bool
	}{
		{"within toleration", cond(corev1.ConditionFalse, 29*time.Minute), false},
		{"at toleration", cond(corev1.ConditionFalse, 30*time.Minute), true},
		{"other status", cond(corev1.ConditionTrue, time.Hour), false},
		{"other type", corev1.NodeCondition{Type: "DiskPressure", Status: corev1.ConditionFalse}, false},
	}
	for _, tt := range tests {
		if got := p.Unhealthy(tt.cond, now); got != tt.want {
			t.Errorf("%s: Unhealthy = %v, want %v", tt.name, got, tt.want)
		}
	}
}
