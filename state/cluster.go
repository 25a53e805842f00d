package state

import (
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/karpenter/v1alpha1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/scheduling/resources"
)

// Cluster is the in-memory view of the cluster. It is safe for concurrent
// use; every method takes one mutex, so none of them calls out while holding
// it. The zero value is not usable: call NewCluster.
type Cluster struct {
	mu sync.Mutex

	nodes      map[string]*corev1.Node
	nodeClaims map[string]*karpv1.NodeClaim
	// claimByProviderID and nodeByProviderID join Nodes and NodeClaims.
	claimByProviderID map[string]string
	nodeByProviderID  map[string]string

	pods map[types.NamespacedName]*corev1.Pod
	// podsByNode indexes the pods bound to each node name.
	podsByNode map[string]map[types.NamespacedName]struct{}
	// pending holds the pods not bound to a node.
	pending map[types.NamespacedName]struct{}
	// podLists memoizes the sorted pods of each node name, and the pending
	// pods under "", which every Snapshot hands out; a pod's change drops
	// the lists it was or is in. Snapshots share them: they are read-only.
	podLists map[string][]*corev1.Pod
	// podRequests memoizes the sum of the requests of each node's pod list
	// in podLists, dropped with it.
	podRequests map[string]resources.Vector
	// daemonPods indexes the pods of each DaemonSet, by the namespace and
	// name of the DaemonSet that controls them, and newestDaemonPod holds
	// the newest of them (see workloads.NewestDaemonSetPod), which stands
	// for the DaemonSet when a new node is sized. A pod change updates it
	// at once; only the deletion of the newest pod looks at the others.
	daemonPods      map[types.NamespacedName]map[types.NamespacedName]struct{}
	newestDaemonPod map[types.NamespacedName]*corev1.Pod
	// sized holds, per NodeClaim launched by this process, the DaemonSet
	// overhead it was sized with, until the real pods have been compared
	// with it (see RecordDaemonOverhead).
	sized map[string]sizing
	// limitRanges give pods made from templates (DaemonSet overhead
	// without a live pod) the defaults the API server will give them.
	limitRanges map[types.NamespacedName]*corev1.LimitRange

	daemonSets  map[types.NamespacedName]*appsv1.DaemonSet
	pdbs        map[types.NamespacedName]*policyv1.PodDisruptionBudget
	nodePools   map[string]*karpv1.NodePool
	nodeClasses map[string]*awsv1.EC2NodeClass
	// nodeOverlays are held only when the NodeOverlay feature gate is on
	// (see informer.RegisterNodeOverlays).
	nodeOverlays map[string]*v1alpha1.NodeOverlay
	namespaces   map[string]*corev1.Namespace
	pvcs         map[types.NamespacedName]*corev1.PersistentVolumeClaim
	pvs          map[string]*corev1.PersistentVolume

	// nominations and markedForDeletion are keyed by the name they were
	// given under, a node name or a NodeClaim name; lookups try both names
	// of a StateNode, so a mark survives the NodeClaim's node registering.
	nominations map[string]time.Time
	// replacements are nominations of replacement capacity, which end a
	// while after the node initializes (see NominateReplacement).
	replacements      map[string]replacementNomination
	markedForDeletion map[string]bool
	// changes counts the calls that changed anything (see Changes).
	changes uint64
	// lastSnapshot is handed out again for the same time and changes.
	lastSnapshot lastSnapshot
	// relaxations counts those that could let consolidation succeed (see
	// Relaxations).
	relaxations uint64
	// podNominations are the nodes pending pods are expected to land on
	// (see NominatePod), until they are bound or deleted.
	podNominations map[types.NamespacedName]podNomination
	// bufferPods are the CapacityBuffers' placeholder pods, by buffer (see
	// SetBufferPods).
	bufferPods map[types.NamespacedName][]*corev1.Pod
}

