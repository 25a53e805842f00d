package userdata

import (
	"bytes"
	"fmt"

	"github.com/BurntSushi/toml"
)

// bottlerocket merges stevedore's settings.kubernetes keys over the user's
// TOML. Cluster identity, max pods, DNS and the kubelet settings of the
// node class replace the user's; labels and taints are merged with
// stevedore's winning per key; every other user setting is kept.
func bottlerocket(opts Options) (string, error) {
	doc := map[string]any{}
	if opts.UserData != nil {
		if _, err := toml.Decode(*opts.UserData, &doc); err != nil {
			return "", fmt.Errorf("Bottlerocket user data is not valid TOML: %w", err)
		}
	}
	settings, err := table(doc, "settings")
	if err != nil {
		return "", err
	}
	k8s, err := table(settings, "kubernetes")
	if err != nil {
		return "", err
	}
	k8s["cluster-name"] = opts.ClusterName
	k8s["api-server"] = opts.ClusterEndpoint
	k8s["cluster-certificate"] = opts.CABundle
	if dns := clusterDNS(opts); len(dns) == 1 {
		k8s["cluster-dns-ip"] = dns[0]
	} else if len(dns) > 1 {
		k8s["cluster-dns-ip"] = dns
	}
	if n := maxPods(opts); n > 0 {
		k8s["max-pods"] = int64(n)
	}
	nodeLabels, err := table(k8s, "node-labels")
	if err != nil {
		return "", err
	}
	for k, v := range labels(opts, true) {
		nodeLabels[k] = v
	}
	nodeTaints, err := table(k8s, "node-taints")
	if err != nil {
		return "", err
	}
	byKey := map[string][]any{}
	for _, t := range taints(opts) {
		byKey[t.Key] = append(byKey[t.Key], fmt.Sprintf("%s:%s", t.Value, t.Effect))
	}
	for k, v := range byKey {
		nodeTaints[k] = v
	}
	if kc := opts.Kubelet; kc != nil {
		for name, m := range map[string]map[string]string{"kube-reserved": kc.KubeReserved, "system-reserved": kc.SystemReserved, "eviction-hard": kc.EvictionHard} {
			if len(m) == 0 {
				continue
			}
			t, err := table(k8s, name)
			if err != nil {
				return "", err
			}
			for k, v := range m {
				t[k] = v
			}
		}
		if kc.ImageGCHighThresholdPercent != nil {
			k8s["image-gc-high-threshold-percent"] = int64(*kc.ImageGCHighThresholdPercent)
		}
		if kc.ImageGCLowThresholdPercent != nil {
			k8s["image-gc-low-threshold-percent"] = int64(*kc.ImageGCLowThresholdPercent)
		}
		if kc.CPUCFSQuota != nil {
			k8s["cpu-cfs-quota-enforced"] = *kc.CPUCFSQuota
		}
	}
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(doc); err != nil {
		return "", fmt.Errorf("rendering Bottlerocket settings: %w", err)
	}
	return buf.String(), nil
}

// table returns the TOML table under key in parent, creating it if absent.
func table(parent map[string]any, key string) (map[string]any, error) {
	v, ok := parent[key]
	if !ok {
		t := map[string]any{}
		parent[key] = t
		return t, nil
	}
	t, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("Bottlerocket user data: %s must be a table, not %T", key, v)
	}
	return t, nil
}
