package cluster

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/itchyny/gojq"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// These tests check the configuration in hack/local-cluster without starting
// anything; the end-to-end suite (go test -tags e2e ./test/e2e) starts it.

func configDir(t *testing.T) string {
	t.Helper()
	dir, err := ConfigDir()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestParseFlags(t *testing.T) {
	vars := map[string]string{"RUN": "/r", "PORT": "1234"}
	got, err := parseFlags("x.flags", []byte("# comment\n\n  --a=${RUN}/k  \n--b\n--c=127.0.0.1:${PORT}\n"), vars)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"--a=/r/k", "--b", "--c=127.0.0.1:1234"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if _, err := parseFlags("x.flags", []byte("--a=${RUNN}/k\n"), vars); err == nil || !strings.Contains(err.Error(), "x.flags:1: undefined variable RUNN") {
		t.Errorf("undefined variable: got %v", err)
	}
	if _, err := parseFlags("x.flags", []byte("--a\nb\n"), vars); err == nil || !strings.Contains(err.Error(), "x.flags:2") {
		t.Errorf("not a flag: got %v", err)
	}
}

func TestOverrideFlags(t *testing.T) {
	file := []string{"--a=1", "--b", "--c=x", "--c=y", "--d=2"}
	got := overrideFlags(file, []string{"--c=z", "--d=3", "--e"})
	if want := []string{"--a=1", "--b", "--c=z", "--d=3", "--e"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := overrideFlags(file, nil); !slices.Equal(got, file) {
		t.Errorf("no extra flags: got %q, want the file's %q", got, file)
	}
	// A switch given a value, and a valued flag given as a switch, replace
	// the file's too: the name is what counts.
	if got, want := overrideFlags([]string{"--b", "--a=1"}, []string{"--b=false", "--a"}), []string{"--b=false", "--a"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestFlagFiles reads every component's flag file as Start does, and checks
// that the files they name exist.
func TestFlagFiles(t *testing.T) {
	dir := configDir(t)
	for _, name := range binaries {
		vars := map[string]string{"RUN": "/run", "CONFIG": dir}
		if name != Etcd && name != KubeAPIServer {
			vars["PORT"] = "1"
		}
		args, err := ReadFlags(filepath.Join(dir, name+".flags"), vars)
		if err != nil {
			t.Fatal(err)
		}
		if len(args) == 0 {
			t.Errorf("%s.flags: no flags", name)
		}
		for _, a := range args {
			flag, value, _ := splitFlag(a)
			if strings.HasPrefix(value, dir) {
				if _, err := os.Stat(value); err != nil {
					t.Errorf("%s.flags: --%s names a missing file: %v", name, flag, err)
				}
			}
		}
	}
}

// stage is the part of kwok's Stage that the local cluster uses.
type stage struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		ResourceRef struct {
			APIGroup string `json:"apiGroup"`
			Kind     string `json:"kind"`
		} `json:"resourceRef"`
		Steps []struct {
			Patch *struct {
				Subresource string `json:"subresource"`
				Root        string `json:"root"`
				Type        string `json:"type"`
				Template    string `json:"template"`
			} `json:"patch"`
			Delete bool `json:"delete"`
		} `json:"steps"`
		Delay struct {
			DurationMilliseconds *int64 `json:"durationMilliseconds"`
			DurationFrom         *struct {
				JQ struct {
					Expression string `json:"expression"`
				} `json:"jq"`
			} `json:"durationFrom"`
		} `json:"delay"`
	} `json:"spec"`
}

// delay evaluates a stage's delay against obj as kwok does: the jq
// expression's first result, when it is a Go duration string, or else the
// fixed milliseconds.
func delay(t *testing.T, s stage, obj any) time.Duration {
	t.Helper()
	d := s.Spec.Delay
	fallback := time.Duration(0)
	if d.DurationMilliseconds != nil {
		fallback = time.Duration(*d.DurationMilliseconds) * time.Millisecond
	}
	if d.DurationFrom == nil {
		return fallback
	}
	q, err := gojq.Parse(d.DurationFrom.JQ.Expression)
	if err != nil {
		t.Fatalf("stage %s: delay expression: %v", s.Metadata.Name, err)
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var in any
	if err := json.Unmarshal(raw, &in); err != nil {
		t.Fatal(err)
	}
	v, ok := q.Run(in).Next()
	if !ok {
		return fallback
	}
	if err, isErr := v.(error); isErr {
		t.Fatalf("stage %s: delay expression: %v", s.Metadata.Name, err)
	}
	str, isString := v.(string)
	if !isString {
		return fallback
	}
	out, err := time.ParseDuration(str)
	if err != nil {
		return fallback
	}
	return out
}

func readStages(t *testing.T, file string) map[string]stage {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(configDir(t), "kwok", file))
	if err != nil {
		t.Fatal(err)
	}
	stages := map[string]stage{}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var s stage
		if err := yaml.Unmarshal([]byte(doc), &s); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if s.APIVersion != "kwok.x-k8s.io/v1alpha1" || s.Kind != "Stage" || s.Metadata.Name == "" {
			t.Fatalf("%s: not a named kwok Stage: %+v", file, s)
		}
		if _, dup := stages[s.Metadata.Name]; dup {
			t.Fatalf("%s: two stages named %s", file, s.Metadata.Name)
		}
		stages[s.Metadata.Name] = s
	}
	return stages
}

// render executes a stage's patch template as kwok would, with stand-ins for
// kwok's template functions, against obj, and parses the result.
func render(t *testing.T, s stage, obj any) map[string]any {
	t.Helper()
	if len(s.Spec.Steps) == 0 || s.Spec.Steps[0].Patch == nil {
		t.Fatalf("stage %s has no patch step", s.Metadata.Name)
	}
	p := s.Spec.Steps[0].Patch
	if p.Subresource != "status" || p.Root != "status" || p.Type != "strategic" {
		t.Errorf("stage %s: patch %s/%s/%s, want a strategic merge patch of the status", s.Metadata.Name, p.Subresource, p.Root, p.Type)
	}
	funcs := template.FuncMap{
		// kwok's own.
		"Now":        func() string { return "2026-01-02T03:04:05Z" },
		"Quote":      quoteAny,
		"NodeIP":     func() string { return "10.240.0.1" },
		"NodeIPWith": func(string) string { return "10.1.2.3" },
		"PodIPWith":  func(string, bool, string, string, string) string { return "10.244.0.7" },
		// sprig's, which kwok includes.
		"dict":   func() map[string]any { return map[string]any{} },
		"get":    func(m map[string]any, k string) any { return m[k] },
		"toJson": func(v any) string { b, _ := json.Marshal(v); return string(b) },
	}
	tmpl, err := template.New(s.Metadata.Name).Funcs(funcs).Parse(p.Template)
	if err != nil {
		t.Fatalf("stage %s: %v", s.Metadata.Name, err)
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var data map[string]any
	if err := json.Unmarshal(raw, &data); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := tmpl.Execute(&out, data); err != nil {
		t.Fatalf("stage %s: %v", s.Metadata.Name, err)
	}
	var status map[string]any
	if err := yaml.Unmarshal(out.Bytes(), &status); err != nil {
		t.Fatalf("stage %s renders invalid YAML: %v\n%s", s.Metadata.Name, err, out.String())
	}
	return status
}

func TestNodeStages(t *testing.T) {
	stages := readStages(t, "node-stages.yaml")
	for _, name := range []string{"node-ready", "node-heartbeat"} {
		if stages[name].Spec.ResourceRef.Kind != "Node" {
			t.Fatalf("no Node stage %s", name)
		}
	}

	// A Node as stevedore's instances register it keeps its resources,
	// addresses and architecture.
	registered := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "ip-10-1-2-3.ec2.internal", UID: "u1", Labels: map[string]string{"kubernetes.io/arch": "arm64"}},
		Status: corev1.NodeStatus{
			Capacity:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("58")},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.1.2.3"}},
		},
	}
	status := render(t, stages["node-ready"], registered)
	if status["phase"] != "Running" {
		t.Errorf("phase %v", status["phase"])
	}
	if _, ok := status["capacity"]; ok {
		t.Errorf("capacity overwritten: %v", status["capacity"])
	}
	if _, ok := status["addresses"]; ok {
		t.Errorf("addresses overwritten: %v", status["addresses"])
	}
	if got := status["allocatable"].(map[string]any)["pods"]; got != "58" {
		t.Errorf("allocatable pods %v, want the registered capacity's 58", got)
	}
	if got := status["nodeInfo"].(map[string]any)["architecture"]; got != "arm64" {
		t.Errorf("architecture %v, want the label's arm64", got)
	}
	if !hasCondition(status, "Ready", "True") {
		t.Errorf("no Ready condition: %v", status["conditions"])
	}

	// A bare Node gets defaults.
	status = render(t, stages["node-ready"], &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "bare"}})
	if status["capacity"] == nil || status["allocatable"] == nil || status["addresses"] == nil {
		t.Errorf("bare node: %v", status)
	}

	ready := registered.DeepCopy()
	ready.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}, {Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse}}
	status = render(t, stages["node-heartbeat"], ready)
	if conds, _ := status["conditions"].([]any); len(conds) != 2 {
		t.Errorf("heartbeat conditions %v", status["conditions"])
	}
}

