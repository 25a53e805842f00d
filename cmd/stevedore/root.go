package main

import (
	"errors"
	"io"

	"github.com/spf13/cobra"
)

// errSilentFailure makes the process exit with status 1 after a command has
// printed its own account of what failed.
var errSilentFailure = errors.New("failed")

func newRootCommand(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "stevedore",
		Short: "A Kubernetes node autoscaler that serves the Karpenter v1 APIs",
		Long: `stevedore watches pods that cannot be scheduled, launches right-sized EC2
instances for them, and removes nodes that are empty, underused, drifted, expired,
interrupted or unhealthy, within the disruption budgets you set. It serves the
karpenter.sh/v1 NodePool and NodeClaim and karpenter.k8s.aws/v1 EC2NodeClass APIs,
so existing manifests apply unchanged.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newVersionCommand(), newCRDsCommand(), newValidateCommand(), newPlanCommand(), newControllerCommand(), newSimulateCommand())
	root.AddCommand(newExplainCommand(), newDiagnoseCommand(), newSnapshotCommand(), newIAMPolicyCommand())
	return root
}
