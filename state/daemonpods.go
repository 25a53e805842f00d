package state

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stevedore-autoscaler/stevedore/scheduling/workloads"
)

// daemonSetOf returns the namespace and name of the DaemonSet that controls
// pod, if one does.
func daemonSetOf(pod *corev1.Pod) (types.NamespacedName, bool) {
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != "DaemonSet" {
		return types.NamespacedName{}, false
	}
	return key(pod.Namespace, ref.Name), true
}

// indexDaemonPod records p, stored under k, among its DaemonSet's pods. The
// caller holds the lock and has unindexed the pod's previous version.
func (c *Cluster) indexDaemonPod(k types.NamespacedName, p *corev1.Pod) {
	ds, ok := daemonSetOf(p)
	if !ok {
		return
	}
	set := c.daemonPods[ds]
	if set == nil {
		set = map[types.NamespacedName]struct{}{}
		c.daemonPods[ds] = set
	}
	set[k] = struct{}{}
	if cur := c.newestDaemonPod[ds]; cur == nil || cur == p || newerPod(p, cur) {
		c.newestDaemonPod[ds] = p
	}
}

// unindexDaemonPod forgets old, the version of the pod stored under k, which
// next (nil on deletion) is about to replace. The caller holds the lock.
func (c *Cluster) unindexDaemonPod(k types.NamespacedName, old, next *corev1.Pod) {
	ds, ok := daemonSetOf(old)
	if !ok {
		return
	}
	cur := c.newestDaemonPod[ds]
	if cur == old && next != nil && next.UID == old.UID && next.CreationTimestamp.Equal(&old.CreationTimestamp) {
		if nds, ok := daemonSetOf(next); ok && nds == ds {
			// A new version of the newest pod, a status update most
			// often: it stays the newest, and indexDaemonPod stores it.
			c.newestDaemonPod[ds] = next
			return
		}
	}
	set := c.daemonPods[ds]
	delete(set, k)
	if len(set) == 0 {
		delete(c.daemonPods, ds)
	}
	if cur == nil || key(cur.Namespace, cur.Name) != k {
		return
	}
	// The newest pod goes: the next newest takes its place.
	delete(c.newestDaemonPod, ds)
	for pk := range set {
		if p := c.pods[pk]; p != nil && (c.newestDaemonPod[ds] == nil || newerPod(p, c.newestDaemonPod[ds])) {
			c.newestDaemonPod[ds] = p
		}
	}
}

// newerPod orders pods as workloads.NewestDaemonSetPod does: by creation
// time, then by name.
func newerPod(a, b *corev1.Pod) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return b.CreationTimestamp.Before(&a.CreationTimestamp)
	}
	return a.Name > b.Name
}

// daemonSetPods returns, for each DaemonSet of dss, the pod that stands for
// it when a node is sized (see workloads.DaemonSetPod): its newest live pod,
// else its template with the LimitRanges' defaults. The caller holds the
// lock.
func (c *Cluster) daemonSetPods(dss []*appsv1.DaemonSet, limitRanges []*corev1.LimitRange) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(dss))
	for _, ds := range dss {
		var live []*corev1.Pod
		if p := c.newestDaemonPod[key(ds.Namespace, ds.Name)]; p != nil {
			live = []*corev1.Pod{p}
		}
		out = append(out, workloads.DaemonSetPod(ds, live, limitRanges))
	}
	return out
}
