package disruption

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/state"
)

// Reason is why a node is disrupted. The first three are the budgeted
// reasons of karpenter.sh/v1; the rest are forceful and bypass budgets.
type Reason string

// Reasons. They are the values of the NodeClaim's DisruptionReason
// condition and of the reason label of karpenter_nodeclaims_disrupted_total
// (lower-cased there).
const (
	ReasonEmpty         Reason = Reason(karpv1.DisruptionReasonEmpty)
	ReasonUnderutilized Reason = Reason(karpv1.DisruptionReasonUnderutilized)
	ReasonDrifted       Reason = Reason(karpv1.DisruptionReasonDrifted)
	ReasonExpired       Reason = "Expired"
	ReasonInterrupted   Reason = "Interrupted"
	ReasonUnhealthy     Reason = "Unhealthy"
)

// Budgeted reports whether a budget limits disruptions for r.
func (r Reason) Budgeted() bool {
	return r == ReasonEmpty || r == ReasonUnderutilized || r == ReasonDrifted
}

// Method is how a command takes nodes away.
type Method string

// Methods.
const (
	// MethodDelete removes the candidates; their pods fit on other nodes.
	MethodDelete Method = "delete"
	// MethodReplace launches the replacements first, waits for them to be
	// initialized, then removes the candidates.
	MethodReplace Method = "replace"
)

// Codes of Blocked.Code: why a node is not a candidate, or why a candidate
// was not disrupted.
const (
	// Not a candidate at all.
	CodeUnmanaged         = "Unmanaged"         // no NodeClaim: stevedore did not launch it
	CodeNotRegistered     = "NotRegistered"     // the NodeClaim has no Node yet
	CodeNotInitialized    = "NotInitialized"    // the node has not finished starting
	CodeDeleting          = "Deleting"          // already being deleted or disrupted
	CodeNominated         = "Nominated"         // the provisioner expects pods to land on it
	CodeNoNodePool        = "NoNodePool"        // its NodePool does not exist
	CodeDoNotDisruptNode  = "DoNotDisruptNode"  // the Node or NodeClaim carries karpenter.sh/do-not-disrupt
	CodeDoNotDisruptPod   = "DoNotDisruptPod"   // a pod carries an active karpenter.sh/do-not-disrupt
	CodePDBBlocked        = "PDBBlocked"        // a pod's PodDisruptionBudget allows no disruption
	CodeMultiplePDBs      = "MultiplePDBs"      // a pod matches more than one PodDisruptionBudget
	CodeNotConsolidatable = "NotConsolidatable" // consolidateAfter has not elapsed (or is Never)
	CodeBudget            = "BudgetExhausted"   // the NodePool's budget for the reason is used up
	CodePolicy            = "ConsolidationPolicy"
	CodeUnknownPrice      = "UnknownPrice" // its instance type or offering is not known, so savings cannot be computed

	// A candidate that was considered but not disrupted.
	CodePodsDoNotFit     = "PodsDoNotFit" // its pods fit neither on other nodes nor on one new node
	CodeNotCheaper       = "NotCheaper"   // no replacement is strictly cheaper
	CodeWouldNeedMany    = "WouldNeedManyNodes"
	CodeSpotToSpot       = "SpotToSpotDisabled"
	CodeTooFewSpotOption = "TooFewCheaperSpotOptions"
)

// Blocked says why a node was not disrupted.
type Blocked struct {
	Node     string
	NodePool string
	// Reason is the disruption method it was considered for; empty when it
	// is not a candidate for any.
	Reason  Reason
	Code    string
	Message string
	// Score is the Balanced score of a consolidation move that was
	// rejected for it (CodeBalancedScore); nil otherwise.
	Score *Score
	// Method is the method of that rejected move; empty otherwise.
	Method Method
}

func (b Blocked) String() string {
	if b.Reason != "" {
		return fmt.Sprintf("%s (%s): %s: %s", b.Node, b.Reason, b.Code, b.Message)
	}
	return fmt.Sprintf("%s: %s: %s", b.Node, b.Code, b.Message)
}

