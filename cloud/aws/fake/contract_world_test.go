package fake_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/sdk"
	"github.com/stevedore-autoscaler/stevedore/test/moto"
)

// contractRegion is the region both sides of the contract test run in.
const contractRegion = "us-east-1"

// contractZones are the zones the cases use: zones every account sees in
// us-east-1 (moto serves a to f), and the fake's own.
var contractZones = []string{"us-east-1a", "us-east-1b", "us-east-1c"}

// world is one side of the contract test: the same starting state is
// seeded into the fake through its seeding API and into moto through the
// SDK. Resources are named by the case with symbols; each side keeps the
// identifiers its AWS gave them, and sym maps an identifier back so that
// answers can be compared.
type world interface {
	clients() sdk.Clients
	// subnet creates a subnet with a /24 CIDR in zone.
	subnet(t *testing.T, sym, zone, cidr string, tags map[string]string)
	securityGroup(t *testing.T, sym, name string, tags map[string]string)
	image(t *testing.T, sym, name, arch string, tags map[string]string)
	parameter(t *testing.T, name, value string)
	role(t *testing.T, name string)
	// profile creates an instance profile carrying role ("" for none).
	profile(t *testing.T, name, role string)
	// queue creates an SQS queue and returns its URL.
	queue(t *testing.T, name string) string
	cluster(t *testing.T, name, version string)
	rule(t *testing.T, name, pattern, targetARN string)
	placementGroup(t *testing.T, name, strategy string)
	// set records that this side gave sym the identifier id.
	set(sym, id string)
	// id returns the identifier this side gave the resource sym.
	id(sym string) string
	// sym returns the symbol of an identifier this side gave, or the
	// identifier itself when it is not one of the seeded resources.
	sym(id string) string
	// name says which side this is, for failure messages.
	name() string
}

// ids is the symbol table both sides share.
type ids struct{ bySym, byID map[string]string }

func newIDs() ids { return ids{bySym: map[string]string{}, byID: map[string]string{}} }

func (s ids) set(sym, id string) { s.bySym[sym], s.byID[id] = id, sym }

func (s ids) id(sym string) string {
	if id, ok := s.bySym[sym]; ok {
		return id
	}
	return sym
}

func (s ids) sym(id string) string {
	if sym, ok := s.byID[id]; ok {
		return sym
	}
	return id
}

// fakeWorld seeds the in-memory AWS.
type fakeWorld struct {
	ids
	f *fake.AWS
}

func newFakeWorld() *fakeWorld {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC))
	return &fakeWorld{ids: newIDs(), f: fake.New(fake.Options{
		Seed: 7, Clock: clk, Region: contractRegion, Zones: contractZones,
		// moto launches instances running and terminates them at once.
		BootDelay: -1, ShutdownDelay: -1,
	})}
}

func (w *fakeWorld) name() string         { return "fake" }
func (w *fakeWorld) clients() sdk.Clients { return w.f.Clients() }

func (w *fakeWorld) subnet(t *testing.T, sym, zone, cidr string, tags map[string]string) {
	t.Helper()
	id, err := w.f.AddSubnet(fake.Subnet{Zone: zone, CIDR: cidr, Tags: tags})
	if err != nil {
		t.Fatal(err)
	}
	w.set(sym, id)
}

func (w *fakeWorld) securityGroup(t *testing.T, sym, name string, tags map[string]string) {
	t.Helper()
	id, err := w.f.AddSecurityGroup(fake.SecurityGroup{Name: name, Description: name, Tags: tags})
	if err != nil {
		t.Fatal(err)
	}
	w.set(sym, id)
}

func (w *fakeWorld) image(t *testing.T, sym, name, arch string, tags map[string]string) {
	t.Helper()
	img, err := w.f.AddImage(fake.Image{Name: name, Architecture: arch, Tags: tags})
	if err != nil {
		t.Fatal(err)
	}
	w.set(sym, img.ID)
}

func (w *fakeWorld) parameter(_ *testing.T, name, value string) { w.f.SetParameter(name, w.id(value)) }

func (w *fakeWorld) role(_ *testing.T, name string) { w.f.AddRole(name) }

func (w *fakeWorld) profile(t *testing.T, name, role string) {
	t.Helper()
	if err := w.f.AddInstanceProfile(name, role); err != nil {
		t.Fatal(err)
	}
}

func (w *fakeWorld) queue(_ *testing.T, name string) string { return w.f.CreateQueue(name, 0) }

