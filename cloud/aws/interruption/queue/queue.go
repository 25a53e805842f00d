// Package queue consumes the interruption queue: the SQS queue to which
// EventBridge delivers spot interruption warnings, rebalance recommendations,
// AWS Health scheduled changes, instance state changes and capacity
// reservation interruption warnings.
//
// Each Poll receives up to ten messages, parses them with package
// interruption, finds the NodeClaim of every instance a message names and
// hands one Action per NodeClaim to the handler. A message is deleted once it
// needs nothing more: when every action succeeded, and also when the message
// is malformed, of an unknown kind, needs no action, or names no instance of
// this cluster (leaving those in the queue would only deliver them again). A
// message whose handler failed stays in the queue and comes back after its
// visibility timeout, so handlers must be idempotent.
//
// Messages about instances the cluster does not own are consumed and counted:
// the queue is meant to serve one cluster. So are messages of another account
// or region than the controller's, whatever instances they name.
//
// StatusPoller covers what EventBridge does not deliver: instances whose EC2
// instance or system status check fails, found with DescribeInstanceStatus
// and handed to the same handler.
package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/interruption"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/sdk"
)

// ErrNoQueue is returned by New when no queue is configured. Interruption
// handling is then off; callers should surface this rather than fail, since
// everything else works without it.
var ErrNoQueue = errors.New("interruption handling is off: no interruption queue is configured; " +
	"set --interruption-queue (INTERRUPTION_QUEUE) to the name of the SQS queue that receives the EC2 and AWS Health events, " +
	"otherwise spot interruptions and scheduled maintenance take nodes away without draining them first")

// Defaults of Config.
const (
	// DefaultWaitTime is how long ReceiveMessage long-polls.
	DefaultWaitTime = 20 * time.Second
	// DefaultVisibilityTimeout is how long a received message stays hidden
	// before it is delivered again if it was not deleted.
	DefaultVisibilityTimeout = 20 * time.Second
	// MaxMessages is the most messages one Poll receives (SQS's limit).
	MaxMessages = 10
)

// Values of the message_type label besides the event kinds of package
// interruption.
const (
	MessageTypeMalformed = "malformed"
	MessageTypeUnknown   = "unknown"
	MessageTypeIgnored   = "ignored"
	// MessageTypeForeign is an event of another account or region than the
	// controller's (Config.Account, Config.Region): an EventBridge rule
	// that forwards another's events, or a queue shared by mistake.
	MessageTypeForeign = "foreign"
)

// Action is one interrupted NodeClaim.
type Action struct {
	// Event is the parsed message. An event may name several instances;
	// each of this cluster's gets its own Action.
	Event interruption.Event
	// InstanceID is the instance of NodeClaim that Event names.
	InstanceID string
	// NodeClaim is the name of the NodeClaim that owns InstanceID.
	NodeClaim string
}

// Config configures a Consumer.
type Config struct {
	// QueueName is the name (not the URL or ARN) of the queue. Empty means
	// interruption handling is off: New returns ErrNoQueue.
	QueueName string
	// SQS is the queue's client.
	SQS sdk.SQS
	// NodeClaimFor returns the NodeClaim that owns an instance, if any.
	NodeClaimFor func(instanceID string) (nodeClaim string, ok bool)
	// Handle acts on an interrupted NodeClaim. An error keeps the message
	// in the queue for redelivery.
	Handle func(ctx context.Context, a Action) error
	// Registerer receives the consumer's metrics; nil registers nothing.
	Registerer prometheus.Registerer
	// Clock measures how long messages waited in the queue. Default: the
	// real clock.
	Clock clock.PassiveClock
	// Account and Region are the controller's AWS account and region. A
	// message whose envelope names another is deleted without action and
	// counted as MessageTypeForeign: its instances cannot be this
	// controller's, whatever their IDs. Empty skips that check.
	Account string
	Region  string
	// WaitTime and VisibilityTimeout of ReceiveMessage; zero takes the
	// defaults above.
	WaitTime          time.Duration
	VisibilityTimeout time.Duration
}

