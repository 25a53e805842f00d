// Package scenario reads what `stevedore simulate` runs: Kubernetes
// manifests (NodePools, EC2NodeClasses, workloads, budgets, priority classes,
// nodes) and at most one Scenario (apiVersion stevedore.io/v1alpha1), which
// sets the seed, the virtual start and duration, the simulated AWS account,
// the controller's settings and the events injected along the way.
//
// Everything is checked before a run starts. A Scenario is decoded strictly:
// an unknown field, an event of an unknown kind, a duration that does not
// parse or falls outside the run, a controller setting that does not exist —
// each is a validation.Problem naming the file, the object, the field and the
// fix, like those of `stevedore validate`, which the manifests (and the
// objects of apply events) go through as well.
//
// Load returns a Run: the scenario with every default resolved, the
// manifests decoded into typed objects (NodePools and EC2NodeClasses with
// their CRD defaults, as the API server would apply them) and the events in
// time order.
package scenario

import (
	"encoding/json"
	"time"

	"github.com/stevedore-autoscaler/stevedore/sim/workloads"
)

// APIVersion and Kind identify a Scenario document.
const (
	APIVersion = "stevedore.io/v1alpha1"
	Kind       = "Scenario"
)

// Defaults of a Scenario.
const (
	DefaultSeed              = 1
	DefaultDuration          = time.Hour
	DefaultSampleEvery       = time.Minute
	DefaultKubernetesVersion = "1.33"
	DefaultBootTime          = 30 * time.Second
	DefaultReadyTime         = 15 * time.Second
	DefaultPodStartTime      = 5 * time.Second
	DefaultKubeAPIQPS        = workloads.DefaultKubeAPIQPS
	DefaultKubeAPIBurst      = workloads.DefaultKubeAPIBurst
	DefaultSpotPriceFraction = 0.35
	// DefaultClusterName is the cluster's name when neither the scenario
	// nor an EC2NodeClass's karpenter.sh/discovery selector names one.
	DefaultClusterName = "sim"
)

// Scenario is the document that shapes a run.
type Scenario struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Metadata   Metadata `json:"metadata"`
	Spec       Spec     `json:"spec"`
}

