// Package interruption parses the messages that EventBridge delivers to the
// interruption queue into typed events: spot interruption warnings,
// rebalance recommendations, scheduled changes (AWS Health), instance state
// changes and capacity reservation interruption warnings. ParseInstanceStatus
// does the same for the failed EC2 status checks that DescribeInstanceStatus
// reports, which EventBridge does not deliver.
//
// Parse never acts and never panics. Every message it cannot turn into an
// Event comes back with an error that wraps one of ErrUnknownEvent,
// ErrIgnored or ErrMalformed, so the consumer can count it by class and
// delete it: a message left in the queue would only be delivered again.
package interruption

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// Kind is what an event means for the instances it names.
type Kind string

// Kinds of events. The values are stable: they label metrics.
const (
	// KindSpotInterrupted: EC2 reclaims the spot instance in two minutes.
	KindSpotInterrupted Kind = "spot_interrupted"
	// KindRebalanceRecommendation: the spot instance is at elevated risk of
	// interruption.
	KindRebalanceRecommendation Kind = "rebalance_recommendation"
	// KindScheduledChange: AWS Health scheduled maintenance (a stop, a
	// reboot or a retirement) of the instances.
	KindScheduledChange Kind = "scheduled_change"
	// KindInstanceStopped: the instance is stopping or stopped.
	KindInstanceStopped Kind = "instance_stopped"
	// KindInstanceTerminated: the instance is shutting down or terminated.
	KindInstanceTerminated Kind = "instance_terminated"
	// KindCapacityReservationInterrupted: the interruptible capacity
	// reservation the instance runs in is being reclaimed.
	KindCapacityReservationInterrupted Kind = "capacity_reservation_interrupted"
	// KindInstanceStatus: the instance's instance status check has failed
	// for at least StatusCheckThreshold (its operating system, kernel or
	// network configuration is broken).
	KindInstanceStatus Kind = "instance_status"
	// KindSystemStatus: the instance's system status check has failed for
	// at least StatusCheckThreshold (the AWS host or network under it is
	// broken).
	KindSystemStatus Kind = "system_status"
)

// StatusCheckThreshold is how long a status check must have failed before
// the instance counts as unhealthy, as Karpenter waits: a check that fails
// briefly (during a reboot, for one) is not acted on.
const StatusCheckThreshold = 2 * time.Minute

// Errors that classify messages Parse does not turn into an Event.
var (
	// ErrUnknownEvent is a message that is not one of the EventBridge events
	// the queue is meant to receive (another source, detail type or
	// envelope version).
	ErrUnknownEvent = errors.New("unknown event")
	// ErrIgnored is a recognized event that needs no action, for example a
	// state change to running or an AWS Health event about another service.
	ErrIgnored = errors.New("event needs no action")
	// ErrMalformed is a message that is not valid JSON or lacks the fields
	// its event type must carry.
	ErrMalformed = errors.New("malformed message")
)

// EventBridge sources and detail types.
const (
	SourceEC2    = "aws.ec2"
	SourceHealth = "aws.health"

	DetailTypeSpotInterruption               = "EC2 Spot Instance Interruption Warning"
	DetailTypeRebalanceRecommendation        = "EC2 Instance Rebalance Recommendation"
	DetailTypeStateChange                    = "EC2 Instance State-change Notification"
	DetailTypeCapacityReservationInterrupted = "EC2 Capacity Reservation Instance Interruption Warning"
	DetailTypeHealth                         = "AWS Health Event"
)

// Event is a parsed interruption message.
type Event struct {
	Kind Kind
	// ID is the EventBridge event ID; redeliveries of one event share it.
	ID string
	// Source and DetailType say which EventBridge rule delivered it.
	Source     string
	DetailType string
	Account    string
	Region     string
	// Time is when the event was emitted; zero if the message has none.
	Time time.Time
	// InstanceIDs are the affected instances, in message order, without
	// duplicates. Never empty.
	InstanceIDs []string
	// State is the new instance state of a state change.
	State string
	// InstanceAction is what EC2 will do to a spot or reservation instance
	// (terminate, stop, hibernate).
	InstanceAction string
	// CapacityReservationID is the reservation being reclaimed, when the
	// message names it.
	CapacityReservationID string
	// Scheduled change details: the AWS Health event ARN and type code and
	// the maintenance window (zero when absent or unparseable).
	EventARN      string
	EventTypeCode string
	StartTime     time.Time
	EndTime       time.Time
	// ImpairedSince is when a failed status check started failing.
	ImpairedSince time.Time
}

