package queue

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/prometheus/client_golang/prometheus"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/interruption"
)

// statusStub answers DescribeInstanceStatus with statuses, whatever the
// filters, so that every instance comes back from both calls of a poll.
type statusStub struct {
	statuses []ec2types.InstanceStatus
	err      error
	calls    int
}

func (s *statusStub) DescribeInstanceStatus(context.Context, *ec2.DescribeInstanceStatusInput, ...func(*ec2.Options)) (*ec2.DescribeInstanceStatusOutput, error) {
	s.calls++
	if s.err != nil {
		return nil, s.err
	}
	return &ec2.DescribeInstanceStatusOutput{InstanceStatuses: s.statuses}, nil
}

func impaired(id string, since time.Time, system bool) ec2types.InstanceStatus {
	bad := &ec2types.InstanceStatusSummary{Status: ec2types.SummaryStatusImpaired,
		Details: []ec2types.InstanceStatusDetails{{Name: ec2types.StatusNameReachability, Status: ec2types.StatusTypeFailed, ImpairedSince: aws.Time(since)}}}
	good := &ec2types.InstanceStatusSummary{Status: ec2types.SummaryStatusOk}
	s := ec2types.InstanceStatus{InstanceId: aws.String(id), InstanceStatus: bad, SystemStatus: good}
	if system {
		s.InstanceStatus, s.SystemStatus = good, bad
	}
	return s
}

func TestStatusPoller(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	reg := prometheus.NewRegistry()
	h := &harness{reg: reg}
	stub := &statusStub{statuses: []ec2types.InstanceStatus{
		impaired(ours, t0.Add(-3*time.Minute), true),
		impaired(ours2, t0.Add(-time.Minute), false), // not failed long enough yet
		impaired(foreign, t0.Add(-5*time.Minute), false),
		{InstanceId: aws.String("node-1"), InstanceStatus: &ec2types.InstanceStatusSummary{Status: ec2types.SummaryStatusImpaired}},
	}}
	claims := map[string]string{ours: "default-abcde", ours2: "default-fghij"}
	p, err := NewStatusPoller(StatusConfig{
		EC2:          stub,
		NodeClaimFor: func(id string) (string, bool) { n, ok := claims[id]; return n, ok },
		Handle:       func(_ context.Context, a Action) error { h.actions = append(h.actions, a); return nil },
		Registerer:   reg,
		Clock:        clk,
	})
	if err != nil {
		t.Fatal(err)
	}
	// The queue consumer shares the counters.
	if _, err := New(Config{QueueName: queueName, SQS: fake.New(fake.Options{Clock: clk}), NodeClaimFor: func(string) (string, bool) { return "", false },
		Handle: func(context.Context, Action) error { return nil }, Registerer: reg}); err != nil {
		t.Fatalf("queue consumer beside the status poller: %v", err)
	}

	n, err := p.Poll(context.Background())
	if err != nil || n != 1 || stub.calls != 2 {
		t.Fatalf("Poll = %d, %v after %d calls; want 1 action after 2 calls", n, err, stub.calls)
	}
	a := h.actions[0]
	if a.NodeClaim != "default-abcde" || a.InstanceID != ours || a.Event.Kind != interruption.KindSystemStatus {
		t.Errorf("action %+v", a)
	}
	for _, c := range []struct {
		name, label string
		want        float64
	}{
		{"karpenter_interruption_received_messages_total", "system_status", 1},
		{"karpenter_interruption_received_messages_total", "instance_status", 1}, // the foreign one
		{"karpenter_interruption_received_messages_total", MessageTypeMalformed, 1},
		{"stevedore_interruption_unowned_messages_total", "instance_status", 1},
	} {
		if got := h.metric(t, c.name, "message_type", c.label); got != c.want {
			t.Errorf("%s{%s} = %v, want %v", c.name, c.label, got, c.want)
		}
	}

	// A minute later ours2 has failed for two minutes too. Ours is handed
	// over again (the handler is idempotent) but not counted again.
	clk.Step(time.Minute)
	h.actions = nil
	if n, err := p.Poll(context.Background()); err != nil || n != 2 {
		t.Fatalf("second Poll = %d, %v; want 2", n, err)
	}
	if got := h.metric(t, "karpenter_interruption_received_messages_total", "message_type", "system_status"); got != 1 {
		t.Errorf("system_status counted %v times, want once while it keeps failing", got)
	}
	if got := h.metric(t, "karpenter_interruption_received_messages_total", "message_type", "instance_status"); got != 2 {
		t.Errorf("instance_status = %v, want 2 (foreign, then ours2)", got)
	}

	stub.err = fake.APIError("UnauthorizedOperation", "You are not authorized to perform this operation.")
	if _, err := p.Poll(context.Background()); !errors.Is(err, ErrStatusDenied) {
		t.Errorf("denied Poll = %v, want ErrStatusDenied", err)
	}
}
