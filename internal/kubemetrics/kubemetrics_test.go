package kubemetrics

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	clientmetrics "k8s.io/client-go/tools/metrics"
)

func TestRequestDurationLabels(t *testing.T) {
	for _, tc := range []struct {
		method, path string
		// want are verb, group, version, kind and subresource; nil when
		// the path names no resource.
		want []string
	}{
		{"GET", "/api/v1/namespaces/{namespace}/pods", []string{"LIST", "", "v1", "pods", ""}},
		{"GET", "/api/v1/namespaces/{namespace}/pods/{name}", []string{"GET", "", "v1", "pods", ""}},
		{"POST", "/api/v1/namespaces/{namespace}/pods/{name}/eviction", []string{"CREATE", "", "v1", "pods", "eviction"}},
		{"GET", "/api/v1/nodes", []string{"LIST", "", "v1", "nodes", ""}},
		{"PATCH", "/api/v1/nodes/{name}", []string{"PATCH", "", "v1", "nodes", ""}},
		{"PUT", "/api/v1/nodes/{name}/status", []string{"UPDATE", "", "v1", "nodes", "status"}},
		{"GET", "/api/v1/namespaces/{name}", []string{"GET", "", "v1", "namespaces", ""}},
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}", []string{"UPDATE", "coordination.k8s.io", "v1", "leases", ""}},
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases", []string{"CREATE", "coordination.k8s.io", "v1", "leases", ""}},
		{"DELETE", "/apis/karpenter.sh/v1/nodeclaims/{name}", []string{"DELETE", "karpenter.sh", "v1", "nodeclaims", ""}},
		{"PATCH", "/apis/karpenter.sh/v1/nodepools/{name}/status", []string{"PATCH", "karpenter.sh", "v1", "nodepools", "status"}},
		{"GET", "/apis/karpenter.sh/v1", nil},
		{"GET", "/api/v1", nil},
		{"GET", "/version", nil},
		{"GET", "/healthz", nil},
	} {
		reg := prometheus.NewRegistry()
		if err := RegisterClientGo(reg); err != nil {
			t.Fatal(err)
		}
		clientmetrics.RequestLatency.Observe(context.Background(), tc.method, url.URL{Path: tc.path}, 20*time.Millisecond)
		n := testutil.CollectAndCount(reg, NameRequestDuration)
		if tc.want == nil {
			if n != 0 {
				t.Errorf("%s %s: %d series, want none", tc.method, tc.path, n)
			}
			continue
		}
		h, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range h {
			if f.GetName() != NameRequestDuration {
				continue
			}
			labels := map[string]string{}
			for _, l := range f.GetMetric()[0].GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			got = []string{labels["verb"], labels["group"], labels["version"], labels["kind"], labels["subresource"]}
		}
		if len(got) != 5 || got[0] != tc.want[0] || got[1] != tc.want[1] || got[2] != tc.want[2] || got[3] != tc.want[3] || got[4] != tc.want[4] {
			t.Errorf("%s %s: labels %q, want %q", tc.method, tc.path, got, tc.want)
		}
	}
}

func TestRequestTotal(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := RegisterClientGo(reg); err != nil {
		t.Fatal(err)
	}
	// A second registration (a second controller in one process) reuses
	// the series.
	if err := RegisterClientGo(reg); err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct{ code, method string }{{"200", "GET"}, {"200", "GET"}, {"409", "PUT"}} {
		clientmetrics.RequestResult.Increment(context.Background(), r.code, r.method, "127.0.0.1:6443")
	}
	want := `
# HELP client_go_request_total Requests to the Kubernetes API server, by HTTP method and status code.
# TYPE client_go_request_total counter
client_go_request_total{code="200",method="GET"} 2
client_go_request_total{code="409",method="PUT"} 1
`
	if err := testutil.GatherAndCompare(reg, stringsReader(want), NameRequestTotal); err != nil {
		t.Error(err)
	}
}
