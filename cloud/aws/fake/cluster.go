package fake

import (
	"fmt"
	"time"
)

// DiscoveryTag is the tag key clusters conventionally use to mark the subnets
// and security groups the autoscaler may use.
const DiscoveryTag = "karpenter.sh/discovery"

// ClusterWorld is what StandardCluster created.
type ClusterWorld struct {
	ClusterName     string
	NodeRole        string
	NodeRoleARN     string
	SubnetIDs       []string
	SecurityGroupID string
	QueueName       string
	QueueURL        string
	// InterruptionRules are the EventBridge rules that target the queue.
	InterruptionRules []string
	// Images maps "<family>/<arch>/<variant>" to the released image ID.
	Images map[string]string
}

// StandardCluster builds the world a correctly set-up cluster has: an EKS
// cluster of k8sVersion, one subnet per zone and a security group tagged
// karpenter.sh/discovery=<name>, a node role with an access entry, an
// interruption queue named after the cluster (300s retention) whose policy
// lets EventBridge deliver to it, the four EventBridge rules that route
// interruption events to it (AddInterruptionRules), and current
// AL2023 (standard, nvidia, neuron) and Bottlerocket (standard, nvidia) images
// for both architectures. Tests then break one piece to reproduce a failure.
func (f *AWS) StandardCluster(name, k8sVersion string) (*ClusterWorld, error) {
	w := &ClusterWorld{ClusterName: name, NodeRole: "KarpenterNodeRole-" + name, QueueName: name, Images: map[string]string{}}
	tags := map[string]string{DiscoveryTag: name, "kubernetes.io/cluster/" + name: "owned"}
	for _, z := range f.Zones() {
		id, err := f.AddSubnet(Subnet{Zone: z, Tags: withName(tags, fmt.Sprintf("%s-private-%s", name, z))})
		if err != nil {
			return nil, err
		}
		w.SubnetIDs = append(w.SubnetIDs, id)
	}
	sg, err := f.AddSecurityGroup(SecurityGroup{Name: "eks-cluster-sg-" + name, Description: "EKS created security group", Tags: withName(tags, "eks-cluster-sg-"+name)})
	if err != nil {
		return nil, err
	}
	w.SecurityGroupID = sg
	if _, err := f.AddCluster(Cluster{Name: name, Version: k8sVersion, SubnetIDs: w.SubnetIDs, SecurityGroupIDs: []string{sg}, ClusterSecurityGroupID: sg}); err != nil {
		return nil, err
	}
	w.NodeRoleARN = f.AddRole(w.NodeRole)
	if err := f.AddAccessEntry(name, w.NodeRoleARN); err != nil {
		return nil, err
	}
	w.QueueURL = f.CreateQueue(w.QueueName, 300*time.Second)
	if err := f.SetQueuePolicy(w.QueueName, QueuePolicyEventBridge(fmt.Sprintf("arn:aws:sqs:%s:%s:%s", f.opts.Region, f.opts.AccountID, w.QueueName))); err != nil {
		return nil, err
	}
	if w.InterruptionRules, err = f.AddInterruptionRules(name, w.QueueName); err != nil {
		return nil, err
	}
	releases := []struct{ family, arch, variant string }{
		{FamilyAL2023, "x86_64", "standard"}, {FamilyAL2023, "arm64", "standard"},
		{FamilyAL2023, "x86_64", "nvidia"}, {FamilyAL2023, "arm64", "nvidia"}, {FamilyAL2023, "x86_64", "neuron"},
		{FamilyBottlerocket, "x86_64", "standard"}, {FamilyBottlerocket, "arm64", "standard"},
		{FamilyBottlerocket, "x86_64", "nvidia"}, {FamilyBottlerocket, "arm64", "nvidia"},
	}
	for _, r := range releases {
		img := Image{}
		if r.family == FamilyBottlerocket {
			img.ReleaseVersion = "v1.40.0"
		}
		got, err := f.ReleaseImage(r.family, k8sVersion, r.arch, r.variant, img)
		if err != nil {
			return nil, err
		}
		w.Images[r.family+"/"+r.arch+"/"+r.variant] = got.ID
	}
	return w, nil
}

func withName(tags map[string]string, name string) map[string]string {
	out := copyMap(tags)
	out["Name"] = name
	return out
}
