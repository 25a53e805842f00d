package fake

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Defaults of a new queue, as SQS has them.
const (
	DefaultQueueRetention         = 4 * 24 * time.Hour
	DefaultQueueVisibilityTimeout = 30 * time.Second
)

type queue struct {
	name, url  string
	retention  time.Duration
	visibility time.Duration
	messages   []*message
	// policy is the queue's access policy document, empty when none is set.
	policy string
}

type message struct {
	id, body, md5  string
	sent           time.Time
	visibleAt      time.Time
	receipt        string
	receipts       map[string]bool
	receiveCount   int
	firstReceiveAt time.Time
	deleted        bool
}

// CreateQueue creates an SQS queue and returns its URL. retention is the
// message retention period (0: the SQS default of 4 days; the interruption
// queue of Karpenter's reference CloudFormation uses 300s).
func (f *AWS) CreateQueue(name string, retention time.Duration) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if q, ok := f.queues[name]; ok {
		return q.url
	}
	if retention <= 0 {
		retention = DefaultQueueRetention
	}
	q := &queue{
		name: name, retention: retention, visibility: DefaultQueueVisibilityTimeout,
		url: fmt.Sprintf("https://sqs.%s.amazonaws.com/%s/%s", f.opts.Region, f.opts.AccountID, name),
	}
	f.queues[name] = q
	return q.url
}

// SetQueuePolicy sets a queue's access policy (a JSON policy document), as
// `aws sqs set-queue-attributes --attributes Policy=...` does. The fake does
// not enforce it; GetQueueAttributes returns it.
func (f *AWS) SetQueuePolicy(name, policy string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, ok := f.queues[name]
	if !ok {
		return fmt.Errorf("no queue %s", name)
	}
	q.policy = policy
	return nil
}

// QueuePolicyEventBridge returns the access policy that lets EventBridge
// deliver to a queue, as docs/aws.md sets it up.
func QueuePolicyEventBridge(queueARN string) string {
	return `{"Version":"2012-10-17","Statement":[{"Sid":"EventBridgeDelivers","Effect":"Allow",` +
		`"Principal":{"Service":["events.amazonaws.com","sqs.amazonaws.com"]},"Action":"sqs:SendMessage","Resource":"` + queueARN + `"}]}`
}

func (f *AWS) queueARN(q *queue) string {
	return f.QueueARN(q.name)
}

// QueueARN returns the ARN a queue of that name has in this account.
func (f *AWS) QueueARN(name string) string {
	return fmt.Sprintf("arn:aws:sqs:%s:%s:%s", f.opts.Region, f.opts.AccountID, name)
}

// GetQueueAttributes implements sdk.SQS for the attributes QueueArn,
// ApproximateNumberOfMessages, ApproximateNumberOfMessagesNotVisible,
// VisibilityTimeout, MessageRetentionPeriod and Policy (returned only when
// set, as SQS does), or All of them.
func (f *AWS) GetQueueAttributes(_ context.Context, in *sqs.GetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	const api = "GetQueueAttributes"
	unlock, err := f.lock(api, in)
	defer unlock()
	if err != nil {
		return nil, err
	}
	q, err := f.queueByURL(api, deref(in.QueueUrl))
	if err != nil {
		return nil, err
	}
	now := f.now()
	visible, inFlight := 0, 0
	for _, m := range q.messages {
		if now.Before(m.visibleAt) {
			inFlight++
		} else {
			visible++
		}
	}
	all := map[sqstypes.QueueAttributeName]string{
		sqstypes.QueueAttributeNameQueueArn:                              f.queueARN(q),
		sqstypes.QueueAttributeNameApproximateNumberOfMessages:           strconv.Itoa(visible),
		sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible: strconv.Itoa(inFlight),
		sqstypes.QueueAttributeNameVisibilityTimeout:                     strconv.Itoa(int(q.visibility / time.Second)),
		sqstypes.QueueAttributeNameMessageRetentionPeriod:                strconv.Itoa(int(q.retention / time.Second)),
	}
	if q.policy != "" {
		all[sqstypes.QueueAttributeNamePolicy] = q.policy
	}
	out := &sqs.GetQueueAttributesOutput{Attributes: map[string]string{}}
	for _, name := range in.AttributeNames {
		if name == sqstypes.QueueAttributeNameAll {
			for k, v := range all {
				out.Attributes[string(k)] = v
			}
			continue
		}
		v, known := all[name]
		if !known && name != sqstypes.QueueAttributeNamePolicy {
			return nil, typed(svcSQS, api, &sqstypes.InvalidAttributeName{Message: ptr(fmt.Sprintf("Unknown Attribute %s.", name))})
		}
		if known {
			out.Attributes[string(name)] = v
		}
	}
	return out, nil
}

