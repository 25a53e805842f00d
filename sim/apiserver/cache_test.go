package apiserver

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The sorted entries and the sorted keys of index values are kept across
// writes: after any mix of creations, updates and deletions they must be what
// sorting the store afresh gives.
func TestOrderIsKeptAcrossWrites(t *testing.T) {
	s, _ := newServer(t)
	ctx := context.Background()
	mustCreate(t, s, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "zeta"}}, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "alpha"}})
	rng := rand.New(rand.NewPCG(1, 2))
	namespaces := []string{"apps", "zeta", "alpha", "default"}
	nodes := []string{"", "n1", "n2", "n3"}
	// Read once so that the order is built and from then on kept.
	s.Objects(podGVK)
	s.Select(podGVK, "spec.nodeName", "n1")
	for i := range 600 {
		ns := namespaces[rng.IntN(len(namespaces))]
		name := fmt.Sprintf("p%d", rng.IntN(60))
		cur := s.Object(podGVK, ns, name)
		switch {
		case cur == nil:
			p := pod(name, nodes[rng.IntN(len(nodes))], nil)
			p.Namespace = ns
			mustCreate(t, s, p)
		case rng.IntN(3) == 0:
			if err := s.Delete(ctx, cur.(*corev1.Pod).DeepCopy(), client.GracePeriodSeconds(0)); err != nil {
				t.Fatal(err)
			}
		default:
			p := cur.(*corev1.Pod).DeepCopy()
			p.Spec.NodeName = nodes[rng.IntN(len(nodes))]
			p.Labels = map[string]string{"i": fmt.Sprint(i)}
			if err := s.Update(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		if i%50 != 0 {
			continue
		}
		s.mu.Lock()
		ks := s.store(podGVK)
		var want []entry
		for k, o := range ks.objs {
			want = append(want, entry{key: k, obj: o})
		}
		slices.SortFunc(want, compareEntries)
		if got := ks.entries(); !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("after %d writes: entries %v, want %v", i, got, want)
		}
		for _, ns := range namespaces {
			var in []entry
			for _, e := range want {
				if e.key.Namespace == ns {
					in = append(in, e)
				}
			}
			if got := ks.inNamespace(ns); len(got) != len(in) || (len(in) > 0 && !reflect.DeepEqual(got, in)) {
				t.Fatalf("after %d writes: namespace %s has %v, want %v", i, ns, got, in)
			}
		}
		s.mu.Unlock()
		for _, n := range nodes {
			var want []string
			for _, o := range s.Objects(podGVK) {
				if o.(*corev1.Pod).Spec.NodeName == n {
					want = append(want, o.GetNamespace()+"/"+o.GetName())
				}
			}
			var got []string
			for _, o := range s.Select(podGVK, "spec.nodeName", n) {
				got = append(got, o.GetNamespace()+"/"+o.GetName())
			}
			if !slices.Equal(got, want) {
				t.Fatalf("after %d writes: Select(%q) = %v, want %v", i, n, got, want)
			}
			got = got[:0]
			for _, o := range s.SelectUnordered(podGVK, "spec.nodeName", n) {
				got = append(got, o.GetNamespace()+"/"+o.GetName())
			}
			slices.Sort(got)
			want = slices.Sorted(slices.Values(want))
			if !slices.Equal(got, want) {
				t.Fatalf("after %d writes: SelectUnordered(%q) = %v, want %v in some order", i, n, got, want)
			}
		}
	}
}

