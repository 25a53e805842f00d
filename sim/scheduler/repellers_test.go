package scheduler

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-autoscaler/stevedore/sim/apiserver"
	"github.com/stevedore-autoscaler/stevedore/sim/internal/simtest"
)

func TestRepellerSelects(t *testing.T) {
	web := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	prod := &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
	newcomer := func(ns string, lbl map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Labels: lbl}}
	}
	webPod := map[string]string{"app": "web"}
	cases := []struct {
		name     string
		term     corev1.PodAffinityTerm
		pod      *corev1.Pod
		nsLabels map[string]string
		want     bool
	}{
		{"own namespace, selected", corev1.PodAffinityTerm{LabelSelector: web}, newcomer("apps", webPod), nil, true},
		{"own namespace, other labels", corev1.PodAffinityTerm{LabelSelector: web}, newcomer("apps", map[string]string{"app": "db"}), nil, false},
		{"other namespace", corev1.PodAffinityTerm{LabelSelector: web}, newcomer("other", webPod), nil, false},
		{"no label selector selects no pod", corev1.PodAffinityTerm{}, newcomer("apps", webPod), nil, false},
		{"empty label selector selects every pod", corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{}}, newcomer("apps", nil), nil, true},
		{"listed namespace", corev1.PodAffinityTerm{LabelSelector: web, Namespaces: []string{"other"}}, newcomer("other", webPod), nil, true},
		{"list leaves out the own namespace", corev1.PodAffinityTerm{LabelSelector: web, Namespaces: []string{"other"}}, newcomer("apps", webPod), nil, false},
		{"namespace selector matches", corev1.PodAffinityTerm{LabelSelector: web, NamespaceSelector: prod}, newcomer("other", webPod), map[string]string{"env": "prod"}, true},
		{"namespace selector does not match", corev1.PodAffinityTerm{LabelSelector: web, NamespaceSelector: prod}, newcomer("other", webPod), map[string]string{"env": "dev"}, false},
		{"empty namespace selector: every namespace", corev1.PodAffinityTerm{LabelSelector: web, NamespaceSelector: &metav1.LabelSelector{}}, newcomer("other", webPod), nil, true},
		{"list and selector are unioned", corev1.PodAffinityTerm{LabelSelector: web, Namespaces: []string{"x"}, NamespaceSelector: prod}, newcomer("x", webPod), nil, true},
		{"a selector that does not parse selects everything", corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}}}}, newcomer("apps", nil), nil, true},
		{"matchLabelKeys is left out: a yes kube-scheduler might not give", corev1.PodAffinityTerm{LabelSelector: web, MatchLabelKeys: []string{"pod-template-hash"}}, newcomer("apps", map[string]string{"app": "web", "pod-template-hash": "b"}), nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := New(nil, nil)
			if got := b.repeller("apps", &tc.term).selects(tc.pod, tc.nsLabels); got != tc.want {
				t.Fatalf("selects = %v, want %v", got, tc.want)
			}
		})
	}
	// nil and empty selectors are different terms.
	b := New(nil, nil)
	if b.repeller("apps", &corev1.PodAffinityTerm{}).key == b.repeller("apps", &corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{}}).key {
		t.Fatal("a term without a selector and one with an empty selector share a key")
	}
}

// The cheap filters decide as the full check would: on random clusters
// with anti-affinity of every namespace form among the bound pods, a
// binder that sends every pod through the full check binds the same pods
// to the same nodes and writes the same messages.
func TestCheapFiltersAgreeWithTheFullCheck(t *testing.T) {
	for seed := range uint64(12) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			fast, fastAPI := randomBinder(t, seed)
			full, fullAPI := randomBinder(t, seed)
			full.alwaysFull = true
			for pass := range 3 {
				simtest.Reconcile(t, fast, "", Name)
				simtest.Reconcile(t, full, "", Name)
				for _, o := range fastAPI.Objects(podGVK) {
					p := o.(*corev1.Pod)
					q := fullAPI.Object(podGVK, p.Namespace, p.Name).(*corev1.Pod)
					if p.Spec.NodeName != q.Spec.NodeName || scheduledMessage(p) != scheduledMessage(q) {
						t.Fatalf("pass %d, pod %s/%s: cheap filters gave node %q %q, the full check node %q %q",
							pass, p.Namespace, p.Name, p.Spec.NodeName, scheduledMessage(p), q.Spec.NodeName, scheduledMessage(q))
					}
				}
				// More pods come between passes.
				addRandomPods(t, fastAPI, rand.New(rand.NewPCG(seed, uint64(pass))), pass)
				addRandomPods(t, fullAPI, rand.New(rand.NewPCG(seed, uint64(pass))), pass)
			}
			if fast.alwaysFull || len(fast.repellers) == 0 {
				t.Fatal("the cluster had no anti-affinity to test against")
			}
		})
	}
}

func scheduledMessage(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return string(c.Status) + " " + c.Message
		}
	}
	return ""
}

// randomBinder builds, from seed, a cluster of nodes in two zones with
// pods bound to them, some with required anti-affinity.
func randomBinder(t *testing.T, seed uint64) (*Binder, *apiserver.Server) {
	t.Helper()
	api, clk := simtest.Server(t, "apps", "other")
	ns := &corev1.Namespace{}
	if err := api.Get(context.Background(), client.ObjectKey{Name: "other"}, ns); err != nil {
		t.Fatal(err)
	}
	ns.Labels = map[string]string{"env": "prod"}
	if err := api.Update(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 99))
	var nodes []string
	for i := range 8 {
		name := fmt.Sprintf("n%d", i)
		nodes = append(nodes, name)
		simtest.Create(t, api, node(name, []string{"a", "b"}[i%2], fmt.Sprint(2+rng.IntN(4))))
	}
	for i := range 12 {
		p := randomPod(rng, fmt.Sprintf("bound-%d", i), true)
		p.Spec.NodeName = nodes[rng.IntN(len(nodes))]
		simtest.Create(t, api, p)
	}
	addRandomPods(t, api, rng, -1)
	return New(api, clk), api
}

func addRandomPods(t *testing.T, api *apiserver.Server, rng *rand.Rand, round int) {
	t.Helper()
	for i := range 10 {
		simtest.Create(t, api, randomPod(rng, fmt.Sprintf("new-%d-%d", round+1, i), false))
	}
}

// randomPod is a pod of app web, db or batch in namespace apps or other;
// with bound, it may carry a required anti-affinity term in one of the
// namespace forms.
func randomPod(rng *rand.Rand, name string, bound bool) *corev1.Pod {
	p := pod(name, fmt.Sprintf("%dm", 200+rng.IntN(1200)), "")
	p.Namespace = []string{"apps", "other"}[rng.IntN(2)]
	p.Labels = map[string]string{"app": []string{"web", "db", "batch"}[rng.IntN(3)]}
	if !bound || rng.IntN(2) == 0 {
		return p
	}
	term := corev1.PodAffinityTerm{TopologyKey: []string{corev1.LabelHostname, corev1.LabelTopologyZone}[rng.IntN(2)],
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": []string{"web", "db"}[rng.IntN(2)]}}}
	switch rng.IntN(4) {
	case 1:
		term.Namespaces = []string{"apps"}
	case 2:
		term.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
	case 3:
		term.NamespaceSelector = &metav1.LabelSelector{}
	}
	p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term}}}
	return p
}
