package workloads

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/stevedore-autoscaler/stevedore/sim/internal/simtest"
)

func TestBucket(t *testing.T) {
	t0 := simtest.Start
	ms := time.Millisecond
	b := newBucket(100, 200)
	steps := []struct {
		at      time.Duration
		n, cost int
		got     int
		wait    time.Duration
		what    string
	}{
		{0, 300, 1, 200, 10 * ms, "the burst at once"},
		{10 * ms, 1, 1, 1, 0, "then one every 10ms"},
		{10 * ms, 1, 1, 0, 10 * ms, "and no more"},
		{1010 * ms, 1000, 1, 100, 10 * ms, "a second later, a second's worth"},
		{time.Hour, 1000, 1, 200, 10 * ms, "never more than the burst"},
		{time.Hour + 2*time.Second, 100, 3, 66, 10 * ms, "requests of three tokens"},
	}
	for _, s := range steps {
		got, wait := b.take(t0.Add(s.at), s.n, s.cost)
		if got != s.got || wait != s.wait {
			t.Errorf("%s: take(+%v, %d, %d) = %d, %v; want %d, %v", s.what, s.at, s.n, s.cost, got, wait, s.got, s.wait)
		}
	}
	// A request dearer than the whole bucket goes when it is full.
	if got, _ := newBucket(1, 2).take(t0, 1, 5); got != 1 {
		t.Errorf("a request of more tokens than the burst never goes")
	}
}

func TestSlowStartBatches(t *testing.T) {
	t0 := simtest.Start
	key := types.NamespacedName{Namespace: "apps", Name: "web"}
	var calls []int
	record := func(_ *podSync, n int) error { calls = append(calls, n); return nil }
	p := newPacer(1e6, 1e6)
	wait, err := p.run(t0, key, 1, func() *podSync { return creations(500, 0) }, record)
	if err != nil || wait != 0 {
		t.Fatalf("run = %v, %v", wait, err)
	}
	if want := []int{1, 2, 4, 8, 16, 32, 64, 128, 245}; !slices.Equal(calls, want) {
		t.Errorf("batches %v, want %v", calls, want)
	}
	if len(p.syncs) != 0 {
		t.Errorf("a finished sync is kept: %v", p.syncs)
	}

	calls = nil
	p.run(t0, key, 1, func() *podSync { return creations(1200, MaxStatefulSetBatch) }, record)
	if want := []int{1, 2, 4, 8, 16, 32, 64, 128, 256, 500, 189}; !slices.Equal(calls, want) {
		t.Errorf("capped batches %v, want %v", calls, want)
	}

	// A failed batch ends the sync; the next starts slow again.
	calls = nil
	fail := errors.New("quota exceeded")
	_, err = p.run(t0, key, 1, func() *podSync { return creations(100, 0) }, func(s *podSync, n int) error {
		calls = append(calls, n)
		if len(calls) == 3 {
			return fail
		}
		return nil
	})
	if !errors.Is(err, fail) || len(p.syncs) != 0 {
		t.Errorf("run = %v with syncs %v, want the failure and no sync left", err, p.syncs)
	}
	p.run(t0, key, 1, func() *podSync { return creations(10, 0) }, record)
	if want := []int{1, 2, 4, 1, 2, 4, 3}; !slices.Equal(calls, want) {
		t.Errorf("batches around a failure %v, want %v", calls, want)
	}

	// Short of tokens, a sync goes on where it stopped.
	calls = nil
	p = newPacer(100, 10)
	wait, _ = p.run(t0, key, 1, func() *podSync { return creations(20, 0) }, record)
	if want := []int{1, 2, 4, 3}; !slices.Equal(calls, want) || wait != 10*time.Millisecond {
		t.Errorf("at first: batches %v, wait %v", calls, wait)
	}
	wait, _ = p.run(t0.Add(100*time.Millisecond), key, 1, func() *podSync { t.Fatal("a new sync while one is under way"); return nil }, record)
	if want := []int{1, 2, 4, 3, 5, 5}; !slices.Equal(calls, want) || wait != 0 || len(p.syncs) != 0 {
		t.Errorf("100ms later: batches %v, wait %v, syncs %v; want the sync done", calls, wait, p.syncs)
	}
}

