package validation

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// fixFor derives the fix for a problem the server pipeline reported.
func (sk *servedKind) fixFor(c checked, res serverResult) string {
	if c.fix != "" {
		return c.fix
	}
	if c.unknownField != "" {
		return sk.unknownFieldFix(c.unknownField)
	}
	e := c.err
	if strings.HasPrefix(e.Field, "metadata") {
		if f := metadataFix(e); f != "" {
			return f
		}
	}
	if f := sk.celFix(e.Detail); f != "" {
		return f
	}
	if f := c.fieldOf(); f != "" && f != e.Field && anyOfRE.MatchString(e.Detail) {
		actual, _ := valueAt(res.original, f)
		return typeFix(schemaAt(sk.structural, f), actual)
	}
	node := schemaAt(sk.structural, e.Field)
	switch e.Type {
	case field.ErrorTypeRequired:
		return requiredFix(e.Field, node)
	case field.ErrorTypeNotSupported:
		return enumFix(node, e.BadValue, e.Detail)
	case field.ErrorTypeTooLong:
		if node != nil && node.ValueValidation != nil && node.ValueValidation.MaxLength != nil {
			return fmt.Sprintf("shorten it to at most %d characters", *node.ValueValidation.MaxLength)
		}
		return "shorten it"
	case field.ErrorTypeTooMany:
		if node != nil && node.ValueValidation != nil {
			if n := node.ValueValidation.MaxItems; n != nil {
				return fmt.Sprintf("remove entries: at most %d are allowed", *n)
			}
			if n := node.ValueValidation.MaxProperties; n != nil {
				return fmt.Sprintf("remove entries: at most %d are allowed", *n)
			}
		}
		return "remove entries"
	case field.ErrorTypeTypeInvalid:
		actual, _ := valueAt(res.original, e.Field)
		return typeFix(node, actual)
	case field.ErrorTypeDuplicate:
		return "remove the duplicate entry"
	case field.ErrorTypeForbidden:
		return "remove it"
	case field.ErrorTypeInvalid:
		return invalidFix(e, node, res)
	}
	return "change the value so that it passes the check in the message"
}

// unknownFieldFix is the fix for a field the schema does not have.
func (sk *servedKind) unknownFieldFix(path string) string {
	parent, last := parentPath(path)
	if parent == "metadata" {
		return "remove it; metadata accepts name, generateName, labels, annotations, finalizers and ownerReferences"
	}
	if node := schemaAt(sk.structural, parent); node != nil && len(node.Properties) > 0 {
		names := make([]string, 0, len(node.Properties))
		for k := range node.Properties {
			names = append(names, k)
		}
		sort.Strings(names)
		if guess := closest(last, names); guess != "" {
			return fmt.Sprintf("rename it to %s, or remove it; see `stevedore crds`", guess)
		}
	}
	return "remove it, or check its spelling; see `stevedore crds`"
}

func metadataFix(e *field.Error) string {
	switch {
	case e.Field == "metadata.name" && e.Type == field.ErrorTypeRequired:
		return "set metadata.name, for example name: default"
	case e.Field == "metadata.name" || e.Field == "metadata.generateName":
		return "use at most 253 lowercase letters, digits, '-' and '.', starting and ending with a letter or digit, for example default"
	case strings.HasPrefix(e.Field, "metadata.labels"):
		return "use label keys of the form [prefix/]name and values of at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit"
	case strings.HasPrefix(e.Field, "metadata.annotations"):
		return "use annotation keys of the form [prefix/]name and keep all annotations under 256 KiB"
	case strings.HasPrefix(e.Field, "metadata.finalizers"):
		return "use a domain-qualified finalizer name such as example.com/cleanup"
	case e.Field == "metadata.resourceVersion":
		return "remove metadata.resourceVersion (and uid, creationTimestamp, managedFields) from the manifest"
	case e.Field == "metadata.namespace":
		return "remove metadata.namespace"
	case e.Field == "metadata" && strings.Contains(e.Detail, "cannot unmarshal"):
		return "write metadata as a mapping of name, labels (string to string), annotations (string to string)"
	}
	return ""
}

func requiredFix(path string, node *structuralschema.Structural) string {
	parent, last := parentPath(path)
	where := parent
	if where == "" {
		where = "the object"
	}
	fix := fmt.Sprintf("add field %q to %s", last, where)
	if vals := enumValues(node); len(vals) > 0 {
		return fix + ", one of: " + strings.Join(vals, ", ")
	}
	if ex := exampleFor(path, node); ex != "" {
		return fmt.Sprintf("%s, for example %s: %s", fix, last, ex)
	}
	return fix
}

