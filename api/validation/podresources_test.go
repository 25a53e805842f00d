package validation

import (
	"fmt"
	"strings"
	"testing"
)

// podTemplateKinds wraps a pod spec (YAML at the indentation of a pod's
// spec) in every built-in kind that holds one, with the path of the spec.
var podTemplateKinds = []struct {
	kind, path string
	wrap       func(spec string) string
}{
	{"Pod", "spec", func(spec string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\nspec:\n" + indent(spec, "  ")
	}},
	{"Deployment", "spec.template.spec", func(spec string) string {
		return "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\nspec:\n  selector:\n    matchLabels: {app: x}\n  template:\n    metadata:\n      labels: {app: x}\n    spec:\n" + indent(spec, "      ")
	}},
	{"ReplicaSet", "spec.template.spec", func(spec string) string {
		return "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata:\n  name: x\nspec:\n  selector:\n    matchLabels: {app: x}\n  template:\n    metadata:\n      labels: {app: x}\n    spec:\n" + indent(spec, "      ")
	}},
	{"StatefulSet", "spec.template.spec", func(spec string) string {
		return "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: x\nspec:\n  serviceName: x\n  selector:\n    matchLabels: {app: x}\n  template:\n    metadata:\n      labels: {app: x}\n    spec:\n" + indent(spec, "      ")
	}},
	{"DaemonSet", "spec.template.spec", func(spec string) string {
		return "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: x\nspec:\n  selector:\n    matchLabels: {app: x}\n  template:\n    metadata:\n      labels: {app: x}\n    spec:\n" + indent(spec, "      ")
	}},
	{"Job", "spec.template.spec", func(spec string) string {
		return "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: x\nspec:\n  template:\n    spec:\n" + indent(spec, "      ")
	}},
	{"CronJob", "spec.jobTemplate.spec.template.spec", func(spec string) string {
		return "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: x\nspec:\n  schedule: \"@daily\"\n  jobTemplate:\n    spec:\n      template:\n        spec:\n" + indent(spec, "          ")
	}},
	{"ReplicationController", "spec.template.spec", func(spec string) string {
		return "apiVersion: v1\nkind: ReplicationController\nmetadata:\n  name: x\nspec:\n  template:\n    metadata:\n      labels: {app: x}\n    spec:\n" + indent(spec, "      ")
	}},
}

// container returns the YAML of a pod spec with one container whose
// resources are given as YAML.
func containerResources(resources string) string {
	return "restartPolicy: Never\ncontainers:\n  - name: c\n    image: x\n    resources:\n" + indent(resources, "      ")
}

// TestPodResources checks that validate refuses, in every kind with a pod
// template, the resource quantities the API server refuses, at the field
// that holds them, and accepts the others, however large.
func TestPodResources(t *testing.T) {
	v := testValidator(t)
	type problem struct{ field, message string } // field relative to the pod spec
	for _, tc := range []struct {
		name string
		spec string
		want []problem
		// limitOnly: the problems are with a limit set without a request,
		// which a Pod (not a template) requests too: the API server
		// defaults the request to the limit, then finds the same problem
		// there.
		limitOnly bool
	}{
		{name: "requests and limits", spec: containerResources("requests: {cpu: 500m, memory: 1Gi}\nlimits: {cpu: \"1\", memory: 1Gi}")},
		{name: "limits only", spec: containerResources("limits: {cpu: \"1\"}")},
		{name: "beyond any instance is the scheduler's business", spec: containerResources("requests: {cpu: \"1e30\", memory: \"9223372036854775807\"}")},
		{name: "a zero request", spec: containerResources("requests: {cpu: \"0\"}")},
		{name: "negative request", spec: containerResources("requests: {cpu: -98500m}"),
			want: []problem{{"containers[0].resources.requests[cpu]", `Invalid value: "-98500m": must be greater than or equal to 0`}}},
		{name: "negative number", spec: containerResources("requests: {memory: -1}"),
			want: []problem{{"containers[0].resources.requests[memory]", `Invalid value: "-1": must be greater than or equal to 0`}}},
		{name: "negative limit", spec: containerResources("limits: {cpu: \"-1\"}"),
			want: []problem{{"containers[0].resources.limits[cpu]", `Invalid value: "-1": must be greater than or equal to 0`}}, limitOnly: true},
		{name: "request above limit", spec: containerResources("requests: {cpu: \"2\"}\nlimits: {cpu: \"1\"}"),
			want: []problem{{"containers[0].resources.requests", `Invalid value: "2": must be less than or equal to cpu limit of 1`}}},
		{name: "request above limit of memory", spec: containerResources("requests: {memory: 2Gi}\nlimits: {memory: 1Gi}"),
			want: []problem{{"containers[0].resources.requests", `must be less than or equal to memory limit of 1Gi`}}},
		{name: "1e30 request above its limit", spec: containerResources("requests: {cpu: \"1e30\"}\nlimits: {cpu: \"1e16\"}"),
			want: []problem{{"containers[0].resources.requests", `Invalid value: "1e30": must be less than or equal to cpu limit of 10e15`}}},
		{name: "init container", spec: "initContainers:\n  - name: i\n    image: x\n    resources:\n      requests: {cpu: \"-1\"}\n" + containerResources("requests: {cpu: 1m}"),
			want: []problem{{"initContainers[0].resources.requests[cpu]", "must be greater than or equal to 0"}}},
		{name: "second container", spec: containerResources("requests: {cpu: 1m}") + "  - name: d\n    image: x\n    resources:\n      requests: {memory: 2Gi}\n      limits: {memory: 1Gi}\n",
			want: []problem{{"containers[1].resources.requests", "must be less than or equal to memory limit of 1Gi"}}},
		{name: "extended resource at its limit", spec: containerResources("requests: {nvidia.com/gpu: 1}\nlimits: {nvidia.com/gpu: 1}")},
		{name: "extended resource below its limit", spec: containerResources("requests: {nvidia.com/gpu: 1}\nlimits: {nvidia.com/gpu: 2}"),
			want: []problem{{"containers[0].resources.requests", `Invalid value: "1": must be equal to nvidia.com/gpu limit of 2`}}},
		{name: "extended resource without a limit", spec: containerResources("requests: {nvidia.com/gpu: 1}"),
			want: []problem{{"containers[0].resources.limits", "Limit must be set for non overcommitable resources"}}},
		{name: "extended resource in fractions", spec: containerResources("limits: {nvidia.com/gpu: 500m}"),
			want: []problem{{"containers[0].resources.limits[nvidia.com/gpu]", `Invalid value: "500m": must be an integer`}}, limitOnly: true},
		{name: "negative extended resource", spec: containerResources("limits: {example.com/widget: \"-1\"}"),
			want: []problem{{"containers[0].resources.limits[example.com/widget]", "must be greater than or equal to 0"}}, limitOnly: true},
		{name: "pod-level request above limit", spec: "resources:\n  requests: {cpu: \"2\"}\n  limits: {cpu: \"1\"}\n" + containerResources("requests: {cpu: 1m}"),
			want: []problem{{"resources.requests", "must be less than or equal to cpu limit of 1"}}},
		{name: "negative overhead", spec: "overhead: {cpu: \"-1\"}\n" + containerResources("requests: {cpu: 1m}"),
			want: []problem{{"overhead[cpu]", "must be greater than or equal to 0"}}},
	} {
		for _, k := range podTemplateKinds {
			t.Run(k.kind+"/"+tc.name, func(t *testing.T) {
				problems := validate(t, v, k.wrap(tc.spec))
				want := tc.want
				if tc.limitOnly && k.kind == "Pod" {
					for _, w := range tc.want {
						want = append(want, problem{strings.Replace(w.field, ".limits[", ".requests[", 1), w.message})
					}
				}
				errs := errorsOf(problems)
				if len(errs) != len(want) {
					t.Fatalf("%d errors, want %d:%s", len(errs), len(want), dump(problems))
				}
				for _, w := range want {
					field := k.path + "." + w.field
					p, ok := find(problems, field, SeverityError, w.message)
					if !ok {
						t.Fatalf("no error at %s with %q:%s", field, w.message, dump(problems))
					}
					if p.Kind != k.kind || p.Fix == "" {
						t.Errorf("kind %q, fix %q", p.Kind, p.Fix)
					}
				}
			})
		}
	}
}

