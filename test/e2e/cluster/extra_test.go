package cluster

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestStartProcess(t *testing.T) {
	c := &Cluster{Dir: t.TempDir()}
	if err := os.MkdirAll(c.LogDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p, err := c.StartProcess(ctx, ProcessOptions{Name: "sleeper", Path: "/bin/sh", Args: []string{"-c", "echo started $GREETING; exec sleep 60"}, Env: []string{"GREETING=hello"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.StartProcess(ctx, ProcessOptions{Name: "sleeper", Path: "/bin/true"}); err == nil {
		t.Error("a second process of the same name started")
	}
	if _, err := c.StartProcess(ctx, ProcessOptions{Name: "../escape", Path: "/bin/true"}); err == nil {
		t.Error("a name with a path started")
	}
	short, err := c.StartProcess(ctx, ProcessOptions{Name: "short", Path: "/bin/sh", Args: []string{"-c", "echo done"}})
	if err != nil {
		t.Fatal(err)
	}
	<-short.Done()
	if done, err := short.Exited(); !done || err == nil {
		t.Errorf("exited %v, %v", done, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(p.Tail(5), "started hello") {
		if time.Now().After(deadline) {
			t.Fatalf("log: %q", p.Tail(5))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if p.PID() == 0 || p.Log() != filepath.Join(c.LogDir(), "sleeper.log") {
		t.Errorf("pid %d, log %s", p.PID(), p.Log())
	}
	var b strings.Builder
	c.WriteLogTails(&b, 5)
	if !strings.Contains(b.String(), "sleeper.log") || !strings.Contains(b.String(), "short.log") {
		t.Errorf("log tails: %s", b.String())
	}

	p.Kill()
	if done, _ := p.Exited(); !done {
		t.Error("killed process still running")
	}
	// Stop stops what still runs and refuses new processes.
	third, err := c.StartProcess(ctx, ProcessOptions{Name: "third", Path: "/bin/sh", Args: []string{"-c", "exec sleep 60"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if done, _ := third.Exited(); !done {
		t.Error("Stop left a process running")
	}
	if _, err := c.StartProcess(ctx, ProcessOptions{Name: "late", Path: "/bin/true"}); err == nil {
		t.Error("started a process on a stopped cluster")
	}
}

func TestStartProcessWaitsForHealth(t *testing.T) {
	c := &Cluster{Dir: t.TempDir()}
	if err := os.MkdirAll(c.LogDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := c.StartProcess(context.Background(), ProcessOptions{
		Name: "unhealthy", Path: "/bin/sh", Args: []string{"-c", "echo cannot serve; exit 3"},
		Health: "http://127.0.0.1:1/healthz", HealthTimeout: 5 * time.Second,
	})
	if err == nil || !strings.Contains(err.Error(), "cannot serve") {
		t.Errorf("error %v, want the log's end", err)
	}
	_ = c.Stop()
}
