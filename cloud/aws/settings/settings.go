// Package settings holds the AWS provider's settings: the cluster it
// serves, the interruption queue, network and memory assumptions, refresh
// intervals. Each setting has a command-line flag and an environment
// variable of the same name as Karpenter's (CLUSTER_NAME and
// --cluster-name, and so on), so the Helm values people already use keep
// working. A flag given on the command line wins over the environment
// variable, which wins over the default.
package settings

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// Defaults.
const (
	DefaultVMMemoryOverheadPercent = 0.075
	DefaultReservedENIs            = 0
	DefaultAMIRefreshInterval      = time.Minute
	DefaultSubnetRefreshInterval   = time.Minute
	DefaultAssumeRoleDuration      = 15 * time.Minute
	// MinRefreshInterval is the shortest AMI and subnet refresh interval.
	MinRefreshInterval = time.Minute
	// MinAssumeRoleDuration is the shortest session STS grants.
	MinAssumeRoleDuration = 15 * time.Minute
)

// Settings are the AWS provider's settings.
type Settings struct {
	// ClusterName is the EKS cluster's name; required. It appears in
	// discovery and ownership tags and in the bootstrap configuration.
	ClusterName string
	// ClusterEndpoint is the API server URL nodes join; empty means ask EKS.
	ClusterEndpoint string
	// ClusterCABundle is the base64 cluster CA; empty means the controller's
	// own client configuration.
	ClusterCABundle string
	// InterruptionQueue is the name (not the URL or ARN) of the SQS queue
	// that receives interruption events; empty disables interruption
	// handling.
	InterruptionQueue string
	// IsolatedVPC turns off calls to endpoints without a VPC endpoint: the
	// Pricing API and IAM instance profile clean-up.
	IsolatedVPC bool
	// EKSControlPlane takes the Kubernetes version from EKS rather than the
	// API server.
	EKSControlPlane bool
	// VMMemoryOverheadPercent is the fraction of an instance's memory
	// assumed lost to virtualization, until a node's real capacity is seen.
	VMMemoryOverheadPercent float64
	// ReservedENIs are network interfaces kept from the VPC CNI, as with
	// custom networking; they lower the pod limit.
	ReservedENIs int
	// DisableDryRun skips the dry-run authorization checks of node classes.
	DisableDryRun bool
	// EnableZonalShift avoids zones under an ARC zonal shift.
	EnableZonalShift bool
	// AMIRefreshInterval and SubnetRefreshInterval are how often selectors
	// are resolved again.
	AMIRefreshInterval    time.Duration
	SubnetRefreshInterval time.Duration
	// AssumeRoleARN, if set, is an IAM role the controller assumes for its
	// AWS calls, for AssumeRoleDuration at a time.
	AssumeRoleARN      string
	AssumeRoleDuration time.Duration
}

// Default returns the default settings (without a cluster name).
func Default() Settings {
	return Settings{
		VMMemoryOverheadPercent: DefaultVMMemoryOverheadPercent,
		ReservedENIs:            DefaultReservedENIs,
		AMIRefreshInterval:      DefaultAMIRefreshInterval,
		SubnetRefreshInterval:   DefaultSubnetRefreshInterval,
		AssumeRoleDuration:      DefaultAssumeRoleDuration,
	}
}

// Flag names and the environment variables that set the same settings.
const (
	FlagClusterName             = "cluster-name"
	FlagClusterEndpoint         = "cluster-endpoint"
	FlagClusterCABundle         = "cluster-ca-bundle"
	FlagInterruptionQueue       = "interruption-queue"
	FlagIsolatedVPC             = "isolated-vpc"
	FlagEKSControlPlane         = "eks-control-plane"
	FlagVMMemoryOverheadPercent = "vm-memory-overhead-percent"
	FlagReservedENIs            = "reserved-enis"
	FlagDisableDryRun           = "disable-dry-run"
	FlagEnableZonalShift        = "enable-zonal-shift"
	FlagAMIRefreshInterval      = "ami-refresh-interval"
	FlagSubnetRefreshInterval   = "subnet-refresh-interval"
	FlagAssumeRoleARN           = "assume-role-arn"
	FlagAssumeRoleDuration      = "assume-role-duration"
)

