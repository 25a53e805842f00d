package validation

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// This file holds what stevedore knows about the Karpenter APIs that came
// before v1: the kinds that were replaced, the versions that are no longer
// served, and the fields that moved. Each entry names the v1 replacement and,
// where the old value determines it, the exact v1 value.

// aliasFamilies maps amiFamily values to their amiSelectorTerms alias prefix.
var aliasFamilies = map[string]string{
	"AL2":          "al2",
	"AL2023":       "al2023",
	"Bottlerocket": "bottlerocket",
	"Windows2019":  "windows2019",
	"Windows2022":  "windows2022",
	"Windows2025":  "windows2025",
}

// legacyVersions are the pre-v1 versions of served kinds. Objects at these
// versions are checked as if they were v1, after a problem that asks for the
// new apiVersion.
var legacyVersions = map[schema.GroupVersionKind]bool{
	{Group: groupCore, Version: "v1beta1", Kind: kindNodePool}:    true,
	{Group: groupCore, Version: "v1beta1", Kind: kindNodeClaim}:   true,
	{Group: groupAWS, Version: "v1beta1", Kind: kindEC2NodeClass}: true,
}

// legacyFieldFix returns the fix for an unknown field of a v1 object when the
// field is one that older APIs had. original is the object as written.
func legacyFieldFix(kind, path string, original map[string]interface{}) (string, bool) {
	value, _ := valueAt(original, path)
	switch kind {
	case kindNodePool:
		switch path {
		case "spec.ttlSecondsAfterEmpty":
			return fmt.Sprintf("replace it with spec.disruption.consolidationPolicy: WhenEmpty and spec.disruption.consolidateAfter: %s", secondsDuration(value, "30s")), true
		case "spec.ttlSecondsUntilExpired":
			return fmt.Sprintf("replace it with spec.template.spec.expireAfter: %s", secondsDuration(value, "720h")), true
		case "spec.disruption.expireAfter":
			return fmt.Sprintf("move it to spec.template.spec.expireAfter: %s", stringOr(value, "720h")), true
		case "spec.consolidation":
			return consolidationFix(value), true
		case "spec.provider":
			return "move these settings into an EC2NodeClass and point spec.template.spec.nodeClassRef at it ({group: karpenter.k8s.aws, kind: EC2NodeClass, name: <name>})", true
		case "spec.providerRef":
			return fmt.Sprintf("replace it with spec.template.spec.nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: %s}", refName(value)), true
		case "spec.requirements":
			return "move it to spec.template.spec.requirements", true
		case "spec.labels":
			return "move it to spec.template.metadata.labels", true
		case "spec.annotations":
			return "move it to spec.template.metadata.annotations", true
		case "spec.taints":
			return "move it to spec.template.spec.taints", true
		case "spec.startupTaints":
			return "move it to spec.template.spec.startupTaints", true
		case "spec.kubeletConfiguration", "spec.template.spec.kubelet":
			return kubeletFix(original, "spec.template.spec.nodeClassRef"), true
		case "spec.template.spec.nodeClassRef.apiVersion":
			return nodeClassRefAPIVersionFix(value), true
		}
	case kindNodeClaim:
		switch path {
		case "spec.kubelet":
			return kubeletFix(original, "spec.nodeClassRef"), true
		case "spec.nodeClassRef.apiVersion":
			return nodeClassRefAPIVersionFix(value), true
		}
	case kindEC2NodeClass:
		switch path {
		case "spec.subnetSelector":
			return "replace it with spec.subnetSelectorTerms: " + selectorTerms(value, "subnet"), true
		case "spec.securityGroupSelector":
			return "replace it with spec.securityGroupSelectorTerms: " + selectorTerms(value, "securityGroup"), true
		case "spec.amiSelector":
			return "replace it with spec.amiSelectorTerms: " + selectorTerms(value, "ami"), true
		case "spec.launchTemplate":
			return launchTemplateFix, true
		}
	}
	return "", false
}

const launchTemplateFix = "remove it: launch templates are generated; express their settings with EC2NodeClass fields (amiSelectorTerms, userData, blockDeviceMappings, metadataOptions, securityGroupSelectorTerms, tags)"

