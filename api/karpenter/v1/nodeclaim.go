package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeClaim is stevedore's request for one node. stevedore creates a
// NodeClaim from a NodePool's template when pending pods need room, launches
// an instance that satisfies it, and follows the instance through
// registration, initialization and, in the end, termination. Deleting a
// NodeClaim drains and terminates its node.
//
// Users normally only read NodeClaims: the spec cannot change once created.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=nodeclaims,scope=Cluster,categories=karpenter,shortName={nc,ncs}
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Type",type="string",JSONPath=`.metadata.labels.node\.kubernetes\.io/instance-type`,description="Instance type of the node"
// +kubebuilder:printcolumn:name="Capacity",type="string",JSONPath=`.metadata.labels.karpenter\.sh/capacity-type`,description="Capacity type: spot, on-demand or reserved"
// +kubebuilder:printcolumn:name="Zone",type="string",JSONPath=`.metadata.labels.topology\.kubernetes\.io/zone`,description="Availability zone of the node"
// +kubebuilder:printcolumn:name="Node",type="string",JSONPath=`.status.nodeName`,description="Name of the Node object"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=`.status.conditions[?(@.type=="Ready")].status`,description="Whether the node is launched, registered and initialized"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="ImageID",type="string",JSONPath=`.status.imageID`,priority=1,description="Machine image the node runs"
// +kubebuilder:printcolumn:name="ID",type="string",JSONPath=`.status.providerID`,priority=1,description="Cloud provider ID of the instance"
// +kubebuilder:printcolumn:name="NodePool",type="string",JSONPath=`.metadata.labels.karpenter\.sh/nodepool`,priority=1,description="NodePool that created the NodeClaim"
// +kubebuilder:printcolumn:name="NodeClass",type="string",JSONPath=`.spec.nodeClassRef.name`,priority=1,description="Node class the instance was launched from"
// +kubebuilder:printcolumn:name="Drifted",type="string",JSONPath=`.status.conditions[?(@.type=="Drifted")].status`,priority=1,description="Whether the node no longer matches its NodePool or node class"
type NodeClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what the node must satisfy. It cannot change after creation.
	// +kubebuilder:validation:XValidation:rule=`self == oldSelf`,message="a NodeClaim's spec cannot change after creation: change the NodePool instead, and delete the NodeClaim if it must be replaced now"
	// +required
	Spec NodeClaimSpec `json:"spec"`
	// Status is the observed state of the node.
	// +optional
	Status NodeClaimStatus `json:"status,omitempty"`
}

// NodeClaimList is a list of NodeClaims.
//
// +kubebuilder:object:root=true
type NodeClaimList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeClaim `json:"items"`
}

