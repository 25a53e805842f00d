package apiserver

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
)

var start = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)

func newServer(t *testing.T) (*Server, *clocktesting.FakeClock) {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := karpv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(start)
	srv, err := New(Options{Scheme: s, Clock: clk, Seed: 1, LogEvictions: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, ns := range []string{"default", "apps"} {
		if err := srv.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	srv.Drain()
	return srv, clk
}

func pod(name, node string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "apps", Labels: labels},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{{ContainerPort: 80}}}}},
	}
}

func running(p *corev1.Pod, ready bool) *corev1.Pod {
	p.Status.Phase = corev1.PodRunning
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}
	return p
}

func mustCreate(t *testing.T, s *Server, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := s.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %s: %v", o.GetName(), err)
		}
	}
}

func TestCreateAssignsMetadataAndAdmits(t *testing.T) {
	s, _ := newServer(t)
	ctx := context.Background()
	mustCreate(t, s, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000})
	p := pod("", "", nil)
	p.GenerateName = "web-"
	p.Spec.PriorityClassName = "high"
	mustCreate(t, s, p)
	if !strings.HasPrefix(p.Name, "web-") || len(p.Name) != len("web-")+5 {
		t.Errorf("generated name %q", p.Name)
	}
	if p.UID == "" || p.ResourceVersion == "" || p.Generation != 1 || !p.CreationTimestamp.Time.Equal(start) {
		t.Errorf("metadata not assigned: %+v", p.ObjectMeta)
	}
	if p.Spec.Priority == nil || *p.Spec.Priority != 1000 || p.Spec.SchedulerName != corev1.DefaultSchedulerName ||
		p.Status.Phase != corev1.PodPending || p.Spec.Containers[0].Ports[0].Protocol != corev1.ProtocolTCP {
		t.Errorf("admission defaults missing: %+v", p.Spec)
	}
	if len(p.Spec.Tolerations) != 2 || p.Spec.Tolerations[0].TolerationSeconds == nil || *p.Spec.Tolerations[0].TolerationSeconds != DefaultTolerationSeconds {
		t.Errorf("default tolerations: %+v", p.Spec.Tolerations)
	}
	bad := pod("bad", "", nil)
	bad.Spec.PriorityClassName = "missing"
	if err := s.Create(ctx, bad); !apierrors.IsForbidden(err) {
		t.Errorf("unknown priority class: %v", err)
	}
	if err := s.Create(ctx, pod(p.Name, "", nil)); !apierrors.IsAlreadyExists(err) {
		t.Errorf("duplicate: %v", err)
	}
	other := pod("x", "", nil)
	other.Namespace = "nowhere"
	if err := s.Create(ctx, other); !apierrors.IsNotFound(err) {
		t.Errorf("missing namespace: %v", err)
	}
	// A container's limits are its requests where it sets none.
	limited := pod("limited", "", nil)
	limited.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: apiresource.MustParse("1e30")}
	mustCreate(t, s, limited)
	if q, ok := limited.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; !ok || q.String() != "1e30" {
		t.Errorf("requests not defaulted from limits: %+v", limited.Spec.Containers[0].Resources)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	mustCreate(t, s, node)
	if len(node.Spec.Taints) != 1 || node.Spec.Taints[0].Key != corev1.TaintNodeNotReady {
		t.Errorf("new NotReady node taints: %+v", node.Spec.Taints)
	}
}

