package snapshot

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
)

// testNow is the snapshot time of the tests.
var testNow = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

// objMeta is the metadata an API server returns, with the fields a snapshot
// strips set so that the tests see them go.
func objMeta(namespace, name, uid string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Namespace: namespace, Name: name, UID: types.UID(uid),
		ResourceVersion: "4711", Generation: 3,
		CreationTimestamp: metav1.NewTime(testNow.Add(-48 * time.Hour)),
		ManagedFields:     []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}},
		Annotations:       map[string]string{annotationLastApplied: `{"apiVersion":"v1"}`},
	}
}

func deleting(m metav1.ObjectMeta) metav1.ObjectMeta {
	m.DeletionTimestamp = ptr(metav1.NewTime(testNow.Add(-time.Minute)))
	m.Finalizers = []string{"example.com/hold"}
	return m
}

var (
	amd64Req    = corev1.NodeSelectorRequirement{Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}
	arm64Req    = corev1.NodeSelectorRequirement{Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}}
	noGPU       = corev1.NodeSelectorRequirement{Key: "karpenter.k8s.aws/instance-gpu-count", Operator: corev1.NodeSelectorOpDoesNotExist}
	noAccel     = corev1.NodeSelectorRequirement{Key: "karpenter.k8s.aws/instance-accelerator-count", Operator: corev1.NodeSelectorOpDoesNotExist}
	gpu         = corev1.NodeSelectorRequirement{Key: "karpenter.k8s.aws/instance-gpu-count", Operator: corev1.NodeSelectorOpExists}
	accelerator = corev1.NodeSelectorRequirement{Key: "karpenter.k8s.aws/instance-accelerator-count", Operator: corev1.NodeSelectorOpExists}
)

func podSpec(node string) corev1.PodSpec {
	return corev1.PodSpec{
		NodeName: node,
		Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}}}},
	}
}

func pod(namespace, name, uid, node string, phase corev1.PodPhase, owners ...metav1.OwnerReference) corev1.Pod {
	m := objMeta(namespace, name, uid)
	m.OwnerReferences = owners
	return corev1.Pod{ObjectMeta: m, Spec: podSpec(node), Status: corev1.PodStatus{Phase: phase, PodIP: "10.0.0.1",
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
}

func owner(apiVersion, kind, name, uid string) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid), Controller: ptr(true)}
}