// legacyValueFix returns a migration fix for a schema error whose cause is a
// value or shape that older APIs accepted.
func legacyValueFix(kind string, c checked, original, object map[string]interface{}) (string, bool) {
	e := c.err
	if e == nil {
		return "", false
	}
	switch kind {
	case kindNodePool:
		if e.Field == "spec.disruption.consolidationPolicy" && e.BadValue == "WhenUnderutilized" {
			return "use WhenEmptyOrUnderutilized; WhenUnderutilized was renamed in v1", true
		}
		if strings.HasPrefix(e.Field, "spec.limits.resources") {
			return "move the entries of spec.limits.resources up into spec.limits, for example spec.limits.cpu: \"1000\"", true
		}
		if e.Field == "spec.template.spec.nodeClassRef.group" || e.Field == "spec.template.spec.nodeClassRef.kind" {
			if v, ok := valueAt(original, "spec.template.spec.nodeClassRef.apiVersion"); ok {
				return nodeClassRefAPIVersionFix(v), true
			}
		}
	case kindNodeClaim:
		if e.Field == "spec.nodeClassRef.group" || e.Field == "spec.nodeClassRef.kind" {
			if v, ok := valueAt(original, "spec.nodeClassRef.apiVersion"); ok {
				return nodeClassRefAPIVersionFix(v), true
			}
		}
	case kindEC2NodeClass:
		if e.Field == "spec.amiSelectorTerms" {
			family, _ := valueAt(original, "spec.amiFamily")
			if f, ok := family.(string); ok && f != "" {
				if _, hasTerms := valueAt(original, "spec.amiSelectorTerms"); !hasTerms {
					return amiAliasFix(f), true
				}
			}
		}
	}
	return "", false
}

// amiAliasFix is the fix for an amiFamily without amiSelectorTerms.
func amiAliasFix(family string) string {
	alias, ok := aliasFamilies[family]
	if !ok {
		return "add spec.amiSelectorTerms that select your AMIs by id, name or tags (amiFamily " + family + " has no alias)"
	}
	fix := fmt.Sprintf("add spec.amiSelectorTerms: [{alias: %s@latest}]", alias)
	if strings.HasPrefix(alias, "windows") {
		return fix + " (Windows aliases accept only @latest)"
	}
	fix += fmt.Sprintf(" and pin a version (%s@<version>) instead of latest for production", alias)
	if alias == "al2" {
		fix += "; AL2 is not supported from Kubernetes 1.33, consider al2023"
	}
	return fix
}

func consolidationFix(value interface{}) string {
	m, _ := value.(map[string]interface{})
	if enabled, _ := m["enabled"].(bool); enabled {
		return "replace it with spec.disruption.consolidationPolicy: WhenEmptyOrUnderutilized"
	}
	return "replace it with spec.disruption.consolidateAfter: Never (consolidation off)"
}

func kubeletFix(original map[string]interface{}, refPath string) string {
	name, _ := valueAt(original, refPath+".name")
	if n, ok := name.(string); ok && n != "" {
		return fmt.Sprintf("move it to spec.kubelet of the EC2NodeClass %q that %s names", n, refPath)
	}
	return "move it to spec.kubelet of the EC2NodeClass that " + refPath + " names"
}

func nodeClassRefAPIVersionFix(value interface{}) string {
	group := groupAWS
	if s, ok := value.(string); ok && s != "" {
		if gv, err := schema.ParseGroupVersion(s); err == nil && gv.Group != "" {
			group = gv.Group
		}
		return fmt.Sprintf("replace apiVersion: %s with group: %s (nodeClassRef takes group, kind and name in v1)", s, group)
	}
	return fmt.Sprintf("replace apiVersion with group: %s (nodeClassRef takes group, kind and name in v1)", group)
}

func refName(value interface{}) string {
	m, _ := value.(map[string]interface{})
	if n, ok := m["name"].(string); ok && n != "" {
		return n
	}
	return "<name>"
}

func stringOr(value interface{}, def string) string {
	if s, ok := value.(string); ok && s != "" {
		return s
	}
	return def
}

