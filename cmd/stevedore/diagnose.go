package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/sdk"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/settings"
	"github.com/stevedore-autoscaler/stevedore/diagnose"
	"github.com/stevedore-autoscaler/stevedore/explain"
	"github.com/stevedore-autoscaler/stevedore/internal/version"
	"github.com/stevedore-autoscaler/stevedore/sim/runner"
	"github.com/stevedore-autoscaler/stevedore/sim/scenario"
)

// sourceOptions say where explain and diagnose read the cluster and the AWS
// account from.
type sourceOptions struct {
	kubeconfig        string
	kubeContext       string
	clusterName       string
	interruptionQueue string
	region            string
	controller        string
	scenario          string
	at                time.Duration
	noAWS             bool
}

func (o *sourceOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.kubeconfig, flagKubeconfig, "", "path to a kubeconfig; empty means KUBECONFIG or ~/.kube/config, else the in-cluster configuration")
	fs.StringVar(&o.kubeContext, "context", "", "kubeconfig context to use; empty means the current one")
	fs.StringVar(&o.clusterName, settings.FlagClusterName, os.Getenv(settings.EnvVar(settings.FlagClusterName)),
		"EKS cluster name; empty means the controller's CLUSTER_NAME (env "+settings.EnvVar(settings.FlagClusterName)+")")
	fs.StringVar(&o.interruptionQueue, settings.FlagInterruptionQueue, os.Getenv(settings.EnvVar(settings.FlagInterruptionQueue)),
		"interruption queue name; empty means the controller's INTERRUPTION_QUEUE (env "+settings.EnvVar(settings.FlagInterruptionQueue)+")")
	fs.StringVar(&o.region, "region", "", "AWS region; empty means the AWS configuration's (AWS_REGION, the profile)")
	fs.StringVar(&o.controller, "controller-service-account", "", "the controller's service account as NAMESPACE/NAME; empty means the one of the pods labelled app.kubernetes.io/name=stevedore")
	fs.StringVar(&o.scenario, "scenario", "", "instead of a live cluster, run this Scenario file or directory (as stevedore simulate does) and read the simulated cluster and AWS account it ends in")
	fs.DurationVar(&o.at, "at", 0, "with --scenario: stop the simulation this long after its start rather than at its end (default: its end)")
	fs.BoolVar(&o.noAWS, "no-aws", false, "do not call AWS: AWS checks report not checked, instance types come from the embedded catalog (default false)")
}

func (o *sourceOptions) validate() error {
	if o.at < 0 || (o.at > 0 && o.scenario == "") {
		return fmt.Errorf("--at %s: use a positive duration, with --scenario", o.at)
	}
	if o.controller != "" {
		if ns, name, ok := strings.Cut(o.controller, "/"); !ok || ns == "" || name == "" {
			return fmt.Errorf("--controller-service-account %q: use NAMESPACE/NAME", o.controller)
		}
	}
	return nil
}

// awsAccess is the AWS account a command reads, or why it cannot.
type awsAccess struct {
	clients sdk.Clients
	region  string
	err     error
}

// defaultAWS builds read-only-used AWS clients from the default credential
// chain. Missing credentials are not an error: the commands still read the
// cluster, and the AWS checks say they could not look.
func defaultAWS(ctx context.Context, o *sourceOptions) awsAccess {
	if o.noAWS {
		return awsAccess{region: o.region, err: errors.New("--no-aws was given")}
	}
	opts := []func(*awsconfig.LoadOptions) error{awsconfig.WithAppID("stevedore-" + version.Get().Version)}
	if o.region != "" {
		opts = append(opts, awsconfig.WithRegion(o.region))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return awsAccess{region: o.region, err: fmt.Errorf("loading the AWS configuration: %w", err)}
	}
	if cfg.Region == "" {
		return awsAccess{err: errors.New("no AWS region: set --region or AWS_REGION")}
	}
	check, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := cfg.Credentials.Retrieve(check); err != nil {
		return awsAccess{region: cfg.Region, err: fmt.Errorf("no AWS credentials: %w", err)}
	}
	return awsAccess{clients: sdk.NewFromConfig(cfg), region: cfg.Region}
}