// DeleteQueue deletes a queue and its messages.
func (f *AWS) DeleteQueue(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.queues, name)
}

// QueueMessages returns how many messages a queue holds (visible or in flight).
func (f *AWS) QueueMessages(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.advance()
	q, ok := f.queues[name]
	if !ok {
		return 0
	}
	f.expire(q)
	return len(q.messages)
}

func (f *AWS) expire(q *queue) {
	now := f.now()
	kept := q.messages[:0]
	for _, m := range q.messages {
		if !m.deleted && now.Before(m.sent.Add(q.retention)) {
			kept = append(kept, m)
		}
	}
	q.messages = kept
}

// nonExistentQueue is the code SQS answers for a queue that does not exist.
// SQS speaks JSON but keeps its older query-protocol error codes in the
// x-amzn-query-error header, and the SDK reports that code: ErrorCode() is
// this, while the error is still a *types.QueueDoesNotExist.
const nonExistentQueue = "AWS.SimpleQueueService.NonExistentQueue"

func queueDoesNotExist(api string) error {
	return typed(svcSQS, api, &sqstypes.QueueDoesNotExist{Message: ptr("The specified queue does not exist."), ErrorCodeOverride: ptr(nonExistentQueue)})
}

func (f *AWS) queueByURL(api, url string) (*queue, error) {
	for _, name := range sortedKeys(f.queues) {
		if q := f.queues[name]; q.url == url {
			f.expire(q)
			return q, nil
		}
	}
	return nil, queueDoesNotExist(api)
}

func (f *AWS) enqueue(q *queue, body string, delay time.Duration) *message {
	sum := md5.Sum([]byte(body))
	now := f.now()
	m := &message{id: f.uuid(), body: body, md5: hex.EncodeToString(sum[:]), sent: now, visibleAt: now.Add(delay), receipts: map[string]bool{}}
	q.messages = append(q.messages, m)
	return m
}

// GetQueueUrl implements sdk.SQS.
func (f *AWS) GetQueueUrl(_ context.Context, in *sqs.GetQueueUrlInput, _ ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) { //nolint:revive // SDK name
	const api = "GetQueueUrl"
	unlock, err := f.lock(api, in)
	defer unlock()
	if err != nil {
		return nil, err
	}
	q, ok := f.queues[deref(in.QueueName)]
	if !ok || (in.QueueOwnerAWSAccountId != nil && *in.QueueOwnerAWSAccountId != f.opts.AccountID) {
		return nil, queueDoesNotExist(api)
	}
	return &sqs.GetQueueUrlOutput{QueueUrl: ptr(q.url)}, nil
}

