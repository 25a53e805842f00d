package validation

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestValidBaselines checks that the objects in testdata/valid, which
// together set every field of the three CRDs, pass without any problem: the
// valid case of every schema constraint and CEL rule.
func TestValidBaselines(t *testing.T) {
	v := testValidator(t)
	problems, err := v.Paths([]string{filepath.Join("testdata", "valid")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) > 0 {
		t.Errorf("valid objects have problems:%s", dump(problems))
	}
}

// constraint is one constraint of a structural schema, at a field path in
// which "[0]" stands for any list item and "{}" for any map value.
type constraint struct {
	path string
	what string // required, type, pattern, enum, minimum, maximum, maxLength, minLength, maxItems, minItems, maxProperties, minProperties
	node *structuralschema.Structural
}

func (c constraint) String() string { return c.what + " at " + c.path }

// schemaConstraints lists every constraint of the schema under spec.
func schemaConstraints(s *structuralschema.Structural) []constraint {
	var out []constraint
	var walk func(n *structuralschema.Structural, path string)
	walk = func(n *structuralschema.Structural, path string) {
		if n == nil {
			return
		}
		if n.Type != "" || n.XIntOrString {
			out = append(out, constraint{path: path, what: "type", node: n})
		}
		if vv := n.ValueValidation; vv != nil {
			add := func(ok bool, what string) {
				if ok {
					out = append(out, constraint{path: path, what: what, node: n})
				}
			}
			add(vv.Pattern != "", "pattern")
			add(n.Type == "string" && vv.Format != "", "format")
			add(len(vv.Enum) > 0, "enum")
			add(vv.Minimum != nil, "minimum")
			add(vv.Maximum != nil, "maximum")
			add(vv.MaxLength != nil, "maxLength")
			add(vv.MinLength != nil && *vv.MinLength > 0, "minLength")
			add(vv.MaxItems != nil, "maxItems")
			add(vv.MinItems != nil && *vv.MinItems > 0, "minItems")
			add(vv.MaxProperties != nil, "maxProperties")
			add(vv.MinProperties != nil && *vv.MinProperties > 0, "minProperties")
			for _, r := range vv.Required {
				p := n.Properties[r]
				out = append(out, constraint{path: path + "." + r, what: "required", node: &p})
			}
		}
		names := make([]string, 0, len(n.Properties))
		for k := range n.Properties {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			p := n.Properties[k]
			walk(&p, path+"."+k)
		}
		walk(n.Items, path+"[0]")
		if n.AdditionalProperties != nil {
			walk(n.AdditionalProperties.Structural, path+"{}")
		}
	}
	spec := s.Properties["spec"]
	walk(&spec, "spec")
	return out
}

// baselines reads testdata/valid, by kind.
func baselines(t *testing.T) map[string][]map[string]interface{} {
	files, err := filepath.Glob(filepath.Join("testdata", "valid", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]map[string]interface{}{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range splitYAML(data) {
			v, _, err := decodeDocument(doc)
			if err != nil {
				t.Fatal(err)
			}
			obj := v.(map[string]interface{})
			kind, _ := obj["kind"].(string)
			out[kind] = append(out[kind], obj)
		}
	}
	return out
}

func toUnstructured(obj map[string]interface{}) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: obj}
}

// expand returns the concrete paths in obj that a constraint path matches,
// with every list index tried for "[0]" and every key for "{}". Each result
// holds the path for valueAt and the path the OpenAPI validator reports (map
// keys joined with dots).
func expand(obj map[string]interface{}, path string) [][2]string {
	segs := splitFieldPath(strings.ReplaceAll(path, "{}", ".{}"))
	var out [][2]string
	var walk func(cur interface{}, i int, lookup, reported string)
	walk = func(cur interface{}, i int, lookup, reported string) {
		if i == len(segs) {
			out = append(out, [2]string{lookup, reported})
			return
		}
		seg := segs[i]
		switch {
		case seg == "[0]":
			list, _ := cur.([]interface{})
			for j, e := range list {
				idx := fmt.Sprintf("[%d]", j)
				walk(e, i+1, lookup+idx, reported+idx)
			}
		case seg == "{}":
			m, _ := cur.(map[string]interface{})
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(m[k], i+1, lookup+"["+k+"]", reported+"."+k)
			}
		default:
			m, _ := cur.(map[string]interface{})
			sep := "."
			if lookup == "" {
				sep = ""
			}
			if i == len(segs)-1 {
				// The last field need not exist (required constraints).
				walk(m[seg], i+1, lookup+sep+seg, reported+sep+seg)
				return
			}
			if e, ok := m[seg]; ok {
				walk(e, i+1, lookup+sep+seg, reported+sep+seg)
			}
		}
	}
	walk(obj, 0, "", "")
	return out
}