// NewCluster returns an empty Cluster.
func NewCluster() *Cluster {
	return &Cluster{
		nodes:             map[string]*corev1.Node{},
		nodeClaims:        map[string]*karpv1.NodeClaim{},
		claimByProviderID: map[string]string{},
		nodeByProviderID:  map[string]string{},
		pods:              map[types.NamespacedName]*corev1.Pod{},
		podsByNode:        map[string]map[types.NamespacedName]struct{}{},
		pending:           map[types.NamespacedName]struct{}{},
		podLists:          map[string][]*corev1.Pod{},
		podRequests:       map[string]resources.Vector{},
		daemonPods:        map[types.NamespacedName]map[types.NamespacedName]struct{}{},
		newestDaemonPod:   map[types.NamespacedName]*corev1.Pod{},
		limitRanges:       map[types.NamespacedName]*corev1.LimitRange{},
		sized:             map[string]sizing{},
		daemonSets:        map[types.NamespacedName]*appsv1.DaemonSet{},
		pdbs:              map[types.NamespacedName]*policyv1.PodDisruptionBudget{},
		nodePools:         map[string]*karpv1.NodePool{},
		nodeClasses:       map[string]*awsv1.EC2NodeClass{},
		nodeOverlays:      map[string]*v1alpha1.NodeOverlay{},
		namespaces:        map[string]*corev1.Namespace{},
		pvcs:              map[types.NamespacedName]*corev1.PersistentVolumeClaim{},
		pvs:               map[string]*corev1.PersistentVolume{},
		nominations:       map[string]time.Time{},
		replacements:      map[string]replacementNomination{},
		markedForDeletion: map[string]bool{},
		podNominations:    map[types.NamespacedName]podNomination{},
	}
}

func key(namespace, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: namespace, Name: name}
}

// UpdateNode records the current version of a Node.
func (c *Cluster) UpdateNode(n *corev1.Node) {
	n = n.DeepCopy()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.changes++
	old, ok := c.nodes[n.Name]
	if ok {
		c.unjoinNode(old)
	}
	if nodeRelaxes(old, n) {
		c.relaxations++
	}
	c.nodes[n.Name] = n
	if id := n.Spec.ProviderID; id != "" {
		c.nodeByProviderID[id] = n.Name
	}
}

// DeleteNode forgets a Node. Its nomination and deletion mark go with it
// unless a NodeClaim of the same name remains.
func (c *Cluster) DeleteNode(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.changes++
	c.relaxations++
	if old, ok := c.nodes[name]; ok {
		c.unjoinNode(old)
	}
	delete(c.nodes, name)
	if _, ok := c.nodeClaims[name]; !ok {
		delete(c.nominations, name)
		delete(c.replacements, name)
		delete(c.markedForDeletion, name)
	}
}

// UpdateNodeClaim records the current version of a NodeClaim. Another
// provider's NodeClaims (see wellknown.ManagedNodeClaim) are not recorded, as
// Karpenter's cluster state leaves them out: their Nodes are unmanaged nodes
// here, which pods may be placed on and which nothing disrupts.
func (c *Cluster) UpdateNodeClaim(nc *karpv1.NodeClaim) {
	if !wellknown.ManagedNodeClaim(nc) {
		return
	}
	nc = nc.DeepCopy()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.changes++
	old, ok := c.nodeClaims[nc.Name]
	if ok && old.Status.ProviderID != nc.Status.ProviderID {
		c.unjoin(old)
	}
	if nodeClaimRelaxes(old, nc) {
		c.relaxations++
	}
	c.nodeClaims[nc.Name] = nc
	if id := nc.Status.ProviderID; id != "" {
		c.claimByProviderID[id] = nc.Name
	}
}

// DeleteNodeClaim forgets a NodeClaim. Its nomination and deletion mark go
// with it unless a Node of the same name remains.
func (c *Cluster) DeleteNodeClaim(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.changes++
	c.relaxations++
	if old, ok := c.nodeClaims[name]; ok {
		c.unjoin(old)
	}
	delete(c.nodeClaims, name)
	delete(c.sized, name)
	if _, ok := c.nodes[name]; !ok {
		delete(c.nominations, name)
		delete(c.replacements, name)
		delete(c.markedForDeletion, name)
	}
}

func (c *Cluster) unjoinNode(n *corev1.Node) {
	if id := n.Spec.ProviderID; id != "" && c.nodeByProviderID[id] == n.Name {
		delete(c.nodeByProviderID, id)
	}
}

