package explain

import (
	"encoding/json"
	"io"
	"time"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/cloud"
	"github.com/stevedore-autoscaler/stevedore/decide/budget"
	"github.com/stevedore-autoscaler/stevedore/decide/disruption"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/state"
)

// Input is what every explanation is computed from.
type Input struct {
	// Snapshot is the cluster; its Time is the moment explained.
	Snapshot state.Snapshot
	// Pools are the NodePools that may launch now, as
	// provisioning.LaunchablePools returns them (InUse left empty).
	Pools []packer.NodePool
	// Skipped are the NodePools that may not launch now, and why.
	Skipped []Skip
	// RepairPolicies are the cloud provider's node repair policies; nil
	// leaves the node health verdict out.
	RepairPolicies []cloud.RepairPolicy
	Options        Options
	// Notes are carried into every Explanation, for caveats about where
	// the input came from (for example prices from the embedded catalog).
	Notes []string
}

// Skip is a NodePool that may not launch now.
type Skip struct {
	NodePool string `json:"nodePool"`
	// Reason is the provisioner's event reason: NodeClassNotReady or
	// InstanceTypesFailed.
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Options are the controller settings the decisions depend on. The zero
// value is the controller's default.
type Options struct {
	PreferencePolicy packer.PreferencePolicy
	MaxInstanceTypes int
	// MinValuesPolicy is the controller's --min-values-policy.
	MinValuesPolicy packer.MinValuesPolicy
	// SpotToSpot is the SpotToSpotConsolidation feature gate.
	SpotToSpot bool
}

// Kinds of Explanation.
const (
	KindPod      = "Pod"
	KindNode     = "Node"
	KindNodePool = "NodePool"
)

// Verdicts of a pod.
const (
	// VerdictBound: the pod is bound to a node.
	VerdictBound = "Bound"
	// VerdictNotProvisionable: the pod is pending, but not in a way that
	// asks for a new node (the scheduler has not given up on it yet, it is
	// preempting, terminating, or a DaemonSet's pod).
	VerdictNotProvisionable = "NotProvisionable"
	// VerdictFitsExisting: the packer places it on an existing or in-flight
	// node.
	VerdictFitsExisting = "FitsExisting"
	// VerdictWouldLaunch: the packer opens a new NodeClaim for it.
	VerdictWouldLaunch = "WouldLaunch"
	// VerdictUnschedulable: no node and no NodePool can take it.
	VerdictUnschedulable = "Unschedulable"
	// VerdictIgnored: the packer does not consider it (for example its
	// volume cannot be resolved).
	VerdictIgnored = "Ignored"
)

// Verdicts of a node.
const (
	// VerdictDeleting: the node or its NodeClaim is being deleted.
	VerdictDeleting = "Deleting"
	// VerdictDisrupting: a disruption command has taken the node (its
	// NodeClaim carries the DisruptionReason condition).
	VerdictDisrupting = "Disrupting"
	// VerdictWouldDisrupt: the next disruption pass would take the node.
	VerdictWouldDisrupt = "WouldDisrupt"
	// VerdictKept: the disruption pass keeps the node, for the reasons
	// listed.
	VerdictKept = "Kept"
	// VerdictNotEvaluated: the pass stopped at a command for other nodes
	// before it came to this one.
	VerdictNotEvaluated = "NotEvaluated"
)

// Verdicts of a NodePool.
const (
	// VerdictOpen: it may launch, and no limit or budget holds it.
	VerdictOpen = "Open"
	// VerdictConstrained: it may launch, but a limit is reached or a
	// budget allows no disruption now.
	VerdictConstrained = "Constrained"
	// VerdictNotLaunchable: the provisioner leaves it out.
	VerdictNotLaunchable = "NotLaunchable"
)

// Reason codes explain adds to those of the packer and of decide/disruption.
const (
	// Pods that are pending but not provisionable.
	CodeAwaitingScheduler = "AwaitingScheduler"
	CodePreempting        = "Preempting"
	CodeTerminating       = "Terminating"
	CodeDaemonSetPod      = "DaemonSetPod"
	CodeStaticPod         = "StaticPod"
	// CodeNoNodePools: there is no NodePool at all.
	CodeNoNodePools = "NoNodePools"
	// CodeNothingToDo: the node is a candidate, and no method found a
	// reason to take it.
	CodeNothingToDo = "NothingToDo"
	// CodeLimitReached: a NodePool uses all of a limited resource.
	CodeLimitReached = "LimitReached"
	// CodeInvalidBudget: a budget cannot be evaluated, which blocks every
	// disruption of the NodePool.
	CodeInvalidBudget = "InvalidBudget"
)

// Explanation is the answer about one object.
type Explanation struct {
	Kind string    `json:"kind"`
	Name string    `json:"name"`
	Time time.Time `json:"time"`
	// Verdict is one of the Verdict constants of its kind.
	Verdict string `json:"verdict"`
	// Summary says the verdict in one sentence.
	Summary string `json:"summary"`
	// Reasons are why, each with a stable code.
	Reasons  []Reason         `json:"reasons,omitempty"`
	Pod      *PodDetails      `json:"pod,omitempty"`
	Node     *NodeDetails     `json:"node,omitempty"`
	NodePool *NodePoolDetails `json:"nodePool,omitempty"`
	Notes    []string         `json:"notes,omitempty"`
}

// Reason is one cause of a verdict.
type Reason struct {
	// Code is stable: a packer verdict code (TaintNotTolerated, …),
	// a decide/disruption code (DoNotDisruptPod, PDBBlocked, …), a
	// provisioner skip reason (NodeClassNotReady, InstanceTypesFailed) or
	// one of this package's codes.
	Code string `json:"code"`
	// NodePool the reason is about, when it is about one.
	NodePool string `json:"nodePool,omitempty"`
	// Method is the disruption reason the node was considered for (Empty,
	// Drifted, Underutilized), when the reason is about disruption.
	Method string `json:"method,omitempty"`
	// Message has the numbers behind the reason.
	Message string `json:"message"`
	// Until is when the reason is expected to lift on the current facts:
	// the consolidateAfter window ends, a budget window changes.
	Until *time.Time `json:"until,omitempty"`
}

// WriteJSON writes e as indented JSON.
func (e *Explanation) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(e)
}

