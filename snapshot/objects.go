package snapshot

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// keep says which metadata fields a document keeps besides name, namespace,
// labels, annotations and uid, which every document keeps.
type keep struct {
	finalizers, created bool
	// owners keeps the owner references dropOwner does not drop.
	owners    bool
	dropOwner func(metav1.OwnerReference) bool
	// dropAnnotation drops annotations besides kubectl's last-applied one.
	dropAnnotation func(string) bool
}

// metadata reduces o's metadata to what k keeps. resourceVersion,
// generation, managedFields, selfLink, deletionTimestamp and generateName
// are never kept.
func metadata(o metav1.Object, k keep) map[string]any {
	m := map[string]any{"name": o.GetName()}
	if ns := o.GetNamespace(); ns != "" {
		m["namespace"] = ns
	}
	if uid := o.GetUID(); uid != "" {
		m["uid"] = string(uid)
	}
	if l := o.GetLabels(); len(l) > 0 {
		m["labels"] = l
	}
	annotations := maps.Clone(o.GetAnnotations())
	maps.DeleteFunc(annotations, func(key, _ string) bool {
		return key == annotationLastApplied || (k.dropAnnotation != nil && k.dropAnnotation(key))
	})
	if len(annotations) > 0 {
		m["annotations"] = annotations
	}
	if f := o.GetFinalizers(); k.finalizers && len(f) > 0 {
		m["finalizers"] = f
	}
	if k.owners {
		owners := slices.DeleteFunc(slices.Clone(o.GetOwnerReferences()), func(r metav1.OwnerReference) bool {
			return k.dropOwner != nil && k.dropOwner(r)
		})
		if len(owners) > 0 {
			m["ownerReferences"] = owners
		}
	}
	if t := o.GetCreationTimestamp(); k.created && !t.IsZero() {
		m["creationTimestamp"] = t.UTC().Format(time.RFC3339)
	}
	return m
}

func document(apiVersion, kind string, meta map[string]any) map[string]any {
	return map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": meta}
}

func (b *builder) nodeClasses(c *Cluster) {
	for i := range c.NodeClasses {
		nc := &c.NodeClasses[i]
		d := document("karpenter.k8s.aws/v1", "EC2NodeClass", metadata(nc, keep{}))
		d["spec"] = nc.Spec
		b.add(FileNodeClasses, "EC2NodeClass", d)
	}
}

func (b *builder) nodePools(c *Cluster) {
	for i := range c.NodePools {
		np := &c.NodePools[i]
		d := document("karpenter.sh/v1", "NodePool", metadata(np, keep{}))
		d["spec"] = np.Spec
		b.add(FileNodePools, "NodePool", d)
	}
}

func (b *builder) nodeClaims(c *Cluster) {
	deleting := 0
	for i := range c.NodeClaims {
		nc := &c.NodeClaims[i]
		if nc.DeletionTimestamp != nil {
			deleting++
			continue
		}
		d := document("karpenter.sh/v1", "NodeClaim", metadata(nc, keep{finalizers: true, owners: true, created: true}))
		d["spec"] = nc.Spec
		d["status"] = nc.Status
		b.add(FileNodeClaims, "NodeClaim", d)
	}
	b.leaveOut(deleting, "NodeClaim being deleted", "NodeClaims being deleted", "on the way out")
}

// nodeAnnotation says which Node annotations are not written: those the
// node's own agents keep up to date.
func nodeAnnotation(key string) bool {
	return key == annotationNodeTTL || strings.HasPrefix(key, prefixVolumes)
}

