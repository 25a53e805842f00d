package wellknown

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Annotations on Pods, Nodes, NodeClaims and NodePools.
const (
	// AnnotationDoNotDisrupt on a Pod, Node or NodeClaim keeps stevedore from
	// disrupting the node voluntarily (consolidation, drift). On a Pod the
	// value is "true" or a duration such as "30m", counted from the pod's
	// start; on a Node or NodeClaim only "true" counts. Expiration and
	// interruption still apply.
	AnnotationDoNotDisrupt = GroupCore + "/do-not-disrupt"

	// AnnotationNodePoolHash holds the hash of a NodePool's template. It is
	// written on the NodePool and copied onto each NodeClaim at launch; a
	// difference means the NodeClaim has drifted.
	AnnotationNodePoolHash = GroupCore + "/nodepool-hash"
	// AnnotationNodePoolHashVersion holds the version of the algorithm that
	// produced AnnotationNodePoolHash. Hashes are compared only when the
	// versions match; when they differ the NodeClaim is stamped again instead
	// of being treated as drifted.
	AnnotationNodePoolHashVersion = GroupCore + "/nodepool-hash-version"

	// AnnotationNodeClaimTerminationTimestamp, on a deleting NodeClaim and its
	// Node, is the RFC 3339 time by which the node is removed whatever its
	// pods: deletion time plus the terminationGracePeriod.
	AnnotationNodeClaimTerminationTimestamp = GroupCore + "/nodeclaim-termination-timestamp"
	// AnnotationNodeClaimMinValuesRelaxed is "true" on a NodeClaim whose
	// requirements' minValues were lowered to what the catalog could offer
	// (the BestEffort minValues policy), "false" on other NodeClaims the
	// provisioner or disruption launches.
	AnnotationNodeClaimMinValuesRelaxed = GroupCore + "/nodeclaim-min-values-relaxed"
	// AnnotationRequestedDRADrivers lists the dynamic resource allocation
	// drivers that the pods behind a NodeClaim need. Reserved; newer than v1.0.
	AnnotationRequestedDRADrivers = GroupCore + "/requested-dra-drivers"
	// AnnotationPriceOverlayApplied marks an instance type whose price came
	// from a price overlay. Reserved; newer than v1.0.
	AnnotationPriceOverlayApplied = GroupCore + "/price-overlay-applied"
	// AnnotationCapacityOverlayApplied marks an instance type whose capacity
	// came from a capacity overlay. Reserved; newer than v1.0.
	AnnotationCapacityOverlayApplied = GroupCore + "/capacity-overlay-applied"
	// AnnotationCapacityBufferFakePod marks the placeholder pods that stand
	// for spare capacity. Reserved; newer than v1.0.
	AnnotationCapacityBufferFakePod = GroupCore + "/capacity-buffer-fake-pod"
	// AnnotationCapacityBufferName and AnnotationCapacityBufferNamespace
	// name the CapacityBuffer a placeholder pod stands for.
	AnnotationCapacityBufferName      = GroupCore + "/capacity-buffer-name"
	AnnotationCapacityBufferNamespace = GroupCore + "/capacity-buffer-namespace"
	// AnnotationProviderCompatibility names the cloud provider that created an
	// object.
	AnnotationProviderCompatibility = GroupCompatibility + "/provider"

	// AnnotationEC2NodeClassHash holds the hash of an EC2NodeClass spec, on
	// the EC2NodeClass and on each NodeClaim launched from it.
	AnnotationEC2NodeClassHash = GroupAWS + "/ec2nodeclass-hash"
	// AnnotationEC2NodeClassHashVersion holds the version of the algorithm
	// that produced AnnotationEC2NodeClassHash.
	AnnotationEC2NodeClassHashVersion = GroupAWS + "/ec2nodeclass-hash-version"
	// AnnotationInstanceProfileName, on a NodeClaim, names the instance
	// profile its instance was launched with.
	AnnotationInstanceProfileName = GroupAWS + "/instance-profile-name"
	// AnnotationInstanceTagged is "true" on a NodeClaim once its instance has
	// been given the tags that need the node's name.
	AnnotationInstanceTagged = GroupAWS + "/tagged"
)

