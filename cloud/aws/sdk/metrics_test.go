package sdk_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/sdk"
)

// noBackoff retries at once.
type noBackoff struct{}

func (noBackoff) BackoffDelay(int, error) (time.Duration, error) { return 0, nil }

// instrumentedEC2 returns an EC2 client of cfg, instrumented into a new
// registry, that retries up to three attempts without waiting.
func instrumentedEC2(t *testing.T, endpoint string) (*ec2.Client, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := sdk.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	cfg := aws.Config{
		Region:       "us-west-2",
		BaseEndpoint: aws.String(endpoint),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "secret", Source: "test"}, nil
		}),
		Retryer: func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = 3
				o.Backoff = noBackoff{}
				o.RateLimiter = noRateLimit{}
			})
		},
	}
	m.Instrument(&cfg)
	return ec2.NewFromConfig(cfg), reg
}

type noRateLimit struct{}

func (noRateLimit) GetToken(context.Context, uint) (func() error, error) {
	return func() error { return nil }, nil
}
func (noRateLimit) AddTokens(uint) error { return nil }

const describeInstancesOK = `<DescribeInstancesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>r</requestId><reservationSet/></DescribeInstancesResponse>`

const ec2Error = `<Response><Errors><Error><Code>%s</Code><Message>m</Message></Error></Errors><RequestID>r</RequestID></Response>`

// TestSDKMetricsCountCallsAndAttempts sends EC2 calls through an
// instrumented client to a server on loopback that fails the first
// attempts as told, and checks the aws_sdk_go_* series of each case.
func TestSDKMetricsCountCallsAndAttempts(t *testing.T) {
	for _, tc := range []struct {
		name string
		// statuses are the server's answers, one per attempt; the last
		// repeats.
		statuses []int
		want     string
	}{
		{
			name: "first attempt succeeds", statuses: []int{200},
			want: `
aws_sdk_go_request_total{action="DescribeInstances",code="200",service="EC2"} 1
aws_sdk_go_request_attempt_total{action="DescribeInstances",code="200",service="EC2"} 1
`,
		},
		{
			name: "succeeds after two server errors", statuses: []int{500, 503, 200},
			want: `
aws_sdk_go_request_total{action="DescribeInstances",code="200",service="EC2"} 1
aws_sdk_go_request_attempt_total{action="DescribeInstances",code="200",service="EC2"} 1
aws_sdk_go_request_attempt_total{action="DescribeInstances",code="500",service="EC2"} 1
aws_sdk_go_request_attempt_total{action="DescribeInstances",code="503",service="EC2"} 1
`,
		},
		{
			name: "fails without retrying", statuses: []int{400},
			want: `
aws_sdk_go_request_total{action="DescribeInstances",code="400",service="EC2"} 1
aws_sdk_go_request_attempt_total{action="DescribeInstances",code="400",service="EC2"} 1
`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				i := int(n.Add(1)) - 1
				status := tc.statuses[min(i, len(tc.statuses)-1)]
				w.Header().Set("Content-Type", "text/xml")
				w.WriteHeader(status)
				if status == 200 {
					_, _ = w.Write([]byte(describeInstancesOK))
					return
				}
				code := "InternalError"
				if status == 400 {
					code = "InvalidParameterValue"
				}
				_, _ = w.Write([]byte(strings.Replace(ec2Error, "%s", code, 1)))
			}))
			defer srv.Close()
			client, reg := instrumentedEC2(t, srv.URL)
			_, _ = client.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{})
			if err := testutil.GatherAndCompare(reg, strings.NewReader(withHeaders(tc.want)), sdk.NameSDKRequests, sdk.NameSDKAttempts); err != nil {
				t.Error(err)
			}
			attempts := len(tc.statuses)
			final := tc.statuses[len(tc.statuses)-1]
			checkHistogramCount(t, reg, sdk.NameSDKRequestDuration, 1)
			checkHistogramCount(t, reg, sdk.NameSDKAttemptDuration, uint64(attempts))
			checkHistogramSum(t, reg, sdk.NameSDKRetries, float64(attempts-1))
			checkLabel(t, reg, sdk.NameSDKAttemptDuration, "code", itoa(final))
		})
	}
}

// TestSDKMetricsWithoutResponse checks the code of a call that reaches no
// server: the SDK's empty response's 0, as Karpenter's.
func TestSDKMetricsWithoutResponse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	client, reg := instrumentedEC2(t, "http://"+addr)
	if _, err := client.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{}); err == nil {
		t.Fatal("a call to a closed port succeeded")
	}
	checkLabel(t, reg, sdk.NameSDKRequests, "code", "0")
	checkLabel(t, reg, sdk.NameSDKAttempts, "code", "0")
	// Connection errors are retried.
	checkHistogramSum(t, reg, sdk.NameSDKRetries, 2)
}

// TestSDKMetricsRegisterTwice checks that a second instrumentation on the
// same registry (a second controller in one process) feeds the same
// series.
func TestSDKMetricsRegisterTwice(t *testing.T) {
	reg := prometheus.NewRegistry()
	for range 2 {
		if _, err := sdk.NewMetrics(reg); err != nil {
			t.Fatal(err)
		}
	}
}

func withHeaders(samples string) string {
	return `
# HELP aws_sdk_go_request_total AWS API calls made through the SDK, by service, action and result code
# TYPE aws_sdk_go_request_total counter
# HELP aws_sdk_go_request_attempt_total HTTP attempts of AWS API calls, retries included
# TYPE aws_sdk_go_request_attempt_total counter
` + samples
}

func itoa(i int) string { return strconv.Itoa(i) }

func gatherFamily(t *testing.T, reg *prometheus.Registry, name string) []map[string]string {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			out = append(out, labels)
		}
	}
	return out
}

func checkLabel(t *testing.T, reg *prometheus.Registry, name, label, want string) {
	t.Helper()
	series := gatherFamily(t, reg, name)
	if len(series) == 0 {
		t.Errorf("%s: no series", name)
	}
	for _, s := range series {
		if s[label] != want {
			t.Errorf("%s: %s=%q, want %q", name, label, s[label], want)
		}
	}
}

func histogram(t *testing.T, reg *prometheus.Registry, name string) (count uint64, sum float64) {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			count += m.GetHistogram().GetSampleCount()
			sum += m.GetHistogram().GetSampleSum()
		}
	}
	return count, sum
}

func checkHistogramCount(t *testing.T, reg *prometheus.Registry, name string, want uint64) {
	t.Helper()
	if got, _ := histogram(t, reg, name); got != want {
		t.Errorf("%s: %d observations, want %d", name, got, want)
	}
}

func checkHistogramSum(t *testing.T, reg *prometheus.Registry, name string, want float64) {
	t.Helper()
	if _, got := histogram(t, reg, name); got != want {
		t.Errorf("%s: sum %v, want %v", name, got, want)
	}
}
