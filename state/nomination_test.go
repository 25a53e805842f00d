package state_test

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/state"
)

// slots returns a resource list of cpu, memory and room for 110 pods, as
// the provisioner writes NodeClaim requests and kubelets report allocatable.
func slots(cpu, mem string) corev1.ResourceList {
	l := list(cpu, mem)
	l[corev1.ResourcePods] = resource.MustParse("110")
	return l
}

func withUID(uid string) podOpt { return func(p *corev1.Pod) { p.UID = types.UID(uid) } }

// withSlots gives a node the allocatable slots returns.
func withSlots(n *corev1.Node) { n.Status.Allocatable = slots("4", "16Gi") }

// requestsOf sets what a NodeClaim requests, which is its allocatable until
// it launches.
func requestsOf(l corev1.ResourceList) claimOpt {
	return func(nc *karpv1.NodeClaim) { nc.Spec.Resources.Requests = l }
}

func initializedAt(at time.Time) claimOpt {
	return func(nc *karpv1.NodeClaim) {
		nc.Status.Conditions = append(nc.Status.Conditions, metav1.Condition{
			Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue, Reason: "Initialized", LastTransitionTime: metav1.NewTime(at),
		})
	}
}

func registeredAt(at time.Time) claimOpt {
	return func(nc *karpv1.NodeClaim) {
		nc.Status.Conditions = append(nc.Status.Conditions, metav1.Condition{
			Type: karpv1.ConditionTypeRegistered, Status: metav1.ConditionTrue, Reason: "Registered", LastTransitionTime: metav1.NewTime(at),
		})
	}
}

