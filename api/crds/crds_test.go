package crds_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/stevedore-autoscaler/stevedore/api/crds"
	"github.com/stevedore-autoscaler/stevedore/api/crds/crdfinish"
)

// moduleRoot returns the directory holding go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		t.Fatal("not inside a Go module")
	}
	return filepath.Dir(gomod)
}

// TestCommittedCRDsAreCurrent regenerates the CRDs from the API types and
// compares them with the committed files.
func TestCommittedCRDsAreCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("regenerating the CRDs takes a while; skipped with -short")
	}
	root := moduleRoot(t)
	dir := t.TempDir()
	cmd := exec.Command("go", "tool", "controller-gen", "crd", "paths=./api/karpenter/...;./api/aws/...;./api/autoscaling/...", "output:crd:dir="+dir)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("generating CRDs failed: %v\n%s", err, out)
	}

	generatedFiles, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range generatedFiles {
		if err := crdfinish.File(f); err != nil {
			t.Fatal(err)
		}
	}

	committed, err := filepath.Glob(filepath.Join(root, "api", "crds", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	generated, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	base := func(paths []string) []string {
		var names []string
		for _, p := range paths {
			names = append(names, filepath.Base(p))
		}
		slices.Sort(names)
		return names
	}
	if c, g := base(committed), base(generated); !slices.Equal(c, g) {
		t.Fatalf("api/crds holds %v but the types generate %v: run hack/generate.sh", c, g)
	}
	for _, name := range base(generated) {
		want, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(root, "api", "crds", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("api/crds/%s is out of date with the API types: run hack/generate.sh", name)
		}
	}
}

type column struct {
	name, jsonPath string
	priority       int32
}

func TestCRDShape(t *testing.T) {
	want := map[string]struct {
		kind       string
		shortNames []string
		columns    []column
		// namespaced and categories are those of the Karpenter CRDs
		// (cluster-scoped, in the karpenter category) unless set.
		namespaced bool
		categories []string
		version    string
	}{
		"nodepools.karpenter.sh": {
			kind:       "NodePool",
			version:    "v1",
			shortNames: []string{"np", "nps"},
			columns: []column{
				{"NodeClass", ".spec.template.spec.nodeClassRef.name", 0},
				{"Nodes", ".status.nodes", 0},
				{"Ready", `.status.conditions[?(@.type=="Ready")].status`, 0},
				{"Age", ".metadata.creationTimestamp", 0},
				{"Weight", ".spec.weight", 1},
				{"CPU", ".status.resources.cpu", 1},
				{"Memory", ".status.resources.memory", 1},
			},
		},
		"nodeclaims.karpenter.sh": {
			kind:       "NodeClaim",
			version:    "v1",
			shortNames: []string{"nc", "ncs"},
			columns: []column{
				{"Type", `.metadata.labels.node\.kubernetes\.io/instance-type`, 0},
				{"Capacity", `.metadata.labels.karpenter\.sh/capacity-type`, 0},
				{"Zone", `.metadata.labels.topology\.kubernetes\.io/zone`, 0},
				{"Node", ".status.nodeName", 0},
				{"Ready", `.status.conditions[?(@.type=="Ready")].status`, 0},
				{"Age", ".metadata.creationTimestamp", 0},
				{"ImageID", ".status.imageID", 1},
				{"ID", ".status.providerID", 1},
				{"NodePool", `.metadata.labels.karpenter\.sh/nodepool`, 1},
				{"NodeClass", ".spec.nodeClassRef.name", 1},
				{"Drifted", `.status.conditions[?(@.type=="Drifted")].status`, 1},
			},
		},
		"capacitybuffers.autoscaling.x-k8s.io": {
			kind:       "CapacityBuffer",
			shortNames: []string{"cb"},
			namespaced: true,
			categories: []string{"autoscaling"},
			version:    "v1beta1",
			columns: []column{
				{"Strategy", ".spec.provisioningStrategy", 0},
				{"PodTemplate", ".status.podTemplateRef.name", 0},
				{"Replicas", ".status.replicas", 0},
				{"ConditionsType", ".status.conditions[*].type", 0},
				{"ConditionsStatus", ".status.conditions[*].status", 0},
				{"ConditionsReason", ".status.conditions[*].reason", 0},
				{"Age", ".metadata.creationTimestamp", 0},
			},
		},
		"ec2nodeclasses.karpenter.k8s.aws": {
			kind:       "EC2NodeClass",
			version:    "v1",
			shortNames: []string{"ec2nc", "ec2ncs"},
			columns: []column{
				{"Ready", `.status.conditions[?(@.type=="Ready")].status`, 0},
				{"Age", ".metadata.creationTimestamp", 0},
				{"Role", ".spec.role", 1},
			},
		},
		// Karpenter's alpha NodeOverlay is served at v1alpha1 only, as
		// upstream serves it.
		"nodeoverlays.karpenter.sh": {
			kind:       "NodeOverlay",
			version:    "v1alpha1",
			shortNames: []string{"overlays"},
			columns: []column{
				{"Ready", `.status.conditions[?(@.type=="Ready")].status`, 0},
				{"Age", ".metadata.creationTimestamp", 0},
				{"Weight", ".spec.weight", 1},
			},
		},
	}

	all, err := crds.All()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(want) {
		t.Fatalf("All() returned %d CRDs, want %d", len(all), len(want))
	}
	for _, crd := range all {
		w, ok := want[crd.Name]
		if !ok {
			t.Errorf("unexpected CRD %s", crd.Name)
			continue
		}
		if crd.Spec.Names.Kind != w.kind {
			t.Errorf("%s: kind %q, want %q", crd.Name, crd.Spec.Names.Kind, w.kind)
		}
		wantScope, wantCategories, wantVersion := apiextensionsv1.ClusterScoped, []string{"karpenter"}, "v1"
		if w.namespaced {
			wantScope = apiextensionsv1.NamespaceScoped
		}
		if w.categories != nil {
			wantCategories = w.categories
		}
		if w.version != "" {
			wantVersion = w.version
		}
		if crd.Spec.Scope != wantScope {
			t.Errorf("%s: scope %q, want %s", crd.Name, crd.Spec.Scope, wantScope)
		}
		if !slices.Equal(crd.Spec.Names.ShortNames, w.shortNames) {
			t.Errorf("%s: short names %v, want %v", crd.Name, crd.Spec.Names.ShortNames, w.shortNames)
		}
		if !slices.Equal(crd.Spec.Names.Categories, wantCategories) {
			t.Errorf("%s: categories %v, want %v", crd.Name, crd.Spec.Names.Categories, wantCategories)
		}
		if len(crd.Spec.Versions) != 1 {
			t.Fatalf("%s: %d versions, want 1", crd.Name, len(crd.Spec.Versions))
		}
		v := crd.Spec.Versions[0]
		if v.Name != wantVersion || !v.Served || !v.Storage {
			t.Errorf("%s: version %s served=%v storage=%v, want %s served and stored", crd.Name, v.Name, v.Served, v.Storage, wantVersion)
		}
		if v.Subresources == nil || v.Subresources.Status == nil {
			t.Errorf("%s: no status subresource", crd.Name)
		}
		// Only NodePools scale (static NodePools, through spec.replicas), as
		// upstream: kubectl scale nodepool sets replicas and reads status.nodes.
		switch scale := v.Subresources.Scale; {
		case crd.Name == "nodepools.karpenter.sh" && scale == nil:
			t.Errorf("%s: no scale subresource", crd.Name)
		case crd.Name == "nodepools.karpenter.sh":
			if scale.SpecReplicasPath != ".spec.replicas" || scale.StatusReplicasPath != ".status.nodes" || scale.LabelSelectorPath != nil {
				t.Errorf("%s: scale subresource %+v, want spec .spec.replicas and status .status.nodes", crd.Name, *scale)
			}
		case scale != nil:
			t.Errorf("%s: unexpected scale subresource", crd.Name)
		}
		var got []column
		for _, c := range v.AdditionalPrinterColumns {
			got = append(got, column{c.Name, c.JSONPath, c.Priority})
		}
		if !slices.Equal(got, w.columns) {
			t.Errorf("%s: printer columns\n got %v\nwant %v", crd.Name, got, w.columns)
		}
	}
}

func TestYAMLMatchesAll(t *testing.T) {
	all, err := crds.All()
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(crds.YAML()), "---\n")
	var names []string
	for _, doc := range docs {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict([]byte(doc), &crd); err != nil {
			t.Fatalf("YAML() holds a document that is not a CRD: %v", err)
		}
		names = append(names, crd.Name)
	}
	var want []string
	for _, crd := range all {
		want = append(want, crd.Name)
	}
	if !slices.Equal(names, want) {
		t.Errorf("YAML() holds %v, All() returns %v", names, want)
	}
	if !bytes.Equal(crds.YAML(), crds.YAML()) {
		t.Error("YAML() is not stable between calls")
	}
}