// Values of the hash version annotations.
//
// A NodeClaim whose hash version equals the current one is compared by hash
// value; so a version may only be reused while the hash is computed exactly
// as before. A new version is needed whenever a default changes, a hashed
// field is added with a value already set, a field is removed from the hash,
// or a field changes type.
//
// Both hashes are Karpenter's own (see controllers/nodepool/hash and
// cloud/aws/drift), so their versions are Karpenter's too: NodePools,
// EC2NodeClasses and NodeClaims of a cluster that moves from Karpenter, or
// back to it, keep their hashes and nothing drifts. A hash changes only
// together with Karpenter's, under Karpenter's new version.
const (
	// NodePoolHashVersion is the current value of
	// AnnotationNodePoolHashVersion: Karpenter's v3.
	NodePoolHashVersion = "v3"
	// EC2NodeClassHashVersion is the current value of
	// AnnotationEC2NodeClassHashVersion: Karpenter's v5.
	EC2NodeClassHashVersion = "v5"
)

// Taints.
const (
	// TaintKeyDisrupted is put on a node, with TaintEffectDisrupted, once
	// stevedore has decided to remove it, so that no new pods land there.
	TaintKeyDisrupted = GroupCore + "/disrupted"
	// TaintEffectDisrupted is the effect of the disrupted taint.
	TaintEffectDisrupted = corev1.TaintEffectNoSchedule

	// TaintKeyUnregistered is put on a node by its boot configuration, with
	// TaintEffectUnregistered, and removed by stevedore once the node has been
	// matched to its NodeClaim and given its labels and taints. It keeps pods
	// off a node whose configuration is not yet complete.
	TaintKeyUnregistered = GroupCore + "/unregistered"
	// TaintEffectUnregistered is the effect of the unregistered taint.
	TaintEffectUnregistered = corev1.TaintEffectNoExecute

	// TaintKeyNotReady, TaintKeyUnreachable and TaintKeyUninitialized are
	// put on nodes by Kubernetes and cloud controllers while a node starts.
	// stevedore waits for them to go before it calls a node initialized.
	TaintKeyNotReady      = corev1.TaintNodeNotReady
	TaintKeyUnreachable   = corev1.TaintNodeUnreachable
	TaintKeyUninitialized = "node.cloudprovider.kubernetes.io/uninitialized"
	// TaintKeyPrefixReadiness starts the keys of readiness gate taints, which
	// other controllers remove when the node is ready for them.
	TaintKeyPrefixReadiness = "readiness.k8s.io/"
)

// DisruptedTaint returns the taint that marks a node being disrupted.
func DisruptedTaint() corev1.Taint {
	return corev1.Taint{Key: TaintKeyDisrupted, Effect: TaintEffectDisrupted}
}

// UnregisteredTaint returns the taint that a node carries until stevedore has
// registered it.
func UnregisteredTaint() corev1.Taint {
	return corev1.Taint{Key: TaintKeyUnregistered, Effect: TaintEffectUnregistered}
}

// Finalizers.
const (
	// FinalizerTermination is held by NodeClaims and Nodes until their
	// instance has been drained and terminated.
	FinalizerTermination = GroupCore + "/termination"
	// FinalizerEC2NodeClassTermination is held by an EC2NodeClass until no
	// NodeClaim uses it and its instance profiles and launch templates have
	// been deleted.
	FinalizerEC2NodeClassTermination = GroupAWS + "/termination"
)

// Tags that stevedore puts on EC2 resources (instances, volumes, network
// interfaces, launch templates, fleets, instance profiles). They mark
// ownership, so users may not set them in an EC2NodeClass.
const (
	// TagNodePool names the NodePool that launched the instance.
	TagNodePool = LabelNodePool
	// TagNodeClaim names the NodeClaim the instance belongs to.
	TagNodeClaim = GroupCore + "/nodeclaim"
	// TagEC2NodeClass names the EC2NodeClass the instance was launched from.
	TagEC2NodeClass = LabelEC2NodeClass
	// TagEKSClusterName names the EKS cluster.
	TagEKSClusterName = "eks:eks-cluster-name"
	// TagClusterPrefix followed by the cluster name, with the value "owned",
	// marks resources that belong to the cluster.
	TagClusterPrefix = "kubernetes.io/cluster/"
	// TagName is the EC2 display name; stevedore sets it to the node name.
	// Users may set it.
	TagName = "Name"
)

// IsRestrictedTag reports whether users are barred from setting key in an
// EC2NodeClass's tags, because stevedore uses it to mark ownership.
func IsRestrictedTag(key string) bool {
	switch key {
	case TagEKSClusterName, TagNodePool, TagNodeClaim, TagEC2NodeClass:
		return true
	}
	return strings.HasPrefix(key, TagClusterPrefix)
}
