package state

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/scheduling/requirements"
	"github.com/stevedore-autoscaler/stevedore/scheduling/resources"
	"github.com/stevedore-autoscaler/stevedore/scheduling/taints"
)

// podNomination is where the provisioner expects a pending pod to land.
type podNomination struct {
	uid  types.UID
	node string // the node or NodeClaim name it was given
	// at and until bound the nomination as given; until-at is also how long
	// it lasts once the node has initialized (see NominatePod).
	at, until time.Time
}

// NominatePod records that the provisioner, at time at, expects pod to land
// on the node or NodeClaim called node, and that it would give the
// scheduler until until to bind it there. A later nomination of the same
// pod replaces it.
//
// While the nomination holds, the pod is not provisionable
// (Snapshot.ProvisionablePods leaves it out) and its requests are counted on
// the node (StateNode.NominatedPods), so that the next batch neither launches
// a second node for it nor gives its room to another pod. Re-planning those
// pods from scratch instead is not stable: the packer fills existing and
// in-flight nodes first-fit, which need not reproduce the packing that sized
// the NodeClaims, and whatever no longer fits gets a NodeClaim of its own.
//
// It holds while the pod is pending and provisionable, its node exists and
// takes pods, the pod still fits there, and either until has not passed, or
// the node has not initialized yet (the scheduler cannot bind pods there
// before, however long the instance takes to boot), or it initialized less
// than until-at ago. The nomination is forgotten when the pod is bound or
// deleted.
func (c *Cluster) NominatePod(pod *corev1.Pod, node string, at, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.changes++
	c.podNominations[key(pod.Namespace, pod.Name)] = podNomination{uid: pod.UID, node: node, at: at, until: until}
}

// holdsUntil returns until when a nomination to sn holds, as far as is known
// at now; it holds at now if the time is after now.
func (nom podNomination) holdsUntil(sn *StateNode, now time.Time) time.Time {
	length := nom.until.Sub(nom.at)
	if !sn.Initialized() {
		// Pods cannot be bound to it yet: the nomination lasts at least
		// its length beyond now, when the node has not initialized either.
		return later(nom.until, now.Add(length))
	}
	if at, ok := initializedAt(sn); ok {
		return later(nom.until, at.Add(length))
	}
	return nom.until
}