func TestPodNominations(t *testing.T) {
	const window = 10 * time.Second
	big := func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Requests = list("3", "1Gi") }
	tests := []struct {
		name string
		// setup fills the cluster; the pod a/web (UID "web") is nominated
		// to target at t0 for window, then change runs.
		setup  func(c *state.Cluster)
		target string
		change func(c *state.Cluster)
		at     time.Duration
		held   bool
		// until is the node's NominatedUntil when the nomination holds.
		until time.Duration
	}{{
		name: "in flight, within the window",
		setup: func(c *state.Cluster) {
			c.UpdateNodeClaim(claim("default-a", "default", requestsOf(slots("4", "16Gi"))))
		},
		target: "default-a", at: 5 * time.Second, held: true, until: 5*time.Second + window,
	}, {
		name: "in flight, booting for longer than the window",
		setup: func(c *state.Cluster) {
			c.UpdateNodeClaim(claim("default-a", "default", launchedAs("aws:///i-1", slots("4", "16Gi"))))
		},
		target: "default-a", at: time.Minute, held: true, until: time.Minute + window,
	}, {
		name: "registered, not initialized, past the window",
		setup: func(c *state.Cluster) {
			c.UpdateNodeClaim(claim("default-a", "default", launchedAs("aws:///i-1", slots("4", "16Gi"))))
			c.UpdateNode(node("ip-1", "aws:///i-1", inPool("default"), withSlots))
		},
		target: "default-a", at: time.Minute, held: true, until: time.Minute + window,
	}, {
		name: "registered, not initialized, within the initialization grace",
		setup: func(c *state.Cluster) {
			c.UpdateNodeClaim(claim("default-a", "default", launchedAs("aws:///i-1", slots("4", "16Gi")), registeredAt(t0)))
			c.UpdateNode(node("ip-1", "aws:///i-1", inPool("default"), withSlots))
		},
		target: "default-a", at: state.InitializationGrace, held: true, until: state.InitializationGrace + window,
	}, {
		// Its kubelet died before it turned Ready: the pod is planned
		// again rather than waiting for the node for good.
		name: "registered, never initialized, past the initialization grace",
		setup: func(c *state.Cluster) {
			c.UpdateNodeClaim(claim("default-a", "default", launchedAs("aws:///i-1", slots("4", "16Gi")), registeredAt(t0)))
			c.UpdateNode(node("ip-1", "aws:///i-1", inPool("default"), withSlots))
		},
		target: "default-a", at: state.InitializationGrace + time.Second,
	}, {
		name: "initialized less than the window ago: the scheduler is still binding",
		setup: func(c *state.Cluster) {
			c.UpdateNodeClaim(claim("default-a", "default", launchedAs("aws:///i-1", slots("4", "16Gi")), initializedAt(t0.Add(55*time.Second))))
			c.UpdateNode(node("ip-1", "aws:///i-1", inPool("default"), initialized, withSlots))
		},
		target: "default-a", at: time.Minute, held: true, until: 55*time.Second + window,
	}, {
		name: "initialized longer than the window ago",
		setup: func(c *state.Cluster) {
			c.UpdateNodeClaim(claim("default-a", "default", launchedAs("aws:///i-1", slots("4", "16Gi")), initializedAt(t0.Add(45*time.Second))))
			c.UpdateNode(node("ip-1", "aws:///i-1", inPool("default"), initialized, withSlots))
		},
		target: "ip-1", at: time.Minute,
	}, {
		name:   "existing node, within the window",
		setup:  func(c *state.Cluster) { c.UpdateNode(node("static", "", withSlots)) },
		target: "static", at: 9 * time.Second, held: true, until: window,
	}, {
		name:   "existing node, past the window",
		setup:  func(c *state.Cluster) { c.UpdateNode(node("static", "", withSlots)) },
		target: "static", at: window,
	}, {
		name: "NodeClaim deleted",
		setup: func(c *state.Cluster) {
			c.UpdateNodeClaim(claim("default-a", "default", requestsOf(slots("4", "16Gi"))))
		},
		target: "default-a", change: func(c *state.Cluster) { c.DeleteNodeClaim("default-a") },
	}, {
		name: "NodeClaim marked for deletion",
		setup: func(c *state.Cluster) {
			c.UpdateNodeClaim(claim("default-a", "default", requestsOf(slots("4", "16Gi"))))
		},
		target: "default-a", change: func(c *state.Cluster) { c.MarkForDeletion("default-a") },
	}, {
		name: "the pod was replaced by one of the same name",
		setup: func(c *state.Cluster) {
			c.UpdateNodeClaim(claim("default-a", "default", requestsOf(slots("4", "16Gi"))))
		},
		target: "default-a", change: func(c *state.Cluster) { c.UpdatePod(pod("a", "web", unschedulable, withUID("web-2"))) },
	}, {
		name: "the room was taken: a pod was bound there since",
		setup: func(c *state.Cluster) {
			c.UpdateNodeClaim(claim("default-a", "default", launchedAs("aws:///i-1", slots("4", "16Gi"))))
			c.UpdateNode(node("ip-1", "aws:///i-1", inPool("default"), withSlots))
		},
		target: "default-a", change: func(c *state.Cluster) { c.UpdatePod(pod("a", "other", onNode("ip-1"), big)) },
	}, {
		name: "the pod was bound: the nomination is forgotten",
		setup: func(c *state.Cluster) {
			c.UpdateNodeClaim(claim("default-a", "default", launchedAs("aws:///i-1", slots("4", "16Gi"))))
			c.UpdateNode(node("ip-1", "aws:///i-1", inPool("default"), withSlots))
		},
		target: "default-a",
		change: func(c *state.Cluster) {
			c.UpdatePod(pod("a", "web", onNode("ip-1"), withUID("web"), big))
			// Even if it showed up pending again, as after an eviction.
			c.UpdatePod(pod("a", "web", unschedulable, withUID("web"), big))
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := state.NewCluster()
			tt.setup(c)
			web := pod("a", "web", unschedulable, withUID("web"), big)
			c.UpdatePod(web)
			c.UpdatePod(pod("a", "other-pending", unschedulable))
			c.NominatePod(web, tt.target, t0, t0.Add(window))
			if tt.change != nil {
				tt.change(c)
			}
			s := c.Snapshot(t0.Add(tt.at))
			var provisionable []string
			for _, p := range s.ProvisionablePods() {
				provisionable = append(provisionable, p.Name)
			}
			if got := !slices.Contains(provisionable, "web"); got != tt.held {
				t.Errorf("held = %v, want %v (provisionable %v)", got, tt.held, provisionable)
			}
			if !slices.Contains(provisionable, "other-pending") {
				t.Errorf("a pod never nominated is not provisionable: %v", provisionable)
			}
			sn, ok := s.Node(tt.target)
			if !ok {
				return
			}
			in := s.PackerInput(s.ProvisionablePods(), nil, packer.PreferenceScore)
			var counted []string
			for _, n := range in.Nodes {
				if n.Name == sn.Name() {
					for _, p := range n.Pods {
						counted = append(counted, p.Name)
					}
				}
			}
			if got := slices.Contains(counted, "web"); got != tt.held || len(sn.NominatedPods) > 0 != tt.held {
				t.Errorf("counted on %s: packer %v, state %d nominated pods; want held %v", sn.Name(), counted, len(sn.NominatedPods), tt.held)
			}
			if tt.held && !sn.NominatedUntil.Equal(t0.Add(tt.until)) {
				t.Errorf("NominatedUntil = +%v, want +%v", sn.NominatedUntil.Sub(t0), tt.until)
			}
		})
	}
}

