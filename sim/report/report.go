// Package report is what a simulation run produces: a Document (the JSON of
// `stevedore simulate --output json`, documented in docs/simulate.md) and
// its text summary.
//
// A Recorder builds the Document while the run goes: it watches the changes
// to the in-memory API and the events the controllers record, and turns them
// into the run's event log (NodeClaims created, launched, registered,
// initialized and deleted; pods bound, evicted, deleted and unschedulable;
// disruptions; interruptions; instances terminated; the scenario's own
// events), keeps a ledger of the instances launched with their prices, and
// takes the time series samples and the final state from the API.
//
// Everything in a Document is a function of the run: times are virtual,
// lists are sorted, maps are written with sorted keys, and money is rounded
// to a millionth of a dollar, so the same run gives the same bytes.
package report

import (
	"encoding/json"
	"io"
	"math"
	"time"
)

// SchemaVersion is the version of the Document's JSON form. It changes only
// when a field is removed or changes meaning; fields may be added.
const SchemaVersion = 2

// Kinds of events in the log.
const (
	KindNodeClaimCreated      = "NodeClaimCreated"
	KindNodeClaimLaunched     = "NodeClaimLaunched"
	KindNodeClaimLaunchFailed = "NodeClaimLaunchFailed"
	KindNodeRegistered        = "NodeRegistered"
	KindNodeInitialized       = "NodeInitialized"
	KindNodeClaimDeleted      = "NodeClaimDeleted"
	KindNodeDeleted           = "NodeDeleted"
	KindDisruptionStarted     = "DisruptionStarted"
	KindDisruptionFinished    = "DisruptionFinished"
	KindDisruptionBlocked     = "DisruptionBlocked"
	// KindUnconsolidatable is a node that consolidation considered and
	// kept, with the code of why (such as BalancedScoreTooLow); the
	// controller records one per NodeClaim at most every 15
	// minutes.
	KindUnconsolidatable     = "Unconsolidatable"
	KindPodBound             = "PodBound"
	KindPodEvicted           = "PodEvicted"
	KindPodDeleted           = "PodDeleted"
	KindPodUnschedulable     = "PodUnschedulable"
	KindInstanceTerminated   = "InstanceTerminated"
	KindInterruptionReceived = "InterruptionReceived"
	KindScenarioEvent        = "ScenarioEvent"
)

// Disruption reasons.
const (
	ReasonEmpty         = "Empty"
	ReasonUnderutilized = "Underutilized"
	ReasonDrifted       = "Drifted"
	ReasonExpired       = "Expired"
	ReasonInterrupted   = "Interrupted"
	ReasonUnhealthy     = "Unhealthy"
)

// Document is the result of a run.
type Document struct {
	SchemaVersion int       `json:"schemaVersion"`
	Scenario      string    `json:"scenario"`
	Seed          uint64    `json:"seed"`
	Start         time.Time `json:"start"`
	End           time.Time `json:"end"`
	Events        []Event   `json:"events"`
	Samples       []Sample  `json:"samples"`
	Final         Final     `json:"final"`
	// Evictions are every call of the eviction API, granted or refused, in
	// time order.
	Evictions []Eviction `json:"evictions"`
	// Decisions are the budgeted disruptions started, each with its
	// NodePool's budget for the reason at that moment.
	Decisions []Decision `json:"decisions"`
	// Warnings are things about the run itself worth knowing (a controller
	// that kept failing, a scenario event that could not be carried out).
	Warnings []string `json:"warnings,omitempty"`
}

// Event is one entry of the run's event log. Fields that do not apply are
// left out.
type Event struct {
	Time time.Time `json:"time"`
	Kind string    `json:"kind"`
	// Object is the object concerned, as Kind/name or Kind/namespace/name.
	Object       string `json:"object,omitempty"`
	Reason       string `json:"reason,omitempty"`
	Message      string `json:"message,omitempty"`
	NodePool     string `json:"nodePool,omitempty"`
	NodeClaim    string `json:"nodeClaim,omitempty"`
	Node         string `json:"node,omitempty"`
	InstanceType string `json:"instanceType,omitempty"`
	CapacityType string `json:"capacityType,omitempty"`
	Zone         string `json:"zone,omitempty"`
	ImageID      string `json:"imageID,omitempty"`
	// InstanceID is set on launches and terminations.
	InstanceID string `json:"instanceID,omitempty"`
}

