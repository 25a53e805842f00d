package nodeclass

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/sdk"
)

const sharedOwner = "210987654321"

// addReservations adds the reservations every capacity reservation test
// selects from, and returns the account's own ID.
func addReservations(t *testing.T, w *world) string {
	t.Helper()
	zones := w.aws.Zones()
	for _, c := range []fake.CapacityReservation{
		{ID: "cr-01", InstanceType: "m5.large", Zone: zones[0], Total: 2,
			Tags: map[string]string{"team": "web", "env": "prod"}},
		{ID: "cr-02", InstanceType: "m5.xlarge", Zone: zones[1], Total: 1, MatchCriteria: "open",
			Tags: map[string]string{"team": "web", "env": "dev"}},
		{ID: "cr-03", InstanceType: "m5.large", Zone: zones[0], Total: 1, OwnerID: sharedOwner,
			Tags: map[string]string{"team": "web"}},
		// A capacity block 30 minutes from its end, and one 2 hours from it.
		{ID: "cr-04", InstanceType: "p5.48xlarge", Zone: zones[0], Total: 1, ReservationType: "capacity-block",
			EndDate: t0.Add(30 * time.Minute), Tags: map[string]string{"team": "research"}},
		{ID: "cr-05", InstanceType: "p5.48xlarge", Zone: zones[1], Total: 1, ReservationType: "capacity-block",
			EndDate: t0.Add(2 * time.Hour), Interruptible: true, Tags: map[string]string{"team": "research"}},
		// Expired: never selected.
		{ID: "cr-06", InstanceType: "m5.large", Zone: zones[0], Total: 1,
			EndDate: t0.Add(-time.Hour), Tags: map[string]string{"team": "web", "env": "prod"}},
	} {
		if _, err := w.aws.AddCapacityReservation(c); err != nil {
			t.Fatal(err)
		}
	}
	return w.aws.AccountID()
}

// wantReservation is the status entry of a reservation added by
// addReservations, resolved at t0.
func wantReservation(w *world, account, id string) awsv1.CapacityReservation {
	zones := w.aws.Zones()
	end := func(d time.Duration) *metav1.Time { e := metav1.NewTime(t0.Add(d)); return &e }
	all := map[string]awsv1.CapacityReservation{
		"cr-01": {ID: "cr-01", AvailabilityZone: zones[0], InstanceType: "m5.large", OwnerID: account, InstanceMatchCriteria: "targeted",
			ReservationType: awsv1.CapacityReservationTypeDefault, State: awsv1.CapacityReservationStateActive},
		"cr-02": {ID: "cr-02", AvailabilityZone: zones[1], InstanceType: "m5.xlarge", OwnerID: account, InstanceMatchCriteria: "open",
			ReservationType: awsv1.CapacityReservationTypeDefault, State: awsv1.CapacityReservationStateActive},
		"cr-03": {ID: "cr-03", AvailabilityZone: zones[0], InstanceType: "m5.large", OwnerID: sharedOwner, InstanceMatchCriteria: "targeted",
			ReservationType: awsv1.CapacityReservationTypeDefault, State: awsv1.CapacityReservationStateActive},
		"cr-04": {ID: "cr-04", AvailabilityZone: zones[0], InstanceType: "p5.48xlarge", OwnerID: account, InstanceMatchCriteria: "targeted",
			ReservationType: awsv1.CapacityReservationTypeCapacityBlock, State: awsv1.CapacityReservationStateExpiring, EndTime: end(30 * time.Minute)},
		"cr-05": {ID: "cr-05", AvailabilityZone: zones[1], InstanceType: "p5.48xlarge", OwnerID: account, InstanceMatchCriteria: "targeted",
			ReservationType: awsv1.CapacityReservationTypeCapacityBlock, State: awsv1.CapacityReservationStateActive, EndTime: end(2 * time.Hour),
			Interruptible: true},
	}
	r, ok := all[id]
	if !ok {
		panic("no expected status for " + id)
	}
	return r
}

