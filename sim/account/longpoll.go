package account

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"k8s.io/utils/clock"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/sdk"
)

// longPollInterval is how often a waiting ReceiveMessage looks at the queue
// again.
const longPollInterval = 200 * time.Millisecond

// longPoll makes the in-memory SQS wait as SQS's long polling does. The
// in-memory AWS never blocks (an empty answer stands for a long poll that
// found nothing), which is right on the simulator's virtual clock; on the
// wall clock it would make the controller's queue consumer spin.
type longPoll struct {
	sdk.SQS
	clock clock.Clock
}

func (l longPoll) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	deadline := l.clock.Now().Add(time.Duration(in.WaitTimeSeconds) * time.Second)
	for {
		out, err := l.SQS.ReceiveMessage(ctx, in, optFns...)
		if err != nil || len(out.Messages) > 0 || !l.clock.Now().Before(deadline) {
			return out, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-l.clock.After(longPollInterval):
		}
	}
}
