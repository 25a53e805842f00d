package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/arn"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	gozap "go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	// Registers controller_runtime_conversion_webhook_panics_total, which
	// Karpenter serves (at 0: neither serves a conversion webhook).
	_ "sigs.k8s.io/controller-runtime/pkg/webhook/conversion/metrics"

	autoscalingv1beta1 "github.com/stevedore-autoscaler/stevedore/api/autoscaling/v1beta1"
	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/karpenter/v1alpha1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/nodeclass"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/sdk"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/settings"
	"github.com/stevedore-autoscaler/stevedore/controllers"
	disruptionctl "github.com/stevedore-autoscaler/stevedore/controllers/disruption"
	"github.com/stevedore-autoscaler/stevedore/controllers/node/health"
	nodeclassstatus "github.com/stevedore-autoscaler/stevedore/controllers/nodeclass/status"
	"github.com/stevedore-autoscaler/stevedore/controllers/provisioning"
	"github.com/stevedore-autoscaler/stevedore/internal/kubemetrics"
	"github.com/stevedore-autoscaler/stevedore/internal/version"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/sim/account"
	"github.com/stevedore-autoscaler/stevedore/state"
)

// Flags of stevedore controller besides the AWS settings.
const (
	flagKubeconfig          = "kubeconfig"
	flagMetricsBindAddress  = "metrics-bind-address"
	flagHealthProbeAddress  = "health-probe-bind-address"
	flagLeaderElect         = "leader-elect"
	flagLeaderElectionNS    = "leader-election-namespace"
	flagLeaderElectionID    = "leader-election-id"
	flagBatchIdleDuration   = "batch-idle-duration"
	flagBatchMaxDuration    = "batch-max-duration"
	flagPreferencePolicy    = "preference-policy"
	flagEqualWeightOrder    = "nodepool-equal-weight-order"
	flagLogLevel            = "log-level"
	flagKubeClientQPS       = "kube-client-qps"
	flagKubeClientBurst     = "kube-client-burst"
	flagFeatureGates        = "feature-gates"
	flagValidationDelay     = "disruption-validation-delay"
	flagReplacementTimeout  = "disruption-replacement-timeout"
	flagMaxUnhealthy        = "node-repair-max-unhealthy-percent"
	flagActOnRebalance      = "interruption-act-on-rebalance"
	flagCloud               = "cloud"
	flagSimulatedAccount    = "simulated-account"
	defaultLeaderElectionNS = "kube-system"

	// Karpenter's names for the same settings, so that its environment
	// (METRICS_PORT, DISABLE_LEADER_ELECTION, ...) carries over.
	flagMetricsPort           = "metrics-port"
	flagHealthProbePort       = "health-probe-port"
	flagDisableLeaderElection = "disable-leader-election"
	flagLeaderElectionName    = "leader-election-name"
	flagMinValuesPolicy       = "min-values-policy"
	flagLogOutputPaths        = "log-output-paths"
	flagLogErrorOutputPaths   = "log-error-output-paths"
	flagMemoryLimit           = "memory-limit"
	flagEnableProfiling       = "enable-profiling"

	// stevedore's own: metrics over HTTPS behind the API server's
	// authentication and authorization.
	flagMetricsSecure  = "metrics-secure"
	flagMetricsCertDir = "metrics-cert-dir"

	flagDisableClusterStateObservability = "disable-cluster-state-observability"

	// Karpenter settings stevedore accepts and ignores (see
	// docs/operations.md for why each has no meaning here).
	flagCPURequests        = "cpu-requests"
	flagIgnoreDRARequests  = "ignore-dra-requests"
	flagKarpenterService   = "karpenter-service"
	flagDisableWebhook     = "disable-webhook"
	flagWebhookPort        = "webhook-port"
	flagWebhookMetricsPort = "webhook-metrics-port"
	flagAWSFeatureGates    = "aws-feature-gates"
)

// softMemoryShare is the part of the container's memory limit
// (--memory-limit) the Go runtime keeps its heap under, as Karpenter does:
// the rest is left to stacks and other memory the runtime does not count.
const softMemoryShare = 0.9

// The values of --cloud.
const (
	cloudAWS       = "aws"
	cloudSimulated = "simulated"
)

// serviceAccountNamespaceFile holds the namespace of the pod the controller
// runs in.
const serviceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// controllerOptions are the settings of stevedore controller.
type controllerOptions struct {
	settings settings.Settings

	kubeconfig         string
	metricsAddr        string
	probeAddr          string
	leaderElect        bool
	leaderElectionNS   string
	leaderElectionID   string
	batchIdle          time.Duration
	batchMax           time.Duration
	preferencePolicy   string
	equalWeightOrder   string
	logLevel           string
	kubeClientQPS      float32
	kubeClientBurst    int
	featureGates       string
	validationDelay    time.Duration
	replacementTimeout time.Duration
	maxUnhealthy       int
	actOnRebalance     bool
	cloud              string
	simulatedAccount   string
	metricsPort        int
	healthProbePort    int
	disableLeaderElect bool
	leaderElectionName string
	minValuesPolicy    string
	logOutputPaths     string
	logErrorPaths      string
	memoryLimit        int64
	enableProfiling    bool
	metricsSecure      bool
	metricsCertDir     string
	// disableObservability is Karpenter's
	// DISABLE_CLUSTER_STATE_OBSERVABILITY.
	disableObservability bool
	// ignored holds the Karpenter settings that are accepted and ignored;
	// they are parsed (so a malformed value is still reported) and unread.
	ignored struct {
		cpuRequests, webhookPort, webhookMetricsPort int
		ignoreDRA, noWebhook                         bool
		karpenterService, awsFeatureGates            string
	}
	envErr             error
	registerer         prometheus.Registerer // default: controller-runtime's registry, served on the metrics address
	logOutput          io.Writer             // default: standard error
	gracefulShutdownTO time.Duration         // default: controller-runtime's
	// addRunnables, when set, adds more to the manager (the simulated
	// account's kubelets).
	addRunnables func(manager.Manager) error
	// sharedProcess lets several managers run in one process, as tests of
	// leader election do: controller-runtime otherwise refuses a second
	// controller with the same name. Never set in production.
	sharedProcess bool
}

