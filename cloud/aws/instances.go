package aws

import (
	"context"
	"fmt"
	"maps"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/drift"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/instancetype"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/launch"
)

// ownedStates are the instance states List reports.
var ownedStates = []string{"pending", "running", "stopping", "stopped", "shutting-down"}

// describeInstance returns the instance, or a cloud.NodeClaimNotFoundError
// when EC2 does not know it or it has terminated.
func (p *Provider) describeInstance(ctx context.Context, id string) (ec2types.Instance, error) {
	out, err := p.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		if launch.ErrorCode(err) == "InvalidInstanceID.NotFound" {
			return ec2types.Instance{}, cloud.NewNodeClaimNotFoundError(fmt.Errorf("instance %s: %w", id, err))
		}
		return ec2types.Instance{}, fmt.Errorf("describing instance %s: %w", id, err)
	}
	for _, r := range out.Reservations {
		for _, inst := range r.Instances {
			if deref(inst.InstanceId) != id {
				continue
			}
			if inst.State != nil && inst.State.Name == ec2types.InstanceStateNameTerminated {
				return ec2types.Instance{}, cloud.NewNodeClaimNotFoundError(fmt.Errorf("instance %s is terminated", id))
			}
			return inst, nil
		}
	}
	return ec2types.Instance{}, cloud.NewNodeClaimNotFoundError(fmt.Errorf("instance %s does not exist", id))
}

// Delete implements cloud.CloudProvider. An instance already shutting down is
// left to finish; once it has terminated (or if it never existed) Delete
// returns a cloud.NodeClaimNotFoundError.
func (p *Provider) Delete(ctx context.Context, nodeClaim *karpv1.NodeClaim) error {
	id, err := parseProviderID(nodeClaim.Status.ProviderID)
	if err != nil {
		return cloud.NewNodeClaimNotFoundError(err)
	}
	inst, err := p.describeInstance(ctx, id)
	if err != nil {
		return err
	}
	if inst.State != nil && inst.State.Name == ec2types.InstanceStateNameShuttingDown {
		return nil
	}
	if _, err := p.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}}); err != nil {
		if launch.ErrorCode(err) == "InvalidInstanceID.NotFound" {
			return cloud.NewNodeClaimNotFoundError(fmt.Errorf("instance %s: %w", id, err))
		}
		return fmt.Errorf("terminating instance %s: %w", id, err)
	}
	// Its reservation takes an instance more; counted once, on the call
	// that starts the termination (later calls see shutting-down).
	if cr, ok := reservedIn(inst); ok && p.reservedCapacity() {
		p.reservations.MarkTerminated(cr)
	}
	return nil
}

// Get implements cloud.CloudProvider.
func (p *Provider) Get(ctx context.Context, providerID string) (*karpv1.NodeClaim, error) {
	id, err := parseProviderID(providerID)
	if err != nil {
		return nil, cloud.NewNodeClaimNotFoundError(err)
	}
	inst, err := p.describeInstance(ctx, id)
	if err != nil {
		return nil, err
	}
	return p.instanceNodeClaim(inst), nil
}

// List implements cloud.CloudProvider: every instance of this cluster that
// carries stevedore's ownership tags and has not terminated.
func (p *Provider) List(ctx context.Context) ([]*karpv1.NodeClaim, error) {
	in := &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: ptr("tag-key"), Values: []string{wellknown.TagNodePool}},
		{Name: ptr("tag-key"), Values: []string{wellknown.TagEC2NodeClass}},
		{Name: ptr("tag:" + wellknown.TagEKSClusterName), Values: []string{p.cluster.Name}},
		{Name: ptr("instance-state-name"), Values: ownedStates},
	}}
	var out []*karpv1.NodeClaim
	pg := ec2.NewDescribeInstancesPaginator(p.ec2, in)
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing instances: %w", err)
		}
		for _, r := range page.Reservations {
			for _, inst := range r.Instances {
				out = append(out, p.instanceNodeClaim(inst))
			}
		}
	}
	return out, nil
}

