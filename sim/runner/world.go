package runner

import (
	"context"
	"encoding/json"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/pricing"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/sdk"
	"github.com/stevedore-autoscaler/stevedore/sim/account"
	simclock "github.com/stevedore-autoscaler/stevedore/sim/clock"
	"github.com/stevedore-autoscaler/stevedore/sim/scenario"
)

// world is the simulated AWS account and what the provider needs to know of
// the cluster.
type world struct {
	aws     *fake.AWS
	clients sdk.Clients
	cluster fake.Cluster
	// onTerminate is told of instances that TerminateInstances stopped.
	onTerminate func(ids []string)
	// onLaunch is told of instances that CreateFleet or RunInstances
	// launched.
	onLaunch func(ids []string)
}

// buildWorld creates the account the scenario describes (account.BuildAWS,
// the same one `stevedore controller --cloud=simulated` runs) and the
// clients the controllers use with it.
func buildWorld(run *scenario.Run, clk *simclock.Clock) (*world, error) {
	f, cluster, err := account.BuildAWS(run, clk)
	if err != nil {
		return nil, err
	}
	w := &world{aws: f, cluster: cluster}
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

// observedEC2 tells the runner when instances are launched (for the
// report's inventory) and terminated, so that their kubelets stop and their
// billing ends at that moment. Everything else goes straight to the
// in-memory EC2.
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

func (o observedEC2) CreateFleet(ctx context.Context, in *ec2.CreateFleetInput, optFns ...func(*ec2.Options)) (*ec2.CreateFleetOutput, error) {
	out, err := o.EC2.CreateFleet(ctx, in, optFns...)
	if err == nil && o.w.onLaunch != nil {
		for _, fi := range out.Instances {
			o.w.onLaunch(fi.InstanceIds)
		}
	}
	return out, err
}

func (o observedEC2) RunInstances(ctx context.Context, in *ec2.RunInstancesInput, optFns ...func(*ec2.Options)) (*ec2.RunInstancesOutput, error) {
	out, err := o.EC2.RunInstances(ctx, in, optFns...)
	if err == nil && o.w.onLaunch != nil {
		ids := make([]string, 0, len(out.Instances))
		for _, i := range out.Instances {
			if i.InstanceId != nil {
				ids = append(ids, *i.InstanceId)
			}
		}
		o.w.onLaunch(ids)
	}
	return out, err
}
