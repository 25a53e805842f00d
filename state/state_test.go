package state_test

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/scheduling/resources"
	"github.com/stevedore-autoscaler/stevedore/state"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestJoin(t *testing.T) {
	type want struct {
		name        string
		inFlight    bool
		managed     bool
		nodePool    string
		allocatable corev1.ResourceList
		pods        []string
	}
	tests := []struct {
		name   string
		claims []*karpv1.NodeClaim
		nodes  []*corev1.Node
		pods   []*corev1.Pod
		want   []want
	}{{
		name:   "claim and node joined by providerID",
		claims: []*karpv1.NodeClaim{claim("default-abc", "default", launchedAs("aws:///us-east-1a/i-1", list("2", "8Gi")))},
		nodes:  []*corev1.Node{node("ip-10-0-0-1", "aws:///us-east-1a/i-1", inPool("default"))},
		pods:   []*corev1.Pod{pod("a", "p2", onNode("ip-10-0-0-1")), pod("a", "p1", onNode("ip-10-0-0-1")), pod("a", "pending")},
		want:   []want{{name: "ip-10-0-0-1", managed: true, nodePool: "default", allocatable: list("4", "16Gi"), pods: []string{"a/p1", "a/p2"}}},
	}, {
		name:   "claim not launched yet is in flight with its requests",
		claims: []*karpv1.NodeClaim{claim("default-abc", "default")},
		want:   []want{{name: "default-abc", inFlight: true, managed: true, nodePool: "default", allocatable: list("1", "2Gi")}},
	}, {
		name:   "launched claim without a node is in flight with its status allocatable",
		claims: []*karpv1.NodeClaim{claim("default-abc", "default", launchedAs("aws:///us-east-1a/i-1", list("2", "8Gi")))},
		want:   []want{{name: "default-abc", inFlight: true, managed: true, nodePool: "default", allocatable: list("2", "8Gi")}},
	}, {
		name:  "node without a claim is unmanaged",
		nodes: []*corev1.Node{node("static-1", "aws:///us-east-1a/i-9")},
		pods:  []*corev1.Pod{pod("kube-system", "proxy", onNode("static-1"))},
		want:  []want{{name: "static-1", allocatable: list("4", "16Gi"), pods: []string{"kube-system/proxy"}}},
	}, {
		name: "another provider's claims are not kept: its node is unmanaged, stevedore's is joined",
		claims: []*karpv1.NodeClaim{
			claim("kwok-abc", "kwok", ofKWOK, launchedAs("kwok://kwok-abc", list("2", "8Gi"))),
			claim("kwok-def", "kwok", ofKWOK),
			claim("default-abc", "default", ofEC2, launchedAs("aws:///us-east-1a/i-1", list("2", "8Gi"))),
		},
		nodes: []*corev1.Node{node("kwok-abc", "kwok://kwok-abc", inPool("kwok")), node("ip-10-0-0-1", "aws:///us-east-1a/i-1", inPool("default"))},
		pods:  []*corev1.Pod{pod("a", "p1", onNode("kwok-abc"))},
		want: []want{
			{name: "ip-10-0-0-1", managed: true, nodePool: "default", allocatable: list("4", "16Gi")},
			{name: "kwok-abc", nodePool: "kwok", allocatable: list("4", "16Gi"), pods: []string{"a/p1"}},
		},
	}, {
		name:   "different providerIDs do not join; order by name",
		claims: []*karpv1.NodeClaim{claim("z-claim", "default", launchedAs("aws:///us-east-1a/i-2", list("2", "8Gi")))},
		nodes:  []*corev1.Node{node("b-node", "aws:///us-east-1a/i-1"), node("a-node", "")},
		want: []want{
			{name: "a-node", allocatable: list("4", "16Gi")},
			{name: "b-node", allocatable: list("4", "16Gi")},
			{name: "z-claim", inFlight: true, managed: true, nodePool: "default", allocatable: list("2", "8Gi")},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := state.NewCluster()
			for _, n := range tt.nodes {
				c.UpdateNode(n)
			}
			for _, nc := range tt.claims {
				c.UpdateNodeClaim(nc)
			}
			for _, p := range tt.pods {
				c.UpdatePod(p)
			}
			s := c.Snapshot(t0)
			var got []want
			for _, sn := range s.Nodes {
				w := want{name: sn.Name(), inFlight: sn.InFlight(), managed: sn.Managed(), nodePool: sn.NodePool(), allocatable: sn.Allocatable()}
				for _, p := range sn.Pods {
					w.pods = append(w.pods, p.Namespace+"/"+p.Name)
				}
				got = append(got, w)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("state nodes:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestPodIndex(t *testing.T) {
	c := state.NewCluster()
	p := pod("a", "web", unschedulable)
	c.UpdatePod(p)
	c.UpdateNode(node("n1", ""))
	if s := c.Snapshot(t0); len(s.PendingPods) != 1 || len(s.Nodes[0].Pods) != 0 {
		t.Fatalf("pending pod: pending %d, on node %d", len(s.PendingPods), len(s.Nodes[0].Pods))
	}
	bound := pod("a", "web", onNode("n1"))
	c.UpdatePod(bound)
	if s := c.Snapshot(t0); len(s.PendingPods) != 0 || len(s.Nodes[0].Pods) != 1 {
		t.Fatalf("bound pod: pending %d, on node %d", len(s.PendingPods), len(s.Nodes[0].Pods))
	}
	done := bound.DeepCopy()
	done.Status.Phase = corev1.PodSucceeded
	c.UpdatePod(done)
	if s := c.Snapshot(t0); len(s.PendingPods) != 0 || len(s.Nodes[0].Pods) != 0 {
		t.Fatalf("finished pod kept: pending %d, on node %d", len(s.PendingPods), len(s.Nodes[0].Pods))
	}
	c.UpdatePod(bound)
	c.DeletePod("a", "web")
	if s := c.Snapshot(t0); len(s.Nodes[0].Pods) != 0 {
		t.Fatalf("deleted pod kept on node")
	}
}

func TestNominationWindow(t *testing.T) {
	for _, tt := range []struct{ batch, want time.Duration }{
		{0, 10 * time.Second},
		{time.Second, 10 * time.Second},
		{5 * time.Second, 10 * time.Second},
		{10 * time.Second, 20 * time.Second},
	} {
		if got := state.NominationWindow(tt.batch); got != tt.want {
			t.Errorf("NominationWindow(%v) = %v, want %v", tt.batch, got, tt.want)
		}
	}
}

func TestNominations(t *testing.T) {
	c := state.NewCluster()
	c.UpdateNodeClaim(claim("default-abc", "default"))
	c.Nominate("default-abc", t0.Add(10*time.Second))
	c.Nominate("default-abc", t0.Add(5*time.Second)) // does not shorten

	// The node registers: the nomination follows it under either name.
	c.UpdateNodeClaim(claim("default-abc", "default", launchedAs("aws:///i-1", list("2", "8Gi"))))
	c.UpdateNode(node("ip-1", "aws:///i-1", inPool("default")))

	tests := []struct {
		name string
		at   time.Time
		want bool
	}{
		{"default-abc", t0, true},
		{"ip-1", t0.Add(9 * time.Second), true},
		{"ip-1", t0.Add(10 * time.Second), false},
		{"default-abc", t0.Add(time.Minute), false},
		{"unknown", t0, false},
	}
	for _, tt := range tests {
		if got := c.IsNominated(tt.name, tt.at); got != tt.want {
			t.Errorf("IsNominated(%s, +%v) = %v, want %v", tt.name, tt.at.Sub(t0), got, tt.want)
		}
	}
	s := c.Snapshot(t0)
	sn, ok := s.Node("default-abc")
	if !ok || sn.Name() != "ip-1" || !sn.Nominated(t0) || !sn.NominatedUntil.Equal(t0.Add(10*time.Second)) {
		t.Errorf("snapshot node: %v %+v", ok, sn)
	}

	c.MarkForDeletion("ip-1")
	if sn, _ := c.Snapshot(t0).Node("default-abc"); !sn.MarkedForDeletion || !sn.Unschedulable() {
		t.Errorf("mark for deletion by node name not seen through the claim")
	}
	c.UnmarkForDeletion("default-abc")
	if sn, _ := c.Snapshot(t0).Node("ip-1"); sn.MarkedForDeletion {
		t.Errorf("unmark by claim name did not clear the mark made by node name")
	}

	c.DeleteNode("ip-1")
	c.DeleteNodeClaim("default-abc")
	if c.IsNominated("default-abc", t0) {
		t.Errorf("nomination outlived its NodeClaim")
	}
}

func TestSnapshotImmutable(t *testing.T) {
	c := state.NewCluster()
	n := node("n1", "aws:///i-1", inPool("default"))
	c.UpdateNode(n)
	c.UpdateNodeClaim(claim("c1", "default", launchedAs("aws:///i-1", list("4", "16Gi"))))
	c.UpdatePod(pod("a", "p1", onNode("n1")))
	c.UpdatePod(pod("a", "pending", unschedulable))
	s := c.Snapshot(t0)
	before := s.PackerInput(s.ProvisionablePods(), nil, packer.PreferenceScore)

	// The caller's object changes after it was handed over …
	n.Labels["changed"] = "yes"
	n.Spec.Unschedulable = true
	// … and the cluster moves on.
	c.UpdatePod(pod("a", "p2", onNode("n1")))
	c.DeletePod("a", "pending")
	changed := node("n1", "aws:///i-1", inPool("default"), cordoned)
	changed.Labels["other"] = "x"
	c.UpdateNode(changed)
	c.DeleteNodeClaim("c1")
	c.MarkForDeletion("n1")
	c.Nominate("n1", t0.Add(time.Hour))

	after := s.PackerInput(s.ProvisionablePods(), nil, packer.PreferenceScore)
	if !reflect.DeepEqual(before, after) {
		t.Errorf("snapshot changed:\nbefore %+v\n after %+v", before, after)
	}
	if len(s.Nodes) != 1 || !s.Nodes[0].Managed() || len(s.Nodes[0].Pods) != 1 || s.Nodes[0].MarkedForDeletion || s.Nodes[0].Nominated(t0) {
		t.Errorf("snapshot node changed: %+v", s.Nodes[0])
	}
	if _, ok := s.Nodes[0].Node.Labels["changed"]; ok {
		t.Errorf("the cluster kept the caller's object instead of a copy")
	}
	if len(s.PendingPods) != 1 {
		t.Errorf("pending pods changed: %d", len(s.PendingPods))
	}
}

func TestSnapshotDeterministic(t *testing.T) {
	objs := []func(*state.Cluster){
		func(c *state.Cluster) { c.UpdateNode(node("n2", "aws:///i-2", inPool("default"), initialized)) },
		func(c *state.Cluster) { c.UpdateNode(node("n1", "aws:///i-1", inPool("default"), initialized)) },
		func(c *state.Cluster) { c.UpdateNode(node("n3", "")) },
		func(c *state.Cluster) {
			c.UpdateNodeClaim(claim("c1", "default", launchedAs("aws:///i-1", list("4", "16Gi"))))
		},
		func(c *state.Cluster) {
			c.UpdateNodeClaim(claim("c2", "default", launchedAs("aws:///i-2", list("4", "16Gi"))))
		},
		func(c *state.Cluster) { c.UpdateNodeClaim(claim("c0", "default")) },
		func(c *state.Cluster) { c.UpdatePod(pod("b", "x", onNode("n1"))) },
		func(c *state.Cluster) { c.UpdatePod(pod("a", "y", onNode("n1"))) },
		func(c *state.Cluster) { c.UpdatePod(pod("a", "z", onNode("n2"))) },
		func(c *state.Cluster) { c.UpdatePod(pod("a", "q", unschedulable)) },
		func(c *state.Cluster) { c.UpdatePod(pod("b", "q", unschedulable)) },
		func(c *state.Cluster) { c.UpdateDaemonSet(daemonSet("kube-system", "b")) },
		func(c *state.Cluster) { c.UpdateDaemonSet(daemonSet("kube-system", "a")) },
	}
	build := func(order []int) packer.Input {
		c := state.NewCluster()
		for _, i := range order {
			objs[i](c)
		}
		s := c.Snapshot(t0)
		return s.PackerInput(s.ProvisionablePods(), []packer.NodePool{{Name: "default"}}, packer.PreferenceScore)
	}
	forward := make([]int, len(objs))
	for i := range forward {
		forward[i] = i
	}
	backward := slices.Clone(forward)
	slices.Reverse(backward)
	a, b := build(forward), build(backward)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("the order of updates changed the packer input:\n%+v\n%+v", a, b)
	}
	var names []string
	for _, n := range a.Nodes {
		names = append(names, n.Name)
	}
	if want := []string{"c0", "n1", "n2", "n3"}; !slices.Equal(names, want) {
		t.Errorf("node order %v, want %v", names, want)
	}
	if got := a.Pods[0].Namespace + "/" + a.Pods[0].Name; got != "a/q" {
		t.Errorf("first pending pod %s, want a/q", got)
	}
}

func TestSynced(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := karpv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	launchedNoID := claim("c-bad", "default")
	launchedNoID.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeLaunched, Status: metav1.ConditionTrue, Reason: "Launched"}}

	tests := []struct {
		name  string
		api   []client.Object
		state func(*state.Cluster)
		want  bool
	}{
		{"empty", nil, func(*state.Cluster) {}, true},
		{
			"all known",
			[]client.Object{claim("c1", "default", launchedAs("aws:///i-1", list("1", "1Gi"))), node("n1", "aws:///i-1")},
			func(c *state.Cluster) {
				c.UpdateNodeClaim(claim("c1", "default", launchedAs("aws:///i-1", list("1", "1Gi"))))
				c.UpdateNode(node("n1", "aws:///i-1"))
			},
			true,
		},
		{
			"node missing",
			[]client.Object{node("n1", "")},
			func(*state.Cluster) {},
			false,
		},
		{
			"claim missing",
			[]client.Object{claim("c1", "default")},
			func(*state.Cluster) {},
			false,
		},
		{
			"claim's launch not seen yet",
			[]client.Object{claim("c1", "default", launchedAs("aws:///i-1", list("1", "1Gi")))},
			func(c *state.Cluster) { c.UpdateNodeClaim(claim("c1", "default")) },
			false,
		},
		{
			"launched claim without providerID",
			[]client.Object{launchedNoID},
			func(c *state.Cluster) { c.UpdateNodeClaim(launchedNoID) },
			false,
		},
		{
			"another provider's claims are not waited for",
			[]client.Object{claim("kwok-1", "kwok", ofKWOK, launchedAs("kwok://kwok-1", list("1", "1Gi"))), claim("kwok-2", "kwok", ofKWOK), node("kwok-1", "kwok://kwok-1")},
			func(c *state.Cluster) {
				c.UpdateNode(node("kwok-1", "kwok://kwok-1"))
				c.UpdateNodeClaim(claim("kwok-1", "kwok", ofKWOK, launchedAs("kwok://kwok-1", list("1", "1Gi"))))
			},
			true,
		},
		{
			"stevedore's claims beside another provider's are",
			[]client.Object{claim("kwok-1", "kwok", ofKWOK), claim("c1", "default", ofEC2)},
			func(c *state.Cluster) { c.UpdateNodeClaim(claim("kwok-1", "kwok", ofKWOK)) },
			false,
		},
		{
			"extra objects in state are fine",
			nil,
			func(c *state.Cluster) { c.UpdateNode(node("gone", "")) },
			true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tt.api...).Build()
			c := state.NewCluster()
			tt.state(c)
			if got := c.Synced(context.Background(), api); got != tt.want {
				t.Errorf("Synced = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestIsProvisionable(t *testing.T) {
	terminating := func(p *corev1.Pod) {
		now := metav1.NewTime(t0)
		p.DeletionTimestamp = &now
	}
	preempting := func(p *corev1.Pod) { p.Status.NominatedNodeName = "n1" }
	scheduledTrue := func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}
	}
	otherReason := func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "SchedulingGated"}}
	}
	failed := func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }
	tests := []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"unschedulable", pod("a", "p", unschedulable), true},
		{"owned by a ReplicaSet", pod("a", "p", unschedulable, ownedBy("apps/v1", "ReplicaSet")), true},
		{"no condition yet", pod("a", "p"), false},
		{"scheduled", pod("a", "p", scheduledTrue), false},
		{"gated", pod("a", "p", otherReason), false},
		{"bound", pod("a", "p", unschedulable, onNode("n1")), false},
		{"preempting", pod("a", "p", unschedulable, preempting), false},
		{"DaemonSet pod", pod("a", "p", unschedulable, ownedBy("apps/v1", "DaemonSet")), false},
		{"static pod", pod("a", "p", unschedulable, ownedBy("v1", "Node")), false},
		{"DaemonSet of another group", pod("a", "p", unschedulable, ownedBy("example.com/v1", "DaemonSet")), true},
		{"terminating", pod("a", "p", unschedulable, terminating), false},
		{"failed", pod("a", "p", unschedulable, failed), false},
	}
	for _, tt := range tests {
		if got := state.IsProvisionable(tt.pod); got != tt.want {
			t.Errorf("%s: IsProvisionable = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestPackerInput(t *testing.T) {
	startup := corev1.Taint{Key: "example.com/agent-not-ready", Effect: corev1.TaintEffectNoSchedule}
	dedicated := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	notReady := corev1.Taint{Key: wellknown.TaintKeyNotReady, Effect: corev1.TaintEffectNoSchedule}

	c := state.NewCluster()
	// Registered and initialized, with a pod and a DaemonSet pod.
	c.UpdateNodeClaim(claim("default-1", "default", launchedAs("aws:///i-1", list("4", "16Gi"))))
	c.UpdateNode(node("ip-1", "aws:///i-1", inPool("default"), initialized, taints(dedicated)))
	c.UpdatePod(pod("a", "web", onNode("ip-1")))
	c.UpdatePod(pod("kube-system", "agent-x", onNode("ip-1"), ownedBy("apps/v1", "DaemonSet")))
	// Registered, not initialized: startup and not-ready taints are ignored.
	c.UpdateNodeClaim(claim("default-2", "default", launchedAs("aws:///i-2", list("4", "16Gi")), claimTaints([]corev1.Taint{dedicated}, []corev1.Taint{startup})))
	c.UpdateNode(node("ip-2", "aws:///i-2", inPool("default"), taints(dedicated, startup, notReady)))
	// In flight, with a taint and a startup taint.
	c.UpdateNodeClaim(claim("default-3", "default", claimTaints([]corev1.Taint{dedicated}, []corev1.Taint{startup})))
	// Unmanaged and cordoned; and one marked for deletion.
	c.UpdateNode(node("static", "", cordoned))
	c.UpdateNode(node("retiring", "aws:///i-4", inPool("default"), initialized))
	c.MarkForDeletion("retiring")
	c.UpdateDaemonSet(daemonSet("kube-system", "agent"))
	c.UpdateNamespace(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"team": "web"}}})
	// Volumes.
	c.UpdatePersistentVolumeClaim(pvc("a", "data", "pv-1"))
	c.UpdatePersistentVolume(pv("pv-1", []string{"us-east-1b"}))
	c.UpdatePersistentVolumeClaim(pvc("a", "orphan", "pv-missing"))
	pending := []*corev1.Pod{
		pod("a", "db", unschedulable, withPVC("data")),
		pod("a", "lost", unschedulable, withPVC("orphan")),
		pod("b", "plain", unschedulable),
	}
	for _, p := range pending {
		c.UpdatePod(p)
	}

	s := c.Snapshot(t0)
	pods := s.ProvisionablePods()
	in := s.PackerInput(pods, []packer.NodePool{{Name: "default"}, {Name: "other", InUse: list("1", "1Gi")}}, packer.PreferenceRespect)

	if len(in.Pods) != 3 || in.PreferencePolicy != packer.PreferenceRespect {
		t.Fatalf("pods %d, policy %q", len(in.Pods), in.PreferencePolicy)
	}
	byName := map[string]packer.Node{}
	var names []string
	for _, n := range in.Nodes {
		byName[n.Name] = n
		names = append(names, n.Name)
	}
	if want := []string{"default-3", "ip-1", "ip-2", "retiring", "static"}; !slices.Equal(names, want) {
		t.Fatalf("nodes %v, want %v", names, want)
	}
	type summary struct {
		nodePool      string
		inFlight      bool
		taints        []corev1.Taint
		cpu           int64
		pods          int
		unschedulable bool
	}
	want := map[string]summary{
		"ip-1":      {"default", false, []corev1.Taint{dedicated}, 4000, 2, false},
		"ip-2":      {"default", false, []corev1.Taint{dedicated}, 4000, 0, false},
		"default-3": {"default", true, []corev1.Taint{dedicated}, 1000, 0, false},
		"static":    {"", false, nil, 4000, 0, true},
		"retiring":  {"default", false, nil, 4000, 0, true},
	}
	for name, w := range want {
		n := byName[name]
		got := summary{n.NodePool, n.InFlight, n.Taints, n.Allocatable.Get(corev1.ResourceCPU), len(n.Pods), n.Unschedulable}
		if !reflect.DeepEqual(got, w) {
			t.Errorf("%s: got %+v, want %+v", name, got, w)
		}
	}
	inFlight := byName["default-3"]
	if zone, ok := inFlight.Requirements.Get(wellknown.LabelTopologyZone); !ok || !zone.Allows("us-east-1a") || zone.Allows("us-east-1b") {
		t.Errorf("in-flight requirements: %v", inFlight.Requirements)
	}
	if inFlight.Labels[wellknown.LabelTopologyZone] != "us-east-1a" || inFlight.Labels[wellknown.LabelNodePool] != "default" {
		t.Errorf("in-flight labels: %v", inFlight.Labels)
	}
	if _, ok := inFlight.Labels[wellknown.LabelInstanceType]; ok {
		t.Errorf("in-flight labels pin a multi-valued requirement: %v", inFlight.Labels)
	}

	if len(in.DaemonSetPods) != 1 || in.DaemonSetPods[0].Namespace != "kube-system" {
		t.Errorf("daemonset pods: %v", in.DaemonSetPods)
	}
	if got := in.NamespaceLabels["a"]; got["team"] != "web" || got[corev1.LabelMetadataName] != "a" {
		t.Errorf("namespace a labels: %v", got)
	}
	for _, ns := range []string{"b", "kube-system"} {
		if in.NamespaceLabels[ns][corev1.LabelMetadataName] != ns {
			t.Errorf("namespace %s missing: %v", ns, in.NamespaceLabels)
		}
	}
	wantZones := map[string][]string{"a/db": {"us-east-1b"}}
	gotZones := map[string][]string{}
	for k, v := range in.VolumeZones {
		gotZones[k.String()] = v
	}
	if !reflect.DeepEqual(gotZones, wantZones) {
		t.Errorf("volume zones %v, want %v", gotZones, wantZones)
	}

	// InUse: three nodes of "default" with 4 cpu each, plus the in-flight
	// claim's 1 cpu of requests; "other" keeps what the caller gave.
	def := resources.NewVector(in.NodePools[0].InUse)
	if def.Get(corev1.ResourceCPU) != 13000 || in.NodePools[0].InUse.Name("nodes", "").Value() != 4 {
		t.Errorf("default InUse: %v", in.NodePools[0].InUse)
	}
	if !reflect.DeepEqual(in.NodePools[1].InUse, list("1", "1Gi")) {
		t.Errorf("other InUse overwritten: %v", in.NodePools[1].InUse)
	}
}

