package environment

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
)

// Hold is a finalizer tests put on objects so that a deleted one stays
// readable, as a controller's finalizer keeps a NodeClaim while its node
// terminates. Nothing removes it but the Env's cleanup.
const Hold = "test.stevedore.dev/hold"

// NewEC2NodeClass returns an EC2NodeClass named name as its status
// controller leaves it once it has resolved the cluster: it selects the
// cluster's subnets and security group by their discovery tag and the
// latest AL2023 images, and its status, Ready, holds the cluster's subnets,
// security group, amd64 and arm64 images and instance profile. Without an
// in-memory AWS the status has the Ready condition only and the role is
// "node-role".
func (e *Env) NewEC2NodeClass(name string) *awsv1.EC2NodeClass {
	discovery := map[string]string{fake.DiscoveryTag: ClusterName}
	nc := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: awsv1.EC2NodeClassSpec{
			Role:                       "node-role",
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: discovery}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: discovery}},
		},
		Status: awsv1.EC2NodeClassStatus{Conditions: []metav1.Condition{{
			// A new object's generation is 1.
			Type: awsv1.ConditionTypeReady, Status: metav1.ConditionTrue, ObservedGeneration: 1, Reason: "Ready",
			LastTransitionTime: metav1.NewTime(e.Clock.Now()),
		}}},
	}
	if e.World == nil {
		return nc
	}
	nc.Spec.Role = e.World.NodeRole
	for i, id := range e.World.SubnetIDs {
		z := e.AWS.Zones()[i]
		zid, _ := e.AWS.ZoneID(z)
		nc.Status.Subnets = append(nc.Status.Subnets, awsv1.Subnet{ID: id, Zone: z, ZoneID: zid})
	}
	nc.Status.SecurityGroups = []awsv1.SecurityGroup{{ID: e.World.SecurityGroupID}}
	nc.Status.AMIs = e.AMIs(e.World.Images["al2023/x86_64/standard"])
	nc.Status.InstanceProfile = InstanceProfile
	return nc
}

// AMIs returns the images of an EC2NodeClass's status: amd64 for amd64
// instances and the cluster's standard AL2023 image for arm64 ones.
func (e *Env) AMIs(amd64 string) []awsv1.AMI {
	arch := func(a string) []corev1.NodeSelectorRequirement {
		return []corev1.NodeSelectorRequirement{{Key: wellknown.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{a}}}
	}
	return []awsv1.AMI{
		{ID: amd64, Requirements: arch(wellknown.ArchAMD64)},
		{ID: e.World.Images["al2023/arm64/standard"], Requirements: arch(wellknown.ArchARM64)},
	}
}

// CreateNodeClass creates the Env's EC2NodeClass, named after it (see
// NewEC2NodeClass), changed first by the functions given.
func (e *Env) CreateNodeClass(change ...func(*awsv1.EC2NodeClass)) *awsv1.EC2NodeClass {
	e.T.Helper()
	nc := e.NewEC2NodeClass(e.Name)
	for _, c := range change {
		c(nc)
	}
	e.Create(nc)
	return nc
}

// NewNodePool returns a NodePool named name for on-demand amd64 nodes of
// the EC2NodeClass nodeClass.
func NewNodePool(name, nodeClass string) *karpv1.NodePool {
	return &karpv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
				{Key: wellknown.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{wellknown.ArchAMD64}},
				{Key: wellknown.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{wellknown.CapacityTypeOnDemand}},
			},
			NodeClassRef: NodeClassRef(nodeClass),
		}}},
	}
}

// CreateNodePool creates the Env's NodePool, named after it, of its
// EC2NodeClass (see NewNodePool), changed first by the functions given.
func (e *Env) CreateNodePool(change ...func(*karpv1.NodePool)) *karpv1.NodePool {
	e.T.Helper()
	np := NewNodePool(e.Name, e.Name)
	for _, c := range change {
		c(np)
	}
	e.Create(np)
	return np
}

// NodeClassRef refers to the EC2NodeClass named name.
func NodeClassRef(name string) *karpv1.NodeClassReference {
	return &karpv1.NodeClassReference{Group: wellknown.GroupAWS, Kind: wellknown.KindEC2NodeClass, Name: name}
}

// NewNodeClaim returns a NodeClaim named name of the NodePool nodePool (by
// its label; none for an empty name) and the EC2NodeClass nodeClass, for an
// on-demand amd64 instance with a CPU to spare.
func NewNodeClaim(name, nodePool, nodeClass string) *karpv1.NodeClaim {
	labels := map[string]string{}
	if nodePool != "" {
		labels[wellknown.LabelNodePool] = nodePool
	}
	return &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: karpv1.NodeClaimSpec{
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
				{Key: wellknown.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{wellknown.CapacityTypeOnDemand}},
				{Key: wellknown.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{wellknown.ArchAMD64}},
			},
			Resources:    karpv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
			NodeClassRef: NodeClassRef(nodeClass),
		},
	}
}

// KWOKNodeClassRef refers to a node class of Karpenter's KWOK provider:
// another provider's, whose NodeClaims stevedore leaves alone.
func KWOKNodeClassRef() *karpv1.NodeClassReference {
	return &karpv1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"}
}