// Candidate is a node that a disruption method may take away.
type Candidate struct {
	Node     *state.StateNode
	NodePool *karpv1.NodePool
	// InstanceType, CapacityType and Zone come from the node's labels.
	InstanceType string
	CapacityType string
	Zone         string
	// Price is what the node costs per hour in USD; 0 and PriceKnown false
	// when its offering is not among the NodePool's.
	Price      float64
	PriceKnown bool
	// Pods are the pods that must move elsewhere if the node goes: bound,
	// active, neither DaemonSet nor static pods.
	Pods []*podRef
	// DisruptionCost is Karpenter's disruption cost: the EvictionCost of
	// every pod on the node, scaled by the fraction of the NodeClaim's
	// lifetime (expireAfter) left.
	DisruptionCost float64
	// RescheduleDisruptionCost is 1 (for the node) plus the positive
	// EvictionCosts of Pods. Consolidation tries candidates by Price over
	// it, highest first, as Karpenter does; it is never below 1.
	RescheduleDisruptionCost float64
	// Consolidatable is the NodeClaim's Consolidatable condition.
	Consolidatable bool
	// Drifted is the NodeClaim's Drifted condition, with its reason and
	// when it turned True.
	Drifted      bool
	DriftReason  string
	DriftedSince int64 // unix nanoseconds, 0 when not drifted
	// gracefulBlock is why graceful methods may not take it (a
	// do-not-disrupt pod or a PDB); nil when they may. Drift ignores it when
	// the NodeClaim has a terminationGracePeriod.
	gracefulBlock *Blocked
	// doNotDisrupt are its pods whose do-not-disrupt annotation was read
	// and is not "true" (Decision.DoNotDisrupt).
	doNotDisrupt []DoNotDisruptPod
}

// DoNotDisruptPod is a pod of a candidate whose karpenter.sh/do-not-disrupt
// annotation the decision read and found to be a duration or invalid (not
// "true", which needs no explaining).
type DoNotDisruptPod struct {
	Pod *corev1.Pod
	// Value is the annotation's value.
	Value string
	// Invalid is set for a value that is neither "true" nor a positive
	// duration: it is ignored.
	Invalid bool
	// Until is when a duration stops protecting the pod, counted from its
	// start; Active says whether that is still to come.
	Until  time.Time
	Active bool
}

// Name is the node's name.
func (c *Candidate) Name() string { return c.Node.Name() }

// NodeClaimName is the NodeClaim's name.
func (c *Candidate) NodeClaimName() string { return c.Node.NodeClaim.Name }

// Empty reports whether no pod has to move if the node goes.
func (c *Candidate) Empty() bool {
	// A pod whose eviction cost is zero or less (very negative deletion
	// cost or priority) does not keep a node, as in Karpenter.
	for _, p := range c.Pods {
		if p.cost > 0 {
			return false
		}
	}
	return true
}

// Command is one disruption decision: which nodes go, why, and what is
// launched first.
type Command struct {
	Reason Reason
	Method Method
	// Candidates taken away, in the order they were chosen.
	Candidates []*Candidate
	// Replacements to launch and wait for before the candidates go.
	Replacements []packer.NodeClaim
	// SavingsPerHour is the candidates' price minus the replacements'
	// worst-case price (consolidation only).
	SavingsPerHour float64
	// Score is the move's Balanced score when a candidate's NodePool has
	// consolidationPolicy: Balanced (consolidation only); nil otherwise.
	// It is the lowest of Scores, which holds each Balanced NodePool's
	// score of the move, by NodePool name (every one approving).
	Score  *Score
	Scores []Score
}

// Pods is the number of pods that move.
func (c Command) Pods() int {
	n := 0
	for _, cand := range c.Candidates {
		n += len(cand.Pods)
	}
	return n
}

// String is the command in the words of the controller's log line, for
// example "disrupting nodeclaim(s) via replace, terminating 1 nodes (2 pods)
// ip-10-0-1-2.ec2.internal/m5.large/spot and replacing with node from types
// m6g.large, m7g.large, reason drifted".
func (c Command) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "disrupting nodeclaim(s) via %s, terminating %d nodes (%d pods) ", c.Method, len(c.Candidates), c.Pods())
	for i, cand := range c.Candidates {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s/%s/%s", cand.Name(), cand.InstanceType, cand.CapacityType)
	}
	for i, r := range c.Replacements {
		if i == 0 {
			b.WriteString(" and replacing with ")
		} else {
			b.WriteString(", ")
		}
		b.WriteString(describeReplacement(r))
	}
	fmt.Fprintf(&b, ", reason %s", strings.ToLower(string(c.Reason)))
	if c.Score != nil {
		fmt.Fprintf(&b, ", balanced %s", c.Score)
	}
	return b.String()
}

