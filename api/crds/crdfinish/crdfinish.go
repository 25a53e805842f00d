// Package crdfinish adds to the CRDs that controller-gen writes the schema
// constraints that markers cannot express: constraints on fields of types
// from other modules. Karpenter's CRDs check the taints' keys, values and
// effects (core/v1 Taint, which has no such markers) with OpenAPI patterns
// and an enum on the taint's own fields; stevedore's do the same, so that
// invalid taints are rejected at the same field paths, and without CEL,
// whose cost on these unbounded strings the API server would not accept.
//
// hack/generate.sh runs it on the generated files; the test that checks that
// the committed CRDs are current does too.
package crdfinish

import (
	"bytes"
	"fmt"
	"os"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// qualifiedName is the pattern of a Kubernetes qualified name (an optional
// DNS subdomain prefix and '/', then a name of at most letters, digits, '-',
// '_' and '.', starting and ending with a letter or digit). Karpenter uses
// it for taint keys and, unlike Kubernetes itself, for taint values too.
const qualifiedName = `^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\/))?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`

// taintEffects are the effects a taint may have.
var taintEffects = []string{"NoSchedule", "PreferNoSchedule", "NoExecute"}

// File finishes the CRD in the YAML file at path, in place.
func File(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := Bytes(data)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, out, 0o644)
}

// Bytes finishes one CRD in YAML, as controller-gen writes it, and returns
// it in the same form.
func Bytes(data []byte) ([]byte, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(data, crd); err != nil {
		return nil, err
	}
	for i := range crd.Spec.Versions {
		if s := crd.Spec.Versions[i].Schema; s != nil && s.OpenAPIV3Schema != nil {
			walk(s.OpenAPIV3Schema)
		}
	}
	out, err := yaml.Marshal(crd)
	if err != nil {
		return nil, err
	}
	// controller-gen leaves out the status of the CRD object, which
	// marshalling the typed object writes last.
	if i := bytes.Index(out, []byte("\nstatus:\n")); i >= 0 {
		out = out[:i+1]
	}
	return append([]byte("---\n"), out...), nil
}

func walk(s *apiextensionsv1.JSONSchemaProps) {
	for name, p := range s.Properties {
		if (name == "taints" || name == "startupTaints") && p.Items != nil && p.Items.Schema != nil {
			finishTaint(p.Items.Schema)
		}
		walk(&p)
		s.Properties[name] = p
	}
	if s.Items != nil && s.Items.Schema != nil {
		walk(s.Items.Schema)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		walk(s.AdditionalProperties.Schema)
	}
}

func finishTaint(item *apiextensionsv1.JSONSchemaProps) {
	if key, ok := item.Properties["key"]; ok {
		one := int64(1)
		key.MinLength = &one
		key.Pattern = qualifiedName
		item.Properties["key"] = key
	}
	if value, ok := item.Properties["value"]; ok {
		value.Pattern = qualifiedName
		item.Properties["value"] = value
	}
	if effect, ok := item.Properties["effect"]; ok {
		effect.Enum = nil
		for _, e := range taintEffects {
			effect.Enum = append(effect.Enum, apiextensionsv1.JSON{Raw: []byte(`"` + e + `"`)})
		}
		item.Properties["effect"] = effect
	}
}
