package v1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EC2NodeClass says how stevedore launches EC2 instances for the NodePools
// that reference it: the machine image, subnets, security groups, IAM
// identity, disks, tags, kubelet settings and instance metadata options.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=ec2nodeclasses,scope=Cluster,categories=karpenter,shortName={ec2nc,ec2ncs}
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=`.status.conditions[?(@.type=="Ready")].status`,description="Whether images, subnets, security groups and the instance profile are resolved and launches are authorized"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Role",type="string",JSONPath=`.spec.role`,priority=1,description="IAM role of the nodes"
type EC2NodeClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says how to launch instances.
	// +kubebuilder:validation:XValidation:rule=`has(self.role) != has(self.instanceProfile)`,message="set exactly one of role and instanceProfile: role makes stevedore create and manage an instance profile for that IAM role; instanceProfile names one you manage"
	// +kubebuilder:validation:XValidation:rule=`has(self.amiFamily) || (has(self.amiSelectorTerms) && self.amiSelectorTerms.exists(t, has(t.alias)))`,message="amiFamily is required unless an amiSelectorTerms alias is used: set amiFamily (AL2, AL2023, Bottlerocket, Windows2019, Windows2022, Windows2025 or Custom), or select the image with an alias such as al2023@latest"
	// +kubebuilder:validation:XValidation:rule=`!has(self.amiFamily) || self.amiFamily == 'Custom' || !has(self.amiSelectorTerms) || !self.amiSelectorTerms.exists(t, has(t.alias)) || self.amiSelectorTerms.exists(t, has(t.alias) && t.alias.split('@')[0] == self.amiFamily.lowerAscii())`,message="amiFamily must match the alias's family or be Custom: for alias al2023@latest set AL2023, or remove amiFamily and let the alias decide"
	// +optional
	Spec EC2NodeClassSpec `json:"spec"`
	// Status reports what the selectors resolved to and whether the node
	// class is ready for launches.
	// +optional
	Status EC2NodeClassStatus `json:"status,omitempty"`
}

// EC2NodeClassList is a list of EC2NodeClasses.
//
// +kubebuilder:object:root=true
type EC2NodeClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EC2NodeClass `json:"items"`
}

// AMIFamily is the family of machine images an EC2NodeClass launches. It
// decides the format of the user data stevedore generates and the default
// block devices.
//
// +kubebuilder:validation:Enum=AL2;AL2023;Bottlerocket;Custom;Windows2019;Windows2022;Windows2025
type AMIFamily string

// AMI families.
const (
	AMIFamilyAL2          AMIFamily = "AL2"          // Amazon Linux 2, bootstrapped with bootstrap.sh
	AMIFamilyAL2023       AMIFamily = "AL2023"       // Amazon Linux 2023, bootstrapped with nodeadm
	AMIFamilyBottlerocket AMIFamily = "Bottlerocket" // Bottlerocket, configured with TOML settings
	AMIFamilyWindows2019  AMIFamily = "Windows2019"  // Windows Server 2019
	AMIFamilyWindows2022  AMIFamily = "Windows2022"  // Windows Server 2022
	AMIFamilyWindows2025  AMIFamily = "Windows2025"  // Windows Server 2025
	// AMIFamilyCustom passes the user data through untouched and adds no
	// block devices: the image must join the cluster by itself.
	AMIFamilyCustom AMIFamily = "Custom"
)

// InstanceStorePolicy says what to do with an instance's local NVMe disks.
//
// +kubebuilder:validation:Enum=RAID0
type InstanceStorePolicy string

// InstanceStorePolicyRAID0 joins all local NVMe disks into one RAID 0 array
// and puts the kubelet's and the container runtime's data on it, so pods get
// fast ephemeral storage the size of all the disks together.
const InstanceStorePolicyRAID0 InstanceStorePolicy = "RAID0"

// MaxUserDataBytes is the most user data EC2 takes for an instance: 16 KB,
// counted on the raw text before base64 encoding (the Amazon EC2 User
// Guide, "Work with instance user data": "User data is limited to 16 KB, in
// raw form, before it is base64-encoded"; the encoded text may then be up
// to ceil(16384/3)*4 = 21,848 characters). RunInstances, CreateFleet and
// launch templates share the limit. What counts is the user data stevedore
// sends: spec.userData merged with the bootstrap configuration of the AMI
// family.
const MaxUserDataBytes = 16384

// UserDataTooLargeFix is what to do about user data over MaxUserDataBytes.
const UserDataTooLargeFix = "make spec.userData smaller: keep large scripts and files in S3 or SSM Parameter Store and fetch them at boot (with aws s3 cp or aws ssm get-parameter from a short script, or from a bootstrap container on Bottlerocket)"

