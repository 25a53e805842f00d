package v1

import (
	"maps"
	"slices"
)

// DeepCopyInto copies the receiver into out. Every map holds values without
// pointers, so cloning the maps copies them deeply.
func (in *KubeletConfiguration) DeepCopyInto(out *KubeletConfiguration) {
	*out = *in
	out.ClusterDNS = slices.Clone(in.ClusterDNS)
	out.MaxPods = clonePtr(in.MaxPods)
	out.PodsPerCore = clonePtr(in.PodsPerCore)
	out.SystemReserved = maps.Clone(in.SystemReserved)
	out.KubeReserved = maps.Clone(in.KubeReserved)
	out.EvictionHard = maps.Clone(in.EvictionHard)
	out.EvictionSoft = maps.Clone(in.EvictionSoft)
	out.EvictionSoftGracePeriod = maps.Clone(in.EvictionSoftGracePeriod)
	out.EvictionMaxPodGracePeriod = clonePtr(in.EvictionMaxPodGracePeriod)
	out.ImageGCHighThresholdPercent = clonePtr(in.ImageGCHighThresholdPercent)
	out.ImageGCLowThresholdPercent = clonePtr(in.ImageGCLowThresholdPercent)
	out.CPUCFSQuota = clonePtr(in.CPUCFSQuota)
}

// DeepCopy returns a deep copy of the receiver, or nil for nil.
func (in *KubeletConfiguration) DeepCopy() *KubeletConfiguration {
	if in == nil {
		return nil
	}
	out := new(KubeletConfiguration)
	in.DeepCopyInto(out)
	return out
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
