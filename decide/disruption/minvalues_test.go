package disruption

import (
	"strings"
	"testing"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
)

// minInstanceTypes sets minValues n on the pool's instance-type requirement.
func minInstanceTypes(n int) poolOpt {
	return func(np *karpv1.NodePool) {
		for i := range np.Spec.Template.Spec.Requirements {
			if r := &np.Spec.Template.Spec.Requirements[i]; r.Key == wellknown.LabelInstanceType {
				r.MinValues = &n
			}
		}
	}
}

// TestMinValuesPolicy: replacements follow the minValues policy, as new
// NodeClaims do. A pod asking for 3 cpu fits m6i.xlarge and m6i.2xlarge
// only, two of the three types the pool's minValues asks for.
func TestMinValuesPolicy(t *testing.T) {
	for _, policy := range []packer.MinValuesPolicy{packer.MinValuesStrict, packer.MinValuesBestEffort} {
		t.Run(string(policy), func(t *testing.T) {
			f := newFixture(t)
			f.opts.MinValuesPolicy = policy
			f.pool("p", family, nil, minInstanceTypes(3))
			n := f.node(nodeSpec{pool: "p", itype: x2})
			f.pod("a", n, "3", "1Gi")
			claims, unplaced := Replacements(f.input(), []string{n})
			if policy == packer.MinValuesStrict {
				if len(claims) != 0 || len(unplaced) != 1 {
					t.Fatalf("Strict: claims %+v, unplaced %v; want the pod unplaced", claims, unplaced)
				}
			} else {
				if len(claims) != 1 || len(unplaced) != 0 || !claims[0].MinValuesRelaxed {
					t.Fatalf("BestEffort: claims %+v, unplaced %v; want one relaxed replacement", claims, unplaced)
				}
				r, _ := claims[0].Requirements.Get(wellknown.LabelInstanceType)
				if got, _ := r.MinValues(); got != 2 {
					t.Errorf("replacement records instance-type minValues %d, want 2", got)
				}
			}

			// Consolidation: under BestEffort the packing relaxes to two
			// types, but only m6i.xlarge is cheaper than the node, fewer
			// than the relaxed minValues the replacement records; under
			// Strict no replacement is packed at all. Either way the node
			// stays.
			f = newFixture(t)
			f.opts.MinValuesPolicy = policy
			f.pool("p", family, []string{wellknown.CapacityTypeOnDemand}, minInstanceTypes(3))
			n = f.node(nodeSpec{pool: "p", itype: x2})
			f.pod("a", n, "3", "1Gi")
			d := Decide(f.input())
			if d.Command != nil {
				t.Fatalf("command = %s", d.Command)
			}
			if policy == packer.MinValuesBestEffort {
				found := false
				for _, b := range d.Blocked {
					found = found || b.Node == n && b.Code == CodeNotCheaper && strings.Contains(b.Message, "minValues 2")
				}
				if !found {
					t.Errorf("blocked %+v, want %s naming the relaxed minValues 2", d.Blocked, CodeNotCheaper)
				}
			}
		})
	}
}
