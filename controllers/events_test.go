package controllers

import (
	"bufio"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	disruptionctl "github.com/stevedore-autoscaler/stevedore/controllers/disruption"
	"github.com/stevedore-autoscaler/stevedore/controllers/metrics"
	"github.com/stevedore-autoscaler/stevedore/controllers/node/health"
	nodeterm "github.com/stevedore-autoscaler/stevedore/controllers/node/termination"
	"github.com/stevedore-autoscaler/stevedore/controllers/nodeclaim/consistency"
	"github.com/stevedore-autoscaler/stevedore/controllers/nodeclaim/expiration"
	nodeclaimgc "github.com/stevedore-autoscaler/stevedore/controllers/nodeclaim/garbagecollection"
	"github.com/stevedore-autoscaler/stevedore/controllers/nodeclaim/lifecycle"
	nodeclassstatus "github.com/stevedore-autoscaler/stevedore/controllers/nodeclass/status"
	nodepoolstatus "github.com/stevedore-autoscaler/stevedore/controllers/nodepool/status"
	"github.com/stevedore-autoscaler/stevedore/controllers/provisioning"
)

// upstreamEvent is a line of testdata/karpenter-events.txt.
type upstreamEvent struct {
	typ   string
	kinds []string
}

func readUpstreamEvents(t *testing.T) map[string]upstreamEvent {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "karpenter-events.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]upstreamEvent{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		// The last two fields are the type and kinds; the reason may be
		// "<condition type>".
		fields := strings.Fields(line)
		if len(fields) < 3 {
			t.Fatalf("karpenter-events.txt: %q", line)
		}
		reason := strings.Join(fields[:len(fields)-2], " ")
		out[reason] = upstreamEvent{typ: fields[len(fields)-2], kinds: strings.Split(fields[len(fields)-1], ",")}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// emitted is an event stevedore records: its reason, type, the kinds of the
// objects it is recorded on, and the Go name of the reason's constant
// (empty for the status watch's condition types).
type emitted struct {
	constant, reason, typ string
	kinds                 []string
	// own says why stevedore records an event Karpenter has no counterpart
	// of; empty for Karpenter's events.
	own string
	// otherKinds says why it is recorded on other kinds than Karpenter's
	// event of the same reason.
	otherKinds string
}

// stevedoreEvents are every event stevedore's controllers record.
var stevedoreEvents = []emitted{
	// Karpenter's.
	{constant: "ReasonDisruptionBlocked", reason: disruptionctl.ReasonDisruptionBlocked, typ: corev1.EventTypeNormal, kinds: []string{"Node", "NodeClaim"}},
	{constant: "ReasonDisruptionBlocked", reason: nodepoolstatus.ReasonDisruptionBlocked, typ: corev1.EventTypeNormal, kinds: []string{"NodePool"}},
	{constant: "ReasonDisruptionLaunching", reason: disruptionctl.ReasonDisruptionLaunching, typ: corev1.EventTypeNormal, kinds: []string{"Node", "NodeClaim"},
		otherKinds: "recorded on the candidates being replaced, naming their replacements, rather than on each replacement"},
	{constant: "ReasonDisruptionTerminating", reason: disruptionctl.ReasonDisruptionTerminating, typ: corev1.EventTypeNormal, kinds: []string{"Node", "NodeClaim"}},
	{constant: "ReasonDisruptionWaitingReadiness", reason: disruptionctl.ReasonDisruptionWaitingReadiness, typ: corev1.EventTypeNormal, kinds: []string{"NodeClaim"}},
	{constant: "ReasonUnconsolidatable", reason: disruptionctl.ReasonUnconsolidatable, typ: corev1.EventTypeNormal, kinds: []string{"Node", "NodeClaim"}},
	{constant: "ReasonConsolidationCandidate", reason: disruptionctl.ReasonConsolidationCandidate, typ: corev1.EventTypeNormal, kinds: []string{"Node", "NodeClaim"}},
	{constant: "ReasonConsolidationApproved", reason: disruptionctl.ReasonConsolidationApproved, typ: corev1.EventTypeNormal, kinds: []string{"Node", "NodeClaim", "NodePool"}},
	{constant: "ReasonConsolidationRejected", reason: disruptionctl.ReasonConsolidationRejected, typ: corev1.EventTypeNormal, kinds: []string{"Node", "NodeClaim"}},
	{constant: "ReasonInvalidDoNotDisruptAnnotation", reason: disruptionctl.ReasonInvalidDoNotDisruptAnnotation, typ: corev1.EventTypeWarning, kinds: []string{"Pod"}},
	{constant: "ReasonDoNotDisruptUntil", reason: disruptionctl.ReasonDoNotDisruptUntil, typ: corev1.EventTypeNormal, kinds: []string{"Pod"}},
	{constant: "ReasonDoNotDisruptGracePeriodElapsed", reason: disruptionctl.ReasonDoNotDisruptGracePeriodElapsed, typ: corev1.EventTypeNormal, kinds: []string{"Pod"}},
	{constant: "ReasonInvalidDoNotDisruptAnnotation", reason: nodeterm.ReasonInvalidDoNotDisruptAnnotation, typ: corev1.EventTypeWarning, kinds: []string{"Pod"}},
	{constant: "ReasonDoNotDisruptUntil", reason: nodeterm.ReasonDoNotDisruptUntil, typ: corev1.EventTypeNormal, kinds: []string{"Pod"}},
	{constant: "ReasonDoNotDisruptGracePeriodElapsed", reason: nodeterm.ReasonDoNotDisruptGracePeriodElapsed, typ: corev1.EventTypeNormal, kinds: []string{"Pod"}},
	{constant: "ReasonFailedScheduling", reason: provisioning.ReasonFailedScheduling, typ: corev1.EventTypeWarning, kinds: []string{"Pod"}},
	{constant: "ReasonNoCompatibleInstanceTypes", reason: provisioning.ReasonNoCompatibleInstanceTypes, typ: corev1.EventTypeWarning, kinds: []string{"NodePool"}},
	{constant: "ReasonNominated", reason: provisioning.ReasonNominated, typ: corev1.EventTypeNormal, kinds: []string{"Pod"}},
	{constant: "ReasonNodeRepairBlocked", reason: health.ReasonNodeRepairBlocked, typ: corev1.EventTypeWarning, kinds: []string{"Node"}},
	{constant: "ReasonDisrupted", reason: nodeterm.ReasonDisrupted, typ: corev1.EventTypeNormal, kinds: []string{"Pod"}},
	{constant: "ReasonEvicted", reason: nodeterm.ReasonEvicted, typ: corev1.EventTypeNormal, kinds: []string{"Pod"}},
	{constant: "ReasonFailedDraining", reason: nodeterm.ReasonFailedDraining, typ: corev1.EventTypeWarning, kinds: []string{"Node"}},
	{constant: "ReasonAwaitingVolumeDetachment", reason: nodeterm.ReasonAwaitingVolumeDetachment, typ: corev1.EventTypeNormal, kinds: []string{"Node"}},
	{constant: "ReasonTerminationGracePeriodExpiring", reason: nodeterm.ReasonTerminationGracePeriodExpiring, typ: corev1.EventTypeWarning, kinds: []string{"Node"}},
	{constant: "ReasonTerminationGracePeriodExpiring", reason: lifecycle.ReasonTerminationGracePeriodExpiring, typ: corev1.EventTypeWarning, kinds: []string{"NodeClaim"}},
	{constant: "ReasonFailedConsistencyCheck", reason: consistency.ReasonFailedConsistencyCheck, typ: corev1.EventTypeWarning, kinds: []string{"NodeClaim"}},
	{constant: "ReasonInsufficientCapacityError", reason: lifecycle.ReasonInsufficientCapacityError, typ: corev1.EventTypeWarning, kinds: []string{"NodeClaim"}},
	{constant: "ReasonNodeClassNotReady", reason: lifecycle.ReasonNodeClassNotReady, typ: corev1.EventTypeWarning, kinds: []string{"NodeClaim"}},
	{constant: "ReasonNodeClassNotReady", reason: provisioning.ReasonNodeClassNotReady, typ: corev1.EventTypeWarning, kinds: []string{"NodePool"},
		otherKinds: "the provisioner also says so on a NodePool it leaves out because its node class is not ready; Karpenter records a reasonless warning there"},
	{constant: "ReasonUnregisteredTaintMissing", reason: lifecycle.ReasonUnregisteredTaintMissing, typ: corev1.EventTypeWarning, kinds: []string{"NodeClaim"}},
	{constant: "ReasonZonalShiftActive", reason: ReasonZonalShiftActive, typ: corev1.EventTypeWarning, kinds: []string{"NodePool"}},
	{constant: "ReasonZonalShiftCleared", reason: ReasonZonalShiftCleared, typ: corev1.EventTypeNormal, kinds: []string{"NodePool"}},
	{constant: "ReasonSpotInterrupted", reason: ReasonSpotInterrupted, typ: corev1.EventTypeWarning, kinds: []string{"Node", "NodeClaim"}},
	{constant: "ReasonCapacityReservationInterrupted", reason: ReasonCapacityReservationInterrupted, typ: corev1.EventTypeWarning, kinds: []string{"Node", "NodeClaim"}},
	{constant: "ReasonSpotRebalanceRecommendation", reason: ReasonSpotRebalanceRecommendation, typ: interruptionEventType(ReasonSpotRebalanceRecommendation), kinds: []string{"Node", "NodeClaim"}},
	{constant: "ReasonInstanceStopping", reason: ReasonInstanceStopping, typ: interruptionEventType(ReasonInstanceStopping), kinds: []string{"Node", "NodeClaim"}},
	{constant: "ReasonInstanceTerminating", reason: ReasonInstanceTerminating, typ: interruptionEventType(ReasonInstanceTerminating), kinds: []string{"Node", "NodeClaim"}},
	{constant: "ReasonInstanceUnhealthy", reason: ReasonInstanceUnhealthy, typ: interruptionEventType(ReasonInstanceUnhealthy), kinds: []string{"Node", "NodeClaim"}},
	{constant: "ReasonTerminatingOnInterruption", reason: ReasonTerminatingOnInterruption, typ: corev1.EventTypeWarning, kinds: []string{"Node", "NodeClaim"}},
	{constant: "ReasonWaitingOnNodeClaims", reason: nodeclassstatus.ReasonWaitingOnNodeClaims, typ: corev1.EventTypeNormal, kinds: []string{"EC2NodeClass"}},
	{constant: "ReasonFinalized", reason: metrics.ReasonFinalized, typ: corev1.EventTypeNormal, kinds: []string{"NodeClaim", "Node", "NodePool", "EC2NodeClass"}},
	{reason: "<condition type>", typ: corev1.EventTypeNormal, kinds: []string{"NodeClaim", "Node", "NodePool", "EC2NodeClass"}},

	// stevedore's own, for happenings Karpenter records no event of.
	{constant: "ReasonTaintedNode", reason: nodeterm.ReasonTaintedNode, typ: corev1.EventTypeNormal, kinds: []string{"Node"}, own: "termination tainted the node"},
	{constant: "ReasonEvictionFailed", reason: nodeterm.ReasonEvictionFailed, typ: corev1.EventTypeWarning, kinds: []string{"Pod"}, own: "an eviction failed otherwise"},
	{constant: "ReasonTerminatingInstance", reason: nodeterm.ReasonTerminatingInstance, typ: corev1.EventTypeNormal, kinds: []string{"Node"}, own: "the drained node's instance is terminated"},
	{constant: "ReasonDeletedNode", reason: nodeterm.ReasonDeletedNode, typ: corev1.EventTypeNormal, kinds: []string{"Node"}, own: "termination finished"},
	{constant: "ReasonInstanceNotFound", reason: nodeterm.ReasonInstanceNotFound, typ: corev1.EventTypeNormal, kinds: []string{"Node"}, own: "a node whose instance is gone is not drained"},
	{constant: "ReasonDeletedNodeClaim", reason: nodeterm.ReasonDeletedNodeClaim, typ: corev1.EventTypeNormal, kinds: []string{"NodeClaim"}, own: "a deleted node takes its NodeClaim along"},
	{constant: "ReasonInvalidAnnotation", reason: nodeterm.ReasonInvalidAnnotation, typ: corev1.EventTypeWarning, kinds: []string{"Node", "NodeClaim"}, own: "an unreadable termination-timestamp annotation is ignored"},
	{constant: "ReasonUnhealthy", reason: health.ReasonUnhealthy, typ: corev1.EventTypeWarning, kinds: []string{"Node", "NodeClaim"}, own: "node repair replaces an unhealthy node"},
	{constant: "ReasonValidationFailed", reason: nodepoolstatus.ReasonValidationFailed, typ: corev1.EventTypeWarning, kinds: []string{"NodePool"}, own: "an invalid NodePool is not used"},
	{constant: "ReasonDisruptionFailed", reason: disruptionctl.ReasonDisruptionFailed, typ: corev1.EventTypeWarning, kinds: []string{"Node", "NodeClaim"}, own: "a disruption rolled back"},
	{constant: "ReasonInstanceTypesFailed", reason: provisioning.ReasonInstanceTypesFailed, typ: corev1.EventTypeWarning, kinds: []string{"NodePool"}, own: "a NodePool whose instance types could not be listed is left out"},
	{constant: "ReasonDurationTooLong", reason: provisioning.ReasonDurationTooLong, typ: corev1.EventTypeWarning, kinds: []string{"NodePool"}, own: "a NodePool with an out-of-range duration is left out"},
	{constant: "ReasonDaemonSetOverheadMismatch", reason: provisioning.ReasonDaemonSetOverheadMismatch, typ: corev1.EventTypeWarning, kinds: []string{"NodeClaim"}, own: "a DaemonSet pod outgrew the room its node kept"},
	{constant: "ReasonLaunchTimeout", reason: lifecycle.ReasonLaunchTimeout, typ: corev1.EventTypeWarning, kinds: []string{"NodeClaim"}, own: "liveness deletes a NodeClaim that did not launch"},
	{constant: "ReasonRegistrationTimeout", reason: lifecycle.ReasonRegistrationTimeout, typ: corev1.EventTypeWarning, kinds: []string{"NodeClaim"}, own: "liveness deletes a NodeClaim whose node did not register"},
	{constant: "ReasonMultipleNodesFound", reason: lifecycle.ReasonMultipleNodesFound, typ: corev1.EventTypeWarning, kinds: []string{"NodeClaim"}, own: "several nodes claim the NodeClaim's instance"},
	{constant: "ReasonExpired", reason: expiration.ReasonExpired, typ: corev1.EventTypeNormal, kinds: []string{"NodeClaim"}, own: "a NodeClaim reached its expireAfter"},
	{constant: "ReasonInstanceNotFound", reason: nodeclaimgc.ReasonInstanceNotFound, typ: corev1.EventTypeWarning, kinds: []string{"NodeClaim"}, own: "a NodeClaim whose instance is gone is deleted"},
	{reason: "Interruption", typ: corev1.EventTypeWarning, kinds: []string{"NodeClaim"}, own: "an interruption message of an unknown kind"},
}

// TestEventsAreKarpentersOrListed checks every event stevedore records
// against Karpenter's table: an event of one of Karpenter's reasons has its
// type and is recorded on its kinds (or says why not), and every other is
// one of stevedore's own, with what it is for.
func TestEventsAreKarpentersOrListed(t *testing.T) {
	upstream := readUpstreamEvents(t)
	if len(upstream) != 36 {
		t.Errorf("karpenter-events.txt has %d reasons, want Karpenter's 35 and the condition transitions", len(upstream))
	}
	var own []string
	for _, e := range stevedoreEvents {
		u, karpenters := upstream[e.reason]
		switch {
		case karpenters && e.own == "":
			if e.typ != u.typ {
				t.Errorf("%s: type %s, Karpenter's %s", e.reason, e.typ, u.typ)
			}
			for _, k := range e.kinds {
				if !slices.Contains(u.kinds, k) && e.otherKinds == "" {
					t.Errorf("%s: recorded on %s, which Karpenter does not record it on (%v)", e.reason, k, u.kinds)
				}
			}
		case karpenters:
			// A constant of a Karpenter reason recorded elsewhere.
		case e.own == "":
			t.Errorf("%s is not Karpenter's and says not what it is for", e.reason)
		default:
			own = append(own, e.reason)
		}
	}
	sort.Strings(own)
	t.Logf("stevedore's own reasons: %s", strings.Join(slices.Compact(own), ", "))
}

// TestEveryKarpenterReasonIsRecorded checks the other way round: every
// event of Karpenter's table is one stevedore records, on every kind of
// object Karpenter records it on.
func TestEveryKarpenterReasonIsRecorded(t *testing.T) {
	kinds := map[string][]string{}
	for _, e := range stevedoreEvents {
		if e.own == "" {
			kinds[e.reason] = append(kinds[e.reason], e.kinds...)
		}
	}
	upstream := readUpstreamEvents(t)
	for _, reason := range slices.Sorted(maps.Keys(upstream)) {
		got, recorded := kinds[reason]
		if !recorded {
			t.Errorf("Karpenter's %s: stevedore records no such event", reason)
			continue
		}
		for _, k := range upstream[reason].kinds {
			if !slices.Contains(got, k) {
				t.Errorf("Karpenter's %s on a %s: stevedore records it only on %v", reason, k, slices.Compact(slices.Sorted(slices.Values(got))))
			}
		}
	}
}

// eventCall finds the reason constants at the event calls of a line.
var (
	eventCall      = regexp.MustCompile(`Eventf(By)?\(|\.event\(|eventOnCandidate\(|eventOnClaimAndNode\(`)
	reasonConstant = regexp.MustCompile(`\bReason[A-Z][A-Za-z]*\b`)
)

// TestEveryRecordedReasonIsListed reads the controllers' sources and checks
// that every reason constant an event call names is in stevedoreEvents, so
// that a new event cannot go unchecked against Karpenter's.
func TestEveryRecordedReasonIsListed(t *testing.T) {
	listed := map[string]bool{}
	for _, e := range stevedoreEvents {
		listed[e.constant] = true
	}
	seen := 0
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(data), "\n") {
			if !eventCall.MatchString(line) {
				continue
			}
			for _, c := range reasonConstant.FindAllString(line, -1) {
				seen++
				if !listed[c] {
					t.Errorf("%s:%d records %s, which stevedoreEvents does not list", path, i+1, c)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 20 {
		t.Errorf("found only %d reasons at event calls; the scan is broken", seen)
	}
}
