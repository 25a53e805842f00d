package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/pricing"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/sdk"
	simclock "github.com/stevedore-autoscaler/stevedore/sim/clock"
	"github.com/stevedore-autoscaler/stevedore/sim/scenario"
)

// queueRetention is how long the simulated interruption queue keeps a
// message, as the recommended Karpenter setup configures it.
const queueRetention = 300 * time.Second

// world is the simulated AWS account and what the provider needs to know of
// the cluster.
type world struct {
	aws     *fake.AWS
	clients sdk.Clients
	cluster fake.Cluster
	// onTerminate is told of instances that TerminateInstances stopped.
	onTerminate func(ids []string)
}

// buildWorld creates the account the scenario describes: the EKS cluster,
// subnets, security groups, roles with their access entries, images, the
// interruption queue, and the current EKS-optimized image releases.
func buildWorld(run *scenario.Run, clk *simclock.Clock) (*world, error) {
	a := run.AWS
	boot := a.BootTime
	if boot == 0 {
		boot = -1 // the fake reads 0 as its default; negative is none
	}
	f := fake.New(fake.Options{
		Seed: run.Seed, Clock: clk, Region: a.Region, Zones: a.Zones, InstanceTypes: a.InstanceTypes,
		BootDelay: boot, SpotFraction: a.SpotPriceFraction,
	})
	w := &world{aws: f}
	name := run.ClusterName
	tags := map[string]string{fake.DiscoveryTag: name, "kubernetes.io/cluster/" + name: "owned"}

	var subnetIDs []string
	if len(a.Subnets) == 0 {
		for _, z := range f.Zones() {
			id, err := f.AddSubnet(fake.Subnet{Zone: z, Tags: withName(tags, name+"-private-"+z)})
			if err != nil {
				return nil, err
			}
			subnetIDs = append(subnetIDs, id)
		}
	}
	for i, s := range a.Subnets {
		sub := fake.Subnet{ID: s.ID, Zone: s.Zone, Tags: s.Tags}
		if s.FreeIPs != nil {
			sub.AvailableIPs = *s.FreeIPs
		}
		id, err := f.AddSubnet(sub)
		if err != nil {
			return nil, fmt.Errorf("spec.aws.subnets[%d]: %w", i, err)
		}
		if s.FreeIPs != nil && *s.FreeIPs == 0 {
			if err := f.SetSubnetAvailableIPs(id, 0); err != nil {
				return nil, err
			}
		}
		subnetIDs = append(subnetIDs, id)
	}
	var sgIDs []string
	if len(a.SecurityGroups) == 0 {
		id, err := f.AddSecurityGroup(fake.SecurityGroup{Name: "eks-cluster-sg-" + name, Description: "EKS created security group", Tags: withName(tags, "eks-cluster-sg-"+name)})
		if err != nil {
			return nil, err
		}
		sgIDs = append(sgIDs, id)
	}
	for i, g := range a.SecurityGroups {
		id, err := f.AddSecurityGroup(fake.SecurityGroup{ID: g.ID, Name: g.Name, Tags: g.Tags})
		if err != nil {
			return nil, fmt.Errorf("spec.aws.securityGroups[%d]: %w", i, err)
		}
		sgIDs = append(sgIDs, id)
	}
	cluster, err := f.AddCluster(fake.Cluster{Name: name, Version: run.KubernetesVersion, SubnetIDs: subnetIDs, SecurityGroupIDs: sgIDs, ClusterSecurityGroupID: sgIDs[0]})
	if err != nil {
		return nil, err
	}
	w.cluster = cluster
	arns := map[string]string{}
	for _, role := range a.Roles {
		arns[role] = f.AddRole(role)
	}
	admitted := a.Roles
	if a.AccessEntries != nil {
		admitted = a.AccessEntries
	}
	for _, role := range admitted {
		arn, ok := arns[role]
		if !ok {
			arn = f.AddRole(role)
			arns[role] = arn
		}
		if err := f.AddAccessEntry(name, arn); err != nil {
			return nil, err
		}
	}
	if a.PassRole != nil {
		f.RestrictPassRole(a.PassRole...)
	}
	if a.InterruptionQueue != "" {
		// The queue as the reference setup leaves it: a policy that lets
		// EventBridge deliver, and the four rules that route interruption
		// events to it, so that diagnose finds a complete setup.
		f.CreateQueue(a.InterruptionQueue, queueRetention)
		if err := f.SetQueuePolicy(a.InterruptionQueue, fake.QueuePolicyEventBridge(f.QueueARN(a.InterruptionQueue))); err != nil {
			return nil, err
		}
		if _, err := f.AddInterruptionRules(run.ClusterName, a.InterruptionQueue); err != nil {
			return nil, err
		}
	}
	releases := []struct{ family, arch, variant, version string }{
		{fake.FamilyAL2023, "x86_64", "standard", ""}, {fake.FamilyAL2023, "arm64", "standard", ""},
		{fake.FamilyAL2023, "x86_64", "nvidia", ""}, {fake.FamilyAL2023, "arm64", "nvidia", ""}, {fake.FamilyAL2023, "x86_64", "neuron", ""},
		{fake.FamilyBottlerocket, "x86_64", "standard", "v1.40.0"}, {fake.FamilyBottlerocket, "arm64", "standard", "v1.40.0"},
		{fake.FamilyBottlerocket, "x86_64", "nvidia", "v1.40.0"}, {fake.FamilyBottlerocket, "arm64", "nvidia", "v1.40.0"},
	}
	for _, rel := range releases {
		img := fake.Image{ReleaseVersion: rel.version, CreationDate: run.Start.Add(-7 * 24 * time.Hour)}
		if _, err := f.ReleaseImage(rel.family, run.KubernetesVersion, rel.arch, rel.variant, img); err != nil {
			return nil, err
		}
	}
	for _, img := range a.Images {
		owner := img.Owner
		if img.Auto {
			owner = fake.AmazonOwnerID
		}
		if _, err := f.AddImage(fake.Image{ID: img.ID, Name: img.Name, Architecture: img.Arch, CreationDate: img.Created, OwnerID: owner, Tags: img.Tags}); err != nil {
			return nil, fmt.Errorf("image %s: %w", img.ID, err)
		}
	}
	w.clients = f.Clients()
	w.clients.EC2 = observedEC2{EC2: w.clients.EC2, w: w}
	w.clients.Pricing = &memoPricing{Pricing: w.clients.Pricing, pages: map[string]*pricing.GetProductsOutput{}}
	return w, nil
}

