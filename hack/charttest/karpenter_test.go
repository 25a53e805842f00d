package charttest

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"sigs.k8s.io/yaml"
)

// withMonitoring are the capabilities of a cluster that serves the
// Prometheus operator's API.
func withMonitoring() *chartutil.Capabilities {
	caps := chartutil.DefaultCapabilities.Copy()
	caps.APIVersions = append(caps.APIVersions, "monitoring.coreos.com/v1", "monitoring.coreos.com/v1/ServiceMonitor")
	return caps
}

// renderCaps renders the chart with values on a cluster of caps.
func renderCaps(t *testing.T, values map[string]any, caps *chartutil.Capabilities) []object {
	t.Helper()
	objs, err := renderChartCaps(loadWithImage(t), values, caps)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// path walks m along keys (string for maps, int for lists).
func path(t *testing.T, m any, keys ...any) any {
	t.Helper()
	cur := m
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			mm, ok := cur.(map[string]any)
			if !ok {
				t.Fatalf("%v: %v is not a map", keys, cur)
			}
			cur = mm[k]
		case int:
			l, ok := cur.([]any)
			if !ok || k >= len(l) {
				t.Fatalf("%v: %v is not a list of more than %d", keys, cur, k)
			}
			cur = l[k]
		}
	}
	return cur
}

// asJSON turns v into the form a rendered manifest reads back as.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := yaml.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// envEntries returns the controller container's env entries by name.
func envEntries(t *testing.T, spec map[string]any) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, e := range path(t, spec, "template", "spec", "containers", 0, "env").([]any) {
		m := e.(map[string]any)
		out[m["name"].(string)] = m
	}
	return out
}