// remaining is, per NodePool and budgeted reason, how many more nodes may be
// disrupted at the snapshot's time: what the disruption controller passes
// to Decide.
func remaining(snap state.Snapshot) map[string]map[disruption.Reason]int {
	out := make(map[string]map[disruption.Reason]int, len(snap.NodePools))
	for _, np := range snap.NodePools {
		a := budget.Compute(np, snap.Nodes, snap.Time)
		m := make(map[disruption.Reason]int, len(budget.Reasons))
		for _, r := range budget.Reasons {
			m[disruption.Reason(r)] = a.Remaining(r)
		}
		out[np.Name] = m
	}
	return out
}

func nodePool(snap state.Snapshot, name string) *karpv1.NodePool {
	for _, np := range snap.NodePools {
		if np.Name == name {
			return np
		}
	}
	return nil
}

// offeringPrice is what an instance type costs in a zone and capacity type,
// from the named pool's offerings or, when that pool does not list it, from
// any pool that does, in the order given.
func offeringPrice(pools []packer.NodePool, pool, instanceType, zone, capacityType string) (float64, bool) {
	find := func(p *packer.NodePool) (float64, bool) {
		for _, it := range p.InstanceTypes {
			if it.Name != instanceType {
				continue
			}
			for _, o := range it.Offerings {
				if o.Zone == zone && o.CapacityType == capacityType {
					return o.PricePerHour, true
				}
			}
		}
		return 0, false
	}
	for i := range pools {
		if pools[i].Name == pool {
			if p, ok := find(&pools[i]); ok {
				return p, true
			}
		}
	}
	for i := range pools {
		if p, ok := find(&pools[i]); ok {
			return p, true
		}
	}
	return 0, false
}

// timePtr returns a pointer to t in UTC, or nil for the zero time.
func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}