// Eviction is one call of the eviction API.
type Eviction struct {
	Time time.Time `json:"time"`
	// Pod is namespace/name.
	Pod  string `json:"pod"`
	Node string `json:"node,omitempty"`
	// Healthy: the pod was Ready and not terminating, so that granting the
	// eviction used one of its budgets' disruptions.
	Healthy bool `json:"healthy"`
	Granted bool `json:"granted"`
	// Reason says why it was granted or refused.
	Reason string `json:"reason"`
	// Budgets are the PodDisruptionBudgets that select the pod, as they
	// were just before the call.
	Budgets []PDBStatus `json:"budgets,omitempty"`
}

// PDBStatus is a PodDisruptionBudget's status at one moment, as the
// disruption controller computes it.
type PDBStatus struct {
	// Name is namespace/name.
	Name               string `json:"name"`
	CurrentHealthy     int32  `json:"currentHealthy"`
	DesiredHealthy     int32  `json:"desiredHealthy"`
	DisruptionsAllowed int32  `json:"disruptionsAllowed"`
	ExpectedPods       int32  `json:"expectedPods"`
}

// BudgetUse is how a NodePool's disruption budget for one reason is used at
// one moment (package decide/budget computes Nodes and Allowed).
type BudgetUse struct {
	NodePool string `json:"nodePool"`
	Reason   string `json:"reason"`
	// Nodes are the nodes the budgets count: initialized, their instance
	// not terminating.
	Nodes int `json:"nodes"`
	// Allowed is how many of them the budgets let be disrupted for the
	// reason (2147483647 when no budget limits it).
	Allowed int `json:"allowed"`
	// Disrupting counts the counted nodes whose NodeClaim is being
	// disrupted for this reason.
	Disrupting int `json:"disrupting"`
	// DisruptingAll counts the counted nodes taken by any disruption, or
	// not Ready: what the budgets subtract from Allowed before a decision.
	DisruptingAll int `json:"disruptingAll"`
}

// Decision is a budgeted disruption started: the moment a NodeClaim got its
// DisruptionReason condition, with its NodePool's budget for the reason
// right after the decision (every candidate of the command marked).
type Decision struct {
	Time      time.Time `json:"time"`
	NodeClaim string    `json:"nodeClaim"`
	BudgetUse
}

// Sample is the cluster at one moment.
type Sample struct {
	Time        time.Time `json:"time"`
	Nodes       int       `json:"nodes"`
	ReadyNodes  int       `json:"readyNodes"`
	PendingPods int       `json:"pendingPods"`
	RunningPods int       `json:"runningPods"`
	// CostPerHour is what the instances running at that moment cost, in USD.
	CostPerHour float64 `json:"costPerHour"`
	// Disrupting counts nodes being taken away (their NodeClaim deleted, or
	// tainted karpenter.sh/disrupted).
	Disrupting int `json:"disrupting"`
	// PodDisruptionBudgets are the budgets' statuses, by namespace/name.
	PodDisruptionBudgets []PDBStatus `json:"podDisruptionBudgets,omitempty"`
	// DisruptionBudgets are the NodePools' budgets per reason, by NodePool
	// and reason.
	DisruptionBudgets []BudgetUse `json:"disruptionBudgets,omitempty"`
}