// instanceNodeClaim describes an instance as a NodeClaim: its name from the
// nodeclaim tag, the labels EC2 can tell, the provider and image IDs, and a
// deletion timestamp once it is shutting down.
func (p *Provider) instanceNodeClaim(inst ec2types.Instance) *karpv1.NodeClaim {
	tags := tagMap(inst.Tags)
	zone := ""
	if inst.Placement != nil {
		zone = deref(inst.Placement.AvailabilityZone)
	}
	ct := wellknown.CapacityTypeOnDemand
	if inst.InstanceLifecycle == ec2types.InstanceLifecycleTypeSpot {
		ct = wellknown.CapacityTypeSpot
	}
	reservation, reserved := reservedIn(inst)
	if reserved && p.reservedCapacity() {
		ct = wellknown.CapacityTypeReserved
	}
	p.mu.Lock()
	labels := maps.Clone(p.typeLabelsLocked(string(inst.InstanceType), instancetype.DefaultOptions()))
	region := p.region
	p.mu.Unlock()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[wellknown.LabelInstanceType] = string(inst.InstanceType)
	labels[wellknown.LabelTopologyZone] = zone
	labels[wellknown.LabelCapacityType] = ct
	if region != "" {
		labels[wellknown.LabelTopologyRegion] = region
	}
	if ct == wellknown.CapacityTypeReserved {
		labels[wellknown.LabelCapacityReservationID] = reservation
	}
	if np, ok := tags[wellknown.TagNodePool]; ok {
		labels[wellknown.LabelNodePool] = np
	}
	if nc, ok := tags[wellknown.TagEC2NodeClass]; ok {
		labels[wellknown.LabelEC2NodeClass] = nc
	}
	out := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: tags[wellknown.TagNodeClaim], Labels: labels},
		Status: karpv1.NodeClaimStatus{
			ProviderID: providerID(zone, deref(inst.InstanceId)),
			ImageID:    deref(inst.ImageId),
		},
	}
	if inst.LaunchTime != nil {
		out.CreationTimestamp = metav1.NewTime(*inst.LaunchTime)
	}
	if inst.State != nil && (inst.State.Name == ec2types.InstanceStateNameShuttingDown || inst.State.Name == ec2types.InstanceStateNameTerminated) {
		now := metav1.NewTime(p.clk.Now())
		out.DeletionTimestamp = &now
	}
	return out
}

// reservedIn returns the capacity reservation an instance was launched into
// by targeting it. As in Karpenter, only such an instance counts as
// reserved: one that landed in an open reservation without asking for it is
// an on-demand instance.
func reservedIn(inst ec2types.Instance) (string, bool) {
	s := inst.CapacityReservationSpecification
	if inst.CapacityReservationId == nil || s == nil || s.CapacityReservationPreference != ec2types.CapacityReservationPreferenceCapacityReservationsOnly {
		return "", false
	}
	return *inst.CapacityReservationId, true
}

// typeLabelsLocked returns instancetype.Labels of a described instance
// type with the given options, or nil when the type is not described. The
// labels read only the options' AMI family and region, so they are computed
// once per type, family, region and description: List and IsDrifted ask for
// the labels of every instance, and most instances are of a few types. The
// map is shared and must not be modified. The caller holds p.mu.
func (p *Provider) typeLabelsLocked(name string, opts instancetype.Options) map[string]string {
	c := &p.cache
	i, ok := c.byName[name]
	if !ok {
		return nil
	}
	if c.labelsGen != c.typesGen || c.labels == nil {
		c.labels, c.labelsGen = map[labelsKey]map[string]string{}, c.typesGen
	}
	k := labelsKey{name: name, family: opts.AMIFamily, region: opts.Region}
	l, ok := c.labels[k]
	if !ok {
		l = instancetype.Labels(c.types[i], opts)
		c.labels[k] = l
	}
	return l
}

// labelsKey is what instancetype.Labels of a described type depends on.
type labelsKey struct {
	name   string
	family awsv1.AMIFamily
	region string
}

// IsDrifted implements cloud.CloudProvider with drift.Check on the instance's
// image, subnet and security groups. A NodeClaim whose node class is gone is
// not drifted here (it cannot be replaced by anything).
func (p *Provider) IsDrifted(ctx context.Context, nodeClaim *karpv1.NodeClaim) (cloud.DriftReason, error) {
	if nodeClaim.Spec.NodeClassRef == nil {
		return cloud.NoDrift, nil
	}
	nc, err := p.getNodeClass(ctx, nodeClaim.Spec.NodeClassRef.Name)
	if err != nil || nc == nil {
		return cloud.NoDrift, err
	}
	id, err := parseProviderID(nodeClaim.Status.ProviderID)
	if err != nil {
		return cloud.NoDrift, err
	}
	inst, err := p.describeInstance(ctx, id)
	if err != nil {
		return cloud.NoDrift, err
	}
	sgs := make([]string, 0, len(inst.SecurityGroups))
	for _, g := range inst.SecurityGroups {
		sgs = append(sgs, deref(g.GroupId))
	}
	reservation, reserved := reservedIn(inst)
	if !reserved || !p.reservedCapacity() {
		reservation = ""
	}
	snap, err := p.refresh(ctx)
	if err != nil {
		return cloud.NoDrift, err
	}
	// The labels are shared; the drift checks only read them.
	p.mu.Lock()
	typeLabels := p.typeLabelsLocked(string(inst.InstanceType), p.typeOptions(nc, snap.region))
	p.mu.Unlock()
	pg, err := p.placementGroup(ctx, nc)
	if err != nil {
		return cloud.NoDrift, err
	}
	var pgID string
	if pg != nil {
		pgID = pg.ID
	}
	return drift.Check(drift.Input{
		PlacementGroupID: pgID,
		NodeClaim:        nodeClaim,
		NodeClass:        nc,
		Instance: drift.Instance{
			ImageID: deref(inst.ImageId), SubnetID: deref(inst.SubnetId), SecurityGroupIDs: sgs,
			CapacityReservationID: reservation,
		},
		InstanceTypeLabels: typeLabels,
	})
}
