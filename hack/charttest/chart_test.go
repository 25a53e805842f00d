package charttest

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"sigs.k8s.io/yaml"
)

const chartDir = "../../charts/stevedore"

// object is the part of a rendered manifest the tests read.
type object struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   map[string]any `json:"metadata"`
	Spec       map[string]any `json:"spec"`
	Rules      []rule         `json:"rules"`
	// Raw is the whole manifest.
	Raw map[string]any `json:"-"`
}

type rule struct {
	APIGroups       []string `json:"apiGroups"`
	NonResourceURLs []string `json:"nonResourceURLs"`
	Resources       []string `json:"resources"`
	ResourceNames   []string `json:"resourceNames"`
	Verbs           []string `json:"verbs"`
}

// render renders the chart with values over its defaults, as
// `helm template stevedore charts/stevedore -n stevedore` does, with
// testImage as the default image.
func render(t *testing.T, values map[string]any) []object {
	t.Helper()
	return renderCaps(t, values, chartutil.DefaultCapabilities)
}

// testImage is the image the tests install unless they set one: the chart
// has no default.
const testImage = "registry.example.com/stevedore"

// loadWithImage loads the chart with testImage as the default of
// controller.image.repository, as if the user had set it.
func loadWithImage(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	ch.Values["controller"].(map[string]any)["image"].(map[string]any)["repository"] = testImage
	return ch
}

func renderChart(ch *chart.Chart, values map[string]any) ([]object, error) {
	return renderChartCaps(ch, values, chartutil.DefaultCapabilities)
}

// renderChartCaps renders as on a cluster with the capabilities caps
// (API versions, Kubernetes version).
func renderChartCaps(ch *chart.Chart, values map[string]any, caps *chartutil.Capabilities) ([]object, error) {
	return renderRelease(ch, values, chartutil.ReleaseOptions{Name: "stevedore", Namespace: "stevedore", IsInstall: true, Revision: 1}, caps)
}

// renderRelease renders ch as the release opts on a cluster of caps.
func renderRelease(ch *chart.Chart, values map[string]any, opts chartutil.ReleaseOptions, caps *chartutil.Capabilities) ([]object, error) {
	vals, err := chartutil.ToRenderValues(ch, values, opts, caps)
	if err != nil {
		return nil, err
	}
	files, err := engine.Render(ch, vals)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	var objs []object
	for _, n := range names {
		if !strings.HasSuffix(n, ".yaml") {
			continue
		}
		for _, doc := range strings.Split(files[n], "\n---") {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			var o object
			if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
				return nil, err
			}
			if err := yaml.Unmarshal([]byte(doc), &o.Raw); err != nil {
				return nil, err
			}
			if o.Kind != "" {
				objs = append(objs, o)
			}
		}
	}
	return objs, nil
}

func find(objs []object, kind string) []object {
	var out []object
	for _, o := range objs {
		if o.Kind == kind {
			out = append(out, o)
		}
	}
	return out
}

var required = map[string]any{"settings": map[string]any{"clusterName": "my-cluster"}}

func deployment(t *testing.T, objs []object) map[string]any {
	t.Helper()
	d := find(objs, "Deployment")
	if len(d) != 1 {
		t.Fatalf("%d Deployments", len(d))
	}
	return d[0].Spec
}

// env returns the controller container's environment variables.
func env(t *testing.T, spec map[string]any) map[string]string {
	t.Helper()
	tmpl := spec["template"].(map[string]any)["spec"].(map[string]any)
	c := tmpl["containers"].([]any)[0].(map[string]any)
	out := map[string]string{}
	for _, e := range c["env"].([]any) {
		m := e.(map[string]any)
		v, _ := m["value"].(string)
		if _, ok := out[m["name"].(string)]; !ok || v != "" {
			out[m["name"].(string)] = v
		}
	}
	return out
}

func TestRendersWithDefaults(t *testing.T) {
	objs := render(t, required)
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.Kind]++
	}
	for _, k := range []string{"Deployment", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Service", "PodDisruptionBudget"} {
		if kinds[k] == 0 {
			t.Errorf("no %s rendered; got %v", k, kinds)
		}
	}
	spec := deployment(t, objs)
	if r, _ := spec["replicas"].(float64); r != 2 {
		t.Errorf("replicas = %v, want 2", spec["replicas"])
	}
	tmpl := spec["template"].(map[string]any)["spec"].(map[string]any)
	if tmpl["priorityClassName"] != "system-cluster-critical" {
		t.Errorf("priorityClassName = %v", tmpl["priorityClassName"])
	}
	c := tmpl["containers"].([]any)[0].(map[string]any)
	for _, probe := range []string{"livenessProbe", "readinessProbe"} {
		if c[probe] == nil {
			t.Errorf("no %s", probe)
		}
	}
	e := env(t, spec)
	if e["CLUSTER_NAME"] != "my-cluster" || e["VM_MEMORY_OVERHEAD_PERCENT"] != "0.075" || e["LOG_LEVEL"] != "info" {
		t.Errorf("env = %v", e)
	}
}

