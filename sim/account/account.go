// Package account runs a simulated AWS account for the real controller:
// `stevedore controller --cloud=simulated --simulated-account=...`, a test and
// demo mode in which nothing real is launched.
//
// The account is the in-memory AWS (package cloud/aws/fake) set up from the
// spec.aws and spec.cluster sections of a Scenario, the format `stevedore
// simulate` reads (package sim/scenario), but it runs on the wall clock and
// next to a real API server. Its kubelets (Kubelets) register a Node in that
// API server for every instance once it has booted and only if its node role
// has an access entry, annotated so that kwok plays the kubelet from then on
// (see hack/local-cluster), and delete the Nodes of terminated instances, as
// the cloud controller manager does.
//
// An account lives in one process. Serve exposes its AWS APIs to other
// processes on loopback, and Dial gives them clients for it: several
// controllers then share one account, as replicas electing a leader share one
// AWS account in production. The process that serves the account also runs
// its kubelets; the clients only call the AWS APIs.
package account

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/karpenter/v1alpha1"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/iampolicy"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/sdk"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/settings"
	"github.com/stevedore-autoscaler/stevedore/sim/scenario"
)

// queueRetention is how long the interruption queue keeps a message, as the
// recommended Karpenter setup configures it (and as the simulator does).
const queueRetention = 300 * time.Second

// Info describes an account to the controllers that use it.
type Info struct {
	// ClusterName is the EKS cluster of the account; the controller's
	// --cluster-name must be the same.
	ClusterName string `json:"clusterName"`
	Region      string `json:"region"`
	// KubernetesVersion is the version the account's EKS cluster reports
	// and its current EKS-optimized images are released for.
	KubernetesVersion string `json:"kubernetesVersion"`
	// InterruptionQueue is the SQS queue that receives interruption events,
	// or "" when the account has none.
	InterruptionQueue string `json:"interruptionQueue,omitempty"`
}

// Account is a simulated AWS account held in this process.
type Account struct {
	Info
	// AWS is the in-memory AWS. Tests use it to look at instances and to
	// inject faults (spot interruptions, capacity shortages, API errors).
	AWS *fake.AWS
	// BootTime is how long an instance takes from launch to registering
	// its Node; ReadyTime from registration to Ready.
	BootTime, ReadyTime time.Duration
	// Ignored lists what the Scenario holds that an account does not use
	// (its events, manifests and controller settings), for a log line.
	Ignored []string

	clock   clock.Clock
	clients sdk.Clients
}

// Options configure New.
type Options struct {
	// Clock drives the account (default: the wall clock). The simulator's
	// virtual clock is not for this package.
	Clock clock.Clock
}

// Load reads a Scenario, as `stevedore simulate` does (a file or a directory
// of manifests with at most one Scenario), and builds its account. Only the
// Scenario's spec.aws and spec.cluster (name and kubernetesVersion) shape the
// account; EC2NodeClasses and patch events are read for the AMI IDs and node
// roles they name, which the account registers so that the manifests of the
// same directory work, but nothing is applied to the cluster.
func Load(path string, opts Options) (*Account, error) {
	scheme, err := newScheme()
	if err != nil {
		return nil, err
	}
	run, problems, err := scenario.Load([]string{path}, scheme)
	if err != nil {
		if errors.Is(err, scenario.ErrInvalid) {
			lines := make([]string, 0, len(problems))
			for _, p := range problems {
				lines = append(lines, p.String())
			}
			return nil, fmt.Errorf("%w:\n%s", err, strings.Join(lines, "\n"))
		}
		return nil, err
	}
	if run.Source == "" {
		return nil, fmt.Errorf("%s holds no Scenario (apiVersion %s, kind %s) to take the account from; write one, even if only with spec.aws", path, scenario.APIVersion, scenario.Kind)
	}
	return New(run, opts)
}

func newScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, karpv1.AddToScheme, v1alpha1.AddToScheme, awsv1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// New builds the account of a loaded scenario (see BuildAWS) on opts.Clock,
// the wall clock by default: the account `stevedore simulate` builds for the
// same scenario.
func New(run *scenario.Run, opts Options) (*Account, error) {
	clk := opts.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	f, _, err := BuildAWS(run, clk)
	if err != nil {
		return nil, err
	}
	acc := &Account{
		Info: Info{
			ClusterName: run.ClusterName, Region: f.Region(), KubernetesVersion: run.KubernetesVersion,
			InterruptionQueue: run.AWS.InterruptionQueue,
		},
		AWS: f, BootTime: run.AWS.BootTime, ReadyTime: run.AWS.ReadyTime,
		Ignored: ignored(run), clock: clk,
	}
	acc.clients = f.Clients()
	acc.clients.SQS = longPoll{SQS: acc.clients.SQS, clock: clk}
	return acc, nil
}

