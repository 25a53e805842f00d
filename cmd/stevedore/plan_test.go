package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stevedore-autoscaler/stevedore/plan"
)

// hugePod asks for more cpu than any instance type has.
const hugePod = `apiVersion: v1
kind: Pod
metadata: {name: huge}
spec:
  containers:
    - name: c
      image: registry.example.com/huge:1.0
      resources: {requests: {cpu: "1000"}}
`

// runPlan runs stevedore plan.
func runPlan(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	return run(t, stdin, append([]string{"plan"}, args...)...)
}

func TestPlanSpotMix(t *testing.T) {
	out, stderr, err := runPlan(t, "", "-f", "../../examples/spot-mix.yaml")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	for _, want := range []string{"NODEPOOL", "default", "10 pods", "lower bound: $", "ratio "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "unschedulable") {
		t.Errorf("a web pod was not placed:\n%s", out)
	}

	out, _, err = runPlan(t, "", "-f", "../../examples/spot-mix.yaml", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var report plan.Report
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("not the JSON report: %v\n%s", err, out)
	}
	placed := 0
	for _, nc := range report.NodeClaims {
		if nc.NodePool != "default" {
			t.Errorf("a NodeClaim from NodePool %s", nc.NodePool)
		}
		for _, pod := range nc.Pods {
			if !strings.HasPrefix(pod, "default/web-") {
				t.Errorf("unexpected pod %s", pod)
			}
			placed++
		}
	}
	if placed != 10 || len(report.Unschedulable) != 0 || report.SchemaVersion != plan.SchemaVersion {
		t.Errorf("placed %d web pods, %d unschedulable, schema %d", placed, len(report.Unschedulable), report.SchemaVersion)
	}
	if report.LowerBound.PricePerHour <= 0 || report.LowerBound.PricePerHour > report.PricePerHour+1e-9 {
		t.Errorf("lower bound %+v, plan $%v/hour", report.LowerBound, report.PricePerHour)
	}
	back, err := json.MarshalIndent(&report, "", "  ")
	if err != nil || string(back)+"\n" != out {
		t.Errorf("JSON does not round-trip: %v\n%s\n---\n%s", err, out, back)
	}
	again, _, _ := runPlan(t, "", "-f", "../../examples/spot-mix.yaml", "-o", "json")
	if again != out {
		t.Error("two runs printed different plans")
	}
}

func TestPlanDriftUpgrade(t *testing.T) {
	out, _, err := runPlan(t, "", "-f", "../../examples/drift-upgrade.yaml", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var report plan.Report
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatal(err)
	}
	placed := 0
	for _, nc := range report.NodeClaims {
		if nc.NodePool != "default" {
			t.Errorf("NodeClaim from %s", nc.NodePool)
		}
		for _, pod := range nc.Pods {
			if strings.HasPrefix(pod, "checkout/checkout-") {
				placed++
			}
		}
	}
	if placed != 10 || len(report.Unschedulable) != 0 {
		t.Errorf("placed %d checkout pods on the tainted pool; unschedulable %+v", placed, report.Unschedulable)
	}
}

func TestPlanUnschedulable(t *testing.T) {
	out, _, err := runPlan(t, hugePod, "-f", "../../examples/spot-mix.yaml", "-f", "-")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "1 pod unschedulable") || !strings.Contains(out, "default/huge: ") || !strings.Contains(out, "NodePool default: ") {
		t.Errorf("the huge pod's reason is missing:\n%s", out)
	}
	out, _, err = runPlan(t, hugePod, "-f", "../../examples/spot-mix.yaml", "-f", "-", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var report plan.Report
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatal(err)
	}
	if len(report.Unschedulable) != 1 || report.Unschedulable[0].Pod != "default/huge" || report.Unschedulable[0].Reason == "" ||
		len(report.Unschedulable[0].NodePools) == 0 {
		t.Errorf("unschedulable %+v", report.Unschedulable)
	}
}

func TestPlanFlagsAndInput(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		stdin   string
		wantErr error  // nil: any error
		wantOut string // substring of stdout
	}{
		{name: "no input", args: []string{"plan"}},
		{name: "missing file", args: []string{"plan", "-f", "does-not-exist.yaml"}},
		{name: "bad output", args: []string{"plan", "-f", "../../examples", "-o", "xml"}},
		{name: "bad policy", args: []string{"plan", "-f", "../../examples", "--preference-policy", "Sometimes"}},
		{name: "bad spot fraction", args: []string{"plan", "-f", "../../examples", "--spot-price-fraction", "1.5"}},
		{name: "duplicate zone", args: []string{"plan", "-f", "../../examples", "--zones", "us-east-1a,us-east-1a"}},
		{name: "conflicting manifests", args: []string{"plan", "-f", "../../examples"}},
		{name: "invalid manifest", args: []string{"plan", "-f", "-"}, stdin: badNodePool, wantErr: errSilentFailure,
			wantOut: "schedule and duration must be set together"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := run(t, tc.stdin, tc.args...)
			if err == nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if !strings.Contains(out, tc.wantOut) {
				t.Errorf("stdout lacks %q:\n%s", tc.wantOut, out)
			}
		})
	}
}

