package moto

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/stevedore-autoscaler/stevedore/test/moto/wire"
)

// Proxy stands between a controller and moto, on loopback. It forwards
// every request unchanged, and on the way:
//
//   - records each call, read back into its service, operation and typed
//     SDK input, so that a test can evaluate every call the controller made
//     against an IAM policy (see Authorizer);
//   - answers SSM GetParameter for the public parameters set with
//     SetParameter, such as the EKS-optimized image IDs under /aws/service/
//     that AMI aliases resolve through: moto has none of those and refuses
//     to store a parameter under /aws/;
//   - fails calls on request (Fail), with the error document each protocol
//     uses, because moto itself can neither throttle nor fail a call;
//   - completes the instances moto's CreateFleet launches from a launch
//     template with the template's security groups and instance profile,
//     which moto leaves out (it gives the VPC's default group and no
//     profile, so every node would look drifted).
type Proxy struct {
	// URL is the proxy's base URL, http://127.0.0.1:PORT; point the
	// controller's AWS_ENDPOINT_URL at it.
	URL string

	server   *http.Server
	listener net.Listener
	forward  *httputil.ReverseProxy

	mu     sync.Mutex
	calls  []Recorded
	faults []*Fault
	params map[string]*publicParameter
	hook   func(wire.Call)
	region string
	// ec2 reaches moto directly, to complete CreateFleet's instances.
	ec2 *ec2.Client
	// fleetErrors counts CreateFleet answers that could not be completed.
	fleetErrors []error
}

// Recorded is one request the proxy saw.
type Recorded struct {
	wire.Call
	// Unread is why the request could not be read back into a call (the
	// request is forwarded all the same); empty when it was.
	Unread string
	// Injected is the error code the proxy answered with instead of
	// forwarding (see Fail); empty when moto answered.
	Injected string
	// Status is the HTTP status of the answer.
	Status int
}

// Fault makes the proxy answer calls of one operation with an error.
type Fault struct {
	// Service and Operation select the calls, as wire.Call names them
	// ("EC2", "CreateFleet").
	Service, Operation string
	// Code and Status are the AWS error code and HTTP status to answer
	// with, such as RequestLimitExceeded and 503 (EC2's throttling), or
	// InternalError and 500.
	Code   string
	Status int
	// Times is how many calls fail; the fault is spent after that.
	Times int
}

type publicParameter struct {
	value    string
	version  int64
	modified time.Time
}

// StartProxy starts a proxy in front of the server that answers for
// region. Close stops it.
func (s *Server) StartProxy(region string) (*Proxy, error) {
	target, err := url.Parse(s.URL)
	if err != nil {
		return nil, fmt.Errorf("moto proxy: upstream %q: %w", s.URL, err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("moto proxy: listening on loopback: %w", err)
	}
	p := &Proxy{
		URL:      "http://" + l.Addr().String(),
		listener: l,
		params:   map[string]*publicParameter{},
		region:   region,
		ec2:      ec2.NewFromConfig(s.Config(region)),
	}
	p.forward = &httputil.ReverseProxy{
		Rewrite:        func(r *httputil.ProxyRequest) { r.SetURL(target) },
		ModifyResponse: p.complete,
		// moto is on loopback: never through an HTTP proxy of the
		// environment.
		Transport: &http.Transport{Proxy: nil},
		// A caller that went away (a long poll cut short when the
		// controller stops) is no error worth a log line.
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() == nil {
				http.Error(w, "moto proxy: "+err.Error(), http.StatusBadGateway)
			}
		},
	}
	p.server = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = p.server.Serve(l) }()
	return p, nil
}

// Close stops the proxy.
func (p *Proxy) Close() error {
	if err := p.server.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// SetParameter makes GetParameter of name answer value, as AWS's public
// parameters do; each call raises the parameter's version, as a new
// release of an image does.
func (p *Proxy) SetParameter(name, value string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	par, ok := p.params[name]
	if !ok {
		par = &publicParameter{}
		p.params[name] = par
	}
	par.value = value
	par.version++
	par.modified = time.Now()
}

// Fail adds f: the next f.Times calls it selects are answered with its error
// and never reach moto.
func (p *Proxy) Fail(f Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = append(p.faults, &f)
}

// OnCall sets a function called with each call before it is forwarded (or
// failed), while the resources it names still exist as they were: an
// Authorizer uses it to read the tags of what a call deletes.
func (p *Proxy) OnCall(f func(wire.Call)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hook = f
}

// Calls returns every request seen so far, in order of arrival.
func (p *Proxy) Calls() []Recorded {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Recorded(nil), p.calls...)
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "reading the request: "+err.Error(), http.StatusBadRequest)
		return
	}
	rec := Recorded{}
	call, err := wire.Read(r, body)
	if err != nil {
		rec.Unread = err.Error()
	} else {
		rec.Call = call
		p.mu.Lock()
		hook := p.hook
		p.mu.Unlock()
		if hook != nil {
			hook(call)
		}
	}
	sw := &statusWriter{ResponseWriter: w}
	switch {
	case rec.Unread != "":
		p.pass(sw, r, body, call)
	case p.inject(sw, call, &rec):
	case p.answerParameter(sw, call):
	default:
		p.pass(sw, r, body, call)
	}
	rec.Status = sw.status
	p.mu.Lock()
	p.calls = append(p.calls, rec)
	p.mu.Unlock()
}