func karpenterValues(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile("testdata/karpenter-v1.14-values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestKarpenterValuesFile renders a values file with every key of
// Karpenter's chart (v1.14) and checks that each lands where Karpenter's
// chart puts it.
func TestKarpenterValuesFile(t *testing.T) {
	vals := karpenterValues(t)
	objs := renderCaps(t, vals, withMonitoring())
	spec := deployment(t, objs)
	pod := path(t, spec, "template", "spec").(map[string]any)
	ctr := path(t, pod, "containers", 0).(map[string]any)
	dep := find(objs, "Deployment")[0]
	sel := map[string]any{"app.kubernetes.io/name": "autoscaler", "app.kubernetes.io/instance": "stevedore"}
	v := func(keys ...string) any {
		var cur any = vals
		for _, k := range keys {
			cur = cur.(map[string]any)[k]
		}
		return asJSON(t, cur)
	}
	checks := []struct {
		key       string
		got, want any
	}{
		{"fullnameOverride", dep.Metadata["name"], "karpenter"},
		{"nameOverride", path(t, spec, "selector", "matchLabels", "app.kubernetes.io/name"), "autoscaler"},
		{"additionalLabels", path(t, dep.Metadata, "labels", "team"), "platform"},
		{"additionalAnnotations", path(t, dep.Metadata, "annotations", "owner"), "platform@example.com"},
		{"imagePullPolicy", ctr["imagePullPolicy"], "Always"},
		{"imagePullSecrets", pod["imagePullSecrets"], v("imagePullSecrets")},
		{"serviceAccount.name", pod["serviceAccountName"], "karpenter"},
		{"replicas", spec["replicas"], float64(3)},
		{"revisionHistoryLimit", spec["revisionHistoryLimit"], float64(5)},
		{"strategy", spec["strategy"], v("strategy")},
		{"podLabels", path(t, spec, "template", "metadata", "labels", "app"), "karpenter"},
		{"podAnnotations", path(t, spec, "template", "metadata", "annotations"), v("podAnnotations")},
		{"podSecurityContext", pod["securityContext"], v("podSecurityContext")},
		{"priorityClassName", pod["priorityClassName"], "system-node-critical"},
		{"terminationGracePeriodSeconds", pod["terminationGracePeriodSeconds"], float64(60)},
		{"hostNetwork", pod["hostNetwork"], true},
		{"schedulerName", pod["schedulerName"], "custom-scheduler"},
		{"dnsPolicy", pod["dnsPolicy"], "Default"},
		{"dnsConfig", pod["dnsConfig"], v("dnsConfig")},
		{"initContainers", pod["initContainers"], v("initContainers")},
		{"nodeSelector", pod["nodeSelector"], v("nodeSelector")},
		{"affinity.nodeAffinity", path(t, pod, "affinity", "nodeAffinity"), v("affinity", "nodeAffinity")},
		{"affinity.podAntiAffinity", path(t, pod, "affinity", "podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution", 0),
			map[string]any{"topologyKey": "kubernetes.io/hostname", "labelSelector": map[string]any{"matchLabels": sel}}},
		{"topologySpreadConstraints", path(t, pod, "topologySpreadConstraints", 0), map[string]any{"maxSkew": float64(1),
			"topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": map[string]any{"matchLabels": sel}}},
		{"tolerations", pod["tolerations"], v("tolerations")},
		{"extraVolumes", path(t, pod, "volumes", 0), path(t, v("extraVolumes"), 0)},
		{"controller.containerName", ctr["name"], "karpenter-controller"},
		{"controller.image", ctr["image"], "registry.example.com/stevedore:0.1.0@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
		{"controller.envFrom", ctr["envFrom"], v("controller", "envFrom")},
		{"controller.securityContext", path(t, ctr, "securityContext", "appArmorProfile"), map[string]any{"type": "RuntimeDefault"}},
		{"controller.resources", ctr["resources"], v("controller", "resources")},
		{"controller.extraVolumeMounts", path(t, ctr, "volumeMounts", 0), path(t, v("controller", "extraVolumeMounts"), 0)},
		{"controller.sidecarContainer", path(t, pod, "containers", 1, "name"), "proxy"},
		{"controller.sidecarVolumeMounts", path(t, pod, "containers", 1, "volumeMounts", 1, "mountPath"), "/token"},
		{"controller.metrics.port", path(t, ctr, "ports", 0, "containerPort"), float64(8000)},
		{"controller.healthProbe.port", path(t, ctr, "ports", 1, "containerPort"), float64(8082)},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: got %v, want %v", c.key, c.got, c.want)
		}
	}

	e := env(t, spec)
	for k, want := range map[string]string{
		"AWS_REGION":                          "eu-west-1", // controller.env
		"LOG_LEVEL":                           "debug",
		"LOG_OUTPUT_PATHS":                    "stdout,/var/log/karpenter/controller.log",
		"LOG_ERROR_OUTPUT_PATHS":              "stderr",
		"METRICS_PORT":                        "8000",
		"HEALTH_PROBE_PORT":                   "8082",
		"BATCH_MAX_DURATION":                  "15s",
		"BATCH_IDLE_DURATION":                 "2s",
		"PREFERENCE_POLICY":                   "Ignore",
		"MIN_VALUES_POLICY":                   "BestEffort",
		"CLUSTER_CA_BUNDLE":                   "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t",
		"CLUSTER_NAME":                        "prod",
		"CLUSTER_ENDPOINT":                    "https://ABCDEF.gr7.eu-west-1.eks.amazonaws.com",
		"ISOLATED_VPC":                        "true",
		"EKS_CONTROL_PLANE":                   "true",
		"VM_MEMORY_OVERHEAD_PERCENT":          "0.1",
		"INTERRUPTION_QUEUE":                  "prod-karpenter",
		"RESERVED_ENIS":                       "1",
		"IGNORE_DRA_REQUESTS":                 "false",
		"DISABLE_CLUSTER_STATE_OBSERVABILITY": "true",
		"DISABLE_DRY_RUN":                     "true",
		"ENABLE_ZONAL_SHIFT":                  "true",
		"AMI_REFRESH_INTERVAL":                "5m",
		"SUBNET_REFRESH_INTERVAL":             "2m",
		"FEATURE_GATES":                       "CapacityBuffer=true,NodeOverlay=true,NodeRepair=true,ReservedCapacity=false,SpotToSpotConsolidation=true,StaticCapacity=true",
	} {
		if e[k] != want {
			t.Errorf("env %s = %q, want %q", k, e[k], want)
		}
	}

	sa := find(objs, "ServiceAccount")[0]
	if sa.Metadata["name"] != "karpenter" || path(t, sa.Metadata, "annotations", "eks.amazonaws.com/role-arn") != "arn:aws:iam::123456789012:role/KarpenterController" {
		t.Errorf("serviceAccount: %v", sa.Metadata)
	}
	svc := find(objs, "Service")[0]
	if path(t, svc.Metadata, "annotations", "prometheus.io/scrape") != "true" || path(t, svc.Spec, "ports", 0, "port") != float64(8000) {
		t.Errorf("service: %v %v", svc.Metadata, svc.Spec)
	}
	pdb := find(objs, "PodDisruptionBudget")[0]
	if pdb.Metadata["name"] != "karpenter" || pdb.Spec["maxUnavailable"] != float64(1) {
		t.Errorf("podDisruptionBudget: %v %v", pdb.Metadata, pdb.Spec)
	}
	var extraRule bool
	for _, cr := range find(objs, "ClusterRole") {
		for _, r := range cr.Rules {
			extraRule = extraRule || (len(r.APIGroups) == 1 && r.APIGroups[0] == "example.com")
		}
	}
	if !extraRule {
		t.Error("additionalClusterRoleRules: no rule for example.com in the ClusterRole")
	}
	sm := find(objs, "ServiceMonitor")
	if len(sm) != 1 {
		t.Fatalf("%d ServiceMonitors", len(sm))
	}
	ep := path(t, sm[0].Spec, "endpoints", 0).(map[string]any)
	if path(t, sm[0].Metadata, "labels", "release") != "kube-prometheus-stack" || ep["scrapeTimeout"] != "10s" ||
		!reflect.DeepEqual(ep["relabelings"], v("serviceMonitor", "relabelings")) ||
		!reflect.DeepEqual(ep["metricRelabelings"], v("serviceMonitor", "metricRelabelings")) {
		t.Errorf("serviceMonitor: %v %v", sm[0].Metadata, ep)
	}
}

// TestSchemaRejectsUnknownKeys: a misspelt key fails the install, naming it.
func TestSchemaRejectsUnknownKeys(t *testing.T) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		values map[string]any
		want   string
	}{
		{map[string]any{"settings": map[string]any{"clusterName": "c"}, "replica": 3}, "additional properties 'replica' not allowed"},
		{map[string]any{"settings": map[string]any{"clusterName": "c", "clusterNmae": "c"}}, "additional properties 'clusterNmae' not allowed"},
		{map[string]any{"settings": map[string]any{"clusterName": "c", "featureGates": map[string]any{"drift": true}}}, "'drift'"},
		{map[string]any{"settings": map[string]any{"clusterName": "c"}, "controller": map[string]any{"metrics": map[string]any{"port": "http"}}}, "/controller/metrics/port"},
		{map[string]any{"settings": map[string]any{"clusterName": "c", "batchIdleDuration": "1 second"}}, "/settings/batchIdleDuration"},
	} {
		_, err := renderChart(ch, tc.values)
		if err == nil || !strings.Contains(err.Error(), "values don't meet the specifications of the schema") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want a schema error containing %q", tc.values, err, tc.want)
		}
	}
	// stevedore's own keys still pass.
	if _, err := renderChart(loadWithImage(t), map[string]any{"settings": map[string]any{"clusterName": "c", "featureGates": "NodeRepair=true",
		"disruptionValidationDelay": "30s", "assumeRoleARN": "arn:aws:iam::123456789012:role/x"},
		"controller":          map[string]any{"metricsPort": 9000, "image": map[string]any{"pullPolicy": "Never"}},
		"podDisruptionBudget": map[string]any{"enabled": false}, "webhook": map[string]any{"enabled": true}}); err != nil {
		t.Errorf("stevedore's own keys: %v", err)
	}
}

