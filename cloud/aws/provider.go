// Package aws is the AWS cloud provider: it implements cloud.CloudProvider on
// EC2 through the narrow client interfaces of package sdk. The same Provider
// runs in production against the AWS SDK and in tests and the simulator
// against the in-memory AWS; only the clients differ.
//
// The provider reads its EC2NodeClasses through a function rather than a
// Kubernetes client, and time from an injected clock: the instance-type and
// price caches and the insufficient-capacity marks all expire on that clock.
package aws

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	"github.com/stevedore-autoscaler/stevedore/cloud"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/launch"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/sdk"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/settings"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/zonalshift"
)

// ProviderName is what Name returns.
const ProviderName = "aws"

// DefaultCacheTTL is how long instance-type descriptions, offerings and
// prices are reused before they are described again.
const DefaultCacheTTL = 5 * time.Minute

// Node conditions that the EKS node monitoring agent reports, which the
// repair policies act on besides the kubelet's Ready.
const (
	ConditionAcceleratedHardwareReady corev1.NodeConditionType = "AcceleratedHardwareReady"
	ConditionStorageReady             corev1.NodeConditionType = "StorageReady"
	ConditionNetworkingReady          corev1.NodeConditionType = "NetworkingReady"
	ConditionKernelReady              corev1.NodeConditionType = "KernelReady"
	ConditionContainerRuntimeReady    corev1.NodeConditionType = "ContainerRuntimeReady"
)

// RepairToleration is how long a node may be NotReady, or report a failure
// of its storage, networking, kernel or container runtime, before it is
// replaced.
const RepairToleration = 30 * time.Minute

// AcceleratedHardwareRepairToleration is how long a node may report failed
// accelerators (GPUs, Neuron devices) before it is replaced: shorter than
// RepairToleration, since such nodes are expensive to leave idle and a
// hardware fault does not heal by waiting.
const AcceleratedHardwareRepairToleration = 10 * time.Minute

// NodeClassGetter returns the EC2NodeClass with the given name. A node class
// that does not exist is reported as (nil, nil) or as an error for which
// apierrors.IsNotFound holds.
type NodeClassGetter func(ctx context.Context, name string) (*awsv1.EC2NodeClass, error)

// ClusterInfo is what nodes need to join the cluster.
type ClusterInfo struct {
	// Name is the EKS cluster name; it defaults to Settings.ClusterName.
	Name string
	// Endpoint is the API server URL; it defaults to Settings.ClusterEndpoint.
	Endpoint string
	// CABundle is the base64 cluster CA; it defaults to
	// Settings.ClusterCABundle.
	CABundle string
	// ServiceCIDR is the cluster's service CIDR (AL2023 needs it).
	ServiceCIDR string
	// DNS are the cluster DNS addresses (the kube-dns ClusterIP).
	DNS []string
}

// ForUserData returns what the user data says about the cluster.
func (c ClusterInfo) ForUserData() launch.Cluster {
	return launch.Cluster{Name: c.Name, Endpoint: c.Endpoint, CABundle: c.CABundle, ServiceCIDR: c.ServiceCIDR, DNS: c.DNS}
}

// Options configure a Provider.
type Options struct {
	Clients   sdk.Clients
	Settings  settings.Settings
	Clock     clock.PassiveClock
	NodeClass NodeClassGetter
	Cluster   ClusterInfo
	// Region is the AWS region, which the controller knows from its AWS
	// configuration before it starts (AWS_REGION or the instance metadata
	// service). Required: asking EC2 for it would take
	// ec2:DescribeAvailabilityZones, which Karpenter's policy does not grant.
	Region string
	// CacheTTL defaults to DefaultCacheTTL.
	CacheTTL time.Duration
	// DisableReservedCapacity turns the ReservedCapacity feature gate off
	// (it is on by default, as in Karpenter): no reserved offerings, no
	// launches into capacity reservations, and instances in reservations
	// count as on-demand.
	DisableReservedCapacity bool
}

