package scheduler

import (
	"cmp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// attempt is a pass that could not place a pod: its epoch, and the pod's
// spec generation then.
type attempt struct {
	epoch      uint64
	generation int64
}

// queue returns the pending pods this pass tries, in kube-scheduler's
// queue order (priority, then age, then namespace and name).
//
// As kube-scheduler keeps pods it could not schedule aside until a cluster
// event may make them schedulable, a pod that a pass could not place is
// tried again only when something it depends on has changed since:
//
//   - a pod that only the cheap filters judge (no host ports, no pod
//     (anti-)affinity, no topology spread, no bound pod's anti-affinity that
//     selects it, no PersistentVolumeClaim) depends on each node alone. A
//     node that has not grown since (new, changed in labels, taints,
//     allocatable or schedulability, or with room freed) can only have
//     less room than when the pod was turned away, so the pod is tried
//     again only if one of the nodes that did grow passes the cheap
//     filters for it now;
//   - any other pod is tried again after any change to what a placement
//     reads, or after a pass that bound a pod.
//
// A pod that is not tried keeps the message of its last attempt, as in
// kube-scheduler; pods tried again get a fresh one. Passes used to try
// every pending pod against every node, and to rewrite the condition of
// each, whenever any node or pod changed: with ten thousand pods waiting
// for a scale-up, each node that joined cost ten thousand status writes.
func (b *Binder) queue(cl *cluster) []*corev1.Pod {
	var queue []*corev1.Pod
	// Pods of one ReplicaSet or Job with the same last attempt get the same
	// answer: the first one's is kept.
	type group struct {
		key   types.UID
		epoch uint64
	}
	answers := map[group]bool{}
	waiting := 0
	// Pods that only the cheap filters judge are looked at once the
	// oldest of their attempts is known, which says which nodes grew
	// since.
	var cheapOnly []*corev1.Pod
	oldest := b.epoch
	// Whether pods of a ReplicaSet or Job depend on each node alone.
	independent := map[types.UID]bool{}
	// The index's order is not used: what each pod gets here depends on
	// the pod and the cluster alone, and the queue is sorted below.
	for _, o := range b.api.SelectUnordered(podGVK, "spec.nodeName", "") {
		p := o.(*corev1.Pod)
		if !pending(p) {
			continue
		}
		waiting++
		last, ok := b.failed[p.UID]
		if !ok || last.generation != p.Generation || b.retryAll {
			queue = append(queue, p)
			continue
		}
		// Nothing grew or changed since the pod's last look: the common
		// case, decided without looking at the pod itself.
		if last.epoch >= b.views.lastGrewAt && last.epoch >= b.changedAt {
			continue
		}
		key := likeKey(p)
		alone, known := independent[key]
		if !known || key == "" {
			alone = b.independent(p, cl)
			if key != "" {
				independent[key] = alone
			}
		}
		if !alone {
			if b.changedAt > last.epoch {
				queue = append(queue, p)
			}
			continue
		}
		cheapOnly = append(cheapOnly, p)
		oldest = min(oldest, last.epoch)
	}
	grown := b.grownSince(oldest)
	for _, p := range cheapOnly {
		last := b.failed[p.UID]
		g := group{key: likeKey(p), epoch: last.epoch}
		retry, known := answers[g]
		if !known || g.key == "" {
			retry = grownNodeFits(p, cl, grown, last.epoch)
			if g.key != "" {
				answers[g] = retry
			}
		}
		if retry {
			queue = append(queue, p)
			continue
		}
		// Every node that grew until now was looked at and turned the
		// pod away: the next pass need only look at nodes that grow
		// after this one.
		last.epoch = b.epoch
		b.failed[p.UID] = last
	}
	b.forgetAttempts(waiting)
	b.waited += waiting
	b.tried += len(queue)
	// Namespace and name make the order total, so that a stable sort is not
	// needed.
	slices.SortFunc(queue, func(x, y *corev1.Pod) int {
		if px, py := priority(x), priority(y); px != py {
			if px > py {
				return -1
			}
			return 1
		}
		if c := x.CreationTimestamp.Compare(y.CreationTimestamp.Time); c != 0 {
			return c
		}
		if c := strings.Compare(x.Namespace, y.Namespace); c != 0 {
			return c
		}
		return strings.Compare(x.Name, y.Name)
	})
	return queue
}

// independent reports whether the cheap filters alone judge the pod, on
// each node by that node alone (see queue).
func (b *Binder) independent(p *corev1.Pod, cl *cluster) bool {
	if b.alwaysFull || !simple(p) || cl.repelled(p) {
		return false
	}
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			return false
		}
	}
	return true
}

// grownNode is a node of the pass's view, by index, with the epoch it
// last grew at.
type grownNode struct {
	i      int
	grewAt uint64
}

// grownSince returns the nodes that grew after epoch, the most recent
// first.
func (b *Binder) grownSince(epoch uint64) []grownNode {
	var out []grownNode
	// The view's nodes are the pass's, in the same order.
	for i, nv := range b.views.order {
		if nv.grewAt > epoch {
			out = append(out, grownNode{i: i, grewAt: nv.grewAt})
		}
	}
	slices.SortStableFunc(out, func(x, y grownNode) int { return cmp.Compare(y.grewAt, x.grewAt) })
	return out
}

// grownNodeFits reports whether a node that grew after epoch passes the
// cheap filters for the pod; grown is grownSince's list.
func grownNodeFits(p *corev1.Pod, cl *cluster, grown []grownNode, epoch uint64) bool {
	req := cl.requests(p)
	var affinity nodeaffinity.RequiredNodeAffinity
	parsed := false
	for _, g := range grown {
		if g.grewAt <= epoch {
			break
		}
		if prefilter(p, req, cl, g.i, nil, false) != "" {
			continue
		}
		if !parsed {
			affinity, parsed = nodeaffinity.GetRequiredNodeAffinity(p), true
		}
		if ok, _ := affinity.Match(cl.nodes[g.i]); ok {
			return true
		}
	}
	return false
}

// forgetAttempts drops the attempts of pods no longer pending, once there
// are well more of them than pending pods.
func (b *Binder) forgetAttempts(waiting int) {
	if len(b.failed) < 2*waiting+1000 {
		return
	}
	keep := make(map[types.UID]attempt, waiting)
	for _, o := range b.api.SelectUnordered(podGVK, "spec.nodeName", "") {
		if a, ok := b.failed[o.GetUID()]; ok && pending(o.(*corev1.Pod)) {
			keep[o.GetUID()] = a
		}
	}
	b.failed = keep
}