func (b *builder) nodes(c *Cluster) {
	deleting := 0
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if n.DeletionTimestamp != nil {
			deleting++
			continue
		}
		d := document("v1", "Node", metadata(n, keep{finalizers: true, owners: true, created: true, dropAnnotation: nodeAnnotation}))
		spec := map[string]any{}
		if n.Spec.ProviderID != "" {
			spec["providerID"] = n.Spec.ProviderID
		}
		if len(n.Spec.Taints) > 0 {
			spec["taints"] = n.Spec.Taints
		}
		if n.Spec.Unschedulable {
			spec["unschedulable"] = true
		}
		d["spec"] = spec
		status := map[string]any{}
		if len(n.Status.Capacity) > 0 {
			status["capacity"] = n.Status.Capacity
		}
		if len(n.Status.Allocatable) > 0 {
			status["allocatable"] = n.Status.Allocatable
		}
		var conditions []map[string]any
		for _, cond := range n.Status.Conditions {
			cm := map[string]any{"type": cond.Type, "status": cond.Status}
			if cond.Reason != "" {
				cm["reason"] = cond.Reason
			}
			conditions = append(conditions, cm)
		}
		if len(conditions) > 0 {
			status["conditions"] = conditions
		}
		info := map[string]any{}
		for k, v := range map[string]string{"architecture": n.Status.NodeInfo.Architecture, "operatingSystem": n.Status.NodeInfo.OperatingSystem,
			"kubeletVersion": n.Status.NodeInfo.KubeletVersion} {
			if v != "" {
				info[k] = v
			}
		}
		if len(info) > 0 {
			status["nodeInfo"] = info
		}
		d["status"] = status
		b.add(FileNodes, "Node", d)
	}
	b.leaveOut(deleting, "Node being deleted", "Nodes being deleted", "on the way out")
}

func (b *builder) policies(c *Cluster) {
	builtin := 0
	for i := range c.PriorityClasses {
		pc := &c.PriorityClasses[i]
		if slices.Contains(builtinPriorityClasses, pc.Name) {
			builtin++
			continue
		}
		d := document("scheduling.k8s.io/v1", "PriorityClass", metadata(pc, keep{}))
		d["value"] = pc.Value
		if pc.GlobalDefault {
			d["globalDefault"] = true
		}
		if pc.PreemptionPolicy != nil {
			d["preemptionPolicy"] = *pc.PreemptionPolicy
		}
		if pc.Description != "" {
			d["description"] = pc.Description
		}
		b.add(FilePolicies, "PriorityClass", d)
	}
	b.leaveOut(builtin, "built-in PriorityClass", "built-in PriorityClasses", "every cluster has them, the simulated one too")
	for i := range c.PodDisruptionBudgets {
		pdb := &c.PodDisruptionBudgets[i]
		d := document("policy/v1", "PodDisruptionBudget", metadata(pdb, keep{}))
		d["spec"] = pdb.Spec
		b.add(FilePolicies, "PodDisruptionBudget", d)
	}
}

// volumes writes the claims that are not being deleted and the volumes bound
// to them, and returns the claims written.
func (b *builder) volumes(c *Cluster) map[types.NamespacedName]bool {
	written := map[types.NamespacedName]bool{}
	deleting := 0
	for i := range c.PersistentVolumeClaims {
		pvc := &c.PersistentVolumeClaims[i]
		if pvc.DeletionTimestamp != nil {
			deleting++
			continue
		}
		written[types.NamespacedName{Namespace: pvc.Namespace, Name: pvc.Name}] = true
	}
	unbound := 0
	for i := range c.PersistentVolumes {
		pv := &c.PersistentVolumes[i]
		ref := pv.Spec.ClaimRef
		if ref == nil || !written[types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}] || pv.DeletionTimestamp != nil {
			unbound++
			continue
		}
		d := document("v1", "PersistentVolume", metadata(pv, keep{}))
		d["spec"] = pv.Spec
		d["status"] = map[string]any{"phase": pv.Status.Phase}
		b.add(FileVolumes, "PersistentVolume", d)
	}
	for i := range c.PersistentVolumeClaims {
		pvc := &c.PersistentVolumeClaims[i]
		if !written[types.NamespacedName{Namespace: pvc.Namespace, Name: pvc.Name}] {
			continue
		}
		d := document("v1", "PersistentVolumeClaim", metadata(pvc, keep{}))
		d["spec"] = pvc.Spec
		d["status"] = map[string]any{"phase": pvc.Status.Phase}
		b.add(FileVolumes, "PersistentVolumeClaim", d)
	}
	b.leaveOut(deleting, "PersistentVolumeClaim being deleted", "PersistentVolumeClaims being deleted", "on the way out")
	b.leaveOut(unbound, "PersistentVolume bound to no claim written", "PersistentVolumes bound to no claim written", "no pod mounts them")
	return written
}

// ownedByDeployment says whether an owner reference is to a Deployment.
func ownedByDeployment(r metav1.OwnerReference) bool {
	return r.Kind == "Deployment" && strings.HasPrefix(r.APIVersion, "apps/")
}

