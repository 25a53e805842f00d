package validation

import "fmt"

// kindCapacityBuffer is the CapacityBuffer kind (autoscaling.x-k8s.io).
const kindCapacityBuffer = "CapacityBuffer"

// checkCapacityBuffer reports what the API server (and Karpenter's CRD)
// accepts in a CapacityBuffer but what leaves the buffer keeping no
// capacity: stevedore, as Karpenter, then reports ReadyForProvisioning
// False, or zero chunks, in its status. They are warnings, not errors, since
// the manifest applies.
func checkCapacityBuffer(obj map[string]interface{}) []Problem {
	var out []Problem
	_, hasTemplate := valueAt(obj, "spec.podTemplateRef")
	ref, hasScalable := valueAt(obj, "spec.scalableRef")
	_, hasReplicas := valueAt(obj, "spec.replicas")
	_, hasPercentage := valueAt(obj, "spec.percentage")
	_, hasLimits := valueAt(obj, "spec.limits")
	switch {
	case !hasTemplate && !hasScalable:
		out = append(out, Problem{
			Field:    "spec",
			Message:  "sets neither podTemplateRef nor scalableRef: the buffer has no pod shape and keeps no capacity (ReadyForProvisioning False, ResolutionFailed)",
			Fix:      "set podTemplateRef to a PodTemplate (with replicas or limits), or scalableRef to a Deployment, StatefulSet or ReplicaSet",
			Severity: SeverityWarning,
		})
	case hasScalable:
		m, _ := ref.(map[string]interface{})
		if g, _ := m["apiGroup"].(string); g != "" && g != "apps" {
			out = append(out, Problem{
				Field:    "spec.scalableRef.apiGroup",
				Message:  fmt.Sprintf("Unsupported value: %q: stevedore reads the pod templates of apps workloads only (ReadyForProvisioning False, ResolutionFailed)", g),
				Fix:      "use apiGroup apps (or leave it empty) with a Deployment, StatefulSet or ReplicaSet, or point podTemplateRef at a PodTemplate shaped like its pods",
				Severity: SeverityWarning,
			})
		}
		switch k, _ := m["kind"].(string); k {
		case "", "Deployment", "StatefulSet", "ReplicaSet":
		default:
			out = append(out, Problem{
				Field:    "spec.scalableRef.kind",
				Message:  fmt.Sprintf("Unsupported value: %q: supported values: \"Deployment\", \"StatefulSet\", \"ReplicaSet\" (ReadyForProvisioning False, ResolutionFailed)", k),
				Fix:      "use Deployment, StatefulSet or ReplicaSet, or point podTemplateRef at a PodTemplate shaped like the workload's pods",
				Severity: SeverityWarning,
			})
		}
		if !hasReplicas && !hasPercentage && !hasLimits {
			out = append(out, Problem{
				Field:    "spec",
				Message:  "sets none of replicas, percentage and limits: the buffer asks for no chunks (Provisioning False, BufferEmpty)",
				Fix:      "set replicas, or percentage of the workload's replicas, or limits",
				Severity: SeverityWarning,
			})
		}
	}
	if hasPercentage && !hasScalable {
		out = append(out, Problem{
			Field:    "spec.percentage",
			Message:  "is read only with scalableRef: it is a percentage of the workload's replicas",
			Fix:      "remove percentage, or use scalableRef instead of podTemplateRef",
			Severity: SeverityWarning,
		})
	}
	// A negative limit is an error, as for a NodePool's limits.
	out = append(out, checkNegativeQuantities("spec.limits", obj,
		"must be greater than or equal to 0; the API server accepts a negative limit, but then no chunk fits",
		"set the limit to zero or more, or remove it")...)
	return out
}