// TestNegativeQuantitiesOfServedKinds checks that negative NodePool limits
// and NodeClaim requests, which the CRD schemas accept, are refused.
func TestNegativeQuantitiesOfServedKinds(t *testing.T) {
	v := testValidator(t)
	nodePool := func(limits string) string {
		return `apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: default
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
  limits:
` + indent(limits, "    ")
	}
	nodeClaim := func(requests string) string {
		return `apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: default
spec:
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  requirements:
    - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
  resources:
    requests:
` + indent(requests, "      ")
	}
	for _, tc := range []struct {
		name, yaml, field, message string
	}{
		{name: "limits", yaml: nodePool("cpu: \"1000\"\nmemory: 1000Gi")},
		{name: "limits beyond int64", yaml: nodePool("cpu: \"1e30\"\nmemory: \"1e30\"\nnodes: \"1e30\"")},
		{name: "zero limit", yaml: nodePool("cpu: \"0\"")},
		{name: "negative limit", yaml: nodePool("cpu: \"-1\""), field: "spec.limits.cpu", message: `Invalid value: "-1": must be greater than or equal to 0`},
		{name: "negative integer limit", yaml: nodePool("nodes: -3"), field: "spec.limits.nodes", message: `Invalid value: "-3": must be greater than or equal to 0`},
		{name: "negative extended limit", yaml: nodePool("nvidia.com/gpu: -1m"), field: "spec.limits.nvidia.com/gpu", message: "must be greater than or equal to 0"},
		{name: "requests", yaml: nodeClaim("cpu: 100m")},
		{name: "negative request", yaml: nodeClaim("cpu: -100m"), field: "spec.resources.requests.cpu", message: `Invalid value: "-100m": must be greater than or equal to 0`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			problems := validate(t, v, tc.yaml)
			errs := errorsOf(problems)
			if tc.field == "" {
				if len(errs) > 0 {
					t.Fatalf("want no error:%s", dump(problems))
				}
				return
			}
			p, ok := find(problems, tc.field, SeverityError, tc.message)
			if !ok || len(errs) != 1 || p.Fix == "" {
				t.Fatalf("want one error at %s with %q and a fix:%s", tc.field, tc.message, dump(problems))
			}
		})
	}
}

// ExampleProblem_String shows a refused request as validate prints it.
func ExampleProblem_String_podResources() {
	v, _ := Default()
	problems, _ := v.Documents("web.yaml", strings.NewReader(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: web
          image: web
          resources:
            requests: {cpu: "2"}
            limits: {cpu: "1"}
`))
	for _, p := range problems {
		fmt.Println(p)
	}
	// Output:
	// web.yaml#1: Deployment/web: spec.template.spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1; fix: lower the cpu request to at most 1, or raise the limit
}
