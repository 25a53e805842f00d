package disruption

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
)

var (
	large  = "m6i.large"   // 2 vCPU, 8 GiB
	xlarge = "m6i.xlarge"  // 4 vCPU, 16 GiB
	x2     = "m6i.2xlarge" // 8 vCPU, 32 GiB
	family = []string{large, xlarge, x2}
)

// TestCandidates checks who may be a candidate, and the code each other
// node gets.
func TestCandidates(t *testing.T) {
	tests := []struct {
		name  string
		setup func(f *fixture) string // returns the node to look at
		want  []string                // codes for that node; nil = a deletion of it; empty = no codes
	}{
		{"unmanaged node", func(f *fixture) string {
			return f.node(nodeSpec{itype: xlarge, unmanaged: true})
		}, []string{CodeUnmanaged}},
		{"not initialized", func(f *fixture) string {
			return f.node(nodeSpec{pool: "p", itype: xlarge, notInitialized: true})
		}, []string{CodeNotInitialized}},
		{"nominated", func(f *fixture) string {
			n := f.node(nodeSpec{pool: "p", itype: xlarge})
			f.c.Nominate(n, t0.Add(time.Minute))
			return n
		}, []string{CodeNominated}},
		{"marked for deletion", func(f *fixture) string {
			n := f.node(nodeSpec{pool: "p", itype: xlarge})
			f.c.MarkForDeletion(n)
			return n
		}, []string{CodeDeleting}},
		{"node do-not-disrupt", func(f *fixture) string {
			return f.node(nodeSpec{pool: "p", itype: xlarge, doNotDisrupt: true})
		}, []string{CodeDoNotDisruptNode}},
		{"empty node is deleted", func(f *fixture) string {
			return f.node(nodeSpec{pool: "p", itype: xlarge})
		}, nil},
		{"pod do-not-disrupt true", func(f *fixture) string {
			n := f.node(nodeSpec{pool: "p", itype: xlarge})
			f.pod("a", n, "100m", "100Mi", annotate(wellknown.AnnotationDoNotDisrupt, "true"))
			return n
		}, []string{CodeDoNotDisruptPod}},
		{"pod do-not-disrupt duration still active", func(f *fixture) string {
			n := f.node(nodeSpec{pool: "p", itype: xlarge})
			f.pod("a", n, "100m", "100Mi", annotate(wellknown.AnnotationDoNotDisrupt, "2h"))
			return n
		}, []string{CodeDoNotDisruptPod}},
		{"pod do-not-disrupt duration elapsed", func(f *fixture) string {
			n := f.node(nodeSpec{pool: "p", itype: xlarge})
			f.node(nodeSpec{pool: "p", itype: xlarge}) // room for the pod
			f.pod("a", n, "100m", "100Mi", annotate(wellknown.AnnotationDoNotDisrupt, "30m"))
			return n
		}, []string{}},
		{"PDB allows none", func(f *fixture) string {
			n := f.node(nodeSpec{pool: "p", itype: xlarge})
			f.pod("a", n, "100m", "100Mi")
			f.pdb("web", "web", 0, nil)
			return n
		}, []string{CodePDBBlocked}},
		{"two PDBs", func(f *fixture) string {
			n := f.node(nodeSpec{pool: "p", itype: xlarge})
			f.pod("a", n, "100m", "100Mi")
			f.pdb("web", "web", 1, nil)
			f.pdb("web2", "web", 1, nil)
			return n
		}, []string{CodeMultiplePDBs}},
		{"unhealthy pod under AlwaysAllow PDB", func(f *fixture) string {
			n := f.node(nodeSpec{pool: "p", itype: xlarge})
			f.node(nodeSpec{pool: "p", itype: xlarge})
			f.pod("a", n, "100m", "100Mi", notReady)
			f.pdb("web", "web", 0, ptr.To(policyv1.AlwaysAllow))
			return n
		}, []string{}},
		{"daemon set pods only: empty", func(f *fixture) string {
			n := f.node(nodeSpec{pool: "p", itype: xlarge})
			f.pod("ds", n, "100m", "100Mi", daemon)
			return n
		}, nil},
		{"daemon set pod do-not-disrupt blocks its node, as in Karpenter", func(f *fixture) string {
			n := f.node(nodeSpec{pool: "p", itype: xlarge})
			f.pod("ds", n, "100m", "100Mi", daemon, annotate(wellknown.AnnotationDoNotDisrupt, "true"))
			return n
		}, []string{CodeDoNotDisruptPod}},
		{"daemon set pod behind a blocking PDB blocks its node", func(f *fixture) string {
			n := f.node(nodeSpec{pool: "p", itype: xlarge})
			f.pod("ds", n, "100m", "100Mi", daemon)
			f.pdb("agents", "web", 0, nil)
			return n
		}, []string{CodePDBBlocked}},
		{"daemon set pod tolerating the disrupted taint: its PDB does not count", func(f *fixture) string {
			n := f.node(nodeSpec{pool: "p", itype: xlarge})
			f.pod("ds", n, "100m", "100Mi", daemon, func(p *corev1.Pod) {
				p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
			})
			f.pdb("agents", "web", 0, nil)
			return n
		}, nil},
		{"pod with very negative deletion cost: empty", func(f *fixture) string {
			n := f.node(nodeSpec{pool: "p", itype: xlarge})
			f.pod("a", n, "100m", "100Mi", annotate(AnnotationPodDeletionCost, "-2147483648"))
			return n
		}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.pool("p", family, nil)
			node := tc.setup(f)
			d := Decide(f.input())
			got := codes(d, node)
			if tc.want == nil {
				if d.Command == nil || !slices.Contains(candidateNames(d.Command), node) {
					t.Fatalf("want %s disrupted; command %v, blocked %v", node, d.Command, d.Blocked)
				}
				return
			}
			if len(tc.want) == 0 && len(got) == 0 {
				return
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("codes for %s = %v, want %v (all: %v)", node, got, tc.want, d.Blocked)
			}
			if d.Command != nil && slices.Contains(candidateNames(d.Command), node) {
				t.Fatalf("blocked node %s is in the command %s", node, d.Command)
			}
		})
	}
}

