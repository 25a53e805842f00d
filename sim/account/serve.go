package account

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/sdk"
)

// The account's HTTP API, on loopback only:
//
//	GET  /v1/account                      Info
//	POST /v1/aws/{service}/{operation}    the operation of an sdk interface
//
// {service} is the name of an sdk.Clients field (EC2, SSM, SQS, IAM, EKS,
// Pricing) and {operation} a method of its interface. The request body is the
// SDK's input struct as JSON, the answer a reply: the output struct, or the
// error the in-memory AWS returned, described well enough for Dial's clients
// to rebuild it with the same code, message, fault, HTTP status and, for the
// error types the provider tests for, the same Go type.
const (
	pathAccount = "/v1/account"
	pathAWS     = "/v1/aws/"
)

type reply struct {
	Output json.RawMessage `json:"output,omitempty"`
	Error  *wireError      `json:"error,omitempty"`
}

// wireError is an error of the in-memory AWS on the wire.
type wireError struct {
	// Service and Operation are those of the smithy.OperationError.
	Service   string `json:"service,omitempty"`
	Operation string `json:"operation,omitempty"`
	Status    int    `json:"status,omitempty"`
	RequestID string `json:"requestID,omitempty"`
	// Code and Fault are the smithy.APIError's; empty Code: the error was
	// not an API error, and only Message is kept.
	Code    string `json:"code,omitempty"`
	Fault   string `json:"fault,omitempty"`
	Message string `json:"message"`
}

// operation is one method of one sdk interface.
type operation struct {
	fn reflect.Value
	in reflect.Type
}

// operations indexes the methods of every interface of clients by
// "{service}/{operation}".
func operations(clients sdk.Clients) map[string]operation {
	ops := map[string]operation{}
	v := reflect.ValueOf(clients)
	t := v.Type()
	for i := range t.NumField() {
		if v.Field(i).IsNil() {
			continue // a client the account does not offer
		}
		iface := t.Field(i).Type
		for j := range iface.NumMethod() {
			m := iface.Method(j)
			ops[t.Field(i).Name+"/"+m.Name] = operation{fn: v.Field(i).Method(j), in: m.Type.In(1).Elem()}
		}
	}
	return ops
}

// ListenLoopback listens on a loopback TCP address such as 127.0.0.1:0. It
// refuses any other: the account answers without authentication.
func ListenLoopback(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if !isLoopback(host) {
		return nil, fmt.Errorf("%s is not a loopback address: the simulated account is served on 127.0.0.1 or ::1 only", addr)
	}
	return net.Listen("tcp", addr)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Serve serves the account's AWS APIs on l until ctx ends. Use
// ListenLoopback for l.
func (a *Account) Serve(ctx context.Context, l net.Listener) error {
	srv := &http.Server{Handler: a.Handler(), ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Handler is the account's HTTP API.
func (a *Account) Handler() http.Handler {
	ops := operations(a.Clients())
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+pathAccount, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(a.Info)
	})
	mux.HandleFunc("POST "+pathAWS+"{service}/{operation}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("service") + "/" + r.PathValue("operation")
		op, ok := ops[name]
		if !ok {
			http.Error(w, "no operation "+name, http.StatusNotFound)
			return
		}
		in := reflect.New(op.in)
		body, err := io.ReadAll(r.Body)
		if err == nil {
			err = json.Unmarshal(body, in.Interface())
		}
		if err != nil {
			http.Error(w, fmt.Sprintf("%s: reading the input: %v", name, err), http.StatusBadRequest)
			return
		}
		results := op.fn.Call([]reflect.Value{reflect.ValueOf(r.Context()), in})
		var rep reply
		if errV := results[1]; !errV.IsNil() {
			rep.Error = toWire(errV.Interface().(error))
		} else if rep.Output, err = json.Marshal(results[0].Interface()); err != nil {
			http.Error(w, fmt.Sprintf("%s: encoding the output: %v", name, err), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(rep)
	})
	return mux
}

func toWire(err error) *wireError {
	we := &wireError{Message: err.Error()}
	var oe *smithy.OperationError
	if errors.As(err, &oe) {
		we.Service, we.Operation = oe.ServiceID, oe.OperationName
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		we.Status, we.RequestID = re.HTTPStatusCode(), re.ServiceRequestID()
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		we.Code, we.Message, we.Fault = ae.ErrorCode(), ae.ErrorMessage(), ae.ErrorFault().String()
	}
	return we
}