func defaultLeaderElectionNamespace() string {
	if b, err := os.ReadFile(serviceAccountNamespaceFile); err == nil {
		if ns := strings.TrimSpace(string(b)); ns != "" {
			return ns
		}
	}
	return defaultLeaderElectionNS
}

// addFlags registers every flag on fs. Each flag's default is its environment
// variable (upper case, '-' as '_') when set; a flag on the command line wins.
func (o *controllerOptions) addFlags(fs *pflag.FlagSet, getenv func(string) string) {
	o.settings = settings.Default()
	var errs []error
	if err := o.settings.AddFlags(fs, getenv); err != nil {
		errs = append(errs, err)
	}
	env := func(name string) string { return " (env " + settings.EnvVar(name) + ")" }
	fs.StringVar(&o.kubeconfig, flagKubeconfig, "", "path to a kubeconfig; empty means the in-cluster configuration of the pod"+env(flagKubeconfig))
	fs.StringVar(&o.metricsAddr, flagMetricsBindAddress, "", "address the Prometheus metrics are served on; 0 turns them off; empty means every interface on the metrics port"+env(flagMetricsBindAddress))
	fs.StringVar(&o.probeAddr, flagHealthProbeAddress, "", "address of the /healthz and /readyz probes; 0 turns them off; empty means every interface on the health probe port"+env(flagHealthProbeAddress))
	fs.IntVar(&o.metricsPort, flagMetricsPort, 8080, "port the metrics are served on, on every interface, unless a metrics bind address is set"+env(flagMetricsPort))
	fs.IntVar(&o.healthProbePort, flagHealthProbePort, 8081, "port of the health probes, on every interface, unless a health probe bind address is set"+env(flagHealthProbePort))
	fs.BoolVar(&o.leaderElect, flagLeaderElect, true, "elect a leader through a Lease so that only one replica acts"+env(flagLeaderElect))
	fs.BoolVar(&o.disableLeaderElect, flagDisableLeaderElection, false, "turn leader election off (Karpenter's name; the opposite of --"+flagLeaderElect+", and wins over it)"+env(flagDisableLeaderElection))
	fs.StringVar(&o.leaderElectionName, flagLeaderElectionName, "", "name of the leader-election Lease (Karpenter's name for --"+flagLeaderElectionID+", and wins over it)"+env(flagLeaderElectionName))
	fs.StringVar(&o.leaderElectionNS, flagLeaderElectionNS, defaultLeaderElectionNamespace(),
		"namespace of the leader-election Lease; default the pod's namespace, else "+defaultLeaderElectionNS+env(flagLeaderElectionNS))
	// Karpenter's Lease: a Karpenter replica and a stevedore replica in one
	// namespace (a rolling swap, a rollback) never lead at once.
	fs.StringVar(&o.leaderElectionID, flagLeaderElectionID, defaultLeaseName, "name of the leader-election Lease; Karpenter's, so that the two never act at once"+env(flagLeaderElectionID))
	fs.DurationVar(&o.batchIdle, flagBatchIdleDuration, provisioning.DefaultBatchIdle,
		"a batch of pending pods closes after this long without a new one"+env(flagBatchIdleDuration))
	fs.DurationVar(&o.batchMax, flagBatchMaxDuration, 10*time.Second,
		"a batch of pending pods closes this long after it opened"+env(flagBatchMaxDuration))
	fs.StringVar(&o.preferencePolicy, flagPreferencePolicy, string(packer.DefaultPreferencePolicy),
		"how preferred scheduling terms shape new nodes: Respect (as Karpenter), Score or Ignore"+env(flagPreferencePolicy))
	fs.StringVar(&o.minValuesPolicy, flagMinValuesPolicy, string(packer.MinValuesStrict),
		"what happens when too few instance types fit a new node's pods for a NodePool's minValues: Strict leaves the pods pending; "+
			"BestEffort launches the node with those minValues lowered to what the types offer and annotates its NodeClaim "+
			wellknown.AnnotationNodeClaimMinValuesRelaxed+"=true"+env(flagMinValuesPolicy))
	fs.StringVar(&o.equalWeightOrder, flagEqualWeightOrder, string(packer.EqualWeightName),
		"which of several NodePools of the same weight launches a new node: Name (Karpenter's order: the first that can, by name descending) or Price (the cheapest)"+env(flagEqualWeightOrder))
	fs.StringVar(&o.logLevel, flagLogLevel, "info", "log level: debug, info or error"+env(flagLogLevel))
	fs.StringVar(&o.logOutputPaths, flagLogOutputPaths, "stdout", "comma-separated destinations of the logs: stdout, stderr or file paths"+env(flagLogOutputPaths))
	fs.StringVar(&o.logErrorPaths, flagLogErrorOutputPaths, "stderr", "comma-separated destinations of the logger's own errors"+env(flagLogErrorOutputPaths))
	fs.Int64Var(&o.memoryLimit, flagMemoryLimit, -1, "memory limit of the container in bytes; the Go heap is kept under 90% of it unless GOMEMLIMIT is set; -1 means no limit"+env(flagMemoryLimit))
	fs.BoolVar(&o.metricsSecure, flagMetricsSecure, false,
		"serve the metrics over HTTPS, only to callers the API server authenticates (TokenReview) and authorizes (SubjectAccessReview: get on the non-resource URL /metrics); "+
			"off by default, as Karpenter serves plain HTTP and existing scrape configurations expect it"+env(flagMetricsSecure))
	fs.StringVar(&o.metricsCertDir, flagMetricsCertDir, "",
		"with --"+flagMetricsSecure+": a directory holding tls.crt and tls.key for the metrics listener; empty means a self-signed certificate made at start"+env(flagMetricsCertDir))
	fs.BoolVar(&o.enableProfiling, flagEnableProfiling, false, "serve Go's pprof profiles under /debug/pprof/ on "+ProfilingBindAddress+", a listener of their own on loopback (never the metrics address)"+env(flagEnableProfiling))
	ignoredFlag := func(why string) string { return "accepted for Karpenter compatibility and ignored: " + why }
	fs.IntVar(&o.ignored.cpuRequests, flagCPURequests, 1000, ignoredFlag("stevedore does not size its workers by CPU requests")+env(flagCPURequests))
	fs.BoolVar(&o.ignored.ignoreDRA, flagIgnoreDRARequests, true, "ignore the DRA resource claims of pods, as Karpenter does by default; stevedore does not schedule them, so false is refused"+env(flagIgnoreDRARequests))
	fs.BoolVar(&o.disableObservability, flagDisableClusterStateObservability, false,
		"turn off, as Karpenter does, the metrics of pods, nodes and NodePools (karpenter_pods_state, the per-node gauges, karpenter_nodepools_usage, ...) and the status-condition metrics of NodeClaims, Nodes and NodePools (operator_nodeclaim_*, operator_node_*, operator_nodepool_*), for large clusters"+env(flagDisableClusterStateObservability))
	fs.StringVar(&o.ignored.karpenterService, flagKarpenterService, "", ignoredFlag("stevedore serves no webhooks")+env(flagKarpenterService))
	fs.BoolVar(&o.ignored.noWebhook, flagDisableWebhook, true, ignoredFlag("stevedore serves no webhooks")+env(flagDisableWebhook))
	fs.IntVar(&o.ignored.webhookPort, flagWebhookPort, 8443, ignoredFlag("stevedore serves no webhooks")+env(flagWebhookPort))
	fs.IntVar(&o.ignored.webhookMetricsPort, flagWebhookMetricsPort, 8001, ignoredFlag("stevedore serves no webhooks")+env(flagWebhookMetricsPort))
	fs.StringVar(&o.ignored.awsFeatureGates, flagAWSFeatureGates, "", "Karpenter's AWS-specific feature gates (NodeClassCEL, DRA): accepted when false; stevedore does not implement them, so true is refused"+env(flagAWSFeatureGates))
	fs.Float32Var(&o.kubeClientQPS, flagKubeClientQPS, 200, "queries per second to the API server"+env(flagKubeClientQPS))
	fs.IntVar(&o.kubeClientBurst, flagKubeClientBurst, 300, "burst of queries to the API server"+env(flagKubeClientBurst))
	fs.StringVar(&o.featureGates, flagFeatureGates, defaultFeatureGates,
		"features to turn on or off, as Karpenter's FEATURE_GATES: "+strings.Join(featureGateNames(), ", ")+env(flagFeatureGates))
	fs.DurationVar(&o.validationDelay, flagValidationDelay, disruptionctl.DefaultValidationDelay,
		"how long an emptiness or consolidation decision waits before it is checked again and carried out"+env(flagValidationDelay))
	fs.DurationVar(&o.replacementTimeout, flagReplacementTimeout, disruptionctl.DefaultReplacementTimeout,
		"how long a disruption waits for its replacement nodes to initialize before it gives up and untaints its nodes"+env(flagReplacementTimeout))
	fs.IntVar(&o.maxUnhealthy, flagMaxUnhealthy, 20,
		"node repair replaces nodes only while at most this percentage of a NodePool's nodes is unhealthy"+env(flagMaxUnhealthy))
	fs.BoolVar(&o.actOnRebalance, flagActOnRebalance, false,
		"treat EC2 rebalance recommendations like spot interruption warnings (replace and drain) instead of only recording an event"+env(flagActOnRebalance))
	fs.StringVar(&o.cloud, flagCloud, cloudAWS,
		"the cloud: aws, or simulated (TEST AND DEMO MODE ONLY: an in-memory AWS account, see --"+flagSimulatedAccount+"; nothing real is launched)"+env(flagCloud))
	fs.StringVar(&o.simulatedAccount, flagSimulatedAccount, "",
		"with --"+flagCloud+"="+cloudSimulated+" (test and demo mode): a Scenario file or directory, as 'stevedore simulate' reads it, whose spec.aws and spec.cluster describe the account, run in this process; or http://127.0.0.1:PORT, an account another process serves on loopback"+env(flagSimulatedAccount))

	// The AWS settings read their variables in AddFlags; the others here.
	for _, name := range []string{flagKubeconfig, flagMetricsBindAddress, flagHealthProbeAddress, flagLeaderElect,
		flagLeaderElectionNS, flagLeaderElectionID, flagBatchIdleDuration, flagBatchMaxDuration, flagPreferencePolicy,
		flagEqualWeightOrder, flagLogLevel, flagKubeClientQPS, flagKubeClientBurst, flagFeatureGates, flagValidationDelay, flagReplacementTimeout,
		flagMaxUnhealthy, flagActOnRebalance, flagCloud, flagSimulatedAccount,
		flagMetricsPort, flagHealthProbePort, flagDisableLeaderElection, flagLeaderElectionName, flagMinValuesPolicy,
		flagLogOutputPaths, flagLogErrorOutputPaths, flagMemoryLimit, flagEnableProfiling, flagMetricsSecure, flagMetricsCertDir,
		flagCPURequests, flagIgnoreDRARequests, flagDisableClusterStateObservability, flagKarpenterService,
		flagDisableWebhook, flagWebhookPort, flagWebhookMetricsPort, flagAWSFeatureGates} {
		v := getenv(settings.EnvVar(name))
		if v == "" {
			continue
		}
		f := fs.Lookup(name)
		if err := f.Value.Set(v); err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: %v", settings.EnvVar(name), v, err))
			continue
		}
		f.DefValue = f.Value.String()
	}
	// pflag leaves zero defaults out of --help; say them, so that every
	// setting's default is documented.
	fs.VisitAll(func(f *pflag.Flag) {
		if t := f.Value.Type(); (t == "bool" && f.DefValue == "false") || ((t == "int" || t == "int64") && f.DefValue == "0") {
			f.Usage += " (default " + f.DefValue + ")"
		}
	})
	o.envErr = errors.Join(errs...)
}

