package scenario

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stevedore-autoscaler/stevedore/api/validation"
)

// FuzzLoad feeds the loader arbitrary files: whatever it is given, it must
// not panic, and a refusal must be problems that each say what is wrong,
// where. The seeds are the shipped scenarios (each directory's files joined
// into one, and each file alone) and inputs that once gave trouble or sit at
// a boundary.
func FuzzLoad(f *testing.F) {
	for _, root := range []string{"../../examples", "../runner/testdata"} {
		dirs := map[string][]string{}
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !slices.Contains([]string{".yaml", ".yml", ".json"}, filepath.Ext(path)) {
				return err
			}
			dirs[filepath.Dir(path)] = append(dirs[filepath.Dir(path)], path)
			return nil
		})
		if err != nil {
			f.Fatal(err)
		}
		for _, files := range dirs {
			var joined []string
			for _, p := range files {
				data, err := os.ReadFile(p)
				if err != nil {
					f.Fatal(err)
				}
				f.Add(data)
				joined = append(joined, string(data))
			}
			f.Add([]byte(strings.Join(joined, "\n---\n")))
		}
	}
	header := "apiVersion: stevedore.io/v1alpha1\nkind: Scenario\nmetadata: {name: fuzz}\n"
	for _, s := range []string{
		"",
		"---\n---\n",
		"null",
		"[]",
		"{}",
		"kind: List\nitems: [null, 1, {kind: Scenario, apiVersion: stevedore.io/v1alpha1}]\n",
		header,
		header + "spec: null\n",
		header + "spec: []\n",
		header + "metadata: 5\n",
		header + "spec: {events: [null, 1, [], {at: 1m}]}\n",
		header + "spec: {events: {at: 1m}}\n",
		header + "spec: {duration: 720h, sampleEvery: 26s}\n",
		header + "spec: {duration: 24000h, sampleEvery: 1ns}\n",
		header + "spec: {seed: -1, start: \"0000-01-01T00:00:00Z\"}\n",
		header + "spec: {cluster: {controllerManager: {kubeAPIQPS: 1e309, kubeAPIBurst: 1e30}}}\n",
		header + "spec: {aws: {zones: [], subnets: [{zone: \"\", freeIPs: -1}], images: [{id: \"\"}], instanceTypes: [\"\"]}}\n",
		header + "spec: {controller: {feature-gates: \"=,,x=y\", batch-idle-duration: null, \"\": 1}}\n",
		header + "spec: {events: [{at: 1m, scale: {kind: Deployment, name: x, replicas: 2147483648}}]}\n",
		header + "spec: {events: [{at: 1m, scale: {kind: Deployment, name: x, replicas: null}}]}\n",
		header + "spec: {events: [{at: 1m, patch: {kind: Deployment, name: x, patch: null}}]}\n",
		header + "spec: {events: [{at: 1m, patch: {kind: Deployment, name: x, type: json, patch: [{op: replace, path: /spec/replicas, value: 1e300}]}}]}\n",
		header + "spec: {events: [{at: 1m, patch: {kind: Deployment, name: x, patch: {spec: {replicas: -1e300}}}}]}\n",
		header + "spec: {events: [{at: 1m, apply: {}}, {at: 1m, apply: {kind: Pod}}, {at: 1m, apply: {apiVersion: v1, kind: Pod, metadata: {name: p}}}]}\n",
		header + "spec: {events: [{at: 1m, delete: {}}, {at: 1m, delete: {kind: Foo, apiVersion: \"/\", name: x}}]}\n",
		header + "spec: {events: [{at: 1m, releaseImage: {alias: \"@\", arch: amd64, id: ami-x}}]}\n",
		header + "spec: {events: [{at: 1m, spotInterruption: {count: -1, nodes: [a], nodeSelector: {topology.kubernetes.io/zone: \"\"}}}]}\n",
		header + "spec: {events: [{at: 1m, insufficientCapacity: {instanceTypes: [\"\"], zones: [\"\"], for: -1s}}]}\n",
		header + "spec: {events: [{at: 1m, awsFault: {operations: [\"\", CreateFleet, CreateFleet], error: \"\", times: 0}}]}\n",
		header + "spec: {events: [{at: 1m, awsFault: {operations: [GetParameter], error: Client.Bad, for: 1h}}]}\n",
		"apiVersion: stevedore.io/v1beta9\nkind: Scenario\n",
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {replicas: 100001}\n",
		"apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: x}\nspec: 1\n",
		"apiVersion: v1\nkind: Node\nmetadata: {name: n, labels: {node.kubernetes.io/instance-type: x}}\n",
		"\t- : :\n",
		"{\"apiVersion\": \"stevedore.io/v1alpha1\", \"kind\": \"Scenario\", \"spec\": {\"events\": [{\"at\": \"1m\", \"restartController\": {}}]}}",
	} {
		f.Add([]byte(s))
	}
	s := scheme(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "input.yaml"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		run, problems, err := Load([]string{dir}, s)
		for _, p := range problems {
			if p.Message == "" || p.Source == "" {
				t.Errorf("a problem without a message or a source: %+v", p)
			}
			if p.Severity == validation.SeverityError && p.Fix == "" && p.Kind == Kind {
				t.Errorf("a problem of the Scenario without a fix: %s", p)
			}
		}
		switch {
		case errors.Is(err, ErrInvalid):
			if run != nil || !validation.HasErrors(problems) {
				t.Errorf("ErrInvalid with a run (%v) or without an error among the problems %v", run != nil, problems)
			}
		case err != nil:
			if err.Error() == "" {
				t.Error("an error without a message")
			}
		default:
			if run == nil || validation.HasErrors(problems) {
				t.Fatalf("no error, but run %v and problems %v", run != nil, problems)
			}
			if run.Duration <= 0 || run.Duration > MaxDuration || run.SampleEvery < MinSampleEvery || run.Duration/run.SampleEvery > MaxSamples {
				t.Errorf("a run out of bounds: duration %s, sampleEvery %s", run.Duration, run.SampleEvery)
			}
		}
	})
}
