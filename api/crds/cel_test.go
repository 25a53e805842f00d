package crds_test

import (
	"context"
	"fmt"
	"sort"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/stevedore-autoscaler/stevedore/api/crds"
)

// TestCRDsPassAPIServerValidation runs the checks that the API server runs
// when a CRD is created: structural schema, valid defaults, CEL rules that
// compile, and CEL cost within the per-rule and per-CRD budgets.
func TestCRDsPassAPIServerValidation(t *testing.T) {
	all, err := crds.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range all {
		t.Run(crd.Name, func(t *testing.T) {
			v1 := crd.DeepCopy()
			apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(v1)
			internal := &apiextensions.CustomResourceDefinition{}
			if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(v1, internal, nil); err != nil {
				t.Fatal(err)
			}
			for _, e := range crdvalidation.ValidateCustomResourceDefinition(context.Background(), internal) {
				t.Errorf("the API server would reject %s: %v", crd.Name, e)
			}
		})
	}
}

// compiledRule is one x-kubernetes-validations rule with its estimated cost:
// the cost of one evaluation times the most times it can be evaluated in one
// object.
type compiledRule struct {
	path, rule, message string
	cost                uint64
}

// TestCELRulesCompile compiles every x-kubernetes-validations rule of every
// CRD on its own and checks that it compiles, has a message, and that its
// estimated cost fits the API server's budgets. Run with -v to see the
// costs.
func TestCELRulesCompile(t *testing.T) {
	all, err := crds.All()
	if err != nil {
		t.Fatal(err)
	}
	envSet := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
	for _, crd := range all {
		t.Run(crd.Name, func(t *testing.T) {
			s := structural(t, crd)
			var rules []compiledRule
			one := uint64(1)
			walkRules(t, s, model.SchemaDeclType(s, true), "", &one, envSet, &rules)
			if len(rules) == 0 {
				t.Fatal("no CEL rules found")
			}
			var total uint64
			for _, r := range rules {
				if r.message == "" {
					t.Errorf("%s: rule %q has no message telling the user what to fix", r.path, r.rule)
				}
				if r.cost > crdvalidation.StaticEstimatedCostLimit {
					t.Errorf("%s: rule %q costs %d, over the per-rule limit %d", r.path, r.rule, r.cost, crdvalidation.StaticEstimatedCostLimit)
				}
				total += r.cost
				t.Logf("cost %10d  %s: %s", r.cost, r.path, r.rule)
			}
			if total > crdvalidation.StaticEstimatedCRDCostLimit {
				t.Errorf("total CEL cost %d is over the per-CRD limit %d", total, crdvalidation.StaticEstimatedCRDCostLimit)
			}
			t.Logf("%d rules, total estimated cost %d (limit %d)", len(rules), total, crdvalidation.StaticEstimatedCRDCostLimit)
		})
	}
}

// walkRules compiles the rules at s and below. decl is the CEL type of s,
// derived from the root so that sizes are estimated as the API server does.
// cardinality is how many times s can occur in one object, or nil if that is
// unbounded.
func walkRules(t *testing.T, s *structuralschema.Structural, decl *apiservercel.DeclType, path string, cardinality *uint64, envSet *environment.EnvSet, out *[]compiledRule) {
	t.Helper()
	if s == nil {
		return
	}
	if len(s.XValidations) > 0 {
		if decl == nil {
			t.Fatalf("%s: no CEL type for a schema with rules", path)
		}
		results, err := cel.Compile(s, decl, celconfig.PerCallLimit, envSet, cel.NewExpressionsEnvLoader())
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for i, r := range results {
			rule := s.XValidations[i]
			if r.Error != nil {
				t.Errorf("%s: rule %q does not compile: %v", path, rule.Rule, r.Error)
				continue
			}
			times := r.MaxCardinality
			if cardinality != nil {
				times = *cardinality
			}
			*out = append(*out, compiledRule{path: orRoot(path), rule: rule.Rule, message: rule.Message, cost: saturatingMul(r.MaxCost, times)})
		}
	}
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		prop := s.Properties[name]
		walkRules(t, &prop, fieldType(decl, name), path+"."+name, cardinality, envSet, out)
	}
	if s.Items != nil {
		walkRules(t, s.Items, elemType(decl), path+"[*]", scale(cardinality, s.ValueValidation, true), envSet, out)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Structural != nil {
		walkRules(t, s.AdditionalProperties.Structural, elemType(decl), path+"[*]", scale(cardinality, s.ValueValidation, false), envSet, out)
	}
}

func orRoot(path string) string {
	if path == "" {
		return "<root>"
	}
	return path
}

func fieldType(decl *apiservercel.DeclType, name string) *apiservercel.DeclType {
	if decl == nil || decl.Fields == nil {
		return nil
	}
	if f, ok := decl.Fields[name]; ok {
		return f.Type
	}
	if escaped, ok := apiservercel.Escape(name); ok {
		if f, ok := decl.Fields[escaped]; ok {
			return f.Type
		}
	}
	return nil
}

func elemType(decl *apiservercel.DeclType) *apiservercel.DeclType {
	if decl == nil {
		return nil
	}
	return decl.ElemType
}

// scale multiplies the cardinality by the list's maxItems or the map's
// maxProperties; without one, the cardinality becomes unbounded (nil).
func scale(cardinality *uint64, v *structuralschema.ValueValidation, list bool) *uint64 {
	if cardinality == nil || v == nil {
		return nil
	}
	limit := v.MaxProperties
	if list {
		limit = v.MaxItems
	}
	if limit == nil {
		return nil
	}
	n := saturatingMul(*cardinality, uint64(*limit))
	return &n
}

func saturatingMul(a, b uint64) uint64 {
	if a != 0 && b > ^uint64(0)/a {
		return ^uint64(0)
	}
	return a * b
}

// structural returns the structural schema of the CRD's only version.
func structural(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) *structuralschema.Structural {
	t.Helper()
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(crd.Spec.Versions[0].Schema.OpenAPIV3Schema, internal, nil); err != nil {
		t.Fatal(err)
	}
	s, err := structuralschema.NewStructural(internal)
	if err != nil {
		t.Fatalf("%s: %v", crd.Name, err)
	}
	return s
}

// crdFor returns the CRD that serves kind.
func crdFor(t *testing.T, kind string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	all, err := crds.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range all {
		if crd.Spec.Names.Kind == kind {
			return crd
		}
	}
	t.Fatal(fmt.Sprintf("no CRD serves kind %s", kind))
	return nil
}
