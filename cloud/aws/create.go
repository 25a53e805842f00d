package aws

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/karpenter/v1alpha1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/drift"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/launch"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/userdata"
	"github.com/stevedore-autoscaler/stevedore/cloud/offerings"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/scheduling/requirements"
	"github.com/stevedore-autoscaler/stevedore/scheduling/resources"
)

// Create implements cloud.CloudProvider.
func (p *Provider) Create(ctx context.Context, nodeClaim *karpv1.NodeClaim) (*karpv1.NodeClaim, error) {
	ref := nodeClaim.Spec.NodeClassRef
	if ref == nil {
		return nil, cloud.NewCreateError(nil, cloud.ReasonNodeClassNotFound, fmt.Sprintf("NodeClaim %q has no nodeClassRef", nodeClaim.Name))
	}
	nc, err := p.getNodeClass(ctx, ref.Name)
	if err != nil {
		return nil, cloud.NewCreateError(err, cloud.ReasonLaunchFailed, "could not read the EC2NodeClass; retrying")
	}
	if nc == nil || nc.DeletionTimestamp != nil {
		return nil, cloud.NewInsufficientCapacityError(fmt.Errorf("EC2NodeClass %q does not exist or is being deleted: create it, or point the NodePool's nodeClassRef at an existing one", ref.Name))
	}
	if err := checkReady(nc); err != nil {
		return nil, err
	}
	reqs, err := nodeClaimRequirements(nodeClaim)
	if err != nil {
		return nil, cloud.NewCreateError(err, cloud.ReasonLaunchFailed, fmt.Sprintf("NodeClaim %q has invalid requirements", nodeClaim.Name))
	}
	types, snap, err := p.resolve(ctx, nc)
	if err != nil {
		return nil, cloud.NewCreateError(err, cloud.ReasonLaunchFailed, "could not describe instance types; retrying")
	}
	byName := make(map[string]*resolvedType, len(types))
	packers := make([]*packer.InstanceType, 0, len(types))
	requests := resources.NewVector(nodeClaim.Spec.Resources.Requests)
	// A NodeOverlay's capacity added extended resources that the instance
	// data does not list (a device plugin advertises them on the node): the
	// NodeClaim's types were chosen with them, so they are not held against
	// the types here.
	overlaid := nodeClaim.Annotations[v1alpha1.AnnotationCapacityOverlayApplied] == "true"
	for _, t := range types {
		need := requests
		if overlaid {
			need = withoutUnlisted(nodeClaim.Spec.Resources.Requests, t.packer.Allocatable)
		}
		if !need.Fits(t.packer.Allocatable) {
			continue
		}
		byName[t.packer.Name] = t
		packers = append(packers, t.packer)
	}
	var cands []launch.Candidate
	for _, it := range offerings.Compatible(packers, reqs) {
		for _, o := range it.Offerings {
			c := launch.Candidate{InstanceType: it.Name, Zone: o.Zone, CapacityType: o.CapacityType, Price: o.PricePerHour}
			if o.CapacityType == wellknown.CapacityTypeReserved {
				cr, ok := reservationOf(nc, o.ReservationID)
				if !ok || !reservationAllowed(reqs, cr) {
					continue
				}
				c.Reservation = &launch.Reservation{ID: cr.ID, Type: string(cr.ReservationType), Interruptible: cr.Interruptible}
				if c.Reservation.Type == "" {
					c.Reservation.Type = launch.CapacityReservationTypeDefault
				}
			}
			cands = append(cands, c)
		}
	}
	subnets := p.subnets(ctx, nc)
	sel, err := launch.Select(cands, subnets, p.ice, 0)
	if err != nil {
		return nil, cloud.NewInsufficientCapacityError(fmt.Errorf(
			"no offering of EC2NodeClass %q meets the requirements of NodeClaim %q and is available (%d candidate offerings, all in zones without a subnet or recently out of capacity)",
			nc.Name, nodeClaim.Name, len(cands)))
	}

	placement, err := p.launchPlacement(ctx, nc, nodeClaim)
	if err != nil {
		return nil, cloud.NewCreateError(err, cloud.ReasonLaunchFailed, "could not resolve the placement group")
	}
	tmpls, err := p.templatesFor(nodeClaim, nc, sel, byName, placement)
	var se *userdata.SizeError
	if errors.As(err, &se) {
		// The node class's own check passed (it is Ready), so what tipped
		// it over are the NodeClaim's labels and taints, which it cannot
		// know.
		return nil, cloud.NewCreateError(nil, cloud.ReasonUserDataTooLarge, fmt.Sprintf(
			"EC2NodeClass %q, for NodeClaim %q (whose labels and taints the user data carries): %s; %s", nc.Name, nodeClaim.Name, se.Message(), se.Fix()))
	}
	if err != nil {
		return nil, cloud.NewCreateError(err, cloud.ReasonLaunchFailed, "could not build the launch template")
	}
	ownership := launch.OwnershipTags(p.cluster.Name, nc)
	spec := launch.FleetSpec{
		Selection: sel,
		Tags:      launch.LaunchTags(ownership, nodeClaim.Labels[wellknown.LabelNodePool], nodeClaim.Name),
		Context:   nc.Spec.Context,
	}
	var launched launch.Launched
	for attempt := 0; ; attempt++ {
		for _, t := range tmpls {
			p.markTemplateUsed(t.Name)
			if err := p.templates.Ensure(ctx, t); err != nil {
				return nil, launch.ClassifyError(launch.ErrorCode(err), launch.ErrorMessage(err), nc.Status.InstanceProfile, err)
			}
		}
		out, err := p.ec2.CreateFleet(ctx, launch.BuildCreateFleet(spec))
		if err != nil {
			err = launch.ClassifyError(launch.ErrorCode(err), launch.ErrorMessage(err), nc.Status.InstanceProfile, err)
			if sel.CapacityType == wellknown.CapacityTypeReserved && launch.IsICECode(launch.ErrorCode(err)) {
				for _, o := range sel.Overrides {
					p.reservations.MarkUnavailable(o.Reservation.ID)
				}
			}
		} else {
			// A reservation that ran out takes nothing more until it is
			// described again; the NodeClaim is launched again, from the
			// offerings left (Karpenter's fallback from reserved capacity).
			p.reportLaunchFailures(nc, launch.Failures(out, spec))
			for _, id := range launch.ExhaustedReservations(out, spec) {
				p.reservations.MarkUnavailable(id)
			}
			launched, err = launch.Interpret(out, spec, p.ice, nc.Status.InstanceProfile)
		}
		if err != nil && errors.Is(err, launch.ErrTemplateNotFound) && attempt == 0 {
			for _, t := range tmpls {
				p.templates.Invalidate(t.Name)
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		break
	}
	t := byName[launched.InstanceType]
	if t == nil {
		return nil, cloud.NewCreateError(nil, cloud.ReasonLaunchFailed, fmt.Sprintf("CreateFleet launched %s (%s), which was not requested", launched.InstanceID, launched.InstanceType))
	}
	if launched.Reservation != nil {
		p.reservations.MarkLaunched(launched.Reservation.ID)
	}
	out := p.launchedNodeClaim(nodeClaim, nc, t, launched, snap.region)
	for k, v := range placementLabels(placement) {
		out.Labels[k] = v
	}
	return out, nil
}

// nodeClaimRequirements returns the NodeClaim's requirements.
func nodeClaimRequirements(nc *karpv1.NodeClaim) (requirements.Requirements, error) {
	nsrs := make([]corev1.NodeSelectorRequirement, 0, len(nc.Spec.Requirements))
	for _, r := range nc.Spec.Requirements {
		nsrs = append(nsrs, corev1.NodeSelectorRequirement{Key: r.Key, Operator: r.Operator, Values: r.Values})
	}
	return requirements.FromNodeSelectorRequirements(nsrs)
}

// subnets returns the node class's subnets with their free addresses. When
// they cannot be described the status order (most free first) stands in.
func (p *Provider) subnets(ctx context.Context, nc *awsv1.EC2NodeClass) []launch.Subnet {
	out := make([]launch.Subnet, 0, len(nc.Status.Subnets))
	ids := make([]string, 0, len(nc.Status.Subnets))
	for i, s := range nc.Status.Subnets {
		out = append(out, launch.Subnet{ID: s.ID, Zone: s.Zone, AvailableIPs: int32(len(nc.Status.Subnets) - i)})
		ids = append(ids, s.ID)
	}
	if len(ids) == 0 {
		return out
	}
	desc, err := p.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: ids})
	if err != nil {
		return out
	}
	free := map[string]int32{}
	for _, s := range desc.Subnets {
		free[deref(s.SubnetId)] = deref(s.AvailableIpAddressCount)
	}
	for i := range out {
		if n, ok := free[out[i].ID]; ok {
			out[i].AvailableIPs = n
		}
	}
	return out
}

