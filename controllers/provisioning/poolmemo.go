package provisioning

import (
	"slices"
	"sync"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/karpenter/v1alpha1"
	"github.com/stevedore-autoscaler/stevedore/cloud/offerings"
	"github.com/stevedore-autoscaler/stevedore/scheduling/overlay"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
)

// PoolMemo keeps the packer NodePools that LaunchablePools built, for a
// caller that asks every few seconds (the provisioner, the disruption
// controller): matching every instance type against a NodePool's
// requirements was a good part of each pass. A pool is built again when
// its NodePool or node class is another object than before (the cluster
// state replaces an object on every update, so the same pointer is the same
// version) or the cloud provider's instance types are other values (the
// provider hands out types it never modifies, and new values when prices,
// offerings or availability change). The zero value is ready to use; it is
// safe for concurrent use.
type PoolMemo struct {
	mu    sync.Mutex
	pools map[string]memoPool
	// overlays is the last evaluation of NodeOverlays, reused while the
	// overlays and every pool's inputs are the same objects, so that the
	// overlaid types stay the same values and the pools built from them
	// are reused too.
	overlays *memoOverlays
}

type memoOverlays struct {
	overlays []*v1alpha1.NodeOverlay
	listed   []listed
	applied  map[string][]*packer.InstanceType
}

// overlaid returns each listed pool's instance types with the overlays
// applied, by NodePool name, from the memo when its inputs are the very
// ones it was computed from.
func (m *PoolMemo) overlaid(overlays []*v1alpha1.NodeOverlay, ls []listed) map[string][]*packer.InstanceType {
	if m != nil {
		m.mu.Lock()
		defer m.mu.Unlock()
		if o := m.overlays; o != nil && slices.Equal(o.overlays, overlays) && slices.EqualFunc(o.listed, ls, sameListed) {
			return o.applied
		}
	}
	result := overlay.Evaluate(overlays, overlayPools(ls))
	applied := make(map[string][]*packer.InstanceType, len(ls))
	for _, l := range ls {
		applied[l.np.Name] = result.Apply(l.np.Name, l.types)
	}
	if m != nil {
		m.overlays = &memoOverlays{overlays: slices.Clone(overlays), listed: slices.Clone(ls), applied: applied}
	}
	return applied
}

func sameListed(a, b listed) bool {
	return a.np == b.np && a.class == b.class && slices.Equal(a.types, b.types)
}

type memoPool struct {
	np    *karpv1.NodePool
	class *awsv1.EC2NodeClass
	types []*packer.InstanceType
	pool  packer.NodePool
}

// nodePool is offerings.NodePool, from the memo when its inputs are the
// very ones it was built from. The pool returned is shared: callers copy it
// before changing it, as Snapshot.PackerInput does.
func (m *PoolMemo) nodePool(np *karpv1.NodePool, class *awsv1.EC2NodeClass, types []*packer.InstanceType) (packer.NodePool, error) {
	if m == nil {
		return offerings.NodePool(np, class, types)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.pools[np.Name]; ok && e.np == np && e.class == class && slices.Equal(e.types, types) {
		return e.pool, nil
	}
	pool, err := offerings.NodePool(np, class, types)
	if err != nil {
		delete(m.pools, np.Name)
		return pool, err
	}
	if m.pools == nil {
		m.pools = map[string]memoPool{}
	}
	m.pools[np.Name] = memoPool{np: np, class: class, types: types, pool: pool}
	return pool, nil
}

// retain forgets the pools of NodePools that are gone, so that a memo kept
// for the life of the process holds no instance types for them.
func (m *PoolMemo) retain(nodePools []*karpv1.NodePool) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for name := range m.pools {
		if !slices.ContainsFunc(nodePools, func(np *karpv1.NodePool) bool { return np.Name == name }) {
			delete(m.pools, name)
		}
	}
}