func TestEmptiness(t *testing.T) {
	t.Run("deletes every empty node the budget allows, in one command", func(t *testing.T) {
		f := newFixture(t)
		f.pool("p", family, nil)
		a := f.node(nodeSpec{pool: "p", itype: xlarge})
		b := f.node(nodeSpec{pool: "p", itype: xlarge})
		c := f.node(nodeSpec{pool: "p", itype: xlarge})
		busy := f.node(nodeSpec{pool: "p", itype: xlarge})
		f.pod("w", busy, "3", "1Gi")
		f.budget("p", ReasonEmpty, 2)
		d := Decide(f.input())
		if d.Command == nil || d.Command.Reason != ReasonEmpty || d.Command.Method != MethodDelete {
			t.Fatalf("command = %v", d.Command)
		}
		if got := candidateNames(d.Command); !slices.Equal(got, []string{a, b}) {
			t.Errorf("candidates = %v, want %v", got, []string{a, b})
		}
		if got := codes(d, c); !slices.Equal(got, []string{CodeBudget}) {
			t.Errorf("codes(%s) = %v", c, got)
		}
	})
	t.Run("zero Empty budget blocks", func(t *testing.T) {
		f := newFixture(t)
		f.pool("p", family, nil)
		a := f.node(nodeSpec{pool: "p", itype: xlarge})
		f.budget("p", ReasonEmpty, 0)
		f.budget("p", ReasonUnderutilized, 0)
		d := Decide(f.input())
		if d.Command != nil {
			t.Fatalf("command = %s", d.Command)
		}
		if got := codes(d, a); !slices.Contains(got, CodeBudget) {
			t.Errorf("codes = %v", got)
		}
	})
	t.Run("consolidateAfter not elapsed", func(t *testing.T) {
		f := newFixture(t)
		f.pool("p", family, nil)
		a := f.node(nodeSpec{pool: "p", itype: xlarge, notConsolidatable: true})
		d := Decide(f.input())
		if d.Command != nil || !slices.Equal(codes(d, a), []string{CodeNotConsolidatable}) {
			t.Fatalf("command %v, codes %v", d.Command, codes(d, a))
		}
	})
	t.Run("consolidateAfter Never", func(t *testing.T) {
		f := newFixture(t)
		f.pool("p", family, nil, consolidateNever)
		a := f.node(nodeSpec{pool: "p", itype: xlarge})
		d := Decide(f.input())
		if d.Command != nil || !slices.Equal(codes(d, a), []string{CodeNotConsolidatable}) {
			t.Fatalf("command %v, codes %v", d.Command, codes(d, a))
		}
	})
	t.Run("WhenEmpty pool still loses empty nodes", func(t *testing.T) {
		f := newFixture(t)
		f.pool("p", family, nil, whenEmpty)
		a := f.node(nodeSpec{pool: "p", itype: xlarge})
		d := Decide(f.input())
		if !slices.Equal(candidateNames(d.Command), []string{a}) {
			t.Fatalf("command = %v", d.Command)
		}
	})
}