// EC2NodeClassSpec says how to launch instances.
type EC2NodeClassSpec struct {
	// SubnetSelectorTerms select the subnets instances are launched in. A
	// subnet is selected if it matches any term; within a term, all fields
	// must match. stevedore launches in zones that have a selected subnet.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=30
	// +kubebuilder:validation:XValidation:rule=`self.all(t, has(t.tags) || has(t.id))`,message="every subnet selector term needs tags or id: for example tags: {karpenter.sh/discovery: my-cluster}"
	// +kubebuilder:validation:XValidation:rule=`!self.all(t, has(t.id) && has(t.tags))`,message="id selects one subnet on its own: remove tags from the terms with an id, or put them in terms of their own"
	// +listType=atomic
	// +required
	SubnetSelectorTerms []SubnetSelectorTerm `json:"subnetSelectorTerms"`
	// SecurityGroupSelectorTerms select the security groups of the
	// instances. A group is selected if it matches any term; within a term,
	// all fields must match.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=30
	// +kubebuilder:validation:XValidation:rule=`self.all(t, has(t.tags) || has(t.id) || has(t.name))`,message="every security group selector term needs tags, id or name: for example tags: {karpenter.sh/discovery: my-cluster}"
	// +kubebuilder:validation:XValidation:rule=`!self.all(t, has(t.id) && (has(t.tags) || has(t.name)))`,message="id selects one security group on its own: remove tags and name from the terms with an id, or put them in terms of their own"
	// +kubebuilder:validation:XValidation:rule=`!self.all(t, has(t.name) && (has(t.tags) || has(t.id)))`,message="name selects security groups on its own: remove tags and id from the terms with a name, or put them in terms of their own"
	// +listType=atomic
	// +required
	SecurityGroupSelectorTerms []SecurityGroupSelectorTerm `json:"securityGroupSelectorTerms"`
	// CapacityReservationSelectorTerms select on-demand capacity reservations
	// and capacity blocks that stevedore may launch into, as capacity type
	// "reserved". A reservation is selected if it matches any term.
	// +kubebuilder:validation:MaxItems=30
	// +kubebuilder:validation:XValidation:rule=`self.all(t, has(t.tags) || has(t.id) || has(t.instanceMatchCriteria))`,message="every capacity reservation selector term needs tags, id or instanceMatchCriteria: for example id: cr-0123456789abcdef0"
	// +kubebuilder:validation:XValidation:rule=`!self.all(t, has(t.id) && (has(t.tags) || has(t.ownerID) || has(t.instanceMatchCriteria)))`,message="id selects one capacity reservation on its own: remove tags, ownerID and instanceMatchCriteria from the terms with an id, or put them in terms of their own"
	// +listType=atomic
	// +optional
	CapacityReservationSelectorTerms []CapacityReservationSelectorTerm `json:"capacityReservationSelectorTerms,omitempty"`
	// AssociatePublicIPAddress says whether instances get a public IPv4
	// address. Unset means the subnet's setting decides.
	// +optional
	AssociatePublicIPAddress *bool `json:"associatePublicIPAddress,omitempty"`
	// IPPrefixCount is the number of IP prefixes (/28 for IPv4, /80 for
	// IPv6, following the cluster's IP family) assigned to the primary
	// network interface at launch.
	// +kubebuilder:validation:Minimum=0
	// +optional
	IPPrefixCount *int32 `json:"ipPrefixCount,omitempty"`
	// AMISelectorTerms select the machine images. Either one term with an
	// alias (an EKS-optimized image family and version, such as
	// al2023@latest), or terms with id, name, tags or ssmParameter. An image
	// is selected if it matches any term; within a term, all fields must
	// match. Of the selected images, the newest that fits an instance type
	// is used.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=30
	// +kubebuilder:validation:XValidation:rule=`!self.exists(t, has(t.alias)) || self.size() == 1`,message="a term with an alias must be the only AMI selector term: remove the other terms, or select images with id, name or tags terms instead of the alias"
	// +kubebuilder:validation:XValidation:rule=`self.all(t, has(t.alias) || has(t.id) || has(t.name) || has(t.tags) || has(t.ssmParameter))`,message="every AMI selector term needs alias, id, name, tags or ssmParameter: for example alias: al2023@latest"
	// +kubebuilder:validation:XValidation:rule=`!self.exists(t, has(t.alias) && (has(t.id) || has(t.name) || has(t.owner) || has(t.tags)))`,message="alias selects images on its own: remove id, name, owner and tags from the term with the alias, or remove the alias"
	// +kubebuilder:validation:XValidation:rule=`!self.exists(t, has(t.id) && (has(t.alias) || has(t.name) || has(t.owner) || has(t.tags)))`,message="id selects one image on its own: remove alias, name, owner and tags from the terms with an id, or put them in terms of their own"
	// +listType=atomic
	// +required
	AMISelectorTerms []AMISelectorTerm `json:"amiSelectorTerms"`
	// AMIFamily decides the format of the user data stevedore generates and
	// the default block devices. With an alias it is optional and taken from
	// the alias; if set it must match the alias or be Custom. Without an
	// alias it is required.
	// +optional
	AMIFamily *AMIFamily `json:"amiFamily,omitempty"`
	// UserData is merged with the bootstrap configuration that stevedore
	// generates, in the format of the AMI family: MIME multi-part or a shell
	// script for AL2, MIME, shell or NodeConfig YAML for AL2023, TOML for
	// Bottlerocket, PowerShell for Windows. With Custom it is used as is.
	// +optional
	UserData *string `json:"userData,omitempty"`
	// Role is the name of the IAM role for the nodes. stevedore creates and
	// manages an instance profile for it. Exactly one of role and
	// instanceProfile must be set.
	// +kubebuilder:validation:XValidation:rule=`self != ''`,message="role must not be empty: set the name of the nodes' IAM role, or remove role and set instanceProfile"
	// +optional
	Role string `json:"role,omitempty"`
	// InstanceProfile is the name of an IAM instance profile that you
	// manage. stevedore's own role needs iam:PassRole on the profile's role.
	// Exactly one of role and instanceProfile must be set.
	// +kubebuilder:validation:XValidation:rule=`self != ''`,message="instanceProfile must not be empty: set the name of an existing instance profile, or remove instanceProfile and set role"
	// +optional
	InstanceProfile *string `json:"instanceProfile,omitempty"`
	// Tags are put on the instances and on everything launched with them:
	// volumes, network interfaces, launch templates, fleet and spot requests,
	// and instance profiles. Tags that mark ownership are set by stevedore
	// and may not be given here. EC2 allows 50 tags per resource, counting
	// the ones stevedore sets; launches fail beyond that.
	// +kubebuilder:validation:XValidation:rule=`self.all(k, k != '')`,message="tag keys must not be empty: remove the tag with the empty key"
	// +kubebuilder:validation:XValidation:rule=`self.all(k, k != 'eks:eks-cluster-name')`,message="tag eks:eks-cluster-name is set by stevedore: remove it from tags"
	// +kubebuilder:validation:XValidation:rule=`self.all(k, !k.startsWith('kubernetes.io/cluster'))`,message="tags starting with kubernetes.io/cluster are reserved: stevedore sets kubernetes.io/cluster/<cluster> to mark cluster ownership; remove them from tags"
	// +kubebuilder:validation:XValidation:rule=`self.all(k, k != 'karpenter.sh/nodepool')`,message="tag karpenter.sh/nodepool is set by stevedore to mark which NodePool owns an instance: remove it from tags"
	// +kubebuilder:validation:XValidation:rule=`self.all(k, k != 'karpenter.sh/nodeclaim')`,message="tag karpenter.sh/nodeclaim is set by stevedore to mark which NodeClaim owns an instance: remove it from tags"
	// +kubebuilder:validation:XValidation:rule=`self.all(k, k != 'karpenter.k8s.aws/ec2nodeclass')`,message="tag karpenter.k8s.aws/ec2nodeclass is set by stevedore to mark which EC2NodeClass launched an instance: remove it from tags"
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// Kubelet sets kubelet options on the nodes.
	// +optional
	Kubelet *KubeletConfiguration `json:"kubelet,omitempty"`
	// BlockDeviceMappings are the instances' EBS volumes. Without them each
	// AMI family has a default (for example a 20Gi encrypted gp3 root volume
	// for AL2023).
	// +kubebuilder:validation:MaxItems=50
	// +kubebuilder:validation:XValidation:rule=`self.filter(m, has(m.rootVolume) && m.rootVolume).size() <= 1`,message="at most one block device mapping may be the root volume: set rootVolume: true on one mapping only"
	// +listType=atomic
	// +optional
	BlockDeviceMappings []BlockDeviceMapping `json:"blockDeviceMappings,omitempty"`
	// InstanceStorePolicy says what to do with local NVMe instance storage.
	// RAID0 joins the disks into one array for the kubelet and container
	// runtime, and the node's ephemeral storage becomes their total size.
	// +optional
	InstanceStorePolicy *InstanceStorePolicy `json:"instanceStorePolicy,omitempty"`
	// DetailedMonitoring turns on one-minute CloudWatch metrics for the
	// instances.
	// +optional
	DetailedMonitoring *bool `json:"detailedMonitoring,omitempty"`
	// MetadataOptions control the instance metadata service (IMDS) of the
	// instances. The default allows only IMDSv2 with a hop limit of 1, which
	// keeps pods without host networking from reaching the node's
	// credentials.
	// +kubebuilder:default={httpEndpoint: enabled, httpProtocolIPv6: disabled, httpPutResponseHopLimit: 1, httpTokens: required}
	// +optional
	MetadataOptions *MetadataOptions `json:"metadataOptions,omitempty"`
	// Context is passed unchanged as the Context of EC2 CreateFleet
	// requests, for accounts that have been given one by AWS.
	// +optional
	Context *string `json:"context,omitempty"`
	// NetworkInterfaces are the network interfaces attached at launch, for
	// example extra EFA devices for machine learning and HPC instances.
	// Without them the instance gets its primary interface only (and the
	// EFA interfaces its pods request). When set, the list must include the
	// primary interface (networkCardIndex 0, deviceIndex 0, interfaceType
	// interface).
	// +kubebuilder:validation:MaxItems=150
	// +kubebuilder:validation:XValidation:rule=`self.exists(i, i.networkCardIndex == 0 && i.deviceIndex == 0 && i.interfaceType == 'interface')`,message="networkInterfaces must include the primary interface: add {networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}"
	// +kubebuilder:validation:XValidation:rule=`self.all(a, self.exists_one(b, b.networkCardIndex == a.networkCardIndex && b.deviceIndex == a.deviceIndex))`,message="each networkCardIndex and deviceIndex pair may appear only once in networkInterfaces: remove the duplicate or change its deviceIndex"
	// +kubebuilder:validation:XValidation:rule=`self.all(a, a.interfaceType != 'efa-only' || self.exists_one(b, b.interfaceType == 'efa-only' && b.networkCardIndex == a.networkCardIndex))`,message="each network card may have at most one efa-only interface: remove the extra efa-only interfaces or move them to other network cards"
	// +listType=atomic
	// +optional
	NetworkInterfaces []NetworkInterface `json:"networkInterfaces,omitempty"`
	// PlacementGroupSelector selects the EC2 placement group (cluster,
	// partition or spread) that every instance of this EC2NodeClass is
	// launched into, by name or by ID.
	// +optional
	PlacementGroupSelector *PlacementGroupSelector `json:"placementGroupSelector,omitempty"`
	// ConnectionTracking sets the connection tracking timeouts of the
	// network interfaces created at launch (except efa-only ones). Unset
	// timeouts keep the EC2 defaults. Setting it limits launches to Nitro
	// instance types.
	// +optional
	ConnectionTracking *ConnectionTracking `json:"connectionTracking,omitempty"`
	// CPUOptions set processor features of the instances.
	// +optional
	CPUOptions *CPUOptions `json:"cpuOptions,omitempty"`
}

