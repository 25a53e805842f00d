package nodeclass

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
)

// CapacityBlockExpiryWindow is how long before its end a capacity block is
// reported as expiring: no new node should land on it, and the ones on it are
// drained before EC2 reclaims them.
const CapacityBlockExpiryWindow = 40 * time.Minute

// capacityReservationTerm is a capacity reservation selector term.
type capacityReservationTerm struct {
	awsv1.CapacityReservationSelectorTerm
}

// selects reports whether the term selects anything. The API requires a term
// to have an id, tags or instanceMatchCriteria; a term without any of them
// (written past validation) selects nothing rather than every reservation
// of an owner, or of the account.
func (t capacityReservationTerm) selects() bool {
	return t.ID != "" || len(t.Tags) > 0 || t.InstanceMatchCriteria != ""
}

// input returns the DescribeCapacityReservations input for the term: its
// fields ANDed, and only active reservations (not pending, scheduled,
// expired, cancelled or failed ones).
func (t capacityReservationTerm) input() *ec2.DescribeCapacityReservationsInput {
	in := &ec2.DescribeCapacityReservationsInput{
		Filters: []ec2types.Filter{{Name: aws.String("state"), Values: []string{string(ec2types.CapacityReservationStateActive)}}},
	}
	// DescribeCapacityReservations has no ID filter: IDs go in their own
	// parameter, which the filters then narrow.
	if t.ID != "" {
		in.CapacityReservationIds = []string{t.ID}
	}
	in.Filters = append(in.Filters, selectorTerm{tags: t.Tags}.filters("", "")...)
	if t.OwnerID != "" {
		in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("owner-id"), Values: []string{t.OwnerID}})
	}
	if t.InstanceMatchCriteria != "" {
		in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("instance-match-criteria"), Values: []string{t.InstanceMatchCriteria}})
	}
	return in
}

func (t capacityReservationTerm) String() string {
	var parts []string
	if t.ID != "" || len(t.Tags) > 0 {
		parts = append(parts, selectorTerm{tags: t.Tags, id: t.ID}.String())
	}
	if t.OwnerID != "" {
		parts = append(parts, "owner "+t.OwnerID)
	}
	if t.InstanceMatchCriteria != "" {
		parts = append(parts, "instanceMatchCriteria "+t.InstanceMatchCriteria)
	}
	if len(parts) == 0 {
		return "an empty term"
	}
	return strings.Join(parts, " and ")
}

func (r *Resolver) describeCapacityReservations(ctx context.Context, in *ec2.DescribeCapacityReservationsInput) ([]ec2types.CapacityReservation, error) {
	var out []ec2types.CapacityReservation
	p := ec2.NewDescribeCapacityReservationsPaginator(r.ec2, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, page.CapacityReservations...)
	}
	return out, nil
}

// isCapacityReservationIDNotFound reports whether err says a requested
// reservation ID does not exist (or cannot exist): for an id term that is an
// answer, the term matches nothing, not a failure to retry.
func isCapacityReservationIDNotFound(err error) bool {
	switch apiErrorCode(err) {
	case "InvalidCapacityReservationId.NotFound", "InvalidCapacityReservationId.Malformed":
		return true
	}
	return false
}

