package runner

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/drift"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/launch"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/nodeclass"
	nodepoolhash "github.com/stevedore-autoscaler/stevedore/controllers/nodepool/hash"
	"github.com/stevedore-autoscaler/stevedore/sim/kubelet"
)

// applyObjects creates the scenario's objects at the start.
//
// Objects may come from a snapshot of a running cluster (stevedore
// snapshot), as they were before the run:
//
//   - an object keeps its creation time when it is before the start, so
//     that ages (expireAfter, consolidateAfter) count from when it was
//     really created;
//   - owner references name their owners by the UIDs the cluster gave them:
//     each object's recorded UID is mapped to the one the in-memory API
//     gives it, and the references of the objects after it are moved along;
//   - a NodeClaim that was in step with its NodePool and EC2NodeClass (the
//     hash annotations it was launched with equal theirs) stays in step:
//     it takes the hashes the simulation computes for them, which may
//     differ from the cluster's for reasons that are no drift (the
//     simulated cluster's CA bundle, which the EC2NodeClass hash covers);
//     one that was out of step stays drifted;
//   - a NodeClaim with a provider ID has an instance: it is added to the
//     in-memory EC2 as running, with the tags a launch gives it, the node
//     name as its private DNS name (which is how its kubelet finds it) and
//     the NodeClaim's creation as its launch time, and it is billed from
//     the start of the run.
func (r *Runner) applyObjects() error {
	uids := map[types.UID]types.UID{}
	classes := map[string]*awsv1.EC2NodeClass{}
	pools := map[string]*karpv1.NodePool{}
	networks := map[string]*classNetwork{}
	for _, o := range r.run.Objects {
		co := o.Object.DeepCopyObject().(client.Object)
		recorded := co.GetUID()
		moveOwnerReferences(co, uids)
		switch v := co.(type) {
		case *awsv1.EC2NodeClass:
			classes[v.Name] = v
		case *karpv1.NodePool:
			pools[v.Name] = v
		case *karpv1.NodeClaim:
			class := classes[v.Spec.NodeClassRef.Name]
			r.keepInStep(v, pools[v.Labels[wellknown.LabelNodePool]], class)
			var net *classNetwork
			if class != nil {
				if net = networks[class.Name]; net == nil {
					var err error
					if net, err = r.networkOf(class); err != nil {
						return fmt.Errorf("%s: EC2NodeClass %s: %w", o.Source, class.Name, err)
					}
					networks[class.Name] = net
				}
			}
			if err := r.restoreInstance(v, class, net); err != nil {
				return fmt.Errorf("%s: NodeClaim %s: %w", o.Source, v.Name, err)
			}
		}
		if err := r.api.Restore(r.ctx, co); err != nil {
			return fmt.Errorf("%s: applying %s %s: %w", o.Source, o.GVK.Kind, objectName(co), err)
		}
		if recorded != "" {
			uids[recorded] = co.GetUID()
		}
		switch v := co.(type) {
		case *karpv1.NodeClaim:
			r.rec.ExistingInstance(v)
		case *corev1.Pod:
			r.rec.ExistingPod(v)
		}
	}
	return nil
}

// keepInStep gives a NodeClaim that was in step with its NodePool and
// EC2NodeClass the hashes the simulation computes for them.
func (r *Runner) keepInStep(nc *karpv1.NodeClaim, pool *karpv1.NodePool, class *awsv1.EC2NodeClass) {
	if pool != nil && inStep(nc, pool, wellknown.AnnotationNodePoolHash, wellknown.AnnotationNodePoolHashVersion, wellknown.NodePoolHashVersion) {
		nc.Annotations[wellknown.AnnotationNodePoolHash] = nodepoolhash.Hash(pool)
	}
	if class != nil && inStep(nc, class, wellknown.AnnotationEC2NodeClassHash, wellknown.AnnotationEC2NodeClassHashVersion, drift.HashVersion) {
		nc.Annotations[wellknown.AnnotationEC2NodeClassHash] = drift.Hash(class, r.world.cluster.CertificateAuthority)
	}
}

// inStep reports whether the NodeClaim and its owner carry the same hash,
// of the current version.
func inStep(nc *karpv1.NodeClaim, owner client.Object, hashKey, versionKey, version string) bool {
	a, b := nc.GetAnnotations(), owner.GetAnnotations()
	return a[versionKey] == version && b[versionKey] == version && a[hashKey] != "" && a[hashKey] == b[hashKey]
}

// moveOwnerReferences points owner references recorded with an owner's old
// UID at the UID the owner has now. References to owners not in the
// scenario stay as they are (the garbage collector does not run in the
// simulator).
func moveOwnerReferences(o client.Object, uids map[types.UID]types.UID) {
	refs := o.GetOwnerReferences()
	moved := false
	for i := range refs {
		if now, ok := uids[refs[i].UID]; ok {
			refs[i].UID = now
			moved = true
		}
	}
	if moved {
		o.SetOwnerReferences(refs)
	}
}

// classNetwork is what a node class selects now: its subnets and the IDs
// of its security groups.
type classNetwork struct {
	subnets []awsv1.Subnet
	groups  []string
}

// networkOf resolves the network a node class selects, as its status would
// list it: the instances restored for its NodeClaims were launched into it,
// or the drift check would have replaced them already.
func (r *Runner) networkOf(class *awsv1.EC2NodeClass) (*classNetwork, error) {
	resolver := nodeclass.NewResolver(r.world.clients, nodeclass.Options{ClusterName: r.run.ClusterName, Region: r.run.AWS.Region, Clock: r.clock})
	subnets, sgs, err := resolver.Network(r.ctx, class)
	if err != nil {
		return nil, err
	}
	net := &classNetwork{subnets: subnets}
	for _, g := range sgs {
		net.groups = append(net.groups, g.ID)
	}
	return net, nil
}

// restoreInstance adds the running instance of a NodeClaim that was
// launched before the run, in the network of its node class (nil when the
// scenario does not have the class). A NodeClaim without a provider ID was
// not launched yet: the controllers launch it.
func (r *Runner) restoreInstance(nc *karpv1.NodeClaim, class *awsv1.EC2NodeClass, net *classNetwork) error {
	id := kubelet.InstanceID(nc.Status.ProviderID)
	if id == "" {
		return nil
	}
	zone := nc.Labels[corev1.LabelTopologyZone]
	ownership := launch.OwnershipTags(r.run.ClusterName, class)
	if class == nil {
		ownership[wellknown.TagEC2NodeClass] = nc.Spec.NodeClassRef.Name
	}
	var subnetID string
	var groups []string
	if net != nil {
		groups = net.groups
		for _, s := range net.subnets {
			if s.Zone == zone {
				subnetID = s.ID
				break
			}
		}
	}
	capacityType := nc.Labels[wellknown.LabelCapacityType]
	if capacityType == wellknown.CapacityTypeReserved {
		// The snapshot does not name the reservation; billed as EC2 bills
		// a reservation, at the on-demand price.
		capacityType = fake.CapacityTypeOnDemand
	}
	_, err := r.aws.AddRunningInstance(fake.RunningInstance{
		ID:             id,
		InstanceType:   nc.Labels[corev1.LabelInstanceTypeStable],
		Zone:           zone,
		SubnetID:       subnetID,
		SecurityGroups: groups,
		CapacityType:   capacityType,
		ImageID:        nc.Status.ImageID,
		PrivateDNSName: nc.Status.NodeName,
		LaunchTime:     nc.CreationTimestamp.Time,
		Tags:           launch.LaunchTags(ownership, nc.Labels[wellknown.LabelNodePool], nc.Name),
	})
	return err
}
