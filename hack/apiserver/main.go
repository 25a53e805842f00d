// Command apiserver starts a real etcd and kube-apiserver on loopback with
// stevedore's CRDs installed, writes a kubeconfig, and runs until interrupted.
// It is what hack/local-apiserver.sh runs; tests use package test/apiserver
// directly.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/stevedore-autoscaler/stevedore/api/crds"
	"github.com/stevedore-autoscaler/stevedore/test/apiserver"
)

func main() {
	// A flag set of our own: controller-runtime registers a global -kubeconfig.
	flags := flag.NewFlagSet("apiserver", flag.ExitOnError)
	kubeconfig := flags.String("kubeconfig", "", "where to write the kubeconfig (default: print it)")
	noCRDs := flags.Bool("no-crds", false, "do not install stevedore's CRDs")
	logs := flags.Bool("logs", false, "show the control plane's logs")
	_ = flags.Parse(os.Args[1:])

	opts := apiserver.Options{Output: *logs}
	if !*noCRDs {
		all, err := crds.All()
		if err != nil {
			fail(err)
		}
		opts.CRDs = all
	}
	srv, err := apiserver.Start(opts)
	if err != nil {
		fail(err)
	}
	raw, err := srv.Kubeconfig()
	if err != nil {
		_ = srv.Stop()
		fail(err)
	}
	if *kubeconfig == "" {
		os.Stdout.Write(raw)
	} else if err := os.WriteFile(*kubeconfig, raw, 0o600); err != nil {
		_ = srv.Stop()
		fail(err)
	} else {
		fmt.Fprintf(os.Stderr, "kube-apiserver at %s; kubeconfig written to %s; Ctrl-C stops it\n", srv.Config.Host, *kubeconfig)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	if err := srv.Stop(); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "apiserver:", err)
	os.Exit(1)
}
