package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-autoscaler/stevedore/snapshot"
)

func newSnapshotCommand() *cobra.Command {
	var (
		kubeconfig, kubeContext string
		opts                    snapshot.Options
	)
	cmd := &cobra.Command{
		Use:   "snapshot DIR",
		Short: "Write the cluster down as a directory that simulate and plan take as input",
		Long: `Read the cluster through the kubeconfig and write, into a new directory, what
a simulation of it needs, so that what-if questions (another NodePool, another
consolidation policy, a new AMI, a lost zone) can be asked of the simulated copy:

  scenario.yaml        a Scenario starting now: the cluster's name and Kubernetes
                       version, and the AWS account its EC2NodeClasses resolved
                       (region, zones, subnets, security groups, images)
  ec2nodeclasses.yaml  EC2NodeClasses and NodePools, without their status
  nodepools.yaml
  nodeclaims.yaml      NodeClaims and Nodes, with the status and creation time
  nodes.yaml           that expiry, drift and consolidation read
  policies.yaml        PriorityClasses and PodDisruptionBudgets
  volumes.yaml         PersistentVolumeClaims and their PersistentVolumes
  workloads.yaml       DaemonSets, StatefulSets, running Jobs and ReplicaSets
                       (those of Deployments without the owner reference)
  pods.yaml            pods that have not finished, mirror pods excepted

Every object is written without resourceVersion, managedFields and the rest of
what the API server keeps for itself, and without status except where the
simulator reads it. A summary says what was written and what was left out, and
why. Only list calls are made; docs/snapshot.md has the read-only ClusterRole.

The cluster name comes from --cluster-name, else from the karpenter.sh/discovery
tag the EC2NodeClasses select subnets by; the region from --region, else from
the nodes' topology.kubernetes.io/region label. DIR must not exist, or be empty.`,
		Example: `  stevedore snapshot ./prod-snapshot
  stevedore snapshot --context prod --duration 24h ./prod-day
  stevedore simulate ./prod-snapshot
  stevedore plan -f ./prod-snapshot`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if err := snapshot.CheckDir(dir); err != nil {
				return err
			}
			if d, err := time.ParseDuration(opts.Duration); err != nil || d <= 0 {
				return fmt.Errorf("--duration %q: write a positive Go duration such as 2h or 90m", opts.Duration)
			}
			cfg, err := cliRestConfig(kubeconfig, kubeContext)
			if err != nil {
				return err
			}
			version, err := kubernetesVersion(cfg)
			if err != nil {
				return err
			}
			scheme, err := newScheme()
			if err != nil {
				return err
			}
			kube, err := client.New(cfg, client.Options{Scheme: scheme})
			if err != nil {
				return fmt.Errorf("connecting to the API server: %w", err)
			}
			cluster, err := snapshot.Read(commandContext(cmd), kube, version)
			if err != nil {
				return err
			}
			opts.Now = time.Now().UTC().Truncate(time.Second)
			res, err := snapshot.Build(cluster, opts)
			if err != nil {
				return err
			}
			if err := snapshot.Write(dir, res.Files); err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), res.Summary(dir))
			return err
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&kubeconfig, flagKubeconfig, "", "path to a kubeconfig; empty means KUBECONFIG or ~/.kube/config, else the in-cluster configuration")
	fs.StringVar(&kubeContext, "context", "", "kubeconfig context to use; empty means the current one")
	fs.StringVar(&opts.ClusterName, "cluster-name", "", "EKS cluster name; empty means the karpenter.sh/discovery value the EC2NodeClasses select subnets by")
	fs.StringVar(&opts.Region, "region", "", "AWS region; empty means the nodes' topology.kubernetes.io/region label")
	fs.StringVar(&opts.Duration, "duration", snapshot.DefaultDuration, "how long the written Scenario runs")
	return cmd
}