func TestClusterNameRequired(t *testing.T) {
	if _, err := renderChart(loadWithImage(t), nil); err == nil || !strings.Contains(err.Error(), "settings.clusterName is required") {
		t.Errorf("render without clusterName: %v", err)
	}
}

// TestImage: the chart has no default image (stevedore publishes none), so
// rendering without one fails and says how to build and name it; a values
// file that still names Karpenter's controller image fails too, instead of
// deploying Karpenter; an image of one's own renders as tag, digest or
// both.
func TestImage(t *testing.T) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	image := func(img map[string]any) map[string]any {
		return map[string]any{"settings": required["settings"], "controller": map[string]any{"image": img}}
	}
	const karpenterDigest = "sha256:ea731b0cd813add8b2947a76bfe861c38069d85922b01d0c1647d1466279b7fe"
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   string // the image, or what the error says
		fails  bool
	}{
		{"no image", required, "controller.image.repository is not set: stevedore publishes no image", true},
		{"empty repository", image(map[string]any{"repository": "", "tag": "v1"}), "make image", true},
		{"Karpenter's values", image(map[string]any{"repository": "public.ecr.aws/karpenter/controller", "tag": "1.14.1", "digest": karpenterDigest}),
			"controller.image.repository is public.ecr.aws/karpenter/controller, Karpenter's controller image", true},
		{"Karpenter's image from a mirror", image(map[string]any{"repository": "123456789012.dkr.ecr.eu-west-1.amazonaws.com/karpenter/controller"}),
			"Karpenter's controller image", true},
		{"tag", image(map[string]any{"repository": "registry.example.com/stevedore", "tag": "v0.1.0"}), "registry.example.com/stevedore:v0.1.0", false},
		{"digest", image(map[string]any{"repository": "registry.example.com/stevedore", "digest": "sha256:0123"}), "registry.example.com/stevedore@sha256:0123", false},
		{"chart's appVersion", image(map[string]any{"repository": "registry.example.com/stevedore"}), "registry.example.com/stevedore:" + ch.Metadata.AppVersion, false},
		{"an image named like Karpenter's but not it", image(map[string]any{"repository": "registry.example.com/karpenter/controller-stevedore", "tag": "v1"}),
			"registry.example.com/karpenter/controller-stevedore:v1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := renderChart(ch, tc.values)
			if tc.fails {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("render: %v, want an error saying %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			ctr := deployment(t, objs)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
			if ctr["image"] != tc.want {
				t.Errorf("image = %v, want %s", ctr["image"], tc.want)
			}
		})
	}
}