// BuildAWS creates, in an in-memory AWS on clk, the account a scenario
// describes: the EKS cluster, its subnets and security groups (one subnet
// per zone and one group, tagged karpenter.sh/discovery=<cluster>, unless the
// scenario lists its own), the IAM roles with their access entries, the
// interruption queue with its policy and EventBridge rules, the current
// EKS-optimized images for the cluster's version (released a week before
// clk's now) and the scenario's own images. `stevedore simulate` and the
// controller's simulated account both start from it.
func BuildAWS(run *scenario.Run, clk clock.PassiveClock) (*fake.AWS, fake.Cluster, error) {
	a := run.AWS
	boot := a.BootTime
	if boot == 0 {
		boot = -1 // the fake reads 0 as its default; negative is none
	}
	f := fake.New(fake.Options{
		Seed: run.Seed, Clock: clk, Region: a.Region, Zones: a.Zones, InstanceTypes: a.InstanceTypes,
		BootDelay: boot, SpotFraction: a.SpotPriceFraction,
	})
	name := run.ClusterName
	tags := map[string]string{fake.DiscoveryTag: name, "kubernetes.io/cluster/" + name: "owned"}

	var subnetIDs []string
	if len(a.Subnets) == 0 {
		for _, z := range f.Zones() {
			id, err := f.AddSubnet(fake.Subnet{Zone: z, Tags: withName(tags, name+"-private-"+z)})
			if err != nil {
				return nil, fake.Cluster{}, err
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
			return nil, fake.Cluster{}, fmt.Errorf("spec.aws.subnets[%d]: %w", i, err)
		}
		if s.FreeIPs != nil && *s.FreeIPs == 0 {
			if err := f.SetSubnetAvailableIPs(id, 0); err != nil {
				return nil, fake.Cluster{}, err
			}
		}
		subnetIDs = append(subnetIDs, id)
	}
	for i, r := range a.CapacityReservations {
		_, err := f.AddCapacityReservation(fake.CapacityReservation{
			ID: r.ID, InstanceType: r.InstanceType, Zone: r.Zone, Total: r.Count,
			MatchCriteria: r.InstanceMatchCriteria, ReservationType: r.Type, EndDate: r.End,
			Interruptible: r.Interruptible, Tags: r.Tags,
		})
		if err != nil {
			return nil, fake.Cluster{}, fmt.Errorf("spec.aws.capacityReservations[%d]: %w", i, err)
		}
	}
	var sgIDs []string
	if len(a.SecurityGroups) == 0 {
		id, err := f.AddSecurityGroup(fake.SecurityGroup{Name: "eks-cluster-sg-" + name, Description: "EKS created security group", Tags: withName(tags, "eks-cluster-sg-"+name)})
		if err != nil {
			return nil, fake.Cluster{}, err
		}
		sgIDs = append(sgIDs, id)
	}
	for i, g := range a.SecurityGroups {
		id, err := f.AddSecurityGroup(fake.SecurityGroup{ID: g.ID, Name: g.Name, Tags: g.Tags})
		if err != nil {
			return nil, fake.Cluster{}, fmt.Errorf("spec.aws.securityGroups[%d]: %w", i, err)
		}
		sgIDs = append(sgIDs, id)
	}
	cluster, err := f.AddCluster(fake.Cluster{Name: name, Version: run.KubernetesVersion, SubnetIDs: subnetIDs, SecurityGroupIDs: sgIDs, ClusterSecurityGroupID: sgIDs[0]})
	if err != nil {
		return nil, fake.Cluster{}, err
	}
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
			return nil, fake.Cluster{}, err
		}
	}
	if a.PassRole != nil {
		f.RestrictPassRole(a.PassRole...)
	}
	for i, g := range a.PlacementGroups {
		if _, err := f.AddPlacementGroup(fake.PlacementGroup{ID: g.ID, Name: g.Name, Strategy: g.Strategy, PartitionCount: g.Partitions}); err != nil {
			return nil, fake.Cluster{}, fmt.Errorf("spec.aws.placementGroups[%d]: %w", i, err)
		}
	}
	if a.InterruptionQueue != "" {
		// The queue as the reference setup leaves it: a policy that lets
		// EventBridge deliver, and the four rules that route interruption
		// events to it, so that diagnose finds a complete setup.
		f.CreateQueue(a.InterruptionQueue, queueRetention)
		if err := f.SetQueuePolicy(a.InterruptionQueue, fake.QueuePolicyEventBridge(f.QueueARN(a.InterruptionQueue))); err != nil {
			return nil, fake.Cluster{}, err
		}
		if _, err := f.AddInterruptionRules(name, a.InterruptionQueue); err != nil {
			return nil, fake.Cluster{}, err
		}
	}
	released := clk.Now().Add(-7 * 24 * time.Hour)
	for _, rel := range []struct{ family, arch, variant, version string }{
		{fake.FamilyAL2023, "x86_64", "standard", ""}, {fake.FamilyAL2023, "arm64", "standard", ""},
		{fake.FamilyAL2023, "x86_64", "nvidia", ""}, {fake.FamilyAL2023, "arm64", "nvidia", ""}, {fake.FamilyAL2023, "x86_64", "neuron", ""},
		{fake.FamilyBottlerocket, "x86_64", "standard", "v1.40.0"}, {fake.FamilyBottlerocket, "arm64", "standard", "v1.40.0"},
		{fake.FamilyBottlerocket, "x86_64", "nvidia", "v1.40.0"}, {fake.FamilyBottlerocket, "arm64", "nvidia", "v1.40.0"},
	} {
		img := fake.Image{ReleaseVersion: rel.version, CreationDate: released}
		if _, err := f.ReleaseImage(rel.family, run.KubernetesVersion, rel.arch, rel.variant, img); err != nil {
			return nil, fake.Cluster{}, err
		}
	}
	for _, ri := range a.CurrentImages {
		version := ri.KubernetesVersion
		if version == "" {
			version = run.KubernetesVersion
		}
		if _, err := f.ReleaseImage(ri.Alias, version, ri.Arch, ri.Variant, fake.Image{ID: ri.ID, Name: ri.Name, CreationDate: released}); err != nil {
			return nil, fake.Cluster{}, fmt.Errorf("current image %s: %w", ri.ID, err)
		}
	}
	for _, img := range a.Images {
		owner := img.Owner
		if img.Auto {
			owner = fake.AmazonOwnerID
		}
		if _, err := f.AddImage(fake.Image{ID: img.ID, Name: img.Name, Architecture: img.Arch, CreationDate: img.Created, OwnerID: owner, Tags: img.Tags}); err != nil {
			return nil, fake.Cluster{}, fmt.Errorf("image %s: %w", img.ID, err)
		}
	}
	if pol, ok := controllerPolicy(run, f); ok {
		f.EnforcePolicy(&pol)
	}
	return f, cluster, nil
}