// TestCreateAppliesLimitRanges: a pod created in a namespace with a
// LimitRange gets its defaults, as the LimitRanger admission plugin gives
// them, after its own limits became its requests; another namespace's
// LimitRange does not count.
func TestCreateAppliesLimitRanges(t *testing.T) {
	s, _ := newServer(t)
	q := apiresource.MustParse
	mustCreate(t, s, &corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "defaults"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type:           corev1.LimitTypeContainer,
			Default:        corev1.ResourceList{corev1.ResourceCPU: q("2"), corev1.ResourceMemory: q("1Gi")},
			DefaultRequest: corev1.ResourceList{corev1.ResourceMemory: q("256Mi")},
		}}},
	})
	mustCreate(t, s, &corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "elsewhere"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type: corev1.LimitTypeContainer, DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: q("7")},
		}}},
	})
	p := pod("defaulted", "", nil)
	p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: q("512Mi")}
	mustCreate(t, s, p)
	r := p.Spec.Containers[0].Resources
	for _, c := range []struct {
		what string
		list corev1.ResourceList
		name corev1.ResourceName
		want string
	}{
		{"cpu limit from default", r.Limits, corev1.ResourceCPU, "2"},
		{"memory limit kept", r.Limits, corev1.ResourceMemory, "512Mi"},
		{"cpu request from default through defaultRequest", r.Requests, corev1.ResourceCPU, "2"},
		{"memory request from the container's own limit", r.Requests, corev1.ResourceMemory, "512Mi"},
	} {
		if got, ok := c.list[c.name]; !ok || got.String() != c.want {
			t.Errorf("%s: %v, want %s", c.what, c.list, c.want)
		}
	}
}

func TestGenerateNameIsDeterministic(t *testing.T) {
	names := func() []string {
		s, _ := newServer(t)
		var out []string
		for range 3 {
			p := pod("", "", nil)
			p.GenerateName = "x-"
			mustCreate(t, s, p)
			out = append(out, p.Name)
		}
		return out
	}
	a, b := names(), names()
	if strings.Join(a, ",") != strings.Join(b, ",") {
		t.Errorf("names differ between runs: %v %v", a, b)
	}
}

func TestListSelectors(t *testing.T) {
	s, _ := newServer(t)
	mustCreate(t, s, pod("b", "n1", map[string]string{"app": "web"}), pod("a", "n2", map[string]string{"app": "web"}), pod("c", "n1", map[string]string{"app": "db"}))
	for _, tc := range []struct {
		name string
		opts []client.ListOption
		want string
	}{
		{"all, sorted", nil, "a,b,c"},
		{"labels", []client.ListOption{client.MatchingLabels{"app": "web"}}, "a,b"},
		{"indexed field", []client.ListOption{client.MatchingFields{"spec.nodeName": "n1"}}, "b,c"},
		{"both", []client.ListOption{client.MatchingFields{"spec.nodeName": "n1"}, client.MatchingLabels{"app": "web"}}, "b"},
		{"name", []client.ListOption{client.MatchingFields{"metadata.name": "c"}}, "c"},
		{"other namespace", []client.ListOption{client.InNamespace("default")}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var list corev1.PodList
			if err := s.List(context.Background(), &list, tc.opts...); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range list.Items {
				got = append(got, p.Name)
			}
			if strings.Join(got, ",") != tc.want {
				t.Errorf("got %v, want %s", got, tc.want)
			}
		})
	}
	var list corev1.PodList
	if err := s.List(context.Background(), &list, client.MatchingFields{"spec.hostname": "x"}); err == nil {
		t.Error("a field without an index was accepted")
	}
}

