package wire

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/arczonalshift"
	"github.com/aws/aws-sdk-go-v2/service/eks"
)

// route is one REST-JSON operation whose path is /<prefix>/{label}: the
// only shape the controller's REST calls have.
type route struct {
	service, method, prefix, op string
	// input builds the input from the path label, already unescaped.
	input func(label string) any
}

var routes = []route{
	{"EKS", http.MethodGet, "clusters", "DescribeCluster", func(name string) any {
		return &eks.DescribeClusterInput{Name: &name}
	}},
	// The resource identifier is an ARN, so the SDK sends it with its
	// slashes escaped: the path must be split before it is unescaped.
	{"ARCZonalShift", http.MethodGet, "managedresources", "GetManagedResource", func(id string) any {
		return &arczonalshift.GetManagedResourceInput{ResourceIdentifier: &id}
	}},
}

// readREST reads a REST-JSON call from its method and path.
func readREST(svc service, r *http.Request) (string, any, error) {
	path := r.URL.EscapedPath()
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	for _, rt := range routes {
		if rt.service != svc.name || rt.method != r.Method || len(segs) != 2 || segs[0] != rt.prefix || segs[1] == "" {
			continue
		}
		label, err := url.PathUnescape(segs[1])
		if err != nil {
			return "", nil, fmt.Errorf("wire: %s %s %s: %w", svc.name, r.Method, path, err)
		}
		return rt.op, rt.input(label), nil
	}
	return "", nil, fmt.Errorf("wire: %s request %s %s is no operation this package reads", svc.name, r.Method, path)
}
