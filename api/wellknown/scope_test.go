package wellknown

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestClusterScoped(t *testing.T) {
	for _, tc := range []struct {
		gk   schema.GroupKind
		want bool
	}{
		{schema.GroupKind{Kind: "Node"}, true},
		{schema.GroupKind{Kind: "Namespace"}, true},
		{schema.GroupKind{Group: "scheduling.k8s.io", Kind: "PriorityClass"}, true},
		{schema.GroupKind{Group: GroupCore, Kind: "NodePool"}, true},
		{schema.GroupKind{Group: GroupCore, Kind: "NodeClaim"}, true},
		{schema.GroupKind{Group: GroupCore, Kind: "NodeOverlay"}, true},
		{schema.GroupKind{Group: GroupAWS, Kind: "EC2NodeClass"}, true},
		{schema.GroupKind{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}, true},
		{schema.GroupKind{Kind: "Pod"}, false},
		{schema.GroupKind{Group: "apps", Kind: "Deployment"}, false},
		{schema.GroupKind{Group: "policy", Kind: "PodDisruptionBudget"}, false},
		// The group counts: a kind of another group with a built-in name is
		// namespaced unless listed.
		{schema.GroupKind{Group: "example.com", Kind: "Node"}, false},
	} {
		if got := ClusterScoped(tc.gk); got != tc.want {
			t.Errorf("ClusterScoped(%s) = %v, want %v", tc.gk, got, tc.want)
		}
	}
}