func TestResolveCapacityReservations(t *testing.T) {
	tests := []struct {
		name     string
		terms    []awsv1.CapacityReservationSelectorTerm
		deny     bool
		want     []string // IDs, in status order
		status   metav1.ConditionStatus
		reason   string
		contains []string
	}{
		{
			name:   "no terms",
			want:   nil,
			reason: ReasonNotConfigured, contains: []string{"no capacityReservationSelectorTerms"},
		},
		{
			name:   "by id",
			terms:  []awsv1.CapacityReservationSelectorTerm{{ID: "cr-02"}},
			want:   []string{"cr-02"},
			reason: awsv1.ConditionTypeCapacityReservationsReady, contains: []string{"1 capacity reservation selected"},
		},
		{
			name:   "by tags, fields ANDed",
			terms:  []awsv1.CapacityReservationSelectorTerm{{Tags: map[string]string{"team": "web", "env": "prod"}}},
			want:   []string{"cr-01"},
			reason: awsv1.ConditionTypeCapacityReservationsReady, contains: []string{"1 capacity reservation selected"},
		},
		{
			name:   "by tag, including reservations shared by another account",
			terms:  []awsv1.CapacityReservationSelectorTerm{{Tags: map[string]string{"team": "web"}}},
			want:   []string{"cr-01", "cr-02", "cr-03"},
			reason: awsv1.ConditionTypeCapacityReservationsReady, contains: []string{"3 capacity reservations selected"},
		},
		{
			name:   "by * tag",
			terms:  []awsv1.CapacityReservationSelectorTerm{{Tags: map[string]string{"env": "*"}}},
			want:   []string{"cr-01", "cr-02"},
			reason: awsv1.ConditionTypeCapacityReservationsReady, contains: []string{"2 capacity reservations selected"},
		},
		{
			name:   "by owner",
			terms:  []awsv1.CapacityReservationSelectorTerm{{Tags: map[string]string{"team": "web"}, OwnerID: sharedOwner}},
			want:   []string{"cr-03"},
			reason: awsv1.ConditionTypeCapacityReservationsReady, contains: []string{"1 capacity reservation selected"},
		},
		{
			name:   "by instance match criteria",
			terms:  []awsv1.CapacityReservationSelectorTerm{{InstanceMatchCriteria: "open"}},
			want:   []string{"cr-02"},
			reason: awsv1.ConditionTypeCapacityReservationsReady, contains: []string{"1 capacity reservation selected"},
		},
		{
			name: "terms ORed, sorted by id and deduplicated",
			terms: []awsv1.CapacityReservationSelectorTerm{
				{Tags: map[string]string{"team": "research"}},
				{ID: "cr-01"},
				{Tags: map[string]string{"env": "prod"}},
				{ID: "cr-0000000000000000f"},
			},
			want:   []string{"cr-01", "cr-04", "cr-05"},
			reason: awsv1.ConditionTypeCapacityReservationsReady, contains: []string{"3 capacity reservations selected"},
		},
		{
			name:   "expiring capacity block",
			terms:  []awsv1.CapacityReservationSelectorTerm{{Tags: map[string]string{"team": "research"}}},
			want:   []string{"cr-04", "cr-05"},
			reason: awsv1.ConditionTypeCapacityReservationsReady, contains: []string{"2 capacity reservations selected"},
		},
		{
			name:   "none matching a tag",
			terms:  []awsv1.CapacityReservationSelectorTerm{{Tags: map[string]string{"team": "data"}}},
			reason: ReasonCapacityReservationsNotFound,
			contains: []string{
				"no capacity reservation matches capacityReservationSelectorTerms (tag team=data)",
				"active capacity reservations carry team=research, team=web",
				"check the tags in capacityReservationSelectorTerms",
			},
		},
		{
			name: "none matching: unknown id, expired reservation, wrong owner",
			terms: []awsv1.CapacityReservationSelectorTerm{
				{ID: "cr-0000000000000000f"},
				{ID: "cr-06"},
				{Tags: map[string]string{"team": "research"}, OwnerID: sharedOwner},
			},
			reason: ReasonCapacityReservationsNotFound,
			contains: []string{
				"(id cr-0000000000000000f or id cr-06 or tag team=research and owner " + sharedOwner + ")",
				"check the ids, tags and ownerIDs in capacityReservationSelectorTerms",
			},
		},
		{
			name:   "DescribeCapacityReservations denied",
			terms:  []awsv1.CapacityReservationSelectorTerm{{ID: "cr-01"}},
			deny:   true,
			status: metav1.ConditionFalse, reason: ReasonUnauthorized,
			contains: []string{"grant ec2:DescribeCapacityReservations"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			account := addReservations(t, w)
			nc := nodeClass(w)
			nc.Spec.CapacityReservationSelectorTerms = tt.terms
			if tt.deny {
				w.aws.DenyAction("ec2:DescribeCapacityReservations")
			}
			st, err := w.resolver.Resolve(context.Background(), nc, version)
			if err != nil {
				t.Fatal(err)
			}
			var want []awsv1.CapacityReservation
			for _, id := range tt.want {
				want = append(want, wantReservation(w, account, id))
			}
			if !reflect.DeepEqual(st.CapacityReservations, want) {
				t.Errorf("capacity reservations\ngot  %+v\nwant %+v", st.CapacityReservations, want)
			}
			status := tt.status
			if status == "" {
				status = metav1.ConditionTrue
			}
			c := cond(st, awsv1.ConditionTypeCapacityReservationsReady)
			if c.Status != status || c.Reason != tt.reason || c.ObservedGeneration != nc.Generation {
				t.Errorf("%s = %s/%s at generation %d (%s), want %s/%s at %d",
					c.Type, c.Status, c.Reason, c.ObservedGeneration, c.Message, status, tt.reason, nc.Generation)
			}
			for _, s := range tt.contains {
				if !strings.Contains(c.Message, s) {
					t.Errorf("message %q does not contain %q", c.Message, s)
				}
			}
			t.Logf("%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message)
			if r := cond(st, awsv1.ConditionTypeReady); r.Status != metav1.ConditionTrue {
				t.Errorf("Ready = %+v, want True: capacity reservations do not block it", r)
			}
			if len(tt.terms) == 0 {
				if n := w.aws.Calls("DescribeCapacityReservations"); n != 0 {
					t.Errorf("DescribeCapacityReservations called %d times without terms", n)
				}
			}
		})
	}
}

// A capacity block turns expiring exactly 40 minutes before its end.
func TestCapacityBlockExpiryBoundary(t *testing.T) {
	w := newWorld(t)
	addReservations(t, w)
	nc := nodeClass(w)
	nc.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{ID: "cr-05"}}
	for _, tc := range []struct {
		at   time.Duration
		want awsv1.CapacityReservationState
	}{
		{79 * time.Minute, awsv1.CapacityReservationStateActive},
		{80*time.Minute - time.Second, awsv1.CapacityReservationStateActive},
		{80 * time.Minute, awsv1.CapacityReservationStateExpiring},
		{119 * time.Minute, awsv1.CapacityReservationStateExpiring},
	} {
		w.clk.SetTime(t0.Add(tc.at))
		st, err := w.resolver.Resolve(context.Background(), nc, version)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.CapacityReservations) != 1 || st.CapacityReservations[0].State != tc.want {
			t.Errorf("at t0+%v: %+v, want one reservation in state %s", tc.at, st.CapacityReservations, tc.want)
		}
	}
	// At its end EC2 reports it expired, and it is no longer selected.
	w.clk.SetTime(t0.Add(2 * time.Hour))
	st, err := w.resolver.Resolve(context.Background(), nc, version)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.CapacityReservations) != 0 || cond(st, awsv1.ConditionTypeCapacityReservationsReady).Reason != ReasonCapacityReservationsNotFound {
		t.Errorf("after the block's end: %+v, %+v", st.CapacityReservations, cond(st, awsv1.ConditionTypeCapacityReservationsReady))
	}
}

