package kubelet

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

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
// labels and taints include those its user data gives the kubelet
// (--node-labels and --register-with-taints, NodeConfig's registerWithTaints,
// or Bottlerocket's node-labels and node-taints tables), as a real kubelet
// registers with them: an admission policy on Node labels then sees what it
// would see on EKS, and a node whose user data says
// karpenter.sh/do-not-sync-taints has its NodeClaim's taints from the start.
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
	// Read once for the labels and the taints; undecodable, it gives none.
	raw, _ := base64.StdEncoding.DecodeString(info.UserData)
	text := string(raw)
	labels := labelsIn(text)
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
			Taints:     registerTaints(taintsIn(text)),
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
	raw, err := base64.StdEncoding.DecodeString(userData)
	if err != nil {
		return map[string]string{}
	}
	return labelsIn(string(raw))
}

// labelsIn is UserDataLabels on decoded user data.
func labelsIn(text string) map[string]string {
	out := map[string]string{}
	for _, value := range flagValues(text, "--node-labels=") {
		for _, kv := range strings.Split(value, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
				out[k] = v
			}
		}
	}
	for _, line := range tomlTable(text, "[settings.kubernetes.node-labels]") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		key := unquoteTOML(strings.TrimSpace(k))
		val, err := strconv.Unquote(strings.TrimSpace(v))
		if err == nil && key != "" {
			out[key] = val
		}
	}
	return out
}

// flagValues returns the value of every occurrence of a kubelet flag (given
// with its "="), quoted ("--flag=\"a,b\"") or bare up to the next blank or quote.
func flagValues(text, flag string) []string {
	var out []string
	for rest := text; ; {
		i := strings.Index(rest, flag)
		if i < 0 {
			return out
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
		out = append(out, value)
	}
}

// tomlTable returns the trimmed, non-empty lines of a TOML table of
// Bottlerocket settings, up to the next table header.
func tomlTable(text, header string) []string {
	i := strings.Index(text, header)
	if i < 0 {
		return nil
	}
	var out []string
	for _, line := range strings.Split(text[i+len(header):], "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			break
		}
		if line != "" {
			out = append(out, line)
		}
	}
	return out
}

// unquoteTOML returns a TOML key without its quotes: keys may be bare (team)
// or quoted ("karpenter.sh/nodepool").
func unquoteTOML(key string) string {
	if unquoted, err := strconv.Unquote(key); err == nil {
		return unquoted
	}
	return key
}

// registerTaints returns the taints a Node registers with: those of its user
// data, and the karpenter.sh/unregistered taint in any case, which every
// stevedore boot configuration adds.
func registerTaints(fromUserData []corev1.Taint) []corev1.Taint {
	unregistered := wellknown.UnregisteredTaint()
	out := []corev1.Taint{unregistered}
	for _, t := range fromUserData {
		if !slices.ContainsFunc(out, func(o corev1.Taint) bool { return o.MatchTaint(&t) }) {
			out = append(out, t)
		}
	}
	return out
}

// UserDataTaints returns the taints that an instance's user data (base64, as
// EC2 holds it) tells its kubelet to register with: AL2's
// --register-with-taints flag, the registerWithTaints list of AL2023's
// NodeConfig kubelet config, or Bottlerocket's [settings.kubernetes.node-taints]
// table. As with labels, what it cannot read gives no taints.
func UserDataTaints(userData string) []corev1.Taint {
	raw, err := base64.StdEncoding.DecodeString(userData)
	if err != nil {
		return nil
	}
	return taintsIn(string(raw))
}

// taintsIn is UserDataTaints on decoded user data.
func taintsIn(text string) []corev1.Taint {
	var out []corev1.Taint
	for _, value := range flagValues(text, "--register-with-taints=") {
		for _, s := range strings.Split(value, ",") {
			if t, ok := parseTaint(s); ok {
				out = append(out, t)
			}
		}
	}
	out = append(out, nodeConfigTaints(text)...)
	for _, line := range tomlTable(text, "[settings.kubernetes.node-taints]") {
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		k := unquoteTOML(strings.TrimSpace(key))
		var values []string
		if err := json.Unmarshal([]byte(strings.TrimSpace(value)), &values); err != nil {
			continue
		}
		for _, v := range values {
			if t, ok := parseTaint(k + "=" + v); ok {
				out = append(out, t)
			}
		}
	}
	return out
}

// parseTaint reads a taint in the kubelet's flag form: key=value:Effect or
// key:Effect.
func parseTaint(s string) (corev1.Taint, bool) {
	s = strings.TrimSpace(s)
	i := strings.LastIndexByte(s, ':')
	if i <= 0 {
		return corev1.Taint{}, false
	}
	kv, effect := s[:i], corev1.TaintEffect(s[i+1:])
	switch effect {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
	default:
		return corev1.Taint{}, false
	}
	k, v, _ := strings.Cut(kv, "=")
	if k == "" {
		return corev1.Taint{}, false
	}
	return corev1.Taint{Key: k, Value: v, Effect: effect}, true
}

// nodeConfigTaints reads the registerWithTaints list of a NodeConfig: the
// lines under the key that are indented deeper or start a list item, parsed
// as YAML.
func nodeConfigTaints(text string) []corev1.Taint {
	const key = "registerWithTaints:"
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		trimmed := strings.TrimSpace(line)
		if trimmed != key {
			continue
		}
		indent := len(line) - len(strings.TrimLeft(line, " "))
		var block []string
		for _, next := range lines[i+1:] {
			nextIndent := len(next) - len(strings.TrimLeft(next, " "))
			body := strings.TrimSpace(next)
			if body == "" || nextIndent < indent || (nextIndent == indent && !strings.HasPrefix(body, "-")) {
				break
			}
			block = append(block, next[indent:])
		}
		var taints []corev1.Taint
		if err := yaml.Unmarshal([]byte(strings.Join(block, "\n")), &taints); err != nil {
			return nil
		}
		return taints
	}
	return nil
}
