// Package userdata generates the bootstrap user data of an instance for
// each AMI family, merged with the user data of the EC2NodeClass:
//
//   - AL2023: a MIME multi-part document whose last part is a nodeadm
//     NodeConfig (cluster, kubelet config, node labels, taints, RAID0); the
//     user's parts (MIME parts, a shell script or a NodeConfig) come first,
//     so nodeadm merges stevedore's settings over the user's;
//   - AL2: a MIME multi-part document whose last part calls
//     /etc/eks/bootstrap.sh with --kubelet-extra-args;
//   - Bottlerocket: TOML, the user's settings with stevedore's
//     settings.kubernetes keys written over them;
//   - Windows: a PowerShell block that runs the EKS bootstrap script after
//     the user's commands;
//   - Custom: the user data, untouched.
//
// Every node registers with the karpenter.sh/unregistered:NoExecute taint,
// which stevedore removes once the node is matched to its NodeClaim. Labels
// the kubelet may not set on itself are left out. The output is
// deterministic: maps are written in key order and MIME boundaries are
// fixed. It is plain text; the caller base64-encodes it for EC2. EC2 takes
// at most MaxBytes of it, which Generate checks.
package userdata

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
)

// Options is what the bootstrap configuration is made of.
type Options struct {
	ClusterName     string
	ClusterEndpoint string
	// CABundle is the cluster CA certificate, base64-encoded PEM.
	CABundle string
	// ClusterCIDR is the cluster's service CIDR; AL2023 needs it.
	ClusterCIDR string
	// ClusterDNS are the cluster DNS addresses used when the kubelet
	// configuration sets none (usually the kube-dns ClusterIP).
	ClusterDNS []string
	// Kubelet is the node class's kubelet configuration.
	Kubelet *awsv1.KubeletConfiguration
	// MaxPods, if positive, is the pod limit stevedore computed for the
	// instance types launched with this user data.
	MaxPods int32
	// Labels and Taints are the NodeClaim's; startup taints included.
	Labels map[string]string
	Taints []corev1.Taint
	// InstanceStorePolicy RAID0 puts the kubelet's data on the local disks.
	InstanceStorePolicy *awsv1.InstanceStorePolicy
	// UserData is the node class's user data.
	UserData *string
}

// Generate returns the user data for the family. User data that EC2 would
// refuse for its size, over MaxBytes, is a *SizeError.
func Generate(family awsv1.AMIFamily, opts Options) (string, error) {
	out, err := generate(family, opts)
	if err != nil {
		return "", err
	}
	return checkSize(family, opts, out)
}

func generate(family awsv1.AMIFamily, opts Options) (string, error) {
	if family != awsv1.AMIFamilyCustom {
		if opts.ClusterName == "" || opts.ClusterEndpoint == "" || opts.CABundle == "" {
			return "", fmt.Errorf("%s user data needs the cluster name, endpoint and CA bundle", family)
		}
	}
	switch family {
	case awsv1.AMIFamilyAL2023:
		return al2023(opts)
	case awsv1.AMIFamilyAL2:
		return al2(opts)
	case awsv1.AMIFamilyBottlerocket:
		return bottlerocket(opts)
	case awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyWindows2025:
		return windows(opts)
	case awsv1.AMIFamilyCustom:
		if opts.UserData == nil {
			return "", nil
		}
		return *opts.UserData, nil
	}
	return "", fmt.Errorf("AMI family %q has no user data format", family)
}

// taints returns the NodeClaim's taints plus the unregistered taint, sorted
// by key and effect, without duplicates.
func taints(opts Options) []corev1.Taint {
	out := slices.Clone(opts.Taints)
	if !slices.ContainsFunc(out, func(t corev1.Taint) bool { return t.MatchTaint(ptr(wellknown.UnregisteredTaint())) }) {
		out = append(out, wellknown.UnregisteredTaint())
	}
	slices.SortStableFunc(out, func(a, b corev1.Taint) int {
		if c := strings.Compare(a.Key, b.Key); c != 0 {
			return c
		}
		return strings.Compare(string(a.Effect), string(b.Effect))
	})
	return slices.CompactFunc(out, func(a, b corev1.Taint) bool { return a.MatchTaint(&b) })
}

// kubeletLabels are the labels in the kubernetes.io domain that the kubelet
// may set on its own node.
var kubeletLabels = map[string]bool{
	corev1.LabelHostname: true, corev1.LabelInstanceTypeStable: true, corev1.LabelOSStable: true, corev1.LabelArchStable: true,
	corev1.LabelTopologyZone: true, corev1.LabelTopologyRegion: true, corev1.LabelWindowsBuild: true,
	corev1.LabelInstanceType: true, corev1.LabelFailureDomainBetaZone: true, corev1.LabelFailureDomainBetaRegion: true,
	"beta.kubernetes.io/arch": true, "beta.kubernetes.io/os": true,
}

// labels returns the labels the kubelet may register with: those outside
// the kubernetes.io and k8s.io domains, the kubelet's own, and those under
// node.kubernetes.io; plus do-not-sync-taints for the families that
// register their taints themselves.
func labels(opts Options, doNotSyncTaints bool) map[string]string {
	out := map[string]string{}
	for k, v := range opts.Labels {
		if kubeletMaySet(k) {
			out[k] = v
		}
	}
	if doNotSyncTaints {
		out[wellknown.LabelDoNotSyncTaints] = wellknown.LabelValueTrue
	}
	return out
}

func kubeletMaySet(key string) bool {
	domain, _, found := strings.Cut(key, "/")
	if !found || kubeletLabels[key] {
		return true
	}
	in := func(parent string) bool { return domain == parent || strings.HasSuffix(domain, "."+parent) }
	if in("node.kubernetes.io") {
		return true
	}
	return !in("kubernetes.io") && !in("k8s.io")
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// joinMap renders m as k<sep>v pairs joined by commas, in key order.
func joinMap(m map[string]string, sep string) string {
	parts := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		parts = append(parts, k+sep+m[k])
	}
	return strings.Join(parts, ",")
}

func taintString(t corev1.Taint) string {
	return fmt.Sprintf("%s=%s:%s", t.Key, t.Value, t.Effect)
}

func clusterDNS(opts Options) []string {
	if opts.Kubelet != nil && len(opts.Kubelet.ClusterDNS) > 0 {
		return opts.Kubelet.ClusterDNS
	}
	return opts.ClusterDNS
}

func maxPods(opts Options) int32 {
	if opts.MaxPods > 0 {
		return opts.MaxPods
	}
	if opts.Kubelet != nil && opts.Kubelet.MaxPods != nil {
		return *opts.Kubelet.MaxPods
	}
	return 0
}

func raid0(opts Options) bool {
	return opts.InstanceStorePolicy != nil && *opts.InstanceStorePolicy == awsv1.InstanceStorePolicyRAID0
}

func ptr[T any](v T) *T { return &v }
