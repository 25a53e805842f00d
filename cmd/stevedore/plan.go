package main

import (
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/stevedore-autoscaler/stevedore/api/validation"
	"github.com/stevedore-autoscaler/stevedore/cloud/offerings"
	"github.com/stevedore-autoscaler/stevedore/plan"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
)

func newPlanCommand() *cobra.Command {
	var (
		files           []string
		podFiles        []string
		output          string
		preference      string
		minValuesPolicy string
		spot            float64
		zones           []string
	)
	cmd := &cobra.Command{
		Use:   "plan -f FILE|DIR|- ... [--pods PODS.json]",
		Short: "Show the nodes stevedore would launch for a set of manifests",
		Long: `Read NodePools, EC2NodeClasses, workloads (Pods, Deployments, ReplicaSets,
StatefulSets, Jobs, DaemonSets) and optionally existing Nodes, and print the
NodeClaims stevedore would create for the pods: the NodePool, the instance types,
capacity types and zones each may use, its pods and its price per hour; the total;
a lower bound on the price of any plan and the ratio to it; and every pod that
cannot be placed, with the reason for each NodePool.

Prices are the embedded catalog's us-east-1 on-demand prices, with spot at a fixed
fraction of them; every instance type is offered in every zone given. Only the
Node objects given count as existing capacity.

The manifests are validated first, as 'stevedore validate' does: when any has an
error, the problems are printed and the exit status is 1.

--pods adds the pods of a JSON file to pack and price: a JSON array of Pods, or a
List or PodList of them as 'kubectl get pods -o json' prints. Each is packed as a
pending pod, wherever it runs today (its nodeName and status are ignored); pods
that have finished (Succeeded or Failed) are left out. The NodePools still come
from -f.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "text" && output != "json" {
				return fmt.Errorf("--output %q: use text or json", output)
			}
			policy, err := plan.ParsePreferencePolicy(preference)
			if err != nil {
				return fmt.Errorf("--preference-policy: %w", err)
			}
			minValues, err := plan.ParseMinValuesPolicy(minValuesPolicy)
			if err != nil {
				return fmt.Errorf("--min-values-policy: %w", err)
			}
			opts := plan.Options{
				PreferencePolicy: policy,
				MinValuesPolicy:  minValues,
				Offerings:        offerings.Options{Zones: zones, SpotPriceFraction: spot},
			}
			if err := opts.Offerings.Validate(); err != nil {
				return err
			}
			var pods []runtime.Object
			for _, f := range podFiles {
				if f == "-" && slices.Contains(files, "-") {
					return fmt.Errorf("--pods -: standard input is already read by -f -; give the pods as a file")
				}
				list, err := readPodList(f, cmd.InOrStdin())
				if err != nil {
					return err
				}
				for _, p := range list {
					pods = append(pods, p)
				}
			}
			var objs *plan.Objects
			var problems []validation.Problem
			if len(files) == 0 && len(podFiles) > 0 {
				objs = &plan.Objects{}
			} else {
				objs, problems, err = plan.Load(files, cmd.InOrStdin())
			}
			if errors.Is(err, plan.ErrInvalid) {
				for _, p := range problems {
					fmt.Fprintln(cmd.OutOrStdout(), p.String())
				}
				errs := 0
				for _, p := range problems {
					if p.Severity == validation.SeverityError {
						errs++
					}
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "%d errors, %d warnings: fix the manifests before planning\n", errs, len(problems)-errs)
				return errSilentFailure
			}
			if err != nil {
				return err
			}
			objs.Workloads = append(objs.Workloads, pods...)
			objs.Owned = true
			report, err := plan.Run(objs, opts)
			if err != nil {
				return err
			}
			if output == "json" {
				return report.WriteJSON(cmd.OutOrStdout())
			}
			return report.WriteText(cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringArrayVarP(&files, "filename", "f", nil, "file, directory (searched recursively for .yaml, .yml and .json) or - for standard input; repeatable")
	cmd.Flags().StringArrayVar(&podFiles, "pods", nil, "JSON file of pods to pack as pending (an array of Pods, or a List or PodList), or - for standard input; repeatable")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	cmd.Flags().StringVar(&preference, "preference-policy", string(packer.PreferenceRespect), "how preferred affinity and ScheduleAnyway spread shape new nodes: Respect (as the controller and Karpenter), Score or Ignore")
	cmd.Flags().StringVar(&minValuesPolicy, "min-values-policy", "Strict",
		"as the controller's: when too few instance types fit for a NodePool's minValues, Strict leaves the pods unschedulable and BestEffort launches with the minValues relaxed")
	cmd.Flags().Float64Var(&spot, "spot-price-fraction", offerings.DefaultSpotPriceFraction, "spot price as a fraction of the on-demand price")
	cmd.Flags().StringSliceVar(&zones, "zones", offerings.DefaultZones(), "zones every instance type is offered in, comma-separated")
	return cmd
}