func (w *fakeWorld) cluster(t *testing.T, name, version string) {
	t.Helper()
	if _, err := w.f.AddCluster(fake.Cluster{Name: name, Version: version}); err != nil {
		t.Fatal(err)
	}
}

func (w *fakeWorld) rule(t *testing.T, name, pattern, targetARN string) {
	t.Helper()
	if err := w.f.PutRule(fake.Rule{Name: name, EventPattern: pattern, Targets: []string{targetARN}}); err != nil {
		t.Fatal(err)
	}
}

func (w *fakeWorld) placementGroup(t *testing.T, name, strategy string) {
	t.Helper()
	id, err := w.f.AddPlacementGroup(fake.PlacementGroup{Name: name, Strategy: strategy})
	if err != nil {
		t.Fatal(err)
	}
	w.set(name, id)
}

// motoWorld seeds moto through the SDK.
type motoWorld struct {
	ids
	cfg aws.Config
	c   sdk.Clients
	// vpc is the VPC the case's subnets and groups go in, created on
	// first use so that moto's default VPC's resources stay out of it.
	vpc string
}

func newMotoWorld(s *moto.Server) *motoWorld {
	cfg := s.Config(contractRegion)
	return &motoWorld{ids: newIDs(), cfg: cfg, c: sdk.NewFromConfig(cfg)}
}

func (w *motoWorld) name() string         { return "moto" }
func (w *motoWorld) clients() sdk.Clients { return w.c }

func (w *motoWorld) ec2() *ec2.Client { return ec2.NewFromConfig(w.cfg) }

func tagSpec(kind ec2types.ResourceType, tags map[string]string) []ec2types.TagSpecification {
	if len(tags) == 0 {
		return nil
	}
	spec := ec2types.TagSpecification{ResourceType: kind}
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		spec.Tags = append(spec.Tags, ec2types.Tag{Key: aws.String(k), Value: aws.String(tags[k])})
	}
	return []ec2types.TagSpecification{spec}
}

func (w *motoWorld) vpcID(t *testing.T) string {
	t.Helper()
	if w.vpc == "" {
		out, err := w.ec2().CreateVpc(context.Background(), &ec2.CreateVpcInput{CidrBlock: aws.String("10.0.0.0/16")})
		if err != nil {
			t.Fatalf("moto CreateVpc: %v", err)
		}
		w.vpc = aws.ToString(out.Vpc.VpcId)
	}
	return w.vpc
}

func (w *motoWorld) subnet(t *testing.T, sym, zone, cidr string, tags map[string]string) {
	t.Helper()
	out, err := w.ec2().CreateSubnet(context.Background(), &ec2.CreateSubnetInput{
		VpcId: aws.String(w.vpcID(t)), CidrBlock: aws.String(cidr), AvailabilityZone: aws.String(zone),
		TagSpecifications: tagSpec(ec2types.ResourceTypeSubnet, tags),
	})
	if err != nil {
		t.Fatalf("moto CreateSubnet: %v", err)
	}
	w.set(sym, aws.ToString(out.Subnet.SubnetId))
}

func (w *motoWorld) securityGroup(t *testing.T, sym, name string, tags map[string]string) {
	t.Helper()
	out, err := w.ec2().CreateSecurityGroup(context.Background(), &ec2.CreateSecurityGroupInput{
		GroupName: aws.String(name), Description: aws.String(name), VpcId: aws.String(w.vpcID(t)),
		TagSpecifications: tagSpec(ec2types.ResourceTypeSecurityGroup, tags),
	})
	if err != nil {
		t.Fatalf("moto CreateSecurityGroup: %v", err)
	}
	w.set(sym, aws.ToString(out.GroupId))
}

func (w *motoWorld) image(t *testing.T, sym, name, arch string, tags map[string]string) {
	t.Helper()
	out, err := w.ec2().RegisterImage(context.Background(), &ec2.RegisterImageInput{
		Name: aws.String(name), Architecture: ec2types.ArchitectureValues(arch),
		RootDeviceName: aws.String("/dev/xvda"), VirtualizationType: aws.String("hvm"),
		TagSpecifications: tagSpec(ec2types.ResourceTypeImage, tags),
	})
	if err != nil {
		t.Fatalf("moto RegisterImage: %v", err)
	}
	id := aws.ToString(out.ImageId)
	if len(tags) > 0 {
		// RegisterImage's tag specifications are recent; tag again so
		// that the image has its tags whichever moto serves.
		spec := tagSpec(ec2types.ResourceTypeImage, tags)[0]
		if _, err := w.ec2().CreateTags(context.Background(), &ec2.CreateTagsInput{Resources: []string{id}, Tags: spec.Tags}); err != nil {
			t.Fatalf("moto CreateTags: %v", err)
		}
	}
	w.set(sym, id)
}

