package provisioning

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/test/environment"
)

// inPool makes the pod select the NodePool's nodes.
func inPool(pool string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{wellknown.LabelNodePool: pool} }
}

// TestOtherProvidersPoolsAndNodes: nothing is launched for a NodePool of
// another provider's node class, even for pods only it could take, while
// the node that provider has up takes the pods it has room for, and
// stevedore's own NodePool launches for its pods.
func TestOtherProvidersPoolsAndNodes(t *testing.T) {
	e := newEnv(t, "prov-foreign", 206)
	e.nodeClass(metav1.ConditionTrue, "Ready", "")
	e.nodePool()
	kwok := environment.NewNodePool(e.Name+"-kwok", e.Name)
	// Its node class has the name of stevedore's Ready EC2NodeClass: only
	// its group and kind tell them apart.
	kwok.Spec.Template.Spec.NodeClassRef = environment.KWOKNodeClassRef()
	kwok.Spec.Template.Spec.NodeClassRef.Name = e.Name
	e.Create(kwok)
	// A node of 2 CPUs that the other provider has up in its NodePool.
	node, _ := e.CreateForeign(e.Name+"-kwok-node", kwok.Name)

	e.pod("fits-kwok-node", requests("1", "1Gi"), inPool(kwok.Name))
	e.pod("too-big-for-kwok-node", requests("3", "1Gi"), inPool(kwok.Name))
	e.pod("ours", inPool(e.Name))
	e.batch()

	var all karpv1.NodeClaimList
	if err := e.Kube.List(e.Ctx, &all); err != nil {
		t.Fatal(err)
	}
	pools := map[string]int{}
	for _, nc := range all.Items {
		if nc.Name != node.Name {
			pools[nc.Labels[wellknown.LabelNodePool]]++
		}
	}
	if len(pools) != 1 || pools[e.Name] != 1 {
		t.Errorf("new NodeClaims by NodePool %v, want one of %s only", pools, e.Name)
	}
	for _, tc := range []struct {
		pod, reason, note string
	}{
		{"fits-kwok-node", ReasonNominated, "node/" + node.Name},
		{"too-big-for-kwok-node", ReasonFailedScheduling, ""},
		{"ours", ReasonNominated, "nodeclaim/" + e.Name + "-"},
	} {
		evs := e.podEvents(tc.pod, tc.reason)
		if len(evs) != 1 || !strings.Contains(evs[0].Note, tc.note) {
			t.Errorf("pod %s: %s events %+v, want one naming %q", tc.pod, tc.reason, evs, tc.note)
		}
	}
	// The other provider's pool is not stevedore's to explain either.
	for _, ev := range e.podEvents("too-big-for-kwok-node", ReasonFailedScheduling) {
		if strings.Contains(ev.Note, "nodepool "+kwok.Name) {
			t.Errorf("the FailedScheduling note names the other provider's NodePool: %s", ev.Note)
		}
	}
	if evs := e.podEvents("too-big-for-kwok-node", ReasonNominated); len(evs) != 0 {
		t.Errorf("pod too-big-for-kwok-node nominated: %+v", evs)
	}
	if got := len(e.nodeClaimsIn(kwok.Name)); got != 1 {
		t.Errorf("%d NodeClaims in NodePool %s, want its provider's one", got, kwok.Name)
	}
}

// nodeClaimsIn returns the NodeClaims labelled with the NodePool's name.
func (e *env) nodeClaimsIn(pool string) []karpv1.NodeClaim {
	e.T.Helper()
	var list karpv1.NodeClaimList
	if err := e.Kube.List(e.Ctx, &list, client.MatchingLabels{wellknown.LabelNodePool: pool}); err != nil {
		e.T.Fatal(fmt.Errorf("listing NodeClaims of %s: %w", pool, err))
	}
	return list.Items
}