// failingEC2 fails the nth DescribeCapacityReservations call from now on.
type failingEC2 struct {
	sdk.EC2
	n, calls int
	err      error
}

func (f *failingEC2) DescribeCapacityReservations(ctx context.Context, in *ec2.DescribeCapacityReservationsInput, optFns ...func(*ec2.Options)) (*ec2.DescribeCapacityReservationsOutput, error) {
	f.calls++
	if f.calls == f.n {
		return nil, f.err
	}
	return f.EC2.DescribeCapacityReservations(ctx, in, optFns...)
}

func TestResolveCapacityReservationsAPIErrorKeepsStatus(t *testing.T) {
	gone := awsv1.CapacityReservationSelectorTerm{Tags: map[string]string{"team": "gone"}}
	tests := []struct {
		name   string
		terms  []awsv1.CapacityReservationSelectorTerm
		inject func(w *world)
	}{
		{"throttled", []awsv1.CapacityReservationSelectorTerm{gone},
			func(w *world) { w.aws.Throttle("DescribeCapacityReservations", 1) }},
		{"5xx", []awsv1.CapacityReservationSelectorTerm{gone}, func(w *world) {
			w.aws.InjectError("DescribeCapacityReservations", fake.APIError("InternalError", "An internal error has occurred"), 1)
		}},
		{"5xx after a term resolved", []awsv1.CapacityReservationSelectorTerm{{ID: "cr-01"}, gone}, func(w *world) {
			clients := w.aws.Clients()
			clients.EC2 = &failingEC2{EC2: clients.EC2, n: 2, err: fake.APIError("Unavailable", "The service is unavailable")}
			w.resolver = NewResolver(clients, w.resolver.opts)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			addReservations(t, w)
			nc := nodeClass(w)
			nc.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{Tags: map[string]string{"team": "research"}}}
			first, err := w.resolver.Resolve(context.Background(), nc, version)
			if err != nil {
				t.Fatal(err)
			}
			if len(first.CapacityReservations) != 2 {
				t.Fatalf("first pass selected %+v, want cr-04 and cr-05", first.CapacityReservations)
			}
			nc.Status = first
			// The terms change, but a call fails before the new answer is
			// complete.
			nc.Spec.CapacityReservationSelectorTerms = tt.terms
			w.clk.Step(time.Minute)
			tt.inject(w)
			st, err := w.resolver.Resolve(context.Background(), nc, version)
			if err == nil || !strings.Contains(err.Error(), "resolving capacityReservationSelectorTerms") {
				t.Fatalf("Resolve returned %v, want the DescribeCapacityReservations error", err)
			}
			before, after := cond(first, awsv1.ConditionTypeCapacityReservationsReady), cond(st, awsv1.ConditionTypeCapacityReservationsReady)
			if after != before {
				t.Fatalf("CapacityReservationsReady changed on an API error:\nbefore %+v\nafter  %+v", before, after)
			}
			if !reflect.DeepEqual(st.CapacityReservations, first.CapacityReservations) {
				t.Fatalf("capacity reservations changed on an API error:\nbefore %+v\nafter  %+v", first.CapacityReservations, st.CapacityReservations)
			}
			if r := cond(st, awsv1.ConditionTypeReady); r.Status != metav1.ConditionTrue {
				t.Fatalf("Ready = %+v, want still True", r)
			}
			if v := cond(st, awsv1.ConditionTypeValidationSucceeded); v.Status != metav1.ConditionTrue || !v.LastTransitionTime.Time.Equal(t0) {
				t.Fatalf("ValidationSucceeded = %+v, want True since t0: validation does not depend on reservations", v)
			}
		})
	}
}