// InterfaceType is the kind of a network interface attached at launch.
//
// +kubebuilder:validation:Enum=interface;efa-only
type InterfaceType string

// Network interface types.
const (
	// InterfaceTypeInterface is a standard ENA interface with IP addresses.
	InterfaceTypeInterface InterfaceType = "interface"
	// InterfaceTypeEFAOnly is an EFA device for RDMA traffic only; it has
	// no IP address.
	InterfaceTypeEFAOnly InterfaceType = "efa-only"
)

// NetworkInterface is a network interface attached to an instance at launch.
type NetworkInterface struct {
	// NetworkCardIndex is the network card the interface is attached to.
	// +kubebuilder:validation:Minimum=0
	// +required
	NetworkCardIndex int32 `json:"networkCardIndex"`
	// DeviceIndex is the interface's position on its network card; 0 on
	// card 0 is the primary interface.
	// +kubebuilder:validation:Minimum=0
	// +required
	DeviceIndex int32 `json:"deviceIndex"`
	// InterfaceType is interface (an ENA interface with IP addresses) or
	// efa-only (an EFA device without IP addresses).
	// +required
	InterfaceType InterfaceType `json:"interfaceType"`
}

// PlacementGroupSelector selects one placement group, by name or by ID.
//
// +kubebuilder:validation:XValidation:rule=`has(self.name) || has(self.id)`,message="placementGroupSelector needs name or id: for example name: my-placement-group"
// +kubebuilder:validation:XValidation:rule=`!(has(self.name) && has(self.id))`,message="placementGroupSelector takes name or id, not both: remove one of them"
type PlacementGroupSelector struct {
	// Name selects the placement group with this name.
	// +kubebuilder:validation:MaxLength=255
	// +optional
	Name string `json:"name,omitempty"`
	// ID selects the placement group with this ID.
	// +kubebuilder:validation:Pattern=`^pg-[0-9a-z]+$`
	// +optional
	ID string `json:"id,omitempty"`
}