func TestStampsMoveWithWrites(t *testing.T) {
	s, _ := newServer(t)
	ctx := context.Background()
	if s.Stamp(podGVK) != 0 || s.IndexStamp(podGVK, "spec.nodeName", "n1") != 0 {
		t.Fatal("stamps of kinds and values never stored are not 0")
	}
	p := pod("a", "n1", nil)
	mustCreate(t, s, p)
	kind, n1, n2 := s.Stamp(podGVK), s.IndexStamp(podGVK, "spec.nodeName", "n1"), s.IndexStamp(podGVK, "spec.nodeName", "n2")
	if kind == 0 || n1 == 0 || n2 != 0 {
		t.Fatalf("after a creation: kind %d, n1 %d, n2 %d", kind, n1, n2)
	}
	// A write that changes nothing stores nothing.
	if err := s.Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	if s.Stamp(podGVK) != kind || s.IndexStamp(podGVK, "spec.nodeName", "n1") != n1 {
		t.Error("a no-op write moved the stamps")
	}
	// Another node's pod leaves n1's stamp alone.
	mustCreate(t, s, pod("b", "n2", nil))
	if s.IndexStamp(podGVK, "spec.nodeName", "n1") != n1 || s.IndexStamp(podGVK, "spec.nodeName", "n2") == 0 {
		t.Error("a pod of n2 moved n1's stamp, or not n2's")
	}
	// A status change of a pod that stays on n1 moves n1's stamp.
	p.Status.Phase = corev1.PodRunning
	if err := s.Status().Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	if s.IndexStamp(podGVK, "spec.nodeName", "n1") == n1 {
		t.Error("a write to a pod of n1 did not move n1's stamp")
	}
	n1 = s.IndexStamp(podGVK, "spec.nodeName", "n1")
	if err := s.Delete(ctx, p, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	if s.IndexStamp(podGVK, "spec.nodeName", "n1") == n1 || s.Len(podGVK) != 1 {
		t.Error("deleting n1's pod did not move n1's stamp, or the count is wrong")
	}
}

// A budget's status counts the pods of its own namespace only, and follows
// changes to its pods, to pods elsewhere and to its own selector.
func TestPDBStatusFollowsPodsAndSelector(t *testing.T) {
	s, _ := newServer(t)
	ctx := context.Background()
	mustCreate(t, s, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "b-other"}}, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "z-other"}})
	web := map[string]string{"app": "web"}
	yes := true
	rs := map[string]*appsv1.ReplicaSet{}
	for _, ns := range []string{"apps", "b-other", "z-other"} {
		r := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs", Namespace: ns}, Spec: appsv1.ReplicaSetSpec{Replicas: ptr(int32(3))}}
		mustCreate(t, s, r)
		rs[ns] = r
	}
	add := func(ns, name string, labels map[string]string, ready bool) *corev1.Pod {
		p := running(pod(name, "n1", labels), ready)
		p.Namespace = ns
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: rs[ns].UID, Controller: &yes}}
		mustCreate(t, s, p)
		if err := s.Status().Update(ctx, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := add("apps", "a", web, true)
	add("apps", "b", web, true)
	add("apps", "c", map[string]string{"app": "db"}, true)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "apps"}, Spec: policyv1.PodDisruptionBudgetSpec{
		MinAvailable: ptr(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: web}}}
	mustCreate(t, s, pdb)
	check := func(step string, healthy, expected int32) {
		t.Helper()
		cur := &policyv1.PodDisruptionBudget{}
		if err := s.Get(ctx, client.ObjectKeyFromObject(pdb), cur); err != nil {
			t.Fatal(err)
		}
		st := s.PDBStatus(cur)
		if st.CurrentHealthy != healthy || st.ExpectedPods != expected || st.DisruptionsAllowed != max(healthy-1, 0) {
			t.Errorf("%s: status %+v, want %d healthy of %d", step, st, healthy, expected)
		}
	}
	check("start", 2, 2)
	// Pods of the same labels in the namespaces either side do not count.
	for _, ns := range []string{"b-other", "z-other"} {
		for _, name := range []string{"a", "d", "e"} {
			add(ns, name, web, true)
		}
	}
	check("pods elsewhere", 2, 2)
	add("apps", "f", web, false)
	check("an unready pod", 2, 3)
	a.Status.Conditions[0].Status = corev1.ConditionFalse
	if err := s.Status().Update(ctx, a); err != nil {
		t.Fatal(err)
	}
	check("a pod no longer ready", 1, 3)
	// A pod that loses the label, and one that gains it.
	b := s.Object(podGVK, "apps", "b").(*corev1.Pod).DeepCopy()
	b.Labels = map[string]string{"app": "db"}
	if err := s.Update(ctx, b); err != nil {
		t.Fatal(err)
	}
	check("a pod relabelled away", 0, 2)
	b.Labels = map[string]string{"app": "web", "extra": "yes"}
	if err := s.Update(ctx, b); err != nil {
		t.Fatal(err)
	}
	check("a pod relabelled back", 1, 3)
	// A new selector is used at once.
	cur := &policyv1.PodDisruptionBudget{}
	if err := s.Get(ctx, client.ObjectKeyFromObject(pdb), cur); err != nil {
		t.Fatal(err)
	}
	cur.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web", "db"}}}}
	if err := s.Update(ctx, cur); err != nil {
		t.Fatal(err)
	}
	check("selector with an expression", 2, 4)
	cur.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}
	if err := s.Update(ctx, cur); err != nil {
		t.Fatal(err)
	}
	check("selector changed back to labels", 1, 1)
	// A budget that is not stored, with no UID, is judged by its own
	// selector.
	st := s.PDBStatus(&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "apps"}, Spec: policyv1.PodDisruptionBudgetSpec{
		MinAvailable: ptr(intstr.FromInt32(0)), Selector: &metav1.LabelSelector{MatchLabels: web}}})
	if st.CurrentHealthy != 1 || st.ExpectedPods != 3 {
		t.Errorf("unstored budget: %+v", st)
	}
	// An empty selector selects every pod of the namespace.
	cur.Spec.Selector = &metav1.LabelSelector{}
	if err := s.Update(ctx, cur); err != nil {
		t.Fatal(err)
	}
	check("empty selector", 2, 4)
	// An invalid selector selects nothing.
	cur.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "not valid!"}}
	if st := s.PDBStatus(cur); st.CurrentHealthy != 0 || st.ExpectedPods != 0 {
		t.Errorf("invalid selector: %+v", st)
	}
}

