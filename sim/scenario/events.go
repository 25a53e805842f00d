package scenario

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stevedore-autoscaler/stevedore/api/validation"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
)

// events checks and decodes spec.events.
func (l *loader) events(in []Event, run *Run, v *validation.Validator) []TimedEvent {
	var out []TimedEvent
	for i, e := range in {
		field := fmt.Sprintf("spec.events[%d]", i)
		kinds := e.kinds()
		switch {
		case len(kinds) == 0:
			if !l.unknownKind[field] {
				l.scenarioError(field, "the event does nothing", "give it one of "+strings.Join(EventKinds, ", "))
			}
			continue
		case len(kinds) > 1:
			l.scenarioError(field, fmt.Sprintf("the event has %s; an event does one thing", strings.Join(kinds, " and ")),
				"split it into one event per kind, each with the same at")
			continue
		}
		if e.At == "" {
			l.scenarioError(field+".at", "the event has no time", "write when it happens, as the time since the start, such as at: 5m")
			continue
		}
		at := l.duration(e.At, field+".at", 0, false)
		if at > run.Duration {
			l.scenarioError(field+".at", fmt.Sprintf("%s is after the end of the run (spec.duration %s)", at, run.Duration),
				fmt.Sprintf("make it at most %s, or lengthen spec.duration", run.Duration))
		}
		te := TimedEvent{At: at, Index: i, Kind: kinds[0], Event: e}
		switch te.Kind {
		case "apply":
			l.applyEvent(&te, field+".apply", v)
		case "delete":
			te.GVK = l.objectRef(*e.Delete, field+".delete")
		case "scale":
			te.GVK = l.objectRef(e.Scale.ObjectRef, field+".scale")
			if !scalable(te.GVK) {
				l.scenarioError(field+".scale.kind", fmt.Sprintf("%s cannot be scaled", te.GVK.Kind), "scale a Deployment, ReplicaSet, StatefulSet or static NodePool")
			}
			if e.Scale.Replicas == nil || *e.Scale.Replicas < 0 {
				l.scenarioError(field+".scale.replicas", "replicas is missing or negative", "write the number of replicas, such as replicas: 10")
			}
		case "patch":
			te.GVK = l.objectRef(e.Patch.ObjectRef, field+".patch")
			l.patchEvent(e.Patch, te.GVK, field+".patch")
		case "releaseImage":
			l.releaseEvent(e.ReleaseImage, field+".releaseImage")
		case "spotInterruption":
			l.selection(e.SpotInterruption, field+".spotInterruption")
		case "nodeFailure":
			l.selection(&e.NodeFailure.Selection, field+".nodeFailure")
			l.failedCondition(e.NodeFailure.Condition, field+".nodeFailure.condition")
		case "instanceStatusFailure":
			l.selection(&e.InstanceStatusFailure.Selection, field+".instanceStatusFailure")
			switch e.InstanceStatusFailure.Check {
			case "", fake.StatusCheckInstance, fake.StatusCheckSystem:
			default:
				l.scenarioError(field+".instanceStatusFailure.check", fmt.Sprintf("%q is not a status check", e.InstanceStatusFailure.Check),
					"use instance (the default) or system")
			}
		case "insufficientCapacity":
			ice := e.InsufficientCapacity
			switch ice.CapacityType {
			case "", fake.CapacityTypeSpot, fake.CapacityTypeOnDemand:
			default:
				l.scenarioError(field+".insufficientCapacity.capacityType", fmt.Sprintf("%q is not a capacity type", ice.CapacityType), "use spot, on-demand, or leave it out for both")
			}
			te.For = l.duration(ice.For, field+".insufficientCapacity.for", run.Duration-at, true)
		case "awsFault":
			te.For = l.awsFault(e.AWSFault, field+".awsFault")
		case "zonalShift":
			if e.ZonalShift.Zone == "" {
				l.scenarioError(field+".zonalShift.zone", "the zone is missing", "name the zone to shift away from, one of aws.zones")
			}
			te.For = l.duration(e.ZonalShift.For, field+".zonalShift.for", min(run.Duration-at, MaxZonalShift), true)
			if te.For > MaxZonalShift {
				l.scenarioError(field+".zonalShift.for", fmt.Sprintf("%s is longer than a zonal shift can be started for", te.For),
					fmt.Sprintf("make it at most %s, and start another shift when it ends", MaxZonalShift))
			}
		}
		out = append(out, te)
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].At < out[b].At })
	return out
}

