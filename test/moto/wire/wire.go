package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Call is one AWS request read off the wire.
type Call struct {
	// Service is the sdk interface name used by package iampolicy: "EC2",
	// "IAM", "SSM", "SQS", "EKS", "Pricing", "STS", "ARCZonalShift",
	// "EventBridge".
	Service string
	// Operation is the API operation name, e.g. "CreateFleet",
	// "GetParameter", "DescribeCluster".
	Operation string
	// Input is the typed SDK input (e.g. *ec2.CreateFleetInput) for the
	// operations package iampolicy models (see decoded); nil for any other.
	Input any
}

// protocol is how a service puts a call on the wire.
type protocol int

const (
	ec2Query protocol = iota
	awsQuery
	awsJSON
	restJSON
)

type service struct {
	name  string
	proto protocol
}

// services maps a SigV4 signing name to the service it signs for. The
// signing name is the one part of every request that names the service
// whatever the protocol, which is also how moto routes requests.
var services = map[string]service{
	"ec2":             {"EC2", ec2Query},
	"iam":             {"IAM", awsQuery},
	"sts":             {"STS", awsQuery},
	"ssm":             {"SSM", awsJSON},
	"sqs":             {"SQS", awsJSON},
	"pricing":         {"Pricing", awsJSON},
	"events":          {"EventBridge", awsJSON},
	"eks":             {"EKS", restJSON},
	"arc-zonal-shift": {"ARCZonalShift", restJSON},
}

// Read reads one request. body is the request body (the caller has already
// read it; r.Body must not be used). Read does not modify r.
func Read(r *http.Request, body []byte) (Call, error) {
	signing, err := signingName(r)
	if err != nil {
		return Call{}, err
	}
	svc, ok := services[signing]
	if !ok {
		return Call{}, fmt.Errorf("wire: unknown signing name %q in the request's credential scope", signing)
	}
	call := Call{Service: svc.name}
	switch svc.proto {
	case ec2Query, awsQuery:
		call.Operation, call.Input, err = readQuery(svc, r, body)
	case awsJSON:
		call.Operation, call.Input, err = readJSON(svc, r, body)
	case restJSON:
		call.Operation, call.Input, err = readREST(svc, r)
	}
	if err != nil {
		return Call{}, err
	}
	return call, nil
}

// signingName is the service of the SigV4 credential scope,
// AKID/DATE/REGION/SERVICE/aws4_request, from the Authorization header or,
// for a presigned request, the X-Amz-Credential query parameter. The
// service is taken second from the end so that a SigV4a scope, which has no
// region, reads the same.
func signingName(r *http.Request) (string, error) {
	scope := ""
	if auth := r.Header.Get("Authorization"); auth != "" {
		_, rest, ok := strings.Cut(auth, "Credential=")
		if !ok {
			return "", fmt.Errorf("wire: Authorization header has no Credential: %q", auth)
		}
		scope, _, _ = strings.Cut(rest, ",")
		scope = strings.TrimSpace(scope)
	} else {
		scope = r.URL.Query().Get("X-Amz-Credential")
	}
	if scope == "" {
		return "", errors.New("wire: request is not signed with SigV4 (no Authorization header or X-Amz-Credential)")
	}
	parts := strings.Split(scope, "/")
	if len(parts) < 4 || parts[len(parts)-1] != "aws4_request" || parts[len(parts)-2] == "" {
		return "", fmt.Errorf("wire: malformed SigV4 credential scope %q", scope)
	}
	return parts[len(parts)-2], nil
}

// readQuery reads a call of the query protocols: the operation is the
// Action field of the url-encoded body, or of the URL query for a GET.
func readQuery(svc service, r *http.Request, body []byte) (string, any, error) {
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return "", nil, fmt.Errorf("wire: %s request body is not url-encoded: %w", svc.name, err)
	}
	if form.Get("Action") == "" {
		form = r.URL.Query()
	}
	op := form.Get("Action")
	if op == "" {
		return "", nil, fmt.Errorf("wire: %s request has no Action", svc.name)
	}
	in := newInput(svc.name, op)
	if in == nil {
		return op, nil, nil
	}
	d := decoder{op: op, ec2: svc.proto == ec2Query}
	if err := d.decode(form, in); err != nil {
		return "", nil, err
	}
	return op, in, nil
}

// readJSON reads a call of the AWS JSON protocols: the operation follows
// the dot of X-Amz-Target (AmazonSSM.GetParameter), and the body's keys
// are the input's member names, which are its Go field names.
func readJSON(svc service, r *http.Request, body []byte) (string, any, error) {
	target := r.Header.Get("X-Amz-Target")
	_, op, ok := strings.Cut(target, ".")
	if !ok || op == "" {
		return "", nil, fmt.Errorf("wire: %s request has no operation in X-Amz-Target %q", svc.name, target)
	}
	in := newInput(svc.name, op)
	if in == nil {
		return op, nil, nil
	}
	if len(bytes.TrimSpace(body)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(body))
		// Same rule as the query decoder: a member the input does not
		// have is a gap, not something to drop.
		dec.DisallowUnknownFields()
		if err := dec.Decode(in); err != nil {
			return "", nil, fmt.Errorf("wire: %s %s: decoding the JSON body: %w", svc.name, op, err)
		}
	}
	return op, in, nil
}
