package userdata

import (
	"encoding/json"
	"fmt"
	"net/textproto"
	"strings"

	"sigs.k8s.io/yaml"
)

// nodeConfig is nodeadm's NodeConfig, node.eks.aws/v1alpha1.
type nodeConfig struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Spec       nodeConfigSpec `json:"spec"`
}

type nodeConfigSpec struct {
	Cluster  nodeConfigCluster   `json:"cluster"`
	Kubelet  nodeConfigKubelet   `json:"kubelet"`
	Instance *nodeConfigInstance `json:"instance,omitempty"`
}

type nodeConfigCluster struct {
	Name                 string `json:"name"`
	APIServerEndpoint    string `json:"apiServerEndpoint"`
	CertificateAuthority string `json:"certificateAuthority"`
	CIDR                 string `json:"cidr"`
}

type nodeConfigKubelet struct {
	Config map[string]any `json:"config"`
	Flags  []string       `json:"flags,omitempty"`
}

type nodeConfigInstance struct {
	LocalStorage struct {
		Strategy string `json:"strategy"`
	} `json:"localStorage"`
}

func detectAL2023(s string) string {
	if strings.Contains(s, "node.eks.aws/") && strings.Contains(s, "NodeConfig") {
		return contentTypeNodeConfig
	}
	return contentTypeShell
}

func al2023(opts Options) (string, error) {
	if opts.ClusterCIDR == "" {
		return "", fmt.Errorf("AL2023 user data needs the cluster's service CIDR")
	}
	config, err := kubeletConfigMap(opts)
	if err != nil {
		return "", err
	}
	nc := nodeConfig{
		APIVersion: "node.eks.aws/v1alpha1",
		Kind:       "NodeConfig",
		Spec: nodeConfigSpec{
			Cluster: nodeConfigCluster{
				Name: opts.ClusterName, APIServerEndpoint: opts.ClusterEndpoint,
				CertificateAuthority: opts.CABundle, CIDR: opts.ClusterCIDR,
			},
			Kubelet: nodeConfigKubelet{Config: config},
		},
	}
	if l := labels(opts, true); len(l) > 0 {
		nc.Spec.Kubelet.Flags = []string{"--node-labels=" + joinMap(l, "=")}
	}
	if raid0(opts) {
		nc.Spec.Instance = &nodeConfigInstance{}
		nc.Spec.Instance.LocalStorage.Strategy = "RAID0"
	}
	doc, err := yaml.Marshal(nc)
	if err != nil {
		return "", fmt.Errorf("rendering NodeConfig: %w", err)
	}
	parts, err := userParts(opts.UserData, detectAL2023)
	if err != nil {
		return "", err
	}
	parts = append(parts, part{header: textproto.MIMEHeader{"Content-Type": {contentTypeNodeConfig}}, body: doc})
	return writeMIME(parts)
}

// kubeletConfigMap returns the kubelet configuration fields for nodeadm:
// the node class's kubelet settings under their kubelet names, the
// computed max pods, the cluster DNS and the taints to register with.
func kubeletConfigMap(opts Options) (map[string]any, error) {
	config := map[string]any{}
	if opts.Kubelet != nil {
		raw, err := json.Marshal(opts.Kubelet)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(raw, &config); err != nil {
			return nil, err
		}
	}
	if n := maxPods(opts); n > 0 {
		config["maxPods"] = n
	}
	if dns := clusterDNS(opts); len(dns) > 0 {
		config["clusterDNS"] = dns
	}
	var ts []map[string]string
	for _, t := range taints(opts) {
		m := map[string]string{"key": t.Key, "effect": string(t.Effect)}
		if t.Value != "" {
			m["value"] = t.Value
		}
		ts = append(ts, m)
	}
	config["registerWithTaints"] = ts
	return config, nil
}
