package interruption

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

const (
	spotMsg        = `{"version":"0","id":"1e5527d7-bb36-4607-3370-4164db56a40e","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","account":"123456789012","time":"1970-01-01T00:00:00Z","region":"us-east-1","resources":["arn:aws:ec2:us-east-1b:instance/i-0b662ef9931388ba0"],"detail":{"instance-id":"i-0b662ef9931388ba0","instance-action":"terminate"}}`
	rebalanceMsg   = `{"version":"0","id":"5d5555d5-dd55-5555-5555-5555dd55d55d","detail-type":"EC2 Instance Rebalance Recommendation","source":"aws.ec2","account":"123456789012","time":"2020-10-26T14:14:14Z","region":"us-east-1","resources":["arn:aws:ec2:us-east-1b:instance/i-0b662ef9931388ba0"],"detail":{"instance-id":"i-0b662ef9931388ba0"}}`
	healthMsg      = `{"version":"0","id":"7bf73129-1428-4cd3-a780-95db273d1602","detail-type":"AWS Health Event","source":"aws.health","account":"123456789012","time":"2019-01-10T08:00:00Z","region":"us-east-1","resources":[],"detail":{"eventArn":"arn:aws:health:us-east-1::event/EC2/AWS_EC2_INSTANCE_STOP_SCHEDULED/1","service":"EC2","eventTypeCode":"AWS_EC2_INSTANCE_STOP_SCHEDULED","eventTypeCategory":"scheduledChange","startTime":"Sat, 05 Jun 2021 03:00:00 GMT","endTime":"Sat, 05 Jun 2021 07:00:00 GMT","eventDescription":[{"language":"en_US","latestDescription":"stop"}],"affectedEntities":[{"entityValue":"i-0b662ef9931388ba0"},{"entityValue":"i-05fbd2c73ab4e7b6e"},{"entityValue":"i-0b662ef9931388ba0"}]}}`
	stoppingMsg    = `{"version":"0","id":"7bf73129-1428-4cd3-a780-95db273d1602","detail-type":"EC2 Instance State-change Notification","source":"aws.ec2","account":"123456789012","time":"2015-11-11T21:29:54Z","region":"us-east-1","resources":["arn:aws:ec2:us-east-1:123456789012:instance/i-abcd1111"],"detail":{"instance-id":"i-abcd1111","state":"stopping"}}`
	reservationMsg = `{"version":"0","id":"9a1b","detail-type":"EC2 Capacity Reservation Instance Interruption Warning","source":"aws.ec2","account":"123456789012","time":"2025-01-01T00:00:00Z","region":"us-west-2","resources":[],"detail":{"instance-id":"i-0123456789abcdef0","instance-action":"terminate","capacity-reservation-id":"cr-0123456789abcdef0"}}`
)

