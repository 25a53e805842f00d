package main

import (
	"errors"
	"strings"
	"testing"
)

// TestDiagnoseShippedTroubleshootingScenarios runs diagnose on the world
// each shipped troubleshooting scenario is in, at a moment its failure is
// visible, and checks that the check that names the failure reports it.
func TestDiagnoseShippedTroubleshootingScenarios(t *testing.T) {
	tests := []struct {
		scenario string
		at       string
		fail     bool     // exit status 1
		want     []string // lines that must appear
	}{
		{"untagged-subnets", "10m", true, []string{
			"FAIL  nodeclass-conditions", "SubnetsNotFound", "karpenter.sh/discovery=my-cluster",
			"FAIL  nodepool-ready", "FAIL  pending-pods"}},
		{"missing-passrole", "5m", true, []string{
			"FAIL  nodeclaim-launch", "not launched after", "Unauthorized"}},
		{"missing-access-entry", "10m", true, []string{
			"FAIL  node-role-access", "has no EKS access entry",
			"FAIL  nodeclaim-registration", "not registered; instance i-"}},
		{"no-interruption-queue", "5m", false, []string{
			"WARN  interruption-queue", "no interruption queue is configured"}},
		{"latest-alias", "5m", false, []string{
			"WARN  risk-ami-latest", "al2023@latest"}},
	}
	for _, tc := range tests {
		t.Run(tc.scenario, func(t *testing.T) {
			out, _, err := run(t, "", "diagnose", "--scenario", "../../examples/troubleshooting/"+tc.scenario, "--at", tc.at)
			if tc.fail != errors.Is(err, errSilentFailure) {
				t.Fatalf("diagnose: err %v, want failure %v\n%s", err, tc.fail, out)
			}
			if !tc.fail && err != nil {
				t.Fatalf("diagnose: %v\n%s", err, out)
			}
			for _, want := range tc.want {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
		})
	}
}
