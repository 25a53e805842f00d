package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// run executes the CLI in-process and returns stdout, stderr and the error.
func run(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := newRootCommand(strings.NewReader(stdin), &out, &errOut)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), errOut.String(), err
}

func TestVersion(t *testing.T) {
	out, _, err := run(t, "", "version")
	if err != nil || !strings.HasPrefix(out, "stevedore ") {
		t.Fatalf("version: %q, %v", out, err)
	}
	out, _, err = run(t, "", "version", "-o", "json")
	var v map[string]string
	if err != nil || json.Unmarshal([]byte(out), &v) != nil || v["version"] == "" || v["goVersion"] == "" {
		t.Fatalf("version -o json: %q, %v", out, err)
	}
	if _, _, err := run(t, "", "version", "-o", "xml"); err == nil {
		t.Error("version -o xml succeeded")
	}
}

func TestCRDs(t *testing.T) {
	out, _, err := run(t, "", "crds")
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(out, "\n---\n")
	var names []string
	for _, d := range docs {
		var crd struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(d), &crd); err != nil {
			t.Fatalf("crds output is not YAML: %v", err)
		}
		if crd.Kind != "" {
			names = append(names, crd.Kind+"/"+crd.Metadata.Name)
		}
	}
	want := []string{
		"CustomResourceDefinition/capacitybuffers.autoscaling.x-k8s.io",
		"CustomResourceDefinition/ec2nodeclasses.karpenter.k8s.aws",
		"CustomResourceDefinition/nodeclaims.karpenter.sh",
		"CustomResourceDefinition/nodeoverlays.karpenter.sh",
		"CustomResourceDefinition/nodepools.karpenter.sh",
	}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Errorf("crds printed %v, want %v", names, want)
	}
}

const badNodePool = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [spot]}]
  disruption:
    consolidateAfter: 1m
    budgets:
      - nodes: "0"
        schedule: "0 9 * * mon-fri"
`

const oldProvisioner = `apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata: {name: default}
spec:
  ttlSecondsAfterEmpty: 30
`

func TestValidate(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		stdin      string
		wantErr    bool
		wantOut    []string // substrings of stdout
		wantStderr string
	}{
		{name: "an example is valid", args: []string{"validate", "-f", "../../examples/drift-upgrade"}, wantStderr: "valid"},
		{name: "a folder of scenarios is valid", args: []string{"validate", "-f", "../../examples/troubleshooting"}, wantStderr: "valid"},
		{name: "the examples together repeat objects", args: []string{"validate", "-f", "../../examples"}, wantErr: true,
			wantOut: []string{`examples/spot-mix/manifests.yaml#3: NodePool/stateful: metadata.name: NodePool "stateful" is defined twice: here and at ../../examples/spot-mix.yaml#3`}},
		{name: "the chaos scenarios are valid", args: []string{"validate", "-f", "../../examples/chaos"}, wantStderr: "valid"},
		{name: "budget schedule without duration", args: []string{"validate", "-f", "-"}, stdin: badNodePool, wantErr: true,
			wantOut: []string{"-#1: NodePool/default: spec.disruption.budgets: ", "schedule and duration must be set together", "fix: "}},
		{name: "provisioner gets migration advice", args: []string{"validate", "-f", "-"}, stdin: oldProvisioner, wantErr: true,
			wantOut: []string{"Provisioner", "karpenter.sh/v1 NodePool", "consolidateAfter: 30s"}},
		{name: "no input named", args: []string{"validate"}, wantErr: true},
		{name: "missing file", args: []string{"validate", "-f", "does-not-exist.yaml"}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, err := run(t, tc.stdin, tc.args...)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v\nstdout:\n%s\nstderr:\n%s", err, tc.wantErr, out, stderr)
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			if !strings.Contains(stderr, tc.wantStderr) {
				t.Errorf("stderr lacks %q: %s", tc.wantStderr, stderr)
			}
		})
	}
}

func TestValidateJSON(t *testing.T) {
	out, _, err := run(t, badNodePool, "validate", "-f", "-", "-o", "json")
	if err != errSilentFailure {
		t.Fatalf("err = %v, want the silent failure exit", err)
	}
	var report validateReport
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("output is not the JSON report: %v\n%s", err, out)
	}
	if report.Valid || report.Errors == 0 || len(report.Problems) != report.Errors+report.Warnings {
		t.Fatalf("report = %+v", report)
	}
	p := report.Problems[0]
	if p.Kind != "NodePool" || p.Name != "default" || p.Field == "" || p.Fix == "" {
		t.Errorf("first problem lacks object, field or fix: %+v", p)
	}
	out, _, err = run(t, "", "validate", "-f", "../../examples/drift-upgrade", "-o", "json")
	if err != nil || !strings.Contains(out, `"valid": true`) || !strings.Contains(out, `"problems": []`) {
		t.Errorf("examples as JSON: %v\n%s", err, out)
	}
}