// ConnectionTracking sets connection tracking timeouts, in seconds, on
// network interfaces.
//
// +kubebuilder:validation:XValidation:rule=`has(self.tcpEstablishedTimeout) || has(self.udpStreamTimeout) || has(self.udpTimeout)`,message="connectionTracking needs at least one timeout: set tcpEstablishedTimeout, udpStreamTimeout or udpTimeout, or remove connectionTracking"
type ConnectionTracking struct {
	// TCPEstablishedTimeout is how long an idle established TCP connection
	// is tracked, from 60 to 432000 seconds (5 days).
	// +kubebuilder:validation:Minimum=60
	// +kubebuilder:validation:Maximum=432000
	// +optional
	TCPEstablishedTimeout *int32 `json:"tcpEstablishedTimeout,omitempty"`
	// UDPStreamTimeout is how long an idle UDP flow that has seen more than
	// one request and response is tracked, from 60 to 180 seconds.
	// +kubebuilder:validation:Minimum=60
	// +kubebuilder:validation:Maximum=180
	// +optional
	UDPStreamTimeout *int32 `json:"udpStreamTimeout,omitempty"`
	// UDPTimeout is how long an idle UDP flow that has seen traffic in one
	// direction only, or a single request and response, is tracked, from 30
	// to 60 seconds.
	// +kubebuilder:validation:Minimum=30
	// +kubebuilder:validation:Maximum=60
	// +optional
	UDPTimeout *int32 `json:"udpTimeout,omitempty"`
}

