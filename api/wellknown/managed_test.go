package wellknown

import (
	"testing"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
)

func TestManaged(t *testing.T) {
	for _, tc := range []struct {
		name string
		ref  *karpv1.NodeClassReference
		want bool
	}{
		{"EC2NodeClass", &karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}, true},
		{"EC2NodeClass of any name", &karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass"}, true},
		{"KWOK provider", &karpv1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"}, false},
		{"other group, EC2NodeClass kind", &karpv1.NodeClassReference{Group: "example.com", Kind: "EC2NodeClass", Name: "default"}, false},
		{"AWS group, other kind", &karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "AWSNodeTemplate", Name: "default"}, false},
		// Group and kind are matched exactly, as the API server stores them.
		{"kind in lower case", &karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "ec2nodeclass", Name: "default"}, false},
		{"group with a version", &karpv1.NodeClassReference{Group: "karpenter.k8s.aws/v1", Kind: "EC2NodeClass", Name: "default"}, false},
		{"empty group and kind", &karpv1.NodeClassReference{Name: "default"}, false},
		{"no reference", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ManagedNodeClass(tc.ref); got != tc.want {
				t.Errorf("ManagedNodeClass(%+v) = %v, want %v", tc.ref, got, tc.want)
			}
			nc := &karpv1.NodeClaim{Spec: karpv1.NodeClaimSpec{NodeClassRef: tc.ref}}
			if got := ManagedNodeClaim(nc); got != tc.want {
				t.Errorf("ManagedNodeClaim with nodeClassRef %+v = %v, want %v", tc.ref, got, tc.want)
			}
			np := &karpv1.NodePool{Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{NodeClassRef: tc.ref}}}}
			if got := ManagedNodePool(np); got != tc.want {
				t.Errorf("ManagedNodePool with nodeClassRef %+v = %v, want %v", tc.ref, got, tc.want)
			}
		})
	}
}