// cliRestConfig returns the client configuration of a command run by a
// person: the kubeconfig given, else the usual loading rules (KUBECONFIG,
// ~/.kube/config), else the in-cluster configuration.
func cliRestConfig(path, kubeContext string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if path != "" {
		rules = &clientcmd.ClientConfigLoadingRules{Precedence: filepath.SplitList(path)}
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig: %w (set --%s)", err, flagKubeconfig)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 50, 100
	cfg.UserAgent = "stevedore-cli/" + version.Get().Version
	return cfg, nil
}

// readWorld reads the world the options name: the simulated one of
// --scenario, or the live cluster and AWS account as of now.
func readWorld(ctx context.Context, o *sourceOptions) (*diagnose.World, error) {
	if o.scenario != "" {
		return loadScenarioWorld(ctx, o)
	}
	return loadWorld(ctx, o, defaultAWS(ctx, o), time.Now())
}

// loadScenarioWorld runs the scenario in the simulator — the production
// controllers against the in-memory API server and AWS — up to --at or its
// end, and reads the world it ends in exactly as a live one is read.
func loadScenarioWorld(ctx context.Context, o *sourceOptions) (*diagnose.World, error) {
	scheme, err := newScheme()
	if err != nil {
		return nil, err
	}
	run, problems, err := scenario.Load([]string{o.scenario}, scheme)
	if errors.Is(err, scenario.ErrInvalid) {
		var lines []string
		for _, p := range problems {
			lines = append(lines, p.String())
		}
		return nil, fmt.Errorf("%w:\n%s", err, strings.Join(lines, "\n"))
	}
	if err != nil {
		return nil, err
	}
	if o.at > 0 {
		if o.at > run.Duration {
			return nil, fmt.Errorf("--at %s is past the end of the scenario, %s after its start", o.at, run.Duration)
		}
		run.Duration = o.at
	}
	r, err := runner.New(runner.Options{Run: run, Scheme: scheme})
	if err != nil {
		return nil, err
	}
	if _, err := r.Run(); err != nil {
		return nil, fmt.Errorf("simulating %s: %w", o.scenario, err)
	}
	st := run.Controller.Settings
	if st.ClusterName == "" {
		st.ClusterName = run.ClusterName
	}
	if o.clusterName != "" {
		st.ClusterName = o.clusterName
	}
	if o.interruptionQueue != "" {
		st.InterruptionQueue = o.interruptionQueue
	}
	opts := explain.Options{PreferencePolicy: run.Controller.PreferencePolicy, MinValuesPolicy: run.Controller.MinValuesPolicy, SpotToSpot: run.Controller.SpotToSpot}
	w, err := diagnose.Load(ctx, diagnose.Source{Reader: r.API(), AWS: r.AWS().Clients(), Settings: st, Region: r.AWS().Region(),
		Now: r.Clock().Now(), Explain: &opts})
	if err != nil {
		return nil, err
	}
	w.Notes = append(w.Notes, fmt.Sprintf("simulated: scenario %s at %s (%s after its start); the simulated controller runs without a pod, so its credentials are not checked",
		run.Name, r.Clock().Now().UTC().Format(time.RFC3339), r.Clock().Now().Sub(run.Start)))
	return w, nil
}

// loadWorld reads the live cluster and AWS account into a diagnose.World as
// of now.
func loadWorld(ctx context.Context, o *sourceOptions, acc awsAccess, now time.Time) (*diagnose.World, error) {
	cfg, err := cliRestConfig(o.kubeconfig, o.kubeContext)
	if err != nil {
		return nil, err
	}
	scheme, err := newScheme()
	if err != nil {
		return nil, err
	}
	kube, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("connecting to the API server: %w", err)
	}
	st := settings.Default()
	st.ClusterName, st.InterruptionQueue = o.clusterName, o.interruptionQueue
	src := diagnose.Source{Reader: kube, AWS: acc.clients, AWSError: acc.err, Settings: st, Region: acc.region, Now: now}
	if ns, name, ok := strings.Cut(o.controller, "/"); ok {
		src.Controller = types.NamespacedName{Namespace: ns, Name: name}
	}
	return diagnose.Load(ctx, src)
}

func newDiagnoseCommand() *cobra.Command {
	var (
		src    sourceOptions
		output string
	)
	cmd := &cobra.Command{
		Use:   "diagnose",
		Short: "Walk the provisioning path and say where the cluster is stuck",
		Long: `Check, step by step, the path a pending pod takes to a running node, and print
one line per finding: PASS, WARN or FAIL, the check, the object, what was seen,
and under each WARN and FAIL the fix.

The checks, in order: pending pods and whether any NodePool can take them (the
scheduling engine's reasons); NodePools (may launch, limits, weight shadows,
budgets at zero now); EC2NodeClasses (every condition, and for a selector that
matches nothing, the tags it looked for and the similar tags that exist);
subnet free addresses; the node role's EKS access entry or aws-auth mapping;
NodeClaims stuck before Launched (for example an iam:PassRole denial), launched
but not registered (the instance's state, the node role's authorization, the
subnet's free addresses), registered but not initialized (startup taints,
NotReady); the controller's credentials (Pod Identity association or IRSA);
the interruption queue and its EventBridge rules; and risks: @latest AMI
aliases, pods that pin their nodes with do-not-disrupt, consolidateAfter values
that keep empty nodes, budgets that never open.

The cluster is read through the kubeconfig, AWS through the default credential
chain; only describe, list and get calls are made. The cluster name and the
interruption queue default to the controller's own settings, read from its
pods. With --scenario the cluster and the account are the simulated ones a
scenario ends in (or is in at --at). The exit status is 1 when any check fails.`,
		Example: `  stevedore diagnose
  stevedore diagnose --context prod --region eu-west-1 -o json
  stevedore diagnose --scenario examples/drift-upgrade --at 30m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "text" && output != "json" {
				return fmt.Errorf("--output %q: use text or json", output)
			}
			if err := src.validate(); err != nil {
				return err
			}
			ctx := commandContext(cmd)
			w, err := readWorld(ctx, &src)
			if err != nil {
				return err
			}
			return writeDiagnosis(ctx, w, output, cmd.OutOrStdout())
		},
	}
	src.addFlags(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}

// writeDiagnosis runs every check on w and prints the report; it returns
// errSilentFailure when a check failed, for exit status 1.
func writeDiagnosis(ctx context.Context, w *diagnose.World, output string, out io.Writer) error {
	r := diagnose.Run(ctx, w, diagnose.Checks())
	var err error
	if output == "json" {
		err = r.WriteJSON(out)
	} else {
		err = r.WriteText(out)
	}
	if err != nil {
		return err
	}
	if r.Failed() {
		return errSilentFailure
	}
	return nil
}

func commandContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}