// CPUOptions set processor features of the instances.
type CPUOptions struct {
	// NestedVirtualization, when enabled, limits launches to instance types
	// whose processors support nested virtualization and turns it on.
	// +kubebuilder:validation:Enum=enabled;disabled
	// +optional
	NestedVirtualization *string `json:"nestedVirtualization,omitempty"`
}

// SubnetSelectorTerm selects subnets by tags or by ID.
type SubnetSelectorTerm struct {
	// Tags select subnets that carry all of these tags. A value of "*"
	// matches any value of the key.
	// +kubebuilder:validation:MaxProperties=20
	// +kubebuilder:validation:XValidation:rule=`self.all(k, k != '' && self[k] != '')`,message="selector tags need a key and a value: use '*' as the value to match any value of the key"
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// ID selects the subnet with this ID.
	// +kubebuilder:validation:Pattern=`subnet-[0-9a-z]+`
	// +optional
	ID string `json:"id,omitempty"`
}

// SecurityGroupSelectorTerm selects security groups by tags, ID or name.
type SecurityGroupSelectorTerm struct {
	// Tags select security groups that carry all of these tags. A value of
	// "*" matches any value of the key.
	// +kubebuilder:validation:MaxProperties=20
	// +kubebuilder:validation:XValidation:rule=`self.all(k, k != '' && self[k] != '')`,message="selector tags need a key and a value: use '*' as the value to match any value of the key"
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// ID selects the security group with this ID.
	// +kubebuilder:validation:Pattern=`sg-[0-9a-z]+`
	// +optional
	ID string `json:"id,omitempty"`
	// Name selects security groups by their group name, which is not the
	// same as their Name tag.
	// +optional
	Name string `json:"name,omitempty"`
}

// CapacityReservationSelectorTerm selects capacity reservations by tags and
// owner, by match criteria, or by ID.
type CapacityReservationSelectorTerm struct {
	// Tags select reservations that carry all of these tags. A value of "*"
	// matches any value of the key.
	// +kubebuilder:validation:MaxProperties=20
	// +kubebuilder:validation:XValidation:rule=`self.all(k, k != '' && self[k] != '')`,message="selector tags need a key and a value: use '*' as the value to match any value of the key"
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// ID selects the reservation with this ID.
	// +kubebuilder:validation:Pattern=`^cr-[0-9a-z]+$`
	// +optional
	ID string `json:"id,omitempty"`
	// OwnerID selects reservations owned by this AWS account (12 digits),
	// for reservations shared with this account.
	// +kubebuilder:validation:Pattern=`^[0-9]{12}$`
	// +optional
	OwnerID string `json:"ownerID,omitempty"`
	// InstanceMatchCriteria selects reservations that accept any matching
	// instance (open) or only instances that target them (targeted).
	// +kubebuilder:validation:Enum=open;targeted
	// +optional
	InstanceMatchCriteria string `json:"instanceMatchCriteria,omitempty"`
}