// MergeFrom's shortcut stores exactly what the merge patch of
// client.MergeFrom stores, with and without the optimistic lock, for the
// main resource and status, and falls back when the base is stale.
func TestMergeFromMatchesMergePatch(t *testing.T) {
	ctx := context.Background()
	mk := func() (*Server, *corev1.Pod) {
		s, clk := newServer(t)
		// Sub-second times, which JSON drops: the patched object must
		// read back as JSON gives it.
		clk.Step(1500 * time.Millisecond)
		p := pod("a", "", map[string]string{"app": "web", "gone": "x"})
		p.Spec.Containers[0].Args = []string{"one", "two"}
		mustCreate(t, s, p)
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(clk.Now())}}
		if err := s.Status().Update(ctx, p); err != nil {
			t.Fatal(err)
		}
		return s, s.Object(podGVK, "apps", "a").(*corev1.Pod)
	}
	change := func(p *corev1.Pod) {
		delete(p.Labels, "gone")
		p.Labels["new"] = "y"
		p.Spec.NodeName = "n1"
		p.Spec.Containers[0].Args = nil
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions[0].Status = corev1.ConditionTrue
		p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(start.Add(2*time.Second + 300*time.Millisecond))
		p.Status.StartTime = &p.Status.Conditions[0].LastTransitionTime
	}
	for _, tc := range []struct {
		name   string
		status bool
		opts   []client.MergeFromOption
		stale  bool
	}{
		{"main", false, nil, false},
		{"status", true, nil, false},
		{"locked", false, []client.MergeFromOption{client.MergeFromWithOptimisticLock{}}, false},
		{"stale base", false, nil, true},
		{"stale base, locked", false, []client.MergeFromOption{client.MergeFromWithOptimisticLock{}}, true},
		{"status, locked", true, []client.MergeFromOption{client.MergeFromWithOptimisticLock{}}, false},
		{"status, stale base", true, nil, true},
		{"status, stale base, locked", true, []client.MergeFromOption{client.MergeFromWithOptimisticLock{}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The document path (encode, merge, decode) is the reference;
			// then the same patch into a copy of the stored object
			// (mergeTyped), and MergeFrom's shortcut.
			var stored [3]client.Object
			var errs [3]error
			t.Cleanup(func() { typedMerge = true })
			for i, patch := range []func(client.Object) client.Patch{
				func(b client.Object) client.Patch { return client.MergeFromWithOptions(b, tc.opts...) },
				func(b client.Object) client.Patch { return client.MergeFromWithOptions(b, tc.opts...) },
				func(b client.Object) client.Patch { return MergeFrom(b, tc.opts...) },
			} {
				typedMerge = i > 0
				s, base := mk()
				if tc.stale {
					// Someone else writes first.
					q := base.DeepCopy()
					q.Annotations = map[string]string{"other": "write"}
					if err := s.Update(ctx, q); err != nil {
						t.Fatal(err)
					}
				}
				p := base.DeepCopy()
				change(p)
				if mf, ok := patch(base).(*mergeFrom); ok && !tc.stale {
					if _, took, err := mf.applyTo(s.Object(podGVK, "apps", "a").(*corev1.Pod), p, tc.status); !took || err != nil {
						t.Fatalf("MergeFrom's shortcut was not taken for a base that is the stored object (%v)", err)
					}
				}
				if tc.status {
					errs[i] = s.Status().Patch(ctx, p, patch(base))
				} else {
					errs[i] = s.Patch(ctx, p, patch(base))
				}
				stored[i] = s.Object(podGVK, "apps", "a")
			}
			for i := 1; i < len(stored); i++ {
				if fmt.Sprint(errs[0]) != fmt.Sprint(errs[i]) {
					t.Fatalf("errors differ: %v, %v", errs[0], errs[i])
				}
				if !reflect.DeepEqual(stored[0], stored[i]) {
					t.Errorf("stored objects differ:\n%+v\n%+v", stored[0], stored[i])
				}
			}
		})
	}
}