// ReceiveMessage implements sdk.SQS. Messages come in the order they were
// sent. WaitTimeSeconds is accepted but the call never blocks: an empty
// answer stands for a long poll that found nothing.
func (f *AWS) ReceiveMessage(_ context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	const api = "ReceiveMessage"
	unlock, err := f.lock(api, in)
	defer unlock()
	if err != nil {
		return nil, err
	}
	q, err := f.queueByURL(api, deref(in.QueueUrl))
	if err != nil {
		return nil, err
	}
	maxN := int(in.MaxNumberOfMessages)
	if maxN == 0 {
		maxN = 1
	}
	if maxN < 1 || maxN > 10 {
		return nil, newAPIError(svcSQS, api, "InvalidParameterValue", fmt.Sprintf("Value %d for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided.", maxN), 400)
	}
	if in.VisibilityTimeout < 0 || in.VisibilityTimeout > 43200 {
		return nil, newAPIError(svcSQS, api, "InvalidParameterValue", fmt.Sprintf("Value %d for parameter VisibilityTimeout is invalid. Reason: Must be between 0 and 43200, if provided.", in.VisibilityTimeout), 400)
	}
	visibility := q.visibility
	if in.VisibilityTimeout > 0 {
		visibility = time.Duration(in.VisibilityTimeout) * time.Second
	}
	wantAttr := map[string]bool{}
	for _, a := range in.MessageSystemAttributeNames {
		wantAttr[string(a)] = true
	}
	for _, a := range in.AttributeNames {
		wantAttr[string(a)] = true
	}
	now := f.now()
	out := &sqs.ReceiveMessageOutput{}
	for _, m := range q.messages {
		if len(out.Messages) == maxN {
			break
		}
		if m.deleted || now.Before(m.visibleAt) {
			continue
		}
		m.receiveCount++
		if m.firstReceiveAt.IsZero() {
			m.firstReceiveAt = now
		}
		m.visibleAt = now.Add(visibility)
		m.receipt = "AQEB" + f.hex(64)
		m.receipts[m.receipt] = true
		msg := sqstypes.Message{MessageId: ptr(m.id), ReceiptHandle: ptr(m.receipt), Body: ptr(m.body), MD5OfBody: ptr(m.md5)}
		attrs := map[string]string{}
		all := wantAttr["All"]
		if all || wantAttr["ApproximateReceiveCount"] {
			attrs["ApproximateReceiveCount"] = strconv.Itoa(m.receiveCount)
		}
		if all || wantAttr["SentTimestamp"] {
			attrs["SentTimestamp"] = strconv.FormatInt(m.sent.UnixMilli(), 10)
		}
		if all || wantAttr["ApproximateFirstReceiveTimestamp"] {
			attrs["ApproximateFirstReceiveTimestamp"] = strconv.FormatInt(m.firstReceiveAt.UnixMilli(), 10)
		}
		if len(attrs) > 0 {
			msg.Attributes = attrs
		}
		out.Messages = append(out.Messages, msg)
	}
	return out, nil
}

// DeleteMessage implements sdk.SQS. As in SQS, only the most recent receipt
// handle of a message deletes it; an older handle of the same message succeeds
// without deleting.
func (f *AWS) DeleteMessage(_ context.Context, in *sqs.DeleteMessageInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	const api = "DeleteMessage"
	unlock, err := f.lock(api, in)
	defer unlock()
	if err != nil {
		return nil, err
	}
	q, err := f.queueByURL(api, deref(in.QueueUrl))
	if err != nil {
		return nil, err
	}
	handle := deref(in.ReceiptHandle)
	for _, m := range q.messages {
		if m.receipt == handle {
			m.deleted = true
			f.expire(q)
			return &sqs.DeleteMessageOutput{}, nil
		}
		if m.receipts[handle] {
			return &sqs.DeleteMessageOutput{}, nil
		}
	}
	return nil, typed(svcSQS, api, &sqstypes.ReceiptHandleIsInvalid{Message: ptr(fmt.Sprintf("The input receipt handle \"%s\" is not a valid receipt handle.", handle))})
}

// SendMessage implements sdk.SQS.
func (f *AWS) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	const api = "SendMessage"
	unlock, err := f.lock(api, in)
	defer unlock()
	if err != nil {
		return nil, err
	}
	q, err := f.queueByURL(api, deref(in.QueueUrl))
	if err != nil {
		return nil, err
	}
	if deref(in.MessageBody) == "" {
		return nil, newAPIError(svcSQS, api, "MissingParameter", "The request must contain the parameter MessageBody.", 400)
	}
	if in.DelaySeconds < 0 || in.DelaySeconds > 900 {
		return nil, newAPIError(svcSQS, api, "InvalidParameterValue", fmt.Sprintf("Value %d for parameter DelaySeconds is invalid. Reason: Must be >= 0 and <= 900.", in.DelaySeconds), 400)
	}
	m := f.enqueue(q, *in.MessageBody, time.Duration(in.DelaySeconds)*time.Second)
	return &sqs.SendMessageOutput{MessageId: ptr(m.id), MD5OfMessageBody: ptr(m.md5)}, nil
}

// EventBridge event shapes, as delivered to an interruption queue.

