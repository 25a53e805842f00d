package interruption

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

func TestParseInstanceStatus(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	const id = "i-0123456789abcdef0"
	ok := &ec2types.InstanceStatusSummary{Status: ec2types.SummaryStatusOk,
		Details: []ec2types.InstanceStatusDetails{{Name: ec2types.StatusNameReachability, Status: ec2types.StatusTypePassed}}}
	failed := func(ago time.Duration) *ec2types.InstanceStatusSummary {
		return &ec2types.InstanceStatusSummary{Status: ec2types.SummaryStatusImpaired,
			Details: []ec2types.InstanceStatusDetails{{Name: ec2types.StatusNameReachability, Status: ec2types.StatusTypeFailed, ImpairedSince: aws.Time(now.Add(-ago))}}}
	}
	event := func(k Kind, ago time.Duration) Event {
		return Event{Kind: k, Source: SourceEC2, DetailType: "DescribeInstanceStatus", Time: now.Add(-ago), ImpairedSince: now.Add(-ago), InstanceIDs: []string{id}}
	}
	tests := []struct {
		name    string
		status  ec2types.InstanceStatus
		want    []Event
		wantErr error
	}{
		{"instance check failed 2m", ec2types.InstanceStatus{InstanceId: aws.String(id), InstanceStatus: failed(2 * time.Minute), SystemStatus: ok},
			[]Event{event(KindInstanceStatus, 2*time.Minute)}, nil},
		{"system check failed 5m", ec2types.InstanceStatus{InstanceId: aws.String(id), InstanceStatus: ok, SystemStatus: failed(5 * time.Minute)},
			[]Event{event(KindSystemStatus, 5*time.Minute)}, nil},
		{"both failed", ec2types.InstanceStatus{InstanceId: aws.String(id), InstanceStatus: failed(3 * time.Minute), SystemStatus: failed(4 * time.Minute)},
			[]Event{event(KindInstanceStatus, 3*time.Minute), event(KindSystemStatus, 4*time.Minute)}, nil},
		{"failed under the threshold", ec2types.InstanceStatus{InstanceId: aws.String(id), InstanceStatus: failed(119 * time.Second), SystemStatus: ok}, nil, ErrIgnored},
		{"healthy", ec2types.InstanceStatus{InstanceId: aws.String(id), InstanceStatus: ok, SystemStatus: ok}, nil, ErrIgnored},
		{"EBS only", ec2types.InstanceStatus{InstanceId: aws.String(id), AttachedEbsStatus: &ec2types.EbsStatusSummary{Status: ec2types.SummaryStatusImpaired}}, nil, ErrIgnored},
		{"no instance ID", ec2types.InstanceStatus{InstanceStatus: failed(time.Hour)}, nil, ErrMalformed},
		{"bad instance ID", ec2types.InstanceStatus{InstanceId: aws.String("node-1"), InstanceStatus: failed(time.Hour)}, nil, ErrMalformed},
		{"failed without a time", ec2types.InstanceStatus{InstanceId: aws.String(id), SystemStatus: &ec2types.InstanceStatusSummary{Status: ec2types.SummaryStatusImpaired,
			Details: []ec2types.InstanceStatusDetails{{Name: ec2types.StatusNameReachability, Status: ec2types.StatusTypeFailed}}}}, nil, ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseInstanceStatus(tt.status, now)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("error %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
