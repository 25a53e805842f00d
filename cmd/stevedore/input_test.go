package main

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stevedore-autoscaler/stevedore/api/validation"
	"github.com/stevedore-autoscaler/stevedore/sim/scenario"
)

// These tests check that validate, plan and simulate read their input the
// same way and give the same verdict on it.

const certificate = `apiVersion: cert-manager.io/v1
kind: Certificate
metadata: {name: web}
spec: {secretName: web-tls}
`

// twoPods defines Pod p in the default namespace twice.
const twoPods = `apiVersion: v1
kind: Pod
metadata: {name: p}
spec: {containers: [{name: c, image: registry.example.com/p:1.0}]}
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default}
spec: {containers: [{name: c, image: registry.example.com/p:1.0}]}
`

// commands are the three commands that read manifests, each with "-" for
// standard input.
var commands = map[string][]string{
	"validate": {"validate", "-f", "-"},
	"plan":     {"plan", "-f", "-"},
	"simulate": {"simulate", "-"},
}

func TestSimulateReadsStdin(t *testing.T) {
	out, stderr, err := run(t, smallScenario, "simulate", "-")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	for _, want := range []string{"Scenario small, seed 1", "Pods: 4 running, 0 pending"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	// Without a Scenario the run is named after its input.
	manifests := smallScenario[:strings.Index(smallScenario, "---\napiVersion: stevedore.io")]
	out, stderr, err = run(t, manifests, "simulate", "-", "-o", "json")
	if err != nil || !strings.Contains(out, `"scenario": "stdin"`) {
		t.Errorf("manifests on stdin: %v\n%s", err, stderr)
	}
}

// TestOtherProjectsKinds checks that a kind of a group nobody here knows is
// a warning, not checked, and that simulate still runs.
func TestOtherProjectsKinds(t *testing.T) {
	out, stderr, err := run(t, smallScenario+"---\n"+certificate, "simulate", "-")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(out, "Pods: 4 running") || !strings.Contains(stderr, "-#5: Certificate/web: apiVersion: cert-manager.io is not an API group stevedore knows, so this Certificate is not checked") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", out, stderr)
	}
	out, stderr, err = run(t, certificate, "validate", "-f", "-")
	if err != nil || !strings.Contains(out, "not checked") || !strings.Contains(stderr, "valid (1 warnings)") {
		t.Errorf("validate: %v\n%s%s", err, out, stderr)
	}
}

// TestMistypedKindsAreRefused checks that every command refuses a kind that
// does not exist in a built-in group, where before each skipped it (and
// simulate ran without the workload).
func TestMistypedKindsAreRefused(t *testing.T) {
	input := strings.Replace(smallScenario, "kind: Deployment", "kind: Deploymnet", 1)
	for name, args := range commands {
		out, _, err := run(t, input, args...)
		if !errors.Is(err, errSilentFailure) || !strings.Contains(out, `-#3: Deploymnet/web: kind: apps/v1 has no kind "Deploymnet"; fix: write kind: Deployment`) {
			t.Errorf("%s: %v\n%s", name, err, out)
		}
	}
}

func TestDuplicatesAreRefused(t *testing.T) {
	for name, args := range commands {
		out, _, err := run(t, twoPods, args...)
		if !errors.Is(err, errSilentFailure) || !strings.Contains(out, `-#2: Pod/p: metadata.name: Pod "p" in namespace default is defined twice: here and at -#1`) {
			t.Errorf("%s: %v\n%s", name, err, out)
		}
	}
}

func TestEmptyInputIsRefused(t *testing.T) {
	for name, args := range commands {
		out, _, err := run(t, "# nothing\n", args...)
		if !errors.Is(err, errSilentFailure) || !strings.Contains(out, "-: no objects found in standard input; fix: ") {
			t.Errorf("%s: %v\n%s", name, err, out)
		}
	}
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.yaml")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"validate", "-f", empty}, {"plan", "-f", empty}, {"simulate", empty}, {"validate", "-f", t.TempDir()}} {
		out, _, err := run(t, "", args...)
		if !errors.Is(err, errSilentFailure) || !strings.Contains(out, "no objects found in ") {
			t.Errorf("%v: %v\n%s", args, err, out)
		}
	}
}

// TestScenarioKind checks that the validator knows the Scenario the simulator
// reads, and refuses a misspelt one for validate and simulate alike (the
// simulator leaves that to the validator).
func TestScenarioKind(t *testing.T) {
	v, err := validation.Default()
	if err != nil {
		t.Fatal(err)
	}
	doc := "apiVersion: " + scenario.APIVersion + "\nkind: " + scenario.Kind + "\nmetadata: {name: s}\n"
	if problems, err := v.Documents("s.yaml", strings.NewReader(doc)); err != nil || len(problems) != 0 {
		t.Errorf("the Scenario: %v %v", err, problems)
	}
	input := strings.Replace(smallScenario, "kind: Scenario", "kind: Scenaro", 1)
	for name, args := range map[string][]string{"validate": commands["validate"], "simulate": commands["simulate"]} {
		out, _, err := run(t, input, args...)
		if !errors.Is(err, errSilentFailure) || strings.Count(out, "\n") != 1 ||
			!strings.Contains(out, `-#4: Scenaro/small: kind: stevedore.io/v1alpha1 has no kind "Scenaro"; fix: write kind: Scenario`) {
			t.Errorf("%s: %v\n%s", name, err, out)
		}
	}
}

// TestOversizeUserDataIsRefused checks that every command refuses an
// EC2NodeClass whose user data EC2 would refuse: within the 16 KB limit as
// written, over it once merged with the AL2023 bootstrap configuration.
// Before, all three took it and simulate ran into EC2's refusal at every
// launch.
func TestOversizeUserDataIsRefused(t *testing.T) {
	userData := "#!/bin/bash\n" + strings.Repeat("echo padding the user data\n", 600)
	input := strings.Replace(smallScenario, "  role: KarpenterNodeRole-demo\n",
		"  role: KarpenterNodeRole-demo\n  userData: "+strconv.Quote(userData)+"\n", 1)
	for name, args := range commands {
		out, _, err := run(t, input, args...)
		if !errors.Is(err, errSilentFailure) {
			t.Errorf("%s: %v, want it refused\n%s", name, err, out)
			continue
		}
		for _, want := range []string{
			"-#1: EC2NodeClass/default: spec.userData: is 16212 bytes, and ",
			"bytes once merged with the AL2023 bootstrap configuration",
			"over EC2's limit of 16384 bytes of user data (16 KB, counted before base64 encoding)",
			"; fix: make spec.userData smaller: keep large scripts and files in S3 or SSM Parameter Store",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: output lacks %q:\n%s", name, want, out)
			}
		}
	}
	// Far over as written, with the family that sends it as is.
	custom := strings.Replace(input, "  amiSelectorTerms: [{alias: al2023@latest}]\n",
		"  amiFamily: Custom\n  amiSelectorTerms: [{id: ami-0123456789abcdef0}]\n", 1)
	custom = strings.Replace(custom, strconv.Quote(userData), strconv.Quote(strings.Repeat(userData, 100)), 1)
	out, _, err := run(t, custom, commands["validate"]...)
	if want := "-#1: EC2NodeClass/default: spec.userData: is 1621200 bytes, over EC2's limit of 16384 bytes"; !errors.Is(err, errSilentFailure) || !strings.Contains(out, want) {
		t.Errorf("validate, Custom: %v, want %q in\n%s", err, want, out)
	}
}
