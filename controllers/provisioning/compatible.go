package provisioning

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/stevedore-autoscaler/stevedore/controllers/eventlimit"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/state"
)

// ReasonNoCompatibleInstanceTypes is a NodePool whose requirements leave it
// no instance type to launch, Karpenter's reason.
const ReasonNoCompatibleInstanceTypes = "NoCompatibleInstanceTypes"

// NoCompatibleInstanceTypes says why a NodePool can launch nothing whatever
// the pods ask: its requirements leave none of its node class's instance
// types with an available offering, or, unless minValues are relaxed
// (BestEffort), too few of them for a minValues. It returns "" when the
// NodePool has types to launch.
func NoCompatibleInstanceTypes(pool packer.NodePool, policy packer.MinValuesPolicy) string {
	if len(pool.InstanceTypes) == 0 {
		return "its requirements leave none of its node class's instance types with an available offering"
	}
	if policy == packer.MinValuesBestEffort {
		return ""
	}
	for r := range pool.Requirements.All() {
		need, ok := r.MinValues()
		if !ok || need <= 0 {
			continue
		}
		seen := map[string]bool{}
		for _, it := range pool.InstanceTypes {
			if tr, ok := it.Requirements.Get(r.Key()); ok && tr.Finite() {
				for v := range tr.Values() {
					seen[v] = true
				}
			}
		}
		if len(seen) < need {
			return fmt.Sprintf("the instance types its requirements leave carry %d value(s) of %s, fewer than its minValues %d", len(seen), r.Key(), need)
		}
	}
	return ""
}

// RecordNoCompatibleInstanceTypes records a NoCompatibleInstanceTypes
// Warning on each NodePool of pools that can launch nothing (see
// NoCompatibleInstanceTypes), as Karpenter does whenever it sets out to
// schedule with it: for pending pods, or for the pods of the nodes
// disruption considers. Static NodePools, which launch for their replica
// count only, are left out, as Karpenter leaves them out of scheduling. The
// NodePool objects are the snapshot's; rec limits the events per NodePool.
func RecordNoCompatibleInstanceTypes(rec *eventlimit.Recorder, now time.Time, snap state.Snapshot, pools []packer.NodePool, policy packer.MinValuesPolicy) {
	for _, pool := range pools {
		why := NoCompatibleInstanceTypes(pool, policy)
		if why == "" {
			continue
		}
		for _, np := range snap.NodePools {
			if np.Name == pool.Name && np.Spec.Replicas == nil {
				rec.Eventf(now, np, nil, corev1.EventTypeWarning, ReasonNoCompatibleInstanceTypes, "Provision", "NodePool can launch nothing: %s", why)
			}
		}
	}
}