// initializedAt is when a managed node initialized, if its NodeClaim says.
func initializedAt(sn *StateNode) (time.Time, bool) {
	if sn.NodeClaim == nil {
		return time.Time{}, false
	}
	c := meta.FindStatusCondition(sn.NodeClaim.Status.Conditions, karpv1.ConditionTypeInitialized)
	if c == nil || c.Status != metav1.ConditionTrue || c.LastTransitionTime.IsZero() {
		return time.Time{}, false
	}
	return c.LastTransitionTime.Time, true
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// placeNominations sets the NominatedPods of the snapshot's nodes, and their
// NominatedUntil to cover them, from the nominations that hold: pods in
// name order, each counted on its node if it fits beside the node's pods,
// the DaemonSet pods it is still to get, and the pods placed before it. It
// returns the pods placed. The caller holds the lock.
func (c *Cluster) placeNominations(s *Snapshot) map[types.NamespacedName]struct{} {
	if len(c.podNominations) == 0 {
		return nil
	}
	var placed map[types.NamespacedName]struct{}
	free := map[int]resources.Vector{}
	for _, p := range s.PendingPods {
		k := key(p.Namespace, p.Name)
		nom, ok := c.podNominations[k]
		if !ok || nom.uid != p.UID || !IsProvisionable(p) {
			continue
		}
		i, ok := s.nodeIndex[nom.node]
		if !ok {
			continue
		}
		sn := s.Nodes[i]
		until := nom.holdsUntil(sn, s.Time)
		if sn.Unschedulable() || sn.Stalled(s.Time) || !until.After(s.Time) {
			continue
		}
		room, ok := free[i]
		if !ok {
			room = resources.NewVector(sn.Allocatable())
			room.Sub(sn.PodRequests())
			for _, q := range sn.Daemons {
				room.Sub(resources.PodVector(q))
			}
		}
		need := resources.PodVector(p)
		if !need.Fits(room) {
			// Something else took its room (a pod the scheduler put
			// there, a DaemonSet created since): plan it again.
			free[i] = room
			continue
		}
		room.Sub(need)
		free[i] = room
		sn.NominatedPods = append(sn.NominatedPods, p)
		sn.NominatedUntil = later(sn.NominatedUntil, until)
		if placed == nil {
			placed = map[types.NamespacedName]struct{}{}
		}
		placed[k] = struct{}{}
	}
	return placed
}

// InitializationGrace is how long a registered node may go without
// initializing before the provisioner stops counting on it. Within it a
// node that has not initialized takes pods in the provisioner's plans (its
// startup taints and not-ready taint are expected to go away) and pods
// nominated to it wait for it, however long that is. A node whose kubelet
// dies before it ever turns Ready would otherwise hold its pods pending for
// good: Karpenter keeps planning pods onto such a node, and stevedore did
// too. Ten minutes leaves room for slow startup taints (GPU drivers, CNI
// agents) while bounding the wait.
const InitializationGrace = 10 * time.Minute

// Stalled reports whether a managed node registered more than
// InitializationGrace before now and has still not initialized. Pods
// nominated to it no longer wait for it, and the provisioner places no pods
// on it; a pod waiting for it is planned again.
func (n *StateNode) Stalled(now time.Time) bool {
	if n.NodeClaim == nil || n.Node == nil || n.Initialized() {
		return false
	}
	at, ok := registeredAt(n)
	return ok && now.Sub(at) > InitializationGrace
}

// registeredAt is when a managed node registered: its NodeClaim's
// Registered condition, else the Node's creation.
func registeredAt(sn *StateNode) (time.Time, bool) {
	c := meta.FindStatusCondition(sn.NodeClaim.Status.Conditions, karpv1.ConditionTypeRegistered)
	if c != nil && c.Status == metav1.ConditionTrue && !c.LastTransitionTime.IsZero() {
		return c.LastTransitionTime.Time, true
	}
	if t := sn.Node.CreationTimestamp; !t.IsZero() {
		return t.Time, true
	}
	return time.Time{}, false
}

// starting reports whether a managed node is still coming up: in flight, or
// registered and not initialized. Its DaemonSet pods may not exist yet.
func (n *StateNode) starting() bool {
	return n.NodeClaim != nil && !n.Initialized()
}

// daemon is the pod that stands for a DaemonSet (Snapshot.DaemonSetPods)
// and what decides where it runs.
type daemon struct {
	pod  *corev1.Pod
	alts []requirements.Requirements
}

// daemonsOf returns the pods that stand for the DaemonSets, in name order,
// leaving out those whose node affinity cannot be parsed.
func daemonsOf(dss []*corev1.Pod) []daemon {
	out := make([]daemon, 0, len(dss))
	for _, p := range dss {
		alts, err := requirements.FromPod(p)
		if err != nil {
			continue
		}
		out = append(out, daemon{pod: p, alts: alts})
	}
	return out
}

// expectedDaemons returns the pods that stand for the DaemonSets that will run
// on a starting node and have no pod on it yet: those that tolerate its
// taints and admit its labels (or, in flight, its requirements, where the
// well-known labels the instance type will define may still come). A new
// NodeClaim is sized with room for them; counting them keeps that room from
// being handed to pending pods.
func expectedDaemons(sn *StateNode, ds []daemon) []*corev1.Pod {
	var out []*corev1.Pod
	nodeTaints := sn.Taints()
	reqs := sn.Requirements()
	undefined := requirements.RequireDefined
	if sn.InFlight() {
		undefined = requirements.AllowUndefinedWellKnown
	}
	for _, d := range ds {
		if hasDaemonPod(sn.Pods, d.pod) {
			continue
		}
		if ok, _ := taints.ToleratesAll(d.pod.Spec.Tolerations, nodeTaints, taints.Blocking); !ok {
			continue
		}
		for _, a := range d.alts {
			if _, bad := reqs.Conflict(a, undefined); !bad {
				out = append(out, d.pod)
				break
			}
		}
	}
	return out
}

// hasDaemonPod reports whether pods include one of the DaemonSet that tmpl
// stands for.
func hasDaemonPod(pods []*corev1.Pod, tmpl *corev1.Pod) bool {
	if len(tmpl.OwnerReferences) == 0 {
		return false
	}
	owner := tmpl.OwnerReferences[0]
	for _, p := range pods {
		if p.Namespace != tmpl.Namespace {
			continue
		}
		for _, o := range p.OwnerReferences {
			if o.Kind == owner.Kind && o.Name == owner.Name {
				return true
			}
		}
	}
	return false
}