func TestConsolidation(t *testing.T) {
	t.Run("multi-node: two underused nodes are deleted", func(t *testing.T) {
		f := newFixture(t)
		// On-demand only: with spot allowed, one spot node replacing all
		// three would save more, and would be chosen.
		f.pool("p", family, []string{wellknown.CapacityTypeOnDemand})
		big := f.node(nodeSpec{pool: "p", itype: x2})
		a := f.node(nodeSpec{pool: "p", itype: xlarge})
		b := f.node(nodeSpec{pool: "p", itype: xlarge})
		f.pod("big", big, "1", "1Gi")
		f.pod("a", a, "1", "1Gi")
		f.pod("b", b, "1", "1Gi")
		d := Decide(f.input())
		c := d.Command
		if c == nil || c.Reason != ReasonUnderutilized || c.Method != MethodDelete {
			t.Fatalf("command = %v; blocked %v", c, d.Blocked)
		}
		if got := candidateNames(c); len(got) != 2 {
			t.Fatalf("candidates = %v, want two", got)
		}
		if c.SavingsPerHour <= 0 {
			t.Errorf("savings = %v", c.SavingsPerHour)
		}
	})
	t.Run("single-node: replace with a strictly cheaper node, pinned to spot", func(t *testing.T) {
		f := newFixture(t)
		f.pool("p", family, nil)
		n := f.node(nodeSpec{pool: "p", itype: x2})
		f.pod("a", n, "1", "1Gi")
		d := Decide(f.input())
		c := d.Command
		if c == nil || c.Method != MethodReplace || len(c.Replacements) != 1 {
			t.Fatalf("command = %v; blocked %v", c, d.Blocked)
		}
		r := c.Replacements[0]
		if !slices.Equal(r.CapacityTypes, []string{wellknown.CapacityTypeSpot}) {
			t.Errorf("capacity types = %v, want spot only (on-demand candidates move to spot)", r.CapacityTypes)
		}
		if len(r.InstanceTypes) == 0 || r.InstanceTypes[0] != large {
			t.Errorf("instance types = %v, want %s first", r.InstanceTypes, large)
		}
		if w := worstPrice(&f.input().Pools[0], r); w >= c.Candidates[0].Price {
			t.Errorf("worst-case replacement price %v not below %v", w, c.Candidates[0].Price)
		}
		if c.SavingsPerHour <= 0 {
			t.Errorf("savings = %v", c.SavingsPerHour)
		}
		if s := c.String(); !strings.Contains(s, "via replace, terminating 1 nodes (1 pods)") || !strings.Contains(s, "reason underutilized") {
			t.Errorf("log line = %q", s)
		}
	})
	t.Run("not cheaper: the node is already the cheapest that fits", func(t *testing.T) {
		f := newFixture(t)
		f.pool("p", family, []string{wellknown.CapacityTypeOnDemand})
		n := f.node(nodeSpec{pool: "p", itype: large})
		f.pod("a", n, "1500m", "1Gi")
		d := Decide(f.input())
		if d.Command != nil {
			t.Fatalf("command = %s", d.Command)
		}
		if got := codes(d, n); !slices.Equal(got, []string{CodeNotCheaper}) {
			t.Fatalf("codes = %v (%v)", got, d.Blocked)
		}
	})
	t.Run("a cache kept between decisions changes none of them", func(t *testing.T) {
		f := newFixture(t)
		f.pool("p", family, []string{wellknown.CapacityTypeOnDemand})
		a := f.node(nodeSpec{pool: "p", itype: x2})
		b := f.node(nodeSpec{pool: "p", itype: xlarge})
		c := f.node(nodeSpec{pool: "p", itype: xlarge})
		// solo pods keep apart: whether a's can move to b or c depends on
		// the pods those run, which the cache counts.
		solo := func(p *corev1.Pod) {
			p.Labels["app"] = "solo"
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "solo"}}, TopologyKey: wellknown.LabelHostname,
			}}}}
		}
		f.pod("a1", a, "1", "2Gi", solo)
		f.pod("b1", b, "1500m", "1Gi")
		f.pod("c1", c, "500m", "1Gi")
		kept := packer.NewCache()
		steps := []func(){
			func() {},
			// a1 may no longer go to b or c: the cache must count their
			// new pods.
			func() {
				f.pod("b2", b, "100m", "128Mi", solo)
				f.pod("c2", c, "100m", "128Mi", solo)
			},
		}
		var commands []string
		for i, step := range steps {
			step()
			fresh := Decide(f.input())
			in := f.input()
			in.Options.Cache = kept
			got := Decide(in)
			if fmt.Sprint(got.Command) != fmt.Sprint(fresh.Command) || !reflect.DeepEqual(got.Blocked, fresh.Blocked) {
				t.Fatalf("step %d: with the kept cache %v %v, with a fresh one %v %v", i, got.Command, got.Blocked, fresh.Command, fresh.Blocked)
			}
			commands = append(commands, fmt.Sprint(fresh.Command))
		}
		if commands[0] == commands[1] {
			t.Fatalf("the new solo pods changed no decision (%s): the test checks nothing", commands[0])
		}
	})
	t.Run("skipped: earlier verdicts stand for candidates still kept", func(t *testing.T) {
		f := newFixture(t)
		f.pool("p", family, []string{wellknown.CapacityTypeOnDemand})
		n := f.node(nodeSpec{pool: "p", itype: large})
		f.pod("a", n, "1500m", "1Gi")
		first := Decide(f.input())
		if first.Command != nil || len(first.Verdicts) != 1 || first.Verdicts[0].Code != CodeNotCheaper {
			t.Fatalf("first decision: command %v, verdicts %v", first.Command, first.Verdicts)
		}
		in := f.input()
		in.Options.SkipConsolidation = true
		in.Options.Verdicts = map[string]Blocked{n: first.Verdicts[0], "gone": {Node: "gone", Code: CodeNotCheaper}}
		again := Decide(in)
		if again.Command != nil || len(again.Verdicts) != 0 {
			t.Fatalf("skipped decision: command %v, verdicts %v (no packing should run)", again.Command, again.Verdicts)
		}
		if got := codes(again, n); !slices.Equal(got, []string{CodeNotCheaper}) {
			t.Errorf("skipped decision codes = %v, want the earlier verdict (%v)", got, again.Blocked)
		}
		if got := codes(again, "gone"); len(got) != 0 {
			t.Errorf("a verdict for a node that is no candidate was reported: %v", got)
		}
	})
	t.Run("never one node into several", func(t *testing.T) {
		f := newFixture(t)
		f.pool("p", []string{large, xlarge}, []string{wellknown.CapacityTypeOnDemand})
		// The node's type is no longer in its pool, but another (tainted,
		// so no pod goes there) still prices it. Its pods need two xlarge
		// nodes.
		f.pool("q", []string{x2}, []string{wellknown.CapacityTypeOnDemand}, func(np *poolT) {
			np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "q", Effect: corev1.TaintEffectNoSchedule}}
		})
		n := f.node(nodeSpec{pool: "p", itype: x2})
		f.pod("a", n, "3", "1Gi")
		f.pod("b", n, "3", "1Gi")
		d := Decide(f.input())
		if d.Command != nil {
			t.Fatalf("command = %s", d.Command)
		}
		if got := codes(d, n); !slices.Equal(got, []string{CodeWouldNeedMany}) {
			t.Fatalf("codes = %v (%v)", got, d.Blocked)
		}
	})
	t.Run("WhenEmpty pool is not consolidated", func(t *testing.T) {
		f := newFixture(t)
		f.pool("p", family, nil, whenEmpty)
		n := f.node(nodeSpec{pool: "p", itype: x2})
		f.pod("a", n, "1", "1Gi")
		d := Decide(f.input())
		if d.Command != nil || !slices.Equal(codes(d, n), []string{CodePolicy}) {
			t.Fatalf("command %v codes %v", d.Command, codes(d, n))
		}
	})
	t.Run("pods are not moved onto a node inside consolidateAfter", func(t *testing.T) {
		f := newFixture(t)
		f.pool("p", family, []string{wellknown.CapacityTypeOnDemand}, func(np *poolT) {
			np.Spec.Disruption.ConsolidateAfter = durationP(10 * time.Minute)
		})
		warm := f.node(nodeSpec{pool: "p", itype: x2, notConsolidatable: true})
		n := f.node(nodeSpec{pool: "p", itype: large})
		f.pod("w", warm, "1", "1Gi")
		f.pod("a", n, "1500m", "1Gi")
		d := Decide(f.input())
		if d.Command != nil {
			t.Fatalf("command = %s: moved pods onto a node still cooling down", d.Command)
		}
	})
}