// validate reports every invalid setting. It runs before anything connects.
func (o *controllerOptions) validate() error {
	errs := []error{o.envErr}
	switch {
	case o.cloud != cloudAWS && o.cloud != cloudSimulated:
		errs = append(errs, fmt.Errorf("--%s %q: use %s, or %s for the test and demo mode", flagCloud, o.cloud, cloudAWS, cloudSimulated))
	case o.cloud == cloudSimulated && o.simulatedAccount == "":
		errs = append(errs, fmt.Errorf("--%s=%s needs --%s: a Scenario file whose spec.aws describes the simulated account", flagCloud, cloudSimulated, flagSimulatedAccount))
	case o.cloud != cloudSimulated && o.simulatedAccount != "":
		errs = append(errs, fmt.Errorf("--%s is only for --%s=%s (the test and demo mode)", flagSimulatedAccount, flagCloud, cloudSimulated))
	}
	st := o.settings
	if o.cloud == cloudSimulated && st.ClusterName == "" {
		st.ClusterName = "from-the-account" // the simulated account names it
	}
	if err := st.Validate(); err != nil {
		errs = append(errs, err)
	}
	if _, err := parseFeatureGates(o.featureGates); err != nil {
		errs = append(errs, fmt.Errorf("--%s: %w", flagFeatureGates, err))
	}
	if err := checkAWSFeatureGates(o.ignored.awsFeatureGates); err != nil {
		errs = append(errs, fmt.Errorf("--%s: %w", flagAWSFeatureGates, err))
	}
	if !o.ignored.ignoreDRA {
		errs = append(errs, fmt.Errorf("--%s=false: stevedore does not schedule DRA resource claims (Karpenter's alpha DRA support); leave it true, the default", flagIgnoreDRARequests))
	}
	if o.validationDelay <= 0 {
		errs = append(errs, fmt.Errorf("--%s %s must be positive, for example 15s", flagValidationDelay, o.validationDelay))
	}
	if o.replacementTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--%s %s must be positive, for example 10m", flagReplacementTimeout, o.replacementTimeout))
	}
	if o.maxUnhealthy < 1 || o.maxUnhealthy > 100 {
		errs = append(errs, fmt.Errorf("--%s %d must be between 1 and 100", flagMaxUnhealthy, o.maxUnhealthy))
	}
	if o.batchIdle <= 0 {
		errs = append(errs, fmt.Errorf("--%s %s must be positive, for example 1s", flagBatchIdleDuration, o.batchIdle))
	}
	if o.batchMax <= 0 {
		errs = append(errs, fmt.Errorf("--%s %s must be positive, for example 10s", flagBatchMaxDuration, o.batchMax))
	}
	if o.batchIdle > 0 && o.batchMax > 0 && o.batchIdle > o.batchMax {
		errs = append(errs, fmt.Errorf("--%s %s must not exceed --%s %s", flagBatchIdleDuration, o.batchIdle, flagBatchMaxDuration, o.batchMax))
	}
	switch packer.PreferencePolicy(o.preferencePolicy) {
	case packer.PreferenceScore, packer.PreferenceRespect, packer.PreferenceIgnore:
	default:
		errs = append(errs, fmt.Errorf("--%s %q: use Score, Respect or Ignore", flagPreferencePolicy, o.preferencePolicy))
	}
	switch packer.MinValuesPolicy(o.minValuesPolicy) {
	case packer.MinValuesStrict, packer.MinValuesBestEffort:
	default:
		errs = append(errs, fmt.Errorf("--%s %q: use %s or %s", flagMinValuesPolicy, o.minValuesPolicy, packer.MinValuesStrict, packer.MinValuesBestEffort))
	}
	switch packer.EqualWeightOrder(o.equalWeightOrder) {
	case packer.EqualWeightName, packer.EqualWeightPrice:
	default:
		errs = append(errs, fmt.Errorf("--%s %q: use Name (Karpenter's order) or Price", flagEqualWeightOrder, o.equalWeightOrder))
	}
	if _, err := zapLevel(o.logLevel); err != nil {
		errs = append(errs, err)
	}
	for _, p := range []struct{ flag, v string }{{flagLogOutputPaths, o.logOutputPaths}, {flagLogErrorOutputPaths, o.logErrorPaths}} {
		if len(splitPaths(p.v)) == 0 {
			errs = append(errs, fmt.Errorf("--%s must name at least one destination, for example stdout", p.flag))
		}
	}
	for _, p := range []struct {
		flag string
		port int
	}{{flagMetricsPort, o.metricsPort}, {flagHealthProbePort, o.healthProbePort}} {
		if p.port < 1 || p.port > 65535 {
			errs = append(errs, fmt.Errorf("--%s %d must be a port between 1 and 65535", p.flag, p.port))
		}
	}
	if o.kubeClientQPS <= 0 {
		errs = append(errs, fmt.Errorf("--%s %v must be positive", flagKubeClientQPS, o.kubeClientQPS))
	}
	if o.kubeClientBurst <= 0 {
		errs = append(errs, fmt.Errorf("--%s %d must be positive", flagKubeClientBurst, o.kubeClientBurst))
	}
	if o.leaderElection() && (o.leaderElectionNS == "" || o.leaseName() == "") {
		errs = append(errs, fmt.Errorf("--%s and --%s must not be empty while --%s is on", flagLeaderElectionNS, flagLeaderElectionID, flagLeaderElect))
	}
	return errors.Join(errs...)
}

