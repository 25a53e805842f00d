package state

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/scheduling/resources"
)

// PackerInput returns what the packer needs to place pods, from the snapshot:
//
//   - Nodes: every registered node and in-flight NodeClaim (see PackerNode),
//     in the snapshot's order, with the pods nominated to them.
//   - NodePools: pools, copied; a pool whose InUse is nil gets the capacity
//     of its nodes and in-flight NodeClaims from the snapshot (see InUse).
//   - DaemonSetPods: one pod per DaemonSet, the snapshot's DaemonSetPods
//     (its newest live pod, else its template with the LimitRanges'
//     defaults).
//   - NamespaceLabels: the labels of every namespace known or used by a pod.
//   - VolumeZones: for each of pods that uses volumes, the zones they allow
//     (see VolumeZones); a pod whose volumes cannot be resolved is left out
//     of the map, and the packer then ignores it.
//
// MaxInstanceTypes is left to the caller.
func (s Snapshot) PackerInput(pods []*corev1.Pod, pools []packer.NodePool, policy packer.PreferencePolicy) packer.Input {
	in := packer.Input{
		Pods:             pods,
		Nodes:            make([]packer.Node, 0, len(s.Nodes)),
		NodePools:        slices.Clone(pools),
		PreferencePolicy: policy,
	}
	for _, sn := range s.Nodes {
		in.Nodes = append(in.Nodes, sn.PackerNode())
	}
	for i := range in.NodePools {
		if in.NodePools[i].InUse == nil {
			in.NodePools[i].InUse = s.InUse(in.NodePools[i].Name)
		}
	}
	in.DaemonSetPods = slices.Clone(s.DaemonSetPods)
	in.NamespaceLabels = s.namespaceLabels(pods, in.DaemonSetPods)
	for _, pod := range pods {
		if !UsesVolumes(pod) {
			continue
		}
		zones, ok := s.VolumeZones(pod)
		if !ok {
			continue
		}
		if in.VolumeZones == nil {
			in.VolumeZones = map[types.NamespacedName][]string{}
		}
		in.VolumeZones[key(pod.Namespace, pod.Name)] = zones
	}
	return in
}

// PackerNode returns the node as the packer sees it. An in-flight NodeClaim
// is described by its requirements; its labels are those the requirements
// pin, its taints leave out startup taints, and its allocatable is the one
// the launch reported (its resource requests before that). Its pods are the
// pods bound to it, the DaemonSet pods it is still to get (Daemons) and the
// pending pods nominated to it (NominatedPods), so that only the room left
// beside them is offered to other pods. A node that is cordoned, marked for
// deletion or being deleted is Unschedulable.
func (n *StateNode) PackerNode() packer.Node {
	out := packer.Node{
		Name:          n.Name(),
		NodePool:      n.NodePool(),
		InFlight:      n.InFlight(),
		Labels:        n.Labels(),
		Taints:        n.Taints(),
		Allocatable:   resources.NewVector(n.Allocatable()),
		Pods:          n.Pods,
		Unschedulable: n.Unschedulable(),
	}
	// Most nodes have neither: their list is then the state's own (full,
	// so that appending copies), the same slice from snapshot to snapshot
	// while the pods stay, which lets a kept packer.Cache recognise it.
	if len(n.Daemons) > 0 || len(n.NominatedPods) > 0 {
		out.Pods = slices.Concat(n.Pods, n.Daemons, n.NominatedPods)
	}
	if out.InFlight {
		out.Requirements = n.Requirements()
	}
	return out
}

