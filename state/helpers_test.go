package state_test

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
)

func list(cpu, mem string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
}

type nodeOpt func(*corev1.Node)

func node(name, providerID string, opts ...nodeOpt) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{wellknown.LabelHostname: name}},
		Spec:       corev1.NodeSpec{ProviderID: providerID},
		Status:     corev1.NodeStatus{Allocatable: list("4", "16Gi"), Capacity: list("4", "16Gi")},
	}
	for _, o := range opts {
		o(n)
	}
	return n
}

func inPool(pool string) nodeOpt {
	return func(n *corev1.Node) { n.Labels[wellknown.LabelNodePool] = pool }
}

func initialized(n *corev1.Node) { n.Labels[wellknown.LabelInitialized] = wellknown.LabelValueTrue }

func taints(ts ...corev1.Taint) nodeOpt {
	return func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, ts...) }
}

func cordoned(n *corev1.Node) { n.Spec.Unschedulable = true }

type claimOpt func(*karpv1.NodeClaim)

func claim(name, pool string, opts ...claimOpt) *karpv1.NodeClaim {
	nc := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{wellknown.LabelNodePool: pool}},
		Spec: karpv1.NodeClaimSpec{
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
				{Key: wellknown.LabelNodePool, Operator: corev1.NodeSelectorOpIn, Values: []string{pool}},
				{Key: wellknown.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"us-east-1a"}},
				{Key: wellknown.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"m6i.large", "m6i.xlarge"}},
			},
			Resources: karpv1.ResourceRequirements{Requests: list("1", "2Gi")},
		},
	}
	for _, o := range opts {
		o(nc)
	}
	return nc
}

func launchedAs(providerID string, allocatable corev1.ResourceList) claimOpt {
	return func(nc *karpv1.NodeClaim) {
		nc.Status.ProviderID = providerID
		nc.Status.Allocatable = allocatable
		nc.Status.Capacity = allocatable
		nc.Status.Conditions = append(nc.Status.Conditions, metav1.Condition{Type: karpv1.ConditionTypeLaunched, Status: metav1.ConditionTrue, Reason: "Launched"})
	}
}

// ofKWOK makes the NodeClaim another provider's: its nodeClassRef names
// Karpenter's KWOK node class.
func ofKWOK(nc *karpv1.NodeClaim) {
	nc.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"}
}

// ofEC2 makes the NodeClaim's nodeClassRef name an EC2NodeClass.
func ofEC2(nc *karpv1.NodeClaim) {
	nc.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: wellknown.GroupAWS, Kind: wellknown.KindEC2NodeClass, Name: "default"}
}

func claimTaints(ts, startup []corev1.Taint) claimOpt {
	return func(nc *karpv1.NodeClaim) {
		nc.Spec.Taints = ts
		nc.Spec.StartupTaints = startup
	}
}

type podOpt func(*corev1.Pod)

func pod(ns, name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "c", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: list("500m", "1Gi")},
		}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func onNode(name string) podOpt { return func(p *corev1.Pod) { p.Spec.NodeName = name } }

func unschedulable(p *corev1.Pod) {
	p.Status.Phase = corev1.PodPending
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
}

func ownedBy(apiVersion, kind string) podOpt {
	return func(p *corev1.Pod) {
		p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: "owner", UID: "u"})
	}
}

func withPVC(claimName string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: claimName, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName},
		}})
	}
}

func withEphemeral(volume string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: volume, VolumeSource: corev1.VolumeSource{
			Ephemeral: &corev1.EphemeralVolumeSource{},
		}})
	}
}

func pvc(ns, name, volume string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: volume}}
}

// pv returns a PV whose node affinity has one alternative per zone list.
func pv(name string, terms ...[]string) *corev1.PersistentVolume {
	v := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if len(terms) == 0 {
		return v
	}
	sel := &corev1.NodeSelector{}
	for _, zones := range terms {
		term := corev1.NodeSelectorTerm{}
		if zones != nil {
			term.MatchExpressions = []corev1.NodeSelectorRequirement{{Key: wellknown.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: zones}}
		}
		sel.NodeSelectorTerms = append(sel.NodeSelectorTerms, term)
	}
	v.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: sel}
	return v
}

func daemonSet(ns, name string) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: "ds-uid"},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "agent", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: list("100m", "128Mi")},
		}}}}},
	}
}
