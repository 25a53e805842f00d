package disruption

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
)

// zoneSpread gives a pod a required zone spread (maxSkew 1) over the pods
// of its app, as a Deployment's pods carry it.
func zoneSpread(p *corev1.Pod) {
	p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
		MaxSkew:           1,
		TopologyKey:       wellknown.LabelTopologyZone,
		WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": p.Labels["app"]}},
	}}
}

// createdAgo sets when a pod was created, before t0.
func createdAgo(d time.Duration) podOpt {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t0.Add(-d)) }
}

// TestDriftReplacesANodeWithOne checks that a drifted node whose pods fill
// one node of its type is replaced by one node in its zone, when the zone
// spread of its pods allows that. Were the replacement split over zones,
// each part would leave room that the next drifted node's pods are
// simulated onto, and since that room is on a node that has not
// initialized, every other drifted node in the zone would wait for it:
// the rollout would go at the pace of one replacement's boot, whatever
// the budget allows.
func TestDriftReplacesANodeWithOne(t *testing.T) {
	zones := []string{"us-east-1a", "us-east-1b"} // the fixture's catalog offers these
	for _, tc := range []struct {
		name string
		// first: a node of zone a already being replaced, its replacement
		// in flight and not initialized, whose pods must keep their claim
		// on that room.
		first bool
	}{
		{name: "one drifted node"},
		{name: "the node before it still being replaced", first: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.pool("p", []string{xlarge}, []string{wellknown.CapacityTypeOnDemand})
			f.budget("p", ReasonUnderutilized, 0)
			age := time.Duration(0)
			pod := func(name, app, node string) {
				// Created in an order of their own, not their names', as a
				// ReplicaSet's pods are.
				age += time.Duration(len(name)*7%5+1) * time.Minute
				f.pod(name, node, "900m", "1Gi", labelled("app", app), zoneSpread, createdAgo(age))
			}
			fill := func(node string, apps ...string) {
				for i, app := range apps {
					pod(fmt.Sprintf("%s-%s-%d", app, node, i), app, node)
				}
			}
			if tc.first {
				// node-001, and node-002 launched to replace it; its pods'
				// names come last in the packing's order of equal pods.
				away := f.node(nodeSpec{pool: "p", itype: xlarge, zone: zones[0], drifted: 2 * time.Hour})
				f.node(nodeSpec{pool: "p", itype: xlarge, zone: zones[0], notInitialized: true})
				fill(away, "x", "x", "y", "y")
			}
			drifted := f.node(nodeSpec{pool: "p", itype: xlarge, zone: zones[0], drifted: time.Hour})
			// x and y each have one pod more in zone a than in b: the
			// second of each moved pod ties the zones.
			fill(drifted, "x", "x", "y", "y")
			for _, z := range zones {
				n := f.node(nodeSpec{pool: "p", itype: xlarge, zone: z})
				if z == zones[0] {
					fill(n, "x", "y", "other", "other")
				} else {
					fill(n, "x", "x", "y", "y")
				}
			}
			if tc.first {
				// As many pods again in zone b.
				fill(f.node(nodeSpec{pool: "p", itype: xlarge, zone: zones[1]}), "x", "x", "y", "y")
				f.c.MarkForDeletion("node-001")
			}
			d := Decide(f.input())
			c := d.Command
			if c == nil || c.Reason != ReasonDrifted || !slices.Equal(candidateNames(c), []string{drifted}) {
				t.Fatalf("command = %v (blocked %v), want %s replaced", c, d.Blocked, drifted)
			}
			if len(c.Replacements) != 1 || !slices.Equal(c.Replacements[0].Zones, zones[:1]) {
				t.Fatalf("command %v: replacements %s, want one NodeClaim in %s", c, describeClaims(c.Replacements), zones[0])
			}
		})
	}
}

// describeClaims lists NodeClaims with their zones and pods.
func describeClaims(cs []packer.NodeClaim) string {
	var b strings.Builder
	for _, c := range cs {
		b.WriteString("[" + strings.Join(c.Zones, ",") + ":")
		for _, p := range c.Pods {
			b.WriteString(" " + p.Name)
		}
		b.WriteString("]")
	}
	return b.String()
}