// metricsBindAddress is --metrics-bind-address, or every interface on
// --metrics-port (Karpenter's METRICS_PORT) when it is not set.
func (o *controllerOptions) metricsBindAddress() string {
	if o.metricsAddr != "" {
		return o.metricsAddr
	}
	return fmt.Sprintf(":%d", o.metricsPort)
}

// metricsServer is how the metrics are served: plain HTTP, as Karpenter
// serves them, or with --metrics-secure HTTPS behind controller-runtime's
// authentication and authorization filter, as kubebuilder scaffolds it.
// The filter asks the API server about every scrape (TokenReview, then
// SubjectAccessReview), caching the answers for a minute.
func (o *controllerOptions) metricsServer() metricsserver.Options {
	m := metricsserver.Options{BindAddress: o.metricsBindAddress()}
	if o.metricsSecure {
		m.SecureServing = true
		m.FilterProvider = filters.WithAuthenticationAndAuthorization
		m.CertDir = o.metricsCertDir
	}
	return m
}

// metricsRegisterer is where the metrics are registered: controller-runtime's
// registry, which the metrics address serves, unless a test set another.
func (o *controllerOptions) metricsRegisterer() prometheus.Registerer {
	if o.registerer != nil {
		return o.registerer
	}
	return ctrlmetrics.Registry
}

