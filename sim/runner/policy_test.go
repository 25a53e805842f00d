package runner

import (
	"slices"
	"strings"
	"testing"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/iampolicy"
	"github.com/stevedore-autoscaler/stevedore/sim/scenario"
)

// notExercised are the controller's calls that the scenarios below do not
// make, and why; every other call of iampolicy.Inventory must be made at
// least once, so that the policy check covers it.
var notExercised = map[string]string{
	"ARCZonalShift.GetManagedResource": "only with --enable-zonal-shift, which none of these scenarios sets; TestZonalShiftStatement covers its statement",
	"EKS.DescribeCluster":              "made by `stevedore controller` at start-up, before any controller runs (the simulator hands the controllers the cluster); the end-to-end suite runs that process against an account enforcing this policy",
}

// TestControllerCallsUnderKarpentersPolicy runs the production controllers
// through provisioning, consolidation, drift, expiration, spot
// interruptions with and without a queue, node repair, capacity
// reservations, placement groups and node class deletion, with the
// simulated account enforcing the controller policy of Karpenter's
// reference template on every call (spec.aws.controllerPolicy). No call may
// be refused, and every call the controller can make must have been made:
// a user who swaps Karpenter for stevedore keeps Karpenter's IAM role. The
// same holds for the policy `stevedore iam-policy` prints.
func TestControllerCallsUnderKarpentersPolicy(t *testing.T) {
	for _, policy := range []string{scenario.ControllerPolicyKarpenter, scenario.ControllerPolicyGenerated} {
		t.Run(policy, func(t *testing.T) { testCallsUnderPolicy(t, policy) })
	}
}

func testCallsUnderPolicy(t *testing.T, policy string) {
	s := testScheme(t)
	called := map[string]bool{}
	for _, dir := range []string{
		"../../examples/drift-upgrade",
		"../../examples/spot-mix",
		"../../examples/chaos/consolidation",
		"../../examples/chaos/repair",
		"../../examples/chaos/spot-no-queue",
		"testdata/parity-reserved",
		"testdata/parity-fields",
		"testdata/overlay",
		"testdata/nodeclass-lifecycle",
	} {
		t.Run(strings.TrimPrefix(dir, "../../"), func(t *testing.T) {
			run, problems, err := scenario.Load([]string{dir}, s)
			if err != nil {
				t.Fatalf("%v: %v", err, problems)
			}
			run.AWS.ControllerPolicy = policy
			r, doc := runDoc(t, run, s)
			for _, d := range r.AWS().DenialSummary() {
				t.Errorf("the %s policy refuses %s", policy, d)
			}
			if doc.Final.Pods.Total != doc.Final.Pods.Running {
				t.Errorf("pods at the end: %+v, want all running", doc.Final.Pods)
			}
			for op, n := range r.AWS().CallCounts() {
				if n > 0 {
					called[op] = true
				}
			}
		})
	}
	var missing []string
	for _, c := range iampolicy.Inventory {
		key := c.Service + "." + c.Operation
		if c.Caller != iampolicy.CallerController || called[c.Operation] {
			continue
		}
		if _, ok := notExercised[key]; !ok {
			missing = append(missing, key)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("no scenario made these controller calls, so the policy check does not cover them: %v", missing)
	}
}