// secondsDuration renders a number of seconds as a duration in the form the
// v1 API accepts: 30 → "30s", 2592000 → "720h", 90 → "1m30s".
func secondsDuration(value interface{}, def string) string {
	var secs int64
	switch v := value.(type) {
	case int64:
		secs = v
	case float64:
		secs = int64(v)
	case string:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return def
		}
		secs = n
	default:
		return def
	}
	if secs < 0 {
		return def
	}
	d := (time.Duration(secs) * time.Second).String()
	if strings.HasSuffix(d, "m0s") {
		d = strings.TrimSuffix(d, "0s")
	}
	if strings.HasSuffix(d, "h0m") {
		d = strings.TrimSuffix(d, "0m")
	}
	return d
}

// selectorTerms converts a v1alpha1 selector map into v1 selector terms,
// rendered as YAML flow syntax.
func selectorTerms(value interface{}, what string) string {
	m, _ := value.(map[string]interface{})
	if len(m) == 0 {
		return "[{tags: {<key>: <value>}}]"
	}
	var terms []map[string]interface{}
	tags := map[string]interface{}{}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var name, owners string
	for _, k := range keys {
		v := fmt.Sprint(m[k])
		switch k {
		case "aws-ids", "aws::ids":
			for _, id := range strings.Split(v, ",") {
				if id = strings.TrimSpace(id); id != "" {
					terms = append(terms, map[string]interface{}{"id": id})
				}
			}
		case "aws::name":
			name = v
		case "aws::owners":
			owners = v
		default:
			tags[k] = v
		}
	}
	if len(tags) > 0 {
		terms = append(terms, map[string]interface{}{"tags": tags})
	}
	if what == "ami" && (name != "" || owners != "") {
		ownerList := []string{""}
		if owners != "" {
			ownerList = strings.Split(owners, ",")
		}
		for _, o := range ownerList {
			t := map[string]interface{}{}
			if name != "" {
				t["name"] = name
			}
			if o = strings.TrimSpace(o); o != "" {
				t["owner"] = o
			}
			terms = append(terms, t)
		}
	}
	items := make([]interface{}, len(terms))
	for i, t := range terms {
		items[i] = t
	}
	return flowYAML(items)
}

var plainScalarRE = regexp.MustCompile(`^[A-Za-z0-9_./@-][A-Za-z0-9_./@* -]*$`)

