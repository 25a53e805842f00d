package charttest

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"sigs.k8s.io/yaml"
)

// karpenterModule is the Go module that holds Karpenter's Helm chart, at
// the release stevedore is compatible with.
const karpenterModule = "github.com/aws/karpenter-provider-aws@v1.14.1"

// karpenterChartDir is charts/karpenter of karpenterModule in the Go module
// cache. The test never downloads (GOPROXY=off): `make charttest` fetches
// the module first.
func karpenterChartDir(t *testing.T) string {
	t.Helper()
	goCmd := os.Getenv("GO")
	if goCmd == "" {
		goCmd = "go"
	}
	cmd := exec.Command(goCmd, "mod", "download", "-json", karpenterModule)
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	var mod struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &mod); err != nil || jerr != nil || mod.Dir == "" {
		t.Fatalf("Karpenter's chart is read from the Go module %s, which is not in the module cache (%v %s): fetch it with `go mod download %s` (make charttest does)",
			karpenterModule, err, mod.Error, karpenterModule)
	}
	return filepath.Join(mod.Dir, "charts", "karpenter")
}

// karpenterChart loads Karpenter's chart and its own values.yaml as a map,
// the file a user of that chart starts from.
func karpenterChart(t *testing.T) (*chart.Chart, map[string]any) {
	t.Helper()
	dir := karpenterChartDir(t)
	ch, err := loader.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var vals map[string]any
	if err := yaml.Unmarshal(b, &vals); err != nil {
		t.Fatal(err)
	}
	return ch, vals
}

// swapValues is what the runbook has a user add to Karpenter's values file
// for the in-place upgrade: the cluster's name (already in their file) and
// stevedore's image instead of Karpenter's.
func swapValues(karpenterValues map[string]any, extra map[string]any) map[string]any {
	v := chartutil.CoalesceTables(map[string]any{
		"settings":   map[string]any{"clusterName": "prod"},
		"controller": map[string]any{"image": map[string]any{"repository": testImage, "tag": "0.1.0", "digest": ""}},
	}, karpenterValues)
	return chartutil.CoalesceTables(extra, v)
}

// upgrade is `helm upgrade karpenter <chart> -n kube-system`.
var upgrade = chartutil.ReleaseOptions{Name: "karpenter", Namespace: "kube-system", IsUpgrade: true, Revision: 2}

func renderBoth(t *testing.T, extra map[string]any, caps *chartutil.Capabilities) (karpenter, stevedore []object) {
	t.Helper()
	kch, kvals := karpenterChart(t)
	vals := swapValues(kvals, extra)
	karpenter, err := renderRelease(kch, vals, upgrade, caps)
	if err != nil {
		t.Fatalf("Karpenter's chart: %v", err)
	}
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	stevedore, err = renderRelease(ch, vals, upgrade, caps)
	if err != nil {
		t.Fatalf("stevedore's chart with Karpenter's values.yaml: %v", err)
	}
	return karpenter, stevedore
}

func key(o object) string {
	ns, _ := o.Metadata["namespace"].(string)
	return fmt.Sprintf("%s %s/%s", o.Kind, ns, o.Metadata["name"])
}

func byKey(objs []object) map[string]object {
	m := map[string]object{}
	for _, o := range objs {
		m[key(o)] = o
	}
	return m
}