// envelope is the EventBridge event metadata.
type envelope struct {
	Version    string          `json:"version"`
	ID         string          `json:"id"`
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Account    string          `json:"account"`
	Time       string          `json:"time"`
	Region     string          `json:"region"`
	Detail     json.RawMessage `json:"detail"`
}

type ec2Detail struct {
	InstanceID            string `json:"instance-id"`
	InstanceAction        string `json:"instance-action"`
	State                 string `json:"state"`
	CapacityReservationID string `json:"capacity-reservation-id"`
}

type healthDetail struct {
	EventARN          string `json:"eventArn"`
	EventTypeCode     string `json:"eventTypeCode"`
	EventTypeCategory string `json:"eventTypeCategory"`
	Service           string `json:"service"`
	StartTime         string `json:"startTime"`
	EndTime           string `json:"endTime"`
	AffectedEntities  []struct {
		EntityValue string `json:"entityValue"`
	} `json:"affectedEntities"`
}

var instanceIDPattern = regexp.MustCompile(`^i-[0-9a-f]{8,32}$`)

// Parse turns an SQS message body into an Event, or returns an error
// wrapping ErrUnknownEvent, ErrIgnored or ErrMalformed.
func Parse(body string) (Event, error) {
	var env envelope
	if err := json.Unmarshal([]byte(body), &env); err != nil {
		return Event{}, fmt.Errorf("%w: not an EventBridge event: %v", ErrMalformed, err)
	}
	if env.Version != "0" {
		return Event{}, fmt.Errorf("%w: envelope version %q, source %q, detail-type %q", ErrUnknownEvent, env.Version, env.Source, env.DetailType)
	}
	ev := Event{ID: env.ID, Source: env.Source, DetailType: env.DetailType, Account: env.Account, Region: env.Region}
	if env.Time != "" {
		t, err := time.Parse(time.RFC3339, env.Time)
		if err != nil {
			return Event{}, fmt.Errorf("%w: %s event %s: time %q is not RFC 3339", ErrMalformed, env.DetailType, env.ID, env.Time)
		}
		ev.Time = t
	}
	switch {
	case env.Source == SourceEC2 && env.DetailType == DetailTypeSpotInterruption:
		ev.Kind = KindSpotInterrupted
		return parseEC2(ev, env, false)
	case env.Source == SourceEC2 && env.DetailType == DetailTypeRebalanceRecommendation:
		ev.Kind = KindRebalanceRecommendation
		return parseEC2(ev, env, false)
	case env.Source == SourceEC2 && env.DetailType == DetailTypeCapacityReservationInterrupted:
		ev.Kind = KindCapacityReservationInterrupted
		return parseEC2(ev, env, false)
	case env.Source == SourceEC2 && env.DetailType == DetailTypeStateChange:
		return parseEC2(ev, env, true)
	case env.Source == SourceHealth && env.DetailType == DetailTypeHealth:
		return parseHealth(ev, env)
	}
	return Event{}, fmt.Errorf("%w: source %q, detail-type %q", ErrUnknownEvent, env.Source, env.DetailType)
}

func parseEC2(ev Event, env envelope, stateChange bool) (Event, error) {
	var d ec2Detail
	if err := unmarshalDetail(env, &d); err != nil {
		return Event{}, err
	}
	if !instanceIDPattern.MatchString(d.InstanceID) {
		return Event{}, fmt.Errorf("%w: %s event %s: detail.instance-id %q is not an instance ID", ErrMalformed, env.DetailType, env.ID, d.InstanceID)
	}
	ev.InstanceIDs = []string{d.InstanceID}
	ev.InstanceAction = d.InstanceAction
	ev.CapacityReservationID = d.CapacityReservationID
	if stateChange {
		ev.State = d.State
		switch d.State {
		case "stopping", "stopped":
			ev.Kind = KindInstanceStopped
		case "shutting-down", "terminated":
			ev.Kind = KindInstanceTerminated
		case "":
			return Event{}, fmt.Errorf("%w: %s event %s: detail.state is missing", ErrMalformed, env.DetailType, env.ID)
		default:
			return Event{}, fmt.Errorf("%w: instance %s changed to state %q", ErrIgnored, d.InstanceID, d.State)
		}
	}
	return ev, nil
}

