package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stevedore-autoscaler/stevedore/diagnose"
	"github.com/stevedore-autoscaler/stevedore/explain"
)

func newExplainCommand() *cobra.Command {
	var (
		src       sourceOptions
		output    string
		namespace string
	)
	cmd := &cobra.Command{
		Use:   "explain pod|node|nodepool NAME",
		Short: "Say why a pod is pending, why a node is kept, or what a NodePool's budgets allow",
		Long: `Read the cluster and replay stevedore's own decisions on it locally:

  explain pod [NAMESPACE/]NAME   a pending pod: for every NodePool, the constraint
                                 that rules it out, or the NodePool and instance
                                 types that would take it; a bound pod: its node.
  explain node NAME              why the node is not consolidated or replaced
                                 (do-not-disrupt, PDB, budget, consolidateAfter
                                 with the time left, no cheaper replacement and the
                                 cheapest alternative's price), or the disruption
                                 coming for it (drift, expiry, a command under way).
  explain nodepool NAME          the budgets that apply now and the allowance left
                                 per reason, limits used, and the next budget window.

The cluster is read through the kubeconfig; instance types and prices through
AWS (the default credential chain, read-only calls), or from the embedded
catalog with --no-aws. With --scenario the cluster is the simulated one a
scenario ends in (or is in at --at). The answer is the one the controller
reaches on the same snapshot, because it comes from the same functions.`,
		Example: `  stevedore explain pod default/web-7d9f8-x2k4p
  stevedore explain node ip-10-0-1-7.ec2.internal -o json
  stevedore explain nodepool default
  stevedore explain node --scenario examples/drift-upgrade --at 20m ip-10-0-1-7.ec2.internal`,
	}
	run := func(kind string) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, args []string) error {
			if output != "text" && output != "json" {
				return fmt.Errorf("--output %q: use text or json", output)
			}
			if err := src.validate(); err != nil {
				return err
			}
			w, err := readWorld(commandContext(cmd), &src)
			if err != nil {
				return err
			}
			return writeExplanation(w, kind, args[0], namespace, output, cmd.OutOrStdout())
		}
	}
	for _, sub := range []struct{ use, kind, short string }{
		{"pod [NAMESPACE/]NAME", explain.KindPod, "Why a pod is pending, or where it runs or would run"},
		{"node NAME", explain.KindNode, "Why a node is kept, or what disruption is coming for it"},
		{"nodepool NAME", explain.KindNodePool, "A NodePool's budgets, allowances, limits and next budget window"},
	} {
		cmd.AddCommand(&cobra.Command{Use: sub.use, Short: sub.short, Args: cobra.ExactArgs(1), RunE: run(sub.kind)})
	}
	src.addFlags(cmd.PersistentFlags())
	cmd.PersistentFlags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	cmd.PersistentFlags().StringVarP(&namespace, "namespace", "n", "default", "namespace of a pod named without one")
	return cmd
}

// writeExplanation explains one object of w.
func writeExplanation(w *diagnose.World, kind, name, namespace, output string, out io.Writer) error {
	in := w.ExplainInput()
	var e *explain.Explanation
	var err error
	switch kind {
	case explain.KindPod:
		if ns, n, ok := strings.Cut(name, "/"); ok {
			namespace, name = ns, n
		}
		e, err = explain.Pod(in, namespace, name)
	case explain.KindNode:
		e, err = explain.Node(in, name)
	default:
		e, err = explain.NodePool(in, name)
	}
	if err != nil {
		return err
	}
	if output == "json" {
		return e.WriteJSON(out)
	}
	return e.WriteText(out)
}