func (c *Cluster) unjoin(nc *karpv1.NodeClaim) {
	if id := nc.Status.ProviderID; id != "" && c.claimByProviderID[id] == nc.Name {
		delete(c.claimByProviderID, id)
	}
}

// UpdatePod records the current version of a Pod. Pods that have finished
// (Succeeded or Failed) hold no resources and are forgotten.
func (c *Cluster) UpdatePod(p *corev1.Pod) {
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		c.DeletePod(p.Namespace, p.Name)
		return
	}
	p = p.DeepCopy()
	k := key(p.Namespace, p.Name)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.changes++
	if podRelaxes(c.pods[k], p) {
		c.relaxations++
	}
	c.unindexPod(k, p)
	c.pods[k] = p
	c.indexDaemonPod(k, p)
	c.dropPodList(p.Spec.NodeName)
	if p.Spec.NodeName == "" {
		c.pending[k] = struct{}{}
		return
	}
	delete(c.podNominations, k)
	set := c.podsByNode[p.Spec.NodeName]
	if set == nil {
		set = map[types.NamespacedName]struct{}{}
		c.podsByNode[p.Spec.NodeName] = set
	}
	set[k] = struct{}{}
}

// DeletePod forgets a Pod.
func (c *Cluster) DeletePod(namespace, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.changes++
	k := key(namespace, name)
	if _, ok := c.pods[k]; ok {
		c.relaxations++
	}
	c.unindexPod(k, nil)
	delete(c.pods, k)
	delete(c.podNominations, k)
}

// unindexPod takes the pod stored under k out of the indexes; next is the
// version about to replace it, nil when it is being deleted.
func (c *Cluster) unindexPod(k types.NamespacedName, next *corev1.Pod) {
	old, ok := c.pods[k]
	if !ok {
		return
	}
	c.unindexDaemonPod(k, old, next)
	c.dropPodList(old.Spec.NodeName)
	if old.Spec.NodeName == "" {
		delete(c.pending, k)
		return
	}
	if set := c.podsByNode[old.Spec.NodeName]; set != nil {
		delete(set, k)
		if len(set) == 0 {
			delete(c.podsByNode, old.Spec.NodeName)
		}
	}
}

// UpdateDaemonSet records the current version of a DaemonSet.
func (c *Cluster) UpdateDaemonSet(ds *appsv1.DaemonSet) {
	remember(c, c.daemonSets, key(ds.Namespace, ds.Name), ds.DeepCopy(), specChanged[*appsv1.DaemonSet])
}

// DeleteDaemonSet forgets a DaemonSet.
func (c *Cluster) DeleteDaemonSet(namespace, name string) {
	forget(c, c.daemonSets, key(namespace, name))
}

// UpdateLimitRange records the current version of a LimitRange.
func (c *Cluster) UpdateLimitRange(lr *corev1.LimitRange) {
	remember(c, c.limitRanges, key(lr.Namespace, lr.Name), lr.DeepCopy(), anyChange[*corev1.LimitRange])
}

// DeleteLimitRange forgets a LimitRange.
func (c *Cluster) DeleteLimitRange(namespace, name string) {
	forget(c, c.limitRanges, key(namespace, name))
}

// UpdatePodDisruptionBudget records the current version of a PDB.
func (c *Cluster) UpdatePodDisruptionBudget(pdb *policyv1.PodDisruptionBudget) {
	remember(c, c.pdbs, key(pdb.Namespace, pdb.Name), pdb.DeepCopy(), pdbRelaxes)
}

// pdbRelaxes reports whether a budget's new version can lift a block: its
// spec or labels changed, or it starts allowing disruptions. Its status
// follows every pod, and otherwise lifts nothing.
func pdbRelaxes(old, pdb *policyv1.PodDisruptionBudget) bool {
	return specChanged(old, pdb) || (old.Status.DisruptionsAllowed <= 0 && pdb.Status.DisruptionsAllowed > 0)
}

// DeletePodDisruptionBudget forgets a PDB.
func (c *Cluster) DeletePodDisruptionBudget(namespace, name string) {
	forget(c, c.pdbs, key(namespace, name))
}

