package runner

import (
	"errors"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/sim/report"
	"github.com/stevedore-autoscaler/stevedore/sim/scenario"
)

// The shipped troubleshooting scenarios: one directory per failure of the
// troubleshooting guide, each run on its own.
const troubleshooting = "../../examples/troubleshooting"

var troubleshootingScenarios = []string{"latest-alias", "missing-access-entry", "missing-passrole", "no-interruption-queue", "untagged-subnets"}

// TestTroubleshootingIsAFolderOfScenarios checks that the folder holds the
// five scenarios and nothing else, and that simulating the folder itself is
// refused with a message that lists them and says how to run one.
func TestTroubleshootingIsAFolderOfScenarios(t *testing.T) {
	entries, err := filepath.Glob(filepath.Join(troubleshooting, "*"))
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		dirs = append(dirs, filepath.Base(e))
	}
	if !slices.Equal(dirs, troubleshootingScenarios) {
		t.Errorf("examples/troubleshooting holds %v, want %v", dirs, troubleshootingScenarios)
	}
	_, problems, err := scenario.Load([]string{troubleshooting}, testScheme(t))
	if !errors.Is(err, scenario.ErrInvalid) || len(problems) != 1 {
		t.Fatalf("loading the folder: %v, problems %v; want one problem", err, problems)
	}
	msg := problems[0].String()
	for _, want := range append(slices.Clone(troubleshootingScenarios), "holds 5 Scenarios", "stevedore simulate "+filepath.Join(troubleshooting, "latest-alias")) {
		if !strings.Contains(msg, want) {
			t.Errorf("the problem lacks %q: %s", want, msg)
		}
	}
}

// noInstance fails when the log shows an instance: a NodeClaim launched, a
// node registered, or time billed.
func noInstance(t *testing.T, doc *report.Document) {
	t.Helper()
	for _, kind := range []string{report.KindNodeClaimLaunched, report.KindNodeRegistered, report.KindNodeInitialized, report.KindInstanceTerminated} {
		if got := eventsOf(doc, kind); len(got) > 0 {
			t.Errorf("%d %s events, want none: %+v", len(got), kind, got[0])
		}
	}
	if doc.Final.NodeHours != 0 || doc.Final.Cost != 0 || len(doc.Final.Nodes) != 0 {
		t.Errorf("%d nodes, %v node-hours, $%v: want none", len(doc.Final.Nodes), doc.Final.NodeHours, doc.Final.Cost)
	}
}

// allPending checks that the api pods never ran.
func allPending(t *testing.T, doc *report.Document) {
	t.Helper()
	if p := doc.Final.Pods; p.Running != 0 || p.Pending != 4 || len(doc.Final.Unschedulable) != 4 {
		t.Errorf("final pods %+v, unschedulable %v; want 4 pending", p, doc.Final.Unschedulable)
	}
	for _, s := range doc.Samples {
		if s.RunningPods != 0 || s.Nodes != 0 {
			t.Fatalf("%s: %+v, want no node and no pod running", since(doc, s.Time), s)
		}
	}
}

// TestUntaggedSubnets: the subnets lack the discovery tag, the EC2NodeClass
// is not Ready, and nothing is launched or even attempted.
func TestUntaggedSubnets(t *testing.T) {
	doc := story(t, filepath.Join(troubleshooting, "untagged-subnets"))
	for _, kind := range []string{report.KindNodeClaimCreated, report.KindNodeClaimLaunchFailed} {
		if got := eventsOf(doc, kind); len(got) > 0 {
			t.Errorf("%d %s events, want none: no launch may be attempted", len(got), kind)
		}
	}
	noInstance(t, doc)
	allPending(t, doc)
	if len(doc.Final.NodePools) != 1 {
		t.Fatalf("node pools %+v", doc.Final.NodePools)
	}
	np := doc.Final.NodePools[0]
	if np.Ready || !strings.Contains(np.Message, "NodeClassReady") || !strings.Contains(np.Message, "SubnetsNotFound") ||
		!strings.Contains(np.Message, "karpenter.sh/discovery=my-cluster") {
		t.Errorf("NodePool %+v, want not Ready because the node class finds no subnet with the discovery tag", np)
	}
	if len(doc.Warnings) > 0 {
		t.Errorf("warnings: %v", doc.Warnings)
	}
}