func stateMsg(state string) string {
	return `{"version":"0","id":"x","detail-type":"EC2 Instance State-change Notification","source":"aws.ec2","account":"1","time":"2015-11-11T21:29:54Z","region":"us-east-1","detail":{"instance-id":"i-abcd1111","state":"` + state + `"}}`
}

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		body string
		want Event
	}{
		{"spot", spotMsg, Event{
			Kind: KindSpotInterrupted, ID: "1e5527d7-bb36-4607-3370-4164db56a40e", Source: SourceEC2, DetailType: DetailTypeSpotInterruption,
			Account: "123456789012", Region: "us-east-1", Time: time.Unix(0, 0).UTC(),
			InstanceIDs: []string{"i-0b662ef9931388ba0"}, InstanceAction: "terminate",
		}},
		{"rebalance", rebalanceMsg, Event{
			Kind: KindRebalanceRecommendation, ID: "5d5555d5-dd55-5555-5555-5555dd55d55d", Source: SourceEC2, DetailType: DetailTypeRebalanceRecommendation,
			Account: "123456789012", Region: "us-east-1", Time: time.Date(2020, 10, 26, 14, 14, 14, 0, time.UTC),
			InstanceIDs: []string{"i-0b662ef9931388ba0"},
		}},
		{"scheduled change", healthMsg, Event{
			Kind: KindScheduledChange, ID: "7bf73129-1428-4cd3-a780-95db273d1602", Source: SourceHealth, DetailType: DetailTypeHealth,
			Account: "123456789012", Region: "us-east-1", Time: time.Date(2019, 1, 10, 8, 0, 0, 0, time.UTC),
			InstanceIDs:   []string{"i-0b662ef9931388ba0", "i-05fbd2c73ab4e7b6e"},
			EventARN:      "arn:aws:health:us-east-1::event/EC2/AWS_EC2_INSTANCE_STOP_SCHEDULED/1",
			EventTypeCode: "AWS_EC2_INSTANCE_STOP_SCHEDULED",
			StartTime:     time.Date(2021, 6, 5, 3, 0, 0, 0, time.UTC), EndTime: time.Date(2021, 6, 5, 7, 0, 0, 0, time.UTC),
		}},
		{"stopping", stoppingMsg, Event{
			Kind: KindInstanceStopped, ID: "7bf73129-1428-4cd3-a780-95db273d1602", Source: SourceEC2, DetailType: DetailTypeStateChange,
			Account: "123456789012", Region: "us-east-1", Time: time.Date(2015, 11, 11, 21, 29, 54, 0, time.UTC),
			InstanceIDs: []string{"i-abcd1111"}, State: "stopping",
		}},
		{"capacity reservation", reservationMsg, Event{
			Kind: KindCapacityReservationInterrupted, ID: "9a1b", Source: SourceEC2, DetailType: DetailTypeCapacityReservationInterrupted,
			Account: "123456789012", Region: "us-west-2", Time: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC),
			InstanceIDs: []string{"i-0123456789abcdef0"}, InstanceAction: "terminate", CapacityReservationID: "cr-0123456789abcdef0",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.body)
			if err != nil {
				t.Fatal(err)
			}
			if got.Time.Equal(tt.want.Time) {
				got.Time = tt.want.Time
			}
			if got.StartTime.Equal(tt.want.StartTime) && got.EndTime.Equal(tt.want.EndTime) {
				got.StartTime, got.EndTime = tt.want.StartTime, tt.want.EndTime
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

func TestParseStates(t *testing.T) {
	tests := []struct {
		state string
		kind  Kind
		err   error
	}{
		{"stopping", KindInstanceStopped, nil},
		{"stopped", KindInstanceStopped, nil},
		{"shutting-down", KindInstanceTerminated, nil},
		{"terminated", KindInstanceTerminated, nil},
		{"running", "", ErrIgnored},
		{"pending", "", ErrIgnored},
		{"", "", ErrMalformed},
	}
	for _, tt := range tests {
		got, err := Parse(stateMsg(tt.state))
		if !errors.Is(err, tt.err) || (err == nil) != (tt.err == nil) {
			t.Errorf("state %q: err = %v, want %v", tt.state, err, tt.err)
		}
		if got.Kind != tt.kind {
			t.Errorf("state %q: kind = %q, want %q", tt.state, got.Kind, tt.kind)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		body string
		want error
	}{
		{"empty", "", ErrMalformed},
		{"not json", "hello", ErrMalformed},
		{"json array", "[1,2]", ErrMalformed},
		{"empty object", "{}", ErrUnknownEvent},
		{"other version", `{"version":"1","source":"aws.ec2","detail-type":"EC2 Spot Instance Interruption Warning","detail":{"instance-id":"i-0b662ef9931388ba0"}}`, ErrUnknownEvent},
		{"s3 notification", `{"Records":[{"eventSource":"aws:s3"}]}`, ErrUnknownEvent},
		{"other source", `{"version":"0","source":"aws.autoscaling","detail-type":"EC2 Instance Launch Successful","detail":{}}`, ErrUnknownEvent},
		{"other detail type", `{"version":"0","source":"aws.ec2","detail-type":"EBS Snapshot Notification","detail":{}}`, ErrUnknownEvent},
		{"no detail", `{"version":"0","source":"aws.ec2","detail-type":"EC2 Spot Instance Interruption Warning"}`, ErrMalformed},
		{"detail not object", `{"version":"0","source":"aws.ec2","detail-type":"EC2 Spot Instance Interruption Warning","detail":"x"}`, ErrMalformed},
		{"no instance id", `{"version":"0","source":"aws.ec2","detail-type":"EC2 Instance Rebalance Recommendation","detail":{}}`, ErrMalformed},
		{"bad instance id", `{"version":"0","source":"aws.ec2","detail-type":"EC2 Instance Rebalance Recommendation","detail":{"instance-id":"vol-123"}}`, ErrMalformed},
		{"bad time", `{"version":"0","source":"aws.ec2","time":"yesterday","detail-type":"EC2 Instance Rebalance Recommendation","detail":{"instance-id":"i-0b662ef9931388ba0"}}`, ErrMalformed},
		{"health other service", `{"version":"0","source":"aws.health","detail-type":"AWS Health Event","detail":{"service":"RDS","eventTypeCategory":"scheduledChange","affectedEntities":[{"entityValue":"i-0b662ef9931388ba0"}]}}`, ErrIgnored},
		{"health issue", `{"version":"0","source":"aws.health","detail-type":"AWS Health Event","detail":{"service":"EC2","eventTypeCategory":"issue","affectedEntities":[{"entityValue":"i-0b662ef9931388ba0"}]}}`, ErrIgnored},
		{"health no instances", `{"version":"0","source":"aws.health","detail-type":"AWS Health Event","detail":{"service":"EC2","eventTypeCategory":"scheduledChange","affectedEntities":[{"entityValue":"vol-1"}]}}`, ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.body)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{spotMsg, rebalanceMsg, healthMsg, stoppingMsg, reservationMsg, stateMsg("running"), "", "{}", "null", `{"version":"0","detail":null}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		ev, err := Parse(body)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnknownEvent) && !errors.Is(err, ErrIgnored) {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		if ev.Kind == "" || len(ev.InstanceIDs) == 0 {
			t.Fatalf("event without kind or instances: %+v", ev)
		}
	})
}

// healthEventNaming returns an AWS Health scheduled change naming n distinct
// instances, each twice.
func healthEventNaming(n int) (string, []string) {
	var entities []string
	var ids []string
	for i := range n {
		id := fmt.Sprintf("i-%017x", i+1)
		ids = append(ids, id)
		entities = append(entities, fmt.Sprintf(`{"entityValue":%q}`, id))
	}
	entities = append(entities, entities...)
	body := `{"version":"0","id":"big","detail-type":"AWS Health Event","source":"aws.health","account":"123456789012","time":"2019-01-10T08:00:00Z","region":"us-east-1",` +
		`"detail":{"service":"EC2","eventTypeCategory":"scheduledChange","eventTypeCode":"AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED","affectedEntities":[` + strings.Join(entities, ",") + `]}}`
	return body, ids
}

// An event naming ten thousand instances, each twice, lists each once, in
// message order.
func TestParseManyInstances(t *testing.T) {
	body, want := healthEventNaming(10000)
	ev, err := Parse(body)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ev.InstanceIDs, want) {
		t.Errorf("got %d instance IDs, want the %d distinct ones in order", len(ev.InstanceIDs), len(want))
	}
}

// BenchmarkParseHealth10000 measures a Health event naming 10,000 instances
// (each twice): de-duplication is linear in their number.
func BenchmarkParseHealth10000(b *testing.B) {
	body, _ := healthEventNaming(10000)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(body); err != nil {
			b.Fatal(err)
		}
	}
}
