package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/interruption"
)

// DefaultStatusInterval is how often the status poller asks EC2 for failed
// status checks, as Karpenter does.
const DefaultStatusInterval = time.Minute

// ErrStatusDenied is returned by StatusPoller.Poll when the controller may
// not call ec2:DescribeInstanceStatus. The poller is then of no use until
// the permission is granted and the controller restarted.
var ErrStatusDenied = errors.New("instance status checks are off: ec2:DescribeInstanceStatus is not allowed; " +
	"add it to the controller's IAM policy and restart the controller to replace instances whose EC2 status checks fail")

// StatusDescriber is the EC2 call the status poller makes.
type StatusDescriber interface {
	DescribeInstanceStatus(ctx context.Context, in *ec2.DescribeInstanceStatusInput, optFns ...func(*ec2.Options)) (*ec2.DescribeInstanceStatusOutput, error)
}

// StatusConfig configures a StatusPoller.
type StatusConfig struct {
	// EC2 answers DescribeInstanceStatus.
	EC2 StatusDescriber
	// NodeClaimFor returns the NodeClaim that owns an instance, if any.
	NodeClaimFor func(instanceID string) (nodeClaim string, ok bool)
	// Handle acts on a NodeClaim whose instance failed a status check.
	Handle func(ctx context.Context, a Action) error
	// Registerer receives the metrics; nil registers nothing. The poller
	// counts into the queue consumer's karpenter_interruption_received_messages_total
	// and stevedore_interruption_unowned_messages_total.
	Registerer prometheus.Registerer
	// Clock says how long checks have failed. Default: the real clock.
	Clock clock.PassiveClock
}

// StatusPoller finds instances whose EC2 instance or system status check has
// failed for interruption.StatusCheckThreshold, as Karpenter's instance
// status controller does: EventBridge delivers no event for them, so they
// are polled from DescribeInstanceStatus rather than read from the queue.
// Every such instance of the cluster is handed to the handler on every
// poll until its NodeClaim is gone, so handlers must be idempotent; each
// (instance, check) is counted once while it keeps failing. Poll is not
// safe for concurrent use.
type StatusPoller struct {
	cfg      StatusConfig
	received *prometheus.CounterVec
	unowned  *prometheus.CounterVec
	// seen are the failures counted, kept while they last.
	seen map[statusKey]bool
}

type statusKey struct {
	instanceID string
	kind       interruption.Kind
}

// NewStatusPoller returns a poller of the instance status checks. It makes
// no AWS call.
func NewStatusPoller(cfg StatusConfig) (*StatusPoller, error) {
	switch {
	case cfg.EC2 == nil:
		return nil, errors.New("instance status poller: no EC2 client")
	case cfg.NodeClaimFor == nil:
		return nil, errors.New("instance status poller: no NodeClaimFor lookup")
	case cfg.Handle == nil:
		return nil, errors.New("instance status poller: no Handle function")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	p := &StatusPoller{cfg: cfg, received: newReceived(), unowned: newUnowned(), seen: map[statusKey]bool{}}
	if cfg.Registerer != nil {
		var err error
		if p.received, err = register(cfg.Registerer, p.received); err != nil {
			return nil, err
		}
		if p.unowned, err = register(cfg.Registerer, p.unowned); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// statusFilters are the questions one poll asks, one call each: EC2 ANDs
// the filters of one call, and an instance is of interest when either check
// is impaired.
var statusFilters = [][]ec2types.Filter{
	{{Name: aws.String("instance-status.status"), Values: []string{string(ec2types.SummaryStatusImpaired)}}},
	{{Name: aws.String("system-status.status"), Values: []string{string(ec2types.SummaryStatusImpaired)}}},
}

// Poll lists the instances with an impaired status check and hands an Action
// to the handler for each check of an instance of this cluster that has
// failed long enough. It returns how many actions were handled and the
// errors of the handlers joined together; a DescribeInstanceStatus error
// ends the poll, and one that denies the call wraps ErrStatusDenied.
func (p *StatusPoller) Poll(ctx context.Context) (handled int, err error) {
	statuses, err := p.describe(ctx)
	if err != nil {
		return 0, err
	}
	now := p.cfg.Clock.Now()
	current := map[statusKey]bool{}
	var errs []error
	for _, s := range statuses {
		events, err := interruption.ParseInstanceStatus(s, now)
		if err != nil {
			if errors.Is(err, interruption.ErrMalformed) {
				p.received.WithLabelValues(MessageTypeMalformed).Inc()
			}
			continue
		}
		for _, ev := range events {
			id := ev.InstanceIDs[0]
			key := statusKey{id, ev.Kind}
			current[key] = true
			first := !p.seen[key]
			p.seen[key] = true
			if first {
				p.received.WithLabelValues(string(ev.Kind)).Inc()
			}
			name, ok := p.cfg.NodeClaimFor(id)
			if !ok {
				if first {
					p.unowned.WithLabelValues(string(ev.Kind)).Inc()
				}
				continue
			}
			a := Action{Event: ev, InstanceID: id, NodeClaim: name}
			if err := callHandler(ctx, p.cfg.Handle, a); err != nil {
				errs = append(errs, fmt.Errorf("handling %s of instance %s (NodeClaim %s): %w", ev.Kind, id, name, err))
				continue
			}
			handled++
		}
	}
	// Forget the failures that are over, so that a check failing again is
	// counted again.
	for k := range p.seen {
		if !current[k] {
			delete(p.seen, k)
		}
	}
	return handled, errors.Join(errs...)
}

// describe lists the instances with an impaired check, each once, in the
// order EC2 answers.
func (p *StatusPoller) describe(ctx context.Context) ([]ec2types.InstanceStatus, error) {
	var out []ec2types.InstanceStatus
	seen := map[string]bool{}
	for _, filters := range statusFilters {
		in := &ec2.DescribeInstanceStatusInput{Filters: filters}
		for {
			page, err := p.cfg.EC2.DescribeInstanceStatus(ctx, in)
			if err != nil {
				var ae smithy.APIError
				if errors.As(err, &ae) && (ae.ErrorCode() == "UnauthorizedOperation" || ae.ErrorCode() == "AccessDenied" || ae.ErrorCode() == "AccessDeniedException") {
					return nil, fmt.Errorf("%w: %v", ErrStatusDenied, err)
				}
				return nil, fmt.Errorf("describing the status checks of instances: %w", err)
			}
			for _, s := range page.InstanceStatuses {
				id := aws.ToString(s.InstanceId)
				if id != "" && seen[id] {
					continue
				}
				seen[id] = true
				out = append(out, s)
			}
			if aws.ToString(page.NextToken) == "" {
				break
			}
			in.NextToken = page.NextToken
		}
	}
	return out, nil
}