// setAt sets the value at a path whose parent exists.
func setAt(obj map[string]interface{}, path string, value interface{}) bool {
	parent, last := parentPath(path)
	p, ok := valueAt(obj, parent)
	if !ok {
		return false
	}
	if strings.HasPrefix(last, "[") {
		key := strings.Trim(last, "[]")
		switch c := p.(type) {
		case []interface{}:
			i, err := strconv.Atoi(key)
			if err != nil || i >= len(c) {
				return false
			}
			c[i] = value
			return true
		case map[string]interface{}:
			c[key] = value
			return true
		}
		return false
	}
	m, ok := p.(map[string]interface{})
	if !ok {
		return false
	}
	m[last] = value
	return true
}

func deleteAt(obj map[string]interface{}, path string) bool {
	parent, last := parentPath(path)
	p, ok := valueAt(obj, parent)
	m, isMap := p.(map[string]interface{})
	if !ok || !isMap {
		return false
	}
	if _, ok := m[last]; !ok {
		return false
	}
	delete(m, last)
	return true
}

// violate changes obj so that it breaks the constraint at lookup, and
// returns false when it cannot.
func violate(c constraint, obj map[string]interface{}, lookup string) bool {
	cur, exists := valueAt(obj, lookup)
	if c.what == "required" {
		return deleteAt(obj, lookup)
	}
	if !exists {
		return false
	}
	vv := c.node.ValueValidation
	switch c.what {
	case "type":
		var bad interface{} = "not-the-right-type"
		switch {
		case c.node.XIntOrString:
			bad = true
		case c.node.Type == "string":
			bad = int64(12345)
		}
		return setAt(obj, lookup, bad)
	case "pattern":
		re := regexp.MustCompile(vv.Pattern)
		for _, s := range []string{"not a valid value!", "%", "x y", "-", "a/b"} {
			if !re.MatchString(s) {
				return setAt(obj, lookup, s)
			}
		}
		return false
	case "enum":
		return setAt(obj, lookup, "NotInTheEnum")
	case "format":
		return setAt(obj, lookup, "not-a-"+vv.Format)
	case "minimum":
		return setAt(obj, lookup, int64(*vv.Minimum)-1)
	case "maximum":
		return setAt(obj, lookup, int64(*vv.Maximum)+1)
	case "maxLength":
		return setAt(obj, lookup, strings.Repeat("a", int(*vv.MaxLength)+1))
	case "minLength":
		return setAt(obj, lookup, strings.Repeat("a", int(*vv.MinLength)-1))
	case "maxItems":
		list, ok := cur.([]interface{})
		if !ok || len(list) == 0 {
			return false
		}
		more := make([]interface{}, *vv.MaxItems+1)
		for i := range more {
			more[i] = runtime.DeepCopyJSONValue(list[0])
		}
		return setAt(obj, lookup, more)
	case "minItems":
		return setAt(obj, lookup, []interface{}{})
	case "maxProperties":
		m, ok := cur.(map[string]interface{})
		if !ok || len(m) == 0 {
			return false
		}
		var first interface{}
		for _, v := range m {
			first = v
			break
		}
		more := map[string]interface{}{}
		for i := int64(0); i <= *vv.MaxProperties; i++ {
			more[fmt.Sprintf("example.com/key-%d", i)] = runtime.DeepCopyJSONValue(first)
		}
		return setAt(obj, lookup, more)
	case "minProperties":
		return setAt(obj, lookup, map[string]interface{}{})
	}
	return false
}

// TestSchemaConstraints breaks every constraint of the three CRDs' schemas,
// one at a time, in a copy of a valid object that sets the field, and checks
// that the validator reports an error at the field's path. A required field
// with a default is the exception: the API server fills it in, so the object
// stays valid.
func TestSchemaConstraints(t *testing.T) {
	v := testValidator(t)
	base := baselines(t)
	count := 0
	for gvk, sk := range v.served {
		objs := base[gvk.Kind]
		if len(objs) == 0 {
			t.Errorf("no valid %s in testdata/valid", gvk.Kind)
			continue
		}
		for _, c := range schemaConstraints(sk.structural) {
			t.Run(gvk.Kind+"/"+c.String(), func(t *testing.T) {
				for _, b := range objs {
					for _, paths := range expand(b, c.path) {
						obj := runtime.DeepCopyJSON(b)
						lookup, reported := paths[0], paths[1]
						if !violate(c, obj, lookup) {
							continue
						}
						count++
						problems := v.Object("test", toUnstructured(obj))
						if c.what == "required" && c.node.Default.Object != nil {
							if errs := errorsOf(problems); len(errs) > 0 {
								t.Errorf("a required field with a default may be left out, but:%s", dump(errs))
							}
							return
						}
						for _, p := range problems {
							if p.Severity == SeverityError && p.Field == reported {
								if p.Fix == "" {
									t.Errorf("no fix for %s", p)
								}
								if testing.Verbose() {
									t.Log(p)
								}
								return
							}
						}
						t.Errorf("no error at %s after breaking the %s constraint; got:%s", reported, c.what, dump(problems))
						return
					}
				}
				t.Errorf("no object in testdata/valid sets %s, so the constraint is untested", c.path)
			})
		}
	}
	t.Logf("%d schema constraints broken and detected", count)
}
