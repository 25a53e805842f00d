package wellknown

import (
	"slices"
	"testing"
)

func TestIsRestrictedLabel(t *testing.T) {
	tests := []struct {
		key  string
		want bool
	}{
		// Labels users may set and constrain freely.
		{"team", false},
		{"example.com/team", false},
		{"kubernetes.io", false},
		{"notkubernetes.io/x", false},
		{"k8s.io.example.com/x", false},

		// Well-known labels, including those in restricted domains.
		{LabelCapacityType, false},
		{LabelTopologyZone, false},
		{LabelTopologyRegion, false},
		{LabelInstanceType, false},
		{LabelArch, false},
		{LabelOS, false},
		{LabelWindowsBuild, false},
		{LabelBetaZone, false},
		{LabelBetaArch, false},
		{LabelInstanceFamily, false},
		{LabelInstanceGeneration, false},
		{LabelCapacityReservationID, false},
		{LabelTopologyZoneID, false},

		// Exceptions inside restricted domains.
		{"node.kubernetes.io/lifecycle", false},
		{"example.node.kubernetes.io/x", false},
		{"node-restriction.kubernetes.io/team", false},
		{"kops.k8s.io/instancegroup", false},

		// Never allowed.
		{LabelHostname, true},
		{LabelNodePool, true},

		// kubernetes.io and k8s.io are not restricted since Karpenter v1.14
		// (they used to be, except for the exceptions above).
		{"kubernetes.io/role", false},
		{"node-role.kubernetes.io/worker", false},
		{"k8s.io/x", false},
		{"example.k8s.io/x", false},
		{LabelEC2NodeClass, false},

		// Restricted domains, their subdomains, and domains that merely end
		// in them, as Karpenter's CEL (endsWith) has it.
		{LabelRegistered, true},
		{LabelInitialized, true},
		{LabelDoNotSyncTaints, true},
		{"sub.karpenter.sh/x", true},
		{"mykarpenter.sh/x", true},
		{"karpenter.sh", true}, // a bare name is its own domain to Karpenter's CEL
		{GroupAWS + "/anything", true},
		{LabelPlacementGroupID, true},
		{LabelCapacityReservationInterruptible, true},
	}
	for _, tt := range tests {
		if got := IsRestrictedLabel(tt.key); got != tt.want {
			t.Errorf("IsRestrictedLabel(%q) = %v, want %v", tt.key, got, tt.want)
		}
	}
}

func TestInCoreDomain(t *testing.T) {
	for key, want := range map[string]bool{
		LabelNodePool:                true,
		LabelCapacityType:            true,
		"karpenter.sh":               true,
		"sub.karpenter.sh/x":         true,
		LabelInstanceFamily:          false, // karpenter.k8s.aws
		"karpenter.sh.example.com/x": false,
		"example.com/karpenter.sh":   false,
		LabelHostname:                false,
	} {
		if got := InCoreDomain(key); got != want {
			t.Errorf("InCoreDomain(%q) = %v, want %v", key, got, want)
		}
	}
}

func TestNormalizeLabel(t *testing.T) {
	tests := []struct {
		key, want string
	}{
		{"failure-domain.beta.kubernetes.io/zone", "topology.kubernetes.io/zone"},
		{"failure-domain.beta.kubernetes.io/region", "topology.kubernetes.io/region"},
		{"beta.kubernetes.io/instance-type", "node.kubernetes.io/instance-type"},
		{"beta.kubernetes.io/arch", "kubernetes.io/arch"},
		{"beta.kubernetes.io/os", "kubernetes.io/os"},
		{"topology.kubernetes.io/zone", "topology.kubernetes.io/zone"},
		{"karpenter.sh/capacity-type", "karpenter.sh/capacity-type"},
		{"team", "team"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := NormalizeLabel(tt.key); got != tt.want {
			t.Errorf("NormalizeLabel(%q) = %q, want %q", tt.key, got, tt.want)
		}
	}
}

func TestNormalizedLabelsAreWellKnown(t *testing.T) {
	for alias, stable := range normalizedLabels {
		if !IsWellKnownLabel(alias) || !IsWellKnownLabel(stable) {
			t.Errorf("%s -> %s: both keys must be well-known", alias, stable)
		}
		if IsRestrictedLabel(alias) || IsRestrictedLabel(stable) {
			t.Errorf("%s -> %s: neither key may be restricted", alias, stable)
		}
	}
}

func TestWellKnownLabelsIsSortedCopy(t *testing.T) {
	keys := WellKnownLabels()
	if !slices.IsSorted(keys) {
		t.Fatalf("WellKnownLabels() is not sorted: %v", keys)
	}
	keys[0] = "changed"
	if WellKnownLabels()[0] == "changed" {
		t.Fatal("WellKnownLabels() returned shared storage")
	}
	domains := RestrictedLabelDomains()
	domains[0] = "changed"
	if RestrictedLabelDomains()[0] == "changed" {
		t.Fatal("RestrictedLabelDomains() returned shared storage")
	}
}

func TestIsRestrictedTag(t *testing.T) {
	tests := []struct {
		key  string
		want bool
	}{
		{"Name", false},
		{"team", false},
		{"kubernetes.io/role", false},
		{"eks:eks-cluster-name", true},
		{"kubernetes.io/cluster/prod", true},
		{"karpenter.sh/nodepool", true},
		{"karpenter.sh/nodeclaim", true},
		{"karpenter.k8s.aws/ec2nodeclass", true},
	}
	for _, tt := range tests {
		if got := IsRestrictedTag(tt.key); got != tt.want {
			t.Errorf("IsRestrictedTag(%q) = %v, want %v", tt.key, got, tt.want)
		}
	}
}

func TestTaints(t *testing.T) {
	if d := DisruptedTaint(); d.Key != "karpenter.sh/disrupted" || d.Effect != "NoSchedule" {
		t.Errorf("DisruptedTaint() = %+v", d)
	}
	if u := UnregisteredTaint(); u.Key != "karpenter.sh/unregistered" || u.Effect != "NoExecute" {
		t.Errorf("UnregisteredTaint() = %+v", u)
	}
}
