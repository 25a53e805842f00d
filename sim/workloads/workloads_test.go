package workloads

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/stevedore-autoscaler/stevedore/sim/apiserver"
	simclock "github.com/stevedore-autoscaler/stevedore/sim/clock"
	"github.com/stevedore-autoscaler/stevedore/sim/internal/simtest"
	"github.com/stevedore-autoscaler/stevedore/sim/watch"
)

// world drives the workload controllers to quiescence, marking every pod
// Running and Ready as a kubelet would (pods with a duration annotation
// excepted: the test finishes those).
type world struct {
	t     *testing.T
	api   *apiserver.Server
	clk   *simclock.Clock
	ctrls []watch.Controller
}

func newWorld(t *testing.T) *world {
	api, clk := simtest.Server(t, "apps")
	return &world{t: t, api: api, clk: clk, ctrls: Controllers(api, clk, Options{})}
}

func (w *world) settle() {
	w.t.Helper()
	ctx := context.Background()
	for range 200 {
		changes, _ := w.api.Drain()
		if len(changes) == 0 {
			return
		}
		type key struct {
			c   int
			req reconcile.Request
		}
		seen := map[key]bool{}
		var todo []key
		for _, ch := range changes {
			if p, ok := ch.Object.(*corev1.Pod); ok && ch.Type != apiserver.Deleted && p.Status.Phase == corev1.PodPending && p.DeletionTimestamp == nil && p.Annotations["done"] == "" {
				w.run(p)
			}
			for i, c := range w.ctrls {
				for _, wt := range c.Watches {
					if wt.Kind != ch.GVK {
						continue
					}
					for _, r := range wt.Map(ch) {
						if k := (key{i, r}); !seen[k] {
							seen[k] = true
							todo = append(todo, k)
						}
					}
				}
			}
		}
		for _, k := range todo {
			if _, err := w.ctrls[k.c].Reconciler.Reconcile(ctx, k.req); err != nil {
				w.t.Fatalf("%s %s: %v", w.ctrls[k.c].Name, k.req, err)
			}
		}
	}
	w.t.Fatal("the workload controllers do not settle")
}

// run marks a pod bound, Running and Ready.
func (w *world) run(p *corev1.Pod) {
	q := &corev1.Pod{}
	if err := w.api.Get(context.Background(), client.ObjectKeyFromObject(p), q); err != nil || q.DeletionTimestamp != nil || q.Status.Phase != corev1.PodPending {
		return
	}
	if q.Spec.NodeName == "" {
		q.Spec.NodeName = targetNode(q)
		if q.Spec.NodeName == "" {
			q.Spec.NodeName = "node"
		}
		if err := w.api.Update(context.Background(), q); err != nil {
			w.t.Fatal(err)
		}
	}
	q.Status.Phase = corev1.PodRunning
	q.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if err := w.api.Status().Update(context.Background(), q); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) pods() []string {
	var list corev1.PodList
	if err := w.api.List(context.Background(), &list); err != nil {
		w.t.Fatal(err)
	}
	var out []string
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded {
			out = append(out, p.Name)
		}
	}
	sort.Strings(out)
	return out
}

func template(app string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: app + ":1"}}}}
}

func ptr[T any](v T) *T { return &v }

func TestDeploymentScalesReplacesAndRollsOut(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "apps"}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr(int32(3)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, Template: template("web")}}
	simtest.Create(w.t, w.api, d)
	w.settle()
	pods := w.pods()
	if len(pods) != 3 || !strings.HasPrefix(pods[0], "web-") {
		t.Fatalf("pods %v", pods)
	}
	// A deleted pod is replaced.
	if err := w.api.Delete(ctx, simtest.Get(t, w.api, "apps", pods[0], &corev1.Pod{}), client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	w.settle()
	if got := w.pods(); len(got) != 3 || got[0] == pods[0] && got[1] == pods[1] && got[2] == pods[2] {
		t.Errorf("after deleting %s: %v", pods[0], got)
	}
	// A new template rolls out.
	d = simtest.Get(t, w.api, "apps", "web", &appsv1.Deployment{})
	d.Spec.Template.Spec.Containers[0].Image = "web:2"
	if err := w.api.Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	w.settle()
	var rss appsv1.ReplicaSetList
	if err := w.api.List(ctx, &rss); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int32{}
	for _, rs := range rss.Items {
		counts[rs.Spec.Template.Spec.Containers[0].Image] = *rs.Spec.Replicas
	}
	if counts["web:1"] != 0 || counts["web:2"] != 3 {
		t.Errorf("replica sets after the rollout: %v", counts)
	}
	var list corev1.PodList
	if err := w.api.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && p.Spec.Containers[0].Image != "web:2" {
			t.Errorf("pod %s still runs %s", p.Name, p.Spec.Containers[0].Image)
		}
	}
	if got := simtest.Get(t, w.api, "apps", "web", &appsv1.Deployment{}); got.Status.ReadyReplicas != 3 || got.Status.UpdatedReplicas != 3 {
		t.Errorf("deployment status %+v", got.Status)
	}
}