// UpdateNodePool records the current version of a NodePool.
func (c *Cluster) UpdateNodePool(np *karpv1.NodePool) {
	remember(c, c.nodePools, np.Name, np.DeepCopy(), specChanged[*karpv1.NodePool])
}

// DeleteNodePool forgets a NodePool.
func (c *Cluster) DeleteNodePool(name string) {
	forget(c, c.nodePools, name)
}

// UpdateEC2NodeClass records the current version of an EC2NodeClass.
func (c *Cluster) UpdateEC2NodeClass(nc *awsv1.EC2NodeClass) {
	remember(c, c.nodeClasses, nc.Name, nc.DeepCopy(), anyChange[*awsv1.EC2NodeClass])
}

// DeleteEC2NodeClass forgets an EC2NodeClass.
func (c *Cluster) DeleteEC2NodeClass(name string) {
	forget(c, c.nodeClasses, name)
}

// UpdateNodeOverlay records the current version of a NodeOverlay. A new
// spec may make a consolidation worthwhile (a price changed), so it counts
// as a relaxation; a status update, which the overlay's own controller
// writes, does not.
func (c *Cluster) UpdateNodeOverlay(o *v1alpha1.NodeOverlay) {
	remember(c, c.nodeOverlays, o.Name, o.DeepCopy(), specChanged[*v1alpha1.NodeOverlay])
}

// DeleteNodeOverlay forgets a NodeOverlay.
func (c *Cluster) DeleteNodeOverlay(name string) {
	forget(c, c.nodeOverlays, name)
}

// UpdateNamespace records the current version of a Namespace, for pod
// affinity terms with a namespaceSelector.
func (c *Cluster) UpdateNamespace(ns *corev1.Namespace) {
	remember(c, c.namespaces, ns.Name, ns.DeepCopy(), specChanged[*corev1.Namespace])
}

// DeleteNamespace forgets a Namespace.
func (c *Cluster) DeleteNamespace(name string) {
	forget(c, c.namespaces, name)
}

// UpdatePersistentVolumeClaim records the current version of a PVC, for the
// zones a pod's volumes allow.
func (c *Cluster) UpdatePersistentVolumeClaim(pvc *corev1.PersistentVolumeClaim) {
	remember(c, c.pvcs, key(pvc.Namespace, pvc.Name), pvc.DeepCopy(), anyChange[*corev1.PersistentVolumeClaim])
}

// DeletePersistentVolumeClaim forgets a PVC.
func (c *Cluster) DeletePersistentVolumeClaim(namespace, name string) {
	forget(c, c.pvcs, key(namespace, name))
}

// UpdatePersistentVolume records the current version of a PV.
func (c *Cluster) UpdatePersistentVolume(pv *corev1.PersistentVolume) {
	remember(c, c.pvs, pv.Name, pv.DeepCopy(), anyChange[*corev1.PersistentVolume])
}

// DeletePersistentVolume forgets a PV.
func (c *Cluster) DeletePersistentVolume(name string) {
	forget(c, c.pvs, name)
}

// NominationWindow is how long a node stays nominated after the provisioner
// expects pods to land on it: twice the longest provisioning batch, and at
// least 10 seconds, so that the scheduler has time to bind them.
func NominationWindow(batchMaxDuration time.Duration) time.Duration {
	return max(2*batchMaxDuration, 10*time.Second)
}

// Nominate marks the node or NodeClaim called name as expecting pods until
// until; a later nomination extends an earlier one, never shortens it.
func (c *Cluster) Nominate(name string, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.changes++
	if until.After(c.nominations[name]) {
		c.nominations[name] = until
	}
}

// replacementNomination is a nomination that holds until deadline while
// the node comes up, and afterInit past its initialization.
type replacementNomination struct {
	deadline  time.Time
	afterInit time.Duration
}

// NominateReplacement marks the node or NodeClaim called name, launched to
// take the pods of nodes being disrupted, as expecting them: until deadline
// while it comes up, and no longer than afterInit once it has initialized,
// by when the pods have landed or gone elsewhere. A replacement is not
// taken away as empty before its pods arrive, and is not kept from
// disruption long after (a replacement that drifts, or whose pods went to
// other nodes, is disrupted like any node).
func (c *Cluster) NominateReplacement(name string, deadline time.Time, afterInit time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.changes++
	if r, ok := c.replacements[name]; !ok || deadline.After(r.deadline) {
		c.replacements[name] = replacementNomination{deadline: deadline, afterInit: afterInit}
	}
}