// EnvVar returns the environment variable of a flag: upper case, with
// underscores, for example CLUSTER_NAME for cluster-name.
func EnvVar(flag string) string {
	return strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// AddFlags registers the settings' flags on fs, bound to s. Each flag's
// default is its environment variable (read through getenv) if set, else
// s's current value; an environment variable that does not parse is an
// error naming the variable.
func (s *Settings) AddFlags(fs *pflag.FlagSet, getenv func(string) string) error {
	var errs []error
	str := func(p *string, name, usage string) {
		if v := getenv(EnvVar(name)); v != "" {
			*p = v
		}
		fs.StringVar(p, name, *p, usage+" (env "+EnvVar(name)+")")
	}
	boolean := func(p *bool, name, usage string) {
		if v := getenv(EnvVar(name)); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: use true or false", EnvVar(name), v))
			} else {
				*p = b
			}
		}
		fs.BoolVar(p, name, *p, usage+" (env "+EnvVar(name)+")")
	}
	duration := func(p *time.Duration, name, usage string) {
		if v := getenv(EnvVar(name)); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: use a duration such as 5m", EnvVar(name), v))
			} else {
				*p = d
			}
		}
		fs.DurationVar(p, name, *p, usage+" (env "+EnvVar(name)+")")
	}
	str(&s.ClusterName, FlagClusterName, "name of the EKS cluster; required")
	str(&s.ClusterEndpoint, FlagClusterEndpoint, "API server URL that nodes join; empty asks EKS")
	str(&s.ClusterCABundle, FlagClusterCABundle, "base64 cluster CA bundle; empty uses the controller's client configuration")
	str(&s.InterruptionQueue, FlagInterruptionQueue, "name of the SQS interruption queue; empty disables interruption handling")
	boolean(&s.IsolatedVPC, FlagIsolatedVPC, "make no calls that need internet access (Pricing API, IAM clean-up)")
	boolean(&s.EKSControlPlane, FlagEKSControlPlane, "take the Kubernetes version from EKS")
	if v := getenv(EnvVar(FlagVMMemoryOverheadPercent)); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: use a fraction such as 0.075", EnvVar(FlagVMMemoryOverheadPercent), v))
		} else {
			s.VMMemoryOverheadPercent = f
		}
	}
	fs.Float64Var(&s.VMMemoryOverheadPercent, FlagVMMemoryOverheadPercent, s.VMMemoryOverheadPercent,
		"fraction of instance memory assumed lost to virtualization (env "+EnvVar(FlagVMMemoryOverheadPercent)+")")
	if v := getenv(EnvVar(FlagReservedENIs)); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: use a whole number such as 1", EnvVar(FlagReservedENIs), v))
		} else {
			s.ReservedENIs = n
		}
	}
	fs.IntVar(&s.ReservedENIs, FlagReservedENIs, s.ReservedENIs, "network interfaces kept from the VPC CNI (env "+EnvVar(FlagReservedENIs)+")")
	boolean(&s.DisableDryRun, FlagDisableDryRun, "skip dry-run authorization checks of node classes")
	boolean(&s.EnableZonalShift, FlagEnableZonalShift, "avoid zones under an ARC zonal shift")
	duration(&s.AMIRefreshInterval, FlagAMIRefreshInterval, "how often AMI selectors are resolved again; at least 1m")
	duration(&s.SubnetRefreshInterval, FlagSubnetRefreshInterval, "how often subnet selectors are resolved again; at least 1m")
	str(&s.AssumeRoleARN, FlagAssumeRoleARN, "IAM role to assume for AWS calls")
	duration(&s.AssumeRoleDuration, FlagAssumeRoleDuration, "session length of the assumed role; at least 15m")
	return errors.Join(errs...)
}

// Validate reports every invalid setting, each with the fix.
func (s Settings) Validate() error {
	var errs []error
	if s.ClusterName == "" {
		errs = append(errs, fmt.Errorf("--%s (%s) is required: set it to the name of the EKS cluster", FlagClusterName, EnvVar(FlagClusterName)))
	}
	if s.ClusterEndpoint != "" {
		u, err := url.Parse(s.ClusterEndpoint)
		if err != nil || !u.IsAbs() || u.Host == "" {
			errs = append(errs, fmt.Errorf("--%s %q must be an absolute URL such as https://ABCDEF.gr7.us-east-1.eks.amazonaws.com", FlagClusterEndpoint, s.ClusterEndpoint))
		}
	}
	if q := s.InterruptionQueue; strings.HasPrefix(q, "arn:") || strings.Contains(q, "://") || strings.Contains(q, "/") {
		errs = append(errs, fmt.Errorf("--%s %q must be the queue's name, not its ARN or URL: use the part after the last ':' or '/'", FlagInterruptionQueue, q))
	}
	if s.VMMemoryOverheadPercent < 0 || s.VMMemoryOverheadPercent >= 1 {
		errs = append(errs, fmt.Errorf("--%s %v must be a fraction in [0, 1), for example 0.075 for 7.5%%", FlagVMMemoryOverheadPercent, s.VMMemoryOverheadPercent))
	}
	if s.ReservedENIs < 0 {
		errs = append(errs, fmt.Errorf("--%s %d must not be negative", FlagReservedENIs, s.ReservedENIs))
	}
	if s.AMIRefreshInterval < MinRefreshInterval {
		errs = append(errs, fmt.Errorf("--%s %s must be at least %s", FlagAMIRefreshInterval, s.AMIRefreshInterval, MinRefreshInterval))
	}
	if s.SubnetRefreshInterval < MinRefreshInterval {
		errs = append(errs, fmt.Errorf("--%s %s must be at least %s", FlagSubnetRefreshInterval, s.SubnetRefreshInterval, MinRefreshInterval))
	}
	if s.AssumeRoleARN != "" && !strings.HasPrefix(s.AssumeRoleARN, "arn:") {
		errs = append(errs, fmt.Errorf("--%s %q must be a role ARN such as arn:aws:iam::123456789012:role/stevedore", FlagAssumeRoleARN, s.AssumeRoleARN))
	}
	if s.AssumeRoleDuration < MinAssumeRoleDuration {
		errs = append(errs, fmt.Errorf("--%s %s must be at least %s", FlagAssumeRoleDuration, s.AssumeRoleDuration, MinAssumeRoleDuration))
	}
	return errors.Join(errs...)
}
