package wellknown

import "k8s.io/apimachinery/pkg/runtime/schema"

// ClusterScoped reports whether objects of kind gk live outside any
// namespace: the cluster-scoped kinds built into Kubernetes, stevedore's
// (Karpenter's) own, and Karpenter's older ones. Every other kind is taken
// to be namespaced. The validator and the simulated API server both read
// this one table.
func ClusterScoped(gk schema.GroupKind) bool { return clusterScoped[gk] }

var clusterScoped = map[schema.GroupKind]bool{
	{Group: "", Kind: "Namespace"}:        true,
	{Group: "", Kind: "Node"}:             true,
	{Group: "", Kind: "PersistentVolume"}: true,
	{Group: "", Kind: "ComponentStatus"}:  true,

	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}:     true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}:   true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicy"}:          true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicyBinding"}:   true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"}:        true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding"}: true,
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}:                 true,
	{Group: "apiregistration.k8s.io", Kind: "APIService"}:                             true,
	{Group: "certificates.k8s.io", Kind: "CertificateSigningRequest"}:                 true,
	{Group: "certificates.k8s.io", Kind: "ClusterTrustBundle"}:                        true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "FlowSchema"}:                       true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "PriorityLevelConfiguration"}:       true,
	{Group: "internal.apiserver.k8s.io", Kind: "StorageVersion"}:                      true,
	{Group: "networking.k8s.io", Kind: "IngressClass"}:                                true,
	{Group: "networking.k8s.io", Kind: "IPAddress"}:                                   true,
	{Group: "networking.k8s.io", Kind: "ServiceCIDR"}:                                 true,
	{Group: "node.k8s.io", Kind: "RuntimeClass"}:                                      true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:                         true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}:                  true,
	{Group: "resource.k8s.io", Kind: "DeviceClass"}:                                   true,
	{Group: "resource.k8s.io", Kind: "DeviceTaintRule"}:                               true,
	{Group: "resource.k8s.io", Kind: "ResourceSlice"}:                                 true,
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:                               true,
	{Group: "storage.k8s.io", Kind: "CSIDriver"}:                                      true,
	{Group: "storage.k8s.io", Kind: "CSINode"}:                                        true,
	{Group: "storage.k8s.io", Kind: "StorageClass"}:                                   true,
	{Group: "storage.k8s.io", Kind: "VolumeAttachment"}:                               true,
	{Group: "storage.k8s.io", Kind: "VolumeAttributesClass"}:                          true,
	{Group: "storagemigration.k8s.io", Kind: "StorageVersionMigration"}:               true,

	{Group: GroupCore, Kind: "NodePool"}:       true,
	{Group: GroupCore, Kind: "NodeClaim"}:      true,
	{Group: GroupCore, Kind: "NodeOverlay"}:    true,
	{Group: GroupAWS, Kind: "EC2NodeClass"}:    true,
	{Group: GroupCore, Kind: "Provisioner"}:    true,
	{Group: GroupCore, Kind: "Machine"}:        true,
	{Group: GroupAWS, Kind: "AWSNodeTemplate"}: true,
}
