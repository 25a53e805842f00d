package main

import (
	"github.com/spf13/cobra"

	"github.com/stevedore-autoscaler/stevedore/api/crds"
)

func newCRDsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "crds",
		Short: "Print the CustomResourceDefinitions stevedore serves",
		Long: `Print the NodePool, NodeClaim and EC2NodeClass CustomResourceDefinitions as
one YAML stream, ready for "kubectl apply -f -". They are the same documents the
Helm chart installs and the offline validator checks against.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := cmd.OutOrStdout().Write(crds.YAML())
			return err
		},
	}
}