func (w *motoWorld) parameter(t *testing.T, name, value string) {
	t.Helper()
	_, err := ssm.NewFromConfig(w.cfg).PutParameter(context.Background(), &ssm.PutParameterInput{
		Name: aws.String(name), Value: aws.String(w.id(value)), Type: ssmtypes.ParameterTypeString, Overwrite: aws.Bool(true),
	})
	if err != nil {
		t.Fatalf("moto PutParameter: %v", err)
	}
}

// trustEC2 lets EC2 instances assume a role.
const trustEC2 = `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"ec2.amazonaws.com"},"Action":"sts:AssumeRole"}]}`

func (w *motoWorld) role(t *testing.T, name string) {
	t.Helper()
	_, err := iam.NewFromConfig(w.cfg).CreateRole(context.Background(), &iam.CreateRoleInput{
		RoleName: aws.String(name), AssumeRolePolicyDocument: aws.String(trustEC2),
	})
	if err != nil {
		t.Fatalf("moto CreateRole: %v", err)
	}
}

func (w *motoWorld) profile(t *testing.T, name, role string) {
	t.Helper()
	ctx := context.Background()
	if _, err := w.c.IAM.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String(name)}); err != nil {
		t.Fatalf("moto CreateInstanceProfile: %v", err)
	}
	if role == "" {
		return
	}
	if _, err := w.c.IAM.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String(name), RoleName: aws.String(role)}); err != nil {
		t.Fatalf("moto AddRoleToInstanceProfile: %v", err)
	}
}

func (w *motoWorld) queue(t *testing.T, name string) string {
	t.Helper()
	out, err := sqs.NewFromConfig(w.cfg).CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatalf("moto CreateQueue: %v", err)
	}
	return aws.ToString(out.QueueUrl)
}

func (w *motoWorld) cluster(t *testing.T, name, version string) {
	t.Helper()
	_, err := eks.NewFromConfig(w.cfg).CreateCluster(context.Background(), &eks.CreateClusterInput{
		Name: aws.String(name), Version: aws.String(version),
		RoleArn:            aws.String(fmt.Sprintf("arn:aws:iam::%s:role/eks-cluster", moto.AccountID)),
		ResourcesVpcConfig: &ekstypes.VpcConfigRequest{SubnetIds: []string{}},
	})
	if err != nil {
		t.Fatalf("moto CreateCluster: %v", err)
	}
}

func (w *motoWorld) rule(t *testing.T, name, pattern, targetARN string) {
	t.Helper()
	eb := eventbridge.NewFromConfig(w.cfg)
	ctx := context.Background()
	if _, err := eb.PutRule(ctx, &eventbridge.PutRuleInput{Name: aws.String(name), EventPattern: aws.String(pattern)}); err != nil {
		t.Fatalf("moto PutRule: %v", err)
	}
	_, err := eb.PutTargets(ctx, &eventbridge.PutTargetsInput{Rule: aws.String(name), Targets: []ebtypes.Target{{Id: aws.String("queue"), Arn: aws.String(targetARN)}}})
	if err != nil {
		t.Fatalf("moto PutTargets: %v", err)
	}
}

func (w *motoWorld) placementGroup(t *testing.T, name, strategy string) {
	t.Helper()
	out, err := w.ec2().CreatePlacementGroup(context.Background(), &ec2.CreatePlacementGroupInput{
		GroupName: aws.String(name), Strategy: ec2types.PlacementStrategy(strategy),
	})
	if err != nil {
		t.Fatalf("moto CreatePlacementGroup: %v", err)
	}
	if out.PlacementGroup != nil && out.PlacementGroup.GroupId != nil {
		w.set(name, aws.ToString(out.PlacementGroup.GroupId))
	}
}

// queueARN is the ARN of a queue of the account both sides answer as.
func queueARN(name string) string {
	return fmt.Sprintf("arn:aws:sqs:%s:%s:%s", contractRegion, moto.AccountID, name)
}

// queuePath is the part of a queue URL the provider depends on: the
// account and the name (the host is the endpoint's).
func queuePath(url string) string {
	if i := strings.Index(url, "://"); i >= 0 {
		url = url[i+3:]
	}
	if i := strings.Index(url, "/"); i >= 0 {
		return url[i:]
	}
	return url
}
