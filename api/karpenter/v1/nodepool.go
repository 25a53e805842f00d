package v1

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodePool tells stevedore what nodes it may launch for pending pods (the
// template: labels, taints, requirements, node class), how much it may launch
// in total (limits), which NodePool to prefer (weight), and when and how fast
// it may take nodes away again (disruption).
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=nodepools,scope=Cluster,categories=karpenter,shortName={np,nps}
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.nodes
// +kubebuilder:printcolumn:name="NodeClass",type="string",JSONPath=`.spec.template.spec.nodeClassRef.name`,description="Node class the NodePool launches from"
// +kubebuilder:printcolumn:name="Nodes",type="integer",JSONPath=`.status.nodes`,description="Number of nodes the NodePool owns"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=`.status.conditions[?(@.type=="Ready")].status`,description="Whether the NodePool is valid and its node class is ready"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Weight",type="integer",JSONPath=`.spec.weight`,priority=1,description="Priority among NodePools; higher goes first"
// +kubebuilder:printcolumn:name="CPU",type="string",JSONPath=`.status.resources.cpu`,priority=1,description="CPU of the NodePool's nodes"
// +kubebuilder:printcolumn:name="Memory",type="string",JSONPath=`.status.resources.memory`,priority=1,description="Memory of the NodePool's nodes"
type NodePool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the NodePool's desired behaviour.
	// +kubebuilder:validation:XValidation:rule=`has(self.replicas) == has(oldSelf.replicas)`,message="a NodePool cannot switch between static (replicas set) and dynamic (replicas unset): create a new NodePool of the other kind, then delete this one"
	// +kubebuilder:validation:XValidation:rule=`!has(self.replicas) || !has(self.limits) || size(self.limits) == 0 || (size(self.limits) == 1 && 'nodes' in self.limits)`,message="a static NodePool (replicas set) supports only limits.nodes: remove the other limits"
	// +kubebuilder:validation:XValidation:rule=`!has(self.replicas) || !has(self.weight)`,message="a static NodePool (replicas set) cannot have a weight: remove weight"
	// +required
	Spec NodePoolSpec `json:"spec"`
	// Status is the NodePool's observed state.
	// +optional
	Status NodePoolStatus `json:"status,omitempty"`
}

// NodePoolList is a list of NodePools.
//
// +kubebuilder:object:root=true
type NodePoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodePool `json:"items"`
}

// NodePoolSpec is a NodePool's desired behaviour.
type NodePoolSpec struct {
	// Template is the pattern for the NodeClaims this NodePool creates. A
	// NodeClaim usually narrows it further to fit the pods it is made for.
	// +required
	Template NodeClaimTemplate `json:"template"`
	// Disruption says when stevedore may remove this NodePool's nodes on its
	// own initiative, and how many at a time.
	// +kubebuilder:default={consolidateAfter: "0s"}
	// +optional
	Disruption Disruption `json:"disruption"`
	// Limits cap the total resources of this NodePool's nodes, for example
	// cpu, memory, nodes or an extended resource. stevedore launches nothing
	// that could take the NodePool past a limit.
	// +optional
	Limits corev1.ResourceList `json:"limits,omitempty"`
	// Weight orders NodePools: stevedore tries those with a higher weight
	// first. A NodePool without a weight comes after all weighted ones.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	Weight *int32 `json:"weight,omitempty"`
	// Replicas makes the NodePool static: stevedore keeps exactly this many
	// nodes, whatever the pods need, instead of sizing the NodePool to the
	// pending pods. Consolidation does not apply to a static NodePool, it
	// supports only limits.nodes, and it cannot have a weight. A NodePool
	// cannot switch between static and dynamic. The field is alpha upstream.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int64 `json:"replicas,omitempty"`
}

// NodeClaimTemplate is the pattern for a NodePool's NodeClaims.
type NodeClaimTemplate struct {
	// Metadata holds labels and annotations for the NodeClaims and their
	// Nodes.
	// +optional
	Metadata NodeClaimTemplateMetadata `json:"metadata,omitempty"`
	// Spec is the pattern for the NodeClaims' spec.
	// +required
	Spec NodeClaimTemplateSpec `json:"spec"`
}

