// Command motocluster runs `stevedore controller` with its production AWS
// clients against moto, an AWS emulator, on the local cluster: no AWS
// account, no traffic beyond loopback.
//
// It starts a moto server, writes into it the account of an EKS cluster
// (VPC, subnets and security group tagged for discovery, node role, EKS
// cluster, interruption queue), starts the proxy that answers the
// EKS-optimized image parameters moto lacks, plays the kubelet of every
// instance moto launches (a KWOK Node), and runs the controller pointed at
// the proxy until interrupted. The cluster is named prod-eks by default, as
// in examples/spot-mix.yaml, so that example applies unchanged.
//
// Usage (hack/moto-controller.sh starts the local cluster and builds the
// binary first):
//
//	go run ./hack/motocluster --kubeconfig .local-cluster/kubeconfig --stevedore bin/stevedore
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-autoscaler/stevedore/test/moto"
)

func main() {
	kubeconfig := flag.String("kubeconfig", ".local-cluster/kubeconfig", "the local cluster's kubeconfig")
	stevedore := flag.String("stevedore", "bin/stevedore", "the stevedore binary to run")
	cluster := flag.String("cluster-name", "prod-eks", "the EKS cluster's name: the discovery tags, the node role KarpenterNodeRole-<name> and the queue")
	region := flag.String("region", "us-west-2", "the region")
	flag.Parse()
	if err := run(*kubeconfig, *stevedore, *cluster, *region, flag.Args()); err != nil {
		log.Fatalf("motocluster: %v", err)
	}
}

func run(kubeconfig, stevedore, cluster, region string, extra []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rest, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("reading %s (start the local cluster with hack/local-cluster.sh up): %w", kubeconfig, err)
	}
	v, err := discovery.NewDiscoveryClientForConfigOrDie(rest).ServerVersion()
	if err != nil {
		return fmt.Errorf("asking the cluster at %s for its version: %w", rest.Host, err)
	}
	kube, err := client.New(rest, client.Options{}) // Nodes only: client-go's scheme
	if err != nil {
		return err
	}
	if err := moto.Check(); err != nil {
		return err
	}
	server, err := moto.StartServer()
	if err != nil {
		return err
	}
	defer server.Stop()
	cfg := server.Config(region)
	acc, err := moto.SetUpAccount(ctx, cfg, cluster)
	if err != nil {
		return fmt.Errorf("writing the account into moto: %w", err)
	}
	proxy, err := server.StartProxy(region)
	if err != nil {
		return err
	}
	defer proxy.Close()
	version := v.Major + "." + strings.TrimSuffix(v.Minor, "+")
	if err := moto.PublishImages(proxy, version, acc.ImageAMD64, acc.ImageARM64); err != nil {
		return err
	}
	go moto.RunKubelets(ctx, ec2.NewFromConfig(cfg), cluster, kube, func(err error) { log.Printf("kubelets: %v", err) })

	args := append([]string{"controller", "--kubeconfig=" + kubeconfig, "--cloud=aws", "--cluster-name=" + cluster,
		"--interruption-queue=" + acc.Queue, "--leader-elect=false"}, extra...)
	cmd := exec.Command(stevedore, args...)
	cmd.Env = append(os.Environ(), "AWS_ENDPOINT_URL="+proxy.URL, "AWS_REGION="+region,
		"AWS_ACCESS_KEY_ID=testing", "AWS_SECRET_ACCESS_KEY=testing", "AWS_EC2_METADATA_DISABLED=true")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	fmt.Fprintf(os.Stderr, `motocluster: moto at %s, reached through %s; account of cluster %q in %s:
  subnets %v, security group %s, node role %s, queue %s
  AL2023 and Bottlerocket aliases resolve to %s (amd64) and %s (arm64) for Kubernetes %s
Apply a NodePool and EC2NodeClass for it (examples/spot-mix.yaml for prod-eks) and a workload.
Look at moto with the AWS CLI: aws --endpoint-url %s --region %s ec2 describe-instances
Ctrl-C stops the controller and moto.
`, server.URL, proxy.URL, cluster, region, acc.Subnets, acc.SecurityGroup, acc.NodeRole, acc.QueueURL, acc.ImageAMD64, acc.ImageARM64, version, server.URL, region)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", stevedore, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		return fmt.Errorf("the controller exited: %w", err)
	case <-ctx.Done():
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			return err
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
	}
	return nil
}
