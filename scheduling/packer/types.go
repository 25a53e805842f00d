// Package packer decides where pending pods go: onto existing nodes, onto
// NodeClaims already in flight, or onto new NodeClaims it proposes, choosing
// for each new NodeClaim the NodePool and the instance types that fit the pods
// packed onto it at the lowest price. Pods that cannot be placed come back with
// a structured reason per NodePool.
//
// The packer is a pure function of its Input: it calls no API server and no
// cloud, reads no clock and draws no random numbers, so the same Input always
// gives the same Result. The provisioner, consolidation, the simulator,
// `stevedore plan` and `stevedore explain` all call it.
package packer

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stevedore-autoscaler/stevedore/scheduling/requirements"
	"github.com/stevedore-autoscaler/stevedore/scheduling/resources"
)

// Capacity types of an offering, as the karpenter.sh/capacity-type label
// carries them.
const (
	CapacityTypeSpot     = "spot"
	CapacityTypeOnDemand = "on-demand"
	CapacityTypeReserved = "reserved"
)

// InstanceType is one kind of machine a NodePool may launch, with the places
// and prices it is offered at.
type InstanceType struct {
	// Name is the instance type, for example "m6i.large".
	Name string
	// Requirements are the labels the type defines (architecture, OS,
	// instance type, family, size, cpu, memory, …), each as `In [value]`.
	// Zone and capacity type come from the offerings, not from here.
	Requirements requirements.Requirements
	// Capacity is what the machine has.
	Capacity resources.Vector
	// Allocatable is what pods may request on it, before DaemonSet overhead
	// (the packer subtracts that per NodePool).
	Allocatable resources.Vector
	// Offerings are the (zone, capacity type) pairs it can be launched in.
	Offerings []Offering
	// PriceOverlaid and CapacityOverlaid say that a NodeOverlay changed the
	// price of one of its offerings or added to its capacity (package
	// overlay sets them); a NodeClaim launched with such a type is
	// annotated so.
	PriceOverlaid, CapacityOverlaid bool
}

// Offering is an instance type in one zone and capacity type, with its price.
type Offering struct {
	Zone         string
	CapacityType string
	// PricePerHour in USD.
	PricePerHour float64
	// Available is false while the offering is known to lack capacity (for
	// example after an insufficient-capacity error, or a capacity
	// reservation with no instance left).
	Available bool
	// ReservationID is the capacity reservation a CapacityTypeReserved
	// offering launches into; empty for other capacity types.
	ReservationID string
	// ReservationCapacity is how many more instances that reservation
	// takes, as last known; 0 for other capacity types.
	ReservationCapacity int
}

// NodePool is a NodePool as the packer needs it: what its nodes look like and
// how much more it may launch.
type NodePool struct {
	Name string
	// Weight orders NodePools: higher weights are tried first; among equal
	// weights, the name later in the alphabet first, as Karpenter orders
	// them (see Input.EqualWeightOrder).
	Weight int32
	// Requirements are the template's requirements with its labels added as
	// `In [value]`, and karpenter.sh/nodepool In [Name].
	Requirements requirements.Requirements
	// Labels are the template labels every node of the pool carries.
	Labels map[string]string
	// Taints must be tolerated by pods placed on the pool's nodes.
	Taints []corev1.Taint
	// StartupTaints are on new nodes briefly; pods need not tolerate them.
	StartupTaints []corev1.Taint
	// Limits cap the pool's total capacity (cpu, memory, any resource, and
	// "nodes"); nil means no limit.
	Limits corev1.ResourceList
	// InUse is the capacity of the pool's existing nodes and NodeClaims
	// (status.resources plus "nodes"), counted against Limits.
	InUse corev1.ResourceList
	// InstanceTypes the pool may launch (already filtered by its NodeClass).
	InstanceTypes []*InstanceType
}

// Node is an existing node or a NodeClaim that has been created but has no
// node yet (in flight). The packer places pods on it before it proposes new
// NodeClaims.
type Node struct {
	// Name is the node name, or the NodeClaim name while in flight.
	Name string
	// NodePool owning it; empty for nodes stevedore does not manage.
	NodePool string
	// InFlight is true for a NodeClaim whose node has not registered yet: its
	// labels are not final, so Requirements describe it instead.
	InFlight bool
	// Labels of the node (for an in-flight NodeClaim: the single-valued
	// requirements it will certainly carry).
	Labels map[string]string
	// Requirements of an in-flight NodeClaim; ignored for registered nodes.
	Requirements requirements.Requirements
	// Taints on the node. For in-flight NodeClaims, startup taints excluded.
	Taints []corev1.Taint
	// Allocatable of the node (for in-flight NodeClaims: the smallest
	// allocatable among its instance types).
	Allocatable resources.Vector
	// Pods bound or nominated to it, DaemonSet pods included.
	Pods []*corev1.Pod
	// Requested is the sum of the Pods' requests, when the caller already
	// knows it: callers that solve many times over the same nodes (the
	// consolidation search) compute it once instead of on every Solve. Nil
	// means the packer adds the Pods' requests up itself.
	Requested *resources.Vector
	// Unschedulable nodes (cordoned, or marked for deletion) take no pods but
	// still count for topology.
	Unschedulable bool
}