func TestSpotConsolidation(t *testing.T) {
	t.Run("spot to spot off: a spot node is not replaced, not even by on-demand", func(t *testing.T) {
		f := newFixture(t)
		f.pool("p", family, nil)
		n := f.node(nodeSpec{pool: "p", itype: x2, ct: wellknown.CapacityTypeSpot})
		f.pod("a", n, "1", "1Gi")
		d := Decide(f.input())
		if d.Command != nil || !slices.Equal(codes(d, n), []string{CodeSpotToSpot}) {
			t.Fatalf("command %v codes %v", d.Command, codes(d, n))
		}
		for _, b := range d.Blocked {
			if b.Node == n && b.Message != "SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node" {
				t.Errorf("message %q, want Karpenter's", b.Message)
			}
		}
	})
	t.Run("spot to spot off, multi-node: spot nodes are deleted but not replaced", func(t *testing.T) {
		f := newFixture(t)
		f.pool("p", family, nil)
		a := f.node(nodeSpec{pool: "p", itype: x2, ct: wellknown.CapacityTypeSpot})
		b := f.node(nodeSpec{pool: "p", itype: x2, ct: wellknown.CapacityTypeSpot})
		f.pod("a1", a, "1", "1Gi")
		f.pod("b1", b, "1", "1Gi")
		d := Decide(f.input())
		c := d.Command
		if c == nil || c.Method != MethodDelete || len(c.Candidates) != 1 {
			t.Fatalf("command = %v (%v), want one spot node deleted, its pod moved to the other", c, d.Blocked)
		}
	})
	t.Run("spot to spot on, multi-node: no 15-type rule", func(t *testing.T) {
		f := newFixture(t)
		f.opts.SpotToSpot = true
		f.pool("p", family, []string{wellknown.CapacityTypeSpot})
		a := f.node(nodeSpec{pool: "p", itype: x2, ct: wellknown.CapacityTypeSpot})
		b := f.node(nodeSpec{pool: "p", itype: x2, ct: wellknown.CapacityTypeSpot})
		f.pod("a1", a, "1500m", "1Gi")
		f.pod("b1", b, "1500m", "1Gi")
		d := Decide(f.input())
		c := d.Command
		if c == nil || c.Method != MethodReplace || len(c.Candidates) != 2 {
			t.Fatalf("command = %v (%v), want both spot nodes replaced by one", c, d.Blocked)
		}
		if got := c.Replacements[0].CapacityTypes; !slices.Equal(got, []string{wellknown.CapacityTypeSpot}) {
			t.Errorf("capacity types = %v, want spot", got)
		}
	})
	t.Run("spot to spot off, spot-only pool", func(t *testing.T) {
		f := newFixture(t)
		f.pool("p", family, []string{wellknown.CapacityTypeSpot})
		n := f.node(nodeSpec{pool: "p", itype: x2, ct: wellknown.CapacityTypeSpot})
		f.pod("a", n, "1", "1Gi")
		d := Decide(f.input())
		if d.Command != nil || !slices.Equal(codes(d, n), []string{CodeSpotToSpot}) {
			t.Fatalf("command %v codes %v", d.Command, codes(d, n))
		}
	})
	t.Run("spot to spot on, fewer than 15 cheaper types", func(t *testing.T) {
		f := newFixture(t)
		f.opts.SpotToSpot = true
		f.pool("p", family, []string{wellknown.CapacityTypeSpot})
		n := f.node(nodeSpec{pool: "p", itype: x2, ct: wellknown.CapacityTypeSpot})
		f.pod("a", n, "1", "1Gi")
		d := Decide(f.input())
		if d.Command != nil || !slices.Equal(codes(d, n), []string{CodeTooFewSpotOption}) {
			t.Fatalf("command %v codes %v", d.Command, codes(d, n))
		}
	})
	t.Run("spot to spot on, many cheaper types: keeps the 15 cheapest", func(t *testing.T) {
		f := newFixture(t)
		f.opts.SpotToSpot = true
		var many []string
		for _, fam := range []string{"m5", "m5a", "m6i", "m6a", "m7i", "m7a", "c5", "c6i", "c6a", "c7i", "r5", "r6i", "r6a", "r7i", "m5n", "m6id", "c5a"} {
			for _, size := range []string{"large", "xlarge"} {
				if _, ok := f.types[fam+"."+size]; ok {
					many = append(many, fam+"."+size)
				}
			}
		}
		many = append(many, "m6i.4xlarge")
		f.pool("p", many, []string{wellknown.CapacityTypeSpot})
		n := f.node(nodeSpec{pool: "p", itype: "m6i.4xlarge", ct: wellknown.CapacityTypeSpot})
		f.pod("a", n, "1", "1Gi")
		d := Decide(f.input())
		c := d.Command
		if c == nil || c.Method != MethodReplace {
			t.Fatalf("command %v (%v)", c, d.Blocked)
		}
		if got := len(c.Replacements[0].InstanceTypes); got != MinSpotToSpotOptions {
			t.Errorf("replacement lists %d types, want %d", got, MinSpotToSpotOptions)
		}
	})
}

