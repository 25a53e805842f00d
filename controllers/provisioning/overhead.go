package provisioning

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
)

// ReasonDaemonSetOverheadMismatch is a NodeClaim whose node got a DaemonSet
// pod that requests more than the NodeClaim was sized with for it.
const ReasonDaemonSetOverheadMismatch = "DaemonSetOverheadMismatch"

// reportOverhead reports the DaemonSet pods found requesting more than the
// NodeClaims of their nodes were sized with (state.DaemonOverheadMismatches):
// a Warning event on the NodeClaim, related to the DaemonSet, a count on
// stevedore_daemonset_overhead_mismatches_total and a log line, each naming
// the DaemonSet, the pod and the assumed and actual requests.
//
// Such a NodeClaim is short of room for the pods it was launched for, and
// when the DaemonSet's pods have the higher priority, one of those pods is
// pre-empted and comes back pending. Launching again for it with the same
// sizing would repeat that for ever, a node each time; it does not repeat,
// because a DaemonSet with a live pod is sized from its newest pod
// (state.Snapshot.DaemonSetPods), which the pod found here is or predates.
// So the mismatch costs one NodeClaim at most, and it is reported as the
// flaw it is, once per NodeClaim and DaemonSet.
func (p *Provisioner) reportOverhead(ctx context.Context, now time.Time) {
	for _, m := range p.state.DaemonOverheadMismatches() {
		assumed, actual := formatResources(m.Assumed.ResourceList()), formatResources(m.Actual.ResourceList())
		p.metrics.DaemonSetOverheadMismatch(m.DaemonSet.Namespace, m.DaemonSet.Name)
		log.FromContext(ctx).Info("daemonset pod requests more than its nodeclaim was sized with",
			"nodeclaim", m.NodeClaim, "node", m.Node, "daemonset", m.DaemonSet.String(), "pod", m.Pod.String(),
			"assumed", assumed, "actual", actual)
		nc := &karpv1.NodeClaim{}
		if err := p.client.Get(ctx, client.ObjectKey{Name: m.NodeClaim}, nc); err != nil {
			continue
		}
		var related runtime.Object
		ds := &appsv1.DaemonSet{}
		if err := p.client.Get(ctx, m.DaemonSet, ds); err == nil {
			related = ds
		}
		p.event(now, nc, related, corev1.EventTypeWarning, ReasonDaemonSetOverheadMismatch, "Provision",
			"DaemonSet %s: pod %s on node %s requests %s, more than the %s this NodeClaim was sized with for it; new NodeClaims are sized from the DaemonSet's newest pod",
			m.DaemonSet, m.Pod.Name, m.Node, actual, assumed)
	}
}