// Event is the EventBridge envelope of an interruption message.
type Event struct {
	Version    string          `json:"version"`
	ID         string          `json:"id"`
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Account    string          `json:"account"`
	Time       string          `json:"time"`
	Region     string          `json:"region"`
	Resources  []string        `json:"resources"`
	Detail     json.RawMessage `json:"detail"`
}

// Detail types and sources of the five events an interruption queue receives.
const (
	DetailTypeSpotInterruption                   = "EC2 Spot Instance Interruption Warning"
	DetailTypeRebalanceRecommendation            = "EC2 Instance Rebalance Recommendation"
	DetailTypeStateChange                        = "EC2 Instance State-change Notification"
	DetailTypeHealthEvent                        = "AWS Health Event"
	DetailTypeCapacityReservationInterruption    = "EC2 Capacity Reservation Instance Interruption Warning"
	SourceEC2                                    = "aws.ec2"
	SourceHealth                                 = "aws.health"
	HealthEventTypeInstanceRetirementScheduled   = "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED"
	HealthEventCategoryScheduledChange           = "scheduledChange"
	healthTimeLayout                             = "Mon, 2 Jan 2006 15:04:05 GMT"
	eventTimeLayout                              = "2006-01-02T15:04:05Z"
	instanceActionTerminate                      = "terminate"
	eventVersion                                 = "0"
	capacityReservationInterruptionInstanceField = "capacity-reservation-id"
)

func (f *AWS) eventBody(detailType, source string, resources []string, detail any, at time.Time) string {
	d, err := json.Marshal(detail)
	if err != nil {
		panic(err)
	}
	if resources == nil {
		resources = []string{}
	}
	b, err := json.Marshal(Event{
		Version: eventVersion, ID: f.uuid(), DetailType: detailType, Source: source,
		Account: f.opts.AccountID, Time: at.UTC().Format(eventTimeLayout), Region: f.opts.Region,
		Resources: resources, Detail: d,
	})
	if err != nil {
		panic(err)
	}
	return string(b)
}

func (f *AWS) send(queueName, body string) error {
	q, ok := f.queues[queueName]
	if !ok {
		return fmt.Errorf("no queue %s", queueName)
	}
	f.expire(q)
	f.enqueue(q, body, 0)
	return nil
}

// zonalInstanceARN is the resource ARN spot and rebalance events carry: the
// zone instead of the region, and no account.
func (f *AWS) zonalInstanceARN(instanceID string) string {
	zone := f.opts.Region
	if inst, ok := f.instances[instanceID]; ok {
		zone = inst.zone
	}
	return fmt.Sprintf("arn:aws:ec2:%s:instance/%s", zone, instanceID)
}

func (f *AWS) instanceARN(instanceID string) string {
	return fmt.Sprintf("arn:aws:ec2:%s:%s:instance/%s", f.opts.Region, f.opts.AccountID, instanceID)
}

// SendMessageBody puts a raw body on a queue, as EventBridge would.
func (f *AWS) SendMessageBody(queueName, body string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.send(queueName, body)
}

// SendSpotInterruptionWarning sends an "EC2 Spot Instance Interruption
// Warning" for the instance (instance-action terminate). It does not
// terminate the instance; see InterruptSpotInstance.
func (f *AWS) SendSpotInterruptionWarning(queueName, instanceID string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.advance()
	return f.send(queueName, f.spotWarning(instanceID))
}

func (f *AWS) spotWarning(instanceID string) string {
	return f.eventBody(DetailTypeSpotInterruption, SourceEC2, []string{f.zonalInstanceARN(instanceID)},
		map[string]string{"instance-id": instanceID, "instance-action": instanceActionTerminate}, f.now())
}

// InterruptSpotInstance interrupts a spot instance as EC2 does: it sends the
// interruption warning and terminates the instance SpotInterruptionNotice (2
// minutes) later, with state reason Server.SpotInstanceTermination.
func (f *AWS) InterruptSpotInstance(queueName, instanceID string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.advance()
	inst, ok := f.instances[instanceID]
	if !ok {
		return fmt.Errorf("no instance %s", instanceID)
	}
	if inst.capacityType != "spot" {
		return fmt.Errorf("instance %s is not a spot instance", instanceID)
	}
	if err := f.send(queueName, f.spotWarning(instanceID)); err != nil {
		return err
	}
	f.scheduleTermination(inst, f.now().Add(SpotInterruptionNotice), "Server.SpotInstanceTermination", "Server.SpotInstanceTermination: Spot instance termination")
	return nil
}