// EqualWeightOrder says how a new NodeClaim's NodePool is chosen among
// NodePools of the same weight, all of which could launch it.
type EqualWeightOrder string

const (
	// EqualWeightName takes the first NodePool that can launch the claim in
	// Karpenter's order: weight descending, then name descending (the name
	// later in the alphabet first). It is Karpenter's behaviour and the
	// default.
	EqualWeightName EqualWeightOrder = "Name"
	// EqualWeightPrice takes, among the NodePools of the highest weight that
	// can launch the claim, the one whose cheapest instance type for it
	// costs least (ties in the order of EqualWeightName). A higher weight
	// still beats any price.
	EqualWeightPrice EqualWeightOrder = "Price"
)

// PreferencePolicy says how preferred scheduling terms (preferred node
// affinity, preferred pod affinity and anti-affinity, ScheduleAnyway spread)
// shape new NodeClaims.
type PreferencePolicy string

const (
	// PreferenceScore ranks choices by the preferences' weights the way
	// kube-scheduler scores nodes, but never opens a node only to satisfy a
	// preference. An Input whose policy is empty is packed with it.
	PreferenceScore PreferencePolicy = "Score"
	// PreferenceRespect treats preferences as requirements and relaxes them
	// one at a time when a pod cannot be placed (Karpenter's behaviour).
	PreferenceRespect PreferencePolicy = "Respect"
	// PreferenceIgnore disregards preferences entirely.
	PreferenceIgnore PreferencePolicy = "Ignore"

	// DefaultPreferencePolicy is the controller's default
	// (--preference-policy), and so that of `stevedore plan` and of the
	// simulator, so that a dry run predicts what the controller does.
	DefaultPreferencePolicy = PreferenceRespect
)

// MinValuesPolicy says what happens when the instance types that fit the pods
// of a new NodeClaim carry fewer distinct values of a NodePool requirement's
// key than its minValues. The values are Karpenter's MIN_VALUES_POLICY.
type MinValuesPolicy string

const (
	// MinValuesStrict leaves such pods unschedulable on the NodePool
	// (MinValuesUnsatisfiable). The default.
	MinValuesStrict MinValuesPolicy = "Strict"
	// MinValuesBestEffort launches the NodeClaim anyway, with the minValues
	// of each key that falls short lowered to the number of distinct values
	// its types carry (NodeClaim.MinValuesRelaxed). Only the pod that opens
	// a NodeClaim relaxes them; pods packed onto it later must keep the
	// minValues it opened with, as in Karpenter.
	MinValuesBestEffort MinValuesPolicy = "BestEffort"
)