// AMISelectorTerm selects machine images.
type AMISelectorTerm struct {
	// Alias selects the EKS-optimized images of a family, as family@version:
	// al2, al2023, bottlerocket, windows2019, windows2022 or windows2025,
	// and either "latest" or a release such as v20240625 (al2, al2023) or
	// v1.26.0 (bottlerocket). Windows families only accept latest. With
	// latest, every new release drifts the nodes onto it.
	// +kubebuilder:validation:MaxLength=30
	// +kubebuilder:validation:XValidation:rule=`self.matches('^[a-zA-Z0-9]+@.+$')`,message="alias must have the form family@version, for example al2023@latest or bottlerocket@v1.26.0"
	// +kubebuilder:validation:XValidation:rule=`!self.contains('@') || self.split('@')[0] in ['al2', 'al2023', 'bottlerocket', 'windows2019', 'windows2022', 'windows2025']`,message="alias family must be al2, al2023, bottlerocket, windows2019, windows2022 or windows2025, in lower case: fix the part before '@'"
	// +kubebuilder:validation:XValidation:rule=`!self.matches('^windows20(19|22|25)@') || self.matches('^windows20(19|22|25)@latest$')`,message="Windows aliases cannot pin a version: use @latest, for example windows2022@latest"
	// +optional
	Alias string `json:"alias,omitempty"`
	// Tags select images that carry all of these tags. A value of "*"
	// matches any value of the key.
	// +kubebuilder:validation:MaxProperties=20
	// +kubebuilder:validation:XValidation:rule=`self.all(k, k != '' && self[k] != '')`,message="selector tags need a key and a value: use '*' as the value to match any value of the key"
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// ID selects the image with this ID.
	// +kubebuilder:validation:Pattern=`ami-[0-9a-z]+`
	// +optional
	ID string `json:"id,omitempty"`
	// Name selects images by name; "*" is a wildcard. Without owner, only
	// images of this account and of Amazon are considered.
	// +optional
	Name string `json:"name,omitempty"`
	// Owner limits name and tags to images owned by an AWS account ID,
	// "self", "amazon" or "aws-marketplace".
	// +optional
	Owner string `json:"owner,omitempty"`
	// SSMParameter selects the image whose ID is stored in this SSM
	// parameter (a name or ARN).
	// +optional
	SSMParameter string `json:"ssmParameter,omitempty"`
}

