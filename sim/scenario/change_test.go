package scenario

import (
	"strings"
	"testing"
)

func TestReadChange(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		kinds    []string
		lines    []string
		err      string
	}{
		{name: "an image release", in: "releaseImage: {alias: al2023, id: ami-0bbbbbbbbbbbbbbb1}\n",
			kinds: []string{"releaseImage"}, lines: []string{"release ami-0bbbbbbbbbbbbbbb1 as al2023@latest"}},
		{name: "an object to apply and a later patch", in: `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec: {disruption: {budgets: [{nodes: "1"}]}}
---
at: 30m
patch: {kind: EC2NodeClass, name: default, patch: {spec: {amiSelectorTerms: [{id: ami-0bbbbbbbbbbbbbbb1}]}}}
`, kinds: []string{"apply", "patch"},
			lines: []string{"apply NodePool/default", `patch EC2NodeClass/default {"spec":{"amiSelectorTerms":[{"id":"ami-0bbbbbbbbbbbbbbb1"}]}} at 30m`}},
		{name: "a Scenario's events", in: `apiVersion: stevedore.io/v1alpha1
kind: Scenario
spec:
  events:
    - {at: 5m, scale: {kind: Deployment, namespace: shop, name: web, replicas: 20}}
`, kinds: []string{"scale"}, lines: []string{"scale Deployment/shop/web to 20 at 5m"}},
		{name: "empty", in: "", err: "no change in it"},
		{name: "two kinds in one event", in: "releaseImage: {}\nrestartController: {}\n", err: "exactly one of"},
		{name: "a misspelt field", in: "relaseImage: {}\n", err: "relaseImage"},
		{name: "an object without a kind", in: "apiVersion: v1\nmetadata: {name: x}\n", err: "needs both apiVersion and kind"},
		{name: "a Scenario without events", in: "apiVersion: stevedore.io/v1alpha1\nkind: Scenario\nspec: {}\n", err: "no spec.events"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			events, lines, err := ReadChange("change.yaml", []byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error = %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, e := range events {
				kinds = append(kinds, e.EventKind())
			}
			if strings.Join(kinds, ",") != strings.Join(tc.kinds, ",") || strings.Join(lines, "\n") != strings.Join(tc.lines, "\n") {
				t.Errorf("got kinds %v lines %q, want %v %q", kinds, lines, tc.kinds, tc.lines)
			}
		})
	}
}
