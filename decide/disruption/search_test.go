package disruption

import (
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
)

// sequentialSearch is search as it reads, one packing after another: the
// reference the concurrent search must agree with.
func sequentialSearch(w *world, cands []*Candidate) (*Command, []Blocked) {
	if cmd := w.multiNode(cands); cmd != nil {
		return cmd, nil
	}
	var verdicts []Blocked
	for _, c := range cands {
		cmd, why := w.command([]*Candidate{c}, true)
		if cmd != nil {
			return cmd, verdicts
		}
		verdicts = append(verdicts, *why)
	}
	return nil, verdicts
}

// TestSearchAgreesWithTheSequentialOrder: on clusters where multi-node
// consolidation finds the command, where a single candidate deep in the
// order does, and where none does, the concurrent search gives the command
// and the verdicts of the sequential order, with a kept cache whose sibling
// is reused from one search to the next. Under the race detector (go test
// -race ./decide/disruption/, not part of make test) it also checks that the
// two goroutines share nothing they write.
func TestSearchAgreesWithTheSequentialOrder(t *testing.T) {
	family := []string{"c6i.large", "c6i.xlarge", "c6i.2xlarge", "c6i.4xlarge"}
	solo := func(p *corev1.Pod) {
		p.Labels["app"] = "solo"
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "solo"}}, TopologyKey: wellknown.LabelHostname,
		}}}}
	}
	cases := map[string]struct {
		nodes int
		// podsOn returns the pods (cpu requests) of node i, and whether
		// they keep apart from each other's nodes.
		podsOn func(i int) (cpus []string, apart bool)
		want   string // "multi", "single" or "none"
	}{
		"multi-node: many half-empty nodes": {
			nodes:  12,
			podsOn: func(i int) ([]string, bool) { return []string{"500m"}, false },
			want:   "multi",
		},
		"none: every node full and apart": {
			nodes:  12,
			podsOn: func(i int) ([]string, bool) { return []string{"1500m", "1500m"}, true },
			want:   "none",
		},
		"single: only the last candidate can go": {
			nodes: 12,
			podsOn: func(i int) ([]string, bool) {
				if i == 11 {
					return []string{"100m"}, false
				}
				return []string{"1500m", "1500m"}, true
			},
			want: "single",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.pool("p", family, []string{wellknown.CapacityTypeOnDemand})
			for i := range tc.nodes {
				n := f.node(nodeSpec{pool: "p", itype: family[1+i%2]})
				cpus, apart := tc.podsOn(i)
				for j, cpu := range cpus {
					var opts []podOpt
					if apart {
						opts = append(opts, solo)
					}
					f.pod(fmt.Sprintf("p%d-%d", i, j), n, cpu, "512Mi", opts...)
				}
			}
			kept := packer.NewCache()
			for round := range 2 {
				in := f.input()
				in.Options.Cache = kept
				d := newDecider(&in)
				var cands []*Candidate
				for _, c := range d.cands {
					if !c.Empty() && consolidationEligible(c) == nil {
						cands = append(cands, c)
					}
				}
				if len(cands) < 10 {
					t.Fatalf("%d candidates; the case means more", len(cands))
				}
				ref := f.input()
				wantCmd, wantWhy := sequentialSearch(newWorld(&ref, nil), cands)
				gotCmd, gotWhy := d.sim().search(cands, cands)
				if fmt.Sprint(gotCmd) != fmt.Sprint(wantCmd) || !reflect.DeepEqual(gotWhy, wantWhy) {
					t.Fatalf("round %d: search %v %v, sequential %v %v", round, gotCmd, gotWhy, wantCmd, wantWhy)
				}
				got := "none"
				switch {
				case gotCmd != nil && len(gotCmd.Candidates) > 1:
					got = "multi"
				case gotCmd != nil:
					got = "single"
				}
				if got != tc.want {
					t.Fatalf("round %d: found %s (%v), the case is built for %s", round, got, gotCmd, tc.want)
				}
			}
		})
	}
}