func TestDrift(t *testing.T) {
	t.Run("drifted node is replaced, pods not moved onto other drifted nodes", func(t *testing.T) {
		f := newFixture(t)
		f.pool("p", []string{xlarge}, []string{wellknown.CapacityTypeOnDemand})
		a := f.node(nodeSpec{pool: "p", itype: xlarge, drifted: 2 * time.Hour})
		b := f.node(nodeSpec{pool: "p", itype: xlarge, drifted: time.Hour})
		f.pod("a1", a, "1", "1Gi")
		f.pod("b1", b, "1", "1Gi")
		f.budget("p", ReasonUnderutilized, 0)
		d := Decide(f.input())
		c := d.Command
		if c == nil || c.Reason != ReasonDrifted || c.Method != MethodReplace || len(c.Replacements) != 1 {
			t.Fatalf("command = %v (%v)", c, d.Blocked)
		}
		if got := candidateNames(c); !slices.Equal(got, []string{a}) {
			t.Errorf("candidates = %v, want the longest drifted %s", got, a)
		}
		if !strings.Contains(c.String(), "reason drifted") {
			t.Errorf("log line %q", c.String())
		}
	})
	// A replacement that registered but never initialized (a bad startup
	// taint, say) outlives the command it was launched for. The next pass
	// must not launch yet another: the moved pods would land on the
	// uninitialized node, so the drifted node waits (Karpenter's rule).
	t.Run("pods that would land on an uninitialized node block the drift", func(t *testing.T) {
		f := newFixture(t)
		f.pool("p", []string{xlarge}, []string{wellknown.CapacityTypeOnDemand})
		a := f.node(nodeSpec{pool: "p", itype: xlarge, drifted: time.Hour})
		f.node(nodeSpec{pool: "p", itype: xlarge, notInitialized: true})
		f.pod("a1", a, "1", "1Gi")
		f.budget("p", ReasonUnderutilized, 0)
		d := Decide(f.input())
		if d.Command != nil {
			t.Fatalf("command = %v, want none while the replacement is uninitialized", d.Command)
		}
		var msg string
		for _, b := range d.Blocked {
			if b.Node == a && b.Code == CodePodsDoNotFit {
				msg = b.Message
			}
		}
		if !strings.Contains(msg, "has not initialized") {
			t.Errorf("blocked = %v, want %s blocked because its pod would move to an uninitialized node", d.Blocked, a)
		}
	})
	t.Run("pods that fit nowhere but a new node still get a replacement", func(t *testing.T) {
		f := newFixture(t)
		f.pool("p", []string{xlarge}, []string{wellknown.CapacityTypeOnDemand})
		a := f.node(nodeSpec{pool: "p", itype: xlarge, drifted: time.Hour})
		b := f.node(nodeSpec{pool: "p", itype: xlarge, notInitialized: true})
		f.pod("a1", a, "3", "1Gi")
		f.pod("b1", b, "3", "1Gi")
		f.budget("p", ReasonUnderutilized, 0)
		d := Decide(f.input())
		if c := d.Command; c == nil || c.Method != MethodReplace || !slices.Equal(candidateNames(c), []string{a}) {
			t.Fatalf("command = %v (%v), want %s replaced", d.Command, d.Blocked, a)
		}
	})
	t.Run("empty drifted nodes first", func(t *testing.T) {
		f := newFixture(t)
		f.pool("p", []string{xlarge}, nil)
		a := f.node(nodeSpec{pool: "p", itype: xlarge, drifted: 2 * time.Hour})
		b := f.node(nodeSpec{pool: "p", itype: xlarge, drifted: time.Hour, notConsolidatable: true})
		f.pod("a1", a, "1", "1Gi")
		d := Decide(f.input())
		if got := candidateNames(d.Command); !slices.Equal(got, []string{b}) || d.Command.Method != MethodDelete {
			t.Fatalf("command = %v, want delete of empty %s", d.Command, b)
		}
	})
	t.Run("Drifted budget zero", func(t *testing.T) {
		f := newFixture(t)
		f.pool("p", []string{xlarge}, nil)
		a := f.node(nodeSpec{pool: "p", itype: xlarge, drifted: time.Hour})
		f.pod("a1", a, "3", "1Gi")
		f.budget("p", ReasonDrifted, 0)
		f.budget("p", ReasonUnderutilized, 0)
		d := Decide(f.input())
		if d.Command != nil || !slices.Contains(codes(d, a), CodeBudget) {
			t.Fatalf("command %v codes %v", d.Command, codes(d, a))
		}
	})
	t.Run("do-not-disrupt pod blocks drift without a terminationGracePeriod", func(t *testing.T) {
		f := newFixture(t)
		f.pool("p", []string{xlarge}, nil)
		a := f.node(nodeSpec{pool: "p", itype: xlarge, drifted: time.Hour})
		f.pod("a1", a, "3", "1Gi", annotate(wellknown.AnnotationDoNotDisrupt, "true"))
		d := Decide(f.input())
		if d.Command != nil || !slices.Contains(codes(d, a), CodeDoNotDisruptPod) {
			t.Fatalf("command %v codes %v", d.Command, codes(d, a))
		}
	})
	t.Run("with a terminationGracePeriod drift goes ahead", func(t *testing.T) {
		f := newFixture(t)
		f.pool("p", []string{xlarge}, nil)
		a := f.node(nodeSpec{pool: "p", itype: xlarge, drifted: time.Hour, tgp: &karpv1.Duration{Duration: time.Hour}})
		f.pod("a1", a, "3", "1Gi", annotate(wellknown.AnnotationDoNotDisrupt, "true"))
		d := Decide(f.input())
		if got := candidateNames(d.Command); !slices.Equal(got, []string{a}) {
			t.Fatalf("command %v (%v)", d.Command, d.Blocked)
		}
	})
}