// TestServiceMonitorNeedsTheAPI: enabled, the ServiceMonitor is rendered
// only where the cluster serves monitoring.coreos.com/v1.
func TestServiceMonitorNeedsTheAPI(t *testing.T) {
	on := map[string]any{"settings": required["settings"], "serviceMonitor": map[string]any{"enabled": true}}
	for _, tc := range []struct {
		name   string
		values map[string]any
		caps   *chartutil.Capabilities
		want   int
	}{
		{"enabled, no API", on, chartutil.DefaultCapabilities, 0},
		{"enabled, API", on, withMonitoring(), 1},
		{"disabled, API", required, withMonitoring(), 0},
	} {
		if n := len(find(renderCaps(t, tc.values, tc.caps), "ServiceMonitor")); n != tc.want {
			t.Errorf("%s: %d ServiceMonitors, want %d", tc.name, n, tc.want)
		}
	}
}

// TestMemoryLimitFromTheContainer: the controller reads its container's
// memory limit (MEMORY_LIMIT, from the downward API, as Karpenter's chart
// sets it) and keeps the Go heap (its GOMEMLIMIT) under 90% of it.
func TestMemoryLimitFromTheContainer(t *testing.T) {
	for _, name := range []string{"", "karpenter-controller"} {
		vals := map[string]any{"settings": required["settings"]}
		if name != "" {
			vals["controller"] = map[string]any{"containerName": name}
		}
		spec := deployment(t, render(t, vals))
		e := envEntries(t, spec)["MEMORY_LIMIT"]
		want := map[string]any{"name": "MEMORY_LIMIT", "valueFrom": map[string]any{"resourceFieldRef": map[string]any{
			"containerName": path(t, spec, "template", "spec", "containers", 0, "name"), "divisor": "0", "resource": "limits.memory"}}}
		if !reflect.DeepEqual(e, want) {
			t.Errorf("containerName %q: MEMORY_LIMIT = %v, want %v", name, e, want)
		}
	}
}

