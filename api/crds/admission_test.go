package crds_test

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"
)

// admitter checks objects of one kind the way the API server does on create
// and update: it drops unknown fields, applies defaults, then runs the
// OpenAPI schema and the CEL rules.
type admitter struct {
	structural *structuralschema.Structural
	schema     validation.SchemaValidator
	rules      *cel.Validator
}

func newAdmitter(t *testing.T, kind string) *admitter {
	t.Helper()
	crd := crdFor(t, kind)
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(crd.Spec.Versions[0].Schema.OpenAPIV3Schema, internal, nil); err != nil {
		t.Fatal(err)
	}
	s, err := structuralschema.NewStructural(internal)
	if err != nil {
		t.Fatal(err)
	}
	sv, _, err := validation.NewSchemaValidator(internal)
	if err != nil {
		t.Fatal(err)
	}
	return &admitter{structural: s, schema: sv, rules: cel.NewValidator(s, true, celconfig.PerCallLimit)}
}

// admit defaults obj in place and validates it, against old when old is not
// nil (an update). It returns the fields the API server would drop as unknown
// and the validation errors.
func (a *admitter) admit(obj, old map[string]any) (unknown []string, errs field.ErrorList) {
	unknown = pruning.PruneWithOptions(obj, a.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj, a.structural)
	structuraldefaulting.Default(obj, a.structural)
	if old == nil {
		errs = validation.ValidateCustomResource(nil, obj, a.schema)
	} else {
		errs = validation.ValidateCustomResourceUpdate(nil, obj, old, a.schema)
	}
	// The API server checks that list-type set and map lists hold no
	// duplicates (budget reasons are a set).
	errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, a.structural, obj)...)
	var oldObj any
	if old != nil {
		oldObj = old
	}
	celErrs, _ := a.rules.Validate(context.Background(), nil, a.structural, obj, oldObj, celconfig.RuntimeCELCostBudget)
	return unknown, append(errs, celErrs...)
}

// toMap decodes YAML or JSON into an unstructured object, with whole numbers
// as int64 as the API server decodes them.
func toMap(t *testing.T, doc []byte) map[string]any {
	t.Helper()
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := utiljson.Unmarshal(j, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// mergePatch applies a JSON merge patch (RFC 7386) to dst.
func mergePatch(dst, patch map[string]any) {
	for k, v := range patch {
		if v == nil {
			delete(dst, k)
			continue
		}
		pm, patchIsMap := v.(map[string]any)
		dm, dstIsMap := dst[k].(map[string]any)
		if patchIsMap && dstIsMap {
			mergePatch(dm, pm)
			continue
		}
		dst[k] = v
	}
}

const (
	baseNodePool = `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: test}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
`
	baseNodeClaim = `
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata: {name: test}
spec:
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  requirements:
  - {key: karpenter.sh/nodepool, operator: In, values: [default]}
  - {key: node.kubernetes.io/instance-type, operator: In, values: [m6i.large, m6i.xlarge]}
`
	baseEC2NodeClass = `
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: test}
spec:
  role: NodeRole
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: my-cluster}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: my-cluster}}]
`
)

var bases = map[string]string{"NodePool": baseNodePool, "NodeClaim": baseNodeClaim, "EC2NodeClass": baseEC2NodeClass}

type admissionCase struct {
	name  string
	kind  string
	patch string // merge patch applied to the base object
	old   string // for an update: merge patch that gives the old object; empty for a create
	want  string // text that an error must contain; empty if the object is valid
}

func runAdmissionCases(t *testing.T, cases []admissionCase) {
	t.Helper()
	admitters := map[string]*admitter{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, ok := admitters[tc.kind]
			if !ok {
				a = newAdmitter(t, tc.kind)
				admitters[tc.kind] = a
			}
			obj := toMap(t, []byte(bases[tc.kind]))
			if tc.patch != "" {
				mergePatch(obj, toMap(t, []byte(tc.patch)))
			}
			var old map[string]any
			if tc.old != "" {
				old = toMap(t, []byte(bases[tc.kind]))
				mergePatch(old, toMap(t, []byte(tc.old)))
				a.admit(old, nil)
			}
			unknown, errs := a.admit(obj, old)
			if len(unknown) > 0 {
				t.Errorf("unknown fields would be dropped: %v", unknown)
			}
			if tc.want == "" {
				for _, e := range errs {
					t.Errorf("unexpected error: %v", e)
				}
				return
			}
			for _, e := range errs {
				if strings.Contains(e.Error(), tc.want) {
					return
				}
			}
			t.Errorf("want an error containing %q, got %v", tc.want, errs)
		})
	}
}