func TestPodStages(t *testing.T) {
	stages := readStages(t, "pod-stages.yaml")
	for _, name := range []string{"pod-running", "pod-succeeded", "pod-terminating", "pod-deleted"} {
		if stages[name].Spec.ResourceRef.Kind != "Pod" {
			t.Fatalf("no Pod stage %s", name)
		}
	}
	if !stages["pod-deleted"].Spec.Steps[0].Delete {
		t.Error("pod-deleted does not delete")
	}

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "n", UID: "u"},
		Spec: corev1.PodSpec{
			NodeName: "node",
			InitContainers: []corev1.Container{
				{Name: "setup", Image: "setup:1"},
				{Name: "sidecar", Image: "proxy:1", RestartPolicy: new(corev1.ContainerRestartPolicyAlways)},
			},
			Containers: []corev1.Container{{Name: "a", Image: "a:1"}, {Name: "b", Image: "b:1"}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	status := render(t, stages["pod-running"], pod)
	if status["phase"] != "Running" || status["podIP"] != "10.244.0.7" || status["hostIP"] != "10.1.2.3" {
		t.Errorf("running: %v", status)
	}
	if !hasCondition(status, "Ready", "True") {
		t.Errorf("not Ready: %v", status["conditions"])
	}
	if got := containerStates(status, "containerStatuses"); !slices.Equal(got, []string{"a:running", "b:running"}) {
		t.Errorf("containers %v", got)
	}
	if got := containerStates(status, "initContainerStatuses"); !slices.Equal(got, []string{"setup:terminated", "sidecar:running"}) {
		t.Errorf("init containers %v", got)
	}

	pod.Status.Phase = corev1.PodRunning
	for name, phase := range map[string]string{"pod-succeeded": "Succeeded", "pod-terminating": "Failed"} {
		status := render(t, stages[name], pod)
		if status["phase"] != phase || !hasCondition(status, "Ready", "False") {
			t.Errorf("%s: %v", name, status)
		}
		if got := containerStates(status, "containerStatuses"); !slices.Equal(got, []string{"a:terminated", "b:terminated"}) {
			t.Errorf("%s: containers %v", name, got)
		}
	}
}

// quoteAny renders a value as a quoted YAML (JSON) string, as kwok's Quote.
func quoteAny(v any) string {
	if s, ok := v.(string); ok {
		b, _ := json.Marshal(s)
		return string(b)
	}
	b, _ := json.Marshal(v)
	q, _ := json.Marshal(string(b))
	return string(q)
}

func hasCondition(status map[string]any, typ, value string) bool {
	conds, _ := status["conditions"].([]any)
	for _, c := range conds {
		m := c.(map[string]any)
		if m["type"] == typ && m["status"] == value {
			return true
		}
	}
	return false
}

// containerStates lists "name:state" for the statuses under key.
func containerStates(status map[string]any, key string) []string {
	var out []string
	list, _ := status[key].([]any)
	for _, c := range list {
		m := c.(map[string]any)
		for state := range m["state"].(map[string]any) {
			out = append(out, m["name"].(string)+":"+state)
		}
	}
	return out
}

// kwokOptions reads the options of a KwokConfiguration in kwok/.
func kwokOptions(t *testing.T, file string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(configDir(t), "kwok", file))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		APIVersion string         `json:"apiVersion"`
		Kind       string         `json:"kind"`
		Options    map[string]any `json:"options"`
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.APIVersion != "config.kwok.x-k8s.io/v1alpha1" || cfg.Kind != "KwokConfiguration" {
		t.Fatalf("%s: not a KwokConfiguration: %s %s", file, cfg.APIVersion, cfg.Kind)
	}
	return cfg.Options
}

