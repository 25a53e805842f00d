// Package kubemetrics publishes the metrics of the Kubernetes client that
// Karpenter serves besides controller-runtime's own: client_go_request_total
// and client_go_request_duration_seconds, fed by client-go after every
// request to the API server, and leader_election_slowpath_total, fed when a
// leader's lease renewal falls back from its optimistic update to reading
// the Lease first.
//
// Names, types, label names and buckets are Karpenter's, so that its
// dashboards read stevedore's series unchanged.
package kubemetrics

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientmetrics "k8s.io/client-go/tools/metrics"
)

// Metric names.
const (
	NameRequestTotal    = "client_go_request_total"
	NameRequestDuration = "client_go_request_duration_seconds"
	NameSlowpathTotal   = "leader_election_slowpath_total"
)

// register registers c with reg, or returns the collector of the same
// description already registered there, so that a process that starts
// several controllers (tests) feeds one set of series.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		if existing, ok := already.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, err
}

// RegisterClientGo registers the client_go_* metrics with reg and makes
// client-go feed them. client-go has one set of request metrics a process:
// the last call wins.
func RegisterClientGo(reg prometheus.Registerer) error {
	total, err := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: NameRequestTotal,
		Help: "Requests to the Kubernetes API server, by HTTP method and status code.",
	}, []string{"code", "method"}))
	if err != nil {
		return err
	}
	duration, err := register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    NameRequestDuration,
		Help:    "Seconds a request to the Kubernetes API server took, by verb, group, version, kind and subresource.",
		Buckets: prometheus.ExponentialBuckets(0.001, 1.5, 20),
	}, []string{"verb", "group", "version", "kind", "subresource"}))
	if err != nil {
		return err
	}
	clientmetrics.RequestResult = resultAdapter{total}
	clientmetrics.RequestLatency = latencyAdapter{duration}
	return nil
}

// resultAdapter counts each response by status code and HTTP method.
type resultAdapter struct{ total *prometheus.CounterVec }

func (a resultAdapter) Increment(_ context.Context, code, method, _ string) {
	a.total.WithLabelValues(code, method).Inc()
}

// latencyAdapter times each request to a resource.
type latencyAdapter struct{ duration *prometheus.HistogramVec }

func (a latencyAdapter) Observe(_ context.Context, verb string, u url.URL, latency time.Duration) {
	r, ok := parseResourcePath(u.Path)
	if !ok {
		return
	}
	a.duration.WithLabelValues(requestVerb(verb, u.Path), r.group, r.version, r.kind, r.subresource).Observe(latency.Seconds())
}

// requestVerb names what a request does, as Karpenter labels it: client-go
// reports the HTTP method and a path whose object name is the placeholder
// "{name}", so POST creates, GET without a name lists, PUT with a name
// updates and without one creates; the other methods keep their names.
func requestVerb(method, path string) string {
	named := strings.Contains(path, "{name}")
	switch method {
	case "POST":
		return "CREATE"
	case "GET":
		if !named {
			return "LIST"
		}
	case "PUT":
		if named {
			return "UPDATE"
		}
		return "CREATE"
	}
	return method
}

// resourcePath is what a request path names.
type resourcePath struct{ group, version, kind, subresource string }

// parseResourcePath reads /api/VERSION/... (the core group, "") and
// /apis/GROUP/VERSION/... paths: the kind follows the version, or the
// namespace when the path names one (namespaces/NS/KIND...), and a
// subresource follows the object's name. Other paths (discovery, /version,
// /healthz) name no resource.
func parseResourcePath(path string) (resourcePath, bool) {
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	var r resourcePath
	var at int // index of the version
	switch parts[0] {
	case "api":
		at = 1
	case "apis":
		if len(parts) < 2 {
			return r, false
		}
		r.group, at = parts[1], 2
	default:
		return r, false
	}
	if len(parts) < at+2 {
		return r, false
	}
	r.version = parts[at]
	kind := at + 1
	if parts[kind] == "namespaces" && len(parts) > kind+2 {
		kind += 2
	}
	r.kind = parts[kind]
	if len(parts) == kind+3 {
		r.subresource = parts[kind+2]
	}
	return r, true
}