func TestValidate(t *testing.T) {
	f := newFixture(t)
	f.pool("p", family, nil)
	a := f.node(nodeSpec{pool: "p", itype: xlarge})
	b := f.node(nodeSpec{pool: "p", itype: xlarge})
	d := Decide(f.input())
	if got := candidateNames(d.Command); !slices.Equal(got, []string{a, b}) || d.Command.Reason != ReasonEmpty {
		t.Fatalf("command %v, want both empty nodes", d.Command)
	}
	names := func(cmd *Command, r *Rejection) string {
		if r != nil {
			return "rejected: " + r.Code
		}
		return strings.Join(candidateNames(cmd), ",")
	}
	if got := names(Validate(f.input(), d.Command)); got != a+","+b {
		t.Fatalf("unchanged cluster: %s", got)
	}
	// The budget closes, then allows one: the command shrinks to it.
	f.budget("p", ReasonEmpty, 0)
	if got := names(Validate(f.input(), d.Command)); got != "rejected: "+RejectBudget {
		t.Fatalf("budget 0: %s, want a budget rejection", got)
	}
	f.budget("p", ReasonEmpty, 1)
	cmd, rej := Validate(f.input(), d.Command)
	if got := names(cmd, rej); got != a {
		t.Fatalf("budget 1: %s, want %s alone", got, a)
	}
	if cmd.SavingsPerHour != d.Command.SavingsPerHour/2 {
		t.Errorf("savings %.4f, want half of %.4f", cmd.SavingsPerHour, d.Command.SavingsPerHour)
	}
	f.budget("p", ReasonEmpty, 100)
	// A pod lands on one node: the other still goes.
	f.pod("late", a, "100m", "100Mi")
	if got := names(Validate(f.input(), d.Command)); got != b {
		t.Fatalf("pod on %s: %s, want %s alone", a, got, b)
	}
	// And on the other: nothing is left.
	f.pod("later", b, "100m", "100Mi")
	if got := names(Validate(f.input(), d.Command)); got != "rejected: "+RejectChurn {
		t.Fatalf("pods on both: %s, want a churn rejection", got)
	}
}