// kwokParallelism are the options that set how many workers kwok runs.
var kwokParallelism = []string{"podPlayStageParallelism", "nodePlayStageParallelism", "nodeLeaseParallelism", "podsOnNodeSyncParallelism"}

func TestKWOKConfiguration(t *testing.T) {
	options := kwokOptions(t, "config.yaml")
	if got := options["manageNodesWithAnnotationSelector"]; got != KWOKNodeAnnotation+"="+KWOKNodeValue {
		t.Errorf("kwok manages nodes matching %v, want %s=%s", got, KWOKNodeAnnotation, KWOKNodeValue)
	}
	// kwok does not default a configuration it reads: a parallelism left at
	// zero stops it at start-up.
	for _, k := range kwokParallelism {
		if n, _ := options[k].(float64); n < 1 {
			t.Errorf("options.%s = %v, want at least 1", k, options[k])
		}
	}
}

// The scale measurement's kwok configuration is the suite's with more
// workers: nothing else may drift apart.
func TestKWOKScaleConfiguration(t *testing.T) {
	suite, scale := kwokOptions(t, "config.yaml"), kwokOptions(t, "config-scale.yaml")
	for k, v := range suite {
		if slices.Contains(kwokParallelism, k) {
			if n, _ := scale[k].(float64); n < v.(float64) {
				t.Errorf("config-scale.yaml: options.%s = %v, fewer than config.yaml's %v", k, scale[k], v)
			}
			continue
		}
		if scale[k] != v {
			t.Errorf("config-scale.yaml: options.%s = %v, config.yaml has %v", k, scale[k], v)
		}
	}
	for k := range scale {
		if _, ok := suite[k]; !ok {
			t.Errorf("config-scale.yaml: options.%s is not in config.yaml", k)
		}
	}
}

