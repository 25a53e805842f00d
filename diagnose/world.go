package diagnose

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/stevedore-autoscaler/stevedore/cloud"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/sdk"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/settings"
	"github.com/stevedore-autoscaler/stevedore/explain"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/state"
)

// World is everything the checks read. A live cluster fills it through Load
// from the API server and the default AWS credentials; the simulator can
// fill it the same way from its in-memory API server and AWS, or a test can
// build it by hand.
type World struct {
	// Snapshot is the cluster; its Time is "now" for every check.
	Snapshot state.Snapshot
	// Pools are the NodePools the provisioner may launch from now, and
	// Skipped those it leaves out with why (provisioning.LaunchablePools).
	Pools   []packer.NodePool
	Skipped []explain.Skip
	// AWS are read-only clients. A nil client means that service could not
	// be reached; the checks that need it say so with a WARN.
	AWS sdk.Clients
	// AWSError is why AWS could not be reached, when it could not.
	AWSError string
	// Settings are the controller's AWS settings (cluster name,
	// interruption queue).
	Settings settings.Settings
	Region   string
	// Controller is what is known of the controller's deployment.
	Controller Controller
	// AWSAuth is the kube-system/aws-auth ConfigMap; nil when it does not
	// exist.
	AWSAuth *corev1.ConfigMap
	// RepairPolicies are the cloud provider's node repair policies.
	RepairPolicies []cloud.RepairPolicy
	// Explain are the controller's decision options, for the pending-pod
	// check and for `stevedore explain`.
	Explain explain.Options
	// Thresholds left zero are DefaultThresholds.
	Thresholds Thresholds
	// Notes are caveats about where the world came from.
	Notes []string

	access map[string]roleAccess // node role name -> what authorizes it
}

// Controller is the controller's deployment, as far as it could be found.
type Controller struct {
	// Namespace and ServiceAccountName are where its service account was
	// looked for.
	Namespace          string
	ServiceAccountName string
	// ServiceAccount is nil when it was not found.
	ServiceAccount *corev1.ServiceAccount
	// Pods are the controller's pods, sorted by name.
	Pods []*corev1.Pod
}

// Thresholds say how long a step may take before it counts as stuck, and
// what counts as little.
type Thresholds struct {
	// PendingPod is how long a pod that some NodePool could take may stay
	// pending before the provisioning path is suspect.
	PendingPod time.Duration
	// Launch is how long a NodeClaim may be launching.
	Launch time.Duration
	// Registration is how long a launched instance may take to register.
	Registration time.Duration
	// Initialization is how long a registered node may take to initialize.
	Initialization time.Duration
	// LowFreeIPs is the number of free subnet addresses below which a
	// subnet is nearly full: with the VPC CNI every pod takes one.
	LowFreeIPs int
	// LongConsolidateAfter is the consolidateAfter from which empty nodes
	// are reported as kept on purpose.
	LongConsolidateAfter time.Duration
	// BudgetHorizon is how far ahead budgets are searched for a window
	// that lets a disruption reason through.
	BudgetHorizon time.Duration
}

// DefaultThresholds are the thresholds Load uses.
func DefaultThresholds() Thresholds {
	return Thresholds{
		PendingPod:           5 * time.Minute,
		Launch:               2 * time.Minute,
		Registration:         3 * time.Minute,
		Initialization:       3 * time.Minute,
		LowFreeIPs:           32,
		LongConsolidateAfter: time.Hour,
		BudgetHorizon:        7 * 24 * time.Hour,
	}
}

// ExplainInput returns what package explain needs to explain objects of w.
func (w *World) ExplainInput() explain.Input {
	return explain.Input{
		Snapshot:       w.Snapshot,
		Pools:          w.Pools,
		Skipped:        w.Skipped,
		RepairPolicies: w.RepairPolicies,
		Options:        w.Explain,
		Notes:          w.Notes,
	}
}

func (w *World) now() time.Time { return w.Snapshot.Time }