// KubeletConfiguration sets kubelet options on the nodes. The fields mirror
// the kubelet's own configuration of the same names. Its DeepCopy methods
// are written by hand (kubelet_deepcopy.go): the generator cannot copy maps
// whose value type is an alias.
//
// +kubebuilder:object:generate=false
// +kubebuilder:validation:XValidation:rule=`!has(self.imageGCHighThresholdPercent) || !has(self.imageGCLowThresholdPercent) || self.imageGCHighThresholdPercent > self.imageGCLowThresholdPercent`,message="imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent: raise the high threshold or lower the low one"
// +kubebuilder:validation:XValidation:rule=`!has(self.evictionSoft) || self.evictionSoft.all(k, has(self.evictionSoftGracePeriod) && k in self.evictionSoftGracePeriod)`,message="every evictionSoft signal needs a grace period: add the same signal to evictionSoftGracePeriod"
// +kubebuilder:validation:XValidation:rule=`!has(self.evictionSoftGracePeriod) || self.evictionSoftGracePeriod.all(k, has(self.evictionSoft) && k in self.evictionSoft)`,message="every evictionSoftGracePeriod signal needs a threshold: add the same signal to evictionSoft, or remove its grace period"
type KubeletConfiguration struct {
	// ClusterDNS lists the IP addresses of the cluster DNS servers. Unset
	// means the ClusterIP of the kube-dns service.
	// +listType=atomic
	// +optional
	ClusterDNS []string `json:"clusterDNS,omitempty"`
	// MaxPods caps the pods per node. Unset means the limit that the
	// instance type's network interfaces allow (110 on Windows).
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxPods *int32 `json:"maxPods,omitempty"`
	// PodsPerCore caps the pods per node at this many per vCPU, if that is
	// lower than maxPods. Bottlerocket ignores it.
	// +kubebuilder:validation:Minimum=0
	// +optional
	PodsPerCore *int32 `json:"podsPerCore,omitempty"`
	// SystemReserved sets aside cpu, memory, ephemeral-storage and pid for
	// the operating system.
	// +kubebuilder:validation:MaxProperties=4
	// +kubebuilder:validation:XValidation:rule=`self.all(k, k in ['cpu', 'memory', 'ephemeral-storage', 'pid'])`,message="systemReserved keys must be cpu, memory, ephemeral-storage or pid: remove or rename the other keys"
	// +kubebuilder:validation:XValidation:rule=`self.all(k, !self[k].startsWith('-'))`,message="systemReserved values must not be negative: write them like 100m, 1Gi or 1000"
	// +optional
	SystemReserved map[string]ReservedQuantity `json:"systemReserved,omitempty"`
	// KubeReserved sets aside cpu, memory, ephemeral-storage and pid for the
	// kubelet and container runtime. Unset keys get defaults that grow with
	// the instance size.
	// +kubebuilder:validation:MaxProperties=4
	// +kubebuilder:validation:XValidation:rule=`self.all(k, k in ['cpu', 'memory', 'ephemeral-storage', 'pid'])`,message="kubeReserved keys must be cpu, memory, ephemeral-storage or pid: remove or rename the other keys"
	// +kubebuilder:validation:XValidation:rule=`self.all(k, !self[k].startsWith('-'))`,message="kubeReserved values must not be negative: write them like 100m, 1Gi or 1000"
	// +optional
	KubeReserved map[string]ReservedQuantity `json:"kubeReserved,omitempty"`
	// EvictionHard are the thresholds at which the kubelet evicts pods at
	// once, per signal: memory.available, nodefs.available,
	// nodefs.inodesFree, imagefs.available, imagefs.inodesFree or
	// pid.available. A value is a percentage (10%) or a quantity (100Mi).
	// +kubebuilder:validation:MaxProperties=6
	// +kubebuilder:validation:XValidation:rule=`self.all(k, k in ['memory.available', 'nodefs.available', 'nodefs.inodesFree', 'imagefs.available', 'imagefs.inodesFree', 'pid.available'])`,message="evictionHard keys must be memory.available, nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree or pid.available: remove or rename the other keys"
	// +optional
	EvictionHard map[string]EvictionThreshold `json:"evictionHard,omitempty"`
	// EvictionSoft are the thresholds at which the kubelet evicts pods once
	// the signal has stayed past them for its evictionSoftGracePeriod. Same
	// signals and values as evictionHard.
	// +kubebuilder:validation:MaxProperties=6
	// +kubebuilder:validation:XValidation:rule=`self.all(k, k in ['memory.available', 'nodefs.available', 'nodefs.inodesFree', 'imagefs.available', 'imagefs.inodesFree', 'pid.available'])`,message="evictionSoft keys must be memory.available, nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree or pid.available: remove or rename the other keys"
	// +optional
	EvictionSoft map[string]EvictionThreshold `json:"evictionSoft,omitempty"`
	// EvictionSoftGracePeriod is, per evictionSoft signal, how long the
	// signal must stay past its threshold before pods are evicted, for
	// example 1m30s.
	// +kubebuilder:validation:MaxProperties=6
	// +kubebuilder:validation:XValidation:rule=`self.all(k, k in ['memory.available', 'nodefs.available', 'nodefs.inodesFree', 'imagefs.available', 'imagefs.inodesFree', 'pid.available'])`,message="evictionSoftGracePeriod keys must be memory.available, nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree or pid.available: remove or rename the other keys"
	// +optional
	EvictionSoftGracePeriod map[string]metav1.Duration `json:"evictionSoftGracePeriod,omitempty"`
	// EvictionMaxPodGracePeriod caps, in seconds, the termination grace
	// period given to pods evicted because of a soft threshold.
	// +optional
	EvictionMaxPodGracePeriod *int32 `json:"evictionMaxPodGracePeriod,omitempty"`
	// ImageGCHighThresholdPercent is the disk usage, in percent, above which
	// unused images are always garbage collected. It must be greater than
	// imageGCLowThresholdPercent.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	ImageGCHighThresholdPercent *int32 `json:"imageGCHighThresholdPercent,omitempty"`
	// ImageGCLowThresholdPercent is the disk usage, in percent, that image
	// garbage collection brings usage down to; below it images are never
	// collected.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	ImageGCLowThresholdPercent *int32 `json:"imageGCLowThresholdPercent,omitempty"`
	// CPUCFSQuota turns on enforcement of containers' CPU limits.
	// +optional
	CPUCFSQuota *bool `json:"cpuCFSQuota,omitempty"`
}

// MetadataOptions control the instance metadata service (IMDS).
type MetadataOptions struct {
	// HTTPEndpoint turns the metadata service on (enabled) or off
	// (disabled). With it off, nothing on the node can read instance
	// metadata, which most AMI families need to boot.
	// +kubebuilder:default=enabled
	// +kubebuilder:validation:Enum=enabled;disabled
	// +optional
	HTTPEndpoint *string `json:"httpEndpoint,omitempty"`
	// HTTPProtocolIPv6 turns the metadata service's IPv6 endpoint on
	// (enabled) or off (disabled).
	// +kubebuilder:default=disabled
	// +kubebuilder:validation:Enum=enabled;disabled
	// +optional
	HTTPProtocolIPv6 *string `json:"httpProtocolIPv6,omitempty"`
	// HTTPPutResponseHopLimit is how many network hops a metadata token
	// response may travel, from 1 to 64. 1 keeps it on the node itself; 2
	// lets pods without host networking reach it too.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	// +optional
	HTTPPutResponseHopLimit *int64 `json:"httpPutResponseHopLimit,omitempty"`
	// HTTPTokens says whether metadata requests need a session token:
	// required allows only IMDSv2; optional also allows IMDSv1.
	// +kubebuilder:default=required
	// +kubebuilder:validation:Enum=required;optional
	// +optional
	HTTPTokens *string `json:"httpTokens,omitempty"`
}

