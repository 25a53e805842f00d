package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"
)

// ProcessOptions describe a process to run next to the cluster, such as the
// stevedore controller under test.
type ProcessOptions struct {
	// Name names the process in errors and its log file, logs/NAME.log
	// (truncated at start). Names must be unique within a cluster.
	Name string
	// Path is the executable; Args its arguments.
	Path string
	Args []string
	// Env is added to this process's environment.
	Env []string
	// Health, when set, is a URL polled until it answers 200 OK before
	// StartProcess returns (https is not verified: loopback components
	// serve self-signed certificates).
	Health string
	// HealthTimeout bounds that wait (default 2 minutes).
	HealthTimeout time.Duration
}

// Process is a process started with StartProcess. Like the components, it
// gets SIGKILL from the kernel should the test binary die.
type Process struct {
	p *process
}

var processName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._-]*$`)

// StartProcess starts a process with its output in the cluster's log
// directory and, if opts.Health is set, waits until it is healthy. Stop
// stops it, if it is still running, before the cluster; WriteLogTails
// includes its log.
func (c *Cluster) StartProcess(ctx context.Context, opts ProcessOptions) (*Process, error) {
	if !processName.MatchString(opts.Name) {
		return nil, fmt.Errorf("process name %q: use letters, digits, '.', '_' and '-'", opts.Name)
	}
	c.stopMu.Lock()
	if c.stopped {
		c.stopMu.Unlock()
		return nil, errors.New("the cluster is stopped")
	}
	for _, e := range c.extra {
		if e.name == opts.Name {
			c.stopMu.Unlock()
			return nil, fmt.Errorf("a process named %s was started already", opts.Name)
		}
	}
	p := &process{
		name:    opts.Name,
		path:    opts.Path,
		args:    opts.Args,
		env:     opts.Env,
		logPath: filepath.Join(c.LogDir(), opts.Name+".log"),
		health:  opts.Health,
	}
	if err := p.start(); err != nil {
		c.stopMu.Unlock()
		return nil, err
	}
	c.extra = append(c.extra, p)
	c.stopMu.Unlock()

	if opts.Health != "" {
		timeout := opts.HealthTimeout
		if timeout <= 0 {
			timeout = 2 * time.Minute
		}
		waitCtx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		if err := p.waitHealthy(waitCtx); err != nil {
			_ = p.stop(5 * time.Second)
			return nil, fmt.Errorf("%w; the end of %s:\n%s", err, p.logPath, tail(p.logPath, 30))
		}
	}
	return &Process{p: p}, nil
}

// PID is the process ID.
func (p *Process) PID() int { return p.p.pid() }

// Log is the path of the process's log file.
func (p *Process) Log() string { return p.p.logPath }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.p.done }

// Exited reports whether the process has ended, and how.
func (p *Process) Exited() (bool, error) { return p.p.exited() }

// Stop sends SIGTERM and, if the process has not exited after grace,
// SIGKILL; the error says when it had to be killed.
func (p *Process) Stop(grace time.Duration) error { return p.p.stop(grace) }

// Kill sends SIGKILL, as a crash or an evicted pod would end the process,
// and waits for it to exit.
func (p *Process) Kill() {
	p.p.stopping.Store(true)
	if done, _ := p.p.exited(); done || p.p.cmd == nil {
		return
	}
	_ = p.p.cmd.Process.Kill()
	<-p.p.done
}

// Tail returns the last lines of the process's log.
func (p *Process) Tail(lines int) string { return tail(p.p.logPath, lines) }

// stopExtra stops the processes StartProcess started that still run.
func (c *Cluster) stopExtra() []error {
	var errs []error
	for i := len(c.extra) - 1; i >= 0; i-- {
		if err := c.extra[i].stop(15 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// extraLogs lists the log files of the processes StartProcess started.
func (c *Cluster) extraLogs() []string {
	c.stopMu.Lock()
	defer c.stopMu.Unlock()
	var out []string
	for _, p := range c.extra {
		if _, err := os.Stat(p.logPath); err == nil {
			out = append(out, p.logPath)
		}
	}
	return out
}