// Input is everything one packing decision depends on.
type Input struct {
	// Pods to place. The packer places them in an order of its own, but
	// the plan holds when kube-scheduler binds them one by one in the
	// order it takes them from its queue: higher priority first, then the
	// earlier creation timestamp, and among pods created in the same
	// second (or without a timestamp) in the order of this list, which is
	// the only record of which came first. Required topology spread
	// constraints depend on that order (see the package's creation.go).
	Pods []*corev1.Pod
	// Nodes that exist or are in flight.
	Nodes []Node
	// NodePools that may launch new NodeClaims; NodePools that are not ready
	// must be left out by the caller.
	NodePools []NodePool
	// DaemonSetPods are one pod per DaemonSet (its newest live pod, or its
	// template as the API server will admit it); a new node of a pool
	// reserves room for every one that would run on it.
	DaemonSetPods []*corev1.Pod
	// NamespaceLabels give each namespace's labels, for pod affinity terms
	// with a namespaceSelector.
	NamespaceLabels map[string]map[string]string
	// PreferencePolicy defaults to PreferenceScore.
	PreferencePolicy PreferencePolicy
	// EqualWeightOrder says which of several NodePools of the same weight
	// launches a new NodeClaim; it defaults to EqualWeightName.
	EqualWeightOrder EqualWeightOrder
	// MinValuesPolicy defaults to MinValuesStrict.
	MinValuesPolicy MinValuesPolicy
	// MaxInstanceTypes caps the instance types listed on a new NodeClaim
	// (cheapest first); 0 means 600.
	MaxInstanceTypes int
	// VolumeZones gives, for pods whose persistent volumes are bound or
	// topology-constrained, the zones those volumes allow (any zone when
	// empty). A pod that references a PersistentVolumeClaim, directly or
	// through an ephemeral volume, is ignored unless it is listed here.
	VolumeZones map[types.NamespacedName][]string
	// Cache, when set, carries pool tables from one Solve to the next; see
	// Cache for when it may be shared.
	Cache *Cache
	// First are pods placed before all others, whatever their size: pods
	// whose room is already promised, such as those of a node being
	// replaced, whose replacement was launched for them. Placed in the
	// usual order, pods of the same size would take that room by name.
	First map[types.NamespacedName]bool
	// CompactSpread settles a tie between the domains a required topology
	// spread constraint allows a pod (zones, say) in favour of the domain
	// the pods placed so far request most, so that pods moving together
	// open as few nodes as they can; a disruption simulation asks for it.
	// Without it the tie goes to the domain with the fewest pods carrying
	// the constraint, then the least requested, which keeps a plan's
	// domains even.
	CompactSpread bool
}

// Result is the packing decision.
type Result struct {
	// Placements onto existing or in-flight nodes, in a deterministic order.
	Placements []Placement
	// NodeClaims to create, in a deterministic order.
	NodeClaims []NodeClaim
	// Unschedulable pods, each with why no node and no NodePool could take it.
	Unschedulable []Unschedulable
	// Ignored pods are not considered at all (missing PVC, matchFields, …).
	Ignored []Unschedulable
}

// Placement puts a pod on an existing or in-flight node.
type Placement struct {
	Pod  types.NamespacedName
	Node string
}

// NodeClaim is a proposed new node.
type NodeClaim struct {
	NodePool string
	// Requirements the node must meet: the pool's and the pods', narrowed to
	// the chosen instance types, zones and capacity types.
	Requirements requirements.Requirements
	// InstanceTypes that fit every pod placed on it, cheapest first.
	InstanceTypes []string
	// CapacityTypes and Zones offered among those instance types, sorted.
	CapacityTypes []string
	Zones         []string
	// PricePerHour of the cheapest available offering among InstanceTypes.
	PricePerHour float64
	// Requests of the pods placed on it plus DaemonSet overhead.
	Requests resources.Vector
	// MinValuesRelaxed is true when MinValuesBestEffort lowered a minValues
	// of the NodePool for this NodeClaim; Requirements carry the lowered
	// ones. Karpenter marks such NodeClaims with the annotation
	// karpenter.sh/nodeclaim-min-values-relaxed.
	MinValuesRelaxed bool
	// Pods placed on it.
	Pods []types.NamespacedName
}

// Unschedulable says why a pod could not be placed.
type Unschedulable struct {
	Pod types.NamespacedName
	// Reason sums up the most relevant cause in one sentence.
	Reason string
	// NodePools says, per NodePool, what ruled it out; empty when the pod
	// was ignored before any NodePool was considered.
	NodePools []NodePoolVerdict
}

// NodePoolVerdict is why one NodePool could not take a pod.
type NodePoolVerdict struct {
	NodePool string
	// Code is a stable machine-readable cause: TaintNotTolerated,
	// RequirementIncompatible, LimitExceeded, NoInstanceTypeFits,
	// TopologyUnsatisfiable, AffinityUnsatisfiable, HostPortConflict,
	// NoAvailableOffering, MinValuesUnsatisfiable (the instance types that
	// fit the pod carry fewer distinct values of a requirement's key than its
	// minValues; never under MinValuesBestEffort, which relaxes them).
	Code string
	// Message explains it with the numbers behind it, for example which
	// taint, which requirement key and values, or which limit and by how
	// much it would be exceeded.
	Message string
}

// The packer also exposes its feasibility check on its own, so that it can be
// compared with kube-scheduler's Filter plugins and used by explain:
//
//	func Feasible(pod *corev1.Pod, nodes []Node, i int, namespaceLabels map[string]map[string]string) error
//
// reports whether pod may run on nodes[i], given the pods already on every
// node, with the verdict of kube-scheduler's NodeUnschedulable,
// NodeResourcesFit, NodeAffinity, TaintToleration, NodePorts, InterPodAffinity
// and PodTopologySpread filters; nil means it fits.