// BlockDeviceMapping attaches a block device to the instances.
type BlockDeviceMapping struct {
	// DeviceName is the device name, for example /dev/xvda.
	// +optional
	DeviceName *string `json:"deviceName,omitempty"`
	// EBS describes the EBS volume to create for the device.
	// +optional
	EBS *BlockDevice `json:"ebs,omitempty"`
	// RootVolume marks the device that holds the kubelet's root directory;
	// its size becomes the node's ephemeral storage. At most one mapping may
	// be the root volume.
	// +optional
	RootVolume bool `json:"rootVolume,omitempty"`
}

// BlockDevice describes an EBS volume created at launch.
//
// +kubebuilder:validation:XValidation:rule=`has(self.snapshotID) || has(self.volumeSize)`,message="an EBS volume needs a size or a snapshot: set volumeSize (for example 100Gi) or snapshotID"
// +kubebuilder:validation:XValidation:rule=`!has(self.volumeInitializationRate) || (has(self.snapshotID) && self.snapshotID.size() > 0)`,message="volumeInitializationRate applies only to volumes created from a snapshot: set snapshotID, or remove volumeInitializationRate"
type BlockDevice struct {
	// DeleteOnTermination says whether the volume is deleted with the
	// instance.
	// +optional
	DeleteOnTermination *bool `json:"deleteOnTermination,omitempty"`
	// Encrypted says whether the volume is encrypted.
	// +optional
	Encrypted *bool `json:"encrypted,omitempty"`
	// IOPS is the provisioned I/O operations per second, for gp3 (3000 to
	// 16000), io1 and io2 (100 to 64000) volumes.
	// +optional
	IOPS *int64 `json:"iops,omitempty"`
	// KMSKeyID is the KMS key (ID, alias or ARN) to encrypt the volume with.
	// +optional
	KMSKeyID *string `json:"kmsKeyID,omitempty"`
	// SnapshotID is the EBS snapshot to create the volume from.
	// +optional
	SnapshotID *string `json:"snapshotID,omitempty"`
	// Throughput is the provisioned throughput of a gp3 volume, in MiB/s
	// (125 to 1000).
	// +optional
	Throughput *int64 `json:"throughput,omitempty"`
	// VolumeInitializationRate is the rate, in MiB/s from 100 to 300, at
	// which a volume created from a snapshot is filled. It needs snapshotID.
	// +kubebuilder:validation:Minimum=100
	// +kubebuilder:validation:Maximum=300
	// +optional
	VolumeInitializationRate *int32 `json:"volumeInitializationRate,omitempty"`
	// VolumeSize is the size of the volume, a whole number with the unit Gi,
	// G, Ti or T (for example 100Gi), at most 59000Gi, 64000G, 58Ti or 64T.
	// It is needed unless snapshotID is set.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^((?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi|(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|[6][0-3][0-9]{3}|64000)G|([1-9]||[1-5][0-7]|58)Ti|([1-9]||[1-5][0-9]|6[0-3]|64)T)$`
	// +optional
	VolumeSize *resource.Quantity `json:"volumeSize,omitempty"`
	// VolumeType is the EBS volume type: standard, io1, io2, gp2, sc1, st1
	// or gp3.
	// +kubebuilder:validation:Enum=standard;io1;io2;gp2;sc1;st1;gp3
	// +optional
	VolumeType *string `json:"volumeType,omitempty"`
}

// EvictionThreshold is a kubelet eviction threshold: a percentage from 0 to
// 100 with at most two decimals (10%, 7.5%), a quantity (100Mi), or empty.
// It is an alias of string, so that the maps that hold thresholds stay
// plain string maps in Go; the alias exists to give the CRD its pattern.
//
// +kubebuilder:validation:Pattern=`^((\d{1,2}(\.\d{1,2})?|100(\.0{1,2})?)%||(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?)$`
type EvictionThreshold = string

// ReservedQuantity is an amount of a resource that the kubelet reserves, as a
// quantity (100m, 1Gi, 1000). An alias of string, like EvictionThreshold.
//
// +kubebuilder:validation:Pattern=`^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`
type ReservedQuantity = string