// With the ReservedCapacity feature gate off, the terms are not resolved and
// a condition left from before is removed.
func TestResolveCapacityReservationsGateOff(t *testing.T) {
	w := newWorld(t)
	addReservations(t, w)
	nc := nodeClass(w)
	nc.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{ID: "cr-01"}}
	st, err := w.resolver.Resolve(context.Background(), nc, version)
	if err != nil || len(st.CapacityReservations) != 1 {
		t.Fatalf("gate on: %+v, %v", st.CapacityReservations, err)
	}
	nc.Status = st
	w.resolver.opts.DisableCapacityReservations = true
	calls := w.aws.Calls("DescribeCapacityReservations")
	st, err = w.resolver.Resolve(context.Background(), nc, version)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.CapacityReservations) != 0 {
		t.Errorf("gate off: capacity reservations %+v, want none", st.CapacityReservations)
	}
	for _, c := range st.Conditions {
		if c.Type == awsv1.ConditionTypeCapacityReservationsReady {
			t.Errorf("gate off: condition %+v is still there", c)
		}
	}
	if n := w.aws.Calls("DescribeCapacityReservations") - calls; n != 0 {
		t.Errorf("gate off: DescribeCapacityReservations called %d times", n)
	}
	if r := cond(st, awsv1.ConditionTypeReady); r.Status != metav1.ConditionTrue {
		t.Errorf("gate off: Ready = %+v", r)
	}
}
