package hash

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
)

func base() *karpv1.NodePool {
	return &karpv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: karpv1.NodePoolSpec{
			Template: karpv1.NodeClaimTemplate{
				Metadata: karpv1.NodeClaimTemplateMetadata{
					Labels:      map[string]karpv1.LabelValue{"team": "a"},
					Annotations: map[string]string{"example.com/owner": "a"},
				},
				Spec: karpv1.NodeClaimTemplateSpec{
					Taints: []corev1.Taint{
						{Key: "b", Effect: corev1.TaintEffectNoSchedule},
						{Key: "a", Value: "x", Effect: corev1.TaintEffectNoExecute},
					},
					Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{
						Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"},
					}},
					NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
					ExpireAfter:  karpv1.NewNillableDuration(720 * time.Hour),
				},
			},
		},
	}
}

func TestHash(t *testing.T) {
	want := Hash(base())
	if want == "" || want != Hash(base()) {
		t.Fatalf("hash not stable: %q", want)
	}
	for _, tc := range []struct {
		name    string
		mutate  func(*karpv1.NodePool)
		changes bool
	}{
		{"label value", func(np *karpv1.NodePool) { np.Spec.Template.Metadata.Labels["team"] = "b" }, true},
		{"annotation", func(np *karpv1.NodePool) { np.Spec.Template.Metadata.Annotations["x"] = "y" }, true},
		{"taint added", func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.Taints = append(np.Spec.Template.Spec.Taints, corev1.Taint{Key: "c", Effect: corev1.TaintEffectNoSchedule})
		}, true},
		{"taint effect", func(np *karpv1.NodePool) { np.Spec.Template.Spec.Taints[0].Effect = corev1.TaintEffectNoExecute }, true},
		{"startup taint", func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.StartupTaints = []corev1.Taint{{Key: "s", Effect: corev1.TaintEffectNoSchedule}}
		}, true},
		{"taint moved to startup taints", func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.StartupTaints = np.Spec.Template.Spec.Taints[:1]
			np.Spec.Template.Spec.Taints = np.Spec.Template.Spec.Taints[1:]
		}, true},
		{"node class name", func(np *karpv1.NodePool) { np.Spec.Template.Spec.NodeClassRef.Name = "other" }, true},
		{"expireAfter", func(np *karpv1.NodePool) { np.Spec.Template.Spec.ExpireAfter = karpv1.NeverDuration() }, true},
		{"terminationGracePeriod", func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.TerminationGracePeriod = &metav1.Duration{Duration: time.Hour}
		}, true},

		{"taint order", func(np *karpv1.NodePool) {
			ts := np.Spec.Template.Spec.Taints
			ts[0], ts[1] = ts[1], ts[0]
		}, false},
		{"taint timeAdded", func(np *karpv1.NodePool) {
			now := metav1.Now()
			np.Spec.Template.Spec.Taints[0].TimeAdded = &now
		}, false},
		{"requirements", func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.Requirements[0].Values = []string{"arm64"}
		}, false},
		{"disruption", func(np *karpv1.NodePool) {
			np.Spec.Disruption.ConsolidationPolicy = karpv1.ConsolidationPolicyWhenEmpty
			np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "0"}}
		}, false},
		{"limits and weight", func(np *karpv1.NodePool) {
			np.Spec.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")}
			w := int32(10)
			np.Spec.Weight = &w
		}, false},
		{"NodePool metadata", func(np *karpv1.NodePool) {
			np.Labels = map[string]string{"x": "y"}
			np.Generation = 7
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			np := base()
			tc.mutate(np)
			if got := Hash(np); (got != want) != tc.changes {
				t.Errorf("hash %s -> %s; want changed=%v", want, got, tc.changes)
			}
		})
	}
}

func TestEmptyEqualsAbsent(t *testing.T) {
	a, b := base(), base()
	a.Spec.Template.Metadata.Labels, a.Spec.Template.Metadata.Annotations = nil, nil
	a.Spec.Template.Spec.Taints, a.Spec.Template.Spec.StartupTaints = nil, nil
	b.Spec.Template.Metadata.Labels = map[string]karpv1.LabelValue{}
	b.Spec.Template.Metadata.Annotations = map[string]string{}
	b.Spec.Template.Spec.Taints, b.Spec.Template.Spec.StartupTaints = []corev1.Taint{}, []corev1.Taint{}
	if Hash(a) != Hash(b) {
		t.Error("empty maps and lists hash differently from absent ones")
	}
}
