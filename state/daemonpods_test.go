package state_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/state"
)

// daemonPodOf returns a live pod of the DaemonSet kube-system/agent on node,
// created at created and requesting cpu.
func daemonPodOf(name, node string, created time.Time, cpu string) *corev1.Pod {
	return pod("kube-system", name, onNode(node), func(p *corev1.Pod) {
		p.CreationTimestamp = metav1.NewTime(created)
		p.UID = types.UID("uid-" + p.Name)
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "ds-uid", Controller: ptr.To(true)}}
		p.Spec.Containers[0].Resources.Requests = list(cpu, "128Mi")
	})
}

// TestDaemonSetOverhead: a DaemonSet stands in the snapshot, in the packer's
// input and among a starting node's expected daemons by its template with
// the namespace's LimitRange defaults until it has a pod; then by its
// newest pod, which a status update keeps and a deletion hands on to the
// next newest.
func TestDaemonSetOverhead(t *testing.T) {
	c := state.NewCluster()
	ds := daemonSet("kube-system", "agent")
	ds.Spec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}
	c.UpdateDaemonSet(ds)
	c.UpdateLimitRange(&corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "defaults"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type: corev1.LimitTypeContainer, Default: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
		}}},
	})
	// Another namespace's LimitRange changes nothing here.
	c.UpdateLimitRange(&corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "defaults"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type: corev1.LimitTypeContainer, Default: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("7")},
		}}},
	})
	// An in-flight NodeClaim expects the DaemonSet's pod.
	c.UpdateNodeClaim(claim("default-1", "default"))

	now := t0
	cpuOf := func(p *corev1.Pod) string {
		q := p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]
		return q.String()
	}
	check := func(step, wantCPU string) {
		t.Helper()
		now = now.Add(time.Second)
		s := c.Snapshot(now)
		if len(s.DaemonSetPods) != 1 || cpuOf(s.DaemonSetPods[0]) != wantCPU {
			t.Fatalf("%s: snapshot DaemonSet pods %v, want one requesting cpu %s", step, s.DaemonSetPods, wantCPU)
		}
		in := s.PackerInput(nil, []packer.NodePool{{Name: "default"}}, packer.PreferenceRespect)
		if len(in.DaemonSetPods) != 1 || cpuOf(in.DaemonSetPods[0]) != wantCPU {
			t.Fatalf("%s: packer DaemonSet pods %v, want one requesting cpu %s", step, in.DaemonSetPods, wantCPU)
		}
		sn, ok := s.Node("default-1")
		if !ok || len(sn.Daemons) != 1 || cpuOf(sn.Daemons[0]) != wantCPU {
			t.Fatalf("%s: the in-flight NodeClaim expects %v, want one pod requesting cpu %s", step, sn.Daemons, wantCPU)
		}
	}
	check("template with the LimitRange", "2")

	c.UpdatePod(daemonPodOf("agent-a", "n1", t0, "3"))
	check("one live pod", "3")
	c.UpdatePod(daemonPodOf("agent-b", "n2", t0.Add(time.Minute), "4"))
	c.UpdatePod(daemonPodOf("agent-c", "n3", t0.Add(-time.Minute), "5"))
	check("the newest of three", "4")

	running := daemonPodOf("agent-b", "n2", t0.Add(time.Minute), "4")
	running.Status.Phase = corev1.PodRunning
	c.UpdatePod(running)
	check("the newest after a status update", "4")

	c.DeletePod("kube-system", "agent-b")
	check("the next newest once the newest is gone", "3")
	finished := daemonPodOf("agent-a", "n1", t0, "3")
	finished.Status.Phase = corev1.PodSucceeded
	c.UpdatePod(finished)
	check("the last one once the others are gone", "5")
	c.DeletePod("kube-system", "agent-c")
	check("the template again", "2")

	c.DeleteLimitRange("kube-system", "defaults")
	check("the template without the LimitRange", "0")
}

// TestDaemonOverheadMismatches: a NodeClaim sized for a DaemonSet's pod is
// compared with the real pod once it is bound to the NodeClaim's node, once;
// a pod that requests more is reported, one that requests no more is not,
// and a NodeClaim without a node yet waits.
func TestDaemonOverheadMismatches(t *testing.T) {
	c := state.NewCluster()
	ds := daemonSet("kube-system", "agent")
	c.UpdateDaemonSet(ds)
	c.UpdateNodeClaim(claim("default-1", "default", launchedAs("aws:///i-1", list("4", "16Gi"))))
	c.UpdateNodeClaim(claim("default-2", "default", launchedAs("aws:///i-2", list("4", "16Gi"))))
	c.UpdateNodeClaim(claim("default-3", "default"))
	daemons := c.Snapshot(t0).DaemonSetPods
	for _, nc := range []string{"default-1", "default-2", "default-3"} {
		nodeClaim, _ := c.Snapshot(t0).Node(nc)
		if got := state.DaemonsFor(nodeClaim.NodeClaim, daemons); len(got) != 1 {
			t.Fatalf("%s is expected to run %d DaemonSet pods, want 1", nc, len(got))
		}
		c.RecordDaemonOverhead(nc, daemons)
	}
	if got := c.DaemonOverheadMismatches(); len(got) != 0 {
		t.Fatalf("mismatches before any node: %+v", got)
	}
	c.UpdateNode(node("ip-1", "aws:///i-1", inPool("default")))
	c.UpdateNode(node("ip-2", "aws:///i-2", inPool("default")))
	// The template asks for 100m; the pod on ip-1 got 2 cpu from
	// something the template does not show; the one on ip-2 is as planned.
	c.UpdatePod(daemonPodOf("agent-1", "ip-1", t0, "2"))
	c.UpdatePod(daemonPodOf("agent-2", "ip-2", t0, "100m"))
	got := c.DaemonOverheadMismatches()
	if len(got) != 1 {
		t.Fatalf("mismatches %+v, want the one on ip-1", got)
	}
	m := got[0]
	if m.NodeClaim != "default-1" || m.Node != "ip-1" || m.DaemonSet.String() != "kube-system/agent" || m.Pod.String() != "kube-system/agent-1" ||
		m.Assumed.Get(corev1.ResourceCPU) != 100 || m.Actual.Get(corev1.ResourceCPU) != 2000 {
		t.Errorf("mismatch %+v", m)
	}
	if again := c.DaemonOverheadMismatches(); len(again) != 0 {
		t.Errorf("reported again: %+v", again)
	}
}