func TestSettingsFlowIntoEnv(t *testing.T) {
	objs := render(t, map[string]any{
		"logLevel": "debug",
		"settings": map[string]any{
			"clusterName": "prod", "clusterEndpoint": "https://example.eks.amazonaws.com",
			"interruptionQueue": "prod-queue", "isolatedVPC": true,
			"vmMemoryOverheadPercent": 0.1, "reservedENIs": 1,
		},
	})
	got := env(t, deployment(t, objs))
	for k, v := range map[string]string{
		"CLUSTER_NAME": "prod", "CLUSTER_ENDPOINT": "https://example.eks.amazonaws.com",
		"INTERRUPTION_QUEUE": "prod-queue", "ISOLATED_VPC": "true",
		"VM_MEMORY_OVERHEAD_PERCENT": "0.1", "RESERVED_ENIS": "1", "LOG_LEVEL": "debug",
		"BATCH_IDLE_DURATION": "1s", "BATCH_MAX_DURATION": "10s", "PREFERENCE_POLICY": "Respect",
	} {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

func TestRBAC(t *testing.T) {
	objs := render(t, required)
	var rules []rule
	for _, kind := range []string{"ClusterRole", "Role"} {
		for _, o := range find(objs, kind) {
			if labels, _ := o.Metadata["labels"].(map[string]any); labels["rbac.authorization.k8s.io/aggregate-to-admin"] == "true" {
				continue // aggregated into the admin role, not bound to the controller
			}
			rules = append(rules, o.Rules...)
		}
	}
	allows := func(group, resource, verb string) bool {
		for _, r := range rules {
			if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
				return true
			}
		}
		return false
	}
	for _, r := range rules {
		for _, s := range slices.Concat(r.APIGroups, r.Resources, r.Verbs) {
			if strings.Contains(s, "*") {
				t.Errorf("wildcard %q in rule %+v", s, r)
			}
		}
	}
	for _, want := range [][3]string{
		{"", "pods/eviction", "create"},
		{"", "nodes", "delete"},
		{"", "pods", "list"},
		{"karpenter.sh", "nodeclaims", "create"},
		{"karpenter.sh", "nodeclaims/status", "patch"},
		{"karpenter.sh", "nodepools/status", "patch"},
		{"karpenter.sh", "nodeoverlays", "watch"},
		{"karpenter.sh", "nodeoverlays/status", "patch"},
		{"karpenter.k8s.aws", "ec2nodeclasses/status", "patch"},
		{"coordination.k8s.io", "leases", "update"},
		{"events.k8s.io", "events", "create"},
		{"storage.k8s.io", "volumeattachments", "list"},
		{"policy", "poddisruptionbudgets", "watch"},
		{"apps", "daemonsets", "watch"},
	} {
		if !allows(want[0], want[1], want[2]) {
			t.Errorf("RBAC does not allow %s on %s (group %q)", want[2], want[1], want[0])
		}
	}
	if allows("", "secrets", "get") {
		t.Error("RBAC grants secrets")
	}
}

// TestSecureMetrics: controller.metrics.secure turns on the controller's
// HTTPS, authenticated metrics, gives its ServiceAccount the reviews the
// filter makes, ships the ClusterRole a scraper is bound to, and points the
// ServiceMonitor at HTTPS with the scraper's token. Off (the default)
// leaves all of that out, as Karpenter's chart renders.
func TestSecureMetrics(t *testing.T) {
	for _, secure := range []bool{false, true} {
		values := map[string]any{"settings": required["settings"], "serviceMonitor": map[string]any{"enabled": true},
			"controller": map[string]any{"metrics": map[string]any{"secure": secure}}}
		objs := renderCaps(t, values, withMonitoring())
		if got := env(t, deployment(t, objs))["METRICS_SECURE"]; (got == "true") != secure {
			t.Errorf("secure=%v: METRICS_SECURE=%q", secure, got)
		}
		reviews, reader := 0, false
		for _, o := range find(objs, "ClusterRole") {
			for _, r := range o.Rules {
				if (slices.Contains(r.Resources, "tokenreviews") || slices.Contains(r.Resources, "subjectaccessreviews")) && slices.Equal(r.Verbs, []string{"create"}) {
					reviews++
				}
				if slices.Equal(r.NonResourceURLs, []string{"/metrics"}) && slices.Equal(r.Verbs, []string{"get"}) {
					reader = strings.HasSuffix(o.Metadata["name"].(string), "-metrics-reader")
				}
			}
		}
		if want := map[bool]int{false: 0, true: 2}[secure]; reviews != want || reader != secure {
			t.Errorf("secure=%v: %d review rules (want %d), metrics-reader ClusterRole %v", secure, reviews, want, reader)
		}
		sm := find(objs, "ServiceMonitor")
		if len(sm) != 1 {
			t.Fatalf("%d ServiceMonitors", len(sm))
		}
		ep := sm[0].Spec["endpoints"].([]any)[0].(map[string]any)
		if scheme, _ := ep["scheme"].(string); (scheme == "https") != secure || (ep["bearerTokenFile"] != nil) != secure {
			t.Errorf("secure=%v: ServiceMonitor endpoint %v", secure, ep)
		}
	}
}

func TestServiceMonitorToggle(t *testing.T) {
	if n := len(find(render(t, required), "ServiceMonitor")); n != 0 {
		t.Errorf("%d ServiceMonitors by default, want 0", n)
	}
	on := map[string]any{"settings": required["settings"], "serviceMonitor": map[string]any{"enabled": true}}
	if n := len(find(renderCaps(t, on, withMonitoring()), "ServiceMonitor")); n != 1 {
		t.Errorf("%d ServiceMonitors when enabled, want 1", n)
	}
}

func TestIRSAAnnotation(t *testing.T) {
	arn := "arn:aws:iam::123456789012:role/stevedore"
	objs := render(t, map[string]any{"settings": required["settings"],
		"serviceAccount": map[string]any{"annotations": map[string]any{"eks.amazonaws.com/role-arn": arn}}})
	sa := find(objs, "ServiceAccount")
	if len(sa) != 1 {
		t.Fatalf("%d ServiceAccounts", len(sa))
	}
	ann, _ := sa[0].Metadata["annotations"].(map[string]any)
	if ann["eks.amazonaws.com/role-arn"] != arn {
		t.Errorf("annotations = %v", ann)
	}
}

// TestCRDsMatchTheEmbeddedOnes: the chart's crds/ are copies of the CRDs the
// binary embeds (api/crds) and must not drift from them.
func TestCRDsMatchTheEmbeddedOnes(t *testing.T) {
	src, err := filepath.Glob("../../api/crds/*.yaml")
	if err != nil || len(src) == 0 {
		t.Fatalf("no CRDs in api/crds: %v", err)
	}
	inChart, err := filepath.Glob(filepath.Join(chartDir, "crds", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(inChart) != len(src) {
		t.Errorf("chart has %d CRDs, api/crds %d", len(inChart), len(src))
	}
	for _, s := range src {
		want, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(chartDir, "crds", filepath.Base(s)))
		if err != nil {
			t.Errorf("%v: copy it from api/crds", err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("charts/stevedore/crds/%s differs from api/crds: copy it again", filepath.Base(s))
		}
	}
	// Helm installs crds/ as they are: they must parse.
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(ch.CRDObjects()); n != len(src) {
		t.Errorf("Helm sees %d CRDs, want %d", n, len(src))
	}
}
