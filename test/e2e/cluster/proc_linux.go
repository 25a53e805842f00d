package cluster

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// childAttrs makes the kernel send the child sig (default SIGKILL) when the
// thread that started it ends, which is what happens to every thread when the
// parent process dies.
func childAttrs(sig syscall.Signal) *syscall.SysProcAttr {
	if sig == 0 {
		sig = syscall.SIGKILL
	}
	return &syscall.SysProcAttr{Pdeathsig: sig}
}

// guardScript is run by /bin/sh with process IDs as arguments. It waits, and
// when it receives SIGTERM, which the kernel sends it when the process that
// started it dies, it kills those processes. SIGKILL, not SIGTERM: a
// kube-apiserver shutting down gracefully while etcd goes away can hang for
// minutes, and an abandoned cluster has nothing worth shutting down cleanly.
const guardScript = `trap 'kill -KILL "$@" 2>/dev/null; exit 0' TERM
while :; do sleep 1 & wait $!; done`

// guard returns a process that terminates pids should this process die
// without stopping them: envtest starts etcd and kube-apiserver without a
// parent-death signal, and a test binary that panics or is killed would
// otherwise leave them running.
func guard(pids []int) *process {
	args := []string{"-c", guardScript, "guard"}
	for _, pid := range pids {
		if pid > 0 {
			args = append(args, strconv.Itoa(pid))
		}
	}
	if len(args) == 3 {
		return nil
	}
	return &process{name: "guard", path: "/bin/sh", args: args, logPath: os.DevNull, deathSignal: syscall.SIGTERM}
}

// childPID returns the process ID of a child of this process running the
// executable at path, or 0. envtest starts etcd and kube-apiserver without
// telling their process IDs; the cluster wants them for its pid file.
func childPID(path string) int {
	want, err := filepath.EvalSymlinks(path)
	if err != nil {
		return 0
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may contain spaces and parentheses.
		rest := string(stat)
		if i := strings.LastIndexByte(rest, ')'); i >= 0 {
			rest = rest[i+1:]
		}
		fields := strings.Fields(rest)
		if len(fields) < 2 || fields[1] != strconv.Itoa(self) {
			continue
		}
		if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && exe == want {
			return pid
		}
	}
	return 0
}