func (p *Proxy) pass(w http.ResponseWriter, r *http.Request, body []byte, call wire.Call) {
	r = r.WithContext(context.WithValue(r.Context(), callKey{}, call))
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	p.forward.ServeHTTP(w, r)
}

// inject answers call with the first fault that selects it, if any.
func (p *Proxy) inject(w http.ResponseWriter, call wire.Call, rec *Recorded) bool {
	p.mu.Lock()
	var f *Fault
	for i, c := range p.faults {
		if c.Service == call.Service && c.Operation == call.Operation {
			f = c
			if c.Times--; c.Times <= 0 {
				p.faults = append(p.faults[:i], p.faults[i+1:]...)
			}
			break
		}
	}
	p.mu.Unlock()
	if f == nil {
		return false
	}
	rec.Injected = f.Code
	writeError(w, call.Service, f.Status, f.Code, "injected by the test's proxy in front of moto")
	return true
}

// answerParameter answers GetParameter for a parameter set with
// SetParameter, in SSM's JSON protocol.
func (p *Proxy) answerParameter(w http.ResponseWriter, call wire.Call) bool {
	in, ok := call.Input.(*ssm.GetParameterInput)
	if !ok || call.Service != "SSM" {
		return false
	}
	name := aws.ToString(in.Name)
	p.mu.Lock()
	par, ok := p.params[name]
	var answer map[string]any
	if ok {
		answer = map[string]any{"Parameter": map[string]any{
			"ARN":              fmt.Sprintf("arn:aws:ssm:%s::parameter/%s", p.region, strings.TrimPrefix(name, "/")),
			"DataType":         "text",
			"LastModifiedDate": float64(par.modified.UnixMilli()) / 1000,
			"Name":             name,
			"Type":             "String",
			"Value":            par.value,
			"Version":          par.version,
		}}
	}
	p.mu.Unlock()
	if !ok {
		return false
	}
	b, _ := json.Marshal(answer)
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_, _ = w.Write(b)
	return true
}

// writeError writes an AWS error in the shape the service's protocol uses,
// which is what the SDK's deserializers read the code from.
func writeError(w http.ResponseWriter, service string, status int, code, message string) {
	const requestID = "00000000-0000-0000-0000-000000000000"
	switch service {
	case "EC2":
		type errorXML struct {
			Code    string `xml:"Code"`
			Message string `xml:"Message"`
		}
		doc := struct {
			XMLName   xml.Name   `xml:"Response"`
			Errors    []errorXML `xml:"Errors>Error"`
			RequestID string     `xml:"RequestID"`
		}{Errors: []errorXML{{code, message}}, RequestID: requestID}
		writeXML(w, status, doc)
	case "IAM", "STS":
		doc := struct {
			XMLName xml.Name `xml:"ErrorResponse"`
			Error   struct {
				Type    string `xml:"Type"`
				Code    string `xml:"Code"`
				Message string `xml:"Message"`
			} `xml:"Error"`
			RequestID string `xml:"RequestId"`
		}{RequestID: requestID}
		doc.Error.Type, doc.Error.Code, doc.Error.Message = "Sender", code, message
		if status >= 500 {
			doc.Error.Type = "Receiver"
		}
		writeXML(w, status, doc)
	case "EKS", "ARCZonalShift":
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amzn-Errortype", code)
		w.WriteHeader(status)
		b, _ := json.Marshal(map[string]string{"message": message})
		_, _ = w.Write(b)
	default: // the JSON protocols: SSM, SQS, Pricing, EventBridge
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.WriteHeader(status)
		b, _ := json.Marshal(map[string]string{"__type": code, "message": message})
		_, _ = w.Write(b)
	}
}

func writeXML(w http.ResponseWriter, status int, doc any) {
	b, err := xml.Marshal(doc)
	if err != nil {
		panic(err) // the documents above always marshal
	}
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(status)
	_, _ = w.Write(append([]byte(xml.Header), b...))
}

// statusWriter remembers the status of the answer.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the writer's Flush, which the
// reverse proxy uses for long-polled answers.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
