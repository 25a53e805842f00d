package kubelet

import (
	"encoding/base64"
	"fmt"
	"strconv"
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
// and a NotReady condition stamped with the instance's launch time. Its
// labels include those its user data gives the kubelet (--node-labels, or
// Bottlerocket's node-labels table), as a real kubelet registers with them:
// an admission policy on Node labels then sees what it would see on EKS.
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
	labels := UserDataLabels(info.UserData)
	for k, v := range map[string]string{
		wellknown.LabelInstanceType: info.InstanceType,
		wellknown.LabelTopologyZone: info.Zone,
		wellknown.LabelArch:         it.Arch(),
		wellknown.LabelOS:           os,
		wellknown.LabelHostname:     name,
	} {
		// What the kubelet finds out itself wins over its flags.
		labels[k] = v
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

// UserDataLabels returns the node labels that an instance's user data (base64,
// as EC2 holds it) hands its kubelet: the --node-labels flag of AL2023's
// NodeConfig and AL2's bootstrap arguments, or Bottlerocket's
// [settings.kubernetes.node-labels] table. Anything it cannot read gives no
// labels: a kubelet with unreadable flags would not start at all, and the
// simulated one registers without them instead.
func UserDataLabels(userData string) map[string]string {
	out := map[string]string{}
	raw, err := base64.StdEncoding.DecodeString(userData)
	if err != nil {
		return out
	}
	text := string(raw)
	const flag = "--node-labels="
	for rest := text; ; {
		i := strings.Index(rest, flag)
		if i < 0 {
			break
		}
		rest = rest[i+len(flag):]
		value := rest
		if strings.HasPrefix(value, `"`) {
			value = value[1:]
			if j := strings.IndexByte(value, '"'); j >= 0 {
				value = value[:j]
			}
		} else if j := strings.IndexAny(value, " \t\r\n'\""); j >= 0 {
			value = value[:j]
		}
		for _, kv := range strings.Split(value, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
				out[k] = v
			}
		}
	}
	const table = "[settings.kubernetes.node-labels]"
	if i := strings.Index(text, table); i >= 0 {
		for _, line := range strings.Split(text[i+len(table):], "\n") {
			line = strings.TrimSpace(line)
			if strings.HasPrefix(line, "[") {
				break
			}
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				continue
			}
			// TOML keys may be bare (team) or quoted ("karpenter.sh/nodepool").
			key := strings.TrimSpace(k)
			if unquoted, err := strconv.Unquote(key); err == nil {
				key = unquoted
			}
			val, err := strconv.Unquote(strings.TrimSpace(v))
			if err == nil && key != "" {
				out[key] = val
			}
		}
	}
	return out
}
