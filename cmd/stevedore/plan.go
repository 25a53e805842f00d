package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/stevedore-autoscaler/stevedore/api/validation"
	"github.com/stevedore-autoscaler/stevedore/cloud/offerings"
	"github.com/stevedore-autoscaler/stevedore/plan"
)

func newPlanCommand() *cobra.Command {
	var (
		files      []string
		output     string
		preference string
		spot       float64
		zones      []string
	)
	cmd := &cobra.Command{
		Use:   "plan -f FILE|DIR|- ...",
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
error, the problems are printed and the exit status is 1.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "text" && output != "json" {
				return fmt.Errorf("--output %q: use text or json", output)
			}
			policy, err := plan.ParsePreferencePolicy(preference)
			if err != nil {
				return fmt.Errorf("--preference-policy: %w", err)
			}
			opts := plan.Options{
				PreferencePolicy: policy,
				Offerings:        offerings.Options{Zones: zones, SpotPriceFraction: spot},
			}
			if err := opts.Offerings.Validate(); err != nil {
				return err
			}
			objs, problems, err := plan.Load(files, cmd.InOrStdin())
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
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	cmd.Flags().StringVar(&preference, "preference-policy", "Score", "how preferred affinity and ScheduleAnyway spread shape new nodes: Score, Respect or Ignore")
	cmd.Flags().Float64Var(&spot, "spot-price-fraction", offerings.DefaultSpotPriceFraction, "spot price as a fraction of the on-demand price")
	cmd.Flags().StringSliceVar(&zones, "zones", offerings.DefaultZones(), "zones every instance type is offered in, comma-separated")
	return cmd
}
