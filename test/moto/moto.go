// Package moto runs moto, the open-source AWS emulator, as a loopback HTTP
// server for tests, and hands out an aws.Config whose clients talk to it.
//
// moto is a Python package: the server is `python3 -m moto.server`, started
// on a free port of 127.0.0.1 and stopped when the test ends. A machine
// without python3 or without moto (with its server extras) fails the test
// with a message naming what is missing; nothing is skipped.
//
// One server serves every service on one port: moto routes a request by the
// service named in its signature's credential scope, so the same BaseEndpoint
// works for EC2, SSM, SQS, IAM and EKS. Its state is global to the server;
// Reset empties it between cases.
package moto

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// Python is the interpreter the server runs under.
const Python = "python3"

// AccountID is the account moto answers as, unless told otherwise.
const AccountID = "123456789012"

// ErrMissing is wrapped by the error Check returns when python3 or the moto
// package cannot be used.
var ErrMissing = errors.New("moto is not available")

// Check reports whether python3 can import moto's server. The error says
// which of the two is missing and how to install it.
func Check() error {
	py, err := exec.LookPath(Python)
	if err != nil {
		return fmt.Errorf("%w: %s is not on PATH (on Debian: apt-get install python3 python3-pip)", ErrMissing, Python)
	}
	out, err := exec.Command(py, "-c", "import moto, moto.server").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s cannot import the Python package moto with its server extras (pip install 'moto[server]'): %v: %s",
			ErrMissing, py, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Server is one running moto server.
type Server struct {
	// URL is the server's base URL, http://127.0.0.1:PORT.
	URL string

	cmd    *exec.Cmd
	output *lockedBuffer
	done   chan struct{}
}

// Start starts a moto server for t and waits until it answers; it is
// stopped when t's cleanup runs. A missing python3 or moto, or a server that
// does not come up, fails t.
func Start(t testing.TB) *Server {
	t.Helper()
	if err := Check(); err != nil {
		t.Fatal(err)
	}
	s, err := StartServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// startAttempts bounds the retries when the port picked turns out taken
// (another process may bind it between the probe and the server's start).
const startAttempts = 3

// readyWait bounds how long a new server may take to answer; moto imports
// a good part of its service models at start, which takes seconds on a
// loaded machine.
const readyWait = 2 * time.Minute

// StartServer starts a moto server and waits until it answers, for a
// program rather than a test: Check first, and Stop the server when done.
func StartServer() (*Server, error) {
	var last error
	for range startAttempts {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s := &Server{
			URL:    "http://127.0.0.1:" + strconv.Itoa(port),
			output: &lockedBuffer{},
			done:   make(chan struct{}),
		}
		s.cmd = exec.Command(Python, "-m", "moto.server", "-H", "127.0.0.1", "-p", strconv.Itoa(port))
		s.cmd.Stdout, s.cmd.Stderr = s.output, s.output
		dieWithParent(s.cmd)
		if err := s.cmd.Start(); err != nil {
			return nil, fmt.Errorf("starting %s -m moto.server: %w", Python, err)
		}
		go func() { _ = s.cmd.Wait(); close(s.done) }()
		if last = s.waitReady(); last == nil {
			return s, nil
		}
		s.Stop()
	}
	return nil, last
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free loopback port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitReady polls moto's own API until it answers, or the process exits.
func (s *Server) waitReady() error {
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}
	deadline := time.Now().Add(readyWait)
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			return fmt.Errorf("moto server exited before answering:\n%s", s.output.String())
		default:
		}
		resp, err := client.Get(s.URL + "/moto-api/data.json")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("moto server did not answer at %s within %s:\n%s", s.URL, readyWait, s.output.String())
}

// Stop kills the server and waits for it to exit.
func (s *Server) Stop() {
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Kill()
	<-s.done
}

// Reset empties every service's state (POST /moto-api/reset).
func (s *Server) Reset(t testing.TB) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL+"/moto-api/reset", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: &http.Transport{Proxy: nil}}).Do(req)
	if err != nil {
		t.Fatalf("resetting moto: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("resetting moto: HTTP %d", resp.StatusCode)
	}
}

// Config returns an AWS configuration for region whose clients send every
// call to the server, signed with static fake credentials, through an HTTP
// client that ignores proxy settings. Retries are off (RetryMaxAttempts 1),
// so an error is the server's answer to the one request; set
// RetryMaxAttempts on the copy to have the SDK's retries back.
func (s *Server) Config(region string) aws.Config {
	return aws.Config{
		Region:           region,
		Credentials:      credentials.NewStaticCredentialsProvider("testing", "testing", ""),
		BaseEndpoint:     aws.String(s.URL),
		RetryMaxAttempts: 1,
		HTTPClient: awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
			tr.Proxy = nil
		}),
	}
}

// Output returns what the server has printed so far, for failure messages.
func (s *Server) Output() string { return s.output.String() }

// lockedBuffer collects the server's output from the goroutines exec starts.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