// TestDefaultPlacement: by default, as Karpenter's chart, replicas never
// share a host (required anti-affinity), spread over zones, and keep off
// nodes a NodePool made.
func TestDefaultPlacement(t *testing.T) {
	pod := path(t, deployment(t, render(t, required)), "template", "spec").(map[string]any)
	sel := map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": "stevedore", "app.kubernetes.io/instance": "stevedore"}}
	want := map[string]any{
		"affinity": map[string]any{
			"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{"nodeSelectorTerms": []any{
				map[string]any{"matchExpressions": []any{map[string]any{"key": "karpenter.sh/nodepool", "operator": "DoesNotExist"}}}}}},
			"podAntiAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": []any{
				map[string]any{"topologyKey": "kubernetes.io/hostname", "labelSelector": sel}}},
		},
		"topologySpreadConstraints": []any{map[string]any{"maxSkew": float64(1), "topologyKey": "topology.kubernetes.io/zone",
			"whenUnsatisfiable": "DoNotSchedule", "labelSelector": sel}},
	}
	for k, w := range want {
		if !reflect.DeepEqual(pod[k], w) {
			t.Errorf("%s = %v\nwant %v", k, pod[k], w)
		}
	}
}

// TestAWSFeatureGates: settings.awsFeatureGates, which Karpenter's values
// carry after v1.14, installs and becomes AWS_FEATURE_GATES, which the
// controller reads as Karpenter's does; an unknown gate is a schema error.
func TestAWSFeatureGates(t *testing.T) {
	for _, tc := range []struct {
		gates map[string]any
		want  string
	}{
		{nil, "NodeClassCEL=false"},
		{map[string]any{"nodeClassCEL": false, "dra": false}, "NodeClassCEL=false,DRA=false"},
		{map[string]any{"nodeClassCEL": true}, "NodeClassCEL=true"},
	} {
		settings := map[string]any{"clusterName": "c"}
		if tc.gates != nil {
			settings["awsFeatureGates"] = tc.gates
		}
		if got := env(t, deployment(t, render(t, map[string]any{"settings": settings})))["AWS_FEATURE_GATES"]; got != tc.want {
			t.Errorf("awsFeatureGates %v: AWS_FEATURE_GATES = %q, want %q", tc.gates, got, tc.want)
		}
	}
	_, err := renderChart(loadWithImage(t), map[string]any{"settings": map[string]any{"clusterName": "c", "awsFeatureGates": map[string]any{"nodeClassCel": false}}})
	if err == nil || !strings.Contains(err.Error(), "nodeClassCel") {
		t.Errorf("misspelt AWS gate: %v, want a schema error naming it", err)
	}
}