// TestSwapOffNotReady: a moved pod the packing put on a node that has not
// initialized trades places with a pod of the same ReplicaSet placed first
// elsewhere (on a ready node or a new NodeClaim); without such a pod, the
// moved pod is named as the reason the candidate fails.
func TestSwapOffNotReady(t *testing.T) {
	rsPod := func(name, rs string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
		if rs != "" {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs, UID: ktypes.UID("uid-" + rs), Controller: ptr.To(true)}}
		}
		return p
	}
	nn := func(name string) ktypes.NamespacedName {
		return ktypes.NamespacedName{Namespace: "default", Name: name}
	}
	for _, tc := range []struct {
		name string
		// moved is the candidate's pod, on node "cold" (not initialized);
		// leaving the pods placed first, each with where it went: a node
		// name, or "claim" for a new NodeClaim.
		moved       *corev1.Pod
		leaving     []*corev1.Pod
		where       []string
		wantFail    bool
		wantOnCold  string
		wantInClaim []string
	}{
		{
			name: "traded with a first pod of its ReplicaSet on a ready node", moved: rsPod("m", "a"),
			leaving: []*corev1.Pod{rsPod("l-b", "b"), rsPod("l-a", "a")}, where: []string{"warm", "warm"},
			wantOnCold: "l-a",
		},
		{
			name: "traded with a first pod on a new NodeClaim, which becomes its replacement", moved: rsPod("m", "a"),
			leaving: []*corev1.Pod{rsPod("l-a", "a")}, where: []string{"claim"},
			wantOnCold: "l-a", wantInClaim: []string{"m"},
		},
		{
			name: "no pod of its ReplicaSet to trade with", moved: rsPod("m", "a"),
			leaving: []*corev1.Pod{rsPod("l-b", "b")}, where: []string{"warm"},
			wantFail: true,
		},
		{
			name: "a pod without a ReplicaSet is never traded", moved: rsPod("m", ""),
			leaving: []*corev1.Pod{rsPod("l", "")}, where: []string{"warm"},
			wantFail: true,
		},
		{
			name: "a first pod on a node that has not initialized is no trade", moved: rsPod("m", "a"),
			leaving: []*corev1.Pod{rsPod("l-a", "a")}, where: []string{"cold"},
			wantFail: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := packer.Input{Pods: append([]*corev1.Pod{tc.moved}, tc.leaving...), First: map[ktypes.NamespacedName]bool{}}
			res := packer.Result{Placements: []packer.Placement{{Pod: nn(tc.moved.Name), Node: "cold"}}, NodeClaims: []packer.NodeClaim{{}}}
			for i, l := range tc.leaving {
				in.First[nn(l.Name)] = true
				if tc.where[i] == "claim" {
					res.NodeClaims[0].Pods = append(res.NodeClaims[0].Pods, nn(l.Name))
				} else {
					res.Placements = append(res.Placements, packer.Placement{Pod: nn(l.Name), Node: tc.where[i]})
				}
			}
			pod, node := swapOffNotReady(res, in, map[ktypes.NamespacedName]bool{nn(tc.moved.Name): true}, map[string]bool{"cold": true})
			if tc.wantFail {
				if pod != nn(tc.moved.Name) || node != "cold" {
					t.Fatalf("failed on %v %q, want %s on cold", pod, node, tc.moved.Name)
				}
				return
			}
			if node != "" {
				t.Fatalf("failed on %v %q, want a trade", pod, node)
			}
			var onCold []string
			for _, pl := range res.Placements {
				if pl.Node == "cold" {
					onCold = append(onCold, pl.Pod.Name)
				}
			}
			if !slices.Equal(onCold, []string{tc.wantOnCold}) {
				t.Errorf("on the cold node: %v, want %s", onCold, tc.wantOnCold)
			}
			var inClaim []string
			for _, k := range res.NodeClaims[0].Pods {
				inClaim = append(inClaim, k.Name)
			}
			if !slices.Equal(inClaim, tc.wantInClaim) {
				t.Errorf("in the new NodeClaim: %v, want %v", inClaim, tc.wantInClaim)
			}
		})
	}
}
