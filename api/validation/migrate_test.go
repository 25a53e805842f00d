package validation

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

func TestSecondsDuration(t *testing.T) {
	for _, tc := range []struct {
		in   interface{}
		want string
	}{
		{int64(30), "30s"},
		{int64(90), "1m30s"},
		{int64(600), "10m"},
		{int64(3600), "1h"},
		{int64(5400), "1h30m"},
		{int64(2592000), "720h"},
		{float64(60), "1m"},
		{"45", "45s"},
		{int64(0), "0s"},
		{int64(-1), "default"},
		{"soon", "default"},
		{nil, "default"},
	} {
		if got := secondsDuration(tc.in, "default"); got != tc.want {
			t.Errorf("secondsDuration(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSelectorTerms(t *testing.T) {
	for _, tc := range []struct {
		selector string
		what     string
		want     string
	}{
		{`{karpenter.sh/discovery: my-cluster}`, "subnet", `[{tags: {karpenter.sh/discovery: my-cluster}}]`},
		{`{aws-ids: "subnet-1,subnet-2"}`, "subnet", `[{id: subnet-1}, {id: subnet-2}]`},
		{`{Name: "*public*"}`, "subnet", `[{tags: {Name: "*public*"}}]`},
		{`{aws-ids: sg-1, team: a}`, "securityGroup", `[{id: sg-1}, {tags: {team: a}}]`},
		{`{aws::ids: ami-1}`, "ami", `[{id: ami-1}]`},
		{`{aws::name: my-image-*, aws::owners: "amazon,123456789012"}`, "ami", `[{name: my-image-*, owner: amazon}, {name: my-image-*, owner: "123456789012"}]`},
		{`{enabled: "true"}`, "subnet", `[{tags: {enabled: "true"}}]`},
		{`{}`, "subnet", `[{tags: {<key>: <value>}}]`},
	} {
		m := map[string]interface{}{}
		if err := yaml.Unmarshal([]byte(tc.selector), &m); err != nil {
			t.Fatal(err)
		}
		if got := selectorTerms(m, tc.what); got != tc.want {
			t.Errorf("selectorTerms(%s) = %s, want %s", tc.selector, got, tc.want)
		}
	}
}

func TestAMIAliasFix(t *testing.T) {
	for _, tc := range []struct{ family, want string }{
		{"AL2023", "add spec.amiSelectorTerms: [{alias: al2023@latest}] and pin a version (al2023@<version>) instead of latest for production"},
		{"AL2", "AL2 is not supported from Kubernetes 1.33"},
		{"Bottlerocket", "[{alias: bottlerocket@latest}]"},
		{"Windows2022", "[{alias: windows2022@latest}] (Windows aliases accept only @latest)"},
		{"Custom", "select your AMIs by id, name or tags"},
	} {
		if got := amiAliasFix(tc.family); !strings.Contains(got, tc.want) {
			t.Errorf("amiAliasFix(%s) = %q, want it to contain %q", tc.family, got, tc.want)
		}
	}
}

// TestLegacyFieldFixes checks the fix for every field of an older API that a
// v1 object may still carry.
func TestLegacyFieldFixes(t *testing.T) {
	for _, tc := range []struct {
		kind, object, path, want string
	}{
		{kindNodePool, `spec: {ttlSecondsAfterEmpty: 300}`, "spec.ttlSecondsAfterEmpty", "spec.disruption.consolidationPolicy: WhenEmpty and spec.disruption.consolidateAfter: 5m"},
		{kindNodePool, `spec: {ttlSecondsUntilExpired: 604800}`, "spec.ttlSecondsUntilExpired", "spec.template.spec.expireAfter: 168h"},
		{kindNodePool, `spec: {disruption: {expireAfter: Never}}`, "spec.disruption.expireAfter", "spec.template.spec.expireAfter: Never"},
		{kindNodePool, `spec: {consolidation: {enabled: true}}`, "spec.consolidation", "consolidationPolicy: WhenEmptyOrUnderutilized"},
		{kindNodePool, `spec: {consolidation: {enabled: false}}`, "spec.consolidation", "consolidateAfter: Never"},
		{kindNodePool, `spec: {providerRef: {name: gpu}}`, "spec.providerRef", "nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}"},
		{kindNodePool, `spec: {provider: {}}`, "spec.provider", "move these settings into an EC2NodeClass"},
		{kindNodePool, `spec: {requirements: []}`, "spec.requirements", "spec.template.spec.requirements"},
		{kindNodePool, `spec: {labels: {}}`, "spec.labels", "spec.template.metadata.labels"},
		{kindNodePool, `spec: {annotations: {}}`, "spec.annotations", "spec.template.metadata.annotations"},
		{kindNodePool, `spec: {taints: []}`, "spec.taints", "spec.template.spec.taints"},
		{kindNodePool, `spec: {startupTaints: []}`, "spec.startupTaints", "spec.template.spec.startupTaints"},
		{kindNodePool, `spec: {kubeletConfiguration: {}}`, "spec.kubeletConfiguration", "spec.kubelet of the EC2NodeClass"},
		{kindNodePool, `spec: {template: {spec: {kubelet: {}, nodeClassRef: {name: gpu}}}}`, "spec.template.spec.kubelet", `spec.kubelet of the EC2NodeClass "gpu"`},
		{kindNodePool, `spec: {template: {spec: {nodeClassRef: {apiVersion: karpenter.k8s.aws/v1beta1}}}}`, "spec.template.spec.nodeClassRef.apiVersion", "replace apiVersion: karpenter.k8s.aws/v1beta1 with group: karpenter.k8s.aws"},
		{kindNodeClaim, `spec: {kubelet: {}}`, "spec.kubelet", "spec.kubelet of the EC2NodeClass"},
		{kindNodeClaim, `spec: {nodeClassRef: {apiVersion: v1}}`, "spec.nodeClassRef.apiVersion", "group: karpenter.k8s.aws"},
		{kindEC2NodeClass, `spec: {subnetSelector: {a: b}}`, "spec.subnetSelector", "spec.subnetSelectorTerms: [{tags: {a: b}}]"},
		{kindEC2NodeClass, `spec: {securityGroupSelector: {aws-ids: sg-1}}`, "spec.securityGroupSelector", "spec.securityGroupSelectorTerms: [{id: sg-1}]"},
		{kindEC2NodeClass, `spec: {amiSelector: {aws-ids: ami-1}}`, "spec.amiSelector", "spec.amiSelectorTerms: [{id: ami-1}]"},
		{kindEC2NodeClass, `spec: {launchTemplate: lt}`, "spec.launchTemplate", "launch templates are generated"},
	} {
		obj := map[string]interface{}{}
		if err := yaml.Unmarshal([]byte(tc.object), &obj); err != nil {
			t.Fatal(err)
		}
		got, ok := legacyFieldFix(tc.kind, tc.path, obj)
		if !ok || !strings.Contains(got, tc.want) {
			t.Errorf("%s %s: fix %q (known: %v), want it to contain %q", tc.kind, tc.path, got, ok, tc.want)
		}
	}
	if _, ok := legacyFieldFix(kindNodePool, "spec.foo", nil); ok {
		t.Error("spec.foo is not a field of an older API")
	}
}

// TestOldAPIs runs manifests written for older APIs through the validator.
func TestOldAPIs(t *testing.T) {
	v := testValidator(t)
	for _, tc := range []struct {
		name string
		yaml string
		want []want
	}{
		{
			name: "Provisioner with every moved field",
			yaml: `apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata: {name: default}
spec:
  requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [spot]}]
  labels: {team: a}
  annotations: {a: b}
  taints: [{key: a, effect: NoSchedule}]
  startupTaints: [{key: b, effect: NoSchedule}]
  kubeletConfiguration: {maxPods: 110}
  providerRef: {name: gpu}
  limits: {resources: {cpu: 1000}}
  ttlSecondsAfterEmpty: 30
  ttlSecondsUntilExpired: 86400
  weight: 10
`,
			want: []want{
				{"apiVersion", SeverityError, "karpenter.sh/v1alpha5 Provisioner is no longer served", "kind: NodePool"},
				{"spec.requirements", SeverityError, "spec.template.spec.requirements", "move it to spec.template.spec.requirements"},
				{"spec.labels", SeverityError, "", "move it to spec.template.metadata.labels"},
				{"spec.annotations", SeverityError, "", "move it to spec.template.metadata.annotations"},
				{"spec.taints", SeverityError, "", "move it to spec.template.spec.taints"},
				{"spec.startupTaints", SeverityError, "", "move it to spec.template.spec.startupTaints"},
				{"spec.kubeletConfiguration", SeverityError, "kubelet settings moved to the EC2NodeClass", `spec.kubelet of the EC2NodeClass "gpu"`},
				{"spec.providerRef", SeverityError, "", "name: gpu}"},
				{"spec.limits.resources", SeverityError, "", "up into spec.limits"},
				{"spec.ttlSecondsAfterEmpty", SeverityError, "", "consolidateAfter: 30s"},
				{"spec.ttlSecondsUntilExpired", SeverityError, "", "expireAfter: 24h"},
			},
		},
		{
			name: "Provisioner that never consolidated nor expired",
			yaml: "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: default}\nspec: {}\n",
			want: []want{
				{"apiVersion", SeverityError, "no longer served", ""},
				{"spec", SeverityWarning, "a NodePool consolidates by default", "consolidateAfter: Never"},
				{"spec", SeverityWarning, "never expire", "expireAfter: Never"},
			},
		},
		{
			name: "AWSNodeTemplate without role or instance profile",
			yaml: `apiVersion: karpenter.k8s.aws/v1alpha1
kind: AWSNodeTemplate
metadata: {name: default}
spec:
  subnetSelector: {karpenter.sh/discovery: my-cluster}
  securityGroupSelector: {aws-ids: "sg-1,sg-2"}
  amiSelector: {aws::name: my-image}
`,
			want: []want{
				{"apiVersion", SeverityError, "AWSNodeTemplate is no longer served", "kind: EC2NodeClass"},
				{"spec.subnetSelector", SeverityError, "", "[{tags: {karpenter.sh/discovery: my-cluster}}]"},
				{"spec.securityGroupSelector", SeverityError, "", "[{id: sg-1}, {id: sg-2}]"},
				{"spec.amiSelector", SeverityError, "", "[{name: my-image}]"},
				{"spec", SeverityError, "needs amiFamily", "add spec.amiFamily"},
				{"spec", SeverityError, "needs spec.role or spec.instanceProfile", "add spec.role"},
			},
		},
		{
			name: "AWSNodeTemplate without selectors",
			yaml: "apiVersion: karpenter.k8s.aws/v1alpha1\nkind: AWSNodeTemplate\nmetadata: {name: default}\nspec: {role: r}\n",
			want: []want{
				{"apiVersion", SeverityError, "no longer served", ""},
				{"spec", SeverityError, "spec.subnetSelectorTerms is required", "subnetSelectorTerms: [{tags:"},
				{"spec", SeverityError, "spec.securityGroupSelectorTerms is required", "securityGroupSelectorTerms: [{tags:"},
				{"spec", SeverityError, "needs amiSelectorTerms; without amiSelector and amiFamily", "al2@latest"},
			},
		},
		{
			name: "Machine",
			yaml: "apiVersion: karpenter.sh/v1alpha5\nkind: Machine\nmetadata: {name: m}\n",
			want: []want{{"kind", SeverityError, "replaced by karpenter.sh/v1 NodeClaim", "karpenter.sh/v1 NodePool"}},
		},
		{
			name: "v1beta1 EC2NodeClass that is otherwise v1",
			yaml: `apiVersion: karpenter.k8s.aws/v1beta1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: r
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {a: b}}]
  securityGroupSelectorTerms: [{tags: {a: b}}]
`,
			want: []want{{"apiVersion", SeverityError, "karpenter.k8s.aws/v1beta1 EC2NodeClass is served only at v1", "change apiVersion to karpenter.k8s.aws/v1 and apply the field changes listed"}},
		},
		{
			name: "unserved version that was never a Karpenter API",
			yaml: "apiVersion: karpenter.sh/v2\nkind: NodePool\nmetadata: {name: x}\n",
			want: []want{{"apiVersion", SeverityError, "karpenter.sh/v2 NodePool is served only at v1", "change apiVersion to karpenter.sh/v1"}},
		},
		{
			name: "unknown kind in a served group",
			yaml: "apiVersion: karpenter.k8s.aws/v1\nkind: EC2Nodeclass\nmetadata: {name: x}\n",
			want: []want{{"kind", SeverityError, `no kind "EC2Nodeclass" is served in group karpenter.k8s.aws`, "write kind: EC2NodeClass"}},
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

func TestFlowYAML(t *testing.T) {
	for _, tc := range []struct {
		in   interface{}
		want string
	}{
		{"plain", "plain"},
		{"with space", "with space"},
		{"*", `"*"`},
		{"true", `"true"`},
		{"123", `"123"`},
		{"", `""`},
		{"a: b", `"a: b"`},
		{map[string]interface{}{"b": "1x", "a": []interface{}{"x"}}, "{a: [x], b: 1x}"},
	} {
		if got := flowYAML(tc.in); got != tc.want {
			t.Errorf("flowYAML(%#v) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestLegacyVersionsAreKnownKinds(t *testing.T) {
	for gvk := range legacyVersions {
		if _, ok := testValidator(t).served[schema.GroupVersionKind{Group: gvk.Group, Version: "v1", Kind: gvk.Kind}]; !ok {
			t.Errorf("%s has no served v1", gvk)
		}
	}
}
