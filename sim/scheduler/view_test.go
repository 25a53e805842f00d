package scheduler

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/scheduling/resources"
	"github.com/stevedore-autoscaler/stevedore/sim/internal/simtest"
)

// freshCluster builds the view from every node and pod, as each pass did
// before the view was kept between passes.
func freshCluster(b *Binder) *cluster {
	cl := &cluster{nsLabel: map[string]map[string]string{}}
	index := map[string]int{}
	for _, o := range b.api.Objects(nodeGVK) {
		n := o.(*corev1.Node)
		index[n.Name] = len(cl.nodes)
		cl.nodes = append(cl.nodes, n)
		cl.packed = append(cl.packed, packer.Node{Name: n.Name, Labels: n.Labels, Taints: n.Spec.Taints,
			Allocatable: resources.NewVector(n.Status.Allocatable), Unschedulable: n.Spec.Unschedulable})
		cl.used = append(cl.used, resources.Vector{})
	}
	for _, o := range b.api.Objects(podGVK) {
		p := o.(*corev1.Pod)
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if i, ok := index[p.Spec.NodeName]; ok {
			cl.packed[i].Pods = append(cl.packed[i].Pods, p)
			cl.used[i].Add(resources.PodVector(p))
			if a := p.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
				for i := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
					r := b.repeller(p.Namespace, &a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[i])
					if !slices.ContainsFunc(cl.repellers, func(x repeller) bool { return x.key == r.key }) {
						cl.repellers = append(cl.repellers, r)
					}
				}
			}
		}
	}
	for _, o := range b.api.Objects(namespaceGVK) {
		cl.nsLabel[o.GetName()] = o.GetLabels()
	}
	slices.SortFunc(cl.repellers, func(x, y repeller) int { return strings.Compare(x.key, y.key) })
	return cl
}

func sameCluster(t *testing.T, step string, got, want *cluster) {
	t.Helper()
	if !reflect.DeepEqual(got.nodes, want.nodes) || !sameRepellers(got.repellers, want.repellers) || !reflect.DeepEqual(got.nsLabel, want.nsLabel) {
		t.Fatalf("%s: nodes, anti-affinity or namespaces differ from a fresh view", step)
	}
	if len(got.packed) != len(want.packed) {
		t.Fatalf("%s: %d packed nodes, want %d", step, len(got.packed), len(want.packed))
	}
	for i := range got.packed {
		g, w := got.packed[i], want.packed[i]
		if g.Requested != &got.used[i] {
			t.Fatalf("%s: node %s: Requested is not used", step, g.Name)
		}
		g.Requested = nil
		if !reflect.DeepEqual(g, w) || !reflect.DeepEqual(got.used[i], want.used[i]) {
			t.Fatalf("%s: node %s differs from a fresh view:\n%+v\n%+v", step, g.Name, g, w)
		}
	}
}

// The view kept between passes is, after every kind of change, what reading
// every node and pod again gives; and what a pass adds to it stays in that
// pass.
func TestClusterViewMatchesAFreshOne(t *testing.T) {
	api, clk := simtest.Server(t, "apps", "other")
	b := New(api, clk)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 4))
	var nodes []string
	for i := range 6 {
		name := fmt.Sprintf("n%d", i)
		nodes = append(nodes, name)
		simtest.Create(t, api, node(name, "a", "8"))
	}
	for step := range 300 {
		name := fmt.Sprintf("p%d", rng.IntN(40))
		ns := []string{"apps", "other"}[rng.IntN(2)]
		cur, _ := api.Object(podGVK, ns, name).(*corev1.Pod)
		switch op := rng.IntN(8); {
		case cur == nil:
			p := pod(name, fmt.Sprintf("%dm", 100+rng.IntN(900)), "")
			p.Namespace = ns
			if rng.IntN(3) == 0 {
				withDevice(p)
			}
			if rng.IntN(2) == 0 {
				p.Spec.NodeName = nodes[rng.IntN(len(nodes))]
			}
			if rng.IntN(5) == 0 {
				p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
					{TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"x": "y"}}}}}}
			}
			simtest.Create(t, api, p)
		case op == 0:
			if err := api.Delete(ctx, cur.DeepCopy(), ctxGrace0()); err != nil {
				t.Fatal(err)
			}
		case op == 1:
			p := cur.DeepCopy()
			p.Status.Phase = []corev1.PodPhase{corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed}[rng.IntN(3)]
			if err := api.Status().Update(ctx, p); err != nil {
				t.Fatal(err)
			}
		case op == 2:
			n := &corev1.Node{}
			if err := api.Get(ctx, client.ObjectKey{Name: nodes[rng.IntN(len(nodes))]}, n); err != nil {
				t.Fatal(err)
			}
			n.Spec.Unschedulable = !n.Spec.Unschedulable
			if err := api.Update(ctx, n); err != nil {
				t.Fatal(err)
			}
		case op == 3:
			// A node that goes and comes back, or a new one.
			victim := nodes[rng.IntN(len(nodes))]
			if err := api.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: victim}}); err != nil {
				t.Fatal(err)
			}
			simtest.Create(t, api, node(victim, "b", "16"))
		case op == 4:
			ns := &corev1.Namespace{}
			if err := api.Get(ctx, client.ObjectKey{Name: "other"}, ns); err != nil {
				t.Fatal(err)
			}
			ns.Labels = map[string]string{"step": fmt.Sprint(step)}
			if err := api.Update(ctx, ns); err != nil {
				t.Fatal(err)
			}
		default:
			// A pass of the scheduler itself, which binds and adds
			// what it binds to its view.
			simtest.Reconcile(t, b, "", Name)
		}
		// What a pass adds to its view, without writing it, stays in that
		// pass.
		probe := b.cluster()
		for i := range probe.packed {
			p := withDevice(pod(fmt.Sprintf("probe-%d-%d", step, i), "100m", ""))
			p.UID = types.UID(p.Name)
			probe.add(i, p)
		}
		sameCluster(t, fmt.Sprintf("step %d", step), b.cluster(), freshCluster(b))
	}
}

// withDevice makes p request an extended resource too: the sums of such
// requests carry a slice, which a pass must not share with what is kept.
func withDevice(p *corev1.Pod) *corev1.Pod {
	p.Spec.Containers[0].Resources.Requests["example.com/device"] = resource.MustParse("1")
	return p
}