// TestInPlaceSwap renders Karpenter's chart and stevedore's with Karpenter's
// own values.yaml as `helm upgrade karpenter … -n kube-system` does, and
// checks what an in-place upgrade depends on: every object Karpenter's
// chart made is still made (so Helm deletes none and nothing bound to a
// name breaks), the Deployment's selector (immutable) and the Service's
// and PDB's selectors are the same, the ServiceAccount is the same (IRSA and
// Pod Identity associations name it), and where both charts render the same
// key they render it the same way.
func TestInPlaceSwap(t *testing.T) {
	karp, stev := renderBoth(t, map[string]any{"serviceMonitor": map[string]any{"enabled": true}}, withMonitoring())
	ours := byKey(stev)
	var missing []string
	for _, o := range karp {
		if _, ok := ours[key(o)]; !ok {
			missing = append(missing, key(o))
		}
	}
	if len(missing) > 0 {
		t.Errorf("objects of Karpenter's release that stevedore's chart would delete: %v", missing)
	}
	theirs := byKey(karp)
	same := func(what string, k string, keys ...any) {
		t.Helper()
		a, b := theirs[k], ours[k]
		if a.Raw == nil || b.Raw == nil {
			t.Errorf("%s: %s missing (Karpenter %v, stevedore %v)", what, k, a.Raw != nil, b.Raw != nil)
			return
		}
		got, want := path(t, b.Raw, keys...), path(t, a.Raw, keys...)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: stevedore renders %v, Karpenter %v", what, asJSON(t, got), asJSON(t, want))
		}
	}
	dep, svc := "Deployment kube-system/karpenter", "Service kube-system/karpenter"
	pod := []any{"spec", "template", "spec"}
	ctr := append(slices.Clone(pod), "containers", 0)
	same("Deployment selector (immutable)", dep, "spec", "selector")
	same("pod labels", dep, "spec", "template", "metadata", "labels")
	same("ServiceAccount of the pod", dep, append(slices.Clone(pod), "serviceAccountName")...)
	same("pod automountServiceAccountToken", dep, append(slices.Clone(pod), "automountServiceAccountToken")...)
	same("pod securityContext", dep, append(slices.Clone(pod), "securityContext")...)
	same("container securityContext", dep, append(slices.Clone(ctr), "securityContext")...)
	same("container resources ({} is none)", dep, append(slices.Clone(ctr), "resources")...)
	same("container ports", dep, append(slices.Clone(ctr), "ports")...)
	same("replicas", dep, "spec", "replicas")
	same("strategy", dep, "spec", "strategy")
	same("pod affinity", dep, append(slices.Clone(pod), "affinity")...)
	same("topology spread", dep, append(slices.Clone(pod), "topologySpreadConstraints")...)
	same("Service selector", svc, "spec", "selector")
	same("Service ports", svc, "spec", "ports")
	same("PDB", "PodDisruptionBudget kube-system/karpenter", "spec")
	same("ServiceAccount automount", "ServiceAccount kube-system/karpenter", "automountServiceAccountToken")
	same("ServiceMonitor", "ServiceMonitor kube-system/karpenter", "spec", "selector")
	same("admin ClusterRole rules", "ClusterRole /karpenter-admin", "rules")
	same("admin ClusterRole aggregation", "ClusterRole /karpenter-admin", "metadata", "labels", "rbac.authorization.k8s.io/aggregate-to-admin")
	for _, b := range []string{"ClusterRoleBinding /karpenter-core", "ClusterRoleBinding /karpenter", "RoleBinding kube-system/karpenter", "RoleBinding kube-system/karpenter-dns"} {
		same(b+" roleRef", b, "roleRef")
		same(b+" subjects", b, "subjects")
	}

	// One Lease for both, so that during the rollout a Karpenter pod and a
	// stevedore pod never lead at once.
	leases := func(o object) []string {
		var names []string
		for _, r := range o.Rules {
			if slices.Contains(r.Resources, "leases") && slices.Contains(r.Verbs, "update") {
				names = append(names, r.ResourceNames...)
			}
		}
		return names
	}
	kl, sl := leases(theirs["Role kube-system/karpenter"]), leases(ours["Role kube-system/karpenter"])
	if len(kl) != 1 || !reflect.DeepEqual(kl, sl) {
		t.Errorf("the Role lets Karpenter update the Lease %v and stevedore %v: they must share one", kl, sl)
	}
	if e := env(t, ours[dep].Spec); len(kl) == 1 && e["LEADER_ELECTION_NAME"] != kl[0] {
		t.Errorf("stevedore elects through LEADER_ELECTION_NAME=%q, Karpenter through %q", e["LEADER_ELECTION_NAME"], kl[0])
	}
}

