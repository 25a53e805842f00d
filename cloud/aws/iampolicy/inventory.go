// Package iampolicy is the inventory of every AWS call stevedore makes
// through package sdk, with the IAM actions each call needs and the policy
// statement that grants them, and the controller's IAM policy generated from
// that inventory (`stevedore iam-policy`).
//
// The inventory is the single place a new AWS call has to be declared: a
// test fails when a method of one of package sdk's interfaces has no entry,
// and the policy printed by the command and shown in the AWS documentation
// is generated from it, so the three cannot drift apart.
//
// The policy follows the shape and the statement names of Karpenter's own
// controller policy (its CloudFormation reference), so that a policy written
// for Karpenter admits stevedore's requests and the other way round: the same
// ownership tags scope launches, tagging, deletion and instance profiles.
// Evaluate and Requests let tests check a recorded request against any
// policy expressed as data.
package iampolicy

// Caller says who makes a call, which decides whether the controller's
// policy grants it.
type Caller string

const (
	// CallerController: the controller calls it; its policy grants it.
	CallerController Caller = "controller"
	// CallerDiagnose: only `stevedore diagnose` calls it, with the
	// credentials of whoever runs it; the controller's policy does not
	// grant it.
	CallerDiagnose Caller = "diagnose"
	// CallerInjection: only tests and the simulator call it, to inject
	// events through the same interface; nobody needs it in an account.
	CallerInjection Caller = "injection"
)

// Grant is one IAM action a call needs and the statement (by Sid) of the
// controller's policy that allows it. An action that several statements
// grant, each for other resources, has one Grant per statement.
type Grant struct {
	Action    string
	Statement string
}

// Call is one operation of one of package sdk's interfaces.
type Call struct {
	// Service is the interface's name in package sdk: EC2, SSM, SQS, IAM,
	// EKS, Pricing, EventBridge or ARCZonalShift.
	Service string
	// Operation is the method name, which is the API operation's name.
	Operation string
	Caller    Caller
	// Grants are the IAM actions the call needs; empty for calls the
	// controller never makes.
	Grants []Grant
	// Scope says, in words, which resources and conditions the grants are
	// limited to, and why a grant is wider than one resource when it is.
	Scope string
}

// Statement names (Sids) of the controller's policy, all of them Karpenter's
// own: a policy written for Karpenter admits every call the controller
// makes.
const (
	SidInstanceAccess             = "AllowScopedEC2InstanceAccessActions"
	SidLaunchTemplateAccess       = "AllowScopedEC2LaunchTemplateAccessActions"
	SidInstanceActionsWithTags    = "AllowScopedEC2InstanceActionsWithTags"
	SidResourceCreationTagging    = "AllowScopedResourceCreationTagging"
	SidResourceTagging            = "AllowScopedResourceTagging"
	SidScopedDeletion             = "AllowScopedDeletion"
	SidRegionalRead               = "AllowRegionalReadActions"
	SidSSMRead                    = "AllowSSMReadActions"
	SidPricingRead                = "AllowPricingReadActions"
	SidInterruptionQueue          = "AllowInterruptionQueueActions"
	SidPassNodeRole               = "AllowPassingInstanceRole"
	SidInstanceProfileCreation    = "AllowScopedInstanceProfileCreationActions"
	SidInstanceProfileTagging     = "AllowScopedInstanceProfileTagActions"
	SidInstanceProfileActions     = "AllowScopedInstanceProfileActions"
	SidInstanceProfileList        = "AllowUnscopedInstanceProfileListAction"
	SidInstanceProfileRead        = "AllowInstanceProfileReadActions"
	SidAPIServerEndpointDiscovery = "AllowAPIServerEndpointDiscovery"
	// SidZonalShift is Karpenter's ZonalShiftPolicy; the generated policy
	// carries it only when asked to (Params.ZonalShift), as the call is only
	// made with --enable-zonal-shift.
	SidZonalShift = "AllowZonalShiftStatusReadOnly"
)

// launchGrants are what a launch needs: the launch action on the shared
// inputs (image, subnet, security groups), on the launch template and on
// every resource it creates, tagging at creation, and passing the node role.
// CreateFleet is authorized like RunInstances as well, so it needs both.
func launchGrants(actions ...string) []Grant {
	var out []Grant
	for _, a := range actions {
		out = append(out,
			Grant{a, SidInstanceAccess},
			Grant{a, SidLaunchTemplateAccess},
			Grant{a, SidInstanceActionsWithTags})
	}
	return append(out, Grant{"ec2:CreateTags", SidResourceCreationTagging}, Grant{"iam:PassRole", SidPassNodeRole})
}

