package sdk

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/prometheus/client_golang/prometheus"
)

// Names of the AWS SDK metrics, Karpenter's.
const (
	NameSDKRequests        = "aws_sdk_go_request_total"
	NameSDKAttempts        = "aws_sdk_go_request_attempt_total"
	NameSDKRequestDuration = "aws_sdk_go_request_duration_seconds"
	NameSDKAttemptDuration = "aws_sdk_go_request_attempt_duration_seconds"
	NameSDKRetries         = "aws_sdk_go_request_retry_count"
)

// noResponse is the code label of a call or attempt that the SDK's HTTP
// client was never asked to send (a call refused before its first attempt,
// say). One the client sent without getting an answer (a connection error)
// has the SDK's empty response, code 0, as in Karpenter.
const noResponse = "-1"

// Metrics counts and times every call the AWS SDK makes through a
// configuration it instruments, under Karpenter's aws_sdk_go_* names and
// labels: service (the SDK's service ID, such as EC2), action (the
// operation, such as CreateFleet) and code (the HTTP status of the last
// attempt; 0 when the attempt got no answer, -1 when no attempt was sent).
type Metrics struct {
	requests, attempts                 *prometheus.CounterVec
	duration, attemptDuration, retries *prometheus.HistogramVec
}

// NewMetrics registers the AWS SDK metrics with reg. A second call on the
// same registry reuses the metrics registered first.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	labels := []string{"service", "action", "code"}
	latency := prometheus.ExponentialBuckets(0.01, 1.5, 20)
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameSDKRequests, Help: "AWS API calls made through the SDK, by service, action and result code",
		}, labels),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameSDKAttempts, Help: "HTTP attempts of AWS API calls, retries included",
		}, labels),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: NameSDKRequestDuration, Help: "Seconds an AWS API call took, from the first attempt to the result", Buckets: latency,
		}, labels),
		attemptDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: NameSDKAttemptDuration, Help: "Seconds one HTTP attempt of an AWS API call took", Buckets: latency,
		}, labels),
		retries: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: NameSDKRetries, Help: "Retries of AWS API calls beyond their first attempt",
			Buckets: prometheus.LinearBuckets(0, 1, 11),
		}, labels),
	}
	var err error
	if m.requests, err = registerOrReuse(reg, m.requests); err != nil {
		return nil, err
	}
	if m.attempts, err = registerOrReuse(reg, m.attempts); err != nil {
		return nil, err
	}
	if m.duration, err = registerOrReuse(reg, m.duration); err != nil {
		return nil, err
	}
	if m.attemptDuration, err = registerOrReuse(reg, m.attemptDuration); err != nil {
		return nil, err
	}
	if m.retries, err = registerOrReuse(reg, m.retries); err != nil {
		return nil, err
	}
	return m, nil
}

func registerOrReuse[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		if existing, ok := already.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, err
}

// Instrument adds the middleware that feeds m to every client made from
// cfg afterwards.
func (m *Metrics) Instrument(cfg *aws.Config) {
	cfg.APIOptions = append(cfg.APIOptions, m.addMiddleware)
}

// Middleware IDs.
const (
	callMiddlewareID    = "StevedoreSDKMetricsCall"
	attemptMiddlewareID = "StevedoreSDKMetricsAttempt"
)

// addMiddleware times the whole call first thing in the initialize step,
// and each attempt in the finalize step right inside the retry loop.
func (m *Metrics) addMiddleware(stack *middleware.Stack) error {
	if err := stack.Initialize.Add(middleware.InitializeMiddlewareFunc(callMiddlewareID, m.handleCall), middleware.Before); err != nil {
		return err
	}
	return stack.Finalize.Insert(middleware.FinalizeMiddlewareFunc(attemptMiddlewareID, handleAttempt), "Retry", middleware.After)
}

// call is what the attempts of one call record for it.
type call struct {
	service, action string
	attempts        []attempt
}

type attempt struct {
	code string
	took time.Duration
}

type callKey struct{}

func (m *Metrics) handleCall(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
	c := &call{}
	start := time.Now()
	out, md, err := next.HandleInitialize(context.WithValue(ctx, callKey{}, c), in)
	took := time.Since(start)
	if c.service == "" {
		// No attempt was made (the input failed validation, say): the
		// service and operation are known from the outer context.
		c.service, c.action = awsmiddleware.GetServiceID(ctx), awsmiddleware.GetOperationName(ctx)
	}
	code := noResponse
	if n := len(c.attempts); n > 0 {
		code = c.attempts[n-1].code
	}
	m.requests.WithLabelValues(c.service, c.action, code).Inc()
	m.duration.WithLabelValues(c.service, c.action, code).Observe(took.Seconds())
	m.retries.WithLabelValues(c.service, c.action, code).Observe(float64(max(len(c.attempts)-1, 0)))
	for _, a := range c.attempts {
		m.attempts.WithLabelValues(c.service, c.action, a.code).Inc()
		// Karpenter labels an attempt's duration with the call's final
		// code, and its count with the attempt's own.
		m.attemptDuration.WithLabelValues(c.service, c.action, code).Observe(a.took.Seconds())
	}
	return out, md, err
}

func handleAttempt(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
	start := time.Now()
	out, md, err := next.HandleFinalize(ctx, in)
	if c, ok := ctx.Value(callKey{}).(*call); ok {
		c.service, c.action = awsmiddleware.GetServiceID(ctx), awsmiddleware.GetOperationName(ctx)
		code := noResponse
		if r, ok := awsmiddleware.GetRawResponse(md).(*smithyhttp.Response); ok && r != nil && r.Response != nil {
			code = strconv.Itoa(r.StatusCode)
		}
		c.attempts = append(c.attempts, attempt{code: code, took: time.Since(start)})
	}
	return out, md, err
}
