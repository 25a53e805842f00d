package diagnose

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// Status is the outcome of a check.
type Status string

// Statuses, from good to bad.
const (
	// Pass: the step works.
	Pass Status = "PASS"
	// Warn: the step works, but not as well as it could, or it could not
	// be checked.
	Warn Status = "WARN"
	// Fail: the step is broken; something does not get provisioned,
	// registered or interrupted in time until it is fixed.
	Fail Status = "FAIL"
)

// Result is one finding of a check.
type Result struct {
	// ID is the check's stable identifier, for example "nodeclass-conditions".
	ID string `json:"id"`
	// Title says what the check looks at.
	Title  string `json:"title"`
	Status Status `json:"status"`
	// Object is what the finding is about, as Kind/name; empty for a
	// finding about the cluster as a whole.
	Object string `json:"object,omitempty"`
	// Evidence is what was seen, with the numbers and names behind it.
	Evidence string `json:"evidence"`
	// Fix says what to do; empty for PASS.
	Fix string `json:"fix,omitempty"`
}

// Check is one step of the checklist.
type Check struct {
	ID    string
	Title string
	// Run returns the check's findings: at least one, a PASS that says what
	// was looked at when nothing is wrong.
	Run func(ctx context.Context, w *World) []Result
}

// Checks returns the checklist, in the order a pod travels the provisioning
// path, then the controller's own prerequisites, then the risks.
func Checks() []Check {
	return []Check{
		{ID: "pending-pods", Title: "Pending pods can be placed by some NodePool", Run: checkPendingPods},
		{ID: "nodepool-ready", Title: "NodePools may launch", Run: checkNodePoolReady},
		{ID: "nodepool-limits", Title: "NodePools are within their limits", Run: checkNodePoolLimits},
		{ID: "nodepool-weights", Title: "No NodePool is shadowed by a heavier one", Run: checkNodePoolWeights},
		{ID: "nodepool-budgets", Title: "Disruption budgets allow disruption now", Run: checkNodePoolBudgets},
		{ID: "nodeclass-conditions", Title: "EC2NodeClasses resolve (subnets, security groups, AMIs, instance profile, validation)", Run: checkNodeClassConditions},
		{ID: "nodeclass-subnet-ips", Title: "EC2NodeClass subnets have free addresses", Run: checkSubnetIPs},
		{ID: "node-role-access", Title: "Node roles may join the cluster (EKS access entry or aws-auth)", Run: checkNodeRoleAccess},
		{ID: "nodeclaim-launch", Title: "NodeClaims launch", Run: checkNodeClaimLaunch},
		{ID: "nodeclaim-registration", Title: "Launched instances register as nodes", Run: checkNodeClaimRegistration},
		{ID: "nodeclaim-initialization", Title: "Registered nodes initialize", Run: checkNodeClaimInitialization},
		{ID: "controller-credentials", Title: "The controller has AWS credentials (Pod Identity or IRSA)", Run: checkControllerCredentials},
		{ID: "interruption-queue", Title: "The interruption queue is configured and reachable", Run: checkInterruptionQueue},
		{ID: "interruption-rules", Title: "EventBridge rules route interruption events to the queue", Run: checkInterruptionRules},
		{ID: "risk-ami-latest", Title: "No @latest AMI alias drifts the fleet at the next release", Run: checkAMILatest},
		{ID: "risk-do-not-disrupt", Title: "No pod pins its node with do-not-disrupt", Run: checkDoNotDisrupt},
		{ID: "risk-consolidate-after", Title: "consolidateAfter lets empty nodes go", Run: checkConsolidateAfter},
		{ID: "risk-budgets-never-open", Title: "Every disruption reason's budget opens at some point", Run: checkBudgetsNeverOpen},
	}
}

// Report is the outcome of a run of the checklist.
type Report struct {
	Time    time.Time `json:"time"`
	Results []Result  `json:"results"`
	// Counts are the number of results of each status.
	Counts map[Status]int `json:"counts"`
	// Checks is how many checks ran.
	Checks int      `json:"checks"`
	Notes  []string `json:"notes,omitempty"`
}

// Run runs checks against w, in order, and collects their results. A check
// that returns nothing gets a PASS, so that every check has a line.
func Run(ctx context.Context, w *World, checks []Check) Report {
	if w.Thresholds == (Thresholds{}) {
		w.Thresholds = DefaultThresholds() // a World built by hand
	}
	r := Report{Time: w.Snapshot.Time.UTC(), Counts: map[Status]int{Pass: 0, Warn: 0, Fail: 0}, Checks: len(checks), Notes: w.Notes}
	for _, c := range checks {
		results := c.Run(ctx, w)
		if len(results) == 0 {
			results = []Result{{Status: Pass, Evidence: "nothing to check"}}
		}
		for _, res := range results {
			res.ID, res.Title = c.ID, c.Title
			if res.Status == Pass {
				res.Fix = ""
			}
			r.Results = append(r.Results, res)
			r.Counts[res.Status]++
		}
	}
	return r
}

// Failed reports whether any check failed.
func (r Report) Failed() bool { return r.Counts[Fail] > 0 }

// WriteText writes one line per result — status, check ID, object and
// evidence — and, under each WARN and FAIL, the fix.
func (r Report) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for _, res := range r.Results {
		line := res.Evidence
		if res.Object != "" {
			line = res.Object + ": " + line
		}
		fmt.Fprintf(bw, "%-4s  %-24s  %s\n", res.Status, res.ID, line)
		if res.Fix != "" {
			fmt.Fprintf(bw, "%-4s  %-24s  fix: %s\n", "", "", res.Fix)
		}
	}
	fmt.Fprintf(bw, "\n%d checks, %d findings: %d PASS, %d WARN, %d FAIL (as of %s)\n",
		r.Checks, len(r.Results), r.Counts[Pass], r.Counts[Warn], r.Counts[Fail], r.Time.Format(time.RFC3339))
	for _, n := range r.Notes {
		fmt.Fprintf(bw, "Note: %s\n", n)
	}
	return bw.Flush()
}

// WriteJSON writes the report as indented JSON.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