// A consolidation command goes ahead whole or not at all.
func TestValidateUnderutilizedIsWhole(t *testing.T) {
	f := newFixture(t)
	f.pool("p", []string{xlarge}, nil)
	a := f.node(nodeSpec{pool: "p", itype: xlarge})
	b := f.node(nodeSpec{pool: "p", itype: xlarge})
	c := f.node(nodeSpec{pool: "p", itype: xlarge})
	f.pod("a1", a, "1", "1Gi")
	f.pod("b1", b, "1", "1Gi")
	f.pod("c1", c, "3", "1Gi")
	d := Decide(f.input())
	if d.Command == nil || d.Command.Reason != ReasonUnderutilized || len(d.Command.Candidates) < 2 {
		t.Fatalf("command %v, want a multi-node consolidation", d.Command)
	}
	f.budget("p", ReasonUnderutilized, 1)
	if cmd, r := Validate(f.input(), d.Command); r == nil || r.Code != RejectBudget {
		t.Fatalf("Validate = %v, %v; want the whole command rejected by the budget", cmd, r)
	}
}

func TestReplacements(t *testing.T) {
	f := newFixture(t)
	f.pool("p", []string{xlarge}, nil)
	a := f.node(nodeSpec{pool: "p", itype: xlarge, ct: wellknown.CapacityTypeSpot})
	b := f.node(nodeSpec{pool: "p", itype: xlarge})
	f.pod("a1", a, "3", "1Gi")
	f.pod("a2", a, "100m", "1Gi")
	f.pod("b1", b, "3", "1Gi")
	claims, unplaced := Replacements(f.input(), []string{a})
	if len(unplaced) != 0 || len(claims) != 1 {
		t.Fatalf("claims %d unplaced %v", len(claims), unplaced)
	}
	if len(claims[0].Pods) != 1 {
		t.Errorf("replacement holds %v; the small pod fits on %s", claims[0].Pods, b)
	}
}

