package crds_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
)

// schemaAt walks the schema along property names; "[]" steps into list items.
func schemaAt(t *testing.T, s *apiextensionsv1.JSONSchemaProps, path string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	for _, step := range strings.Split(path, ".") {
		if step == "[]" {
			if s.Items == nil || s.Items.Schema == nil {
				t.Fatalf("%s: %s is not a list", path, step)
			}
			s = s.Items.Schema
			continue
		}
		next, ok := s.Properties[step]
		if !ok {
			t.Fatalf("%s: no property %q", path, step)
		}
		s = &next
	}
	return s
}

func TestSchemaDefaults(t *testing.T) {
	tests := []struct {
		kind, path, want string
	}{
		{"NodePool", "spec.template.spec.expireAfter", `"720h"`},
		// consolidateAfter is required once disruption is given, as upstream;
		// it defaults to 0s only through the default of disruption itself.
		{"NodePool", "spec.disruption", `{"consolidateAfter":"0s"}`},
		{"NodePool", "spec.disruption.consolidationPolicy", `"WhenEmptyOrUnderutilized"`},
		{"NodePool", "spec.disruption.budgets", `[{"nodes":"10%"}]`},
		{"NodePool", "spec.disruption.budgets.[].nodes", `"10%"`},
		{"NodeClaim", "spec.expireAfter", `"720h"`},
		{"EC2NodeClass", "spec.metadataOptions", `{"httpEndpoint":"enabled","httpProtocolIPv6":"disabled","httpPutResponseHopLimit":1,"httpTokens":"required"}`},
		{"EC2NodeClass", "spec.metadataOptions.httpEndpoint", `"enabled"`},
		{"EC2NodeClass", "spec.metadataOptions.httpProtocolIPv6", `"disabled"`},
		{"EC2NodeClass", "spec.metadataOptions.httpPutResponseHopLimit", `1`},
		{"EC2NodeClass", "spec.metadataOptions.httpTokens", `"required"`},
		{"EC2NodeClass", "status.capacityReservations.[].reservationType", `"default"`},
		{"EC2NodeClass", "status.capacityReservations.[].state", `"active"`},
	}
	for _, tt := range tests {
		root := crdFor(t, tt.kind).Spec.Versions[0].Schema.OpenAPIV3Schema
		s := schemaAt(t, root, tt.path)
		if s.Default == nil {
			t.Errorf("%s %s: no default, want %s", tt.kind, tt.path, tt.want)
			continue
		}
		if got := string(s.Default.Raw); got != tt.want {
			t.Errorf("%s %s: default %s, want %s", tt.kind, tt.path, got, tt.want)
		}
	}
}

// defaulted admits the base object of kind with patch applied and decodes
// the defaulted result into out.
func defaulted(t *testing.T, kind, patch string, out any) {
	t.Helper()
	obj := toMap(t, []byte(bases[kind]))
	if patch != "" {
		mergePatch(obj, toMap(t, []byte(patch)))
	}
	if _, errs := newAdmitter(t, kind).admit(obj, nil); len(errs) > 0 {
		t.Fatalf("base %s rejected: %v", kind, errs)
	}
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatal(err)
	}
}

func TestDefaultsApplied(t *testing.T) {
	t.Run("NodePool without disruption", func(t *testing.T) {
		var np karpv1.NodePool
		defaulted(t, "NodePool", "", &np)
		d := np.Spec.Disruption
		if d.ConsolidationPolicy != karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized {
			t.Errorf("consolidationPolicy %q", d.ConsolidationPolicy)
		}
		if d.ConsolidateAfter == nil || d.ConsolidateAfter.IsNever() || *d.ConsolidateAfter.Duration != 0 {
			t.Errorf("consolidateAfter %v, want 0s", d.ConsolidateAfter)
		}
		if len(d.Budgets) != 1 || d.Budgets[0].Nodes != "10%" || d.Budgets[0].Schedule != nil {
			t.Errorf("budgets %+v, want one of 10%%", d.Budgets)
		}
		if e := np.Spec.Template.Spec.ExpireAfter; e == nil || e.IsNever() || *e.Duration != 720*time.Hour {
			t.Errorf("expireAfter %v, want 720h", e)
		}
	})
	t.Run("NodePool with budgets only", func(t *testing.T) {
		var np karpv1.NodePool
		defaulted(t, "NodePool", `{spec: {disruption: {consolidateAfter: 5m, budgets: [{reasons: [Drifted]}, {nodes: "1"}]}}}`, &np)
		d := np.Spec.Disruption
		if d.ConsolidateAfter == nil || d.ConsolidateAfter.String() != "5m" {
			t.Errorf("consolidateAfter %v, want 5m", d.ConsolidateAfter)
		}
		if d.ConsolidationPolicy != karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized {
			t.Errorf("consolidationPolicy %q", d.ConsolidationPolicy)
		}
		if len(d.Budgets) != 2 || d.Budgets[0].Nodes != "10%" || d.Budgets[1].Nodes != "1" {
			t.Errorf("budgets %+v, want 10%% (defaulted) and 1", d.Budgets)
		}
	})
	t.Run("NodeClaim", func(t *testing.T) {
		var nc karpv1.NodeClaim
		defaulted(t, "NodeClaim", "", &nc)
		if e := nc.Spec.ExpireAfter; e == nil || e.String() != "720h" {
			t.Errorf("expireAfter %v, want 720h", e)
		}
	})
	t.Run("EC2NodeClass without metadataOptions", func(t *testing.T) {
		var nc awsv1.EC2NodeClass
		defaulted(t, "EC2NodeClass", "", &nc)
		checkMetadataOptions(t, nc.Spec.MetadataOptions, "enabled", "disabled", 1, "required")
	})
	t.Run("EC2NodeClass with some metadataOptions", func(t *testing.T) {
		var nc awsv1.EC2NodeClass
		defaulted(t, "EC2NodeClass", `{spec: {metadataOptions: {httpPutResponseHopLimit: 2}}}`, &nc)
		checkMetadataOptions(t, nc.Spec.MetadataOptions, "enabled", "disabled", 2, "required")
	})
}