func TestPlanListed(t *testing.T) {
	out, _, err := run(t, "", "--help")
	if err != nil || !strings.Contains(out, "plan ") {
		t.Errorf("plan is not listed: %v\n%s", err, out)
	}
}

// podJSON is a pod requesting cpu, as `kubectl get pods -o json` would list
// it: on a node, with a status.
func podJSON(name, cpu, phase string) string {
	return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `","namespace":"shop"},` +
		`"spec":{"nodeName":"ip-10-0-0-1","containers":[{"name":"c","image":"registry.example.com/shop:1","resources":{"requests":{"cpu":"` + cpu + `","memory":"1Gi"}}}]},` +
		`"status":{"phase":"` + phase + `"}}`
}

func TestPlanPodsFile(t *testing.T) {
	a, b, done := podJSON("a", "1", "Running"), podJSON("b", "2", "Pending"), podJSON("c", "3", "Succeeded")
	tests := []struct {
		name     string
		content  string
		wantPods []string // placed; nil with wantErr
		wantErr  string
	}{
		{name: "array", content: "[" + a + "," + b + "," + done + "]", wantPods: []string{"shop/a", "shop/b"}},
		{name: "List", content: `{"apiVersion":"v1","kind":"List","items":[` + a + "," + b + `]}`, wantPods: []string{"shop/a", "shop/b"}},
		{name: "PodList without item kinds", content: `{"apiVersion":"v1","kind":"PodList","items":[{"metadata":{"name":"d"},"spec":{"containers":[{"name":"c","image":"x","resources":{"requests":{"cpu":"1"}}}]}}]}`,
			wantPods: []string{"default/d"}},
		{name: "one Pod", content: a, wantPods: []string{"shop/a"}},
		{name: "YAML", content: "kind: List\nitems: []\n", wantErr: "not JSON"},
		{name: "other kind", content: `{"kind":"Deployment"}`, wantErr: `kind "Deployment"`},
		{name: "other kind in a list", content: `[{"kind":"Service","metadata":{"name":"s"}}]`, wantErr: "item 0 is a Service"},
		{name: "duplicate", content: "[" + a + "," + a + "]", wantErr: "items 0 and 1 are both pod shop/a"},
		{name: "unnamed", content: `[{"kind":"Pod","spec":{}}]`, wantErr: "item 0 has no metadata.name"},
		{name: "empty", content: "", wantErr: "the file is empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "pods.json")
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			out, _, err := runPlan(t, "", "-f", "../../examples/spot-mix.yaml", "--pods", path, "-o", "json")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var report plan.Report
			if err := json.Unmarshal([]byte(out), &report); err != nil {
				t.Fatalf("not the JSON report: %v\n%s", err, out)
			}
			var got []string
			for _, nc := range report.NodeClaims {
				for _, p := range nc.Pods {
					if !strings.HasPrefix(p, "default/web-") {
						got = append(got, p)
					}
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.wantPods) || len(report.Unschedulable) != 0 {
				t.Errorf("placed %v (unschedulable %+v), want %v", got, report.Unschedulable, tc.wantPods)
			}
			if report.PricePerHour <= 0 || report.LowerBound.PricePerHour <= 0 || report.LowerBound.PricePerHour > report.PricePerHour+1e-9 {
				t.Errorf("price %v, lower bound %+v", report.PricePerHour, report.LowerBound)
			}
		})
	}
}

func TestPlanPodsAlone(t *testing.T) {
	// Without -f there is no NodePool: the pods are read and reported
	// unschedulable, not refused.
	out, _, err := runPlan(t, "["+podJSON("a", "1", "Running")+"]", "--pods", "-")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "shop/a: ") || !strings.Contains(out, "no NodePool") {
		t.Errorf("output:\n%s", out)
	}
	if _, _, err := runPlan(t, "[]", "-f", "-", "--pods", "-"); err == nil || !strings.Contains(err.Error(), "already read by -f -") {
		t.Errorf("err = %v, want standard input read twice refused", err)
	}
}