// TestMissingPassRole: the controller may not pass the node role. The
// shipped scenario turns the dry-run checks off, so that NodeClaims are
// created and their launches fail with the reason; with the checks on (the
// default) the EC2NodeClass catches it before any launch.
func TestMissingPassRole(t *testing.T) {
	path := filepath.Join(troubleshooting, "missing-passrole")
	doc := story(t, path)

	created := claimsOf(eventsOf(doc, report.KindNodeClaimCreated))
	if len(created) == 0 {
		t.Fatal("no NodeClaim created")
	}
	failed := map[string]bool{}
	for _, e := range eventsOf(doc, report.KindNodeClaimLaunchFailed) {
		if e.Reason != "Unauthorized" || !strings.Contains(e.Message, "iam:PassRole") {
			t.Errorf("launch of %s failed with %s: %s; want Unauthorized naming iam:PassRole", e.NodeClaim, e.Reason, e.Message)
		}
		failed[e.NodeClaim] = true
	}
	for _, nc := range created {
		if !failed[nc] {
			t.Errorf("NodeClaim %s has no launch failure", nc)
		}
	}
	timedOut := 0
	for _, e := range eventsOf(doc, report.KindNodeClaimDeleted) {
		if e.Reason == "LaunchTimeout" && strings.Contains(e.Message, "iam:PassRole") {
			timedOut++
		}
	}
	if timedOut == 0 || len(created) <= timedOut {
		t.Errorf("%d NodeClaims created, %d given up after the launch timeout; want them given up and tried again", len(created), timedOut)
	}
	noInstance(t, doc)
	allPending(t, doc)

	// With the dry-run checks on, the node class says it, and nothing is
	// even created.
	run, problems, err := scenario.Load([]string{path}, testScheme(t))
	if err != nil {
		t.Fatalf("%v: %v", err, problems)
	}
	if !run.Controller.Settings.DisableDryRun {
		t.Fatal("the shipped scenario no longer turns the dry-run checks off; update this test")
	}
	run.Controller.Settings.DisableDryRun = false
	checked := runLoaded(t, run)
	if got := eventsOf(checked, report.KindNodeClaimCreated); len(got) > 0 {
		t.Errorf("with dry runs: %d NodeClaims created, want none", len(got))
	}
	noInstance(t, checked)
	allPending(t, checked)
	if np := checked.Final.NodePools; len(np) != 1 || np[0].Ready || !strings.Contains(np[0].Message, "PassRoleAuthCheckFailed") ||
		!strings.Contains(np[0].Message, "my-cluster-karpenter-node-role") {
		t.Errorf("with dry runs: node pools %+v, want not Ready with PassRoleAuthCheckFailed naming the role", np)
	}
}

// TestMissingAccessEntry: the instances run, but their nodes never join;
// after 15 minutes each NodeClaim is deleted and its instance terminated.
func TestMissingAccessEntry(t *testing.T) {
	doc := story(t, filepath.Join(troubleshooting, "missing-access-entry"))
	launched := map[string]time.Time{}
	var firstWave []string
	for _, e := range eventsOf(doc, report.KindNodeClaimLaunched) {
		launched[e.NodeClaim] = e.Time
		if since(doc, e.Time) < time.Minute {
			firstWave = append(firstWave, e.NodeClaim)
		}
	}
	if len(firstWave) == 0 {
		t.Fatal("nothing launched in the first minute")
	}
	for _, kind := range []string{report.KindNodeRegistered, report.KindNodeInitialized} {
		if got := eventsOf(doc, kind); len(got) > 0 {
			t.Errorf("%d %s events, want none: no node can join", len(got), kind)
		}
	}
	deleted := map[string]report.Event{}
	for _, e := range eventsOf(doc, report.KindNodeClaimDeleted) {
		deleted[e.NodeClaim] = e
	}
	terminated := map[string]time.Time{}
	for _, e := range eventsOf(doc, report.KindInstanceTerminated) {
		terminated[e.NodeClaim] = e.Time
	}
	for _, nc := range firstWave {
		e, ok := deleted[nc]
		if !ok {
			t.Errorf("NodeClaim %s was not deleted", nc)
			continue
		}
		if age := e.Time.Sub(launched[nc]); e.Reason != "RegistrationTimeout" || age < 15*time.Minute || age > 16*time.Minute {
			t.Errorf("NodeClaim %s deleted %s after its launch, reason %q; want RegistrationTimeout after 15m", nc, age, e.Reason)
		}
		if at, ok := terminated[nc]; !ok || at.Sub(launched[nc]) < 15*time.Minute {
			t.Errorf("instance of %s terminated at %v, want after 15m", nc, at)
		}
	}
	retried := 0
	for nc, at := range launched {
		if since(doc, at) > 15*time.Minute && !slices.Contains(firstWave, nc) {
			retried++
		}
	}
	if retried == 0 {
		t.Error("no new NodeClaim launched after the first ones were given up")
	}
	// The instances ran, and cost, for their 15 minutes.
	if want := float64(len(firstWave)) * 15 / 60; doc.Final.NodeHours < want {
		t.Errorf("%v node-hours, want at least %v", doc.Final.NodeHours, want)
	}
	allPending(t, doc)
}