// Consumer polls the interruption queue. Poll is not safe for concurrent use.
type Consumer struct {
	cfg      Config
	url      string
	received *prometheus.CounterVec
	deleted  prometheus.Counter
	unowned  *prometheus.CounterVec
	queued   prometheus.Histogram
}

// New returns a consumer of the queue, or ErrNoQueue when cfg names none. It
// makes no AWS call; the queue URL is looked up by the first Poll.
func New(cfg Config) (*Consumer, error) {
	if cfg.QueueName == "" {
		return nil, ErrNoQueue
	}
	switch {
	case cfg.SQS == nil:
		return nil, errors.New("interruption queue consumer: no SQS client")
	case cfg.NodeClaimFor == nil:
		return nil, errors.New("interruption queue consumer: no NodeClaimFor lookup")
	case cfg.Handle == nil:
		return nil, errors.New("interruption queue consumer: no Handle function")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.WaitTime <= 0 {
		cfg.WaitTime = DefaultWaitTime
	}
	if cfg.VisibilityTimeout <= 0 {
		cfg.VisibilityTimeout = DefaultVisibilityTimeout
	}
	c := &Consumer{
		cfg:      cfg,
		received: newReceived(),
		deleted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "karpenter_interruption_deleted_messages_total",
			Help: "Count of messages deleted from the interruption queue.",
		}),
		unowned: newUnowned(),
		queued: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "karpenter_interruption_message_queue_duration_seconds",
			Help:    "Time an interruption message spent in the queue before it was processed.",
			Buckets: []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600},
		}),
	}
	if cfg.Registerer != nil {
		var err error
		if c.received, err = register(cfg.Registerer, c.received); err != nil {
			return nil, err
		}
		if c.deleted, err = register(cfg.Registerer, c.deleted); err != nil {
			return nil, err
		}
		if c.unowned, err = register(cfg.Registerer, c.unowned); err != nil {
			return nil, err
		}
		if c.queued, err = register(cfg.Registerer, c.queued); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// newReceived and newUnowned build the message counters that the queue
// consumer and the status poller share.
func newReceived() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "karpenter_interruption_received_messages_total",
		Help: "Count of messages received from the interruption queue, by message type (an event kind, or malformed, unknown or ignored); failed instance status checks count as instance_status and system_status.",
	}, []string{"message_type"})
}

func newUnowned() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "stevedore_interruption_unowned_messages_total",
		Help: "Count of interruption messages that named no instance of this cluster, by message type. A steady rate means another cluster shares the queue.",
	}, []string{"message_type"})
}

// register registers m, or returns the collector already registered under
// its name, so that a restarted consumer keeps counting where it left off.
func register[M prometheus.Collector](r prometheus.Registerer, m M) (M, error) {
	if err := r.Register(m); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(M); ok {
				return existing, nil
			}
		}
		return m, fmt.Errorf("registering interruption metrics: %w", err)
	}
	return m, nil
}

// Poll receives up to MaxMessages messages and processes them. It returns how
// many it consumed (deleted), and the errors of handlers, deletions and the
// receive call joined together. A receive error ends the poll; a handler or
// delete error affects only its message.
func (c *Consumer) Poll(ctx context.Context) (handled int, err error) {
	url, err := c.queueURL(ctx)
	if err != nil {
		return 0, err
	}
	out, err := c.cfg.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(url),
		MaxNumberOfMessages:         MaxMessages,
		WaitTimeSeconds:             int32(c.cfg.WaitTime / time.Second),
		VisibilityTimeout:           int32(c.cfg.VisibilityTimeout / time.Second),
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameSentTimestamp},
	})
	if err != nil {
		return 0, fmt.Errorf("receiving from interruption queue %s: %w", c.cfg.QueueName, err)
	}
	var errs []error
	for _, m := range out.Messages {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		if err := c.process(ctx, m); err != nil {
			errs = append(errs, err)
			continue
		}
		if _, err := c.cfg.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
			errs = append(errs, fmt.Errorf("deleting message %s from interruption queue %s: %w", aws.ToString(m.MessageId), c.cfg.QueueName, err))
			continue
		}
		c.deleted.Inc()
		handled++
	}
	return handled, errors.Join(errs...)
}