// TestStalled: a node that registered and has not initialized within
// InitializationGrace is stalled.
func TestStalled(t *testing.T) {
	c := state.NewCluster()
	c.UpdateNodeClaim(claim("default-a", "default", launchedAs("aws:///i-1", slots("4", "16Gi")), registeredAt(t0)))
	c.UpdateNode(node("ip-1", "aws:///i-1", inPool("default"), withSlots))
	for _, tc := range []struct {
		at      time.Duration
		stalled bool
	}{{time.Minute, false}, {state.InitializationGrace, false}, {state.InitializationGrace + time.Second, true}} {
		s := c.Snapshot(t0.Add(tc.at))
		sn, _ := s.Node("ip-1")
		if sn.Stalled(s.Time) != tc.stalled {
			t.Errorf("+%v: Stalled = %v, want %v", tc.at, !tc.stalled, tc.stalled)
		}
	}
}

// TestNominatedPodsFill: nominations are counted in pod order, each only if
// it still fits beside the pods before it.
func TestNominatedPodsFill(t *testing.T) {
	c := state.NewCluster()
	c.UpdateNodeClaim(claim("default-a", "default", requestsOf(slots("2", "8Gi"))))
	for _, name := range []string{"p1", "p2", "p3"} {
		p := pod("a", name, unschedulable, func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Requests = list("900m", "1Gi") })
		c.UpdatePod(p)
		c.NominatePod(p, "default-a", t0, t0.Add(10*time.Second))
	}
	s := c.Snapshot(t0)
	sn, _ := s.Node("default-a")
	var names []string
	for _, p := range sn.NominatedPods {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, []string{"p1", "p2"}) {
		t.Errorf("nominated pods counted: %v, want p1 p2", names)
	}
	if pods := s.ProvisionablePods(); len(pods) != 1 || pods[0].Name != "p3" {
		t.Errorf("provisionable: %v, want p3", pods)
	}
	c.DeletePod("a", "p1")
	if pods := c.Snapshot(t0).ProvisionablePods(); len(pods) != 0 {
		t.Errorf("provisionable once p1 is gone: %d pods, want none", len(pods))
	}
}