func enumValues(node *structuralschema.Structural) []string {
	if node == nil || node.ValueValidation == nil {
		return nil
	}
	var out []string
	for _, v := range node.ValueValidation.Enum {
		if s, ok := v.Object.(string); ok {
			out = append(out, s)
		} else {
			b, _ := json.Marshal(v.Object)
			out = append(out, string(b))
		}
	}
	return out
}

var supportedValuesRE = regexp.MustCompile(`"([^"]*)"`)

func enumFix(node *structuralschema.Structural, bad interface{}, detail string) string {
	vals := enumValues(node)
	if len(vals) == 0 {
		// Fall back to the values the server listed.
		if i := strings.Index(detail, "supported values:"); i >= 0 {
			for _, m := range supportedValuesRE.FindAllStringSubmatch(detail[i:], -1) {
				vals = append(vals, m[1])
			}
		}
	}
	if len(vals) == 0 {
		return "use one of the supported values"
	}
	fix := "use one of: " + strings.Join(vals, ", ")
	if s, ok := bad.(string); ok {
		if guess := closest(s, vals); guess != "" {
			fix += fmt.Sprintf(" (did you mean %s?)", guess)
		}
	}
	return fix
}

// typeFix is the fix for a value of the wrong type; actual is the value as
// written.
func typeFix(node *structuralschema.Structural, actual interface{}) string {
	want := ""
	if node != nil {
		want = node.Type
		if node.XIntOrString {
			want = "integer or string"
		}
	}
	if _, ok := actual.(bool); ok && want != "boolean" {
		return "quote the value: unquoted true, false, yes, no, y, n, on and off are booleans in YAML"
	}
	switch want {
	case "string":
		switch v := actual.(type) {
		case int64, float64:
			return fmt.Sprintf("quote the value: write \"%v\" instead of %v", v, v)
		}
		return "write a string"
	case "integer", "number":
		if s, ok := actual.(string); ok {
			if _, err := strconv.ParseFloat(s, 64); err == nil {
				return fmt.Sprintf("remove the quotes: write %s instead of %q", s, s)
			}
		}
		return "write a number without quotes"
	case "boolean":
		if s, ok := actual.(string); ok && (s == "true" || s == "false") {
			return fmt.Sprintf("remove the quotes: write %s instead of %q", s, s)
		}
		return "write true or false without quotes"
	case "array":
		return "write a list (YAML lines starting with \"- \"), not a single value"
	case "object":
		return "write a mapping of fields (key: value lines), not a single value or a list"
	case "":
		return "write a value of the type the schema expects; see `stevedore crds`"
	}
	return "write a value of type " + want
}

var (
	patternRE   = regexp.MustCompile(`should match '(.*)'$`)
	minLenRE    = regexp.MustCompile(`should be at least (\d+) chars long`)
	maxLenRE    = regexp.MustCompile(`should be at most (\d+) chars long`)
	minItemsRE  = regexp.MustCompile(`should have at least (\d+) items`)
	minPropsRE  = regexp.MustCompile(`should have at least (\d+) properties`)
	maxPropsRE  = regexp.MustCompile(`should have at most (\d+) properties`)
	boundRE     = regexp.MustCompile(`should be (greater|less) than( or equal to)? (-?[0-9.e+]+)`)
	formatRE    = regexp.MustCompile(`must be of type (\S+)`)
	notFormatRE = regexp.MustCompile(`in body must be of format (\S+)`)
)

func invalidFix(e *field.Error, node *structuralschema.Structural, res serverResult) string {
	d := e.Detail
	_, last := parentPath(e.Field)
	if m := patternRE.FindStringSubmatch(d); m != nil {
		fix := "write a value that matches " + m[1]
		if ex := exampleFor(e.Field, node); ex != "" {
			fix += ", for example " + ex
		}
		return fix
	}
	if m := minLenRE.FindStringSubmatch(d); m != nil {
		if m[1] == "1" {
			return fmt.Sprintf("set %s to a non-empty value", last)
		}
		return fmt.Sprintf("use at least %s characters", m[1])
	}
	if m := maxLenRE.FindStringSubmatch(d); m != nil {
		return fmt.Sprintf("shorten it to at most %s characters", m[1])
	}
	if m := minItemsRE.FindStringSubmatch(d); m != nil {
		return fmt.Sprintf("add at least %s item(s) to %s", m[1], last)
	}
	if m := minPropsRE.FindStringSubmatch(d); m != nil {
		return fmt.Sprintf("add at least %s entry (or remove %s)", m[1], last)
	}
	if m := maxPropsRE.FindStringSubmatch(d); m != nil {
		return fmt.Sprintf("remove entries: at most %s are allowed", m[1])
	}
	if boundRE.MatchString(d) {
		return rangeFix(node, d)
	}
	if m := notFormatRE.FindStringSubmatch(d); m != nil {
		return "write a valid " + m[1]
	}
	if m := formatRE.FindStringSubmatch(d); m != nil {
		switch m[1] {
		case "string", "integer", "number", "boolean", "object", "array":
			actual, _ := valueAt(res.original, e.Field)
			return typeFix(node, actual)
		case "date-time":
			return `write a quoted RFC 3339 time, for example "2025-01-01T00:00:00Z"`
		}
		return "write a valid " + m[1]
	}
	if strings.Contains(d, "shouldn't contain duplicates") {
		return "remove the duplicate entries"
	}
	if strings.HasPrefix(d, "some validation rules were not checked") {
		return "correct the other errors; the API server checks the remaining rules once they pass"
	}
	if strings.HasPrefix(d, "failed rule: ") {
		return fmt.Sprintf("change %s so that the rule %s holds", orObject(e.Field), strings.TrimPrefix(d, "failed rule: "))
	}
	return "change the value so that it passes the check in the message"
}