func (l *loader) applyEvent(te *TimedEvent, field string, v *validation.Validator) {
	obj := te.Event.Apply
	data, err := json.Marshal(obj)
	if err != nil {
		l.scenarioError(field, err.Error(), "write the object as YAML")
		return
	}
	problems, err := v.Documents(l.scSource+" "+field, bytes.NewReader(data))
	if err != nil {
		l.scenarioError(field, err.Error(), "write the object as YAML")
		return
	}
	for _, p := range problems {
		p.Source = l.scSource
		p.Field = strings.TrimSuffix(field+"."+p.Field, ".")
		l.problems = append(l.problems, p)
	}
	if validation.HasErrors(problems) {
		return
	}
	kind, _ := obj["kind"].(string)
	o, gvk, err := l.decode(obj)
	switch {
	case err != nil:
		l.scenarioError(field, err.Error(), "fix the object so that it decodes")
	case o == nil:
		l.scenarioError(field+".kind", fmt.Sprintf("kind %q is not one the simulator knows", kind),
			"apply built-in Kubernetes kinds, NodePools or EC2NodeClasses")
	case o.GetName() == "":
		l.scenarioError(field+".metadata.name", "the object has no name", "give it metadata.name")
	default:
		te.Object, te.GVK = o, gvk
	}
}

// scalable reports whether a kind has a scale subresource the simulator
// serves: the workloads, and NodePools, whose spec.replicas (static
// NodePools) kubectl scale sets. An unresolved kind is reported elsewhere.
func scalable(gvk schema.GroupVersionKind) bool {
	switch gvk.GroupKind() {
	case schema.GroupKind{Group: "apps", Kind: "Deployment"}, schema.GroupKind{Group: "apps", Kind: "ReplicaSet"},
		schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, schema.GroupKind{Group: "karpenter.sh", Kind: "NodePool"}:
		return true
	}
	return gvk.Kind == ""
}

// isNodePool reports whether gvk is the NodePool kind.
func isNodePool(gvk schema.GroupVersionKind) bool {
	return gvk.GroupKind() == schema.GroupKind{Group: "karpenter.sh", Kind: "NodePool"}
}

// kindPreference orders the groups a bare kind name is looked up in.
var kindPreference = []string{"", "apps", "batch", "policy", "scheduling.k8s.io", "storage.k8s.io", "karpenter.sh", "karpenter.k8s.aws", "autoscaling.x-k8s.io"}

// objectRef resolves the kind an event names and checks the name.
func (l *loader) objectRef(r ObjectRef, field string) schema.GroupVersionKind {
	if r.Name == "" {
		l.scenarioError(field+".name", "no name", "name the object, such as name: checkout")
	}
	if r.Kind == "" {
		l.scenarioError(field+".kind", "no kind", "give the object's kind, such as kind: Deployment")
		return schema.GroupVersionKind{}
	}
	if r.APIVersion != "" {
		gvk := schema.FromAPIVersionAndKind(r.APIVersion, r.Kind)
		if !l.scheme.Recognizes(gvk) {
			l.scenarioError(field+".apiVersion", fmt.Sprintf("%s %s is not a kind the simulator knows", r.APIVersion, r.Kind),
				"fix apiVersion, or leave it out to look the kind up by name")
			return schema.GroupVersionKind{}
		}
		return gvk
	}
	for _, group := range kindPreference {
		for _, version := range []string{"v1", "v1beta1"} {
			gvk := schema.GroupVersionKind{Group: group, Version: version, Kind: r.Kind}
			if l.scheme.Recognizes(gvk) {
				return gvk
			}
		}
	}
	l.scenarioError(field+".kind", fmt.Sprintf("unknown kind %q", r.Kind),
		"use a kind such as Deployment, StatefulSet, DaemonSet, Job, Pod, PodDisruptionBudget, NodePool or EC2NodeClass, spelt as in manifests")
	return schema.GroupVersionKind{}
}

func (l *loader) patchEvent(p *Patch, gvk schema.GroupVersionKind, field string) {
	if len(p.Patch) == 0 || string(p.Patch) == "null" {
		l.scenarioError(field+".patch", "no patch", "write the patch, such as patch: {spec: {replicas: 3}}")
		return
	}
	isList := bytes.HasPrefix(bytes.TrimSpace(p.Patch), []byte("["))
	switch p.Type {
	case "", "merge":
		if isList {
			l.scenarioError(field+".patch", "a merge patch is an object, not a list", "write an object, or set type: json for a list of operations")
		}
	case "strategic":
		if isList {
			l.scenarioError(field+".patch", "a strategic merge patch is an object, not a list", "write an object")
		}
		if gvk.Group == "karpenter.sh" || gvk.Group == "karpenter.k8s.aws" {
			l.scenarioError(field+".type", "custom resources do not support strategic merge patches", "use type: merge")
		}
	case "json":
		if !isList {
			l.scenarioError(field+".patch", "a JSON patch is a list of operations", "write a list such as [{op: replace, path: /spec/replicas, value: 3}]")
		}
	default:
		l.scenarioError(field+".type", fmt.Sprintf("unknown patch type %q", p.Type), "use merge (the default), json or strategic")
	}
}

// releaseFamilies are the alias families an image release may be for.
var releaseFamilies = []string{fake.FamilyAL2023, fake.FamilyAL2, fake.FamilyBottlerocket}

