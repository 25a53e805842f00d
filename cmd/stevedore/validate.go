package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/stevedore-autoscaler/stevedore/api/validation"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/checks"
)

// validateReport is the --output json document of stevedore validate.
type validateReport struct {
	Valid    bool                 `json:"valid"`
	Errors   int                  `json:"errors"`
	Warnings int                  `json:"warnings"`
	Problems []validation.Problem `json:"problems"`
}

func newValidateCommand() *cobra.Command {
	var files []string
	var output string
	cmd := &cobra.Command{
		Use:   "validate -f FILE|DIR|- ...",
		Short: "Check manifests the way the API server and stevedore would",
		Long: `Check NodePool, NodeClaim, NodeOverlay, EC2NodeClass and CapacityBuffer
manifests offline: the same schema, defaults and CEL rules the API server
applies once stevedore's CRDs are installed, plus the checks that need more
than CEL (budget cron schedules, well-known label values, NodeClass
references, NodeOverlay keys stevedore's controller refuses, CapacityBuffer
references), and migration advice for manifests written for older Karpenter
APIs. Other Kubernetes objects are checked for unknown fields.

Exit status: 0 when nothing is wrong (warnings allowed), 1 when any error is found.
Each problem is printed on one line: the file and document, the object, the
field, what is wrong, and the fix.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(files) == 0 {
				return fmt.Errorf("name what to validate with -f FILE, -f DIR or -f - for standard input")
			}
			if output != "text" && output != "json" {
				return fmt.Errorf("--output %q: use text or json", output)
			}
			v, err := checks.Validator()
			if err != nil {
				return err
			}
			problems, err := v.Paths(files, cmd.InOrStdin())
			if err != nil {
				return err
			}
			report := validateReport{Problems: problems}
			for _, p := range problems {
				if p.Severity == validation.SeverityError {
					report.Errors++
				} else {
					report.Warnings++
				}
			}
			report.Valid = report.Errors == 0
			out := cmd.OutOrStdout()
			if output == "json" {
				if report.Problems == nil {
					report.Problems = []validation.Problem{}
				}
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(report); err != nil {
					return err
				}
			} else {
				for _, p := range problems {
					fmt.Fprintln(out, p.String())
				}
				if report.Valid {
					fmt.Fprintf(cmd.ErrOrStderr(), "valid (%d warnings)\n", report.Warnings)
				} else {
					fmt.Fprintf(cmd.ErrOrStderr(), "%d errors, %d warnings\n", report.Errors, report.Warnings)
				}
			}
			if !report.Valid {
				return errSilentFailure
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVarP(&files, "filename", "f", nil, "file, directory (searched recursively for .yaml, .yml and .json) or - for standard input; repeatable")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}