// SendRebalanceRecommendation sends an "EC2 Instance Rebalance Recommendation".
func (f *AWS) SendRebalanceRecommendation(queueName, instanceID string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.advance()
	return f.send(queueName, f.eventBody(DetailTypeRebalanceRecommendation, SourceEC2,
		[]string{f.zonalInstanceARN(instanceID)}, map[string]string{"instance-id": instanceID}, f.now()))
}

// SendStateChange sends an "EC2 Instance State-change Notification" with the
// given state (pending, running, stopping, stopped, shutting-down,
// terminated). It does not change the instance.
func (f *AWS) SendStateChange(queueName, instanceID, state string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.advance()
	return f.send(queueName, f.stateChangeBody(instanceID, state, f.now()))
}

func (f *AWS) stateChangeBody(instanceID, state string, at time.Time) string {
	return f.eventBody(DetailTypeStateChange, SourceEC2, []string{f.instanceARN(instanceID)},
		map[string]string{"instance-id": instanceID, "state": state}, at)
}

// SendScheduledChange sends an "AWS Health Event" of category scheduledChange
// for service EC2 that affects the instances (eventTypeCode defaults to
// AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED).
func (f *AWS) SendScheduledChange(queueName string, instanceIDs []string, eventTypeCode string, start, end time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.advance()
	if eventTypeCode == "" {
		eventTypeCode = HealthEventTypeInstanceRetirementScheduled
	}
	type entity struct {
		EntityValue string `json:"entityValue"`
	}
	type description struct {
		Language          string `json:"language"`
		LatestDescription string `json:"latestDescription"`
	}
	entities := make([]entity, 0, len(instanceIDs))
	for _, id := range instanceIDs {
		entities = append(entities, entity{EntityValue: id})
	}
	detail := struct {
		EventArn          string        `json:"eventArn"`
		Service           string        `json:"service"`
		EventTypeCode     string        `json:"eventTypeCode"`
		EventTypeCategory string        `json:"eventTypeCategory"`
		StartTime         string        `json:"startTime"`
		EndTime           string        `json:"endTime"`
		EventDescription  []description `json:"eventDescription"`
		AffectedEntities  []entity      `json:"affectedEntities"`
	}{
		EventArn:          fmt.Sprintf("arn:aws:health:%s::event/EC2/%s/%s_%s", f.opts.Region, eventTypeCode, eventTypeCode, f.upperAlnum(12)),
		Service:           "EC2",
		EventTypeCode:     eventTypeCode,
		EventTypeCategory: HealthEventCategoryScheduledChange,
		StartTime:         start.UTC().Format(healthTimeLayout),
		EndTime:           end.UTC().Format(healthTimeLayout),
		EventDescription:  []description{{Language: "en_US", LatestDescription: "EC2 has detected degradation of the underlying hardware hosting your Amazon EC2 instance. The instance is scheduled for retirement."}},
		AffectedEntities:  entities,
	}
	return f.send(queueName, f.eventBody(DetailTypeHealthEvent, SourceHealth, append([]string(nil), instanceIDs...), detail, f.now()))
}

// SendCapacityReservationInterruption sends an "EC2 Capacity Reservation
// Instance Interruption Warning" for an instance launched into an interruptible
// capacity reservation.
func (f *AWS) SendCapacityReservationInterruption(queueName, instanceID string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.advance()
	detail := map[string]string{"instance-id": instanceID, "instance-action": instanceActionTerminate}
	if inst, ok := f.instances[instanceID]; ok && inst.capacityReservationID != "" {
		detail[capacityReservationInterruptionInstanceField] = inst.capacityReservationID
	}
	return f.send(queueName, f.eventBody(DetailTypeCapacityReservationInterruption, SourceEC2,
		[]string{f.instanceARN(instanceID)}, detail, f.now()))
}
