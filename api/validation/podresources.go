package validation

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stevedore-autoscaler/stevedore/api/defaults"
)

// podSpecPaths gives, for the built-in kinds that hold a pod spec, where it
// is.
var podSpecPaths = map[schema.GroupKind]string{
	{Kind: "Pod"}:                             "spec",
	{Kind: "PodTemplate"}:                     "template.spec",
	{Kind: "ReplicationController"}:           "spec.template.spec",
	{Group: "apps", Kind: "Deployment"}:       "spec.template.spec",
	{Group: "apps", Kind: "ReplicaSet"}:       "spec.template.spec",
	{Group: "apps", Kind: "StatefulSet"}:      "spec.template.spec",
	{Group: "apps", Kind: "DaemonSet"}:        "spec.template.spec",
	{Group: "extensions", Kind: "Deployment"}: "spec.template.spec",
	{Group: "extensions", Kind: "ReplicaSet"}: "spec.template.spec",
	{Group: "extensions", Kind: "DaemonSet"}:  "spec.template.spec",
	{Group: "batch", Kind: "Job"}:             "spec.template.spec",
	{Group: "batch", Kind: "CronJob"}:         "spec.jobTemplate.spec.template.spec",
}

// checkPodResources checks the resource quantities of the pod spec of a
// built-in object, which has decoded strictly, with the API server's rules
// for them: no quantity is negative, no request exceeds its limit, and an
// extended resource (nvidia.com/gpu, say) or hugepages, which cannot be
// overcommitted, is requested exactly at its limit, in whole units for an
// extended resource. Strict decoding does not check values, so without this
// such a manifest would pass `validate` and reach `plan` and `simulate`.
func checkPodResources(gvk schema.GroupVersionKind, obj map[string]interface{}) []Problem {
	specPath, ok := podSpecPaths[gvk.GroupKind()]
	if !ok {
		return nil
	}
	raw, ok := valueAt(obj, specPath)
	if !ok {
		return nil
	}
	data, err := json.Marshal(raw)
	if err != nil {
		return nil
	}
	var spec corev1.PodSpec
	if err := json.Unmarshal(data, &spec); err != nil {
		return nil // strict decoding reports it
	}
	if gvk.Kind == "Pod" {
		// The API server defaults a pod's requests from its limits before
		// it validates them (not a template's), so a negative limit there
		// is a negative request too.
		pod := &corev1.Pod{Spec: spec}
		defaults.PodRequests(pod)
		spec = pod.Spec
	}
	var out []Problem
	for _, list := range []struct {
		name       string
		containers []corev1.Container
	}{{"initContainers", spec.InitContainers}, {"containers", spec.Containers}} {
		for i, c := range list.containers {
			out = append(out, checkResourceRequirements(fmt.Sprintf("%s.%s[%d].resources", specPath, list.name, i), c.Resources)...)
		}
	}
	if spec.Resources != nil {
		out = append(out, checkResourceRequirements(specPath+".resources", *spec.Resources)...)
	}
	out = append(out, checkNonNegative(specPath+".overhead", spec.Overhead, "remove spec.overhead; the RuntimeClass admission plugin sets it from the pod's RuntimeClass")...)
	return out
}