func parseHealth(ev Event, env envelope) (Event, error) {
	var d healthDetail
	if err := unmarshalDetail(env, &d); err != nil {
		return Event{}, err
	}
	if d.Service != "EC2" {
		return Event{}, fmt.Errorf("%w: AWS Health event %s is about service %q, not EC2", ErrIgnored, env.ID, d.Service)
	}
	if d.EventTypeCategory != "scheduledChange" {
		return Event{}, fmt.Errorf("%w: AWS Health event %s has category %q, not scheduledChange", ErrIgnored, env.ID, d.EventTypeCategory)
	}
	// A set, not a search of the list: an event may name thousands.
	seen := make(map[string]bool, len(d.AffectedEntities))
	for _, e := range d.AffectedEntities {
		if !seen[e.EntityValue] && instanceIDPattern.MatchString(e.EntityValue) {
			seen[e.EntityValue] = true
			ev.InstanceIDs = append(ev.InstanceIDs, e.EntityValue)
		}
	}
	if len(ev.InstanceIDs) == 0 {
		return Event{}, fmt.Errorf("%w: AWS Health event %s names no instance in detail.affectedEntities", ErrMalformed, env.ID)
	}
	ev.Kind = KindScheduledChange
	ev.EventARN = d.EventARN
	ev.EventTypeCode = d.EventTypeCode
	ev.StartTime = parseHealthTime(d.StartTime)
	ev.EndTime = parseHealthTime(d.EndTime)
	return ev, nil
}

func unmarshalDetail(env envelope, into any) error {
	if len(env.Detail) == 0 || string(env.Detail) == "null" {
		return fmt.Errorf("%w: %s event %s has no detail", ErrMalformed, env.DetailType, env.ID)
	}
	if err := json.Unmarshal(env.Detail, into); err != nil {
		return fmt.Errorf("%w: %s event %s: detail: %v", ErrMalformed, env.DetailType, env.ID, err)
	}
	return nil
}

// parseHealthTime reads AWS Health times, which come as RFC 1123
// ("Sat, 05 Jun 2021 03:00:00 GMT") or RFC 3339.
func parseHealthTime(s string) time.Time {
	for _, layout := range []string{time.RFC1123, time.RFC1123Z, time.RFC3339} {
		if t, err := time.Parse(layout, s); err == nil {
			return t
		}
	}
	return time.Time{}
}

// ParseInstanceStatus turns one instance's entry of a DescribeInstanceStatus
// answer, observed at now, into an Event for each of its status checks
// (instance, then system) that has failed for at least
// StatusCheckThreshold. Checks that failed more recently, and attached EBS
// volume checks (a volume failing may concern only the pods that use it),
// are ignored. It returns an error wrapping ErrIgnored when no check
// qualifies, or ErrMalformed when the entry has no valid instance ID or a
// failed check without the time it started failing.
func ParseInstanceStatus(s ec2types.InstanceStatus, now time.Time) ([]Event, error) {
	id := aws.ToString(s.InstanceId)
	if !instanceIDPattern.MatchString(id) {
		return nil, fmt.Errorf("%w: instance status: InstanceId %q is not an instance ID", ErrMalformed, id)
	}
	var out []Event
	for _, c := range []struct {
		kind    Kind
		name    string
		summary *ec2types.InstanceStatusSummary
	}{{KindInstanceStatus, "instance", s.InstanceStatus}, {KindSystemStatus, "system", s.SystemStatus}} {
		if c.summary == nil {
			continue
		}
		var since time.Time
		for _, d := range c.summary.Details {
			if d.Status != ec2types.StatusTypeFailed {
				continue
			}
			if d.ImpairedSince == nil {
				return nil, fmt.Errorf("%w: instance %s: the %s status check %s failed without ImpairedSince", ErrMalformed, id, c.name, d.Name)
			}
			if since.IsZero() || d.ImpairedSince.Before(since) {
				since = *d.ImpairedSince
			}
		}
		if since.IsZero() || now.Sub(since) < StatusCheckThreshold {
			continue
		}
		out = append(out, Event{Kind: c.kind, Source: SourceEC2, DetailType: "DescribeInstanceStatus",
			Time: since, ImpairedSince: since, InstanceIDs: []string{id}})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: instance %s has no status check failed for %s", ErrIgnored, id, StatusCheckThreshold)
	}
	return out, nil
}
