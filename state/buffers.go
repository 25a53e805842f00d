package state

import (
	"cmp"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// SetBufferPods records the placeholder pods of one CapacityBuffer (see
// package decide/capacitybuffer), replacing those recorded before; none
// forgets the buffer. The capacity-buffer controller keeps them current.
// They are not pods of the API: they are never bound, and only the
// provisioner (which launches capacity for them) and the disruption
// decisions (which keep the room they need) read them, from
// Snapshot.BufferPods.
func (c *Cluster) SetBufferPods(buffer types.NamespacedName, pods []*corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(pods) == 0 {
		if _, ok := c.bufferPods[buffer]; ok {
			delete(c.bufferPods, buffer)
			c.changes++
		}
		return
	}
	if c.bufferPods == nil {
		c.bufferPods = map[types.NamespacedName][]*corev1.Pod{}
	}
	copied := make([]*corev1.Pod, len(pods))
	for i, p := range pods {
		copied[i] = p.DeepCopy()
	}
	c.bufferPods[buffer] = copied
	c.changes++
}

// HasBufferPods reports whether any CapacityBuffer has placeholder pods.
func (c *Cluster) HasBufferPods() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.bufferPods) > 0
}

// sortedBufferPods returns every buffer's placeholder pods, by namespace
// and name. The caller holds c.mu.
func (c *Cluster) sortedBufferPods() []*corev1.Pod {
	var out []*corev1.Pod
	for _, k := range slices.SortedFunc(maps.Keys(c.bufferPods), func(a, b types.NamespacedName) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	}) {
		out = append(out, c.bufferPods[k]...)
	}
	slices.SortStableFunc(out, func(a, b *corev1.Pod) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out
}