func TestVolumeZones(t *testing.T) {
	c := state.NewCluster()
	c.UpdatePersistentVolumeClaim(pvc("a", "one-zone", "pv-a"))
	c.UpdatePersistentVolume(pv("pv-a", []string{"us-east-1a"}))
	c.UpdatePersistentVolumeClaim(pvc("a", "two-zones", "pv-ab"))
	c.UpdatePersistentVolume(pv("pv-ab", []string{"us-east-1a", "us-east-1b"}))
	c.UpdatePersistentVolumeClaim(pvc("a", "other-zone", "pv-c"))
	c.UpdatePersistentVolume(pv("pv-c", []string{"us-east-1c"}))
	c.UpdatePersistentVolumeClaim(pvc("a", "alternatives", "pv-or"))
	c.UpdatePersistentVolume(pv("pv-or", []string{"us-east-1c"}, []string{"us-east-1b"}))
	c.UpdatePersistentVolumeClaim(pvc("a", "anywhere", "pv-any"))
	c.UpdatePersistentVolume(pv("pv-any"))
	c.UpdatePersistentVolumeClaim(pvc("a", "unbound", ""))
	c.UpdatePersistentVolumeClaim(pvc("a", "pv-unknown", "pv-not-seen"))
	c.UpdatePersistentVolumeClaim(pvc("a", "p-scratch", "pv-ab"))
	s := c.Snapshot(t0)

	tests := []struct {
		name   string
		pod    *corev1.Pod
		zones  []string
		wantOK bool
	}{
		{"one zone", pod("a", "p", withPVC("one-zone")), []string{"us-east-1a"}, true},
		{"intersection", pod("a", "p", withPVC("two-zones"), withPVC("one-zone")), []string{"us-east-1a"}, true},
		{"alternatives are a union", pod("a", "p", withPVC("alternatives")), []string{"us-east-1b", "us-east-1c"}, true},
		{"no affinity: any zone", pod("a", "p", withPVC("anywhere")), nil, true},
		{"unbound: any zone", pod("a", "p", withPVC("unbound")), nil, true},
		{"disjoint", pod("a", "p", withPVC("one-zone"), withPVC("other-zone")), nil, false},
		{"missing claim", pod("a", "p", withPVC("nope")), nil, false},
		{"PV not in state", pod("a", "p", withPVC("pv-unknown")), nil, false},
		{"ephemeral, claim exists", pod("a", "p", withEphemeral("scratch")), []string{"us-east-1a", "us-east-1b"}, true},
		{"ephemeral, claim not created yet", pod("a", "q", withEphemeral("scratch")), nil, true},
	}
	for _, tt := range tests {
		zones, ok := s.VolumeZones(tt.pod)
		if ok != tt.wantOK || !slices.Equal(zones, tt.zones) {
			t.Errorf("%s: VolumeZones = %v, %v; want %v, %v", tt.name, zones, ok, tt.zones, tt.wantOK)
		}
	}
}
