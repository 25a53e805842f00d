package kubelet

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/catalog"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
)

// ProviderID returns the provider ID a kubelet on the instance reports:
// aws:///<zone>/<instance-id>.
func ProviderID(zone, instanceID string) string { return "aws:///" + zone + "/" + instanceID }

// InstanceID returns the instance ID of an aws:///<zone>/<instance-id>
// provider ID, or "".
func InstanceID(providerID string) string {
	if !strings.HasPrefix(providerID, "aws://") {
		return ""
	}
	id := providerID[strings.LastIndex(providerID, "/")+1:]
	if !strings.HasPrefix(id, "i-") {
		return ""
	}
	return id
}

// InCluster reports whether the instance carries the tags of the cluster
// (eks:eks-cluster-name, or kubernetes.io/cluster/<name>).
func InCluster(info fake.InstanceInfo, clusterName string) bool {
	if info.Tags[wellknown.TagEKSClusterName] == clusterName {
		return true
	}
	_, ok := info.Tags[wellknown.TagClusterPrefix+clusterName]
	return ok
}

// NodeFor returns the Node a kubelet on the instance registers: the name,
// provider ID, labels, capacity and allocatable a kubelet on that instance
// reports, the karpenter.sh/unregistered taint its boot configuration adds,
// and a NotReady condition stamped with the instance's launch time.
func NodeFor(info fake.InstanceInfo) (*corev1.Node, error) {
	it, ok := catalog.Lookup(info.InstanceType)
	if !ok {
		return nil, fmt.Errorf("instance %s has type %s, which the catalog does not know", info.ID, info.InstanceType)
	}
	name := info.PrivateDNSName
	if name == "" {
		return nil, fmt.Errorf("instance %s has no private DNS name", info.ID)
	}
	os := it.Labels[wellknown.LabelOS]
	if os == "" {
		os = wellknown.OSLinux
	}
	labels := map[string]string{
		wellknown.LabelInstanceType: info.InstanceType,
		wellknown.LabelTopologyZone: info.Zone,
		wellknown.LabelArch:         it.Arch(),
		wellknown.LabelOS:           os,
		wellknown.LabelHostname:     name,
	}
	now := metav1.NewTime(info.LaunchTime)
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: corev1.NodeSpec{
			ProviderID: ProviderID(info.Zone, info.ID),
			Taints:     []corev1.Taint{wellknown.UnregisteredTaint()},
		},
		Status: corev1.NodeStatus{
			Capacity:    it.Capacity.DeepCopy(),
			Allocatable: it.Allocatable.DeepCopy(),
			Conditions: []corev1.NodeCondition{{
				Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady",
				Message:           "container runtime network not ready",
				LastHeartbeatTime: now, LastTransitionTime: now,
			}},
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: info.PrivateIP},
				{Type: corev1.NodeInternalDNS, Address: name},
				{Type: corev1.NodeHostName, Address: name},
			},
			NodeInfo: corev1.NodeSystemInfo{Architecture: it.Arch(), OperatingSystem: os},
		},
	}
	return node, nil
}
