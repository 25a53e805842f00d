package validation

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// builtinScheme knows the kinds built into Kubernetes: client-go's, and
// apiextensions.k8s.io/v1 CustomResourceDefinition, which client-go leaves out.
var builtinScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	return s
}()

// builtinDecoder decodes the built-in kinds with the API server's strict
// field validation: unknown and duplicate fields are errors.
var builtinDecoder = kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, builtinScheme, builtinScheme, kjson.SerializerOptions{Strict: true})

// isBuiltin reports whether the kind is one built into Kubernetes.
func isBuiltin(gvk schema.GroupVersionKind) bool {
	return builtinScheme.Recognizes(gvk)
}

var (
	strictFieldRE = regexp.MustCompile(`^(unknown|duplicate) field "(.*)"$`)
	goFieldRE     = regexp.MustCompile(`Go struct field [A-Za-z0-9_]+\.(\S+) of type (\S+)`)
)

// checkBuiltin strictly decodes an object of a built-in kind.
func checkBuiltin(gvk schema.GroupVersionKind, obj map[string]interface{}) []Problem {
	data, err := json.Marshal(obj)
	if err != nil {
		return []Problem{{Message: err.Error(), Fix: "write the object as plain YAML or JSON", Severity: SeverityError}}
	}
	_, _, err = builtinDecoder.Decode(data, nil, nil)
	if err == nil {
		return checkPodResources(gvk, obj)
	}
	explain := strings.ToLower(gvk.Kind)
	if strict, ok := runtime.AsStrictDecodingError(err); ok {
		var out []Problem
		for _, e := range strict.Errors() {
			msg := e.Error()
			p := Problem{Message: msg, Severity: SeverityError, Fix: "correct the field; see `kubectl explain " + explain + "`"}
			if m := strictFieldRE.FindStringSubmatch(msg); m != nil {
				p.Field = m[2]
				if m[1] == "unknown" {
					p.Fix = fmt.Sprintf("remove it, or check its spelling; see `kubectl explain %s.%s`", explain, explainPath(m[2]))
				} else {
					p.Fix = "keep only one of the duplicate keys"
				}
			}
			out = append(out, p)
		}
		return out
	}
	p := Problem{
		Message:  fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, gvk.Kind, err),
		Fix:      "correct the value; see `kubectl explain " + explain + "`",
		Severity: SeverityError,
	}
	if m := goFieldRE.FindStringSubmatch(err.Error()); m != nil {
		p.Field = m[1]
		p.Fix = fmt.Sprintf("write a value of type %s; see `kubectl explain %s.%s`", m[2], explain, explainPath(m[1]))
	}
	return []Problem{p}
}

// explainPath turns a field path into the form kubectl explain takes.
func explainPath(p string) string {
	segs := splitFieldPath(p)
	var out []string
	for _, s := range segs {
		if !strings.HasPrefix(s, "[") {
			out = append(out, s)
		}
	}
	return strings.Join(out, ".")
}