// templatesFor resolves one launch template per (image, max pods) group of
// the selected instance types and fills in the overrides' templates.
func (p *Provider) templatesFor(nodeClaim *karpv1.NodeClaim, nc *awsv1.EC2NodeClass, sel launch.Selection, byName map[string]*resolvedType, placement launch.Placement) ([]*launch.Template, error) {
	type group struct {
		image       string
		maxPods     int32
		reservation launch.Reservation
	}
	labels := userDataLabels(nodeClaim)
	taints := append(append([]corev1.Taint(nil), nodeClaim.Spec.Taints...), nodeClaim.Spec.StartupTaints...)
	built := map[group]*launch.Template{}
	var out []*launch.Template
	for i := range sel.Overrides {
		o := &sel.Overrides[i]
		t := byName[o.InstanceType]
		pods := t.it.Capacity[corev1.ResourcePods]
		g := group{image: t.imageID, maxPods: int32(pods.Value())}
		if o.Reservation != nil {
			// One template per reservation: the template names the
			// reservation it launches into.
			g.reservation = *o.Reservation
		}
		tmpl, ok := built[g]
		if !ok {
			var err error
			tmpl, err = p.launchTemplateFor(nc, g.image, g.maxPods, labels, taints, placement, o.Reservation, p.reservedCapacity(),
				nodeClaim.Labels[wellknown.LabelNodePool], sel.CapacityType)
			if err != nil {
				return nil, err
			}
			built[g] = tmpl
			out = append(out, tmpl)
		}
		o.Template, o.ImageID = tmpl.Name, tmpl.ImageID
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (p *Provider) launchTemplateFor(nc *awsv1.EC2NodeClass, image string, maxPods int32, labels map[string]string, taints []corev1.Taint, placement launch.Placement, reservation *launch.Reservation, reservedCapacity bool, nodePool, capacityType string) (*launch.Template, error) {
	if image == "" {
		return nil, fmt.Errorf("EC2NodeClass %q has no image for the instance type", nc.Name)
	}
	c := p.cluster
	return launch.BuildTemplate(launch.TemplateParams{
		ClusterName: c.Name, ClusterEndpoint: c.Endpoint, CABundle: c.CABundle, ClusterCIDR: c.ServiceCIDR, ClusterDNS: c.DNS,
		NodeClass: nc, ImageID: image, MaxPods: maxPods, Labels: labels, Taints: taints, Placement: placement,
		Reservation: reservation, OptOutOfReservations: reservedCapacity && reservation == nil,
		NodePool: nodePool, CapacityType: capacityType, UserData: p.userData,
	})
}

// reservationAllowed reports whether the NodeClaim's requirements allow
// launching into the reservation: its ID, type and interruptibility labels.
func reservationAllowed(reqs requirements.Requirements, cr awsv1.CapacityReservation) bool {
	for k, v := range reservationLabels(cr) {
		if r, ok := reqs.Get(k); ok && !r.Allows(v) {
			return false
		}
	}
	return true
}

// userDataLabels are the labels the kubelet registers with: the NodeClaim's
// own labels and single-valued requirements, without the labels that differ
// between the instance types of one launch (they would split the launch
// template per type; the registration controller sets them instead).
func userDataLabels(nc *karpv1.NodeClaim) map[string]string {
	out := map[string]string{}
	for k, v := range nc.Labels {
		if !wellknown.IsWellKnownLabel(k) {
			out[k] = v
		}
	}
	for _, r := range nc.Spec.Requirements {
		if r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 && !wellknown.IsWellKnownLabel(r.Key) {
			out[r.Key] = r.Values[0]
		}
	}
	if np, ok := nc.Labels[wellknown.LabelNodePool]; ok {
		out[wellknown.LabelNodePool] = np
	}
	return out
}

// launchedNodeClaim returns a copy of the NodeClaim with what the launch
// resolved.
func (p *Provider) launchedNodeClaim(in *karpv1.NodeClaim, nc *awsv1.EC2NodeClass, t *resolvedType, l launch.Launched, region string) *karpv1.NodeClaim {
	out := in.DeepCopy()
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	for _, r := range in.Spec.Requirements {
		if r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
			out.Labels[r.Key] = r.Values[0]
		}
	}
	for k, v := range t.it.Labels {
		out.Labels[k] = v
	}
	out.Labels[wellknown.LabelInstanceType] = l.InstanceType
	out.Labels[wellknown.LabelTopologyZone] = l.Zone
	out.Labels[wellknown.LabelCapacityType] = l.CapacityType
	if l.Reservation != nil {
		if cr, ok := reservationOf(nc, l.Reservation.ID); ok {
			maps.Copy(out.Labels, reservationLabels(cr))
		}
	}
	out.Labels[wellknown.LabelInstanceTenancy] = wellknown.TenancyDefault
	if region != "" {
		out.Labels[wellknown.LabelTopologyRegion] = region
	}
	for _, s := range nc.Status.Subnets {
		if s.Zone == l.Zone && s.ZoneID != "" {
			out.Labels[wellknown.LabelTopologyZoneID] = s.ZoneID
			break
		}
	}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	hash, version := nc.Annotations[wellknown.AnnotationEC2NodeClassHash], nc.Annotations[wellknown.AnnotationEC2NodeClassHashVersion]
	if hash == "" {
		hash, version = drift.Hash(nc, p.cluster.CABundle), drift.HashVersion
	}
	out.Annotations[wellknown.AnnotationEC2NodeClassHash] = hash
	out.Annotations[wellknown.AnnotationEC2NodeClassHashVersion] = version
	if nc.Status.InstanceProfile != "" {
		out.Annotations[wellknown.AnnotationInstanceProfileName] = nc.Status.InstanceProfile
	}
	out.Status.ProviderID = providerID(l.Zone, l.InstanceID)
	out.Status.ImageID = l.ImageID
	out.Status.Capacity = t.it.Capacity.DeepCopy()
	out.Status.Allocatable = t.it.Allocatable.DeepCopy()
	if out.Annotations[v1alpha1.AnnotationCapacityOverlayApplied] == "true" {
		// The node will have at least what the NodeClaim requests of the
		// extended resources an overlay added: record that much, so that the
		// pods it was made for count as fitting on it until it registers.
		for name, q := range out.Spec.Resources.Requests {
			if _, listed := out.Status.Capacity[name]; listed || isStandardResource(name) {
				continue
			}
			if out.Status.Capacity == nil {
				out.Status.Capacity = corev1.ResourceList{}
			}
			if out.Status.Allocatable == nil {
				out.Status.Allocatable = corev1.ResourceList{}
			}
			out.Status.Capacity[name] = q.DeepCopy()
			out.Status.Allocatable[name] = q.DeepCopy()
		}
	}
	return out
}

// ReportLaunchFailuresTo implements cloud.LaunchFailureReporter: every
// offering a CreateFleet answer reports as failed is handed to report.
func (p *Provider) ReportLaunchFailuresTo(report func(cloud.LaunchFailure)) {
	p.launchFailures.Store(&report)
}

// reportLaunchFailures hands fs to the reporter, each with the zone ID of
// its zone as the node class's subnets record it.
func (p *Provider) reportLaunchFailures(nc *awsv1.EC2NodeClass, fs []launch.Failure) {
	report := p.launchFailures.Load()
	if report == nil || len(fs) == 0 {
		return
	}
	zoneIDs := map[string]string{}
	for _, s := range nc.Status.Subnets {
		zoneIDs[s.Zone] = s.ZoneID
	}
	for _, f := range fs {
		(*report)(cloud.LaunchFailure{Zone: f.Zone, ZoneID: zoneIDs[f.Zone], CapacityType: f.CapacityType, Reason: f.Code})
	}
}

// withoutUnlisted returns requests without the extended resources that
// allocatable does not list, as a vector.
func withoutUnlisted(requests corev1.ResourceList, allocatable resources.Vector) resources.Vector {
	kept := make(corev1.ResourceList, len(requests))
	for name, q := range requests {
		if !isStandardResource(name) && allocatable.Get(name) == 0 {
			continue
		}
		kept[name] = q
	}
	return resources.NewVector(kept)
}

// isStandardResource reports whether name is one every instance type has:
// an overlay cannot add those.
func isStandardResource(name corev1.ResourceName) bool {
	switch name {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, corev1.ResourcePods:
		return true
	}
	return false
}
