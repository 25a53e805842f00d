package validation

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestUnknownKindsAndVersions checks that a kind or version that does not
// exist in a group the validator knows (built into Kubernetes, Karpenter's,
// stevedore's) is refused with the nearest kind or the versions that exist,
// and that kinds of other groups pass with a warning.
func TestUnknownKindsAndVersions(t *testing.T) {
	v := testValidator(t)
	type want struct {
		field    string
		severity Severity
		message  string
		fix      string
	}
	for _, tc := range []struct {
		name string
		yaml string
		want []want // exactly these problems
	}{
		{
			name: "misspelt kind in apps",
			yaml: "apiVersion: apps/v1\nkind: Deploymnet\nmetadata: {name: web}\n",
			want: []want{{"kind", SeverityError, `apps/v1 has no kind "Deploymnet"`, "write kind: Deployment"}},
		},
		{
			name: "misspelt kind in the core group",
			yaml: "apiVersion: v1\nkind: Podd\nmetadata: {name: p}\n",
			want: []want{{"kind", SeverityError, `v1 has no kind "Podd"`, "write kind: Pod"}},
		},
		{
			name: "misspelt kind in policy",
			yaml: "apiVersion: policy/v1\nkind: PodDisruptionBuget\nmetadata: {name: p}\n",
			want: []want{{"kind", SeverityError, `policy/v1 has no kind "PodDisruptionBuget"`, "write kind: PodDisruptionBudget"}},
		},
		{
			name: "misspelt kind in rbac",
			yaml: "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRol\nmetadata: {name: r}\n",
			want: []want{{"kind", SeverityError, `rbac.authorization.k8s.io/v1 has no kind "ClusterRol"`, "write kind: ClusterRole"}},
		},
		{
			name: "kind of another version",
			yaml: "apiVersion: networking.k8s.io/v1beta1\nkind: NetworkPolicy\nmetadata: {name: np}\n",
			want: []want{{"apiVersion", SeverityError, "networking.k8s.io/v1beta1 has no kind NetworkPolicy; NetworkPolicy is at networking.k8s.io/v1", "change apiVersion to networking.k8s.io/v1"}},
		},
		{
			name: "version that does not exist, and the object is still checked",
			yaml: "apiVersion: apps/v7\nkind: Deployment\nmetadata: {name: web}\nspec: {replicaz: 2}\n",
			want: []want{
				{"apiVersion", SeverityError, "apps/v7 has no kind Deployment; Deployment is at apps/v1", "change apiVersion to apps/v1"},
				{"spec.replicaz", SeverityError, `unknown field "spec.replicaz"`, "kubectl explain deployment.spec.replicaz"},
			},
		},
		{
			name: "version of the core group that does not exist",
			yaml: "apiVersion: v2\nkind: Pod\nmetadata: {name: p}\n",
			want: []want{{"apiVersion", SeverityError, "v2 has no kind Pod; Pod is at v1", "change apiVersion to v1"}},
		},
		{
			name: "wrong version and misspelt kind",
			yaml: "apiVersion: apps/v7\nkind: Deploymnet\nmetadata: {name: web}\n",
			want: []want{{"kind", SeverityError, `API group apps has no kind "Deploymnet" (and no version v7; its versions are v1, v1beta2, v1beta1)`, "write apiVersion: apps/v1 and kind: Deployment"}},
		},
		{
			name: "misspelt kind of another version",
			yaml: "apiVersion: networking.k8s.io/v1beta1\nkind: NetworkPolcy\nmetadata: {name: np}\n",
			want: []want{{"kind", SeverityError, `networking.k8s.io/v1beta1 has no kind "NetworkPolcy"`, "write apiVersion: networking.k8s.io/v1 and kind: NetworkPolicy"}},
		},
		{
			name: "unknown kind with nothing near in a small group",
			yaml: "apiVersion: apps/v1\nkind: Frobnicator\nmetadata: {name: f}\n",
			want: []want{{"kind", SeverityError, `apps/v1 has no kind "Frobnicator"`, "use one of the kinds of apps/v1: ControllerRevision, DaemonSet, Deployment, ReplicaSet, StatefulSet"}},
		},
		{
			name: "unknown kind with nothing near in the core group",
			yaml: "apiVersion: v1\nkind: Frobnicator\nmetadata: {name: f}\n",
			want: []want{{"kind", SeverityError, `v1 has no kind "Frobnicator"`, "kubectl api-resources --api-group=''"}},
		},
		{
			name: "CustomResourceDefinition is built in",
			yaml: "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\nspec: {grop: example.com}\n",
			want: []want{{"spec.grop", SeverityError, `unknown field "spec.grop"`, "remove it, or check its spelling"}},
		},
		{
			name: "CustomResourceDefinition at a version no longer served",
			yaml: "apiVersion: apiextensions.k8s.io/v1beta1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\n",
			want: []want{{"apiVersion", SeverityError, "apiextensions.k8s.io/v1beta1 has no kind CustomResourceDefinition", "change apiVersion to apiextensions.k8s.io/v1"}},
		},
		{
			name: "a group without a dot that is not Kubernetes'",
			yaml: "apiVersion: app/v1\nkind: Deployment\nmetadata: {name: web}\n",
			want: []want{{"apiVersion", SeverityError, `there is no API group "app"`, "change apiVersion to apps/v1"}},
		},
		{
			name: "a group without a dot and an unknown kind",
			yaml: "apiVersion: foo/v1\nkind: Bar\nmetadata: {name: b}\n",
			want: []want{{"apiVersion", SeverityError, `there is no API group "foo"`, "kubectl api-versions"}},
		},
		{
			name: "Karpenter's group misspelt",
			yaml: "apiVersion: karpenter.sj/v1\nkind: NodePool\nmetadata: {name: default}\n",
			want: []want{{"apiVersion", SeverityError, "there is no API group karpenter.sj with kind NodePool here", "change apiVersion to karpenter.sh/v1"}},
		},
		{
			name: "misspelt kind in Karpenter's group",
			yaml: "apiVersion: karpenter.sh/v1\nkind: NodePol\nmetadata: {name: default}\n",
			want: []want{{"kind", SeverityError, `no kind "NodePol" is served in group karpenter.sh`, "write kind: NodePool"}},
		},
		{
			name: "version of Karpenter's group that does not exist",
			yaml: "apiVersion: karpenter.k8s.aws/v7\nkind: EC2NodeClass\nmetadata: {name: default}\n",
			want: []want{{"apiVersion", SeverityError, "karpenter.k8s.aws/v7 EC2NodeClass is served only at v1", "change apiVersion to karpenter.k8s.aws/v1"}},
		},
		{
			name: "the simulator's Scenario",
			yaml: "apiVersion: stevedore.io/v1alpha1\nkind: Scenario\nmetadata: {name: s}\nspec: {duration: 1h}\n",
		},
		{
			name: "misspelt Scenario",
			yaml: "apiVersion: stevedore.io/v1alpha1\nkind: Scenaro\nmetadata: {name: s}\n",
			want: []want{{"kind", SeverityError, `stevedore.io/v1alpha1 has no kind "Scenaro"`, "write kind: Scenario"}},
		},
		{
			name: "Scenario at a version that does not exist",
			yaml: "apiVersion: stevedore.io/v1\nkind: Scenario\nmetadata: {name: s}\n",
			want: []want{{"apiVersion", SeverityError, "stevedore.io/v1 has no kind Scenario; Scenario is at stevedore.io/v1alpha1", "change apiVersion to stevedore.io/v1alpha1"}},
		},
		{
			name: "another project's kind",
			yaml: "apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: c}\nspec: {anything: 1}\n",
			want: []want{{"apiVersion", SeverityWarning, "cert-manager.io is not an API group stevedore knows, so this Certificate is not checked", "kubectl apply --dry-run=server"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := validate(t, v, tc.yaml)
			if len(got) != len(tc.want) {
				t.Errorf("want %d problems, got:%s", len(tc.want), dump(got))
			}
			for _, w := range tc.want {
				p, ok := find(got, w.field, w.severity, w.message)
				if !ok {
					t.Errorf("no %s at %s containing %q; got:%s", w.severity, w.field, w.message, dump(got))
					continue
				}
				if !strings.Contains(p.Fix, w.fix) {
					t.Errorf("fix %q does not contain %q", p.Fix, w.fix)
				}
			}
		})
	}
}

// TestCRDsAreValid checks that the CRDs stevedore installs pass as
// CustomResourceDefinitions, now that the validator knows that kind.
func TestCRDsAreValid(t *testing.T) {
	v := testValidator(t)
	problems, err := v.Paths([]string{filepath.Join("..", "crds")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s", p)
	}
}

// TestKnownGroups checks the table of groups: every group has versions and
// kinds, lists and options are left out, and the versions come stable first.
func TestKnownGroups(t *testing.T) {
	groups := knownGroups()
	for _, name := range []string{"", "apps", "batch", "policy", "networking.k8s.io", "rbac.authorization.k8s.io", "apiextensions.k8s.io", groupStevedore} {
		g, ok := groups[name]
		if !ok || len(g.versions) == 0 || len(g.allKinds()) == 0 {
			t.Errorf("group %q: %+v", name, g)
		}
	}
	for name, g := range groups {
		for _, k := range g.allKinds() {
			if !isManifestKind(k) {
				t.Errorf("group %q lists %s", name, k)
			}
		}
	}
	if got := groups["apps"].versions; strings.Join(got, " ") != "v1 v1beta2 v1beta1" {
		t.Errorf("apps versions %v", got)
	}
	if got := groups["autoscaling"].versionsOf("HorizontalPodAutoscaler"); got[0] != "v2" {
		t.Errorf("HorizontalPodAutoscaler versions %v: want v2 first", got)
	}
}