// CreateForeign creates a NodeClaim named name of the NodePool pool made by
// another Karpenter provider (KWOK's) in the same cluster, and its Node, as
// that provider leaves them once the node is up: the NodeClaim Launched,
// Registered, Initialized and Ready with provider ID kwok://<name>, the
// Node of the same name Ready and without the not-ready taint, both holding
// the termination finalizer. The functions given change the NodeClaim before
// it is created.
func (e *Env) CreateForeign(name, pool string, change ...func(*karpv1.NodeClaim)) (*karpv1.NodeClaim, *corev1.Node) {
	e.T.Helper()
	labels := map[string]string{
		wellknown.LabelNodePool:           pool,
		wellknown.LabelInstanceType:       "c-2x-amd64-linux",
		wellknown.LabelCapacityType:       wellknown.CapacityTypeOnDemand,
		"karpenter.kwok.sh/kwoknodeclass": "default",
	}
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")}
	now := metav1.NewTime(e.Clock.Now())
	nc := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: maps.Clone(labels), Finalizers: []string{wellknown.FinalizerTermination}},
		Spec: karpv1.NodeClaimSpec{
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
				{Key: wellknown.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"c-2x-amd64-linux"}},
			},
			NodeClassRef: KWOKNodeClassRef(),
		},
		Status: karpv1.NodeClaimStatus{
			ProviderID: "kwok://" + name, NodeName: name, Capacity: capacity, Allocatable: capacity,
		},
	}
	for _, typ := range []string{karpv1.ConditionTypeLaunched, karpv1.ConditionTypeRegistered, karpv1.ConditionTypeInitialized, karpv1.ConditionTypeReady} {
		nc.Status.Conditions = append(nc.Status.Conditions, metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: typ, LastTransitionTime: now})
	}
	for _, c := range change {
		c(nc)
	}
	e.Create(nc)

	labels[wellknown.LabelHostname] = name
	labels[wellknown.LabelRegistered] = wellknown.LabelValueTrue
	labels[wellknown.LabelInitialized] = wellknown.LabelValueTrue
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Labels: labels, Finalizers: []string{wellknown.FinalizerTermination},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: karpv1.GroupVersion.String(), Kind: "NodeClaim", Name: nc.Name, UID: nc.UID}},
		},
		Spec: corev1.NodeSpec{ProviderID: nc.Status.ProviderID},
		Status: corev1.NodeStatus{
			Capacity: capacity, Allocatable: capacity,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastTransitionTime: now, LastHeartbeatTime: now}},
		},
	}
	e.Create(node)
	e.MarkReady(name)
	e.Refresh(node)
	return nc, node
}

// NewPod returns a pod named name with one container that requests cpu
// and memory (nothing for an empty quantity).
func NewPod(name, cpu, memory string) *corev1.Pod {
	requests := corev1.ResourceList{}
	if cpu != "" {
		requests[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if memory != "" {
		requests[corev1.ResourceMemory] = resource.MustParse(memory)
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:      "app",
			Image:     "registry.example/app:1",
			Resources: corev1.ResourceRequirements{Requests: requests},
		}}},
	}
}

// CreateRunning creates the pod bound to the node and as its kubelet
// reports it once it has started: Running and Ready since now.
func (e *Env) CreateRunning(p *corev1.Pod, node string) *corev1.Pod {
	e.T.Helper()
	p.Spec.NodeName = node
	p.Status = corev1.PodStatus{
		Phase:      corev1.PodRunning,
		StartTime:  &metav1.Time{Time: e.Clock.Now()},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
	}
	e.Create(p)
	return p
}

// CreateUnschedulable creates the pod pending, as the kube-scheduler leaves
// a pod it cannot place: PodScheduled False, Unschedulable.
func (e *Env) CreateUnschedulable(p *corev1.Pod) *corev1.Pod {
	e.T.Helper()
	p.Status.Conditions = []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: "0/0 nodes are available", LastTransitionTime: metav1.NewTime(e.Clock.Now()),
	}}
	e.Create(p)
	return p
}

// CreatePDB creates a PodDisruptionBudget named name over the pods with the
// labels given, with maxUnavailable, and plays the disruption controller:
// its status allows allowed disruptions (see AllowDisruptions).
func (e *Env) CreatePDB(name string, selector map[string]string, maxUnavailable, allowed int32) *policyv1.PodDisruptionBudget {
	e.T.Helper()
	mu := intstr.FromInt32(maxUnavailable)
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &mu, Selector: &metav1.LabelSelector{MatchLabels: selector}},
	}
	e.Create(pdb)
	e.AllowDisruptions(pdb, allowed)
	return pdb
}

// AllowDisruptions writes the PodDisruptionBudget's status as the
// disruption controller would with allowed disruptions allowed, out of ten
// healthy pods.
func (e *Env) AllowDisruptions(pdb *policyv1.PodDisruptionBudget, allowed int32) {
	e.T.Helper()
	e.Refresh(pdb)
	pdb.Status = policyv1.PodDisruptionBudgetStatus{
		ObservedGeneration: pdb.Generation,
		DisruptionsAllowed: allowed,
		CurrentHealthy:     10,
		DesiredHealthy:     10 - allowed,
		ExpectedPods:       10,
	}
	if err := e.Kube.Status().Update(e.Ctx, pdb); err != nil {
		e.T.Fatal(err)
	}
}
