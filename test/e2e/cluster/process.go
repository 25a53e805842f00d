package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

// process is one component the cluster runs itself (etcd and kube-apiserver
// are run by envtest): its command line, its log file and, once started, its
// state.
type process struct {
	name    string
	path    string
	args    []string
	env     []string
	logPath string
	// health is polled until it answers 200 OK.
	health string
	// deathSignal is what the kernel sends the process when this one dies
	// (Linux only); zero means SIGKILL.
	deathSignal syscall.Signal

	cmd      *exec.Cmd
	done     chan struct{}
	waitErr  error
	stopping atomic.Bool
}

// start launches the process with its output going to its log file, which it
// truncates. The
// child is tied to the thread that started it (on Linux it receives its death
// signal when that thread ends), and that thread stays locked to the goroutine
// that waits for the child, so a test binary that dies without cleaning up
// does not leave the component running.
func (p *process) start() error {
	logFile, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	p.done = make(chan struct{})
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: the thread exits with the goroutine, after the
		// child has.
		cmd := exec.Command(p.path, p.args...)
		cmd.Stdout, cmd.Stderr = logFile, logFile
		cmd.Env = append(os.Environ(), p.env...)
		cmd.SysProcAttr = childAttrs(p.deathSignal)
		if err := cmd.Start(); err != nil {
			_ = logFile.Close()
			started <- err
			close(p.done)
			return
		}
		p.cmd = cmd
		started <- nil
		p.waitErr = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("starting %s: %w", p.name, err)
	}
	return nil
}

// exited reports whether the process has ended, and how.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		if p.waitErr == nil {
			return true, errors.New("exited with status 0")
		}
		return true, p.waitErr
	default:
		return false, nil
	}
}

func (p *process) pid() int {
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// stop sends SIGTERM and, if the process is still there after grace, SIGKILL.
func (p *process) stop(grace time.Duration) error {
	if p.cmd == nil {
		return nil
	}
	p.stopping.Store(true)
	if done, _ := p.exited(); done {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	_ = p.cmd.Process.Kill()
	<-p.done
	return fmt.Errorf("%s did not stop within %s of SIGTERM and was killed", p.name, grace)
}

// waitHealthy polls the process's health endpoint until it answers 200 OK, the
// process exits or ctx ends. The endpoints are on loopback; the scheduler's and
// controller manager's serve a self-signed certificate, which is not checked.
func (p *process) waitHealthy(ctx context.Context) error {
	client := &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // loopback health probe of a self-signed component
	}
	defer client.CloseIdleConnections()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var last string
	for {
		if done, err := p.exited(); done {
			return fmt.Errorf("%s exited while starting: %v", p.name, err)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.health, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not healthy at %s (last answer: %s): %w", p.name, p.health, last, ctx.Err())
		case <-tick.C:
		}
	}
}

// freePort returns a loopback TCP port nobody listens on at the moment of the
// call. The component binds it a moment later; a collision in between is
// possible but rare, and shows as the component failing to start.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port), nil
}