func TestStatefulSetOrdinalsAndClaims(t *testing.T) {
	w := newWorld(t)
	ss := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "apps"}, Spec: appsv1.StatefulSetSpec{
		Replicas: ptr(int32(3)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, Template: template("db"),
		VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}},
	}}
	simtest.Create(w.t, w.api, ss)
	w.settle()
	if got := strings.Join(w.pods(), ","); got != "db-0,db-1,db-2" {
		t.Fatalf("pods %s", got)
	}
	p := simtest.Get(t, w.api, "apps", "db-1", &corev1.Pod{})
	if v := p.Spec.Volumes; len(v) != 1 || v[0].PersistentVolumeClaim.ClaimName != "data-db-1" {
		t.Errorf("volumes %+v", v)
	}
	simtest.Get(t, w.api, "apps", "data-db-2", &corev1.PersistentVolumeClaim{})
	ss = simtest.Get(t, w.api, "apps", "db", &appsv1.StatefulSet{})
	ss.Spec.Replicas = ptr(int32(1))
	if err := w.api.Update(context.Background(), ss); err != nil {
		t.Fatal(err)
	}
	w.settle()
	// Terminating pods stay until their kubelet removes them; the highest
	// ordinals go first.
	var list corev1.PodList
	if err := w.api.List(context.Background(), &list); err != nil {
		t.Fatal(err)
	}
	var terminating []string
	for _, p := range list.Items {
		if p.DeletionTimestamp != nil {
			terminating = append(terminating, p.Name)
		}
	}
	if strings.Join(terminating, ",") != "db-2" {
		t.Errorf("terminating %v, want db-2 first", terminating)
	}
}

func TestDaemonSetFollowsNodes(t *testing.T) {
	w := newWorld(t)
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "apps"}, Spec: appsv1.DaemonSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}}, Template: template("agent")}}
	ds.Spec.Template.Spec.NodeSelector = map[string]string{"role": "worker"}
	ready := corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}
	simtest.Create(w.t, w.api, ds,
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "w1", Labels: map[string]string{"role": "worker"}}, Status: ready},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Status: ready},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "w2", Labels: map[string]string{"role": "worker"}}, Status: ready,
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}}}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "w3", Labels: map[string]string{"role": "worker"}}})
	w.settle()
	var list corev1.PodList
	if err := w.api.List(context.Background(), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || targetNode(&list.Items[0]) != "w1" {
		t.Fatalf("daemon pods %+v", list.Items)
	}
	if got := simtest.Get(t, w.api, "apps", "agent", &appsv1.DaemonSet{}); got.Status.DesiredNumberScheduled != 1 {
		t.Errorf("status %+v", got.Status)
	}
}

