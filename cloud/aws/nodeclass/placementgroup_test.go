package nodeclass

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
)

// TestResolvePlacementGroup checks PlacementGroupReady and its effect on
// Ready for each outcome of resolving placementGroupSelector.
func TestResolvePlacementGroup(t *testing.T) {
	for _, tc := range []struct {
		name       string
		sel        func(byName, id string) *awsv1.PlacementGroupSelector
		inject     string // an error code DescribePlacementGroups fails with
		wantStatus metav1.ConditionStatus
		wantReason string
		wantMsg    string
		wantReady  metav1.ConditionStatus
		wantErr    bool
	}{
		{name: "no selector: no condition", sel: func(string, string) *awsv1.PlacementGroupSelector { return nil },
			wantStatus: "<missing>", wantReady: metav1.ConditionTrue},
		{name: "by name", sel: func(n, _ string) *awsv1.PlacementGroupSelector { return &awsv1.PlacementGroupSelector{Name: n} },
			wantStatus: metav1.ConditionTrue, wantReason: ConditionTypePlacementGroupReady, wantMsg: "partition strategy", wantReady: metav1.ConditionTrue},
		{name: "by id", sel: func(_, id string) *awsv1.PlacementGroupSelector { return &awsv1.PlacementGroupSelector{ID: id} },
			wantStatus: metav1.ConditionTrue, wantReason: ConditionTypePlacementGroupReady, wantReady: metav1.ConditionTrue},
		{name: "unknown name", sel: func(string, string) *awsv1.PlacementGroupSelector { return &awsv1.PlacementGroupSelector{Name: "nope"} },
			wantStatus: metav1.ConditionFalse, wantReason: ReasonPlacementGroupNotFound, wantMsg: `"nope" not found`, wantReady: metav1.ConditionFalse},
		{name: "unknown id", sel: func(string, string) *awsv1.PlacementGroupSelector {
			return &awsv1.PlacementGroupSelector{ID: "pg-0000"}
		},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonPlacementGroupNotFound, wantReady: metav1.ConditionFalse},
		{name: "not available", sel: func(string, string) *awsv1.PlacementGroupSelector {
			return &awsv1.PlacementGroupSelector{Name: "pending"}
		},
			wantStatus: metav1.ConditionFalse, wantReason: ReasonPlacementGroupNotAvailable, wantMsg: `state "pending"`, wantReady: metav1.ConditionFalse},
		{name: "API error", sel: func(n, _ string) *awsv1.PlacementGroupSelector { return &awsv1.PlacementGroupSelector{Name: n} }, inject: "InternalError",
			wantStatus: metav1.ConditionFalse, wantReason: ReasonPlacementGroupResolutionFailed, wantReady: metav1.ConditionFalse, wantErr: true},
		{name: "not allowed", sel: func(n, _ string) *awsv1.PlacementGroupSelector { return &awsv1.PlacementGroupSelector{Name: n} }, inject: "UnauthorizedOperation",
			wantStatus: metav1.ConditionFalse, wantReason: ReasonUnauthorized, wantMsg: "ec2:DescribePlacementGroups", wantReady: metav1.ConditionFalse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			id, err := w.aws.AddPlacementGroup(fake.PlacementGroup{Name: "training", Strategy: "partition", PartitionCount: 3})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.aws.AddPlacementGroup(fake.PlacementGroup{Name: "pending", Strategy: "cluster", State: "pending"}); err != nil {
				t.Fatal(err)
			}
			if tc.inject != "" {
				w.aws.InjectError("DescribePlacementGroups", fake.APIError(tc.inject, "injected"), 1)
			}
			nc := nodeClass(w)
			nc.Spec.PlacementGroupSelector = tc.sel("training", id)
			st, err := w.resolver.Resolve(context.Background(), nc, version)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Resolve error %v, want one: %v", err, tc.wantErr)
			}
			c := cond(st, ConditionTypePlacementGroupReady)
			if c.Status != tc.wantStatus || c.Reason != tc.wantReason || !strings.Contains(c.Message, tc.wantMsg) {
				t.Errorf("PlacementGroupReady = %+v, want %s %s mentioning %q", c, tc.wantStatus, tc.wantReason, tc.wantMsg)
			}
			if r := cond(st, awsv1.ConditionTypeReady); r.Status != tc.wantReady {
				t.Errorf("Ready = %+v, want %s", r, tc.wantReady)
			}
		})
	}
}

// Removing the selector removes the condition, so that a stale False does
// not linger (it no longer counts towards Ready either).
func TestResolvePlacementGroupSelectorRemoved(t *testing.T) {
	w := newWorld(t)
	nc := nodeClass(w)
	nc.Spec.PlacementGroupSelector = &awsv1.PlacementGroupSelector{Name: "missing"}
	st, _ := w.resolver.Resolve(context.Background(), nc, version)
	if c := cond(st, ConditionTypePlacementGroupReady); c.Status != metav1.ConditionFalse {
		t.Fatalf("PlacementGroupReady = %+v, want False", c)
	}
	nc.Status = st
	nc.Spec.PlacementGroupSelector = nil
	nc.Generation = 2
	st, err := w.resolver.Resolve(context.Background(), nc, version)
	if err != nil {
		t.Fatal(err)
	}
	if c := cond(st, ConditionTypePlacementGroupReady); c.Status != "<missing>" {
		t.Errorf("PlacementGroupReady = %+v, want it removed", c)
	}
	if r := cond(st, awsv1.ConditionTypeReady); r.Status != metav1.ConditionTrue {
		t.Errorf("Ready = %+v, want True", r)
	}
}