// TestAdditionalAnnotationsEverywhere: additionalAnnotations lands on every
// object, as with Karpenter's chart.
func TestAdditionalAnnotationsEverywhere(t *testing.T) {
	extra := map[string]any{
		"additionalAnnotations": map[string]any{"owner": "platform"},
		"serviceAccount":        map[string]any{"annotations": map[string]any{"eks.amazonaws.com/role-arn": "arn:aws:iam::123456789012:role/KarpenterController"}},
		"service":               map[string]any{"annotations": map[string]any{"prometheus.io/scrape": "true"}},
		"serviceMonitor":        map[string]any{"enabled": true},
		"controller":            map[string]any{"metrics": map[string]any{"secure": true}},
	}
	karp, stev := renderBoth(t, extra, withMonitoring())
	for _, set := range []struct {
		chart string
		objs  []object
	}{{"Karpenter", karp}, {"stevedore", stev}} {
		for _, o := range set.objs {
			ann, _ := o.Metadata["annotations"].(map[string]any)
			if ann["owner"] != "platform" {
				t.Errorf("%s's chart: %s has annotations %v, without additionalAnnotations", set.chart, key(o), ann)
			}
		}
	}
	ours := byKey(stev)
	if a := path(t, ours["ServiceAccount kube-system/karpenter"].Metadata, "annotations", "eks.amazonaws.com/role-arn"); a == nil {
		t.Error("the ServiceAccount lost its own annotation next to additionalAnnotations")
	}
	if a := path(t, ours["Service kube-system/karpenter"].Metadata, "annotations", "prometheus.io/scrape"); a != "true" {
		t.Error("the Service lost its own annotation next to additionalAnnotations")
	}
}

// TestNames: a release named after Karpenter keeps Karpenter's names; any
// other is named after stevedore; nameOverride wins. A stevedore release
// installed next to Karpenter's in its namespace shares no object with it
// (only the Lease, on purpose).
func TestNames(t *testing.T) {
	ch := loadWithImage(t)
	for _, c := range []struct {
		release, nameOverride string
		wantDeployment        string
		wantLabel             string
	}{
		{"karpenter", "", "karpenter", "karpenter"},
		{"prod-karpenter", "", "prod-karpenter", "karpenter"},
		{"stevedore", "", "stevedore", "stevedore"},
		{"autoscaler", "", "autoscaler-stevedore", "stevedore"},
		{"autoscaler", "karpenter", "autoscaler-karpenter", "karpenter"},
	} {
		vals := map[string]any{"settings": map[string]any{"clusterName": "prod"}, "nameOverride": c.nameOverride}
		objs, err := renderRelease(ch, vals, chartutil.ReleaseOptions{Name: c.release, Namespace: "kube-system", IsInstall: true, Revision: 1}, chartutil.DefaultCapabilities)
		if err != nil {
			t.Fatal(err)
		}
		d := find(objs, "Deployment")[0]
		if d.Metadata["name"] != c.wantDeployment || path(t, d.Spec, "selector", "matchLabels", "app.kubernetes.io/name") != c.wantLabel {
			t.Errorf("release %q nameOverride %q: Deployment %v with selector %v, want %s and name label %s",
				c.release, c.nameOverride, d.Metadata["name"], path(t, d.Spec, "selector"), c.wantDeployment, c.wantLabel)
		}
	}

	karp, _ := renderBoth(t, nil, chartutil.DefaultCapabilities)
	side, err := renderRelease(ch, map[string]any{"settings": map[string]any{"clusterName": "prod"}},
		chartutil.ReleaseOptions{Name: "stevedore", Namespace: "kube-system", IsInstall: true, Revision: 1}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	theirs := byKey(karp)
	for _, o := range side {
		if _, clash := theirs[key(o)]; clash {
			t.Errorf("a stevedore release next to Karpenter's would take over %s", key(o))
		}
	}
}

// TestKarpentersImageRefusedFromTheirValues: Karpenter's values.yaml as it
// is (its controller image, its digest) does not render: it would deploy
// Karpenter under stevedore's chart.
func TestKarpentersImageRefusedFromTheirValues(t *testing.T) {
	_, kvals := karpenterChart(t)
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	vals := chartutil.CoalesceTables(map[string]any{"settings": map[string]any{"clusterName": "prod"}}, kvals)
	_, err = renderRelease(ch, vals, upgrade, chartutil.DefaultCapabilities)
	if err == nil || !strings.Contains(err.Error(), "Karpenter's controller image") {
		t.Fatalf("rendering with Karpenter's image: %v, want the refusal naming Karpenter's controller image", err)
	}
}