func TestJobCompletes(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	tmpl := template("batch")
	tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
	tmpl.Annotations = map[string]string{"done": "by the test"}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "report", Namespace: "apps"}, Spec: batchv1.JobSpec{
		Parallelism: ptr(int32(2)), Completions: ptr(int32(3)), Template: tmpl, TTLSecondsAfterFinished: ptr(int32(60))}}
	simtest.Create(w.t, w.api, job)
	w.settle()
	for round := 0; ; round++ {
		pods := w.pods()
		if len(pods) == 0 || round > 5 {
			break
		}
		for _, name := range pods {
			p := simtest.Get(t, w.api, "apps", name, &corev1.Pod{})
			p.Status.Phase = corev1.PodSucceeded
			if err := w.api.Status().Update(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		w.settle()
	}
	job = simtest.Get(t, w.api, "apps", "report", &batchv1.Job{})
	if job.Status.Succeeded != 3 || jobCondition(job, batchv1.JobComplete) == nil {
		t.Errorf("job status %+v", job.Status)
	}
	res, err := (&jobs{base: base{api: w.api}}).expire(ctx, job, simtest.Start, simtest.Start)
	if err != nil || res.RequeueAfter != time.Minute {
		t.Errorf("ttl: %v %v", res, err)
	}
}

func TestBudgetStatusFollowsPods(t *testing.T) {
	w := newWorld(t)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "apps"}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr(int32(4)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, Template: template("web")}}
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "apps"}, Spec: policyv1.PodDisruptionBudgetSpec{
		MaxUnavailable: ptr(intstr.FromString("25%")), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	simtest.Create(w.t, w.api, d, pdb)
	w.settle()
	got := simtest.Get(t, w.api, "apps", "web", &policyv1.PodDisruptionBudget{})
	if s := got.Status; s.ExpectedPods != 4 || s.CurrentHealthy != 4 || s.DesiredHealthy != 3 || s.DisruptionsAllowed != 1 {
		t.Errorf("status %s", fmt.Sprintf("%+v", s))
	}
	// Looked at again later with nothing changed, the budget is not
	// written again: its condition keeps its transition time (PDBStatus).
	w.clk.AdvanceTo(w.clk.Now().Add(time.Minute))
	simtest.Reconcile(t, &disruptionBudgets{base{api: w.api, clock: w.clk}}, "apps", "web")
	if again := simtest.Get(t, w.api, "apps", "web", &policyv1.PodDisruptionBudget{}); again.ResourceVersion != got.ResourceVersion {
		t.Errorf("an unchanged budget was written again (resource version %s, was %s)", again.ResourceVersion, got.ResourceVersion)
	}
	// Scaling the Deployment moves the pods the budget expects.
	d = simtest.Get(t, w.api, "apps", "web", &appsv1.Deployment{})
	d.Spec.Replicas = ptr(int32(8))
	if err := w.api.Update(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	w.settle()
	got = simtest.Get(t, w.api, "apps", "web", &policyv1.PodDisruptionBudget{})
	if s := got.Status; s.ExpectedPods != 8 || s.DesiredHealthy != 6 {
		t.Errorf("after scaling to 8: status %+v", s)
	}
}

func TestScaleChanged(t *testing.T) {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs", Namespace: "apps",
		OwnerReferences: []metav1.OwnerReference{{Kind: "Deployment", Name: "web", UID: "d-1", Controller: ptr(true)}}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr(int32(3))}}
	cases := map[string]struct {
		change func(rs *appsv1.ReplicaSet)
		want   bool
	}{
		"ready replicas": {func(rs *appsv1.ReplicaSet) { rs.Status.ReadyReplicas = 2 }, false},
		"annotated":      {func(rs *appsv1.ReplicaSet) { rs.Annotations = map[string]string{"a": "b"} }, false},
		"scaled":         {func(rs *appsv1.ReplicaSet) { rs.Spec.Replicas = ptr(int32(4)) }, true},
		"default scale":  {func(rs *appsv1.ReplicaSet) { rs.Spec.Replicas = nil }, true},
		"orphaned":       {func(rs *appsv1.ReplicaSet) { rs.OwnerReferences = nil }, true},
	}
	for name, tc := range cases {
		cur := rs.DeepCopy()
		tc.change(cur)
		if got := scaleChanged(rs, cur); got != tc.want {
			t.Errorf("%s: scaleChanged = %v, want %v", name, got, tc.want)
		}
	}
}