// TestDaemonsOnStartingNodes: a node still starting is offered to pods with
// the room of the DaemonSet pods it will run held back, as a new NodeClaim
// is sized; a DaemonSet that would not run there, or whose pod is there
// already, holds nothing back.
func TestDaemonsOnStartingNodes(t *testing.T) {
	dedicated := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	c := state.NewCluster()
	agent := daemonSet("kube-system", "agent")
	c.UpdateDaemonSet(agent)
	otherZone := daemonSet("kube-system", "zonal")
	otherZone.UID = "zonal-uid"
	otherZone.Spec.Template.Spec.NodeSelector = map[string]string{wellknown.LabelTopologyZone: "us-east-1b"}
	c.UpdateDaemonSet(otherZone)
	intolerant := daemonSet("kube-system", "picky")
	intolerant.UID = "picky-uid"
	intolerant.Spec.Template.Spec.NodeSelector = map[string]string{"only-here": "true"}
	c.UpdateDaemonSet(intolerant)
	tolerating := daemonSet("kube-system", "gpu-agent")
	tolerating.UID = "gpu-agent-uid"
	tolerating.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
	c.UpdateDaemonSet(tolerating)

	// In flight, launched, in us-east-1a.
	c.UpdateNodeClaim(claim("default-1", "default", launchedAs("aws:///i-1", slots("4", "16Gi"))))
	// In flight with a taint only gpu-agent tolerates.
	c.UpdateNodeClaim(claim("default-2", "default", claimTaints([]corev1.Taint{dedicated}, nil)))
	// Registered, not initialized, its agent pod already bound.
	c.UpdateNodeClaim(claim("default-3", "default", launchedAs("aws:///i-3", slots("4", "16Gi"))))
	c.UpdateNode(node("ip-3", "aws:///i-3", inPool("default"), func(n *corev1.Node) {
		n.Labels[wellknown.LabelTopologyZone] = "us-east-1a"
	}))
	c.UpdatePod(pod("kube-system", "agent-abcde", onNode("ip-3"), func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: agent.UID}}
	}))
	// Initialized: its DaemonSet pods are the ones bound to it.
	c.UpdateNodeClaim(claim("default-4", "default", launchedAs("aws:///i-4", slots("4", "16Gi"))))
	c.UpdateNode(node("ip-4", "aws:///i-4", inPool("default"), initialized))

	s := c.Snapshot(t0)
	in := s.PackerInput(nil, nil, packer.PreferenceScore)
	want := map[string][]string{
		"default-1": {"agent-daemon", "gpu-agent-daemon"},
		"default-2": {"gpu-agent-daemon"},
		"ip-3":      {"agent-abcde", "gpu-agent-daemon"},
		"ip-4":      nil,
	}
	for _, n := range in.Nodes {
		var got []string
		for _, p := range n.Pods {
			got = append(got, p.Name)
		}
		if !slices.Equal(got, want[n.Name]) {
			t.Errorf("%s: pods %v, want %v", n.Name, got, want[n.Name])
		}
	}
}

// TestReplacementNominations: a replacement is nominated until its deadline
// while it comes up, and for afterInit once it has initialized, unless a
// plain nomination (pods the provisioner expects) holds longer.
func TestReplacementNominations(t *testing.T) {
	deadline := t0.Add(10 * time.Minute)
	for _, tt := range []struct {
		name string
		// initAt is when the replacement initialized; zero while it has not.
		initAt time.Time
		// plain is an extra plain nomination's end; zero for none.
		plain time.Time
		want  time.Time
	}{
		{name: "coming up", want: deadline},
		{name: "initialized", initAt: t0.Add(2 * time.Minute), want: t0.Add(3 * time.Minute)},
		{name: "initialized after the deadline", initAt: t0.Add(20 * time.Minute), want: deadline},
		{name: "pods nominated past it", initAt: t0.Add(2 * time.Minute), plain: t0.Add(5 * time.Minute), want: t0.Add(5 * time.Minute)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := state.NewCluster()
			opts := []claimOpt{launchedAs("aws:///i-1", list("2", "8Gi"))}
			if !tt.initAt.IsZero() {
				opts = append(opts, initializedAt(tt.initAt))
			}
			c.UpdateNodeClaim(claim("default-rep", "default", opts...))
			c.UpdateNode(node("ip-1", "aws:///i-1", inPool("default")))
			c.NominateReplacement("default-rep", deadline, time.Minute)
			if !tt.plain.IsZero() {
				c.Nominate("ip-1", tt.plain)
			}
			sn, ok := c.Snapshot(t0).Node("default-rep")
			if !ok || !sn.NominatedUntil.Equal(tt.want) {
				t.Fatalf("NominatedUntil = +%v, want +%v", sn.NominatedUntil.Sub(t0), tt.want.Sub(t0))
			}
			if got, want := c.IsNominated("ip-1", tt.want.Add(-time.Second)), true; got != want {
				t.Errorf("IsNominated just before the end = %v", got)
			}
			if c.IsNominated("ip-1", tt.want) {
				t.Errorf("IsNominated at the end = true")
			}
		})
	}
}
