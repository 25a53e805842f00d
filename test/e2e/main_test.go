//go:build e2e

package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/stevedore-autoscaler/stevedore/test/apiserver"
	"github.com/stevedore-autoscaler/stevedore/test/e2e/cluster"
)

// The suite's cluster and clients, set up by TestMain.
var (
	testCluster *cluster.Cluster
	// kube reads and writes both Kubernetes' and stevedore's types.
	kube client.Client
	// clientset is for what the controller-runtime client does not do
	// conveniently, such as the Eviction API.
	clientset kubernetes.Interface
	// clusterFlags are the components' flags beyond hack/local-cluster's
	// (cluster.Options.Flags): none for the suite; the scale measurement,
	// built with the tag scale, sets them.
	clusterFlags map[string][]string
)

func TestMain(m *testing.M) {
	os.Exit(runSuite(m))
}

// runSuite starts one cluster for the package, runs the tests and stops it.
// A cluster that cannot start (the binaries not built, a component failing)
// fails the run with the reason; nothing is skipped. When a test fails, or a
// component died during the run, the end of every component's log is printed
// and the logs are kept.
func runSuite(m *testing.M) int {
	flag.Parse()
	// The suite's own clients log little; what they do log goes to stderr
	// with the rest. Without a logger, controller-runtime prints a warning
	// with a goroutine trace instead, which reads like a crash.
	ctrllog.SetLogger(funcr.New(func(prefix, args string) {
		fmt.Fprintln(os.Stderr, "e2e: controller-runtime:", prefix, args)
	}, funcr.Options{}))
	dir, err := os.MkdirTemp("", "stevedore-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()

	// The stevedore binary the tests run as a controller, built while the
	// cluster starts.
	built := make(chan error, 1)
	go func() {
		started := time.Now()
		var err error
		if stevedoreBin, err = buildStevedore(dir); err == nil {
			fmt.Fprintf(os.Stderr, "e2e: stevedore built in %s\n", time.Since(started).Round(100*time.Millisecond))
		}
		built <- err
	}()

	started := time.Now()
	c, err := cluster.Start(ctx, cluster.Options{Dir: dir, Progress: os.Stderr, Flags: clusterFlags})
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: starting the local cluster:", err)
		<-built
		return 1
	}
	testCluster = c
	fmt.Fprintf(os.Stderr, "e2e: local cluster up in %s (logs in %s)\n", time.Since(started).Round(100*time.Millisecond), c.LogDir())
	if err := <-built; err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		_ = c.Stop()
		return 1
	}
	if kube, err = client.New(c.Config, client.Options{Scheme: apiserver.Scheme()}); err == nil {
		clientset, err = kubernetes.NewForConfig(c.Config)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		_ = c.Stop()
		return 1
	}

	// The components are children of this process; envtest's etcd and
	// kube-apiserver would outlive it. Stop the cluster if the run is
	// interrupted or is about to hit go test's -timeout, which ends the
	// process without running deferred calls.
	done := make(chan struct{})
	defer close(done)
	go watchdog(ctx, done, c)

	code := m.Run()
	if err := c.Healthy(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: the cluster is unhealthy after the tests:", err)
		code = 1
	}
	if code != 0 {
		c.WriteLogTails(os.Stderr, 40)
	}
	if err := c.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: stopping the local cluster:", err)
		code = 1
	}
	if code == 0 {
		_ = os.RemoveAll(dir)
	} else {
		fmt.Fprintf(os.Stderr, "e2e: component logs kept in %s\n", c.LogDir())
	}
	return code
}

func watchdog(ctx context.Context, done <-chan struct{}, c *cluster.Cluster) {
	var deadline <-chan time.Time
	if f := flag.Lookup("test.timeout"); f != nil {
		if timeout, ok := f.Value.(flag.Getter).Get().(time.Duration); ok && timeout > 2*time.Minute {
			deadline = time.After(timeout - time.Minute)
		}
	}
	select {
	case <-done:
		return
	case <-ctx.Done():
		fmt.Fprintln(os.Stderr, "e2e: interrupted; stopping the local cluster")
		_ = c.Stop()
		os.Exit(1)
	case <-deadline:
		fmt.Fprintln(os.Stderr, "e2e: a minute before -timeout; stopping the local cluster")
		c.WriteLogTails(os.Stderr, 40)
		_ = c.Stop()
		fmt.Fprintf(os.Stderr, "e2e: component logs kept in %s\n", c.LogDir())
		// go test's own timeout follows and reports the running test.
	}
}