func (b *builder) workloads(c *Cluster) {
	workload := keep{owners: true}
	for i := range c.DaemonSets {
		ds := &c.DaemonSets[i]
		d := document("apps/v1", "DaemonSet", metadata(ds, workload))
		d["spec"] = ds.Spec
		b.add(FileWorkloads, "DaemonSet", d)
	}
	for i := range c.StatefulSets {
		ss := &c.StatefulSets[i]
		d := document("apps/v1", "StatefulSet", metadata(ss, workload))
		d["spec"] = ss.Spec
		b.add(FileWorkloads, "StatefulSet", d)
	}
	empty, deployed := 0, 0
	for i := range c.ReplicaSets {
		rs := &c.ReplicaSets[i]
		if rs.Spec.Replicas != nil && *rs.Spec.Replicas == 0 {
			empty++
			continue
		}
		if slices.ContainsFunc(rs.OwnerReferences, ownedByDeployment) {
			deployed++
		}
		d := document("apps/v1", "ReplicaSet", metadata(rs, keep{owners: true, dropOwner: ownedByDeployment}))
		d["spec"] = rs.Spec
		b.add(FileWorkloads, "ReplicaSet", d)
	}
	finished := 0
	for i := range c.Jobs {
		j := &c.Jobs[i]
		if jobFinished(j) {
			finished++
			continue
		}
		d := document("batch/v1", "Job", metadata(j, workload))
		d["spec"] = j.Spec
		b.add(FileWorkloads, "Job", d)
	}
	b.leaveOut(empty, "ReplicaSet scaled to zero", "ReplicaSets scaled to zero", "old revisions of Deployments, without pods")
	if deployed > 0 {
		b.omitted = append(b.omitted, Omission{What: "Deployments",
			Why: fmt.Sprintf("in their place, %s without the owner reference: each keeps its pods and replaces those evicted, and the simulator's Deployment controller starts no rollout of its own", plural(deployed, "ReplicaSet"))})
	}
	b.leaveOut(finished, "finished Job", "finished Jobs", "they run no more pods")
}

// jobFinished says whether a Job has completed or failed.
func jobFinished(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// mirrorPod says whether a pod is the API server's copy of a static pod,
// which the kubelet runs from a file on its node.
func mirrorPod(p *corev1.Pod) bool {
	if _, ok := p.Annotations[annotationMirror]; ok {
		return true
	}
	return slices.ContainsFunc(p.OwnerReferences, func(r metav1.OwnerReference) bool { return r.Kind == "Node" && r.APIVersion == "v1" })
}

func (b *builder) pods(c *Cluster, claims map[types.NamespacedName]bool) {
	finished, deleting, mirror, missingClaims := 0, 0, 0, 0
	for i := range c.Pods {
		p := &c.Pods[i]
		switch {
		case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
			finished++
			continue
		case p.DeletionTimestamp != nil:
			deleting++
			continue
		case mirrorPod(p):
			mirror++
			continue
		}
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil && !claims[types.NamespacedName{Namespace: p.Namespace, Name: v.PersistentVolumeClaim.ClaimName}] {
				missingClaims++
				break
			}
		}
		d := document("v1", "Pod", metadata(p, keep{owners: true}))
		d["spec"] = p.Spec
		status := map[string]any{}
		if p.Status.Phase != "" {
			status["phase"] = p.Status.Phase
		}
		if len(p.Status.Conditions) > 0 {
			status["conditions"] = p.Status.Conditions
		}
		d["status"] = status
		b.add(FilePods, "Pod", d)
	}
	b.leaveOut(finished, "finished pod", "finished pods", "Succeeded or Failed: they hold no resources")
	b.leaveOut(deleting, "pod being deleted", "pods being deleted", "on the way out")
	b.leaveOut(mirror, "mirror pod", "mirror pods", "static pods, which the kubelet runs from files on its node; a simulated node has none")
	if missingClaims > 0 {
		b.res.Notes = append(b.res.Notes, fmt.Sprintf("Pods that mount a PersistentVolumeClaim not written (not found, or being deleted): %d; once evicted, the simulator cannot schedule them",
			missingClaims))
	}
}
