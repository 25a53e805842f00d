package plan

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// quantitiesPool is a NodePool with the limits given (YAML at the
// indentation of spec.limits' entries), its EC2NodeClass, and a pod that
// requests 1 cpu.
func quantitiesPool(limits string) string {
	spec := ""
	if limits != "" {
		spec = "  limits:\n" + limits
	}
	return `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  role: KarpenterNodeRole
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: x}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: x}}]
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: [{key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m]}]
` + spec + `
---
apiVersion: v1
kind: Pod
metadata: {name: small}
spec:
  containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
`
}

// quantitiesPod is a pod with the resources given (a YAML flow mapping).
func quantitiesPod(name, resources string) string {
	return fmt.Sprintf("---\napiVersion: v1\nkind: Pod\nmetadata: {name: %s}\nspec:\n  containers: [{name: c, image: x, resources: %s}]\n", name, resources)
}

// TestPlanQuantitiesBeyondInt64 checks that a plan leaves pods whose
// requests (or limits, which a request defaults to) are too large for any
// instance, even beyond what an int64 counts, unschedulable with the
// resource and the amount named, instead of packing them as some small or
// negative request; that NodePool limits that large never block a launch;
// and that negative quantities and requests above their limits are refused
// before planning.
func TestPlanQuantitiesBeyondInt64(t *testing.T) {
	for _, tc := range []struct {
		name          string
		manifests     string
		claims        int
		unschedulable map[string]string // pod: what its reason says
		invalid       string            // a field validation refuses
	}{
		{name: "1e30 cpu", manifests: quantitiesPool("") + quantitiesPod("huge", `{requests: {cpu: "1e30"}}`),
			claims: 1, unschedulable: map[string]string{"default/huge": "cpu: requests 1e30, largest allocatable"}},
		{name: "2^63-1 cores", manifests: quantitiesPool("") + quantitiesPod("max", `{requests: {cpu: "9223372036854775807"}}`),
			claims: 1, unschedulable: map[string]string{"default/max": "cpu: requests 9223372036854775807, largest allocatable"}},
		{name: "1e30 memory", manifests: quantitiesPool("") + quantitiesPod("huge", `{requests: {memory: "1e30"}}`),
			claims: 1, unschedulable: map[string]string{"default/huge": "memory: requests 1e30"}},
		{name: "a limit of 1e30 cpu is the request", manifests: quantitiesPool("") + quantitiesPod("huge", `{limits: {cpu: "1e30"}}`),
			claims: 1, unschedulable: map[string]string{"default/huge": "cpu: requests 1e30"}},
		{name: "a limit beyond any instance is the request", manifests: quantitiesPool("") + quantitiesPod("big", `{limits: {cpu: "1000"}}`),
			claims: 1, unschedulable: map[string]string{"default/big": "cpu: requests 1k"}},
		{name: "a NodePool limit of 1e16 cores", manifests: quantitiesPool("    cpu: \"1e16\"\n"), claims: 1},
		{name: "NodePool limits of 1e30", manifests: quantitiesPool("    cpu: \"1e30\"\n    memory: \"1e30\"\n    nodes: \"1e30\"\n"), claims: 1},
		{name: "a negative request", manifests: quantitiesPool("") + quantitiesPod("neg", `{requests: {cpu: -98500m}}`),
			invalid: "spec.containers[0].resources.requests[cpu]"},
		{name: "a request above its limit", manifests: quantitiesPool("") + quantitiesPod("over", `{requests: {cpu: "2"}, limits: {cpu: "1"}}`),
			invalid: "spec.containers[0].resources.requests"},
		{name: "a negative NodePool limit", manifests: quantitiesPool("    cpu: \"-1\"\n"), invalid: "spec.limits.cpu"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, problems, err := Load([]string{"-"}, strings.NewReader(tc.manifests))
			if tc.invalid != "" {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("err %v, want ErrInvalid", err)
				}
				for _, p := range problems {
					if p.Field == tc.invalid {
						return
					}
				}
				t.Fatalf("no problem at %s: %v", tc.invalid, problems)
			}
			if err != nil {
				t.Fatalf("Load: %v %v", err, problems)
			}
			r, err := Run(objs, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(r.NodeClaims) != tc.claims {
				t.Errorf("%d NodeClaims, want %d: %+v", len(r.NodeClaims), tc.claims, r.NodeClaims)
			}
			for _, nc := range r.NodeClaims {
				if strings.Join(nc.Pods, ",") != "default/small" {
					t.Errorf("NodeClaim for pods %v, want only default/small", nc.Pods)
				}
			}
			if len(r.Unschedulable) != len(tc.unschedulable) {
				t.Fatalf("unschedulable %+v, want %v", r.Unschedulable, tc.unschedulable)
			}
			for _, u := range r.Unschedulable {
				if want, ok := tc.unschedulable[u.Pod]; !ok || !strings.Contains(u.Reason, want) {
					t.Errorf("%s unschedulable: %s; want a reason with %q", u.Pod, u.Reason, want)
				}
			}
		})
	}
}