// Final is the cluster at the end of the run.
type Final struct {
	Nodes         []Node          `json:"nodes"`
	Pods          PodCounts       `json:"pods"`
	Unschedulable []Unschedulable `json:"unschedulable"`
	// NotRunning are the pods that have not finished and are not Running,
	// by namespace and name.
	NotRunning []PodState `json:"notRunning"`
	// NodeHours are the instance-hours the run used.
	NodeHours float64 `json:"nodeHours"`
	// Cost of those hours in USD, at the price of each instance's offering
	// when it launched.
	Cost float64 `json:"cost"`
	// Disruptions counts nodes taken away, by reason.
	Disruptions map[string]int `json:"disruptions"`
	// NodePools are the NodePools at the end, with why they are not Ready.
	NodePools []NodePool `json:"nodePools"`
	// NodeClaims are the NodeClaims at the end.
	NodeClaims []NodeClaim `json:"nodeClaims"`
	// Instances are every instance the run launched, in launch order, with
	// their state at the end.
	Instances []Instance `json:"instances"`
}

// NodeClaim is a NodeClaim at the end.
type NodeClaim struct {
	Name       string `json:"name"`
	NodePool   string `json:"nodePool,omitempty"`
	ProviderID string `json:"providerID,omitempty"`
	InstanceID string `json:"instanceID,omitempty"`
	Node       string `json:"node,omitempty"`
	// Conditions are its conditions as Type=Status (Type=Status:Reason when
	// not True), in the order of the status.
	Conditions []string `json:"conditions,omitempty"`
	// Deleting is when its deletion was asked for, if it was.
	Deleting *time.Time `json:"deleting,omitempty"`
}

// Instance is an EC2 instance the run launched.
type Instance struct {
	ID string `json:"id"`
	// NodeClaim is the NodeClaim it was launched for (its
	// karpenter.sh/nodeclaim tag).
	NodeClaim    string    `json:"nodeClaim,omitempty"`
	NodePool     string    `json:"nodePool,omitempty"`
	State        string    `json:"state"`
	InstanceType string    `json:"instanceType"`
	Zone         string    `json:"zone"`
	CapacityType string    `json:"capacityType"`
	LaunchTime   time.Time `json:"launchTime"`
}

// NodePool is a NodePool at the end.
type NodePool struct {
	Name  string `json:"name"`
	Ready bool   `json:"ready"`
	// Nodes counts its nodes.
	Nodes int `json:"nodes"`
	// Message says why it is not Ready: its first condition that is not
	// True, as "Type: reason: message".
	Message string `json:"message,omitempty"`
}

// Node is a node at the end.
type Node struct {
	Name         string            `json:"name"`
	NodePool     string            `json:"nodePool,omitempty"`
	NodeClaim    string            `json:"nodeClaim,omitempty"`
	InstanceType string            `json:"instanceType,omitempty"`
	CapacityType string            `json:"capacityType,omitempty"`
	Zone         string            `json:"zone,omitempty"`
	ImageID      string            `json:"imageID,omitempty"`
	Created      time.Time         `json:"created"`
	Ready        bool              `json:"ready"`
	Labels       map[string]string `json:"labels,omitempty"`
	Taints       []string          `json:"taints,omitempty"`
	// Pods bound to it and not finished.
	Pods int `json:"pods"`
}

// PodCounts count the pods that have not finished.
type PodCounts struct {
	Total   int `json:"total"`
	Running int `json:"running"`
	Pending int `json:"pending"`
}

// PodState is a pod at the end that is not Running.
type PodState struct {
	Pod   string `json:"pod"`
	Phase string `json:"phase"`
	// Node is the node it is bound to, if any.
	Node string `json:"node,omitempty"`
	// Terminating is set when its deletion was asked for.
	Terminating bool `json:"terminating,omitempty"`
	// Created is when the pod was created.
	Created time.Time `json:"created"`
}

// Unschedulable is a pod left pending at the end, and why.
type Unschedulable struct {
	Pod    string `json:"pod"`
	Reason string `json:"reason"`
}

// WriteJSON writes the document, indented, with a final newline.
func (d *Document) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(d)
}

// money rounds USD amounts to a millionth, so that float summation order
// does not leak into the output.
func money(v float64) float64 { return math.Round(v*1e6) / 1e6 }