// probeBindAddress is --health-probe-bind-address, or every interface on
// --health-probe-port (HEALTH_PROBE_PORT) when it is not set.
func (o *controllerOptions) probeBindAddress() string {
	if o.probeAddr != "" {
		return o.probeAddr
	}
	return fmt.Sprintf(":%d", o.healthProbePort)
}

// leaderElection reports whether replicas elect a leader: --leader-elect,
// unless Karpenter's --disable-leader-election turns it off.
// defaultLeaseName is Karpenter's leader-election Lease.
const defaultLeaseName = "karpenter-leader-election"

func (o *controllerOptions) leaderElection() bool {
	return o.leaderElect && !o.disableLeaderElect
}

// leaseName is the leader-election Lease: Karpenter's
// --leader-election-name when set, else --leader-election-id.
func (o *controllerOptions) leaseName() string {
	if o.leaderElectionName != "" {
		return o.leaderElectionName
	}
	return o.leaderElectionID
}

// splitPaths reads a comma-separated list of log destinations.
func splitPaths(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// softMemoryLimit is the Go runtime's soft memory limit for a container
// limited to memoryLimit bytes: 90% of it, as Karpenter sets. ok is false
// when there is no limit (memoryLimit <= 0) or the operator set GOMEMLIMIT,
// which then stands.
func softMemoryLimit(memoryLimit int64, gomemlimitSet bool) (limit int64, ok bool) {
	if memoryLimit <= 0 || gomemlimitSet {
		return 0, false
	}
	return int64(float64(memoryLimit) * softMemoryShare), true
}

func zapLevel(s string) (zapcore.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return zapcore.DebugLevel, nil
	case "info":
		return zapcore.InfoLevel, nil
	case "error":
		return zapcore.ErrorLevel, nil
	}
	return 0, fmt.Errorf("--%s %q: use debug, info or error", flagLogLevel, s)
}