// Provider is the AWS cloud provider. Create it with New; it is safe for
// concurrent use.
type Provider struct {
	ec2       sdk.EC2
	pricing   sdk.Pricing
	settings  settings.Settings
	clk       clock.PassiveClock
	nodeClass NodeClassGetter
	cluster   ClusterInfo
	ttl       time.Duration
	ice       *launch.ICECache
	templates *launch.Templates
	userData  *launch.UserDataCache
	typeCache typeCache
	pgs       placementGroups
	// reservations are the instance counts left in capacity reservations.
	reservations    *reservationCounts
	disableReserved bool
	// zonalShift caches the zones the cluster's traffic is shifted away
	// from; nil unless --enable-zonal-shift.
	zonalShift *zonalshift.Tracker
	// launchFailures receives the offerings launches fail in (see
	// ReportLaunchFailuresTo); nil until set.
	launchFailures atomic.Pointer[func(cloud.LaunchFailure)]
	// pricingReport is told when the Price List API stops or starts
	// answering (see ReportPricingTo); nil until set.
	pricingReport atomic.Pointer[func(error)]

	mu     sync.Mutex
	region string
	cache  describeCache
	// pricingDown: the last Price List read failed, so on-demand prices
	// are the last known ones or the embedded catalog's.
	pricingDown bool
	// templateUsed is when each launch template was last launched from
	// (or ensured), for CollectLaunchTemplates.
	templateUsed map[string]time.Time
}

var (
	_ cloud.CloudProvider   = (*Provider)(nil)
	_ cloud.PricingReporter = (*Provider)(nil)
)

// New returns a Provider.
func New(opts Options) (*Provider, error) {
	if opts.Clients.EC2 == nil {
		return nil, errors.New("aws provider: no EC2 client")
	}
	if opts.NodeClass == nil {
		return nil, errors.New("aws provider: no EC2NodeClass getter")
	}
	if opts.Region == "" {
		return nil, errors.New("aws provider: no region: set AWS_REGION")
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.CacheTTL <= 0 {
		opts.CacheTTL = DefaultCacheTTL
	}
	c := opts.Cluster
	if c.Name == "" {
		c.Name = opts.Settings.ClusterName
	}
	if c.Endpoint == "" {
		c.Endpoint = opts.Settings.ClusterEndpoint
	}
	if c.CABundle == "" {
		c.CABundle = opts.Settings.ClusterCABundle
	}
	if c.Name == "" {
		return nil, errors.New("aws provider: no cluster name: set --cluster-name (CLUSTER_NAME)")
	}
	var shifts *zonalshift.Tracker
	if opts.Settings.EnableZonalShift {
		t, err := zonalshift.New(opts.Clients.ARCZonalShift, opts.Clients.EKS, c.Name, opts.Clock)
		if err != nil {
			return nil, fmt.Errorf("aws provider: --enable-zonal-shift: %w", err)
		}
		shifts = t
	}
	return &Provider{
		zonalShift: shifts,
		ec2:        opts.Clients.EC2,
		pricing:    opts.Clients.Pricing,
		settings:   opts.Settings,
		clk:        opts.Clock,
		nodeClass:  opts.NodeClass,
		cluster:    c,
		ttl:        opts.CacheTTL,
		ice:        launch.NewICECache(opts.Clock),
		templates:  launch.NewTemplates(opts.Clients.EC2),
		userData:   launch.NewUserDataCache(),
		region:     opts.Region,

		reservations:    newReservationCounts(),
		disableReserved: opts.DisableReservedCapacity,
		templateUsed:    map[string]time.Time{},
	}, nil
}

// Name implements cloud.CloudProvider.
func (p *Provider) Name() string { return ProviderName }

// ZonalShifts returns the cache of the cluster's ARC zonal shifts, which a
// poller keeps up to date with Update every zonalshift.DefaultInterval; nil
// (nothing shifted, nothing to poll) unless the settings enable zonal shift.
func (p *Provider) ZonalShifts() *zonalshift.Tracker { return p.zonalShift }

// ICE returns the provider's cache of offerings that recently lacked
// capacity. The interruption handler marks interrupted spot pools in it.
func (p *Provider) ICE() *launch.ICECache { return p.ice }

// GetSupportedNodeClasses implements cloud.CloudProvider.
func (p *Provider) GetSupportedNodeClasses() []schema.GroupVersionKind {
	return []schema.GroupVersionKind{awsv1.GroupVersion.WithKind("EC2NodeClass")}
}

// RepairPolicies implements cloud.CloudProvider with Karpenter's AWS
// policies: a node is replaced when its Ready condition has been False or
// Unknown for RepairToleration, when one of the EKS node monitoring agent's
// StorageReady, NetworkingReady, KernelReady or ContainerRuntimeReady has
// been False for RepairToleration, or when AcceleratedHardwareReady has been
// False for AcceleratedHardwareRepairToleration.
func (p *Provider) RepairPolicies() []cloud.RepairPolicy {
	return RepairPolicies()
}

// RepairPolicies returns the AWS provider's repair policies (see
// Provider.RepairPolicies), a new slice on every call.
func RepairPolicies() []cloud.RepairPolicy {
	return []cloud.RepairPolicy{
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionFalse, TolerationDuration: RepairToleration},
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionUnknown, TolerationDuration: RepairToleration},
		{ConditionType: ConditionAcceleratedHardwareReady, ConditionStatus: corev1.ConditionFalse, TolerationDuration: AcceleratedHardwareRepairToleration},
		{ConditionType: ConditionStorageReady, ConditionStatus: corev1.ConditionFalse, TolerationDuration: RepairToleration},
		{ConditionType: ConditionNetworkingReady, ConditionStatus: corev1.ConditionFalse, TolerationDuration: RepairToleration},
		{ConditionType: ConditionKernelReady, ConditionStatus: corev1.ConditionFalse, TolerationDuration: RepairToleration},
		{ConditionType: ConditionContainerRuntimeReady, ConditionStatus: corev1.ConditionFalse, TolerationDuration: RepairToleration},
	}
}

