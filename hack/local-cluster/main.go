// Command local-cluster runs the local cluster of package test/e2e/cluster for
// hack/local-cluster.sh, which builds it and calls it:
//
//	local-cluster run -dir DIR      start the cluster, run until SIGINT or SIGTERM
//	local-cluster status -dir DIR   report on a cluster started by run
//
// The flag files and kwok stages next to this file are the cluster's
// configuration; the end-to-end suite starts the same cluster from Go.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/stevedore-autoscaler/stevedore/test/e2e/cluster"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	// A flag set of our own: client-go and controller-runtime register globals.
	flags := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	dir := flags.String("dir", "", "the cluster's directory")
	_ = flags.Parse(os.Args[2:])
	if *dir == "" {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "run":
		err = run(*dir)
	case "status":
		err = status(*dir)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "local-cluster:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: local-cluster run|status -dir DIR")
	os.Exit(2)
}

// run starts the cluster, marks it ready for the script, watches it, and stops
// it on SIGINT or SIGTERM.
func run(dir string) error {
	// SIGINT or SIGTERM cancels ctx: during start-up that abandons the start
	// (Start stops what it began), afterwards it stops the cluster.
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()

	c, err := cluster.Start(ctx, cluster.Options{Dir: dir, Progress: os.Stdout})
	if err != nil {
		return err
	}
	ready := filepath.Join(dir, "ready")
	if err := os.WriteFile(ready, []byte(c.Config.Host+"\n"), 0o644); err != nil {
		_ = c.Stop()
		return err
	}
	fmt.Printf("kube-apiserver at %s; kubeconfig %s\n", c.Config.Host, c.Kubeconfig)
	for _, comp := range c.Components() {
		fmt.Printf("  %-24s pid %-8d log %s\n", comp.Name, comp.PID, comp.Log)
	}

	// Until told to stop, report once if the cluster becomes unhealthy (a
	// component exiting, the API server failing its readiness check) and once
	// more when it recovers; the components are not restarted.
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	var reported string
	for running := true; running; {
		select {
		case <-ctx.Done():
			fmt.Println("stopping the cluster")
			running = false
		case <-tick.C:
			msg := ""
			if err := c.Healthy(context.Background()); err != nil {
				msg = err.Error()
			}
			if msg != reported {
				if msg == "" {
					fmt.Println("cluster healthy again")
				} else {
					fmt.Printf("cluster unhealthy: %s\n", msg)
				}
				reported = msg
			}
		}
	}
	_ = os.Remove(ready)
	return c.Stop()
}

// status prints each component's process state and what the API server says,
// and fails unless all is well.
func status(dir string) error {
	pids, err := os.Open(filepath.Join(dir, "pids"))
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("no cluster is running in %s", dir)
	}
	if err != nil {
		return err
	}
	defer pids.Close()
	healthy := true
	sc := bufio.NewScanner(pids)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 {
			continue
		}
		pid, _ := strconv.Atoi(f[1])
		state := "running"
		if !alive(pid, f[2]) {
			state, healthy = "NOT RUNNING", false
		}
		fmt.Printf("  %-24s pid %-8d %s\n", f[0], pid, state)
	}
	if err := sc.Err(); err != nil {
		return err
	}

	kubeconfig := filepath.Join(dir, "kubeconfig")
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err != nil {
		fmt.Printf("  kube-apiserver at %s: NOT READY: %v\n", cfg.Host, err)
		return errors.New("the cluster is not healthy")
	}
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	readyNodes := 0
	for _, n := range nodes.Items {
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				readyNodes++
			}
		}
	}
	pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	running := 0
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning {
			running++
		}
	}
	fmt.Printf("  kube-apiserver at %s: ready; %d nodes (%d Ready), %d pods (%d Running)\n",
		cfg.Host, len(nodes.Items), readyNodes, len(pods.Items), running)
	if !healthy {
		return errors.New("the cluster is not healthy")
	}
	return nil
}

// alive reports whether pid is a live process running the executable at path
// (on Linux; elsewhere, whether the process exists).
func alive(pid int, path string) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	if runtime.GOOS != "linux" {
		return true
	}
	want, err := filepath.EvalSymlinks(path)
	if err != nil {
		return false
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	return err == nil && exe == want
}
