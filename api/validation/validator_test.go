package validation

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const (
	validNodeClass = `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: KarpenterNodeRole-my-cluster
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: my-cluster}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: my-cluster}}]
`
	validNodePool = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]
`
)

// TestExamples checks that the manifests in examples/ have no errors, each
// example (a file or a directory) on its own. Together they repeat objects
// (every example has its NodePool default).
func TestExamples(t *testing.T) {
	v := testValidator(t)
	files, err := filepath.Glob(filepath.Join("..", "..", "examples", "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples found: %v", err)
	}
	for _, f := range files {
		problems, err := v.Paths([]string{f}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if errs := errorsOf(problems); len(errs) > 0 {
			t.Errorf("%s has errors:%s", f, dump(errs))
		}
		if len(problems) > 0 {
			t.Logf("%s:%s", f, dump(problems))
		}
	}
	problems, err := v.Paths([]string{filepath.Join("..", "..", "examples")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := find(problems, "metadata.name", SeverityError, `NodePool "default" is defined twice`); !ok {
		t.Errorf("examples/ as one set: want NodePool default defined twice, got:%s", dump(problems))
	}
}

func TestProblemString(t *testing.T) {
	for _, tc := range []struct {
		p    Problem
		want string
	}{
		{Problem{Source: "a.yaml#2", Kind: "NodePool", Name: "default", Field: "spec.weight", Message: "too heavy", Fix: "lighten it"},
			"a.yaml#2: NodePool/default: spec.weight: too heavy; fix: lighten it"},
		{Problem{Source: "-#1", Kind: "Namespace", Message: "m", Fix: "f"}, "-#1: Namespace: m; fix: f"},
		{Problem{Source: "a.yaml#3", Message: "yaml: line 3: bad", Fix: "f"}, "a.yaml#3: yaml: line 3: bad; fix: f"},
	} {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
}

func TestDocuments(t *testing.T) {
	v := testValidator(t)
	for _, tc := range []struct {
		name  string
		input string
		want  []Problem // Source, Kind, Name, Field, Severity and a part of Message
	}{
		{
			name:  "valid objects, empty documents and comments",
			input: "# leading comment\n---\n" + validNodeClass + "---\n# only a comment\n---\n\n---\n" + validNodePool,
		},
		{
			name:  "documents are numbered without empty ones",
			input: "---\n" + validNodeClass + "---\n---\n" + validNodePool + "  weight: 0\n",
			want:  []Problem{{Source: "test.yaml#2", Kind: "NodePool", Name: "default", Field: "spec.weight", Severity: SeverityError, Message: "greater than or equal to 1"}},
		},
		{
			name:  "YAML syntax error reports the line in the file",
			input: validNodeClass + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x\n",
			want:  []Problem{{Source: "test.yaml#2", Severity: SeverityError, Message: "yaml: line 12:"}},
		},
		{
			name:  "a document that is not an object",
			input: "- a\n- b\n",
			want:  []Problem{{Source: "test.yaml#1", Severity: SeverityError, Message: "found a list"}},
		},
		{
			name:  "missing apiVersion and kind, guessed from the fields",
			input: "metadata: {name: x}\nspec:\n  template:\n    spec:\n      nodeClassRef: {name: default}\n",
			want: []Problem{
				{Source: "test.yaml#1", Name: "x", Field: "apiVersion", Severity: SeverityError, Message: "apiVersion not set"},
				{Source: "test.yaml#1", Name: "x", Field: "kind", Severity: SeverityError, Message: "kind not set"},
			},
		},
		{
			name:  "unparsable apiVersion",
			input: "apiVersion: a/b/c\nkind: X\n",
			want:  []Problem{{Source: "test.yaml#1", Kind: "X", Field: "apiVersion", Severity: SeverityError, Message: "unexpected GroupVersion string"}},
		},
		{
			name:  "duplicate keys",
			input: "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\nmetadata: {name: b}\n",
			want:  []Problem{{Source: "test.yaml#1", Kind: "Namespace", Name: "b", Severity: SeverityWarning, Message: `duplicate key "metadata" at line 4`}},
		},
		{
			name:  "a !!binary tag",
			input: "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: !!binary aGVsbG8=\n",
			want:  []Problem{{Source: "test.yaml#1", Kind: "Namespace", Name: "hello", Severity: SeverityWarning, Message: "a !!binary value at line 4 is decoded from base64"}},
		},
		{
			name:  "nesting deeper than the decoder allows",
			input: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: deep}\ndata:\n  x: " + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + "\n",
			want:  []Problem{{Source: "test.yaml#1", Severity: SeverityError, Message: "nests lists or mappings more deeply than the decoder allows"}},
		},
		{
			name:  "JSON stream",
			input: `{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}}` + "\n" + `{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "b"}, "spec": {"finalizer": []}}`,
			want:  []Problem{{Source: "test.yaml#2", Kind: "Namespace", Name: "b", Field: "spec.finalizer", Severity: SeverityError, Message: `unknown field "spec.finalizer"`}},
		},
		{
			name:  "JSON syntax error",
			input: `{"apiVersion": "v1", "kind": "Namespace"}` + "\n" + `{"apiVersion": }`,
			want:  []Problem{{Source: "test.yaml#2", Severity: SeverityError, Message: "invalid JSON at line 2"}},
		},
		{
			name:  "List items",
			input: "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Namespace\n  metadata: {name: a}\n- apiVersion: v1\n  kind: Namespace\n  metadata: {name: b}\n  spec: {finalizerz: []}\n",
			want:  []Problem{{Source: "test.yaml#1/items[1]", Kind: "Namespace", Name: "b", Field: "spec.finalizerz", Severity: SeverityError, Message: "unknown field"}},
		},
		{
			name:  "kinds nobody here knows are skipped with a warning",
			input: "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {anything: [1, 2]}\n",
			want:  []Problem{{Source: "test.yaml#1", Kind: "Widget", Name: "w", Field: "apiVersion", Severity: SeverityWarning, Message: "example.com is not an API group stevedore knows, so this Widget is not checked"}},
		},
		{
			name: "built-in kinds are strictly decoded",
			input: `apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web}