// A list is a copy the caller may change without touching the store, unless
// it asks for the store's own objects with UnsafeDisableDeepCopy, as
// controller-runtime's cache allows.
func TestListCopies(t *testing.T) {
	s, _ := newServer(t)
	mustCreate(t, s, pod("a", "n1", map[string]string{"app": "web"}))
	for _, tc := range []struct {
		name   string
		opts   []client.ListOption
		shared bool
	}{
		{"copied", nil, false},
		{"shared", []client.ListOption{client.UnsafeDisableDeepCopy}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var list corev1.PodList
			if err := s.List(context.Background(), &list, tc.opts...); err != nil {
				t.Fatal(err)
			}
			if len(list.Items) != 1 || list.Items[0].Labels["app"] != "web" {
				t.Fatalf("listed %v", list.Items)
			}
			list.Items[0].Labels["app"] = tc.name
			var got corev1.Pod
			if err := s.Get(context.Background(), types.NamespacedName{Namespace: "apps", Name: "a"}, &got); err != nil {
				t.Fatal(err)
			}
			if changed := got.Labels["app"] == tc.name; changed != tc.shared {
				t.Errorf("changing the listed pod changed the stored one: %v, want %v", changed, tc.shared)
			}
			got.Labels["app"] = "web" // restore for the next case
			if err := s.Update(context.Background(), &got); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestWritesKeepStatusAndConcurrency(t *testing.T) {
	s, _ := newServer(t)
	ctx := context.Background()
	p := pod("p", "", nil)
	mustCreate(t, s, p)
	s.Drain()

	// A write through the main resource keeps the stored status.
	p.Status.Phase = corev1.PodRunning
	p.Labels = map[string]string{"a": "b"}
	if err := s.Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	if p.Status.Phase != corev1.PodPending || p.Labels["a"] != "b" {
		t.Errorf("update: phase %s labels %v", p.Status.Phase, p.Labels)
	}
	// A stale resource version conflicts.
	stale := p.DeepCopy()
	stale.ResourceVersion = "1"
	if err := s.Update(ctx, stale); !apierrors.IsConflict(err) {
		t.Errorf("stale update: %v", err)
	}
	// A status patch changes only the status.
	base := p.DeepCopy()
	p.Status.Phase = corev1.PodRunning
	p.Labels["a"] = "ignored"
	if err := s.Status().Patch(ctx, p, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	if p.Status.Phase != corev1.PodRunning || p.Labels["a"] != "b" {
		t.Errorf("status patch: phase %s labels %v", p.Status.Phase, p.Labels)
	}
	// An optimistic-lock patch from an old version conflicts.
	old := base.DeepCopy()
	old.Annotations = map[string]string{"x": "y"}
	if err := s.Patch(ctx, old, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); !apierrors.IsConflict(err) {
		t.Errorf("optimistic patch: %v", err)
	}
	changes, _ := s.Drain()
	if len(changes) != 2 {
		t.Errorf("%d changes, want 2 (update, status patch)", len(changes))
	}
	// A write that changes nothing is no change.
	if err := s.Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	if changes, _ := s.Drain(); len(changes) != 0 {
		t.Errorf("no-op update recorded %d changes", len(changes))
	}
	// Spec changes bump the generation.
	gen := p.Generation
	p.Spec.NodeName = "n1"
	if err := s.Update(ctx, p); err != nil || p.Generation != gen+1 {
		t.Errorf("generation %d → %d (%v)", gen, p.Generation, err)
	}
}

func TestPatchTypes(t *testing.T) {
	s, _ := newServer(t)
	ctx := context.Background()
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "apps"}}
	mustCreate(t, s, d)
	for _, tc := range []struct {
		typ   types.PatchType
		patch string
		want  int32
	}{
		{types.MergePatchType, `{"spec":{"replicas":3}}`, 3},
		{types.JSONPatchType, `[{"op":"replace","path":"/spec/replicas","value":5}]`, 5},
		{types.StrategicMergePatchType, `{"spec":{"replicas":7}}`, 7},
	} {
		if err := s.Patch(ctx, d, client.RawPatch(tc.typ, []byte(tc.patch))); err != nil {
			t.Fatalf("%s: %v", tc.typ, err)
		}
		if *d.Spec.Replicas != tc.want {
			t.Errorf("%s: replicas %d, want %d", tc.typ, *d.Spec.Replicas, tc.want)
		}
	}
}

func TestDeletion(t *testing.T) {
	ctx := context.Background()
	t.Run("finalizers hold the object", func(t *testing.T) {
		s, clk := newServer(t)
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Finalizers: []string{"f"}}}
		mustCreate(t, s, n)
		clk.Step(time.Minute)
		if err := s.Delete(ctx, n); err != nil {
			t.Fatal(err)
		}
		if err := s.Get(ctx, client.ObjectKey{Name: "n"}, n); err != nil || n.DeletionTimestamp == nil || !n.DeletionTimestamp.Time.Equal(start.Add(time.Minute)) {
			t.Fatalf("deleting node: %v %v", err, n.DeletionTimestamp)
		}
		n.Finalizers = append(n.Finalizers, "g")
		if err := s.Update(ctx, n); !apierrors.IsForbidden(err) {
			t.Errorf("adding a finalizer while deleting: %v", err)
		}
		n.Finalizers = nil
		if err := s.Update(ctx, n); err != nil {
			t.Fatal(err)
		}
		if err := s.Get(ctx, client.ObjectKey{Name: "n"}, n); !apierrors.IsNotFound(err) {
			t.Errorf("node still there: %v", err)
		}
	})
	t.Run("bound pods terminate gracefully", func(t *testing.T) {
		s, _ := newServer(t)
		bound, unbound := pod("bound", "n1", nil), pod("unbound", "", nil)
		mustCreate(t, s, bound, unbound)
		for _, p := range []*corev1.Pod{bound, unbound} {
			if err := s.Delete(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Get(ctx, client.ObjectKeyFromObject(unbound), unbound); !apierrors.IsNotFound(err) {
			t.Errorf("unbound pod not gone: %v", err)
		}
		if err := s.Get(ctx, client.ObjectKeyFromObject(bound), bound); err != nil || bound.DeletionTimestamp == nil ||
			!bound.DeletionTimestamp.Time.Equal(start.Add(30*time.Second)) || *bound.DeletionGracePeriodSeconds != 30 {
			t.Fatalf("bound pod: %v %+v", err, bound.ObjectMeta)
		}
		if err := s.Delete(ctx, bound, client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
		if err := s.Get(ctx, client.ObjectKeyFromObject(bound), bound); !apierrors.IsNotFound(err) {
			t.Errorf("force-deleted pod still there: %v", err)
		}
	})
	t.Run("owners collect their dependents", func(t *testing.T) {
		s, _ := newServer(t)
		rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs", Namespace: "apps"}}
		mustCreate(t, s, rs)
		yes := true
		owned := pod("owned", "", nil)
		owned.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: rs.UID, Controller: &yes}}
		mustCreate(t, s, owned, pod("free", "", nil))
		if got := s.Select(podGVK, IndexController, string(rs.UID)); len(got) != 1 || got[0].GetName() != "owned" {
			t.Errorf("controller index: %v", got)
		}
		if err := s.Delete(ctx, rs); err != nil {
			t.Fatal(err)
		}
		var list corev1.PodList
		if err := s.List(ctx, &list); err != nil || len(list.Items) != 1 || list.Items[0].Name != "free" {
			t.Errorf("after deleting the owner: %v %v", err, list.Items)
		}
	})
	t.Run("preconditions", func(t *testing.T) {
		s, _ := newServer(t)
		p := pod("p", "", nil)
		mustCreate(t, s, p)
		uid := types.UID("other")
		if err := s.Delete(ctx, p, client.Preconditions{UID: &uid}); !apierrors.IsConflict(err) {
			t.Errorf("wrong UID: %v", err)
		}
	})
}

func TestEvictionHonoursBudgets(t *testing.T) {
	ctx := context.Background()
	labels := map[string]string{"app": "web"}
	for _, tc := range []struct {
		name    string
		pdbs    []policyv1.PodDisruptionBudgetSpec
		ready   []bool // of pods a, b, c
		evict   string
		allowed bool
		code    func(error) bool
		// logged is the eviction log's entry: healthy, then each budget's
		// currentHealthy/desiredHealthy/disruptionsAllowed/expectedPods
		// before the call.
		logged string
	}{
		{"no budget", nil, []bool{true, true, true}, "a", true, nil, "healthy"},
		{"room in the budget", []policyv1.PodDisruptionBudgetSpec{{MaxUnavailable: ptr(intstr.FromInt32(1))}}, []bool{true, true, true}, "a", true, nil, "healthy x 3/2/1/3"},
		{"budget spent", []policyv1.PodDisruptionBudgetSpec{{MaxUnavailable: ptr(intstr.FromInt32(1))}}, []bool{true, true, false}, "a", false, apierrors.IsTooManyRequests, "healthy x 2/2/0/3"},
		{"minAvailable", []policyv1.PodDisruptionBudgetSpec{{MinAvailable: ptr(intstr.FromInt32(3))}}, []bool{true, true, true}, "a", false, apierrors.IsTooManyRequests, "healthy x 3/3/0/3"},
		{"unready pod of a healthy budget", []policyv1.PodDisruptionBudgetSpec{{MinAvailable: ptr(intstr.FromInt32(2))}}, []bool{true, true, false}, "c", true, nil, "unhealthy x 2/2/0/3"},
		{"two budgets", []policyv1.PodDisruptionBudgetSpec{{MaxUnavailable: ptr(intstr.FromInt32(1))}, {MaxUnavailable: ptr(intstr.FromInt32(1))}}, []bool{true, true, true}, "a", false, apierrors.IsInternalError, "healthy x 3/2/1/3 y 3/2/1/3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newServer(t)
			rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs", Namespace: "apps"}, Spec: appsv1.ReplicaSetSpec{Replicas: ptr(int32(3))}}
			mustCreate(t, s, rs)
			yes := true
			for i, name := range []string{"a", "b", "c"} {
				p := running(pod(name, "n1", labels), tc.ready[i])
				p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: rs.UID, Controller: &yes}}
				mustCreate(t, s, p)
				st := p.Status
				p.Status = st
				if err := s.Status().Update(ctx, p); err != nil {
					t.Fatal(err)
				}
			}
			for i, spec := range tc.pdbs {
				spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
				mustCreate(t, s, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: string(rune('x' + i)), Namespace: "apps"}, Spec: spec})
			}
			target := &corev1.Pod{}
			if err := s.Get(ctx, client.ObjectKey{Namespace: "apps", Name: tc.evict}, target); err != nil {
				t.Fatal(err)
			}
			err := s.SubResource("eviction").Create(ctx, target, &policyv1.Eviction{})
			log := s.DrainEvictions()
			if len(log) != 1 {
				t.Fatalf("eviction log %+v, want one entry", log)
			}
			e := log[0]
			got := map[bool]string{true: "healthy", false: "unhealthy"}[e.Healthy]
			for _, b := range e.Budgets {
				got += fmt.Sprintf(" %s %d/%d/%d/%d", b.Name.Name, b.CurrentHealthy, b.DesiredHealthy, b.DisruptionsAllowed, b.ExpectedPods)
			}
			if e.Pod.Name != tc.evict || e.Granted != tc.allowed || e.Reason == "" || got != tc.logged {
				t.Errorf("logged %+v (%s), want granted %v, budgets %s", e, got, tc.allowed, tc.logged)
			}
			if tc.allowed {
				if err != nil {
					t.Fatalf("eviction refused: %v", err)
				}
				if err := s.Get(ctx, client.ObjectKeyFromObject(target), target); err != nil || target.DeletionTimestamp == nil {
					t.Errorf("evicted pod is not terminating: %v", err)
				}
				return
			}
			if err == nil || !tc.code(err) {
				t.Fatalf("eviction: %v", err)
			}
		})
	}
}