// checkResourceRequirements checks one container's (or the pod-level)
// requests and limits at path. The fields are the API server's: a quantity
// is named by its key (requests[cpu]), a request compared with its limit by
// the list (requests), as the server reports them.
func checkResourceRequirements(path string, r corev1.ResourceRequirements) []Problem {
	out := checkNonNegative(path+".limits", r.Limits, "set a limit of zero or more, or remove it for no limit")
	out = append(out, checkNonNegative(path+".requests", r.Requests, "request zero or more, or remove the request to ask for nothing")...)
	for _, name := range slices.Sorted(maps.Keys(r.Requests)) {
		req := r.Requests[name]
		if req.Sign() < 0 {
			continue // reported above
		}
		field := path + ".requests"
		lim, hasLimit := r.Limits[name]
		overcommit := overcommitAllowed(name)
		switch {
		case hasLimit && lim.Sign() < 0:
		case hasLimit && !overcommit && req.Cmp(lim) != 0:
			out = append(out, Problem{
				Field:    field,
				Message:  fmt.Sprintf("Invalid value: %q: must be equal to %s limit of %s", req.String(), name, lim.String()),
				Fix:      fmt.Sprintf("set the request of %s to its limit, or remove the request (it defaults to the limit); %s cannot be overcommitted", name, name),
				Severity: SeverityError,
			})
		case hasLimit && req.Cmp(lim) > 0:
			out = append(out, Problem{
				Field:    field,
				Message:  fmt.Sprintf("Invalid value: %q: must be less than or equal to %s limit of %s", req.String(), name, lim.String()),
				Fix:      fmt.Sprintf("lower the %s request to at most %s, or raise the limit", name, lim.String()),
				Severity: SeverityError,
			})
		case !hasLimit && !overcommit:
			out = append(out, Problem{
				Field:    path + ".limits",
				Message:  "Required value: Limit must be set for non overcommitable resources",
				Fix:      fmt.Sprintf("add a limit of %s equal to the request, or write only the limit (the request defaults to it)", name),
				Severity: SeverityError,
			})
		}
	}
	for _, side := range []struct {
		path string
		list corev1.ResourceList
	}{{path + ".limits", r.Limits}, {path + ".requests", r.Requests}} {
		for _, name := range slices.Sorted(maps.Keys(side.list)) {
			q := side.list[name]
			if !extendedResource(name) || q.Sign() < 0 {
				continue
			}
			if whole := q.DeepCopy(); !whole.RoundUp(0) {
				out = append(out, Problem{
					Field:    quantityPath(side.path, name),
					Message:  fmt.Sprintf("Invalid value: %q: must be an integer", q.String()),
					Fix:      fmt.Sprintf("use a whole number of %s", name),
					Severity: SeverityError,
				})
			}
		}
	}
	return out
}

// checkNonNegative reports the negative quantities of list, at path.
func checkNonNegative(path string, list corev1.ResourceList, fix string) []Problem {
	var out []Problem
	for _, name := range slices.Sorted(maps.Keys(list)) {
		if q := list[name]; q.Sign() < 0 {
			out = append(out, Problem{
				Field:    quantityPath(path, name),
				Message:  fmt.Sprintf("Invalid value: %q: must be greater than or equal to 0", q.String()),
				Fix:      fix,
				Severity: SeverityError,
			})
		}
	}
	return out
}

// checkNegativeQuantities reports the negative quantities of the map at
// path in a served object (NodePool limits, NodeClaim requests), which the
// CRD schema accepts.
func checkNegativeQuantities(path string, obj map[string]interface{}, message, fix string) []Problem {
	raw, _ := valueAt(obj, path)
	m, _ := raw.(map[string]interface{})
	var out []Problem
	for _, name := range slices.Sorted(maps.Keys(m)) {
		var value string
		switch v := m[name].(type) {
		case string:
			q, err := resource.ParseQuantity(v)
			if err != nil || q.Sign() >= 0 {
				continue // the schema's pattern reports a malformed one
			}
			value = q.String()
		case int64:
			if v >= 0 {
				continue
			}
			value = strconv.FormatInt(v, 10)
		case float64:
			if v >= 0 {
				continue
			}
			value = strconv.FormatFloat(v, 'g', -1, 64)
		default:
			continue
		}
		out = append(out, Problem{
			Field:    path + "." + name, // map keys joined with dots, as the schema's errors have them
			Message:  fmt.Sprintf("Invalid value: %q: %s", value, message),
			Fix:      fix,
			Severity: SeverityError,
		})
	}
	return out
}

// quantityPath is the field path of resource name in the list at path, as
// the API server writes it: spec.containers[0].resources.requests[cpu].
func quantityPath(path string, name corev1.ResourceName) string {
	return path + "[" + string(name) + "]"
}

// nativeResource reports whether name is a resource of Kubernetes itself:
// unqualified (cpu, memory, hugepages-2Mi) or in a kubernetes.io domain.
func nativeResource(name corev1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || strings.Contains(string(name), corev1.ResourceDefaultNamespacePrefix)
}

// overcommitAllowed reports whether a container may request less of name
// than its limit: native resources other than hugepages.
func overcommitAllowed(name corev1.ResourceName) bool {
	return nativeResource(name) && !strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

// extendedResource reports whether name is an extended resource, such as
// nvidia.com/gpu, which is counted in whole units.
func extendedResource(name corev1.ResourceName) bool {
	return !nativeResource(name) && !strings.HasPrefix(string(name), corev1.DefaultResourceRequestsPrefix)
}