// TestNoInterruptionQueue: without a queue nobody hears the spot warning;
// the node's pods are not drained, they stop with the instance, and their
// replacements wait for a node asked for only then.
func TestNoInterruptionQueue(t *testing.T) {
	doc := story(t, filepath.Join(troubleshooting, "no-interruption-queue"))
	const interruption = 10 * time.Minute
	for _, kind := range []string{report.KindInterruptionReceived, report.KindPodEvicted, report.KindDisruptionStarted} {
		if got := eventsOf(doc, kind); len(got) > 0 {
			t.Errorf("%d %s events, want none: %+v", len(got), kind, got[0])
		}
	}
	var term *report.Event
	for _, e := range eventsOf(doc, report.KindInstanceTerminated) {
		if term != nil {
			t.Fatalf("two instances terminated: %+v and %+v", *term, e)
		}
		term = &e
	}
	if term == nil || since(doc, term.Time) != interruption+fake.SpotInterruptionNotice || term.CapacityType != "spot" || term.Reason != "SpotInterruption" {
		t.Fatalf("instance terminated %+v, want a spot instance two minutes after the interruption at %s", term, interruption)
	}
	onNode := podsOn(doc, term.Node, term.Time)
	if len(onNode) == 0 {
		t.Fatalf("no pods on %s when its instance went", term.Node)
	}
	for _, e := range eventsOf(doc, report.KindPodDeleted) {
		if onNode[e.Object] && e.Time.Before(term.Time) {
			t.Errorf("%s deleted at %s, before the instance went", e.Object, since(doc, e.Time))
		}
		delete(onNode, e.Object)
	}
	if len(onNode) > 0 {
		t.Errorf("pods of the lost node never deleted: %v", onNode)
	}
	// No replacement is asked for during the warning; pods wait.
	for _, e := range eventsOf(doc, report.KindNodeClaimCreated) {
		if at := since(doc, e.Time); at >= interruption && e.Time.Before(term.Time) {
			t.Errorf("NodeClaim %s created at %s, during a warning nobody heard", e.NodeClaim, at)
		}
	}
	pending := false
	for _, s := range doc.Samples {
		pending = pending || (s.Time.After(term.Time) && s.PendingPods > 0)
	}
	if !pending {
		t.Error("no sample after the instance went shows a pending pod")
	}
	if len(doc.Final.Disruptions) != 0 {
		t.Errorf("disruptions %v, want none: the controller never knew", doc.Final.Disruptions)
	}
	if p := doc.Final.Pods; p.Running != 4 || p.Pending != 0 {
		t.Errorf("final pods %+v, want all 4 running again", p)
	}
	if len(doc.Warnings) > 0 {
		t.Errorf("warnings: %v", doc.Warnings)
	}
}