// testCluster is a small cluster with one object of every case Build
// distinguishes.
func testCluster() *Cluster {
	pool := karpv1.NodePool{ObjectMeta: objMeta("", "default", "uid-pool"), Spec: karpv1.NodePoolSpec{
		Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
			NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{Key: "karpenter.sh/capacity-type", Operator: corev1.NodeSelectorOpIn, Values: []string{"on-demand"}}},
		}},
		Disruption: karpv1.Disruption{ConsolidationPolicy: karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized, ConsolidateAfter: karpv1.NewNillableDuration(time.Minute)},
	}}
	pool.Status.Resources = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}

	alias := awsv1.EC2NodeClass{ObjectMeta: objMeta("", "default", "uid-class-default"), Spec: awsv1.EC2NodeClassSpec{
		SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "demo"}}},
		SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "demo"}}},
		AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
		Role:                       "KarpenterNodeRole-demo",
	}, Status: awsv1.EC2NodeClassStatus{
		Subnets:        []awsv1.Subnet{{ID: "subnet-0b", Zone: "us-west-2b", ZoneID: "usw2-az2"}, {ID: "subnet-0a", Zone: "us-west-2a", ZoneID: "usw2-az1"}},
		SecurityGroups: []awsv1.SecurityGroup{{ID: "sg-01", Name: "demo-nodes"}},
		AMIs: []awsv1.AMI{
			{ID: "ami-0000000000000a001", Name: "amazon-eks-node-al2023-x86_64-standard-1.33-v20260220", Requirements: []corev1.NodeSelectorRequirement{amd64Req, noGPU, noAccel}},
			{ID: "ami-0000000000000a002", Name: "amazon-eks-node-al2023-arm64-standard-1.33-v20260220", Requirements: []corev1.NodeSelectorRequirement{arm64Req, noGPU, noAccel}},
			{ID: "ami-0000000000000a003", Name: "amazon-eks-node-al2023-x86_64-nvidia-1.33-v20260220", Requirements: []corev1.NodeSelectorRequirement{amd64Req, gpu}},
			{ID: "ami-0000000000000a004", Name: "amazon-eks-node-al2023-x86_64-neuron-1.33-v20260220", Requirements: []corev1.NodeSelectorRequirement{amd64Req, accelerator}},
		},
		InstanceProfile: "demo_123",
	}}
	custom := awsv1.EC2NodeClass{ObjectMeta: objMeta("", "custom", "uid-class-custom"), Spec: awsv1.EC2NodeClassSpec{
		SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "demo", "tier": "*"}}},
		SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{ID: "sg-02"}},
		AMISelectorTerms:           []awsv1.AMISelectorTerm{{Tags: map[string]string{"team": "*", "os": "al2023"}, Owner: "123456789012"}},
		AMIFamily:                  ptr(awsv1.AMIFamilyAL2023),
		Role:                       "KarpenterNodeRole-demo",
	}, Status: awsv1.EC2NodeClassStatus{
		Subnets:        []awsv1.Subnet{{ID: "subnet-0a", Zone: "us-west-2a"}},
		SecurityGroups: []awsv1.SecurityGroup{{ID: "sg-02", Name: "custom"}},
		AMIs:           []awsv1.AMI{{ID: "ami-0000000000000c001", Name: "team-al2023-arm64", Requirements: []corev1.NodeSelectorRequirement{arm64Req}}},
	}}

	claimMeta := objMeta("", "default-abcde", "uid-claim")
	claimMeta.Labels = map[string]string{"karpenter.sh/nodepool": "default", "karpenter.k8s.aws/ec2nodeclass": "default", "topology.kubernetes.io/zone": "us-west-2a",
		"node.kubernetes.io/instance-type": "m6i.large", "karpenter.sh/capacity-type": "on-demand", "kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux"}
	claimMeta.Finalizers = []string{"karpenter.sh/termination"}
	claimMeta.OwnerReferences = []metav1.OwnerReference{{APIVersion: "karpenter.sh/v1", Kind: "NodePool", Name: "default", UID: "uid-pool", BlockOwnerDeletion: ptr(true)}}
	claimSpec := karpv1.NodeClaimSpec{
		NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
		Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{Key: "node.kubernetes.io/instance-type", Operator: corev1.NodeSelectorOpIn, Values: []string{"m6i.large"}}},
	}
	claim := karpv1.NodeClaim{ObjectMeta: claimMeta, Spec: claimSpec, Status: karpv1.NodeClaimStatus{
		NodeName: "ip-10-0-1-1.us-west-2.compute.internal", ProviderID: "aws:///us-west-2a/i-0123456789abcdef0", ImageID: "ami-0000000000000a001",
		Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi")},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1930m")},
		Conditions: []metav1.Condition{
			{Type: "Launched", Status: metav1.ConditionTrue, Reason: "Launched", LastTransitionTime: metav1.NewTime(testNow.Add(-48 * time.Hour))},
			{Type: "Registered", Status: metav1.ConditionTrue, Reason: "Registered", LastTransitionTime: metav1.NewTime(testNow.Add(-47 * time.Hour))},
			{Type: "Initialized", Status: metav1.ConditionTrue, Reason: "Initialized", LastTransitionTime: metav1.NewTime(testNow.Add(-47 * time.Hour))},
			{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.NewTime(testNow.Add(-47 * time.Hour))},
		},
	}}
	goneClaim := karpv1.NodeClaim{ObjectMeta: deleting(objMeta("", "default-zzzzz", "uid-claim-gone")), Spec: claimSpec}

	nodeMeta := objMeta("", "ip-10-0-1-1.us-west-2.compute.internal", "uid-node")
	nodeMeta.Labels = map[string]string{"topology.kubernetes.io/region": "us-west-2", "topology.kubernetes.io/zone": "us-west-2a", "karpenter.sh/nodepool": "default",
		"karpenter.k8s.aws/ec2nodeclass": "default", "karpenter.sh/registered": "true", "karpenter.sh/initialized": "true",
		"node.kubernetes.io/instance-type": "m6i.large", "karpenter.sh/capacity-type": "on-demand", "kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux",
		"kubernetes.io/hostname": "ip-10-0-1-1.us-west-2.compute.internal"}
	nodeMeta.Annotations[annotationNodeTTL] = "0"
	nodeMeta.Annotations["volumes.kubernetes.io/controller-managed-attach-detach"] = "true"
	nodeMeta.Annotations["karpenter.sh/nodepool-hash"] = "123"
	nodeMeta.Finalizers = []string{"karpenter.sh/termination"}
	node := corev1.Node{ObjectMeta: nodeMeta,
		Spec: corev1.NodeSpec{ProviderID: "aws:///us-west-2a/i-0123456789abcdef0", PodCIDR: "10.1.0.0/24",
			Taints: []corev1.Taint{{Key: "dedicated", Value: "web", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourcePods: resource.MustParse("29")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1930m"), corev1.ResourcePods: resource.MustParse("29")},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status",
				LastHeartbeatTime: metav1.NewTime(testNow)}},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.1.1"}},
			NodeInfo:  corev1.NodeSystemInfo{Architecture: "amd64", OperatingSystem: "linux", KubeletVersion: "v1.33.4-eks-1234", KernelVersion: "6.1"},
			Images:    []corev1.ContainerImage{{Names: []string{"registry.example/app:1"}}},
		}}
	goneNode := corev1.Node{ObjectMeta: deleting(objMeta("", "ip-10-0-9-9.us-west-2.compute.internal", "uid-node-gone"))}
	goneNode.Labels = map[string]string{"topology.kubernetes.io/region": "us-west-2"}

	deploy := owner("apps/v1", "Deployment", "web", "uid-deploy-web")
	web := appsv1.ReplicaSet{ObjectMeta: objMeta("shop", "web-5d8f7", "uid-rs-web"), Spec: appsv1.ReplicaSetSpec{Replicas: ptr(int32(2)),
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}, Spec: podSpec("")}},
		Status: appsv1.ReplicaSetStatus{Replicas: 2, ReadyReplicas: 2}}
	web.OwnerReferences = []metav1.OwnerReference{deploy}
	oldWeb := appsv1.ReplicaSet{ObjectMeta: objMeta("shop", "web-1a2b3", "uid-rs-old"), Spec: appsv1.ReplicaSetSpec{Replicas: ptr(int32(0)),
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	oldWeb.OwnerReferences = []metav1.OwnerReference{deploy}
	rollout := appsv1.ReplicaSet{ObjectMeta: objMeta("shop", "canary-77c9d", "uid-rs-canary"), Spec: appsv1.ReplicaSetSpec{Replicas: ptr(int32(1)),
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "canary"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "canary"}}, Spec: podSpec("")}}}
	rollout.OwnerReferences = []metav1.OwnerReference{owner("argoproj.io/v1alpha1", "Rollout", "canary", "uid-rollout")}

	ds := appsv1.DaemonSet{ObjectMeta: objMeta("kube-system", "aws-node", "uid-ds"), Spec: appsv1.DaemonSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": "aws-node"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"k8s-app": "aws-node"}}, Spec: podSpec("")}},
		Status: appsv1.DaemonSetStatus{NumberReady: 1}}
	db := appsv1.StatefulSet{ObjectMeta: objMeta("shop", "db", "uid-sts"), Spec: appsv1.StatefulSetSpec{Replicas: ptr(int32(1)), ServiceName: "db",
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}}, Spec: podSpec("")},
		VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}}}}}}}
	running := batchv1.Job{ObjectMeta: objMeta("batch", "report", "uid-job"), Spec: batchv1.JobSpec{Parallelism: ptr(int32(1)),
		Template: corev1.PodTemplateSpec{Spec: podSpec("")}}}
	done := batchv1.Job{ObjectMeta: objMeta("batch", "report-old", "uid-job-done"), Status: batchv1.JobStatus{
		Conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}}}
	failed := batchv1.Job{ObjectMeta: objMeta("batch", "report-failed", "uid-job-failed"), Status: batchv1.JobStatus{
		Conditions: []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue}}}}

	nodeName := node.Name
	rsOwner := owner("apps/v1", "ReplicaSet", "web-5d8f7", "uid-rs-web")
	dbPod := pod("shop", "db-0", "uid-pod-db", nodeName, corev1.PodRunning, owner("apps/v1", "StatefulSet", "db", "uid-sts"))
	dbPod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-db-0"}}}}
	mirror := pod("kube-system", "kube-proxy-ip-10-0-1-1", "uid-pod-mirror", nodeName, corev1.PodRunning, metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: nodeName, UID: "uid-node"})
	goneWeb := pod("shop", "web-5d8f7-old", "uid-pod-gone", nodeName, corev1.PodRunning, rsOwner)
	goneWeb.ObjectMeta = deleting(goneWeb.ObjectMeta)
	goneWeb.OwnerReferences = []metav1.OwnerReference{rsOwner}
	pods := []corev1.Pod{
		pod("shop", "web-5d8f7-aaaaa", "uid-pod-web-a", nodeName, corev1.PodRunning, rsOwner),
		pod("shop", "web-5d8f7-bbbbb", "uid-pod-web-b", "", corev1.PodPending, rsOwner),
		pod("kube-system", "aws-node-xyz", "uid-pod-ds", nodeName, corev1.PodRunning, owner("apps/v1", "DaemonSet", "aws-node", "uid-ds")),
		pod("batch", "report-old-1", "uid-pod-done", nodeName, corev1.PodSucceeded, owner("batch/v1", "Job", "report-old", "uid-job-done")),
		pod("batch", "report-failed-1", "uid-pod-failed", nodeName, corev1.PodFailed, owner("batch/v1", "Job", "report-failed", "uid-job-failed")),
		dbPod, mirror, goneWeb,
	}

	critical := schedulingv1.PriorityClass{ObjectMeta: objMeta("", "system-node-critical", "uid-pc-sys"), Value: 2000001000}
	high := schedulingv1.PriorityClass{ObjectMeta: objMeta("", "high", "uid-pc-high"), Value: 1000, Description: "for the shop",
		PreemptionPolicy: ptr(corev1.PreemptLowerPriority)}
	pdb := policyv1.PodDisruptionBudget{ObjectMeta: objMeta("shop", "web", "uid-pdb"), Spec: policyv1.PodDisruptionBudgetSpec{
		MinAvailable: ptr(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 1}}

	claimVol := corev1.PersistentVolumeClaim{ObjectMeta: objMeta("shop", "data-db-0", "uid-pvc"), Spec: corev1.PersistentVolumeClaimSpec{
		VolumeName: "pv-db", StorageClassName: ptr("gp3"), AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}}}
	pv := corev1.PersistentVolume{ObjectMeta: objMeta("", "pv-db", "uid-pv"), Spec: corev1.PersistentVolumeSpec{
		ClaimRef:     &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "shop", Name: "data-db-0", UID: "uid-pvc"},
		Capacity:     corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
		NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"us-west-2a"}}}}}}},
	}, Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound}}
	released := corev1.PersistentVolume{ObjectMeta: objMeta("", "pv-released", "uid-pv-released"), Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeReleased}}

	return &Cluster{
		KubernetesVersion:      "1.33",
		NodePools:              []karpv1.NodePool{pool},
		NodeClasses:            []awsv1.EC2NodeClass{alias, custom},
		NodeClaims:             []karpv1.NodeClaim{goneClaim, claim},
		Nodes:                  []corev1.Node{goneNode, node},
		Pods:                   pods,
		PodDisruptionBudgets:   []policyv1.PodDisruptionBudget{pdb},
		DaemonSets:             []appsv1.DaemonSet{ds},
		StatefulSets:           []appsv1.StatefulSet{db},
		ReplicaSets:            []appsv1.ReplicaSet{web, oldWeb, rollout},
		Jobs:                   []batchv1.Job{done, running, failed},
		PriorityClasses:        []schedulingv1.PriorityClass{critical, high},
		PersistentVolumeClaims: []corev1.PersistentVolumeClaim{claimVol},
		PersistentVolumes:      []corev1.PersistentVolume{released, pv},
	}
}