func (l *loader) releaseEvent(r *ReleaseImage, field string) {
	if r.Alias == "" {
		r.Alias = fake.FamilyAL2023
	}
	r.Alias, _, _ = strings.Cut(r.Alias, "@")
	if !slices.Contains(releaseFamilies, r.Alias) {
		l.scenarioError(field+".alias", fmt.Sprintf("%q is not an alias family", r.Alias), "use "+strings.Join(releaseFamilies, ", "))
	}
	switch r.Arch {
	case "":
		r.Arch = "x86_64"
	case "x86_64", "arm64":
	case "amd64":
		r.Arch = "x86_64"
	default:
		l.scenarioError(field+".arch", fmt.Sprintf("%q is not an architecture", r.Arch), "use x86_64 or arm64")
	}
	if r.Variant == "" {
		r.Variant = "standard"
	}
	if r.ID != "" && !amiID.MatchString(r.ID) {
		l.scenarioError(field+".id", fmt.Sprintf("%q is not an AMI ID", r.ID), "write it as ami- followed by 8 or 17 hex digits, or leave it out")
	}
}

func (l *loader) selection(s *Selection, field string) {
	if s.Count < 0 {
		l.scenarioError(field+".count", "count is negative", "write how many nodes, or 0 for every node selected")
	}
	if s.Count > MaxNodeCount {
		l.scenarioError(field+".count", fmt.Sprintf("%d nodes are more than an event picks (%d)", s.Count, MaxNodeCount), "write how many nodes, or 0 for every node selected")
	}
	if len(s.Nodes) > 0 && (len(s.NodeSelector) > 0 || s.Count > 0) {
		l.scenarioError(field+".nodes", "nodes names the nodes; count and nodeSelector choose them", "use nodes, or count and nodeSelector, not both")
	}
}

// conditionType is the shape of a node condition type: Ready, StorageReady.
var conditionType = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)

// failedCondition checks the condition a nodeFailure turns False.
func (l *loader) failedCondition(c, field string) {
	switch {
	case c == "":
	case c == "Ready":
		l.scenarioError(field, "Ready is the kubelet's condition", "leave condition out to stop the kubelet, which turns Ready Unknown")
	case !conditionType.MatchString(c):
		l.scenarioError(field, fmt.Sprintf("%q is not a node condition type", c),
			"use a condition type such as StorageReady, NetworkingReady, KernelReady, ContainerRuntimeReady or AcceleratedHardwareReady")
	}
}

// faultKinds are the failures an awsFault names by kind rather than code.
var faultKinds = []string{FaultThrottling, FaultServerError, FaultUnavailable}

// errorCode is the shape of an AWS error code: UnauthorizedOperation,
// InvalidParameterValue, Client.InternalError.
var errorCode = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*(\.[A-Z][A-Za-z0-9]*)*$`)

// awsFault checks an awsFault event and returns its window (zero when it
// counts calls).
func (l *loader) awsFault(f *AWSFault, field string) time.Duration {
	ops := fake.Operations()
	if len(f.Operations) == 0 {
		l.scenarioError(field+".operations", "no operations", "name the AWS operations that fail, such as operations: [CreateFleet]")
	}
	for i, op := range f.Operations {
		switch {
		case !slices.Contains(ops, op):
			l.scenarioError(fmt.Sprintf("%s.operations[%d]", field, i), fmt.Sprintf("%q is not an operation the simulated AWS serves", op),
				"use one of "+strings.Join(ops, ", ")+suggest(op, ops))
		case slices.Index(f.Operations, op) < i:
			l.scenarioError(fmt.Sprintf("%s.operations[%d]", field, i), fmt.Sprintf("%s is listed twice", op), "list each operation once")
		}
	}
	switch {
	case f.Error == "":
		l.scenarioError(field+".error", "no error", "write how the calls fail: "+strings.Join(faultKinds, ", ")+", or an AWS error code such as UnauthorizedOperation")
	case slices.Contains(faultKinds, f.Error), errorCode.MatchString(f.Error):
	default:
		l.scenarioError(field+".error", fmt.Sprintf("%q is neither a kind of failure nor an AWS error code", f.Error),
			"use "+strings.Join(faultKinds, ", ")+", or an error code such as UnauthorizedOperation"+suggest(f.Error, faultKinds))
	}
	switch {
	case f.Times != 0 && f.For != "":
		l.scenarioError(field, "the fault has both times and for", "fail a number of calls (times) or a window of time (for), not both")
	case f.Times == 0 && f.For == "":
		l.scenarioError(field, "the fault says neither how many calls fail nor for how long", "add times: 3 (the next calls of each operation) or for: 10m")
	case f.For != "":
		return l.duration(f.For, field+".for", 0, true)
	case f.Times < 0 || f.Times > MaxFaultTimes:
		l.scenarioError(field+".times", fmt.Sprintf("%d calls is outside 1 to %d", f.Times, MaxFaultTimes),
			"write how many calls of each operation fail, such as times: 3, or use for")
	}
	return 0
}