func TestEvictionCost(t *testing.T) {
	p := &corev1.Pod{}
	if EvictionCost(p) != 1 {
		t.Errorf("plain pod cost %v", EvictionCost(p))
	}
	p.Spec.Priority = ptr.To(int32(2000000000))
	if EvictionCost(p) != 10 {
		t.Errorf("clamped cost %v", EvictionCost(p))
	}
}

// The pods of a node already being taken away move too, as in Karpenter's
// simulation: they keep the room of the replacement launched for them, so
// that room is neither offered to the next drifted node's pods (which then
// waited for it to initialize, one node at a time) nor taken as a place for
// a consolidated node's pods (which were then evicted into pending).
func TestPodsOfNodesBeingTakenAway(t *testing.T) {
	for _, tc := range []struct {
		name string
		// marked is whether the first node is marked for deletion (a
		// command is taking it away); without, nothing moves it.
		marked bool
		setup  func(f *fixture) (candidate string)
		check  func(t *testing.T, d Decision, candidate string)
	}{
		{
			name: "the next drifted node gets a replacement of its own", marked: true,
			setup: func(f *fixture) string {
				f.node(nodeSpec{pool: "p", itype: xlarge, drifted: 2 * time.Hour}) // node-001, being replaced
				f.node(nodeSpec{pool: "p", itype: xlarge, notInitialized: true})   // node-002, its replacement
				b := f.node(nodeSpec{pool: "p", itype: xlarge, drifted: time.Hour})
				f.pod("a1", "node-001", "3", "1Gi")
				f.pod("b1", b, "3", "1Gi")
				f.budget("p", ReasonUnderutilized, 0)
				return b
			},
			check: func(t *testing.T, d Decision, b string) {
				if c := d.Command; c == nil || c.Method != MethodReplace || !slices.Equal(candidateNames(c), []string{b}) {
					t.Fatalf("command = %v (blocked %v), want %s replaced by a NodeClaim of its own", d.Command, d.Blocked, b)
				}
			},
		},
		{
			name: "unmarked, the drifted node's pod would take the uninitialized node's room", marked: false,
			setup: func(f *fixture) string {
				f.node(nodeSpec{pool: "p", itype: xlarge}) // node-001, staying
				f.node(nodeSpec{pool: "p", itype: xlarge, notInitialized: true})
				b := f.node(nodeSpec{pool: "p", itype: xlarge, drifted: time.Hour})
				f.pod("a1", "node-001", "3", "1Gi")
				f.pod("b1", b, "3", "1Gi")
				f.budget("p", ReasonUnderutilized, 0)
				return b
			},
			check: func(t *testing.T, d Decision, b string) {
				if d.Command != nil {
					t.Fatalf("command = %v, want none: %s's pod would land on the uninitialized node", d.Command, b)
				}
			},
		},
		{
			name: "a consolidated node's pods do not take room promised to others", marked: true,
			setup: func(f *fixture) string {
				f.node(nodeSpec{pool: "p", itype: xlarge})                     // node-001, being deleted
				f.node(nodeSpec{pool: "p", itype: xlarge, doNotDisrupt: true}) // node-002, the room node-001's pod is to take
				c := f.node(nodeSpec{pool: "p", itype: xlarge})
				f.pod("a1", "node-001", "3", "1Gi")
				f.pod("c1", c, "3", "1Gi")
				f.pod("x1", "node-002", "100m", "100Mi")
				f.budget("p", ReasonDrifted, 0)
				return c
			},
			check: func(t *testing.T, d Decision, c string) {
				if d.Command != nil {
					t.Fatalf("command = %v, want none: %s's pod would go where node-001's pod is to go", d.Command, c)
				}
			},
		},
		{
			name: "unmarked, the node's pod moves into the free room", marked: false,
			setup: func(f *fixture) string {
				f.node(nodeSpec{pool: "p", itype: xlarge})
				f.node(nodeSpec{pool: "p", itype: xlarge, doNotDisrupt: true})
				c := f.node(nodeSpec{pool: "p", itype: xlarge})
				f.pod("a1", "node-001", "3", "1Gi")
				f.pod("c1", c, "3", "1Gi")
				f.pod("x1", "node-002", "100m", "100Mi")
				f.budget("p", ReasonDrifted, 0)
				return c
			},
			check: func(t *testing.T, d Decision, c string) {
				// node-001 or c: their pods are alike.
				if cmd := d.Command; cmd == nil || cmd.Method != MethodDelete || len(cmd.Candidates) != 1 {
					t.Fatalf("command = %v (blocked %v), want one node deleted, its pod into node-002's room", cmd, d.Blocked)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.pool("p", []string{xlarge}, []string{wellknown.CapacityTypeOnDemand})
			candidate := tc.setup(f)
			if tc.marked {
				f.c.MarkForDeletion("node-001")
			}
			tc.check(t, Decide(f.input()), candidate)
		})
	}
}