func read(service, op, sid, scope string) Call {
	prefix := map[string]string{"EC2": "ec2", "SSM": "ssm", "SQS": "sqs", "IAM": "iam", "EKS": "eks", "Pricing": "pricing", "EventBridge": "events", "ARCZonalShift": "arc-zonal-shift"}[service]
	return Call{Service: service, Operation: op, Caller: CallerController, Grants: []Grant{{prefix + ":" + op, sid}}, Scope: scope}
}

const regional = "any resource, in the configured region only (aws:RequestedRegion)"

// Inventory lists every operation of package sdk's interfaces, in interface
// order. Keep it in step with package sdk: a test fails for an operation
// that is missing here. Entries may name operations the interfaces do not
// declare yet, as long as the real SDK client has them (calls being added on
// other work in progress).
var Inventory = []Call{
	read("EC2", "DescribeSubnets", SidRegionalRead, regional),
	read("EC2", "DescribeSecurityGroups", SidRegionalRead, regional),
	read("EC2", "DescribeImages", SidRegionalRead, regional),
	read("EC2", "DescribeInstanceTypes", SidRegionalRead, regional),
	read("EC2", "DescribeInstanceTypeOfferings", SidRegionalRead, regional),
	read("EC2", "DescribeSpotPriceHistory", SidRegionalRead, regional),
	read("EC2", "DescribeCapacityReservations", SidRegionalRead, regional),
	read("EC2", "DescribePlacementGroups", SidRegionalRead, regional),
	{
		Service: "EC2", Operation: "CreateFleet", Caller: CallerController,
		Grants: launchGrants("ec2:CreateFleet", "ec2:RunInstances"),
		Scope: "images, snapshots, subnets, security groups, capacity reservations and placement groups of any account (they may be shared); " +
			"launch templates tagged kubernetes.io/cluster/<cluster>=owned and karpenter.sh/nodepool; " +
			"the fleet, instances, volumes, network interfaces and spot requests it creates only with the request tags kubernetes.io/cluster/<cluster>=owned, eks:eks-cluster-name=<cluster> and karpenter.sh/nodepool " +
			"(instance, volume and fleet tags come from the request, network-interface and spot-request tags from the launch template); " +
			"iam:PassRole on the node role only, to EC2 only",
	},
	{
		Service: "EC2", Operation: "RunInstances", Caller: CallerController,
		Grants: launchGrants("ec2:RunInstances"),
		Scope:  "only with DryRun, as the permission probe of EC2NodeClass validation; same scope as CreateFleet, the probe tags the instance, its volumes and its network interface",
	},
	{
		Service: "EC2", Operation: "CreateLaunchTemplate", Caller: CallerController,
		Grants: []Grant{{"ec2:CreateLaunchTemplate", SidInstanceActionsWithTags}, {"ec2:CreateTags", SidResourceCreationTagging}},
		Scope:  "only with the request tags kubernetes.io/cluster/<cluster>=owned, eks:eks-cluster-name=<cluster> and karpenter.sh/nodepool",
	},
	read("EC2", "DescribeLaunchTemplates", SidRegionalRead, regional),
	{
		Service: "EC2", Operation: "DeleteLaunchTemplate", Caller: CallerController,
		Grants: []Grant{{"ec2:DeleteLaunchTemplate", SidScopedDeletion}},
		Scope:  "launch templates tagged kubernetes.io/cluster/<cluster>=owned and karpenter.sh/nodepool",
	},
	read("EC2", "DescribeInstances", SidRegionalRead, regional),
	read("EC2", "DescribeInstanceStatus", SidRegionalRead, regional+"; the instance status checks, every minute (optional: without it the checks are off)"),
	{
		Service: "EC2", Operation: "TerminateInstances", Caller: CallerController,
		Grants: []Grant{{"ec2:TerminateInstances", SidScopedDeletion}},
		Scope:  "instances tagged kubernetes.io/cluster/<cluster>=owned and karpenter.sh/nodepool",
	},
	{
		Service: "EC2", Operation: "CreateTags", Caller: CallerController,
		Grants: []Grant{{"ec2:CreateTags", SidResourceTagging}},
		Scope:  "instances tagged kubernetes.io/cluster/<cluster>=owned and karpenter.sh/nodepool, and only the keys Name, karpenter.sh/nodeclaim and eks:eks-cluster-name (tagging a registered node's instance)",
	},

	read("SSM", "GetParameter", SidSSMRead, "the public parameters under /aws/service/ (AMI aliases); widen it for ssmParameter terms naming your own parameters"),

	read("SQS", "GetQueueUrl", SidInterruptionQueue, "the interruption queue"),
	read("SQS", "ReceiveMessage", SidInterruptionQueue, "the interruption queue"),
	read("SQS", "DeleteMessage", SidInterruptionQueue, "the interruption queue"),
	{Service: "SQS", Operation: "SendMessage", Caller: CallerInjection, Scope: "never called by the controller; tests and the simulator inject interruption events with it"},
	{Service: "SQS", Operation: "GetQueueAttributes", Caller: CallerDiagnose, Scope: "stevedore diagnose: the queue exists and lets EventBridge deliver to it"},

	read("IAM", "GetInstanceProfile", SidInstanceProfileRead, "any instance profile of the account: a managed profile is looked up by name before it exists, and spec.instanceProfile names the user's own"),
	{
		Service: "IAM", Operation: "CreateInstanceProfile", Caller: CallerController,
		Grants: []Grant{{"iam:CreateInstanceProfile", SidInstanceProfileCreation}},
		Scope:  "only with the request tags kubernetes.io/cluster/<cluster>=owned, eks:eks-cluster-name=<cluster>, topology.kubernetes.io/region=<region> and karpenter.k8s.aws/ec2nodeclass",
	},
	{
		Service: "IAM", Operation: "AddRoleToInstanceProfile", Caller: CallerController,
		Grants: []Grant{{"iam:AddRoleToInstanceProfile", SidInstanceProfileActions}, {"iam:PassRole", SidPassNodeRole}},
		Scope:  "instance profiles tagged kubernetes.io/cluster/<cluster>=owned, topology.kubernetes.io/region=<region> and karpenter.k8s.aws/ec2nodeclass; adding a role passes it",
	},
	{
		Service: "IAM", Operation: "RemoveRoleFromInstanceProfile", Caller: CallerController,
		Grants: []Grant{{"iam:RemoveRoleFromInstanceProfile", SidInstanceProfileActions}},
		Scope:  "instance profiles tagged kubernetes.io/cluster/<cluster>=owned, topology.kubernetes.io/region=<region> and karpenter.k8s.aws/ec2nodeclass",
	},
	{
		Service: "IAM", Operation: "DeleteInstanceProfile", Caller: CallerController,
		Grants: []Grant{{"iam:DeleteInstanceProfile", SidInstanceProfileActions}},
		Scope:  "instance profiles tagged kubernetes.io/cluster/<cluster>=owned, topology.kubernetes.io/region=<region> and karpenter.k8s.aws/ec2nodeclass",
	},
	{
		Service: "IAM", Operation: "TagInstanceProfile", Caller: CallerController,
		Grants: []Grant{{"iam:TagInstanceProfile", SidInstanceProfileTagging}},
		Scope:  "instance profiles already tagged as stevedore's, and only with the full set of ownership tags in the request",
	},
	read("IAM", "ListInstanceProfiles", SidInstanceProfileList, "any: listing has no resource-level permissions; the instance profile collection lists the cluster's paths (/stevedore/<region>/<cluster>/ and Karpenter's /karpenter/<region>/<cluster>/) at least every 30 minutes"),
	{Service: "IAM", Operation: "GetRole", Caller: CallerDiagnose, Scope: "stevedore diagnose: the node role exists and EC2 may assume it; the controller learns that a role is missing from AddRoleToInstanceProfile instead, as Karpenter's policy grants no iam:GetRole"},

	read("EKS", "DescribeCluster", SidAPIServerEndpointDiscovery, "this cluster only: the API server endpoint, service CIDR and version at start-up"),
	{Service: "EKS", Operation: "ListAccessEntries", Caller: CallerDiagnose, Scope: "stevedore diagnose: the node role's access entry"},
	{Service: "EKS", Operation: "ListPodIdentityAssociations", Caller: CallerDiagnose, Scope: "stevedore diagnose: the controller's Pod Identity association"},

	{Service: "EventBridge", Operation: "ListRuleNamesByTarget", Caller: CallerDiagnose, Scope: "stevedore diagnose: the rules that route interruption events to the queue"},
	{Service: "EventBridge", Operation: "DescribeRule", Caller: CallerDiagnose, Scope: "stevedore diagnose: a rule's state and event pattern"},

	read("ARCZonalShift", "GetManagedResource", SidZonalShift, "this cluster only (the condition arc-zonal-shift:ResourceIdentifier is the cluster's ARN; ARC ignores the Resource element); called every 30 seconds, and only with --enable-zonal-shift"),

	read("Pricing", "GetProducts", SidPricingRead, "any: the Price List API has no resource-level permissions; optional, stevedore falls back to its embedded prices"),
}

// Lookup returns the inventory entry of an operation.
func Lookup(service, operation string) (Call, bool) {
	for _, c := range Inventory {
		if c.Service == service && c.Operation == operation {
			return c, true
		}
	}
	return Call{}, false
}