func TestPDBStatusCountsControllerScale(t *testing.T) {
	s, _ := newServer(t)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "apps"}, Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(4))}}
	mustCreate(t, s, d)
	yes := true
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs", Namespace: "apps",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "d", UID: d.UID, Controller: &yes}}}}
	mustCreate(t, s, rs)
	for _, name := range []string{"a", "b", "c"} {
		p := running(pod(name, "n1", map[string]string{"app": "web"}), true)
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: rs.UID, Controller: &yes}}
		mustCreate(t, s, p)
		if err := s.Status().Update(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "apps"}, Spec: policyv1.PodDisruptionBudgetSpec{
		MinAvailable: ptr(intstr.FromString("50%")), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	mustCreate(t, s, pdb)
	st := s.PDBStatus(pdb)
	if st.ExpectedPods != 4 || st.DesiredHealthy != 2 || st.CurrentHealthy != 3 || st.DisruptionsAllowed != 1 {
		t.Errorf("status %+v", st)
	}
}

func TestEventsAreRecorded(t *testing.T) {
	s, _ := newServer(t)
	p := pod("p", "", nil)
	mustCreate(t, s, p)
	s.Recorder("test").Eventf(p, nil, corev1.EventTypeNormal, "Reason", "Act", "note %d", 1)
	_, events := s.Drain()
	if len(events) != 1 || events[0].Regarding.String() != "Pod/apps/p" || events[0].Note != "note 1" || events[0].Source != "test" {
		t.Errorf("events %+v", events)
	}
}

func ptr[T any](v T) *T { return &v }