// controllerPolicy is the policy spec.aws.controllerPolicy names, for the
// node role every scenario's account has, KarpenterNodeRole-<cluster>.
func controllerPolicy(run *scenario.Run, f *fake.AWS) (iampolicy.Policy, bool) {
	name := run.ClusterName
	queue := run.AWS.InterruptionQueue
	if queue == "" {
		queue = name
	}
	switch run.AWS.ControllerPolicy {
	case scenario.ControllerPolicyKarpenter:
		return f.KarpenterPolicy(name, queue), true
	case scenario.ControllerPolicyGenerated:
		return iampolicy.ControllerPolicy(iampolicy.Params{ClusterName: name, Partition: "aws", AccountID: f.AccountID(),
			Region: f.Region(), NodeRoleName: "KarpenterNodeRole-" + name, QueueName: queue, ZonalShift: run.Controller.Settings.EnableZonalShift}), true
	}
	return iampolicy.Policy{}, false
}

// Clients returns the account's AWS clients, for the AWS provider. Unlike
// the in-memory AWS's own, their ReceiveMessage waits as a long poll does
// (up to WaitTimeSeconds, until a message arrives), so that a consumer of the
// interruption queue does not spin on the wall clock.
func (a *Account) Clients() sdk.Clients { return a.clients }

// Apply checks the controller's settings against the account and fills in
// what they leave out: the cluster's name and the interruption queue.
func Apply(info Info, s *settings.Settings) error {
	if s.ClusterName == "" {
		s.ClusterName = info.ClusterName
	} else if s.ClusterName != info.ClusterName {
		return fmt.Errorf("--%s %q does not name the simulated account's cluster %q: leave it out, or set the Scenario's spec.cluster.name", settings.FlagClusterName, s.ClusterName, info.ClusterName)
	}
	if s.InterruptionQueue == "" {
		s.InterruptionQueue = info.InterruptionQueue
	}
	return nil
}

// ignored describes the parts of a scenario an account does not use.
func ignored(run *scenario.Run) []string {
	var out []string
	if n := len(run.Events); n > 0 {
		out = append(out, fmt.Sprintf("%d events (spec.events)", n))
	}
	kinds := map[string]int{}
	for _, o := range run.Objects {
		if o.GVK.Kind != "Namespace" {
			kinds[o.GVK.Kind]++
		}
	}
	if len(kinds) > 0 {
		var parts []string
		for k, n := range kinds {
			parts = append(parts, fmt.Sprintf("%d %s", n, k))
		}
		sort.Strings(parts)
		out = append(out, "manifests ("+strings.Join(parts, ", ")+"): apply them to the cluster")
	}
	return out
}

func withName(tags map[string]string, name string) map[string]string {
	out := map[string]string{"Name": name}
	for k, v := range tags {
		out[k] = v
	}
	return out
}