// describeReplacement names a replacement's capacity type and first types.
func describeReplacement(r packer.NodeClaim) string {
	const shown = 5
	var b strings.Builder
	if len(r.CapacityTypes) == 1 {
		b.WriteString(r.CapacityTypes[0] + " ")
	}
	b.WriteString("node from types ")
	types := r.InstanceTypes
	more := 0
	if len(types) > shown {
		more = len(types) - shown
		types = types[:shown]
	}
	b.WriteString(strings.Join(types, ", "))
	if more > 0 {
		fmt.Fprintf(&b, " and %d other(s)", more)
	}
	return b.String()
}

// Options tune the decision. The zero value is Karpenter's behaviour.
type Options struct {
	// SpotToSpot allows replacing spot nodes with cheaper spot nodes
	// (Karpenter's SpotToSpotConsolidation feature gate, off by default).
	SpotToSpot bool
	// StaticCapacity turns on the replacement of drifted nodes of static
	// NodePools (spec.replicas), as Karpenter's StaticCapacity feature gate
	// does (off by default). Static NodePools' nodes are never consolidated
	// and never replaced by plain drift, whatever it says.
	StaticCapacity bool
	// PreferencePolicy is passed to the packer.
	PreferencePolicy packer.PreferencePolicy
	// MaxInstanceTypes caps the instance types of a replacement; 0 is the
	// packer's default.
	MaxInstanceTypes int
	// MinValuesPolicy is passed to the packer: under BestEffort a
	// replacement may launch with relaxed minValues, as a new NodeClaim
	// may. Consolidation's price filter then holds the replacement to the
	// instance-type minValues it records, relaxed or not, as Karpenter holds
	// it to its recorded ones.
	MinValuesPolicy packer.MinValuesPolicy
	// SkipConsolidation leaves consolidation's packings (single- and
	// multi-node) out of the decision, for a caller that knows they would
	// find nothing: the disruption controller, after a decision in which
	// they found nothing and no change since that could make room (see
	// state.Relaxations). Which nodes are candidates, and which the budgets
	// hold back, is still worked out; each candidate is then reported with
	// its entry in Verdicts, the earlier decision's Decision.Verdicts by
	// node name.
	SkipConsolidation bool
	Verdicts          map[string]Blocked

	// Cache, when set, is the packer cache the decision's packings share
	// (a new one otherwise). A caller that decides again and again on a
	// cluster that changes a little, as the disruption controller does,
	// keeps one between decisions: what packing derives from a node's pods
	// is then derived again only when they change. It changes no result.
	Cache *packer.Cache

	// MaxCandidates caps the candidates multi-node consolidation
	// considers, as Karpenter does (100, the first candidates in its
	// order); 0, the default, means no cap. Single-node consolidation
	// still tries every candidate. It exists to compare stevedore's
	// search with a capped one (the benchmarks and the simulator's
	// consolidation benchmark); production leaves it at 0.
	MaxCandidates int
}

// MessageSpotToSpotDisabled is why a spot node is not replaced by another
// spot node, in Karpenter's words (its Unconsolidatable event).
const MessageSpotToSpotDisabled = "SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node"

// MinSpotToSpotOptions is how many strictly cheaper instance types a
// single-node spot-to-spot replacement needs, and how many it keeps: fewer
// would let a node walk down the price list one interruption-prone step at
// a time.
const MinSpotToSpotOptions = 15

// Input is everything a disruption decision depends on.
type Input struct {
	Snapshot state.Snapshot
	// Pools are the NodePools that may launch replacements, with their
	// instance types and offerings (and hence prices). A NodePool that is
	// missing here can still lose empty nodes and nodes whose pods fit
	// elsewhere, but gets no replacements.
	Pools []packer.NodePool
	// Remaining is, per NodePool and budgeted reason, how many more nodes
	// may be disrupted now (see package decide/budget). A NodePool or
	// reason that is missing allows none.
	Remaining map[string]map[Reason]int
	Options   Options
}

func (in *Input) remaining(pool string, r Reason) int {
	return in.Remaining[pool][r]
}

// Decision is the outcome of one pass.
type Decision struct {
	// Command is what to do; nil when nothing is to be done.
	Command *Command
	// Blocked lists, by node name, the nodes that are not candidates and the
	// candidates that were considered but kept, each with why. A node may
	// appear more than once, for different reasons.
	Blocked []Blocked
	// Verdicts are the entries of Blocked that single-node consolidation's
	// packings produced: why each candidate it simulated could not go.
	Verdicts []Blocked
	// DoNotDisrupt are the pods of candidates whose do-not-disrupt
	// annotation is a duration or invalid, as the decision read them. A
	// candidate's pods are read until one protects the node; pods that have
	// not started are not reported (they are protected until they do).
	DoNotDisrupt []DoNotDisruptPod
}
