package userdata

import (
	"fmt"
	"net/textproto"
	"strings"
)

func al2(opts Options) (string, error) {
	var b strings.Builder
	b.WriteString("#!/bin/bash -xe\n")
	b.WriteString("exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1\n")
	fmt.Fprintf(&b, "/etc/eks/bootstrap.sh '%s' --apiserver-endpoint '%s' --b64-cluster-ca '%s'", opts.ClusterName, opts.ClusterEndpoint, opts.CABundle)
	if dns := clusterDNS(opts); len(dns) > 0 {
		fmt.Fprintf(&b, " \\\n--dns-cluster-ip '%s'", dns[0])
	}
	b.WriteString(" \\\n--use-max-pods false")
	if args := kubeletExtraArgs(opts); len(args) > 0 {
		fmt.Fprintf(&b, " \\\n--kubelet-extra-args '%s'", strings.Join(args, " "))
	}
	if raid0(opts) {
		b.WriteString(" \\\n--local-disks raid0")
	}
	b.WriteString("\n")
	parts, err := userParts(opts.UserData, func(string) string { return contentTypeShell })
	if err != nil {
		return "", err
	}
	parts = append(parts, part{header: textproto.MIMEHeader{"Content-Type": {contentTypeShell}}, body: []byte(b.String())})
	return writeMIME(parts)
}

// kubeletExtraArgs renders labels, taints and kubelet settings as kubelet
// flags, in a fixed order.
func kubeletExtraArgs(opts Options) []string {
	var args []string
	if l := labels(opts, true); len(l) > 0 {
		args = append(args, fmt.Sprintf("--node-labels=%q", joinMap(l, "=")))
	}
	var ts []string
	for _, t := range taints(opts) {
		ts = append(ts, taintString(t))
	}
	args = append(args, fmt.Sprintf("--register-with-taints=%q", strings.Join(ts, ",")))
	if n := maxPods(opts); n > 0 {
		args = append(args, fmt.Sprintf("--max-pods=%d", n))
	}
	k := opts.Kubelet
	if k == nil {
		return args
	}
	if k.PodsPerCore != nil {
		args = append(args, fmt.Sprintf("--pods-per-core=%d", *k.PodsPerCore))
	}
	if len(k.SystemReserved) > 0 {
		args = append(args, "--system-reserved="+joinMap(k.SystemReserved, "="))
	}
	if len(k.KubeReserved) > 0 {
		args = append(args, "--kube-reserved="+joinMap(k.KubeReserved, "="))
	}
	if len(k.EvictionHard) > 0 {
		args = append(args, "--eviction-hard="+joinMap(k.EvictionHard, "<"))
	}
	if len(k.EvictionSoft) > 0 {
		args = append(args, "--eviction-soft="+joinMap(k.EvictionSoft, "<"))
	}
	if len(k.EvictionSoftGracePeriod) > 0 {
		m := map[string]string{}
		for s, d := range k.EvictionSoftGracePeriod {
			m[s] = d.Duration.String()
		}
		args = append(args, "--eviction-soft-grace-period="+joinMap(m, "="))
	}
	if k.EvictionMaxPodGracePeriod != nil {
		args = append(args, fmt.Sprintf("--eviction-max-pod-grace-period=%d", *k.EvictionMaxPodGracePeriod))
	}
	if k.ImageGCHighThresholdPercent != nil {
		args = append(args, fmt.Sprintf("--image-gc-high-threshold=%d", *k.ImageGCHighThresholdPercent))
	}
	if k.ImageGCLowThresholdPercent != nil {
		args = append(args, fmt.Sprintf("--image-gc-low-threshold=%d", *k.ImageGCLowThresholdPercent))
	}
	if k.CPUCFSQuota != nil {
		args = append(args, fmt.Sprintf("--cpu-cfs-quota=%t", *k.CPUCFSQuota))
	}
	return args
}