func newControllerCommand() *cobra.Command {
	opts := &controllerOptions{}
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run the autoscaler's controllers in the cluster",
		Long: `Run stevedore's controllers: they launch nodes for NodeClaims, register and
initialize them, drain and terminate nodes being deleted, keep NodePool and
EC2NodeClass status current, collect leaked instances and consume the
interruption queue. Replicas elect a leader through a Lease; only the leader acts.

Every flag can also be set by the environment variable named after it (upper
case, '-' as '_', shown with each flag); a flag on the command line wins over the
variable, which wins over the default. Logs are JSON on standard error. Metrics
are served on --metrics-bind-address at /metrics, probes on
--health-probe-bind-address at /healthz and /readyz.

AWS credentials and the region come from the usual AWS sources: EKS Pod
Identity, IRSA (AWS_ROLE_ARN and AWS_WEB_IDENTITY_TOKEN_FILE), environment
variables, or the instance metadata service.

Test and demo mode: --cloud=simulated --simulated-account=FILE runs an
in-memory AWS account inside the controller, described by the spec.aws section
of a Scenario (docs/simulate.md), on the wall clock. Nothing real is launched:
a booted instance registers as a Node annotated kwok.x-k8s.io/node=fake, for
kwok to play its kubelet (hack/local-cluster.sh). --cluster-name and
--interruption-queue default to the account's. Never use it in production.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.validate(); err != nil {
				return fmt.Errorf("invalid settings:\n%w", err)
			}
			if limit, ok := softMemoryLimit(opts.memoryLimit, os.Getenv("GOMEMLIMIT") != ""); ok {
				debug.SetMemoryLimit(limit)
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			ctx, stop := signalContext(ctx)
			defer stop()
			if opts.cloud == cloudSimulated {
				clients, region, err := simulatedClients(ctx, opts)
				if err != nil {
					return err
				}
				return runController(ctx, opts, clients, region)
			}
			clients, region, err := awsClients(ctx, opts.settings, opts.metricsRegisterer())
			if err != nil {
				return err
			}
			return runController(ctx, opts, clients, region)
		},
	}
	opts.addFlags(cmd.Flags(), os.Getenv)
	return cmd
}

// awsClients builds the AWS clients from the default credential chain, with
// the region taken from the environment or the instance metadata service.
func awsClients(ctx context.Context, s settings.Settings, reg prometheus.Registerer) (sdk.Clients, string, error) {
	cfg, err := awsConfig(ctx, reg)
	if err != nil {
		return sdk.Clients{}, "", err
	}
	if cfg.Region == "" {
		return sdk.Clients{}, "", errors.New("no AWS region: set AWS_REGION, or run where the instance metadata service answers")
	}
	if s.AssumeRoleARN != "" {
		provider := stscreds.NewAssumeRoleProvider(sts.NewFromConfig(cfg), s.AssumeRoleARN, func(o *stscreds.AssumeRoleOptions) {
			o.Duration = s.AssumeRoleDuration
			o.RoleSessionName = "stevedore"
		})
		cfg.Credentials = awssdk.NewCredentialsCache(provider)
	}
	return sdk.NewFromConfig(cfg), cfg.Region, nil
}

// awsConfig loads the AWS configuration from the default chain and
// instruments it: every call of a client made from it feeds the
// aws_sdk_go_* metrics registered with reg.
func awsConfig(ctx context.Context, reg prometheus.Registerer) (awssdk.Config, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithEC2IMDSRegion(),
		awsconfig.WithAppID("stevedore-"+version.Get().Version))
	if err != nil {
		return awssdk.Config{}, fmt.Errorf("loading the AWS configuration: %w", err)
	}
	m, err := sdk.NewMetrics(reg)
	if err != nil {
		return awssdk.Config{}, fmt.Errorf("AWS SDK metrics: %w", err)
	}
	m.Instrument(&cfg)
	return cfg, nil
}

// simulatedClients opens the simulated account of --simulated-account (test
// and demo mode): a Scenario read into an in-memory AWS that runs in this
// process, whose kubelets join the manager, or the URL of an account another
// process serves. The controller's cluster name and interruption queue
// default to the account's.
func simulatedClients(ctx context.Context, opts *controllerOptions) (sdk.Clients, string, error) {
	var clients sdk.Clients
	var info account.Info
	if account.IsURL(opts.simulatedAccount) {
		remote, err := account.Dial(ctx, opts.simulatedAccount)
		if err != nil {
			return sdk.Clients{}, "", fmt.Errorf("--%s: %w", flagSimulatedAccount, err)
		}
		clients, info = remote.Clients(), remote.Info
	} else {
		acc, err := account.Load(opts.simulatedAccount, account.Options{})
		if err != nil {
			return sdk.Clients{}, "", fmt.Errorf("--%s: %w", flagSimulatedAccount, err)
		}
		clients, info = acc.Clients(), acc.Info
		opts.addRunnables = func(mgr manager.Manager) error { return mgr.Add(acc.Kubelets(mgr.GetClient())) }
	}
	if err := account.Apply(info, &opts.settings); err != nil {
		return sdk.Clients{}, "", err
	}
	return clients, info.Region, nil
}

// newLogger returns the JSON logger all of the controller logs through:
// to w when set (tests), else to the destinations of --log-output-paths,
// with the logger's own errors to --log-error-output-paths, as Karpenter's
// LOG_OUTPUT_PATHS and LOG_ERROR_OUTPUT_PATHS. Its lines have Karpenter's
// keys and level names (see logEncoderConfig), so that queries and alerts
// written against Karpenter's logs keep matching.
func newLogger(opts *controllerOptions) (logr.Logger, func(), error) {
	lvl, _ := zapLevel(opts.logLevel)
	out, errOut := zapcore.WriteSyncer(nil), zapcore.WriteSyncer(nil)
	closeAll := func() {}
	if opts.logOutput != nil {
		out = zapcore.AddSync(opts.logOutput)
		errOut = out
	} else {
		o, closeOut, err := gozap.Open(splitPaths(opts.logOutputPaths)...)
		if err != nil {
			return logr.Logger{}, nil, fmt.Errorf("--%s %q: %w", flagLogOutputPaths, opts.logOutputPaths, err)
		}
		e, closeErr, err := gozap.Open(splitPaths(opts.logErrorPaths)...)
		if err != nil {
			closeOut()
			return logr.Logger{}, nil, fmt.Errorf("--%s %q: %w", flagLogErrorOutputPaths, opts.logErrorPaths, err)
		}
		out, errOut = o, e
		closeAll = func() { closeOut(); closeErr() }
	}
	return zapr.NewLogger(buildZap(out, errOut, lvl, version.Get().Revision)), closeAll, nil
}

// Log keys and names, Karpenter's.
const (
	logKeyMessage = "message"
	logKeyLevel   = "level"
	logKeyTime    = "time"
	logKeyLogger  = "logger"
	logKeyCaller  = "caller"
	logKeyStack   = "stacktrace"
	logKeyCommit  = "commit"
	// logName is the name of the root logger; controller-runtime appends
	// the controller's after a dot.
	logName = "controller"
)

// logEncoderConfig is the JSON encoding of every line: Karpenter's keys,
// upper-case level names (INFO, ERROR, DEBUG), ISO 8601 times with
// milliseconds, durations as strings and callers as package/file:line.
func logEncoderConfig() zapcore.EncoderConfig {
	return zapcore.EncoderConfig{
		MessageKey:     logKeyMessage,
		LevelKey:       logKeyLevel,
		TimeKey:        logKeyTime,
		NameKey:        logKeyLogger,
		CallerKey:      logKeyCaller,
		FunctionKey:    zapcore.OmitKey,
		StacktraceKey:  logKeyStack,
		LineEnding:     zapcore.DefaultLineEnding,
		EncodeLevel:    zapcore.CapitalLevelEncoder,
		EncodeTime:     zapcore.ISO8601TimeEncoder,
		EncodeDuration: zapcore.StringDurationEncoder,
		EncodeCaller:   zapcore.ShortCallerEncoder,
		EncodeName:     zapcore.FullNameEncoder,
	}
}

// buildZap makes the zap logger behind newLogger, configured as Karpenter's:
// JSON lines to out at lvl and above; the caller only at debug level; no
// stack traces; at most 100 lines of the same message and level a second,
// then one in 100; named "controller"; and, when the build knows its VCS
// revision, a commit key on every line.
func buildZap(out, errOut zapcore.WriteSyncer, lvl zapcore.Level, revision string) *gozap.Logger {
	core := zapcore.NewCore(zapcore.NewJSONEncoder(logEncoderConfig()), out, lvl)
	core = zapcore.NewSamplerWithOptions(core, time.Second, 100, 100)
	zopts := []gozap.Option{gozap.ErrorOutput(errOut)}
	if lvl <= zapcore.DebugLevel {
		zopts = append(zopts, gozap.AddCaller())
	}
	z := gozap.New(core, zopts...).Named(logName)
	if revision != "" {
		z = z.With(gozap.String(logKeyCommit, revision))
	}
	return z
}

// restConfig returns the API server's client configuration: the kubeconfig
// named by --kubeconfig (KUBECONFIG) when set, else the pod's in-cluster one.
func restConfig(path string) (*rest.Config, error) {
	if path == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("no in-cluster configuration (%v): outside a pod, set --%s or %s", err, flagKubeconfig, settings.EnvVar(flagKubeconfig))
		}
		return cfg, nil
	}
	rules := &clientcmd.ClientConfigLoadingRules{Precedence: filepath.SplitList(path)}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", path, err)
	}
	return cfg, nil
}

// kubernetesVersion returns the API server's minor version, such as "1.33".
func kubernetesVersion(cfg *rest.Config) (string, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return "", err
	}
	v, err := dc.ServerVersion()
	if err != nil {
		return "", fmt.Errorf("reading the API server's /version: %w", err)
	}
	return v.Major + "." + strings.TrimRight(v.Minor, "+"), nil
}

// caBundle returns the base64 CA bundle of cfg, or "".
func caBundle(cfg *rest.Config) (string, error) {
	data := cfg.CAData
	if len(data) == 0 && cfg.CAFile != "" {
		b, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return "", fmt.Errorf("reading the cluster CA: %w", err)
		}
		data = b
	}
	if len(data) == 0 {
		return "", nil
	}
	return base64.StdEncoding.EncodeToString(data), nil
}

func newScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, karpv1.AddToScheme, v1alpha1.AddToScheme, awsv1.AddToScheme, autoscalingv1beta1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// runController runs the controller until ctx ends, with AWS reached through
// clients in region. The command builds clients from the AWS configuration;
// tests pass the in-memory AWS.
func runController(ctx context.Context, opts *controllerOptions, clients sdk.Clients, region string) error {
	logger, closeLogs, err := newLogger(opts)
	if err != nil {
		return err
	}
	defer closeLogs()
	ctrllog.SetLogger(logger)
	klog.SetLogger(logger.WithName("client-go"))
	ctx = ctrllog.IntoContext(ctx, logger)
	reg := opts.metricsRegisterer()
	// Before the first request, so that client-go counts them all.
	if err := kubemetrics.RegisterClientGo(reg); err != nil {
		return fmt.Errorf("client-go metrics: %w", err)
	}

	// Relaxed minValues change which instance types nodes may launch from:
	// say so once, where an operator looking at such a node would look.
	if packer.MinValuesPolicy(opts.minValuesPolicy) == packer.MinValuesBestEffort {
		logger.Info("--" + flagMinValuesPolicy + "=" + string(packer.MinValuesBestEffort) + ": NodeClaims whose pods leave too few instance types for a NodePool's minValues launch with them relaxed and annotated " +
			wellknown.AnnotationNodeClaimMinValuesRelaxed)
	}
	cfg, err := restConfig(opts.kubeconfig)
	if err != nil {
		return err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS = opts.kubeClientQPS
	cfg.Burst = opts.kubeClientBurst
	cfg.UserAgent = "stevedore/" + version.Get().Version

	st := opts.settings
	cluster := aws.ClusterInfo{Name: st.ClusterName, Endpoint: st.ClusterEndpoint, CABundle: st.ClusterCABundle}
	if cluster.CABundle == "" {
		if cluster.CABundle, err = caBundle(cfg); err != nil {
			return err
		}
	}
	var eksVersion string
	// The account, from the cluster's ARN when the cluster is described:
	// the interruption queue then drops other accounts' messages.
	var account string
	if clients.EKS != nil && (cluster.Endpoint == "" || st.EKSControlPlane) {
		out, err := clients.EKS.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: &st.ClusterName})
		if err != nil {
			return fmt.Errorf("describing EKS cluster %q (to find its endpoint; set --%s to skip): %w", st.ClusterName, settings.FlagClusterEndpoint, err)
		}
		if c := out.Cluster; c != nil {
			if cluster.Endpoint == "" && c.Endpoint != nil {
				cluster.Endpoint = *c.Endpoint
			}
			if n := c.KubernetesNetworkConfig; n != nil && n.ServiceIpv4Cidr != nil {
				cluster.ServiceCIDR = *n.ServiceIpv4Cidr
			}
			if c.Version != nil {
				eksVersion = *c.Version
			}
			if c.Arn != nil {
				if a, err := arn.Parse(*c.Arn); err == nil {
					account = a.AccountID
				}
			}
		}
	}
	if cluster.Endpoint == "" {
		return fmt.Errorf("no cluster endpoint: set --%s (%s)", settings.FlagClusterEndpoint, settings.EnvVar(settings.FlagClusterEndpoint))
	}
	k8sVersion := eksVersion
	if !st.EKSControlPlane || k8sVersion == "" {
		if k8sVersion, err = kubernetesVersion(cfg); err != nil {
			return err
		}
	}

	scheme, err := newScheme()
	if err != nil {
		return err
	}
	if dns := kubeDNS(ctx, cfg, scheme); dns != "" {
		cluster.DNS = []string{dns}
	}
	mgrOpts := manager.Options{
		Scheme:                        scheme,
		Logger:                        logger,
		Metrics:                       opts.metricsServer(),
		PprofBindAddress:              opts.profilingBindAddress(),
		HealthProbeBindAddress:        opts.probeBindAddress(),
		LeaderElection:                opts.leaderElection(),
		LeaderElectionNamespace:       opts.leaderElectionNS,
		LeaderElectionID:              opts.leaseName(),
		LeaderElectionReleaseOnCancel: true,
	}
	if opts.sharedProcess {
		skip := true
		mgrOpts.Controller.SkipNameValidation = &skip
	}
	if opts.gracefulShutdownTO > 0 {
		mgrOpts.GracefulShutdownTimeout = &opts.gracefulShutdownTO
	}
	if opts.leaderElection() {
		lock, stopLockEvents, err := opts.leaderLock(cfg, scheme, reg)
		if err != nil {
			return fmt.Errorf("leader election: %w", err)
		}
		defer stopLockEvents()
		mgrOpts.LeaderElectionResourceLockInterface = lock
	}
	mgr, err := manager.New(cfg, mgrOpts)
	if err != nil {
		return fmt.Errorf("creating the controller manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("cache", func(req *http.Request) error {
		if !mgr.GetCache().WaitForCacheSync(req.Context()) {
			return errors.New("informer caches have not synced")
		}
		return nil
	}); err != nil {
		return err
	}

	gates, err := parseFeatureGates(opts.featureGates)
	if err != nil {
		return fmt.Errorf("--%s: %w", flagFeatureGates, err)
	}
	kube := mgr.GetClient()
	provider, err := aws.New(aws.Options{
		Clients:  clients,
		Settings: st,
		Clock:    clock.RealClock{},
		NodeClass: func(ctx context.Context, name string) (*awsv1.EC2NodeClass, error) {
			nc := &awsv1.EC2NodeClass{}
			if err := kube.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
				return nil, err
			}
			return nc, nil
		},
		Cluster: cluster,
		Region:  region,

		DisableReservedCapacity: !gates[gateReservedCapacity],
	})
	if err != nil {
		return err
	}
	err = controllers.Register(mgr, controllers.Deps{
		Account:  account,
		Region:   region,
		Cloud:    provider,
		Clients:  clients,
		Settings: st,
		Resolver: nodeclass.NewResolver(clients, nodeclass.Options{
			ClusterName:   st.ClusterName,
			Region:        region,
			Cluster:       cluster.ForUserData(),
			DisableDryRun: st.DisableDryRun,

			DisableCapacityReservations: !gates[gateReservedCapacity],
		}),
		NodeClass: nodeclassstatus.Options{KubernetesVersion: k8sVersion, CABundle: cluster.CABundle,
			RefreshInterval: min(st.AMIRefreshInterval, st.SubnetRefreshInterval)},
		State: state.NewCluster(),
		Provisioning: provisioning.Options{
			BatchIdle:        opts.batchIdle,
			BatchMax:         opts.batchMax,
			PreferencePolicy: packer.PreferencePolicy(opts.preferencePolicy),
			EqualWeightOrder: packer.EqualWeightOrder(opts.equalWeightOrder),
			CapacityBuffer:   gates[gateCapacityBuffer],
			// Replacements follow it too (see controllers.Register).
			MinValuesPolicy: packer.MinValuesPolicy(opts.minValuesPolicy),
		},
		Disruption: disruptionctl.Options{
			ValidationDelay:    opts.validationDelay,
			ReplacementTimeout: opts.replacementTimeout,
			SpotToSpot:         gates[gateSpotToSpot],
			StaticCapacity:     gates[gateStaticCapacity],
		},
		NodeRepair:     health.Options{Enabled: gates[gateNodeRepair], MaxUnhealthyPercent: opts.maxUnhealthy},
		NodeOverlay:    gates[gateNodeOverlay],
		ActOnRebalance: opts.actOnRebalance,
		Clock:          clock.RealClock{},
		Registerer:     reg,

		DisableClusterStateObservability: opts.disableObservability,
	})
	if err != nil {
		return err
	}
	if opts.addRunnables != nil {
		if err := opts.addRunnables(mgr); err != nil {
			return err
		}
	}
	logger.Info("starting controller", "version", version.Get().Version, "cluster", st.ClusterName,
		"region", region, "kubernetesVersion", k8sVersion, "endpoint", cluster.Endpoint,
		"leaderElection", opts.leaderElection(), "interruptionQueue", st.InterruptionQueue)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("controller manager: %w", err)
	}
	logger.Info("controller stopped")
	return nil
}

// kubeDNS returns the ClusterIP of the kube-dns service, or "" when it cannot
// be read; nodes then use the DNS address their bootstrap derives.
func kubeDNS(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme) string {
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return ""
	}
	svc := &corev1.Service{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "kube-dns"}, svc); err != nil {
		return ""
	}
	if ip := svc.Spec.ClusterIP; ip != "" && ip != corev1.ClusterIPNone {
		return ip
	}
	return ""
}

// ProfilingBindAddress is where --enable-profiling serves Go's pprof
// profiles: loopback only, on a listener of its own, so that profiles (which
// show memory contents and can cost CPU) are never reachable from the
// network nor through the metrics Service. Reach them with
// kubectl port-forward. Karpenter serves them on its metrics port; stevedore
// deliberately does not.
const ProfilingBindAddress = "127.0.0.1:6060"

// profilingBindAddress is ProfilingBindAddress with --enable-profiling, and
// "0" (no listener) without.
func (o *controllerOptions) profilingBindAddress() string {
	if !o.enableProfiling {
		return "0"
	}
	return ProfilingBindAddress
}

// signalContext ends with ctx or at SIGINT or SIGTERM, so that the manager
// releases the leader Lease and stops its controllers in order.
func signalContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}