// TestBudgetStatusFollowsWhatItReads: a budget's stored status is what the
// eviction subresource computes after every kind of pod change, now that
// only changes to what a status reads wake the budget: a pod losing and
// regaining readiness, a pod relabelled out of the selector, a pod being
// deleted, and a change the status does not read (a condition other than
// Ready).
func TestBudgetStatusFollowsWhatItReads(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	// Bare pods: no controller's status moves with them, so only the pod
	// watch can wake the budget.
	for i := range 4 {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%d", i), Namespace: "apps", Labels: map[string]string{"app": "web"}},
			Spec: template("web").Spec}
		simtest.Create(w.t, w.api, p)
	}
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "apps"}, Spec: policyv1.PodDisruptionBudgetSpec{
		MinAvailable: ptr(intstr.FromInt32(2)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	simtest.Create(w.t, w.api, pdb)
	w.settle()
	pod := func(i int) *corev1.Pod {
		var pods corev1.PodList
		if err := w.api.List(ctx, &pods, client.InNamespace("apps"), client.MatchingLabels{"app": "web"}); err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(pods.Items, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
		return &pods.Items[i]
	}
	setReady := func(p *corev1.Pod, s corev1.ConditionStatus) {
		p.Status.Conditions = slices.DeleteFunc(p.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == corev1.PodReady })
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: s})
		if err := w.api.Status().Update(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		name   string
		change func()
	}{
		{"ready at first", func() {
			for i := range 4 {
				setReady(pod(i), corev1.ConditionTrue)
			}
		}},
		{"one pod unready", func() { setReady(pod(0), corev1.ConditionFalse) }},
		{"another condition", func() {
			p := pod(1)
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: "example.com/Warm", Status: corev1.ConditionTrue})
			if err := w.api.Status().Update(ctx, p); err != nil {
				t.Fatal(err)
			}
		}},
		{"relabelled out", func() {
			p := pod(2)
			p.Labels = map[string]string{"app": "elsewhere"}
			if err := w.api.Update(ctx, p); err != nil {
				t.Fatal(err)
			}
		}},
		{"ready again", func() { setReady(pod(0), corev1.ConditionTrue) }},
		{"deleted", func() {
			if err := w.api.Delete(ctx, pod(1)); err != nil {
				t.Fatal(err)
			}
		}},
	}
	var healthy []int32
	for _, step := range steps {
		step.change()
		w.settle()
		stored := simtest.Get(t, w.api, "apps", "web", &policyv1.PodDisruptionBudget{})
		live := w.api.PDBStatus(stored)
		if stored.Status.CurrentHealthy != live.CurrentHealthy || stored.Status.ExpectedPods != live.ExpectedPods ||
			stored.Status.DesiredHealthy != live.DesiredHealthy || stored.Status.DisruptionsAllowed != live.DisruptionsAllowed {
			t.Fatalf("%s: stored status %+v, the eviction subresource computes %+v", step.name, stored.Status, live)
		}
		healthy = append(healthy, stored.Status.CurrentHealthy)
	}
	if slices.Equal(healthy, []int32{healthy[0], healthy[0], healthy[0], healthy[0], healthy[0], healthy[0]}) {
		t.Fatalf("healthy pods stayed %d through every step: the test checks nothing", healthy[0])
	}
}

func TestBudgetFieldsChanged(t *testing.T) {
	base := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "apps", Labels: map[string]string{"app": "web"},
		OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "rs", UID: "rs-1", Controller: ptr(true)}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	cases := map[string]struct {
		change func(p *corev1.Pod)
		want   bool
	}{
		"bound": {func(p *corev1.Pod) { p.Spec.NodeName = "node-1" }, false},
		"other condition": {func(p *corev1.Pod) {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled})
		}, false},
		"annotated":  {func(p *corev1.Pod) { p.Annotations = map[string]string{"a": "b"} }, false},
		"unready":    {func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }, true},
		"relabelled": {func(p *corev1.Pod) { p.Labels = map[string]string{"app": "api"} }, true},
		"deleting":   {func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} }, true},
		"finished":   {func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }, true},
		"orphaned":   {func(p *corev1.Pod) { p.OwnerReferences = nil }, true},
	}
	for name, tc := range cases {
		cur := base.DeepCopy()
		tc.change(cur)
		if got := budgetFieldsChanged(base, cur); got != tc.want {
			t.Errorf("%s: budgetFieldsChanged = %v, want %v", name, got, tc.want)
		}
	}
}
