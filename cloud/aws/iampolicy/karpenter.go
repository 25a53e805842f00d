package iampolicy

import "fmt"

// KarpenterReference returns the controller policy of Karpenter v1.14's
// reference CloudFormation template (NodeLifecyclePolicy,
// IAMIntegrationPolicy, EKSIntegrationPolicy, InterruptionPolicy,
// ZonalShiftPolicy and ResourceDiscoveryPolicy, merged into one document), expressed as data for
// the given cluster. Tests check stevedore's requests against it: a policy
// written for Karpenter must admit stevedore.
func KarpenterReference(partition, region, accountID, cluster, nodeRoleARN, queueARN string) Policy {
	ec2 := func(kind string) string { return fmt.Sprintf("arn:%s:ec2:%s:*:%s/*", partition, region, kind) }
	clusterTag := "kubernetes.io/cluster/" + cluster
	profiles := fmt.Sprintf("arn:%s:iam::%s:instance-profile/*", partition, accountID)
	created := []string{ec2("fleet"), ec2("instance"), ec2("volume"), ec2("network-interface"), ec2("launch-template"), ec2("spot-instances-request")}
	ownedNodePool := map[string]map[string][]string{
		"StringEquals": {"aws:ResourceTag/" + clusterTag: {"owned"}},
		"StringLike":   {"aws:ResourceTag/karpenter.sh/nodepool": {"*"}},
	}
	allow := func(sid string, actions, resources []string, cond map[string]map[string][]string) Statement {
		return Statement{Sid: sid, Effect: "Allow", Action: actions, Resource: resources, Condition: cond}
	}
	launch := []string{"ec2:RunInstances", "ec2:CreateFleet"}
	return Policy{Version: "2012-10-17", Statement: []Statement{
		allow("AllowScopedEC2InstanceAccessActions", launch, []string{
			fmt.Sprintf("arn:%s:ec2:%s::image/*", partition, region),
			fmt.Sprintf("arn:%s:ec2:%s::snapshot/*", partition, region),
			ec2("security-group"), ec2("subnet"), ec2("capacity-reservation"), ec2("placement-group"),
		}, nil),
		allow("AllowScopedEC2LaunchTemplateAccessActions", launch, []string{ec2("launch-template")}, ownedNodePool),
		allow("AllowScopedEC2InstanceActionsWithTags", append(launch, "ec2:CreateLaunchTemplate"), created, map[string]map[string][]string{
			"StringEquals": {"aws:RequestTag/" + clusterTag: {"owned"}, "aws:RequestTag/eks:eks-cluster-name": {cluster}},
			"StringLike":   {"aws:RequestTag/karpenter.sh/nodepool": {"*"}},
		}),
		allow("AllowScopedResourceCreationTagging", []string{"ec2:CreateTags"}, created, map[string]map[string][]string{
			"StringEquals": {
				"aws:RequestTag/" + clusterTag: {"owned"}, "aws:RequestTag/eks:eks-cluster-name": {cluster},
				"ec2:CreateAction": {"RunInstances", "CreateFleet", "CreateLaunchTemplate"},
			},
			"StringLike": {"aws:RequestTag/karpenter.sh/nodepool": {"*"}},
		}),
		allow("AllowScopedResourceTagging", []string{"ec2:CreateTags"}, []string{ec2("instance")}, map[string]map[string][]string{
			"StringEquals":              {"aws:ResourceTag/" + clusterTag: {"owned"}},
			"StringLike":                {"aws:ResourceTag/karpenter.sh/nodepool": {"*"}},
			"StringEqualsIfExists":      {"aws:RequestTag/eks:eks-cluster-name": {cluster}},
			"ForAllValues:StringEquals": {"aws:TagKeys": {"eks:eks-cluster-name", "karpenter.sh/nodeclaim", "Name"}},
		}),
		allow("AllowScopedDeletion", []string{"ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"}, []string{ec2("instance"), ec2("launch-template")}, ownedNodePool),
		allow("AllowPassingInstanceRole", []string{"iam:PassRole"}, []string{nodeRoleARN}, map[string]map[string][]string{
			"StringEquals": {"iam:PassedToService": {"ec2.amazonaws.com", "ec2.amazonaws.com.cn"}},
		}),
		allow("AllowScopedInstanceProfileCreationActions", []string{"iam:CreateInstanceProfile"}, []string{profiles}, map[string]map[string][]string{
			"StringEquals": {
				"aws:RequestTag/" + clusterTag: {"owned"}, "aws:RequestTag/eks:eks-cluster-name": {cluster},
				"aws:RequestTag/topology.kubernetes.io/region": {region},
			},
			"StringLike": {"aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": {"*"}},
		}),
		allow("AllowScopedInstanceProfileTagActions", []string{"iam:TagInstanceProfile"}, []string{profiles}, map[string]map[string][]string{
			"StringEquals": {
				"aws:ResourceTag/" + clusterTag: {"owned"}, "aws:ResourceTag/topology.kubernetes.io/region": {region},
				"aws:RequestTag/" + clusterTag: {"owned"}, "aws:RequestTag/eks:eks-cluster-name": {cluster},
				"aws:RequestTag/topology.kubernetes.io/region": {region},
			},
			"StringLike": {"aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": {"*"}, "aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": {"*"}},
		}),
		allow("AllowScopedInstanceProfileActions", []string{"iam:AddRoleToInstanceProfile", "iam:RemoveRoleFromInstanceProfile", "iam:DeleteInstanceProfile"}, []string{profiles}, map[string]map[string][]string{
			"StringEquals": {"aws:ResourceTag/" + clusterTag: {"owned"}, "aws:ResourceTag/topology.kubernetes.io/region": {region}},
			"StringLike":   {"aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": {"*"}},
		}),
		allow("AllowAPIServerEndpointDiscovery", []string{"eks:DescribeCluster"}, []string{fmt.Sprintf("arn:%s:eks:%s:%s:cluster/%s", partition, region, accountID, cluster)}, nil),
		allow("AllowInterruptionQueueActions", []string{"sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"}, []string{queueARN}, nil),
		allow("AllowZonalShiftStatusReadOnly", []string{"arc-zonal-shift:GetManagedResource"}, []string{"*"}, map[string]map[string][]string{
			"StringEquals": {"arc-zonal-shift:ResourceIdentifier": {fmt.Sprintf("arn:%s:eks:%s:%s:cluster/%s", partition, region, accountID, cluster)}},
		}),
		allow("AllowRegionalReadActions", []string{
			"ec2:DescribeCapacityReservations", "ec2:DescribeImages", "ec2:DescribeInstances", "ec2:DescribeInstanceStatus",
			"ec2:DescribeInstanceTypeOfferings", "ec2:DescribeInstanceTypes", "ec2:DescribeLaunchTemplates", "ec2:DescribePlacementGroups",
			"ec2:DescribeSecurityGroups", "ec2:DescribeSpotPriceHistory", "ec2:DescribeSubnets",
		}, []string{"*"}, map[string]map[string][]string{"StringEquals": {"aws:RequestedRegion": {region}}}),
		allow("AllowSSMReadActions", []string{"ssm:GetParameter"}, []string{fmt.Sprintf("arn:%s:ssm:%s::parameter/aws/service/*", partition, region)}, nil),
		allow("AllowPricingReadActions", []string{"pricing:GetProducts"}, []string{"*"}, nil),
		allow("AllowUnscopedInstanceProfileListAction", []string{"iam:ListInstanceProfiles"}, []string{"*"}, nil),
		allow("AllowInstanceProfileReadActions", []string{"iam:GetInstanceProfile"}, []string{profiles}, nil),
	}}
}