// namespaceLabels returns the labels of every namespace in the snapshot and
// of every namespace a pod runs in, each with kubernetes.io/metadata.name as
// the API server sets it.
func (s Snapshot) namespaceLabels(podLists ...[]*corev1.Pod) map[string]map[string]string {
	out := map[string]map[string]string{}
	add := func(name string, labels map[string]string) {
		m := out[name]
		if m == nil {
			m = map[string]string{}
			out[name] = m
		}
		maps.Copy(m, labels)
		m[corev1.LabelMetadataName] = name
	}
	for _, ns := range s.Namespaces {
		add(ns.Name, ns.Labels)
	}
	for _, sn := range s.Nodes {
		for _, p := range sn.Pods {
			add(p.Namespace, nil)
		}
	}
	for _, pods := range podLists {
		for _, p := range pods {
			add(p.Namespace, nil)
		}
	}
	return out
}

// VolumeZones returns the zones that pod's persistent volumes allow, nil
// meaning any zone, and whether they could be worked out:
//
//   - A PVC that is bound contributes the zones of its PV's node affinity
//     (topology.kubernetes.io/zone, or the beta zone key), or of the PV's
//     zone label when it has no node affinity.
//   - A PVC that is not bound yet allows any zone: the StorageClass's
//     allowedTopologies are not part of the state.
//   - A generic ephemeral volume whose PVC has not been created yet allows
//     any zone.
//   - A PVC that does not exist, or that is bound to a PV the state does not
//     hold (its informer has not caught up), cannot be worked out: ok is
//     false, and the pod should be left out until it can.
//   - Volumes whose zones do not overlap also give ok false: the pod cannot
//     run anywhere.
func (s Snapshot) VolumeZones(pod *corev1.Pod) (zones []string, ok bool) {
	constrained := false
	for _, v := range pod.Spec.Volumes {
		var claim string
		ephemeral := false
		switch {
		case v.PersistentVolumeClaim != nil:
			claim = v.PersistentVolumeClaim.ClaimName
		case v.Ephemeral != nil:
			claim, ephemeral = pod.Name+"-"+v.Name, true
		default:
			continue
		}
		pvc, found := s.PersistentVolumeClaim(pod.Namespace, claim)
		if !found {
			if ephemeral {
				continue
			}
			return nil, false
		}
		if pvc.Spec.VolumeName == "" {
			continue
		}
		pv, found := s.PersistentVolume(pvc.Spec.VolumeName)
		if !found {
			return nil, false
		}
		pvZones := persistentVolumeZones(pv)
		if pvZones == nil {
			continue
		}
		if !constrained {
			zones, constrained = pvZones, true
		} else {
			zones = intersectSorted(zones, pvZones)
		}
		if len(zones) == 0 {
			return nil, false
		}
	}
	return zones, true
}

// persistentVolumeZones returns the sorted zones a PV may be used from, nil
// when any zone will do and empty (not nil) when none will.
func persistentVolumeZones(pv *corev1.PersistentVolume) []string {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		for _, k := range []string{wellknown.LabelTopologyZone, wellknown.LabelBetaZone} {
			if z := pv.Labels[k]; z != "" {
				return []string{z}
			}
		}
		return nil
	}
	set := map[string]bool{}
	for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		termZones := []string(nil)
		limited := false
		for _, e := range term.MatchExpressions {
			if wellknown.NormalizeLabel(e.Key) != wellknown.LabelTopologyZone || e.Operator != corev1.NodeSelectorOpIn {
				continue
			}
			vals := slices.Sorted(slices.Values(e.Values))
			vals = slices.Compact(vals)
			if !limited {
				termZones, limited = vals, true
			} else {
				termZones = intersectSorted(termZones, vals)
			}
		}
		if !limited {
			// One alternative places no zone constraint: any zone will do.
			return nil
		}
		for _, z := range termZones {
			set[z] = true
		}
	}
	if len(pv.Spec.NodeAffinity.Required.NodeSelectorTerms) == 0 {
		return nil
	}
	// Every alternative names zones; none left means no zone at all.
	return append([]string{}, slices.Sorted(maps.Keys(set))...)
}

func intersectSorted(a, b []string) []string {
	var out []string
	for _, x := range a {
		if _, found := slices.BinarySearch(b, x); found {
			out = append(out, x)
		}
	}
	return out
}