// drive reconciles one object with r, advancing the clock to each time it
// asks to be called again, and calling it again at once after a sync that
// made pods (as the watch on its pods would), until it makes no more or
// would go past until. It returns the pods there are then.
func drive(t *testing.T, w *world, r reconcile.Reconciler, key types.NamespacedName, until time.Duration) int {
	t.Helper()
	for range 100000 {
		before := livePods(w)
		res, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key})
		if err != nil {
			t.Fatal(err)
		}
		after := livePods(w)
		next := w.clk.Now().Add(res.RequeueAfter)
		if res.RequeueAfter == 0 && after == before || next.After(simtest.Start.Add(until)) {
			return after
		}
		w.clk.AdvanceTo(next)
	}
	t.Fatal("the controller never finishes")
	return 0
}

// livePods counts the pods that are not being deleted.
func livePods(w *world) int {
	n := 0
	for _, o := range w.api.Objects(podGVK) {
		if o.GetDeletionTimestamp() == nil {
			n++
		}
	}
	return n
}

func TestReplicaSetPace(t *testing.T) {
	w := newWorld(t)
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "apps", UID: "rs-uid"}, Spec: appsv1.ReplicaSetSpec{
		Replicas: ptr(int32(1000)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, Template: template("web")}}
	simtest.Create(t, w.api, rs)
	r := &replicaSets{base{api: w.api, clock: w.clk}, newPacer(DefaultKubeAPIQPS, DefaultKubeAPIBurst)}
	// 200 at once, then 100 a second.
	var got []int
	for _, until := range []time.Duration{0, time.Second, 5 * time.Second, 8 * time.Second, time.Hour} {
		got = append(got, drive(t, w, r, client.ObjectKeyFromObject(rs), until))
	}
	if want := []int{200, 300, 700, 1000, 1000}; !slices.Equal(got, want) {
		t.Errorf("pods by 0s, 1s, 5s, 8s and 1h: %v, want %v", got, want)
	}

	// With tokens to spare, a sync creates at most BurstReplicas pods.
	w = newWorld(t)
	simtest.Create(t, w.api, rs.DeepCopy())
	r = &replicaSets{base{api: w.api, clock: w.clk}, newPacer(DefaultKubeAPIQPS, 5000)}
	for i, want := range []int{500, 1000, 1000} {
		if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(rs)}); err != nil {
			t.Fatal(err)
		}
		if got := len(w.pods()); got != want {
			t.Errorf("after sync %d: %d pods, want %d", i+1, got, want)
		}
	}

	// Scaled down, the extra pods are deleted at the same pace.
	cur := simtest.Get(t, w.api, "apps", "web", &appsv1.ReplicaSet{})
	cur.Spec.Replicas = ptr(int32(100))
	if err := w.api.Update(context.Background(), cur); err != nil {
		t.Fatal(err)
	}
	r.pace = newPacer(DefaultKubeAPIQPS, DefaultKubeAPIBurst)
	r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(rs)})
	if got := len(w.pods()); got != 800 {
		t.Errorf("after the first scale-down sync: %d pods, want 800 (the burst deleted)", got)
	}
}

func TestJobAndStatefulSetPace(t *testing.T) {
	w := newWorld(t)
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "batch", Namespace: "apps", UID: "job-uid"}, Spec: batchv1.JobSpec{
		Parallelism: ptr(int32(700)), Completions: ptr(int32(700)), Template: template("batch")}}
	simtest.Create(t, w.api, job)
	j := &jobs{base{api: w.api, clock: w.clk}, newPacer(DefaultKubeAPIQPS, 5000)}
	if _, err := j.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(job)}); err != nil {
		t.Fatal(err)
	}
	if got := len(w.pods()); got != MaxPodCreatesPerSync {
		t.Errorf("a Job sync created %d pods, want %d", got, MaxPodCreatesPerSync)
	}

	// A Parallel StatefulSet's pod and its claim take a token each.
	w = newWorld(t)
	ss := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "apps", UID: "ss-uid"}, Spec: appsv1.StatefulSetSpec{
		Replicas: ptr(int32(300)), PodManagementPolicy: appsv1.ParallelPodManagement,
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, Template: template("db"),
		VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}}}
	simtest.Create(t, w.api, ss)
	s := &statefulSets{base{api: w.api, clock: w.clk}, newPacer(DefaultKubeAPIQPS, DefaultKubeAPIBurst)}
	var got []int
	for _, until := range []time.Duration{0, time.Second, time.Hour} {
		got = append(got, drive(t, w, s, client.ObjectKeyFromObject(ss), until))
	}
	if want := []int{100, 150, 300}; !slices.Equal(got, want) {
		t.Errorf("StatefulSet pods by 0s, 1s and 1h: %v, want %v", got, want)
	}
}