// TestLatestAlias: a new AL2023 release moves al2023@latest and drifts
// every node; the default budget (10% of the nodes) replaces them one at a
// time, each replacement initialized before its old node goes.
func TestLatestAlias(t *testing.T) {
	doc := story(t, filepath.Join(troubleshooting, "latest-alias"))
	const release = 15 * time.Minute
	newImages := map[string]bool{"ami-0e5a1d9c3b7f42a68": true, "ami-0f3c8b2a6d1e59b74": true}
	released := 0
	for _, e := range eventsOf(doc, report.KindScenarioEvent) {
		if e.Reason == "ReleaseImage" && since(doc, e.Time) == release {
			released++
		}
	}
	if released != 2 {
		t.Fatalf("%d image releases at %s, want 2", released, release)
	}
	old := map[string]bool{}
	for _, e := range eventsOf(doc, report.KindNodeClaimLaunched) {
		if since(doc, e.Time) < release {
			if newImages[e.ImageID] {
				t.Errorf("%s launched with %s before its release", e.NodeClaim, e.ImageID)
			}
			old[e.NodeClaim] = true
		}
	}
	if len(old) < 2 {
		t.Fatalf("%d nodes before the release, want a fleet", len(old))
	}
	drifted := map[string]bool{}
	for _, e := range eventsOf(doc, report.KindDisruptionStarted) {
		if e.Reason != report.ReasonDrifted || !old[e.NodeClaim] || since(doc, e.Time) < release {
			t.Errorf("unexpected disruption %+v", e)
		}
		drifted[e.NodeClaim] = true
	}
	if len(drifted) != len(old) || doc.Final.Disruptions[report.ReasonDrifted] != len(old) {
		t.Errorf("%d of %d nodes drifted, %v disruptions; want the whole fleet", len(drifted), len(old), doc.Final.Disruptions)
	}
	budget := int(math.Ceil(0.10 * float64(len(old))))
	if got := maxInFlight(doc, report.ReasonDrifted); got > budget {
		t.Errorf("%d drifted nodes disrupted at once, the default budget allows %d", got, budget)
	}
	// Replacement first: when an old node goes, as many new nodes are
	// initialized as old ones have gone.
	initialized, gone := 0, 0
	for _, e := range doc.Events {
		switch {
		case e.Kind == report.KindNodeInitialized && newImages[e.ImageID]:
			initialized++
		case e.Kind == report.KindNodeDeleted && old[e.NodeClaim]:
			gone++
			if initialized < gone {
				t.Errorf("%s: old node %s deleted with %d replacement(s) initialized", since(doc, e.Time), e.Node, initialized)
			}
		}
	}
	if len(doc.Final.Nodes) != len(old) {
		t.Errorf("%d nodes at the end, want %d", len(doc.Final.Nodes), len(old))
	}
	for _, n := range doc.Final.Nodes {
		if !newImages[n.ImageID] || !n.Ready {
			t.Errorf("final node %s: image %s ready %v", n.Name, n.ImageID, n.Ready)
		}
	}
	if p := doc.Final.Pods; p.Running != 4 || p.Pending != 0 {
		t.Errorf("final pods %+v", p)
	}
	if len(doc.Warnings) > 0 {
		t.Errorf("warnings: %v", doc.Warnings)
	}

	// Pinned to the release the nodes run, the same day changes nothing.
	run, problems, err := scenario.Load([]string{filepath.Join(troubleshooting, "latest-alias")}, testScheme(t))
	if err != nil {
		t.Fatalf("%v: %v", err, problems)
	}
	pinned := false
	for _, o := range run.Objects {
		if nc, ok := o.Object.(*awsv1.EC2NodeClass); ok && len(nc.Spec.AMISelectorTerms) == 1 && nc.Spec.AMISelectorTerms[0].Alias == "al2023@latest" {
			nc.Spec.AMISelectorTerms[0].Alias = "al2023@v20260223"
			pinned = true
		}
	}
	if !pinned {
		t.Fatal("the shipped scenario's EC2NodeClass no longer selects al2023@latest; update this test")
	}
	kept := runLoaded(t, run)
	if got := eventsOf(kept, report.KindDisruptionStarted); len(got) > 0 {
		t.Errorf("pinned: %d disruptions, want none: %+v", len(got), got[0])
	}
	if len(kept.Final.Nodes) != len(old) {
		t.Errorf("pinned: %d nodes at the end, want %d", len(kept.Final.Nodes), len(old))
	}
	for _, n := range kept.Final.Nodes {
		if newImages[n.ImageID] || !old[n.NodeClaim] {
			t.Errorf("pinned: final node %s (NodeClaim %s) runs %s", n.Name, n.NodeClaim, n.ImageID)
		}
	}
}