// queueURL resolves the queue's URL once.
func (c *Consumer) queueURL(ctx context.Context) (string, error) {
	if c.url != "" {
		return c.url, nil
	}
	out, err := c.cfg.SQS.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(c.cfg.QueueName)})
	if err != nil {
		var missing *sqstypes.QueueDoesNotExist
		if errors.As(err, &missing) {
			return "", fmt.Errorf("interruption queue %q does not exist in this account and region; create it (with the EventBridge rules that feed it) or fix --interruption-queue: %w", c.cfg.QueueName, err)
		}
		return "", fmt.Errorf("looking up interruption queue %q: %w", c.cfg.QueueName, err)
	}
	c.url = aws.ToString(out.QueueUrl)
	return c.url, nil
}

// process handles one message. A nil error means the message can be deleted.
func (c *Consumer) process(ctx context.Context, m sqstypes.Message) error {
	c.observeQueueTime(m)
	ev, err := interruption.Parse(aws.ToString(m.Body))
	if err != nil {
		switch {
		case errors.Is(err, interruption.ErrIgnored):
			c.received.WithLabelValues(MessageTypeIgnored).Inc()
		case errors.Is(err, interruption.ErrUnknownEvent):
			c.received.WithLabelValues(MessageTypeUnknown).Inc()
		default:
			c.received.WithLabelValues(MessageTypeMalformed).Inc()
		}
		return nil
	}
	if otherThan(c.cfg.Account, ev.Account) || otherThan(c.cfg.Region, ev.Region) {
		c.received.WithLabelValues(MessageTypeForeign).Inc()
		return nil
	}
	c.received.WithLabelValues(string(ev.Kind)).Inc()
	var actions []Action
	for _, id := range ev.InstanceIDs {
		if name, ok := c.cfg.NodeClaimFor(id); ok {
			actions = append(actions, Action{Event: ev, InstanceID: id, NodeClaim: name})
		}
	}
	if len(actions) == 0 {
		c.unowned.WithLabelValues(string(ev.Kind)).Inc()
		return nil
	}
	var errs []error
	for _, a := range actions {
		if err := c.handle(ctx, a); err != nil {
			errs = append(errs, fmt.Errorf("handling %s of instance %s (NodeClaim %s), message %s: %w",
				a.Event.Kind, a.InstanceID, a.NodeClaim, aws.ToString(m.MessageId), err))
		}
	}
	return errors.Join(errs...)
}

// otherThan reports whether a message's account or region differs from the
// controller's; an empty value on either side is not checked.
func otherThan(ours, theirs string) bool {
	return ours != "" && theirs != "" && ours != theirs
}

// handle calls the handler, turning a panic into an error so that one bad
// message cannot stop the consumer.
func (c *Consumer) handle(ctx context.Context, a Action) error {
	return callHandler(ctx, c.cfg.Handle, a)
}

func callHandler(ctx context.Context, h func(context.Context, Action) error, a Action) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("handler panicked: %v", r)
		}
	}()
	return h(ctx, a)
}

func (c *Consumer) observeQueueTime(m sqstypes.Message) {
	ms, err := strconv.ParseInt(m.Attributes[string(sqstypes.MessageSystemAttributeNameSentTimestamp)], 10, 64)
	if err != nil {
		return
	}
	if d := c.cfg.Clock.Since(time.UnixMilli(ms)); d >= 0 {
		c.queued.Observe(d.Seconds())
	}
}