// IsNominated reports whether the node or NodeClaim called name, under
// either of its names, is nominated at now.
func (c *Cluster) IsNominated(name string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := c.namesOf(name)
	sn := &StateNode{}
	for _, n := range names {
		if nc, ok := c.nodeClaims[n]; ok {
			sn.NodeClaim = nc
		}
		if node, ok := c.nodes[n]; ok {
			sn.Node = node
		}
	}
	return c.nominatedUntil(names, sn).After(now)
}

// MarkForDeletion records that the nodes or NodeClaims named are being taken
// away: they take no new pods from now on.
func (c *Cluster) MarkForDeletion(names ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.changes++
	c.relaxations++
	for _, n := range names {
		c.markedForDeletion[n] = true
	}
}

// UnmarkForDeletion undoes MarkForDeletion, for example when a disruption
// command is abandoned.
func (c *Cluster) UnmarkForDeletion(names ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.changes++
	c.relaxations++
	for _, name := range names {
		for _, n := range c.namesOf(name) {
			delete(c.markedForDeletion, n)
		}
	}
}

// namesOf returns the names of the StateNode that name identifies: its node
// name and its NodeClaim name, whichever exist, and name itself.
func (c *Cluster) namesOf(name string) []string {
	names := []string{name}
	if n, ok := c.nodes[name]; ok && n.Spec.ProviderID != "" {
		if claim, ok := c.claimByProviderID[n.Spec.ProviderID]; ok && claim != name {
			names = append(names, claim)
		}
	}
	if nc, ok := c.nodeClaims[name]; ok {
		if nc.Status.NodeName != "" && nc.Status.NodeName != name {
			names = append(names, nc.Status.NodeName)
		}
		if node, ok := c.nodeByProviderID[nc.Status.ProviderID]; ok && nc.Status.ProviderID != "" && node != name {
			names = append(names, node)
		}
	}
	return names
}

// nominatedUntil is until when sn, called names, is nominated.
func (c *Cluster) nominatedUntil(names []string, sn *StateNode) time.Time {
	var until time.Time
	for _, n := range names {
		if t := c.nominations[n]; t.After(until) {
			until = t
		}
		r, ok := c.replacements[n]
		if !ok {
			continue
		}
		t := r.deadline
		if at, ok := initializedAt(sn); ok && at.Add(r.afterInit).Before(t) {
			t = at.Add(r.afterInit)
		}
		if t.After(until) {
			until = t
		}
	}
	return until
}

func (c *Cluster) marked(names []string) bool {
	for _, n := range names {
		if c.markedForDeletion[n] {
			return true
		}
	}
	return false
}

// Changes counts the changes recorded so far: every update or deletion of
// an object, nomination and deletion mark. When it has not moved, a
// Snapshot taken now differs from the last one only in what depends on the
// time (nominations running out).
func (c *Cluster) Changes() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changes
}

// remember stores obj under k in one of the cluster's maps of objects that
// need no more bookkeeping than that. A new object, or one that relaxes says
// changed in what a decision reads, counts as a relaxation; the same
// version sent again does not.
func remember[K comparable, T metav1.Object](c *Cluster, m map[K]T, k K, obj T, relaxes func(old, obj T) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.changes++
	if old, ok := m[k]; !ok || (old.GetResourceVersion() != obj.GetResourceVersion() || obj.GetResourceVersion() == "") && relaxes(old, obj) {
		c.relaxations++
	}
	m[k] = obj
}

// forget removes k from one of those maps.
func forget[K comparable, T any](c *Cluster, m map[K]T, k K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.changes++
	c.relaxations++
	delete(m, k)
}

// dropPodList forgets the memoized pod list of a node name (or of the
// pending pods, under ""), and what was derived from it.
func (c *Cluster) dropPodList(node string) {
	delete(c.podLists, node)
	delete(c.podRequests, node)
}