// A pod being deleted stops after a second; one with a preStop hook (a sleep
// action, or KWOK's delay annotation) stops after the hook, cut short by the
// deletion's grace period, as the kubelet runs it (Karpenter's drain-order and
// grace-period specs count on it); the stop-delay annotation overrides both.
func TestPodStopDelay(t *testing.T) {
	stages := readStages(t, "pod-stages.yaml")
	sleep := func(seconds int64) *corev1.Lifecycle {
		return &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: seconds}}}
	}
	tests := []struct {
		name        string
		containers  []corev1.Container
		tgp         *int64
		deleteGrace *int64
		annotation  string
		want        time.Duration
	}{
		{"no hook", []corev1.Container{{Name: "a"}}, new(int64(30)), new(int64(30)), "", time.Second},
		{"sleep shorter than the grace period", []corev1.Container{{Name: "a", Lifecycle: sleep(20)}}, new(int64(60)), new(int64(60)), "", 20 * time.Second},
		{"sleep cut short by the grace period", []corev1.Container{{Name: "a", Lifecycle: sleep(300)}}, new(int64(30)), new(int64(30)), "", 30 * time.Second},
		{"the deletion's own grace period", []corev1.Container{{Name: "a", Lifecycle: sleep(300)}}, new(int64(30)), new(int64(5)), "", 5 * time.Second},
		{"the pod's grace period before the deletion sets one", []corev1.Container{{Name: "a", Lifecycle: sleep(300)}}, new(int64(45)), nil, "", 45 * time.Second},
		{"the longest hook of several containers", []corev1.Container{{Name: "a", Lifecycle: sleep(10)}, {Name: "b", Lifecycle: sleep(40)}, {Name: "c"}}, new(int64(60)), new(int64(60)), "", 40 * time.Second},
		{"zero grace", []corev1.Container{{Name: "a", Lifecycle: sleep(300)}}, new(int64(0)), new(int64(0)), "", time.Second},
		{"annotation wins", []corev1.Container{{Name: "a", Lifecycle: sleep(300)}}, new(int64(30)), new(int64(30)), "500ms", 500 * time.Millisecond},
	}
	// KWOK's own delay annotation, as Karpenter's test pods with an exec
	// preStop hook carry it.
	kwokDelay := []struct {
		value string
		grace int64
		want  time.Duration
	}{
		{"300s", 30, 30 * time.Second},
		{"20s", 60, 20 * time.Second},
		{"1m", 90, time.Minute},
		{"1500ms", 30, 1500 * time.Millisecond},
		{"1h", 45, 45 * time.Second},
		{"soon", 30, time.Second},
	}
	for _, name := range []string{"pod-terminating", "pod-deleted"} {
		for _, tc := range tests {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				now := metav1.Now()
				pod := &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "n", DeletionTimestamp: &now, DeletionGracePeriodSeconds: tc.deleteGrace},
					Spec:       corev1.PodSpec{Containers: tc.containers, TerminationGracePeriodSeconds: tc.tgp},
				}
				if tc.annotation != "" {
					pod.Annotations = map[string]string{"kwok.stevedore.io/stop-delay": tc.annotation}
				}
				if got := delay(t, stages[name], pod); got != tc.want {
					t.Errorf("delay = %s, want %s", got, tc.want)
				}
			})
		}
		for _, tc := range kwokDelay {
			t.Run(name+"/KWOK delay "+tc.value, func(t *testing.T) {
				now := metav1.Now()
				pod := &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "n", DeletionTimestamp: &now, DeletionGracePeriodSeconds: &tc.grace,
						Annotations: map[string]string{"pod-delete.stage.kwok.x-k8s.io/delay": tc.value}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}, TerminationGracePeriodSeconds: &tc.grace},
				}
				if got := delay(t, stages[name], pod); got != tc.want {
					t.Errorf("delay = %s, want %s", got, tc.want)
				}
			})
		}
	}
}