// NodeClaimTemplateMetadata holds the labels and annotations that a
// NodePool puts on its NodeClaims and Nodes.
type NodeClaimTemplateMetadata struct {
	// Labels are put on every NodeClaim and Node, and pods may select them.
	// Keys in the karpenter.sh domain (or any domain ending in karpenter.sh)
	// are set by stevedore, except karpenter.sh/capacity-type; keys in the
	// karpenter.k8s.aws domain are too, except its well-known instance labels
	// and karpenter.k8s.aws/ec2nodeclass. kubernetes.io/hostname and
	// karpenter.sh/nodepool are never allowed.
	// +kubebuilder:validation:MaxProperties=100
	// +kubebuilder:validation:XValidation:rule=`self.all(k, k in ['karpenter.sh/capacity-type', 'karpenter.sh/nodepool'] || !k.find('^([^/]+)').endsWith('karpenter.sh'))`,message="label keys in the karpenter.sh domain are set by stevedore: remove the label, or use a key in your own domain"
	// +kubebuilder:validation:XValidation:rule=`self.all(k, k != 'karpenter.sh/nodepool')`,message="karpenter.sh/nodepool cannot be set: stevedore sets it to the NodePool's name; select it in pods' node selectors instead"
	// +kubebuilder:validation:XValidation:rule=`self.all(k, k != 'kubernetes.io/hostname')`,message="kubernetes.io/hostname cannot be set: each node gets its own host name; remove the label"
	// +kubebuilder:validation:XValidation:rule=`self.all(k, k in ['karpenter.k8s.aws/instance-tenancy', 'karpenter.k8s.aws/capacity-reservation-type', 'karpenter.k8s.aws/capacity-reservation-id', 'karpenter.k8s.aws/ec2nodeclass', 'karpenter.k8s.aws/instance-encryption-in-transit-supported', 'karpenter.k8s.aws/instance-category', 'karpenter.k8s.aws/instance-hypervisor', 'karpenter.k8s.aws/instance-family', 'karpenter.k8s.aws/instance-generation', 'karpenter.k8s.aws/instance-local-nvme', 'karpenter.k8s.aws/instance-size', 'karpenter.k8s.aws/instance-cpu', 'karpenter.k8s.aws/instance-cpu-manufacturer', 'karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz', 'karpenter.k8s.aws/instance-memory', 'karpenter.k8s.aws/instance-ebs-bandwidth', 'karpenter.k8s.aws/instance-network-bandwidth', 'karpenter.k8s.aws/instance-gpu-name', 'karpenter.k8s.aws/instance-gpu-manufacturer', 'karpenter.k8s.aws/instance-gpu-count', 'karpenter.k8s.aws/instance-gpu-memory', 'karpenter.k8s.aws/instance-accelerator-name', 'karpenter.k8s.aws/instance-accelerator-manufacturer', 'karpenter.k8s.aws/instance-accelerator-count', 'karpenter.k8s.aws/instance-capability-flex'] || !k.find('^([^/]+)').endsWith('karpenter.k8s.aws'))`,message="label keys in the karpenter.k8s.aws domain are set by stevedore from the instance type: remove the label, or use a key in your own domain"
	// +optional
	Labels map[string]LabelValue `json:"labels,omitempty"`
	// Annotations are put on every NodeClaim and Node.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Label values have a type of their own, rather than string, so that the CRD
// can check their length and characters with maxLength and pattern: CEL
// cannot check unbounded strings cheaply enough for the API server's budget.

// LabelValue is the value of a node label: empty, or at most 63 letters,
// digits, '-', '_' and '.' that start and end with a letter or digit.
//
// +kubebuilder:validation:MaxLength=63
// +kubebuilder:validation:Pattern=`^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$`
type LabelValue string

// NodeClaimTemplateSpec is the pattern for a NodeClaim's spec. It has the
// fields of NodeClaimSpec except resources, which come from the pods.
type NodeClaimTemplateSpec struct {
	// Taints are put on every node, and pods must tolerate them to run there.
	// +listType=atomic
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`
	// StartupTaints are put on every node when it starts and are expected to
	// be removed by someone else (typically a DaemonSet) once the node is
	// ready for them. Pods need not tolerate them to be provisioned for.
	// +listType=atomic
	// +optional
	StartupTaints []corev1.Taint `json:"startupTaints,omitempty"`
	// Requirements constrain the labels of the nodes: instance type, zone,
	// capacity type, architecture and any other label. Pods narrow them
	// further; every node launched satisfies all of them.
	// +kubebuilder:validation:XValidation:rule=`self.all(r, r.operator != 'In' || (has(r.values) && r.values.size() > 0))`,message="operator In needs at least one value: list the allowed values, or use Exists to accept any value"
	// +kubebuilder:validation:XValidation:rule=`self.all(r, !(r.operator in ['Gt', 'Lt', 'Gte', 'Lte']) || (has(r.values) && r.values.size() == 1 && int(r.values[0]) >= 0))`,message="operators Gt, Lt, Gte and Lte need exactly one value, a non-negative whole number such as \"5\""
	// +kubebuilder:validation:XValidation:rule=`self.all(r, r.operator != 'In' || !has(r.minValues) || (has(r.values) && r.values.size() >= r.minValues))`,message="minValues is larger than the number of values: list at least minValues values, or lower minValues"
	// +kubebuilder:validation:items:XValidation:rule=`self.key != 'karpenter.sh/nodepool'`,message="karpenter.sh/nodepool cannot be required in a NodePool: a NodePool's nodes always carry its own name; remove the requirement",fieldPath=`.key`
	// +kubebuilder:validation:MaxItems=100
	// +listType=atomic
	// +required
	Requirements []NodeSelectorRequirementWithMinValues `json:"requirements"`
	// NodeClassRef points to the provider-specific node class (for example an
	// EC2NodeClass) that says how to launch instances. Its group and kind
	// cannot change; its name can.
	// +kubebuilder:validation:XValidation:rule=`self.group == oldSelf.group`,message="nodeClassRef.group cannot change: create a new NodePool for the other node class API, then delete this one"
	// +kubebuilder:validation:XValidation:rule=`self.kind == oldSelf.kind`,message="nodeClassRef.kind cannot change: create a new NodePool for the other node class kind, then delete this one"
	// +required
	NodeClassRef *NodeClassReference `json:"nodeClassRef"`
	// TerminationGracePeriod bounds how long draining a node may take once
	// its deletion starts. When it runs out, remaining pods are deleted even
	// if a PodDisruptionBudget or the karpenter.sh/do-not-disrupt annotation
	// protects them; pods are deleted early enough to get their own
	// terminationGracePeriodSeconds before the deadline. It also lets drift
	// replace nodes whose pods block eviction. Unset means wait for as long as
	// draining takes.
	// +kubebuilder:validation:Pattern=`^([0-9]+(s|m|h))+$`
	// +kubebuilder:validation:Type=string
	// +optional
	TerminationGracePeriod *Duration `json:"terminationGracePeriod,omitempty"`
	// ExpireAfter is how long after its creation a node is replaced, whatever
	// else happens: a way to keep nodes fresh. Expiry ignores disruption
	// budgets; draining still honours PodDisruptionBudgets until
	// terminationGracePeriod runs out. "Never" turns expiry off.
	// +kubebuilder:default="720h"
	// +kubebuilder:validation:Pattern=`^(([0-9]+(s|m|h))+|Never)$`
	// +kubebuilder:validation:Type=string
	// +optional
	ExpireAfter *NillableDuration `json:"expireAfter,omitempty"`
}

// ConsolidationPolicy says which nodes consolidation may remove or replace.
//
// +kubebuilder:validation:Enum=WhenEmpty;WhenEmptyOrUnderutilized;Balanced
type ConsolidationPolicy string

const (
	// ConsolidationPolicyWhenEmpty removes only nodes without pods (other
	// than daemon set pods).
	ConsolidationPolicyWhenEmpty ConsolidationPolicy = "WhenEmpty"
	// ConsolidationPolicyWhenEmptyOrUnderutilized also removes or replaces
	// nodes whose pods fit elsewhere or on a cheaper node.
	ConsolidationPolicyWhenEmptyOrUnderutilized ConsolidationPolicy = "WhenEmptyOrUnderutilized"
	// ConsolidationPolicyBalanced considers the same nodes as
	// WhenEmptyOrUnderutilized, but consolidates only when the savings are
	// worth the disruption to the pods that move.
	ConsolidationPolicyBalanced ConsolidationPolicy = "Balanced"
)

// DisruptionReason is a reason for which stevedore disrupts nodes on its own
// initiative. Budgets may be limited to some reasons.
//
// +kubebuilder:validation:Enum=Underutilized;Empty;Drifted
type DisruptionReason string

const (
	// DisruptionReasonUnderutilized is consolidation of nodes whose pods fit
	// elsewhere or on a cheaper node.
	DisruptionReasonUnderutilized DisruptionReason = "Underutilized"
	// DisruptionReasonEmpty is removal of nodes without pods.
	DisruptionReasonEmpty DisruptionReason = "Empty"
	// DisruptionReasonDrifted is replacement of nodes that no longer match
	// their NodePool or node class.
	DisruptionReasonDrifted DisruptionReason = "Drifted"
)

// Disruption says when stevedore may remove a NodePool's nodes on its own
// initiative, and how many at a time.
type Disruption struct {
	// ConsolidationPolicy says which nodes consolidation may act on:
	// WhenEmpty (only nodes without pods), WhenEmptyOrUnderutilized (also
	// nodes whose pods fit elsewhere or on a cheaper node) or Balanced (as
	// WhenEmptyOrUnderutilized, but only when the savings are worth the
	// disruption). A static NodePool ignores it.
	// +kubebuilder:default=WhenEmptyOrUnderutilized
	// +optional
	ConsolidationPolicy ConsolidationPolicy `json:"consolidationPolicy,omitempty"`
	// ConsolidateAfter is how long a node must go without a pod being
	// scheduled to it or leaving it before consolidation considers it.
	// "Never" turns consolidation off for this NodePool. It is required
	// when disruption is given; without disruption it is 0s.
	// +kubebuilder:validation:Pattern=`^(([0-9]+(s|m|h))+|Never)$`
	// +kubebuilder:validation:Type=string
	// +required
	ConsolidateAfter *NillableDuration `json:"consolidateAfter,omitempty"`
	// Budgets cap how many of this NodePool's nodes may be disrupted at the
	// same time. Each budget may apply only at scheduled times and only to
	// some reasons. When several apply, the strictest wins. Expiry and
	// interruption are not limited by budgets.
	// +kubebuilder:default={{nodes: "10%"}}
	// +kubebuilder:validation:MaxItems=50
	// +kubebuilder:validation:XValidation:rule=`self.all(b, has(b.schedule) == has(b.duration))`,message="schedule and duration must be set together: give a budget with a schedule a duration (for example 8h), or remove the schedule"
	// +listType=atomic
	// +optional
	Budgets []Budget `json:"budgets,omitempty"`
}

// Budget caps how many nodes may be disrupted at once, optionally only in a
// recurring time window and only for some reasons.
type Budget struct {
	// Reasons limits the budget to these disruption reasons: Underutilized,
	// Empty or Drifted, each at most once. Without reasons the budget
	// applies to all of them.
	// +kubebuilder:validation:MaxItems=50
	// +listType=set
	// +optional
	Reasons []DisruptionReason `json:"reasons,omitempty"`
	// Nodes is the most nodes that may be disrupted at once: a number such as
	// "5" or a percentage of the NodePool's nodes such as "10%" (rounded up).
	// "0" blocks disruption while the budget applies.
	// +kubebuilder:default="10%"
	// +kubebuilder:validation:Pattern=`^((100|[0-9]{1,2})%|[0-9]+)$`
	// +required
	Nodes string `json:"nodes"`
	// Schedule is when the budget starts to apply, in cron syntax with five
	// fields (minute hour day-of-month month day-of-week, in UTC) or a macro
	// such as @daily. It needs a duration. Without a schedule the budget
	// always applies.
	// +kubebuilder:validation:Pattern=`^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))$`
	// +optional
	Schedule *string `json:"schedule,omitempty"`
	// Duration is how long the budget applies after each time the schedule
	// fires, in hours and minutes (for example 8h or 1h30m). It needs a
	// schedule.
	// +kubebuilder:validation:Pattern=`^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$`
	// +kubebuilder:validation:Type=string
	// +optional
	Duration *Duration `json:"duration,omitempty"`
}

// MarshalJSON writes the disruption settings with consolidateAfter "0s" when
// it is nil. The API requires consolidateAfter whenever disruption is given
// (as Karpenter's does), and a nil ConsolidateAfter in Go has always meant
// the 0s that disruption defaults to; writing it keeps NodePools built in Go,
// which always carry a disruption object, valid. Manifests are unaffected.
func (d Disruption) MarshalJSON() ([]byte, error) {
	type plain Disruption // without this method
	if d.ConsolidateAfter == nil {
		d.ConsolidateAfter = NewNillableDuration(0)
	}
	return json.Marshal(plain(d))
}
