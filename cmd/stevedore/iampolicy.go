package main

import (
	"fmt"
	"regexp"

	"github.com/spf13/cobra"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/iampolicy"
)

// partitionRE matches the AWS partitions: aws, aws-cn, aws-us-gov and the
// isolated ones.
var partitionRE = regexp.MustCompile(`^aws(-[a-z]+)*$`)

func newIAMPolicyCommand() *cobra.Command {
	var p iampolicy.Params
	var nodeRole bool
	cmd := &cobra.Command{
		Use:   "iam-policy",
		Short: "Print the controller's IAM policy",
		Long: `Print the IAM policy the stevedore controller needs, as JSON, generated from
the inventory of every AWS call stevedore makes. It uses the statement names and
tag conditions of Karpenter's controller policy, so either policy admits the
other's requests. Values not given as flags stay shell-style placeholders
(${CLUSTER_NAME}, ${AWS_REGION}, ...) for envsubst.

With --enable-zonal-shift, add the statement that lets the controller read the
cluster's ARC zonal shifts (AllowZonalShiftStatusReadOnly), needed when it runs
with --enable-zonal-shift.

With --node-role, print the node role instead: its trust policy and the AWS
managed policies it carries.`,
		Example: `  stevedore iam-policy --cluster-name my-cluster --region us-east-1 \
    --account-id 123456789012 --node-role-name StevedoreNodeRole-my-cluster \
    --interruption-queue my-cluster > controller-policy.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !partitionRE.MatchString(p.Partition) {
				return fmt.Errorf("--partition %q is not an AWS partition: use aws, aws-cn or aws-us-gov", p.Partition)
			}
			if p.AccountID != "" && !regexp.MustCompile(`^[0-9]{12}$`).MatchString(p.AccountID) {
				return fmt.Errorf("--account-id %q: an AWS account ID is 12 digits", p.AccountID)
			}
			out := iampolicy.ControllerPolicy(p).JSON()
			if nodeRole {
				out = iampolicy.NodeRolePolicy(p).JSON()
			}
			_, err := cmd.OutOrStdout().Write(out)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&p.ClusterName, "cluster-name", "", "EKS cluster name (default ${CLUSTER_NAME})")
	f.StringVar(&p.Partition, "partition", "aws", "AWS partition: aws, aws-cn, aws-us-gov")
	f.StringVar(&p.AccountID, "account-id", "", "AWS account ID (default ${AWS_ACCOUNT_ID})")
	f.StringVar(&p.Region, "region", "", "AWS region (default ${AWS_REGION})")
	f.StringVar(&p.NodeRoleName, "node-role-name", "", "name of the IAM role nodes run as (default ${NODE_ROLE_NAME})")
	f.StringVar(&p.QueueName, "interruption-queue", "", "name of the interruption SQS queue (default ${QUEUE_NAME})")
	f.BoolVar(&p.ZonalShift, "enable-zonal-shift", false, "add the statement a controller run with --enable-zonal-shift needs (arc-zonal-shift:GetManagedResource on this cluster)")
	f.BoolVar(&nodeRole, "node-role", false, "print the node role (trust policy and managed policies) instead of the controller policy")
	return cmd
}