// getNodeClass returns the node class, or (nil, nil) when it does not exist.
func (p *Provider) getNodeClass(ctx context.Context, name string) (*awsv1.EC2NodeClass, error) {
	nc, err := p.nodeClass(ctx, name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("getting EC2NodeClass %q: %w", name, err)
	}
	return nc, nil
}

// checkReady returns the error Create returns for a node class that may not
// launch, or nil.
func checkReady(nc *awsv1.EC2NodeClass) error {
	cond := meta.FindStatusCondition(nc.Status.Conditions, awsv1.ConditionTypeReady)
	switch {
	case cond == nil || cond.Status == metav1.ConditionUnknown:
		return cloud.NewCreateError(nil, cloud.ReasonNodeClassReadinessUnknown, fmt.Sprintf(
			"EC2NodeClass %q has not been resolved yet (Ready is Unknown); the launch is retried once its status is set", nc.Name))
	case cond.Status == metav1.ConditionFalse:
		return cloud.NewNodeClassNotReadyError(fmt.Errorf("EC2NodeClass %q is not ready: %s: %s", nc.Name, cond.Reason, cond.Message))
	case cond.ObservedGeneration != nc.Generation:
		return cloud.NewCreateError(nil, cloud.ReasonNodeClassReadinessUnknown, fmt.Sprintf(
			"the status of EC2NodeClass %q is for generation %d but its spec is at generation %d; the launch is retried once the new spec is resolved",
			nc.Name, cond.ObservedGeneration, nc.Generation))
	}
	return nil
}

// providerID returns aws:///<zone>/<instance-id>.
func providerID(zone, id string) string { return "aws:///" + zone + "/" + id }

// parseProviderID returns the instance ID of a provider ID.
func parseProviderID(id string) (string, error) {
	if !strings.HasPrefix(id, "aws://") {
		return "", fmt.Errorf("provider ID %q is not an AWS provider ID (aws:///<zone>/<instance-id>)", id)
	}
	i := strings.LastIndex(id, "/")
	inst := id[i+1:]
	if !strings.HasPrefix(inst, "i-") {
		return "", fmt.Errorf("provider ID %q names no instance (aws:///<zone>/<instance-id>)", id)
	}
	return inst, nil
}

// InstanceID returns the instance ID of an aws:///<zone>/<instance-id>
// provider ID, or "" when it names no instance: for controllers that act on
// an instance only when there is one.
func InstanceID(providerID string) string {
	id, err := parseProviderID(providerID)
	if err != nil {
		return ""
	}
	return id
}

func tagMap(tags []ec2types.Tag) map[string]string {
	m := make(map[string]string, len(tags))
	for _, t := range tags {
		if t.Key != nil {
			m[*t.Key] = deref(t.Value)
		}
	}
	return m
}

func deref[T any](p *T) T {
	if p == nil {
		var z T
		return z
	}
	return *p
}

func ptr[T any](v T) *T { return &v }
