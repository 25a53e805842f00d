package validation

import (
	"slices"
	"strings"
	"testing"
)

// Durations the schema's pattern accepts but Go cannot hold are refused with
// the field, the bound and a fix; the longest that fits, Never, and other
// malformed values (which the schema reports) are not.
func TestDurationsBeyondRange(t *testing.T) {
	v := testValidator(t)
	nodePool := func(expire, tgp, consolidate, budget string) string {
		return `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: long}
spec:
  template:
    spec:
      expireAfter: ` + expire + `
      terminationGracePeriod: ` + tgp + `
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: []
  disruption:
    consolidateAfter: ` + consolidate + `
    budgets:
    - nodes: "1"
    - nodes: "1"
      schedule: "0 9 * * *"
      duration: ` + budget + `
`
	}
	tests := []struct {
		name     string
		manifest string
		want     []string // fields refused for their length
	}{
		{"all too long", nodePool("9999999999h", "9999999999h", "9999999999h", "9999999999h"),
			[]string{"spec.disruption.budgets[1].duration", "spec.disruption.consolidateAfter", "spec.template.spec.expireAfter", "spec.template.spec.terminationGracePeriod"}},
		{"too long by summing", nodePool("2562047h60m", "1h", "30s", "1h"), []string{"spec.template.spec.expireAfter"}},
		{"the longest that fits", nodePool("2562047h", "2562047h", "2562047h", "2562047h"), nil},
		{"Never", nodePool("Never", "1h", "Never", "8h"), nil},
		{"NodeClaim", `apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata: {name: long}
spec:
  expireAfter: 99999999999999h
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  requirements: []
`, []string{"spec.expireAfter"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, p := range errorsOf(validate(t, v, tc.manifest)) {
				if strings.Contains(p.Message, "longest duration there is") {
					got = append(got, p.Field)
					if !strings.Contains(p.Fix, "2562047h") {
						t.Errorf("%s: fix %q does not give the bound", p.Field, p.Fix)
					}
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("refused %v, want %v", got, tc.want)
			}
		})
	}
}
