package disruption

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
)

func replicas(n int64) poolOpt {
	return func(np *karpv1.NodePool) { np.Spec.Replicas = ptr.To(n) }
}

func nodeLimit(n int64) poolOpt {
	return func(np *karpv1.NodePool) {
		np.Spec.Limits = corev1.ResourceList{"nodes": *resource.NewQuantity(n, resource.DecimalSI)}
	}
}

func TestStaticNodePool(t *testing.T) {
	onDemand := []string{wellknown.CapacityTypeOnDemand}
	t.Run("empty and underused static nodes are kept", func(t *testing.T) {
		f := newFixture(t)
		f.pool("s", family, onDemand, replicas(2))
		empty := f.node(nodeSpec{pool: "s", itype: xlarge})
		used := f.node(nodeSpec{pool: "s", itype: x2})
		f.pod("a", used, "1", "1Gi")
		d := Decide(f.input())
		if d.Command != nil {
			t.Fatalf("command = %s", d.Command)
		}
		for _, n := range []string{empty, used} {
			if got := codes(d, n); !slices.Contains(got, CodeStatic) {
				t.Errorf("codes of %s = %v, want %s", n, got, CodeStatic)
			}
		}
	})
	t.Run("pods of a dynamic node do not launch into a static pool", func(t *testing.T) {
		f := newFixture(t)
		// The static pool could hold the pod on a cheaper node; only its
		// existing nodes may take it.
		f.pool("s", family, onDemand, replicas(1))
		f.pool("d", []string{x2}, onDemand)
		full := f.node(nodeSpec{pool: "s", itype: large})
		f.pod("s-full", full, "1800m", "1Gi")
		n := f.node(nodeSpec{pool: "d", itype: x2})
		f.pod("a", n, "1", "1Gi")
		d := Decide(f.input())
		if d.Command != nil {
			t.Fatalf("command = %s", d.Command)
		}
	})
	t.Run("drift of a static node waits for the feature gate", func(t *testing.T) {
		f := newFixture(t)
		f.pool("s", family, onDemand, replicas(1))
		n := f.node(nodeSpec{pool: "s", itype: xlarge, drifted: time.Hour})
		f.pod("a", n, "1", "1Gi")
		if d := Decide(f.input()); d.Command != nil {
			t.Fatalf("command = %s", d.Command)
		}
		f.opts.StaticCapacity = true
		d := Decide(f.input())
		c := d.Command
		if c == nil || c.Reason != ReasonDrifted || c.Method != MethodReplace || !slices.Equal(candidateNames(c), []string{n}) || len(c.Replacements) != 1 {
			t.Fatalf("command = %v; blocked %v", c, d.Blocked)
		}
		r := c.Replacements[0]
		if r.NodePool != "s" || len(r.Pods) != 0 || !slices.Equal(r.InstanceTypes, family) {
			t.Errorf("replacement = %+v, want a fresh NodeClaim of s over %v, cheapest first", r, family)
		}
	})
	t.Run("no replacement past limits.nodes", func(t *testing.T) {
		f := newFixture(t)
		f.opts.StaticCapacity = true
		f.pool("s", family, onDemand, replicas(2), nodeLimit(2))
		n := f.node(nodeSpec{pool: "s", itype: xlarge, drifted: time.Hour})
		f.node(nodeSpec{pool: "s", itype: xlarge})
		d := Decide(f.input())
		if d.Command != nil {
			t.Fatalf("command = %s", d.Command)
		}
		if got := codes(d, n); !slices.Contains(got, CodeStaticNodeLimit) {
			t.Errorf("codes = %v, want %s", got, CodeStaticNodeLimit)
		}
	})
	t.Run("no replacement while scaling down", func(t *testing.T) {
		f := newFixture(t)
		f.opts.StaticCapacity = true
		f.pool("s", family, onDemand, replicas(1))
		f.node(nodeSpec{pool: "s", itype: xlarge, drifted: time.Hour})
		f.node(nodeSpec{pool: "s", itype: xlarge})
		if d := Decide(f.input()); d.Command != nil && d.Command.Reason == ReasonDrifted {
			t.Fatalf("command = %s", d.Command)
		}
	})
}