// flowYAML renders a value in YAML flow style with sorted keys, quoting
// strings only where YAML needs it.
func flowYAML(v interface{}) string {
	switch x := v.(type) {
	case map[string]interface{}:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = flowYAML(k) + ": " + flowYAML(x[k])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case []interface{}:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = flowYAML(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case string:
		if plainScalarRE.MatchString(x) && !strings.HasSuffix(x, " ") && !looksLikeNonString(x) {
			return x
		}
		b, _ := json.Marshal(x)
		return string(b)
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

func looksLikeNonString(s string) bool {
	switch strings.ToLower(s) {
	case "true", "false", "yes", "no", "on", "off", "null", "~", "y", "n":
		return true
	}
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// migrateOldKind reports the problems of an object of a kind that v1 replaced.
// It returns false when the kind is not one of them.
func migrateOldKind(gvk schema.GroupVersionKind, obj map[string]interface{}) ([]Problem, bool) {
	switch {
	case gvk.Group == groupCore && gvk.Kind == "Provisioner":
		return migrateProvisioner(gvk, obj), true
	case gvk.Group == groupAWS && gvk.Kind == "AWSNodeTemplate":
		return migrateAWSNodeTemplate(gvk, obj), true
	case gvk.Group == groupCore && gvk.Kind == "Machine":
		return []Problem{{
			Field:    "kind",
			Message:  fmt.Sprintf("%s Machine was replaced by karpenter.sh/v1 NodeClaim, which stevedore creates from NodePools", gvk.GroupVersion()),
			Fix:      "delete this manifest and describe the nodes you want with a karpenter.sh/v1 NodePool",
			Severity: SeverityError,
		}}, true
	}
	return nil, false
}

func migrateProvisioner(gvk schema.GroupVersionKind, obj map[string]interface{}) []Problem {
	out := []Problem{{
		Field:    "apiVersion",
		Message:  fmt.Sprintf("%s Provisioner is no longer served; it was replaced by karpenter.sh/v1 NodePool", gvk.GroupVersion()),
		Fix:      "rewrite it as apiVersion: karpenter.sh/v1, kind: NodePool and apply the field changes listed for this object",
		Severity: SeverityError,
	}}
	moved := func(path, to string) {
		if _, ok := valueAt(obj, path); ok {
			out = append(out, Problem{
				Field:    path,
				Message:  "a NodePool has this field at " + to,
				Fix:      "move it to " + to,
				Severity: SeverityError,
			})
		}
	}
	moved("spec.requirements", "spec.template.spec.requirements")
	moved("spec.labels", "spec.template.metadata.labels")
	moved("spec.annotations", "spec.template.metadata.annotations")
	moved("spec.taints", "spec.template.spec.taints")
	moved("spec.startupTaints", "spec.template.spec.startupTaints")
	if _, ok := valueAt(obj, "spec.limits.resources"); ok {
		out = append(out, Problem{
			Field:    "spec.limits.resources",
			Message:  "a NodePool lists its limits directly under spec.limits",
			Fix:      "move the entries of spec.limits.resources up into spec.limits",
			Severity: SeverityError,
		})
	}
	if _, ok := valueAt(obj, "spec.kubeletConfiguration"); ok {
		out = append(out, Problem{
			Field:    "spec.kubeletConfiguration",
			Message:  "kubelet settings moved to the EC2NodeClass (spec.kubelet)",
			Fix:      kubeletFix(obj, "spec.providerRef"),
			Severity: SeverityError,
		})
	}
	if _, ok := valueAt(obj, "spec.provider"); ok {
		out = append(out, Problem{
			Field:    "spec.provider",
			Message:  "inline provider settings are not supported; a NodePool references an EC2NodeClass",
			Fix:      "move these settings into an EC2NodeClass and set spec.template.spec.nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: <name>}",
			Severity: SeverityError,
		})
	}
	if v, ok := valueAt(obj, "spec.providerRef"); ok {
		out = append(out, Problem{
			Field:    "spec.providerRef",
			Message:  "a NodePool references its EC2NodeClass with spec.template.spec.nodeClassRef",
			Fix:      fmt.Sprintf("replace it with spec.template.spec.nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: %s}", refName(v)),
			Severity: SeverityError,
		})
	}
	ttlEmpty, hasTTLEmpty := valueAt(obj, "spec.ttlSecondsAfterEmpty")
	if hasTTLEmpty {
		out = append(out, Problem{
			Field:    "spec.ttlSecondsAfterEmpty",
			Message:  "emptiness is configured with spec.disruption.consolidationPolicy and consolidateAfter",
			Fix:      fmt.Sprintf("set spec.disruption.consolidationPolicy: WhenEmpty and spec.disruption.consolidateAfter: %s", secondsDuration(ttlEmpty, "30s")),
			Severity: SeverityError,
		})
	}
	consolidation, hasConsolidation := valueAt(obj, "spec.consolidation")
	if hasConsolidation {
		out = append(out, Problem{
			Field:    "spec.consolidation",
			Message:  "consolidation is configured with spec.disruption.consolidationPolicy",
			Fix:      strings.Replace(consolidationFix(consolidation), "replace it with", "set", 1),
			Severity: SeverityError,
		})
	}
	if enabled, _ := valueAt(obj, "spec.consolidation.enabled"); !hasTTLEmpty && enabled != true {
		out = append(out, Problem{
			Field:    "spec",
			Message:  "this Provisioner never removes nodes for being empty or underused, but a NodePool consolidates by default (consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 0s)",
			Fix:      "set spec.disruption.consolidateAfter: Never in the NodePool to keep that behaviour, or choose a consolidateAfter",
			Severity: SeverityWarning,
		})
	}
	if v, ok := valueAt(obj, "spec.ttlSecondsUntilExpired"); ok {
		out = append(out, Problem{
			Field:    "spec.ttlSecondsUntilExpired",
			Message:  "expiry is configured with spec.template.spec.expireAfter",
			Fix:      fmt.Sprintf("set spec.template.spec.expireAfter: %s", secondsDuration(v, "720h")),
			Severity: SeverityError,
		})
	} else {
		out = append(out, Problem{
			Field:    "spec",
			Message:  "nodes of this Provisioner never expire, but a NodePool expires nodes after 720h by default",
			Fix:      "set spec.template.spec.expireAfter: Never in the NodePool to keep that behaviour",
			Severity: SeverityWarning,
		})
	}
	return out
}

func migrateAWSNodeTemplate(gvk schema.GroupVersionKind, obj map[string]interface{}) []Problem {
	out := []Problem{{
		Field:    "apiVersion",
		Message:  fmt.Sprintf("%s AWSNodeTemplate is no longer served; it was replaced by karpenter.k8s.aws/v1 EC2NodeClass", gvk.GroupVersion()),
		Fix:      "rewrite it as apiVersion: karpenter.k8s.aws/v1, kind: EC2NodeClass and apply the field changes listed for this object",
		Severity: SeverityError,
	}}
	for _, sel := range []struct{ old, new, what string }{
		{"spec.subnetSelector", "spec.subnetSelectorTerms", "subnet"},
		{"spec.securityGroupSelector", "spec.securityGroupSelectorTerms", "securityGroup"},
		{"spec.amiSelector", "spec.amiSelectorTerms", "ami"},
	} {
		if v, ok := valueAt(obj, sel.old); ok {
			out = append(out, Problem{
				Field:    sel.old,
				Message:  "an EC2NodeClass selects with a list of terms in " + sel.new,
				Fix:      fmt.Sprintf("replace it with %s: %s", sel.new, selectorTerms(v, sel.what)),
				Severity: SeverityError,
			})
		} else if sel.what != "ami" {
			out = append(out, Problem{
				Field:    "spec",
				Message:  sel.new + " is required in an EC2NodeClass",
				Fix:      fmt.Sprintf("add %s: [{tags: {karpenter.sh/discovery: <cluster name>}}]", sel.new),
				Severity: SeverityError,
			})
		}
	}
	if _, ok := valueAt(obj, "spec.amiSelector"); !ok {
		family := "AL2"
		if f, ok := valueAt(obj, "spec.amiFamily"); ok {
			family = fmt.Sprint(f)
		}
		at := "spec.amiFamily"
		if _, ok := valueAt(obj, at); !ok {
			at = "spec"
		}
		msg := fmt.Sprintf("an EC2NodeClass needs amiSelectorTerms; amiFamily %s alone no longer selects AMIs", family)
		if at == "spec" {
			msg = "an EC2NodeClass needs amiSelectorTerms; without amiSelector and amiFamily, v1alpha1 used the latest AL2 AMIs"
		}
		out = append(out, Problem{
			Field:    at,
			Message:  msg,
			Fix:      amiAliasFix(family),
			Severity: SeverityError,
		})
	}
	if _, ok := valueAt(obj, "spec.amiSelector"); ok {
		if _, ok := valueAt(obj, "spec.amiFamily"); !ok {
			out = append(out, Problem{
				Field:    "spec",
				Message:  "an EC2NodeClass that selects AMIs without an alias needs amiFamily; v1alpha1 defaulted it to AL2",
				Fix:      "add spec.amiFamily with the family of the selected AMIs (AL2023, AL2, Bottlerocket, Windows2019, Windows2022, Windows2025 or Custom)",
				Severity: SeverityError,
			})
		}
	}
	if _, ok := valueAt(obj, "spec.launchTemplate"); ok {
		out = append(out, Problem{
			Field:    "spec.launchTemplate",
			Message:  "custom launch templates are not supported by EC2NodeClass",
			Fix:      launchTemplateFix,
			Severity: SeverityError,
		})
	}
	_, hasProfile := valueAt(obj, "spec.instanceProfile")
	_, hasRole := valueAt(obj, "spec.role")
	if !hasProfile && !hasRole {
		out = append(out, Problem{
			Field:    "spec",
			Message:  "an EC2NodeClass needs spec.role or spec.instanceProfile; there is no global default instance profile any more",
			Fix:      "add spec.role: <node IAM role name> (stevedore manages the instance profile) or spec.instanceProfile: <existing instance profile>",
			Severity: SeverityError,
		})
	}
	return out
}