func orObject(p string) string {
	if p == "" || p == "<nil>" {
		return "the object"
	}
	return p
}

func rangeFix(node *structuralschema.Structural, detail string) string {
	if node != nil && node.ValueValidation != nil {
		vv := node.ValueValidation
		switch {
		case vv.Minimum != nil && vv.Maximum != nil:
			return fmt.Sprintf("use a value from %s to %s", num(*vv.Minimum), num(*vv.Maximum))
		case vv.Minimum != nil:
			return fmt.Sprintf("use a value of at least %s", num(*vv.Minimum))
		case vv.Maximum != nil:
			return fmt.Sprintf("use a value of at most %s", num(*vv.Maximum))
		}
	}
	m := boundRE.FindStringSubmatch(detail)
	if m[1] == "greater" {
		return "use a value of at least " + m[3]
	}
	return "use a value of at most " + m[3]
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// exampleFor returns an example value for a field, or "".
func exampleFor(path string, node *structuralschema.Structural) string {
	segs := splitFieldPath(path)
	name := func(i int) string { // i-th segment from the end, skipping subscripts
		for j := len(segs) - 1; j >= 0; j-- {
			if strings.HasPrefix(segs[j], "[") {
				continue
			}
			if i == 0 {
				return segs[j]
			}
			i--
		}
		return ""
	}
	last, parent := name(0), name(1)
	switch parent {
	case "budgets":
		switch last {
		case "nodes":
			return `"10%" or "5"`
		case "duration":
			return "8h or 1h30m"
		case "schedule":
			return `"0 9 * * mon-fri" or "@daily"`
		}
	case "amiSelectorTerms":
		switch last {
		case "id":
			return "ami-0123456789abcdef0"
		case "alias":
			return "al2023@latest"
		case "owner":
			return "amazon or 123456789012"
		}
	case "subnetSelectorTerms":
		if last == "id" {
			return "subnet-0123456789abcdef0"
		}
	case "securityGroupSelectorTerms":
		if last == "id" {
			return "sg-0123456789abcdef0"
		}
	case "capacityReservationSelectorTerms":
		switch last {
		case "id":
			return "cr-0123456789abcdef0"
		case "ownerID":
			return "123456789012"
		}
	case "placementGroupSelector":
		if last == "id" {
			return "pg-0123456789abcdef0"
		}
	case "nodeClassRef":
		switch last {
		case "group":
			return "karpenter.k8s.aws"
		case "kind":
			return "EC2NodeClass"
		case "name":
			return "default"
		}
	case "limits":
		return `"1000" (cpu) or 4000Gi (memory)`
	case "labels":
		return "my-team"
	case "requirements":
		switch last {
		case "key":
			return "node.kubernetes.io/instance-type"
		case "values":
			return "m6i.large, spot or 5"
		}
	case "taints", "startupTaints":
		switch last {
		case "key":
			return "example.com/dedicated"
		case "effect":
			return "NoSchedule"
		}
	}
	switch last {
	case "consolidateAfter":
		return "30s, 10m or Never"
	case "expireAfter":
		return "720h or Never"
	case "terminationGracePeriod":
		return "24h"
	case "volumeSize":
		return "100Gi"
	case "role":
		return "KarpenterNodeRole-my-cluster"
	case "weight":
		return "10"
	case "requirements":
		return "[{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]"
	case "subnetSelectorTerms", "securityGroupSelectorTerms":
		return "[{tags: {karpenter.sh/discovery: my-cluster}}]"
	case "amiSelectorTerms":
		return "[{alias: al2023@latest}]"
	case "nodeClassRef":
		return "{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}"
	case "price":
		return `"0.25"`
	case "priceAdjustment":
		return `"+0.1", "-15%" or "+10%"`
	}
	if node != nil && node.Default.Object != nil {
		switch v := node.Default.Object.(type) {
		case string:
			return v
		case int64, float64, bool:
			return fmt.Sprint(v)
		}
	}
	return ""
}