spec:
  minAvailble: 80%
  selector: {matchLabels: {app: web}}
`,
			want: []Problem{{Source: "test.yaml#1", Kind: "PodDisruptionBudget", Name: "web", Field: "spec.minAvailble", Severity: SeverityError, Message: `unknown field "spec.minAvailble"`}},
		},
		{
			name:  "built-in kinds with a wrong type",
			input: "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: i}]\n  terminationGracePeriodSeconds: soon\n",
			want:  []Problem{{Source: "test.yaml#1", Kind: "Pod", Name: "p", Field: "spec.terminationGracePeriodSeconds", Severity: SeverityError, Message: "cannot unmarshal string"}},
		},
		{
			name:  "namespace on a cluster-scoped kind",
			input: validNodeClass + "---\n" + strings.Replace(validNodePool, "metadata: {name: default}", "metadata: {name: default, namespace: karpenter}", 1),
			want:  []Problem{{Source: "test.yaml#2", Kind: "NodePool", Name: "default", Field: "metadata.namespace", Severity: SeverityWarning, Message: "cluster-scoped"}},
		},
		{
			name:  "status and resourceVersion from kubectl get",
			input: validNodeClass + "---\n" + strings.Replace(validNodePool, "metadata: {name: default}", "metadata: {name: default, resourceVersion: '123'}", 1) + "status: {nodes: 3}\n",
			want: []Problem{
				{Source: "test.yaml#2", Kind: "NodePool", Name: "default", Field: "metadata.resourceVersion", Severity: SeverityError, Message: "resourceVersion should not be set on objects to be created"},
				{Source: "test.yaml#2", Kind: "NodePool", Name: "default", Field: "status", Severity: SeverityWarning, Message: "drops status"},
			},
		},
		{
			name:  "generateName instead of a name",
			input: strings.Replace(validNodeClass, "metadata: {name: default}", "metadata: {generateName: default-}", 1),
			want:  []Problem{{Source: "test.yaml#1", Kind: "EC2NodeClass", Field: "metadata.name", Severity: SeverityWarning, Message: "kubectl apply needs metadata.name"}},
		},
		{
			name:  "unquoted yes in a label value",
			input: validNodeClass + "---\n" + strings.Replace(validNodePool, "  template:\n", "  template:\n    metadata:\n      labels: {spot-ok: yes}\n", 1),
			want: []Problem{
				{Source: "test.yaml#2", Kind: "NodePool", Name: "default", Severity: SeverityWarning, Message: "some validation rules were not checked"},
				{Source: "test.yaml#2", Kind: "NodePool", Name: "default", Field: "spec.template.metadata.labels.spot-ok", Severity: SeverityError, Message: "must be of type string"},
			},
		},
		{
			name:  "unknown metadata field",
			input: strings.Replace(validNodeClass, "metadata: {name: default}", "metadata: {name: default, labelz: {a: b}}", 1),
			want:  []Problem{{Source: "test.yaml#1", Kind: "EC2NodeClass", Name: "default", Field: "metadata.labelz", Severity: SeverityError, Message: `unknown field "metadata.labelz"`}},
		},
		{
			name:  "CEL rules wait for the schema errors",
			input: validNodeClass + "---\n" + validNodePool + "  weight: heavy\n  disruption:\n    consolidateAfter: 1m\n    budgets: [{nodes: '1', duration: 8h}]\n",
			want: []Problem{
				{Source: "test.yaml#2", Kind: "NodePool", Name: "default", Severity: SeverityWarning, Message: "some validation rules were not checked"},
				{Source: "test.yaml#2", Kind: "NodePool", Name: "default", Field: "spec.weight", Severity: SeverityError, Message: "must be of type integer"},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := validate(t, v, tc.input)
			if len(got) != len(tc.want) {
				t.Fatalf("want %d problems, got:%s", len(tc.want), dump(got))
			}
			for i, w := range tc.want {
				g := got[i]
				if g.Source != w.Source || g.Kind != w.Kind || g.Name != w.Name || g.Field != w.Field || g.Severity != w.Severity || !strings.Contains(g.Message, w.Message) {
					t.Errorf("problem %d:\n got  %s %s\n want %s %s (message containing %q)", i, g.Severity, g, w.Severity, Problem{Source: w.Source, Kind: w.Kind, Name: w.Name, Field: w.Field}, w.Message)
				}
				if g.Fix == "" {
					t.Errorf("problem %d has no fix: %s", i, g)
				}
			}
		})
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestDocumentsReadError(t *testing.T) {
	if _, err := testValidator(t).Documents("x", failingReader{}); err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("want the read error, got %v", err)
	}
}

// TestPaths checks directory walking, stdin and the cross-object check over
// everything read.
func TestPaths(t *testing.T) {
	v := testValidator(t)
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gpuPool := strings.ReplaceAll(validNodePool, "default", "gpu")
	write("b/nodepool.yaml", gpuPool+"  weight: 0\n")
	write("a/nodeclass.yml", strings.ReplaceAll(validNodeClass, "default", "gpu"))
	write("c.json", `{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}, "spek": {}}`)
	write("notes.txt", "not a manifest")
	write(".git/config.yaml", "this: [is not read")

	problems, err := v.Paths([]string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range problems {
		rel, _ := filepath.Rel(dir, strings.SplitN(p.Source, "#", 2)[0])
		got = append(got, rel+" "+p.Field)
	}
	want := []string{"b/nodepool.yaml spec.weight", "c.json spek"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v;%s", got, want, dump(problems))
	}

	// The NodePool alone: its EC2NodeClass is missing.
	problems, err = v.Paths([]string{"-"}, strings.NewReader(gpuPool))
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != 1 || problems[0].Source != "-#1" || problems[0].Field != "spec.template.spec.nodeClassRef.name" ||
		problems[0].Severity != SeverityWarning || !strings.Contains(problems[0].Message, `EC2NodeClass "gpu" is not found among the validated objects; it must exist in the cluster`) {
		t.Errorf("want the missing EC2NodeClass warning, got:%s", dump(problems))
	}

	// Together with a file that defines it.
	problems, err = v.Paths([]string{"-", filepath.Join(dir, "a")}, strings.NewReader(gpuPool))
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != 0 {
		t.Errorf("want no problems, got:%s", dump(problems))
	}

	if _, err := v.Paths([]string{filepath.Join(dir, "missing.yaml")}, nil); err == nil {
		t.Error("want an error for a path that does not exist")
	}
}

// TestDeterministicOrder checks that problems come out in source order, then
// by field with numeric indexes, and the same on every run.
func TestDeterministicOrder(t *testing.T) {
	v := testValidator(t)
	var budgets strings.Builder
	for i := 0; i < 12; i++ {
		budgets.WriteString("      - nodes: \"bad\"\n")
	}
	input := validNodeClass + "---\n" + validNodePool +
		"  weight: 0\n  disruption:\n    consolidationPolicy: Sometimes\n    consolidateAfter: 1m\n    budgets:\n" + budgets.String() +
		"  limits: {cpu: x, memory: 1x, pods: z, nvidia.com/gpu: w}\n" +
		"  ttlSecondsAfterEmpty: 30\n  foo: 1\n  bar: 2\n" +
		"---\napiVersion: v1\nkind: Namespace\nmetadata: {name: ns}\nspec: {a: 1, b: 2, c: 3}\n"
	first := validate(t, v, input)
	for i := 0; i < 20; i++ {
		if again := validate(t, v, input); !reflect.DeepEqual(first, again) {
			t.Fatalf("run %d differs:%s\nfirst:%s", i, dump(again), dump(first))
		}
	}
	var fields []string
	for _, p := range first {
		fields = append(fields, p.Source+" "+p.Field)
	}
	want := []string{"test.yaml#2 "} // the CEL note has no field
	want = append(want, "test.yaml#2 spec.bar")
	for i := 0; i < 12; i++ {
		want = append(want, "test.yaml#2 spec.disruption.budgets["+strconv.Itoa(i)+"].nodes")
	}
	want = append(want,
		"test.yaml#2 spec.disruption.consolidationPolicy",
		"test.yaml#2 spec.foo",
		"test.yaml#2 spec.limits.cpu", "test.yaml#2 spec.limits.memory", "test.yaml#2 spec.limits.nvidia.com/gpu", "test.yaml#2 spec.limits.pods",
		"test.yaml#2 spec.ttlSecondsAfterEmpty",
		"test.yaml#2 spec.weight",
		"test.yaml#3 spec.a", "test.yaml#3 spec.b", "test.yaml#3 spec.c",
	)
	if !reflect.DeepEqual(fields, want) {
		t.Errorf("order:\n got  %q\n want %q", fields, want)
	}
}

func TestCompareFieldPaths(t *testing.T) {
	sorted := []string{
		"",
		"apiVersion",
		"metadata.name",
		"spec.disruption.budgets",
		"spec.disruption.budgets[2]",
		"spec.disruption.budgets[2].nodes",
		"spec.disruption.budgets[10]",
		"spec.disruption.consolidationPolicy",
		"spec.template.metadata.labels[a.b/c]",
		"spec.template.metadata.labels[b]",
	}
	for i := range sorted {
		for j := range sorted {
			c := compareFieldPaths(sorted[i], sorted[j])
			if (i < j && c >= 0) || (i > j && c <= 0) || (i == j && c != 0) {
				t.Errorf("compareFieldPaths(%q, %q) = %d", sorted[i], sorted[j], c)
			}
		}
	}
}

// TestObjectLeavesItsInputAlone checks that Object validates a copy.
func TestObjectLeavesItsInputAlone(t *testing.T) {
	v := testValidator(t)
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON([]byte(`{"apiVersion":"karpenter.sh/v1","kind":"NodePool","metadata":{"name":"x"},"spec":{"foo":1,"template":{"spec":{"nodeClassRef":{"group":"karpenter.k8s.aws","kind":"EC2NodeClass","name":"default"},"requirements":[]}}}}`)); err != nil {
		t.Fatal(err)
	}
	before := runtime.DeepCopyJSON(obj.Object)
	problems := v.Object("x", obj)
	if _, ok := find(problems, "spec.foo", SeverityError, `unknown field "spec.foo"`); !ok {
		t.Errorf("want the unknown field, got:%s", dump(problems))
	}
	if !reflect.DeepEqual(before, obj.Object) {
		t.Errorf("Object changed its input:\n%v\n%v", before, obj.Object)
	}
	if v.Object("x", nil) != nil {
		t.Error("a nil object has no problems")
	}
}

// smallCRD is a minimal CRD for tests of New.
func smallCRD(schema *apiextensionsv1.JSONSchemaProps) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.ClusterScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: schema},
			}},
		},
	}
}

func TestNew(t *testing.T) {
	object := func(props map[string]apiextensionsv1.JSONSchemaProps, rules ...apiextensionsv1.ValidationRule) *apiextensionsv1.JSONSchemaProps {
		return &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"spec": {Type: "object", Properties: props, XValidations: rules},
		}}
	}
	sizeDefault := apiextensionsv1.JSON{Raw: []byte(`"M"`)}
	good := smallCRD(object(map[string]apiextensionsv1.JSONSchemaProps{
		"size":  {Type: "string", Enum: []apiextensionsv1.JSON{{Raw: []byte(`"S"`)}, {Raw: []byte(`"M"`)}}, Default: &sizeDefault},
		"count": {Type: "integer"},
	}, apiextensionsv1.ValidationRule{Rule: "!has(self.count) || self.count < 10", Message: "count must be below 10: lower it"}))
	v, err := New([]*apiextensionsv1.CustomResourceDefinition{good})
	if err != nil {
		t.Fatal(err)
	}
	problems := validate(t, v, "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {count: 12, colour: red}\n")
	want := []string{
		`spec: Invalid value: count must be below 10: lower it; fix: lower it`,
		`spec.colour: unknown field "spec.colour"; fix: remove it, or check its spelling; see ` + "`stevedore crds`",
	}
	var got []string
	for _, p := range problems {
		got = append(got, strings.TrimPrefix(p.String(), "test.yaml#1: Widget/w: "))
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	problems = validate(t, v, "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {size: L}\n")
	if p, ok := find(problems, "spec.size", SeverityError, `Unsupported value: "L": supported values: "S", "M"`); !ok || p.Fix != "use one of: S, M" {
		t.Errorf("want an enum error, got:%s", dump(problems))
	}
	if problems := validate(t, v, "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {}\n"); len(problems) != 0 {
		t.Errorf("want the default to make the object valid, got:%s", dump(problems))
	}

	for name, crd := range map[string]*apiextensionsv1.CustomResourceDefinition{
		"CEL that does not compile": smallCRD(object(nil, apiextensionsv1.ValidationRule{Rule: "self.count <", Message: "m"})),
		"not structural":            smallCRD(&apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {}}}),
	} {
		if _, err := New([]*apiextensionsv1.CustomResourceDefinition{crd}); err == nil {
			t.Errorf("%s: New accepted a CRD the API server rejects", name)
		}
	}
}

// TestOddDocuments feeds documents of unexpected shapes through every path
// of the validator: none may panic, and each must get at least one problem.
func TestOddDocuments(t *testing.T) {
	v := testValidator(t)
	for _, doc := range []string{
		"apiVersion: 5\nkind: NodePool\n",
		"apiVersion: karpenter.sh/v1\nkind: [NodePool]\n",
		"apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: just-a-name\n",
		"apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: x, labels: [a]}\nspec: {}\n",
		"apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: x}\nspec: null\n",
		"apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: x}\nspec: text\n",
		"apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: x}\nspec: {template: [], disruption: {budgets: {nodes: 1}}}\n",
		"apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: x}\nspec: {template: {spec: {requirements: [1, null, {values: 3}], taints: [null], nodeClassRef: []}}}\n",
		"apiVersion: karpenter.sh/v1beta1\nkind: NodePool\nmetadata: {name: x}\nspec: 7\n",
		"apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: x}\nspec: {providerRef: 1, consolidation: true, ttlSecondsAfterEmpty: soon, limits: {resources: 2}}\n",
		"apiVersion: karpenter.k8s.aws/v1alpha1\nkind: AWSNodeTemplate\nmetadata: {name: x}\nspec: {subnetSelector: [a], amiSelector: 3, amiFamily: 4}\n",
		"apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata: {name: x}\nspec: {kubelet: {evictionHard: [1]}, tags: 3}\n",
		"apiVersion: v1\nkind: List\nitems: [1, {kind: Namespace}]\n",
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: 3\n",
		"42\n",
		"\"just a string\"\n",
	} {
		problems := validate(t, v, doc)
		if len(problems) == 0 {
			t.Errorf("no problem for:\n%s", doc)
		}
		for _, p := range problems {
			if p.Fix == "" || p.Message == "" {
				t.Errorf("problem without message or fix: %#v", p)
			}
		}
	}
}

// TestWith: a check added with With sees each served object with its
// defaults, its problems are reported like the validator's own, and fields
// that already have an error are left to that error.
func TestWith(t *testing.T) {
	base := testValidator(t)
	var seen []string
	check := func(gvk schema.GroupVersionKind, obj map[string]interface{}) []Problem {
		name, _, _ := unstructured.NestedString(obj, "metadata", "name")
		seen = append(seen, gvk.Kind+"/"+name)
		if gvk.Kind != "EC2NodeClass" {
			return nil
		}
		// Defaulted by the CRD: the check sees the stored object.
		tokens, _, _ := unstructured.NestedString(obj, "spec", "metadataOptions", "httpTokens")
		return []Problem{
			{Field: "spec.metadataOptions.httpTokens", Message: "is " + tokens, Fix: "leave it", Severity: SeverityWarning},
			{Field: "spec.role", Message: "checked again", Fix: "f", Severity: SeverityError},
		}
	}
	v := base.With(check)
	badRole := strings.Replace(validNodeClass, "role: KarpenterNodeRole-my-cluster", "role: ''", 1)
	problems := validate(t, v, validNodeClass+"---\n"+validNodePool+"---\n"+strings.Replace(badRole, "name: default", "name: other", 1))
	if want := []string{"EC2NodeClass/default", "NodePool/default", "EC2NodeClass/other"}; !reflect.DeepEqual(seen, want) {
		t.Errorf("the check saw %v, want %v", seen, want)
	}
	p, ok := find(problems, "spec.metadataOptions.httpTokens", SeverityWarning, "is required")
	if !ok || p.Source != "test.yaml#1" || p.Kind != "EC2NodeClass" || p.Name != "default" || p.Fix != "leave it" {
		t.Errorf("the check's problem is %+v (found %v), want it at test.yaml#1 on EC2NodeClass/default; all:%s", p, ok, dump(problems))
	}
	var roleProblems []Problem
	for _, p := range problems {
		if p.Field == "spec.role" {
			roleProblems = append(roleProblems, p)
		}
	}
	// default: the check's error; other: the schema's error only.
	if len(roleProblems) != 2 || roleProblems[0].Name != "default" || roleProblems[0].Message != "checked again" ||
		roleProblems[1].Name != "other" || roleProblems[1].Message == "checked again" {
		t.Errorf("spec.role problems:%s\nwant the check's on default and only the schema's on other", dump(roleProblems))
	}
	if errs := errorsOf(validate(t, base, validNodeClass)); len(errs) != 0 {
		t.Errorf("With changed the validator it was called on:%s", dump(errs))
	}
}
