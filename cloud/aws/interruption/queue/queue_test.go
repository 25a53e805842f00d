package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/interruption"
)

const (
	queueName = "my-cluster"
	ours      = "i-0aaaaaaaaaaaaaaa1"
	ours2     = "i-0aaaaaaaaaaaaaaa2"
	foreign   = "i-0bbbbbbbbbbbbbbb1"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

type harness struct {
	aws      *fake.AWS
	clk      *clocktesting.FakeClock
	reg      *prometheus.Registry
	consumer *Consumer
	actions  []Action
	fail     error
	panics   bool
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	clk := clocktesting.NewFakeClock(t0)
	h := &harness{aws: fake.New(fake.Options{Seed: 7, Clock: clk}), clk: clk, reg: prometheus.NewRegistry()}
	h.aws.CreateQueue(queueName, 300*time.Second)
	claims := map[string]string{ours: "default-abcde", ours2: "default-fghij"}
	c, err := New(Config{
		QueueName: queueName,
		SQS:       h.aws,
		NodeClaimFor: func(id string) (string, bool) {
			name, ok := claims[id]
			return name, ok
		},
		Handle: func(_ context.Context, a Action) error {
			if h.panics {
				panic("boom")
			}
			if h.fail != nil {
				return h.fail
			}
			h.actions = append(h.actions, a)
			return nil
		},
		Registerer: h.reg,
		Clock:      clk,
		Account:    h.aws.AccountID(),
		Region:     h.aws.Region(),
	})
	if err != nil {
		t.Fatal(err)
	}
	h.consumer = c
	return h
}

// metric returns the value of a counter, or the sample count of a histogram.
func (h *harness) metric(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	families, err := h.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, fam := range families {
		if fam.GetName() != name {
			continue
		}
		for _, m := range fam.GetMetric() {
			var got []string
			for _, l := range m.GetLabel() {
				got = append(got, l.GetName(), l.GetValue())
			}
			if !slices.Equal(got, labels) {
				continue
			}
			if m.Histogram != nil {
				return float64(m.GetHistogram().GetSampleCount())
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// spotBody is a spot interruption warning of the given account and region.
func spotBody(account, region, instanceID string) string {
	return fmt.Sprintf(`{"version":"0","id":"s-1","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","account":%q,"time":"2025-03-01T12:00:00Z","region":%q,"resources":[],"detail":{"instance-id":%q,"instance-action":"terminate"}}`,
		account, region, instanceID)
}

func TestPollEvents(t *testing.T) {
	tests := []struct {
		name        string
		send        func(f *fake.AWS) error
		wantKind    interruption.Kind
		wantClaims  []string
		messageType string
		unowned     bool
	}{
		{
			name:     "spot interruption warning",
			send:     func(f *fake.AWS) error { return f.SendSpotInterruptionWarning(queueName, ours) },
			wantKind: interruption.KindSpotInterrupted, wantClaims: []string{"default-abcde"},
			messageType: string(interruption.KindSpotInterrupted),
		},
		{
			name:     "rebalance recommendation",
			send:     func(f *fake.AWS) error { return f.SendRebalanceRecommendation(queueName, ours) },
			wantKind: interruption.KindRebalanceRecommendation, wantClaims: []string{"default-abcde"},
			messageType: string(interruption.KindRebalanceRecommendation),
		},
		{
			name: "scheduled change names ours and a foreign instance",
			send: func(f *fake.AWS) error {
				return f.SendScheduledChange(queueName, []string{ours, foreign, ours2}, "", t0.Add(time.Hour), t0.Add(2*time.Hour))
			},
			wantKind: interruption.KindScheduledChange, wantClaims: []string{"default-abcde", "default-fghij"},
			messageType: string(interruption.KindScheduledChange),
		},
		{
			name:     "instance stopping",
			send:     func(f *fake.AWS) error { return f.SendStateChange(queueName, ours, "stopping") },
			wantKind: interruption.KindInstanceStopped, wantClaims: []string{"default-abcde"},
			messageType: string(interruption.KindInstanceStopped),
		},
		{
			name:     "instance terminated",
			send:     func(f *fake.AWS) error { return f.SendStateChange(queueName, ours, "terminated") },
			wantKind: interruption.KindInstanceTerminated, wantClaims: []string{"default-abcde"},
			messageType: string(interruption.KindInstanceTerminated),
		},
		{
			name:     "capacity reservation interruption",
			send:     func(f *fake.AWS) error { return f.SendCapacityReservationInterruption(queueName, ours) },
			wantKind: interruption.KindCapacityReservationInterrupted, wantClaims: []string{"default-abcde"},
			messageType: string(interruption.KindCapacityReservationInterrupted),
		},
		{
			name:        "state change to running needs no action",
			send:        func(f *fake.AWS) error { return f.SendStateChange(queueName, ours, "running") },
			messageType: MessageTypeIgnored,
		},
		{
			name:        "malformed body",
			send:        func(f *fake.AWS) error { return f.SendMessageBody(queueName, `{"version":"0","source":"aws.ec2",`) },
			messageType: MessageTypeMalformed,
		},
		{
			name: "event from a source the queue is not meant for",
			send: func(f *fake.AWS) error {
				return f.SendMessageBody(queueName, `{"version":"0","id":"x","detail-type":"Object Created","source":"aws.s3","account":"123456789012","time":"2025-03-01T12:00:00Z","region":"us-east-1","resources":[],"detail":{}}`)
			},
			messageType: MessageTypeUnknown,
		},
		{
			name: "spot interruption of our instance ID, from another account",
			send: func(f *fake.AWS) error {
				return f.SendMessageBody(queueName, spotBody("999999999999", "us-east-1", ours))
			},
			messageType: MessageTypeForeign,
		},
		{
			name: "spot interruption of our instance ID, from another region",
			send: func(f *fake.AWS) error {
				return f.SendMessageBody(queueName, spotBody("123456789012", "eu-west-1", ours))
			},
			messageType: MessageTypeForeign,
		},
		{
			name:     "spot interruption whose envelope names no account or region",
			send:     func(f *fake.AWS) error { return f.SendMessageBody(queueName, spotBody("", "", ours)) },
			wantKind: interruption.KindSpotInterrupted, wantClaims: []string{"default-abcde"},
			messageType: string(interruption.KindSpotInterrupted),
		},
		{
			name:        "spot interruption of an instance this cluster does not own",
			send:        func(f *fake.AWS) error { return f.SendSpotInterruptionWarning(queueName, foreign) },
			messageType: string(interruption.KindSpotInterrupted),
			unowned:     true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			if err := tt.send(h.aws); err != nil {
				t.Fatal(err)
			}
			h.clk.Step(3 * time.Second)
			n, err := h.consumer.Poll(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if n != 1 {
				t.Fatalf("Poll handled %d messages, want 1", n)
			}
			var claims []string
			for _, a := range h.actions {
				if a.Event.Kind != tt.wantKind {
					t.Errorf("action kind %s, want %s", a.Event.Kind, tt.wantKind)
				}
				if a.InstanceID == "" || a.InstanceID == foreign {
					t.Errorf("action for instance %q", a.InstanceID)
				}
				claims = append(claims, a.NodeClaim)
			}
			if !slices.Equal(claims, tt.wantClaims) {
				t.Fatalf("handled NodeClaims %v, want %v", claims, tt.wantClaims)
			}
			if left := h.aws.QueueMessages(queueName); left != 0 {
				t.Fatalf("%d messages left in the queue, want the message deleted", left)
			}
			if got := h.metric(t, "karpenter_interruption_received_messages_total", "message_type", tt.messageType); got != 1 {
				t.Errorf("received{message_type=%s} = %v, want 1", tt.messageType, got)
			}
			if got := h.metric(t, "karpenter_interruption_deleted_messages_total"); got != 1 {
				t.Errorf("deleted = %v, want 1", got)
			}
			if got := h.metric(t, "karpenter_interruption_message_queue_duration_seconds"); got != 1 {
				t.Errorf("queue duration observations = %v, want 1", got)
			}
			wantUnowned := 0.0
			if tt.unowned {
				wantUnowned = 1
			}
			if got := h.metric(t, "stevedore_interruption_unowned_messages_total", "message_type", tt.messageType); got != wantUnowned {
				t.Errorf("unowned{message_type=%s} = %v, want %v", tt.messageType, got, wantUnowned)
			}
		})
	}
}

func TestPollHandlerFailureKeepsMessage(t *testing.T) {
	for _, panics := range []bool{false, true} {
		name := "error"
		if panics {
			name = "panic"
		}
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			if err := h.aws.SendSpotInterruptionWarning(queueName, ours); err != nil {
				t.Fatal(err)
			}
			if err := h.aws.SendRebalanceRecommendation(queueName, foreign); err != nil {
				t.Fatal(err)
			}
			h.fail, h.panics = errors.New("apiserver unavailable"), panics
			n, err := h.consumer.Poll(context.Background())
			if err == nil {
				t.Fatal("Poll hid the handler's failure")
			}
			if !strings.Contains(err.Error(), "default-abcde") {
				t.Errorf("error %q does not name the NodeClaim", err)
			}
			// The foreign message is consumed; the failed one stays.
			if n != 1 || h.aws.QueueMessages(queueName) != 1 {
				t.Fatalf("handled %d, %d left; want 1 handled and the failed message kept", n, h.aws.QueueMessages(queueName))
			}
			// After the visibility timeout it comes back and succeeds.
			h.fail, h.panics = nil, false
			h.clk.Step(DefaultVisibilityTimeout + time.Second)
			n, err = h.consumer.Poll(context.Background())
			if err != nil || n != 1 || len(h.actions) != 1 {
				t.Fatalf("redelivery: handled %d, actions %v, err %v", n, h.actions, err)
			}
			if h.aws.QueueMessages(queueName) != 0 {
				t.Fatal("redelivered message not deleted")
			}
		})
	}
}

func TestPollBatchAndQueueURLOnce(t *testing.T) {
	h := newHarness(t)
	for range 12 {
		if err := h.aws.SendSpotInterruptionWarning(queueName, ours); err != nil {
			t.Fatal(err)
		}
	}
	n, err := h.consumer.Poll(context.Background())
	if err != nil || n != MaxMessages {
		t.Fatalf("first poll handled %d (err %v), want %d", n, err, MaxMessages)
	}
	n, err = h.consumer.Poll(context.Background())
	if err != nil || n != 2 {
		t.Fatalf("second poll handled %d (err %v), want 2", n, err)
	}
	n, err = h.consumer.Poll(context.Background())
	if err != nil || n != 0 {
		t.Fatalf("empty poll handled %d (err %v)", n, err)
	}
	if got := h.aws.Calls("GetQueueUrl"); got != 1 {
		t.Fatalf("GetQueueUrl called %d times, want once", got)
	}
}

func TestPollErrors(t *testing.T) {
	tests := []struct {
		name    string
		breakIt func(f *fake.AWS)
		want    string
	}{
		{name: "queue missing", breakIt: func(f *fake.AWS) { f.DeleteQueue(queueName) }, want: "does not exist"},
		{name: "GetQueueUrl denied", breakIt: func(f *fake.AWS) { f.DenyAction("sqs:GetQueueUrl") }, want: "AccessDenied"},
		{name: "ReceiveMessage throttled", breakIt: func(f *fake.AWS) { f.Throttle("ReceiveMessage", 1) }, want: "receiving"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			if err := h.aws.SendSpotInterruptionWarning(queueName, ours); err != nil {
				t.Fatal(err)
			}
			tt.breakIt(h.aws)
			n, err := h.consumer.Poll(context.Background())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Poll error %v, want one containing %q", err, tt.want)
			}
			if n != 0 || len(h.actions) != 0 {
				t.Fatalf("handled %d, actions %v after a failed poll", n, h.actions)
			}
		})
	}
}

func TestPollDeleteFailure(t *testing.T) {
	h := newHarness(t)
	if err := h.aws.SendSpotInterruptionWarning(queueName, ours); err != nil {
		t.Fatal(err)
	}
	h.aws.Throttle("DeleteMessage", 1)
	n, err := h.consumer.Poll(context.Background())
	if err == nil || n != 0 {
		t.Fatalf("handled %d, err %v; want the delete failure reported", n, err)
	}
	if h.aws.QueueMessages(queueName) != 1 {
		t.Fatal("message lost although its delete failed")
	}
}

func TestNew(t *testing.T) {
	f := fake.New(fake.Options{Seed: 1})
	ok := func(string) (string, bool) { return "", false }
	handle := func(context.Context, Action) error { return nil }
	if _, err := New(Config{SQS: f, NodeClaimFor: ok, Handle: handle}); !errors.Is(err, ErrNoQueue) {
		t.Fatalf("New without a queue: %v, want ErrNoQueue", err)
	}
	for _, cfg := range []Config{
		{QueueName: "q", NodeClaimFor: ok, Handle: handle},
		{QueueName: "q", SQS: f, Handle: handle},
		{QueueName: "q", SQS: f, NodeClaimFor: ok},
	} {
		if _, err := New(cfg); err == nil || errors.Is(err, ErrNoQueue) {
			t.Errorf("New(%+v) = %v, want a configuration error", cfg, err)
		}
	}
	// Two consumers on one registry share the metrics.
	reg := prometheus.NewRegistry()
	for range 2 {
		if _, err := New(Config{QueueName: "q", SQS: f, NodeClaimFor: ok, Handle: handle, Registerer: reg}); err != nil {
			t.Fatal(err)
		}
	}
}