// memoPricing remembers the Price List API's answers. The in-memory AWS
// renders every product of the catalog as JSON on each call, which made up
// most of a run's time; its on-demand prices never change during a run (no
// scenario event changes them), so the same request always gets the same
// answer and remembering it changes nothing the controllers see.
type memoPricing struct {
	sdk.Pricing
	pages map[string]*pricing.GetProductsOutput
}

func (m *memoPricing) GetProducts(ctx context.Context, in *pricing.GetProductsInput, optFns ...func(*pricing.Options)) (*pricing.GetProductsOutput, error) {
	key, err := json.Marshal(in)
	if err != nil {
		return m.Pricing.GetProducts(ctx, in, optFns...)
	}
	if out, ok := m.pages[string(key)]; ok {
		return copyProducts(out), nil
	}
	out, err := m.Pricing.GetProducts(ctx, in, optFns...)
	if err != nil {
		return nil, err
	}
	m.pages[string(key)] = copyProducts(out)
	return out, nil
}

// copyProducts copies the parts of an answer a caller might change.
func copyProducts(out *pricing.GetProductsOutput) *pricing.GetProductsOutput {
	c := *out
	c.PriceList = append([]string(nil), out.PriceList...)
	return &c
}

func withName(tags map[string]string, name string) map[string]string {
	out := map[string]string{"Name": name}
	for k, v := range tags {
		out[k] = v
	}
	return out
}

// observedEC2 tells the runner when instances are terminated, so that their
// kubelets stop and their billing ends at that moment. Everything else goes
// straight to the in-memory EC2.
type observedEC2 struct {
	sdk.EC2
	w *world
}

func (o observedEC2) TerminateInstances(ctx context.Context, in *ec2.TerminateInstancesInput, optFns ...func(*ec2.Options)) (*ec2.TerminateInstancesOutput, error) {
	out, err := o.EC2.TerminateInstances(ctx, in, optFns...)
	if err == nil && o.w.onTerminate != nil {
		o.w.onTerminate(in.InstanceIds)
	}
	return out, err
}