// NodeClaimSpec is what a NodeClaim's node must satisfy.
type NodeClaimSpec struct {
	// Taints are put on the node, and pods must tolerate them to run there.
	// +listType=atomic
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`
	// StartupTaints are put on the node when it starts and are expected to be
	// removed by someone else (typically a DaemonSet) once the node is ready
	// for them. Pods need not tolerate them to be provisioned for.
	// +listType=atomic
	// +optional
	StartupTaints []corev1.Taint `json:"startupTaints,omitempty"`
	// Requirements constrain the node's labels: instance type, zone,
	// capacity type, architecture and any other label. The launched node
	// satisfies all of them.
	// +kubebuilder:validation:XValidation:rule=`self.all(r, r.operator != 'In' || (has(r.values) && r.values.size() > 0))`,message="operator In needs at least one value: list the allowed values, or use Exists to accept any value"
	// +kubebuilder:validation:XValidation:rule=`self.all(r, !(r.operator in ['Gt', 'Lt', 'Gte', 'Lte']) || (has(r.values) && r.values.size() == 1 && int(r.values[0]) >= 0))`,message="operators Gt, Lt, Gte and Lte need exactly one value, a non-negative whole number such as \"5\""
	// +kubebuilder:validation:XValidation:rule=`self.all(r, r.operator != 'In' || !has(r.minValues) || (has(r.values) && r.values.size() >= r.minValues))`,message="minValues is larger than the number of values: list at least minValues values, or lower minValues"
	// +kubebuilder:validation:MaxItems=100
	// +listType=atomic
	// +required
	Requirements []NodeSelectorRequirementWithMinValues `json:"requirements"`
	// Resources are the resources the node must be able to hold.
	// +optional
	Resources ResourceRequirements `json:"resources,omitzero"`
	// NodeClassRef points to the provider-specific node class (for example an
	// EC2NodeClass) that says how to launch the instance.
	// +required
	NodeClassRef *NodeClassReference `json:"nodeClassRef"`
	// TerminationGracePeriod bounds how long draining the node may take once
	// its deletion starts. When it runs out, remaining pods are deleted even
	// if a PodDisruptionBudget or the karpenter.sh/do-not-disrupt annotation
	// protects them; pods are deleted early enough to get their own
	// terminationGracePeriodSeconds before the deadline. Unset means wait for
	// as long as draining takes.
	// +kubebuilder:validation:Pattern=`^([0-9]+(s|m|h))+$`
	// +kubebuilder:validation:Type=string
	// +optional
	TerminationGracePeriod *Duration `json:"terminationGracePeriod,omitempty"`
	// ExpireAfter is how long after its creation the node is replaced,
	// whatever else happens: a way to keep nodes fresh. "Never" turns
	// expiry off.
	// +kubebuilder:default="720h"
	// +kubebuilder:validation:Pattern=`^(([0-9]+(s|m|h))+|Never)$`
	// +kubebuilder:validation:Type=string
	// +optional
	ExpireAfter *NillableDuration `json:"expireAfter,omitempty"`
}

// Operators that Karpenter adds to the node selector operators of
// Kubernetes. Like Gt and Lt they compare the label's value, a whole number,
// with the requirement's single value, but include it.
const (
	NodeSelectorOpGte corev1.NodeSelectorOperator = "Gte"
	NodeSelectorOpLte corev1.NodeSelectorOperator = "Lte"
)

// NodeSelectorRequirementWithMinValues is a requirement on one node label,
// with an optional floor on how many different values the launch must be
// able to choose from.
type NodeSelectorRequirementWithMinValues struct {
	// Key is the label the requirement applies to.
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule=`self in ['karpenter.sh/capacity-type', 'karpenter.sh/nodepool'] || !self.find('^([^/]+)').endsWith('karpenter.sh')`,message="keys in the karpenter.sh domain are reserved for stevedore: use karpenter.sh/capacity-type, or a key in your own domain"
	// +kubebuilder:validation:XValidation:rule=`self in ['karpenter.k8s.aws/instance-tenancy', 'karpenter.k8s.aws/capacity-reservation-type', 'karpenter.k8s.aws/capacity-reservation-id', 'karpenter.k8s.aws/ec2nodeclass', 'karpenter.k8s.aws/instance-encryption-in-transit-supported', 'karpenter.k8s.aws/instance-category', 'karpenter.k8s.aws/instance-hypervisor', 'karpenter.k8s.aws/instance-family', 'karpenter.k8s.aws/instance-generation', 'karpenter.k8s.aws/instance-local-nvme', 'karpenter.k8s.aws/instance-size', 'karpenter.k8s.aws/instance-cpu', 'karpenter.k8s.aws/instance-cpu-manufacturer', 'karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz', 'karpenter.k8s.aws/instance-memory', 'karpenter.k8s.aws/instance-ebs-bandwidth', 'karpenter.k8s.aws/instance-network-bandwidth', 'karpenter.k8s.aws/instance-gpu-name', 'karpenter.k8s.aws/instance-gpu-manufacturer', 'karpenter.k8s.aws/instance-gpu-count', 'karpenter.k8s.aws/instance-gpu-memory', 'karpenter.k8s.aws/instance-accelerator-name', 'karpenter.k8s.aws/instance-accelerator-manufacturer', 'karpenter.k8s.aws/instance-accelerator-count', 'karpenter.k8s.aws/instance-capability-flex'] || !self.find('^([^/]+)').endsWith('karpenter.k8s.aws')`,message="keys in the karpenter.k8s.aws domain are reserved for stevedore: use a well-known instance label such as karpenter.k8s.aws/instance-family, or a key in your own domain"
	// +kubebuilder:validation:XValidation:rule=`self != 'kubernetes.io/hostname'`,message="kubernetes.io/hostname cannot be required: each node has its own host name; spread pods with topology spread constraints or pod anti-affinity instead"
	// +required
	Key string `json:"key"`
	// Operator relates the label's value to Values: In, NotIn, Exists,
	// DoesNotExist, Gt (greater than), Lt (less than), Gte (greater than or
	// equal) or Lte (less than or equal).
	// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist;Gt;Lt;Gte;Lte
	// +required
	Operator corev1.NodeSelectorOperator `json:"operator"`
	// Values are the label values the operator compares with. In and NotIn
	// take a list, Gt, Lt, Gte and Lte a single whole number, Exists and
	// DoesNotExist none.
	// +listType=atomic
	// +optional
	Values []string `json:"values,omitempty"`
	// MinValues, with operator In, is the least number of different values
	// of this label that the instance types offered for a launch must cover.
	// It keeps a NodePool flexible, for example so that spot launches can
	// choose among several instance families.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=50
	// +optional
	MinValues *int `json:"minValues,omitempty"`
}

// ResourceRequirements are the resources a NodeClaim's node must provide.
type ResourceRequirements struct {
	// Requests is the least amount of each resource the node must be able to
	// allocate to pods: the sum of the pods that the NodeClaim was made for,
	// plus daemon set overhead.
	// +optional
	Requests corev1.ResourceList `json:"requests,omitempty"`
}

// NodeClassReference points to a provider-specific node class object.
type NodeClassReference struct {
	// Group is the API group of the node class, without a version: for
	// example karpenter.k8s.aws.
	// +kubebuilder:validation:Pattern=`^[^/]*$`
	// +kubebuilder:validation:XValidation:rule=`self != ''`,message="nodeClassRef.group must not be empty: set it to the node class's API group, for example karpenter.k8s.aws"
	// +required
	Group string `json:"group"`
	// Kind is the kind of the node class: for example EC2NodeClass.
	// +kubebuilder:validation:XValidation:rule=`self != ''`,message="nodeClassRef.kind must not be empty: set it to the node class's kind, for example EC2NodeClass"
	// +required
	Kind string `json:"kind"`
	// Name is the name of the node class object.
	// +kubebuilder:validation:XValidation:rule=`self != ''`,message="nodeClassRef.name must not be empty: set it to the name of the node class object, for example default"
	// +required
	Name string `json:"name"`
}
