package moto

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/amifamily"
)

// Account is what a real AWS account holds for one EKS cluster that
// stevedore runs in, written into moto through the SDK by SetUpAccount.
type Account struct {
	Cluster, Region string
	// Subnets (one per zone a, b and c) and SecurityGroup carry the
	// karpenter.sh/discovery tag with the cluster's name, as the getting
	// started guide tags them.
	VPC           string
	Subnets       []string
	SecurityGroup string
	// NodeRole is the node role's name, KarpenterNodeRole-<cluster>.
	NodeRole string
	// Queue is the interruption queue's name (the cluster's name) and URL.
	Queue, QueueURL string
	// Images are image IDs of moto's own catalogue that stand in for the
	// EKS-optimized images: two releases for amd64 (Next is the one a new
	// release moves the aliases to) and one for arm64.
	ImageAMD64, ImageAMD64Next, ImageARM64 string
}

// SetUpAccount writes a cluster's account into moto: a VPC with a subnet in
// each of three zones and a security group, tagged for discovery; the node
// role; the EKS cluster; the interruption queue. It picks the images that
// stand in for the EKS-optimized ones; PublishImages makes the aliases
// resolve to them.
func SetUpAccount(ctx context.Context, cfg aws.Config, cluster string) (*Account, error) {
	a := &Account{Cluster: cluster, Region: cfg.Region, NodeRole: "KarpenterNodeRole-" + cluster, Queue: cluster}
	ec2c := ec2.NewFromConfig(cfg)
	discovery := []ec2types.Tag{{Key: aws.String("karpenter.sh/discovery"), Value: aws.String(cluster)}}
	vpc, err := ec2c.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: aws.String("10.0.0.0/16")})
	if err != nil {
		return nil, fmt.Errorf("creating the VPC: %w", err)
	}
	a.VPC = aws.ToString(vpc.Vpc.VpcId)
	for i, zone := range []string{"a", "b", "c"} {
		s, err := ec2c.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: vpc.Vpc.VpcId, AvailabilityZone: aws.String(cfg.Region + zone),
			CidrBlock:         aws.String(fmt.Sprintf("10.0.%d.0/19", i*32)),
			TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeSubnet, Tags: discovery}}})
		if err != nil {
			return nil, fmt.Errorf("creating the subnet in %s%s: %w", cfg.Region, zone, err)
		}
		a.Subnets = append(a.Subnets, aws.ToString(s.Subnet.SubnetId))
	}
	sg, err := ec2c.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String("nodes"), Description: aws.String("nodes"), VpcId: vpc.Vpc.VpcId,
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeSecurityGroup, Tags: discovery}}})
	if err != nil {
		return nil, fmt.Errorf("creating the security group: %w", err)
	}
	a.SecurityGroup = aws.ToString(sg.GroupId)
	if err := a.pickImages(ctx, ec2c); err != nil {
		return nil, err
	}
	role, err := iam.NewFromConfig(cfg).CreateRole(ctx, &iam.CreateRoleInput{RoleName: aws.String(a.NodeRole), AssumeRolePolicyDocument: aws.String(EC2TrustPolicy)})
	if err != nil {
		return nil, fmt.Errorf("creating the node role: %w", err)
	}
	if _, err := eks.NewFromConfig(cfg).CreateCluster(ctx, &eks.CreateClusterInput{Name: aws.String(cluster), Version: aws.String("1.33"), RoleArn: role.Role.Arn,
		ResourcesVpcConfig: &ekstypes.VpcConfigRequest{SubnetIds: a.Subnets}}); err != nil {
		return nil, fmt.Errorf("creating the EKS cluster: %w", err)
	}
	q, err := sqs.NewFromConfig(cfg).CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(a.Queue)})
	if err != nil {
		return nil, fmt.Errorf("creating the interruption queue: %w", err)
	}
	a.QueueURL = aws.ToString(q.QueueUrl)
	return a, nil
}

// pickImages chooses, from the images moto keeps for Amazon's account, two
// amd64 images and one arm64 image, by ID so that the choice is the same on
// every run.
func (a *Account) pickImages(ctx context.Context, c *ec2.Client) error {
	ids := func(arch string) ([]string, error) {
		out, err := c.DescribeImages(ctx, &ec2.DescribeImagesInput{Owners: []string{"amazon"},
			Filters: []ec2types.Filter{{Name: aws.String("architecture"), Values: []string{arch}}}})
		if err != nil {
			return nil, fmt.Errorf("moto's %s images: %w", arch, err)
		}
		var ids []string
		for _, img := range out.Images {
			ids = append(ids, aws.ToString(img.ImageId))
		}
		slices.Sort(ids)
		return ids, nil
	}
	amd, err := ids("x86_64")
	if err != nil {
		return err
	}
	arm, err := ids("arm64")
	if err != nil {
		return err
	}
	if len(amd) < 2 || len(arm) < 1 {
		return fmt.Errorf("moto keeps %d x86_64 and %d arm64 images of Amazon's; two and one are needed", len(amd), len(arm))
	}
	a.ImageAMD64, a.ImageAMD64Next, a.ImageARM64 = amd[0], amd[1], arm[0]
	return nil
}

// EC2TrustPolicy is the trust policy of a node role: EC2 may assume it.
const EC2TrustPolicy = `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"ec2.amazonaws.com"},"Action":"sts:AssumeRole"}]}`

// PublishedAliases are the AMI aliases whose public parameters
// PublishImages writes.
var PublishedAliases = []string{"al2023@latest", "bottlerocket@latest"}

// PublishImages makes the proxy answer the public SSM parameters of the
// EKS-optimized AL2023 and Bottlerocket images for the Kubernetes version
// (such as "1.33") with amd64 and arm64, as AWS's parameters answer with
// the latest release. Accelerated variants (NVIDIA, Neuron) get no
// parameter, as in a region without them; AL2023's standard variant is
// the one the test's pods land on.
func PublishImages(p *Proxy, kubernetesVersion, amd64, arm64 string) error {
	for _, s := range PublishedAliases {
		alias, err := amifamily.ParseAlias(s)
		if err != nil {
			return err
		}
		params, err := amifamily.Parameters(alias, kubernetesVersion)
		if err != nil {
			return fmt.Errorf("the parameters of %s for Kubernetes %s: %w", s, kubernetesVersion, err)
		}
		for _, par := range params {
			switch {
			case strings.Contains(par.Path, "nvidia"), strings.Contains(par.Path, "neuron"):
			case strings.Contains(par.Path, "/arm64/"):
				p.SetParameter(par.Path, arm64)
			case strings.Contains(par.Path, "/x86_64/"):
				p.SetParameter(par.Path, amd64)
			default:
				return fmt.Errorf("parameter %s of %s names no architecture this knows", par.Path, s)
			}
		}
	}
	return nil
}