// resolveCapacityReservations returns the active capacity reservations the
// terms select, by ID. Terms are ORed, each in its own call, so that an id
// term naming a reservation that does not exist cannot hide what the other
// terms match.
//
// The condition is True whether or not anything matches: a node class
// without reservations still launches on-demand and spot capacity. The
// message says how many were selected, and names the terms when none were.
// It is False only when the controller may not call
// DescribeCapacityReservations.
func (r *Resolver) resolveCapacityReservations(ctx context.Context, specTerms []awsv1.CapacityReservationSelectorTerm) ([]awsv1.CapacityReservation, outcome, error) {
	if len(specTerms) == 0 {
		return nil, outcome{status: metav1.ConditionTrue, reason: ReasonNotConfigured,
			message: "no capacityReservationSelectorTerms: nodes launch on on-demand and spot capacity only"}, nil
	}
	terms := make([]capacityReservationTerm, len(specTerms))
	for i, t := range specTerms {
		terms[i] = capacityReservationTerm{t}
	}
	byID := map[string]ec2types.CapacityReservation{}
	for _, t := range terms {
		if !t.selects() {
			continue
		}
		found, err := r.describeCapacityReservations(ctx, t.input())
		switch {
		case err == nil:
		case isUnauthorized(err):
			return nil, unauthorized("ec2:DescribeCapacityReservations", err), nil
		case t.ID != "" && isCapacityReservationIDNotFound(err):
			continue
		default:
			return nil, outcome{}, err
		}
		for _, cr := range found {
			byID[aws.ToString(cr.CapacityReservationId)] = cr
		}
	}
	if len(byID) == 0 {
		msg := fmt.Sprintf("no capacity reservation matches capacityReservationSelectorTerms (%s)", describeCapacityReservationTerms(terms))
		hints := nearMisses(ctx, tagTerms(terms), func(ctx context.Context, f []ec2types.Filter) ([]tagged, error) {
			found, err := r.describeCapacityReservations(ctx, &ec2.DescribeCapacityReservationsInput{
				Filters: append(f, ec2types.Filter{Name: aws.String("state"), Values: []string{string(ec2types.CapacityReservationStateActive)}}),
			})
			out := make([]tagged, len(found))
			for i, cr := range found {
				out[i] = tagged{id: aws.ToString(cr.CapacityReservationId), tags: tagMap(cr.Tags)}
			}
			return out, err
		})
		if len(hints) > 0 {
			msg += "; active capacity reservations carry " + hintList(hints)
		}
		return nil, outcome{status: metav1.ConditionTrue, reason: ReasonCapacityReservationsNotFound,
			message: fmt.Sprintf("%s; %s", msg, capacityReservationFix(terms))}, nil
	}
	now := r.opts.Clock.Now()
	out := make([]awsv1.CapacityReservation, 0, len(byID))
	for _, id := range slices.Sorted(maps.Keys(byID)) {
		out = append(out, capacityReservationStatus(byID[id], now))
	}
	noun := "capacity reservations"
	if len(out) == 1 {
		noun = "capacity reservation"
	}
	return out, outcome{status: metav1.ConditionTrue, reason: awsv1.ConditionTypeCapacityReservationsReady,
		message: fmt.Sprintf("%d %s selected", len(out), noun)}, nil
}

// capacityReservationStatus converts a reservation as EC2 describes it.
func capacityReservationStatus(cr ec2types.CapacityReservation, now time.Time) awsv1.CapacityReservation {
	out := awsv1.CapacityReservation{
		ID:                    aws.ToString(cr.CapacityReservationId),
		AvailabilityZone:      aws.ToString(cr.AvailabilityZone),
		InstanceType:          aws.ToString(cr.InstanceType),
		OwnerID:               aws.ToString(cr.OwnerId),
		InstanceMatchCriteria: string(cr.InstanceMatchCriteria),
		ReservationType:       awsv1.CapacityReservationTypeDefault,
		Interruptible:         aws.ToBool(cr.Interruptible),
		State:                 awsv1.CapacityReservationStateActive,
	}
	if cr.EndDate != nil {
		end := metav1.NewTime(*cr.EndDate)
		out.EndTime = &end
	}
	if cr.ReservationType == ec2types.CapacityReservationTypeCapacityBlock {
		out.ReservationType = awsv1.CapacityReservationTypeCapacityBlock
		// A capacity block ends at a fixed time and EC2 reclaims its
		// instances then; an on-demand reservation's end date only stops
		// the reservation, not the instances, so it never expires here.
		if cr.EndDate != nil && !now.Before(cr.EndDate.Add(-CapacityBlockExpiryWindow)) {
			out.State = awsv1.CapacityReservationStateExpiring
		}
	}
	return out
}

func describeCapacityReservationTerms(terms []capacityReservationTerm) string {
	s := make([]string, len(terms))
	for i, t := range terms {
		s[i] = t.String()
	}
	return strings.Join(s, " or ")
}

// tagTerms returns the tag part of the terms, for near-miss hints.
func tagTerms(terms []capacityReservationTerm) []selectorTerm {
	var out []selectorTerm
	for _, t := range terms {
		if len(t.Tags) > 0 {
			out = append(out, selectorTerm{tags: t.Tags})
		}
	}
	return out
}

// capacityReservationFix names what to check when the terms match nothing.
func capacityReservationFix(terms []capacityReservationTerm) string {
	var ids, tags, owners, criteria bool
	for _, t := range terms {
		ids = ids || t.ID != ""
		tags = tags || len(t.Tags) > 0
		owners = owners || t.OwnerID != ""
		criteria = criteria || t.InstanceMatchCriteria != ""
	}
	var what []string
	for _, f := range []struct {
		used bool
		name string
	}{{ids, "ids"}, {tags, "tags"}, {owners, "ownerIDs"}, {criteria, "instanceMatchCriteria"}} {
		if f.used {
			what = append(what, f.name)
		}
	}
	check := "check capacityReservationSelectorTerms"
	switch n := len(what); n {
	case 0:
	case 1:
		check = fmt.Sprintf("check the %s in capacityReservationSelectorTerms", what[0])
	default:
		check = fmt.Sprintf("check the %s and %s in capacityReservationSelectorTerms", strings.Join(what[:n-1], ", "), what[n-1])
	}
	return check + "; only active capacity reservations in this region are selected, and nodes launch on on-demand and spot capacity meanwhile"
}