// Metadata names the scenario.
type Metadata struct {
	Name        string            `json:"name,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Spec is what the scenario sets; every field is optional.
type Spec struct {
	// Seed seeds every random choice (default 1); --seed overrides it.
	Seed *uint64 `json:"seed,omitempty"`
	// Start is the virtual start time, RFC 3339 (default: Monday
	// 2026-01-05T00:00:00Z).
	Start string `json:"start,omitempty"`
	// Duration of the run (default 1h).
	Duration Duration `json:"duration,omitempty"`
	// SampleEvery is the time-series resolution (default 1m).
	SampleEvery Duration `json:"sampleEvery,omitempty"`
	Cluster     Cluster  `json:"cluster,omitempty"`
	AWS         AWS      `json:"aws,omitempty"`
	// Controller holds controller settings by their flag names, as
	// `stevedore controller --help` lists them (for example
	// batch-idle-duration, preference-policy, vm-memory-overhead-percent).
	Controller map[string]any `json:"controller,omitempty"`
	Events     []Event        `json:"events,omitempty"`
}

// Cluster is the simulated EKS cluster.
type Cluster struct {
	// Name defaults to the value of the karpenter.sh/discovery tag the
	// EC2NodeClasses select subnets by, else "sim".
	Name string `json:"name,omitempty"`
	// KubernetesVersion is the control plane's minor version (default
	// 1.33); alias AMI selectors pick images for it.
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	// PodStartTime is how long a pod takes from being bound to a node to
	// being Running and Ready (default 5s; pods can set their own with the
	// simulate.stevedore.io/start-time annotation).
	PodStartTime Duration `json:"podStartTime,omitempty"`
	// ControllerManager sets how fast kube-controller-manager's workload
	// controllers write pods.
	ControllerManager ControllerManager `json:"controllerManager,omitzero"`
}

// ControllerManager is kube-controller-manager's API client settings.
type ControllerManager struct {
	// KubeAPIQPS and KubeAPIBurst are its --kube-api-qps and
	// --kube-api-burst (default 100 and 200, as the end-to-end suite's
	// local cluster and managed control planes raise them; upstream's
	// defaults are 20 and 30). Each workload controller's client has a token
	// bucket of its own, and every pod it creates or deletes waits for a
	// token: they set the pace of a large scale-out.
	KubeAPIQPS   *float64 `json:"kubeAPIQPS,omitempty"`
	KubeAPIBurst *int     `json:"kubeAPIBurst,omitempty"`
}

// AWS is the simulated account. Every field has a working default: a
// correctly set-up cluster, as the in-memory AWS's StandardCluster builds it.
type AWS struct {
	Region string   `json:"region,omitempty"`
	Zones  []string `json:"zones,omitempty"`
	// Subnets default to one per zone, tagged karpenter.sh/discovery=<cluster>.
	Subnets []Subnet `json:"subnets,omitempty"`
	// SecurityGroups default to one tagged karpenter.sh/discovery=<cluster>.
	SecurityGroups []SecurityGroup `json:"securityGroups,omitempty"`
	// Images are registered besides the current EKS-optimized AL2023 and
	// Bottlerocket releases for the cluster's version. AMI IDs that the
	// EC2NodeClasses (or the events) name but no image here does are
	// registered too, as x86_64 images.
	Images []Image `json:"images,omitempty"`
	// CurrentImages are EKS-optimized images that are the current release
	// at the start, what <family>@latest resolves to, in place of the
	// generated release of their family, architecture and variant: a
	// snapshot of a cluster (stevedore snapshot) records the images its
	// EC2NodeClasses resolved, so that its nodes are not drifted at the
	// start of the run.
	CurrentImages []ReleaseImage `json:"currentImages,omitempty"`
	// Roles are IAM roles to create besides the ones the EC2NodeClasses name.
	Roles []string `json:"roles,omitempty"`
	// PassRole, when set, are the only roles the controller may pass
	// (iam:PassRole); by default every role.
	PassRole []string `json:"passRole,omitempty"`
	// AccessEntries, when set, are the only node roles whose kubelets may
	// join the cluster; by default every role. An empty list admits none.
	AccessEntries []string `json:"accessEntries,omitempty"`
	// ControllerPolicy, when set, is the IAM policy the controller's
	// identity has, enforced on every call as AWS would: Karpenter (the
	// controller policy of Karpenter's reference CloudFormation template)
	// or Generated (what `stevedore iam-policy` prints for this account).
	// Both let the controller pass only the node role
	// KarpenterNodeRole-<cluster>. A call the policy refuses fails with
	// AccessDenied and is reported. Default: every call is allowed.
	ControllerPolicy string `json:"controllerPolicy,omitempty"`
	// InterruptionQueue names the SQS queue that receives interruption
	// events and that the controller consumes; empty: no queue, and
	// interruptions are not handled.
	InterruptionQueue string `json:"interruptionQueue,omitempty"`
	// InstanceTypes restricts the catalog (default: every type), which
	// makes large runs faster.
	InstanceTypes []string `json:"instanceTypes,omitempty"`
	// BootTime is how long an instance takes from launch to its kubelet
	// registering (default 30s); ReadyTime from registration to Ready
	// (default 15s).
	BootTime  Duration `json:"bootTime,omitempty"`
	ReadyTime Duration `json:"readyTime,omitempty"`
	// SpotPriceFraction prices spot at this fraction of on-demand, before the
	// in-memory AWS's small per-zone variation (default 0.35).
	SpotPriceFraction *float64 `json:"spotPriceFraction,omitempty"`
	// PlacementGroups are EC2 placement groups of the account, for
	// EC2NodeClasses' placementGroupSelector (default: none).
	PlacementGroups []PlacementGroup `json:"placementGroups,omitempty"`
	// CapacityReservations are on-demand capacity reservations and
	// capacity blocks in the account, for EC2NodeClasses to select with
	// capacityReservationSelectorTerms.
	CapacityReservations []CapacityReservation `json:"capacityReservations,omitempty"`
}

// PlacementGroup is an EC2 placement group of the simulated account.
type PlacementGroup struct {
	// ID is generated (pg-...) when empty.
	ID   string `json:"id,omitempty"`
	Name string `json:"name"`
	// Strategy is cluster, partition or spread.
	Strategy string `json:"strategy"`
	// Partitions is a partition group's partition count (default 2).
	Partitions int32 `json:"partitions,omitempty"`
}

// CapacityReservation is a capacity reservation of the simulated account.
// Launches into it take a slot; terminations give it back.
type CapacityReservation struct {
	// ID is the reservation's ID, cr- and 17 hex digits (default: one
	// generated from the seed).
	ID           string `json:"id,omitempty"`
	InstanceType string `json:"instanceType"`
	Zone         string `json:"zone"`
	// Count is how many instances it holds.
	Count int `json:"count"`
	// Type is default (an on-demand capacity reservation, the default) or
	// capacity-block.
	Type string `json:"type,omitempty"`
	// InstanceMatchCriteria is targeted (default) or open.
	InstanceMatchCriteria string `json:"instanceMatchCriteria,omitempty"`
	// End is when it ends, as a Go duration from the start of the run
	// (default: never; a capacity block needs one).
	End           Duration          `json:"end,omitempty"`
	Interruptible bool              `json:"interruptible,omitempty"`
	Tags          map[string]string `json:"tags,omitempty"`
}

// Subnet is a subnet of the simulated VPC.
type Subnet struct {
	ID   string            `json:"id,omitempty"`
	Zone string            `json:"zone"`
	Tags map[string]string `json:"tags,omitempty"`
	// FreeIPs is how many addresses are free (default: the /20's).
	FreeIPs *int `json:"freeIPs,omitempty"`
}

// SecurityGroup is a security group of the simulated VPC.
type SecurityGroup struct {
	ID   string            `json:"id,omitempty"`
	Name string            `json:"name,omitempty"`
	Tags map[string]string `json:"tags,omitempty"`
}

// Image is an AMI registered in the account.
type Image struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
	// Arch is x86_64 (default) or arm64.
	Arch string `json:"arch,omitempty"`
	// Created is the creation date, RFC 3339 (default: 30 days before the
	// start).
	Created string            `json:"created,omitempty"`
	Owner   string            `json:"owner,omitempty"`
	Tags    map[string]string `json:"tags,omitempty"`
}

// Event is one thing that happens during the run: exactly one of its kinds
// is set.
type Event struct {
	// At is the time since the start, a Go duration.
	At Duration `json:"at"`
	// Apply creates the object, or merges it into the one that exists
	// (kubectl apply).
	Apply map[string]any `json:"apply,omitempty"`
	// Delete deletes an object.
	Delete *ObjectRef `json:"delete,omitempty"`
	// Scale sets the replicas of a Deployment, ReplicaSet, StatefulSet or
	// static NodePool, as kubectl scale does.
	Scale *Scale `json:"scale,omitempty"`
	// Patch patches an object.
	Patch *Patch `json:"patch,omitempty"`
	// ReleaseImage publishes a new EKS-optimized image, which moves
	// <alias>@latest.
	ReleaseImage *ReleaseImage `json:"releaseImage,omitempty"`
	// SpotInterruption interrupts spot instances: a two-minute warning on the
	// interruption queue (if there is one), then termination.
	SpotInterruption *Selection `json:"spotInterruption,omitempty"`
	// InsufficientCapacity makes launches into matching pools fail.
	InsufficientCapacity *InsufficientCapacity `json:"insufficientCapacity,omitempty"`
	// NodeFailure stops the kubelets of nodes (the instances keep running),
	// or, with a condition, reports a failed subsystem on them.
	NodeFailure *NodeFailure `json:"nodeFailure,omitempty"`
	// InstanceStatusFailure fails an EC2 status check of the nodes'
	// instances; the instances keep running.
	InstanceStatusFailure *InstanceStatusFailure `json:"instanceStatusFailure,omitempty"`
	// RestartController drops all of the controller's in-memory state and
	// rebuilds it from the API, as a restart does.
	RestartController *struct{} `json:"restartController,omitempty"`
	// AWSFault makes calls to AWS fail, for a window or a number of times.
	AWSFault *AWSFault `json:"awsFault,omitempty"`
	// ZonalShift starts an ARC zonal shift of the cluster away from a zone,
	// which a controller run with enable-zonal-shift avoids.
	ZonalShift *ZonalShift `json:"zonalShift,omitempty"`
}

// ObjectRef names an object.
type ObjectRef struct {
	// APIVersion is optional: kinds are looked up by name.
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
}

// Scale sets replicas.
type Scale struct {
	ObjectRef `json:",inline"`
	Replicas  *int32 `json:"replicas"`
}

// Patch is a patch of an object.
type Patch struct {
	ObjectRef `json:",inline"`
	// Type is merge (default), json or strategic.
	Type  string          `json:"type,omitempty"`
	Patch json.RawMessage `json:"patch"`
}

// ReleaseImage is a new EKS-optimized image release.
type ReleaseImage struct {
	// Alias is the AMI family of the alias: al2023 (default), al2 or
	// bottlerocket.
	Alias string `json:"alias,omitempty"`
	// KubernetesVersion defaults to the cluster's.
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	// Arch is x86_64 (default) or arm64.
	Arch string `json:"arch,omitempty"`
	// Variant is standard (default), nvidia or neuron.
	Variant string `json:"variant,omitempty"`
	// ID of the new image (default: generated).
	ID   string `json:"id,omitempty"`
	Name string `json:"name,omitempty"`
}

// Selection picks nodes: count of those matching the node selector (all of
// them when count is 0), chosen with the run's seed, or the nodes named.
type Selection struct {
	Count        int               `json:"count,omitempty"`
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	Nodes        []string          `json:"nodes,omitempty"`
}

// NodeFailure picks nodes and fails them. Without Condition their kubelets
// stop, so the node lifecycle controller turns Ready Unknown. With Condition
// the kubelets keep running and the node's condition of that type turns
// False, as the EKS node monitoring agent reports a failed subsystem
// (StorageReady, NetworkingReady, KernelReady, ContainerRuntimeReady,
// AcceleratedHardwareReady).
type NodeFailure struct {
	Selection `json:",inline"`
	// Condition is the node condition type that turns False; empty stops the
	// kubelet instead.
	Condition string `json:"condition,omitempty"`
}

// InstanceStatusFailure picks nodes and fails an EC2 status check of their
// instances, as DescribeInstanceStatus then reports: impaired, with the
// reachability check failed since the event. The instances and their
// kubelets keep running.
type InstanceStatusFailure struct {
	Selection `json:",inline"`
	// Check is instance (default: the instance's own software) or system
	// (the AWS host under it).
	Check string `json:"check,omitempty"`
}

// InsufficientCapacity makes pools answer InsufficientInstanceCapacity.
type InsufficientCapacity struct {
	// InstanceTypes and Zones match all when empty.
	InstanceTypes []string `json:"instanceTypes,omitempty"`
	Zones         []string `json:"zones,omitempty"`
	// CapacityType is spot, on-demand or empty for both.
	CapacityType string `json:"capacityType,omitempty"`
	// For is how long (default: to the end of the run).
	For Duration `json:"for,omitempty"`
}

// ZonalShift shifts the cluster's traffic away from a zone with Application
// Recovery Controller, from the event's time for For, as
// `aws arc-zonal-shift start-zonal-shift` does; GetManagedResource then
// reports the shift, applied, until it expires.
type ZonalShift struct {
	// Zone is a zone of aws.zones, by name (us-east-1b); ARC reports it by
	// its zone ID.
	Zone string `json:"zone"`
	// For is how long the shift lasts (default: to the end of the run, at
	// most MaxZonalShift, ARC's limit).
	For Duration `json:"for,omitempty"`
}

// MaxZonalShift is the longest an ARC zonal shift may be started for.
const MaxZonalShift = 72 * time.Hour

// AWSFault makes the named AWS operations fail: the next Times calls of
// each, or every call during For. Exactly one of Times and For is set.
type AWSFault struct {
	// Operations are AWS operation names, as the in-memory AWS serves them
	// (CreateFleet, DescribeInstances, GetParameter, ...).
	Operations []string `json:"operations"`
	// Error is the failure: throttling (the service's throttling error:
	// RequestLimitExceeded for EC2, ThrottlingException or Throttling
	// elsewhere), serverError (HTTP 500 InternalError), unavailable (HTTP 503
	// ServiceUnavailable), or an AWS error code such as
	// UnauthorizedOperation.
	Error string `json:"error"`
	// Times fails the next Times calls of each operation.
	Times int `json:"times,omitempty"`
	// For fails every call during the window.
	For Duration `json:"for,omitempty"`
}

// The kinds of AWSFault.Error that are not error codes.
const (
	FaultThrottling  = "throttling"
	FaultServerError = "serverError"
	FaultUnavailable = "unavailable"
)

// Duration is a Go duration written as a string ("90s", "5m", "1h30m").
type Duration string

// EventKind returns the name of the kind of event set, or "" when none is
// (or more than one, which the loader rejects).
func (e *Event) EventKind() string {
	kinds := e.kinds()
	if len(kinds) != 1 {
		return ""
	}
	return kinds[0]
}

func (e *Event) kinds() []string {
	var out []string
	add := func(set bool, name string) {
		if set {
			out = append(out, name)
		}
	}
	add(e.Apply != nil, "apply")
	add(e.Delete != nil, "delete")
	add(e.Scale != nil, "scale")
	add(e.Patch != nil, "patch")
	add(e.ReleaseImage != nil, "releaseImage")
	add(e.SpotInterruption != nil, "spotInterruption")
	add(e.InsufficientCapacity != nil, "insufficientCapacity")
	add(e.NodeFailure != nil, "nodeFailure")
	add(e.InstanceStatusFailure != nil, "instanceStatusFailure")
	add(e.RestartController != nil, "restartController")
	add(e.AWSFault != nil, "awsFault")
	add(e.ZonalShift != nil, "zonalShift")
	return out
}

// EventKinds are the names of the kinds of events, as a Scenario writes them.
var EventKinds = []string{"apply", "delete", "scale", "patch", "releaseImage", "spotInterruption", "insufficientCapacity", "nodeFailure", "instanceStatusFailure", "restartController", "awsFault", "zonalShift"}