func checkMetadataOptions(t *testing.T, m *awsv1.MetadataOptions, endpoint, ipv6 string, hops int64, tokens string) {
	t.Helper()
	if m == nil || m.HTTPEndpoint == nil || m.HTTPProtocolIPv6 == nil || m.HTTPPutResponseHopLimit == nil || m.HTTPTokens == nil {
		t.Fatalf("metadataOptions not fully defaulted: %+v", m)
	}
	if *m.HTTPEndpoint != endpoint || *m.HTTPProtocolIPv6 != ipv6 || *m.HTTPPutResponseHopLimit != hops || *m.HTTPTokens != tokens {
		t.Errorf("metadataOptions %s/%s/%d/%s, want %s/%s/%d/%s", *m.HTTPEndpoint, *m.HTTPProtocolIPv6, *m.HTTPPutResponseHopLimit, *m.HTTPTokens, endpoint, ipv6, hops, tokens)
	}
}

// TestRestrictedLabelsAgreeWithCEL checks that the CRDs' CEL rules on label
// keys accept and reject exactly the keys that wellknown.IsRestrictedLabel
// says, for NodePool labels and requirements and NodeClaim requirements.
func TestRestrictedLabelsAgreeWithCEL(t *testing.T) {
	keys := append(wellknown.WellKnownLabels(),
		"team", "example.com/team", "kubernetes.io", "notkubernetes.io/x", "k8s.io.example.com/x",
		"node.kubernetes.io/lifecycle", "example.node.kubernetes.io/x", "node-restriction.kubernetes.io/team",
		"xnode.kubernetes.io/x", "node-role.kubernetes.io/worker", "kops.k8s.io/instancegroup",
		"kubernetes.io/role", "kubernetes.io/hostname", "k8s.io/x", "example.k8s.io/x",
		wellknown.LabelRegistered, wellknown.LabelInitialized, wellknown.LabelDoNotSyncTaints, "sub.karpenter.sh/x",
		"karpenter.shx/x", "mykarpenter.sh/x", "karpenter.sh", "mykarpenter.k8s.aws/x", wellknown.LabelEC2NodeClass, "karpenter.k8s.aws/anything", "sub.karpenter.k8s.aws/x",
		wellknown.LabelExcludeFromExternalLoadBalancers, wellknown.LabelTopologyZoneID,
	)
	nodePools, nodeClaims := newAdmitter(t, "NodePool"), newAdmitter(t, "NodeClaim")
	check := func(a *admitter, kind, patch string, wantRejected bool, what string) {
		t.Helper()
		obj := toMap(t, []byte(bases[kind]))
		mergePatch(obj, toMap(t, []byte(patch)))
		_, errs := a.admit(obj, nil)
		if rejected := len(errs) > 0; rejected != wantRejected {
			t.Errorf("%s: rejected=%v, IsRestrictedLabel says %v (errors: %v)", what, rejected, wantRejected, errs)
		}
	}
	for _, key := range keys {
		restricted := wellknown.IsRestrictedLabel(key)
		check(nodePools, "NodePool", `{spec: {template: {metadata: {labels: {"`+key+`": x}}}}}`, restricted, "NodePool label "+key)
		check(nodePools, "NodePool", `{spec: {template: {spec: {requirements: [{key: "`+key+`", operator: Exists}]}}}}`, restricted, "NodePool requirement "+key)
		check(nodeClaims, "NodeClaim", `{spec: {requirements: [{key: "`+key+`", operator: Exists}]}}`, restricted && key != wellknown.LabelNodePool, "NodeClaim requirement "+key)
	}
}
