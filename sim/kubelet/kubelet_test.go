package kubelet

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/sim/apiserver"
	"github.com/stevedore-autoscaler/stevedore/sim/internal/simtest"
)

// launched creates a NodeClaim for a new instance and lets the kubelets
// learn of it; it returns the node name.
func launched(t *testing.T, api *apiserver.Server, k *Kubelets, f *fake.AWS, w *fake.ClusterWorld, startup ...corev1.Taint) string {
	t.Helper()
	id := simtest.Launch(t, f, w, "m6i.large")
	info, _ := f.Instance(id)
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "nc-" + id}, Spec: karpv1.NodeClaimSpec{StartupTaints: startup}}
	simtest.Create(t, api, nc)
	nc.Status.ProviderID = ProviderID(info.Zone, id)
	if err := api.Status().Update(context.Background(), nc); err != nil {
		t.Fatal(err)
	}
	if reqs := k.learn(nc); len(reqs) != 1 || reqs[0].Name != info.PrivateDNSName {
		t.Fatalf("learn = %v", reqs)
	}
	return info.PrivateDNSName
}

func TestRegistrationAndReadiness(t *testing.T) {
	api, clk := simtest.Server(t)
	f, w := simtest.AWS(t, clk)
	var stopped []string
	k := New(Options{API: api, AWS: f, Clock: clk, ClusterName: "test", BootDelay: fake.DefaultBootDelay, ReadyTime: 10 * time.Second,
		OnStop: func(n string) { stopped = append(stopped, n) }})
	startup := corev1.Taint{Key: "cni", Effect: corev1.TaintEffectNoSchedule}
	name := launched(t, api, k, f, w, startup)

	// Booting: nothing yet, look again when the boot is over.
	if res := simtest.Reconcile(t, k, "", name); res.RequeueAfter != fake.DefaultBootDelay {
		t.Errorf("while booting: requeue %s", res.RequeueAfter)
	}
	clk.Step(fake.DefaultBootDelay)
	if res := simtest.Reconcile(t, k, "", name); res.RequeueAfter != 10*time.Second {
		t.Errorf("after registering: requeue %s", res.RequeueAfter)
	}
	node := simtest.Get(t, api, "", name, &corev1.Node{})
	if nodeReady(node) || !slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == wellknown.TaintKeyUnregistered }) ||
		!slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady }) {
		t.Errorf("registered node: %+v", node.Spec.Taints)
	}
	// The lifecycle controller registers it, with the startup taint.
	node.Labels[wellknown.LabelRegistered] = "true"
	node.Spec.Taints = []corev1.Taint{startup, {Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}}
	if err := api.Update(context.Background(), node); err != nil {
		t.Fatal(err)
	}
	clk.Step(10 * time.Second)
	simtest.Reconcile(t, k, "", name)
	node = simtest.Get(t, api, "", name, &corev1.Node{})
	if !nodeReady(node) || len(node.Spec.Taints) != 0 {
		t.Errorf("ready node: ready %v taints %+v", nodeReady(node), node.Spec.Taints)
	}

	// A failure stops the kubelet for good.
	if !k.Fail(name) || k.Fail(name) {
		t.Error("Fail should report the first failure only")
	}
	if at, ok := k.Stopped(name); !ok || !at.Equal(clk.Now()) || len(stopped) != 1 {
		t.Errorf("stopped %v %v %v", at, ok, stopped)
	}
}

func TestNoAccessEntryNoNode(t *testing.T) {
	api, clk := simtest.Server(t)
	f, w := simtest.AWS(t, clk)
	f.RemoveAccessEntry("test", w.NodeRoleARN)
	k := New(Options{API: api, AWS: f, Clock: clk, ClusterName: "test", BootDelay: fake.DefaultBootDelay})
	name := launched(t, api, k, f, w)
	clk.Step(fake.DefaultBootDelay)
	if res := simtest.Reconcile(t, k, "", name); res.RequeueAfter != RegistrationRetry {
		t.Errorf("requeue %s, want the registration retry", res.RequeueAfter)
	}
	if err := api.Get(context.Background(), client.ObjectKey{Name: name}, &corev1.Node{}); !apierrors.IsNotFound(err) {
		t.Errorf("a node registered without an access entry: %v", err)
	}
}

func TestPodsRunFinishAndStop(t *testing.T) {
	api, clk := simtest.Server(t, "apps")
	f, w := simtest.AWS(t, clk)
	k := New(Options{API: api, AWS: f, Clock: clk, ClusterName: "test", BootDelay: fake.DefaultBootDelay, ReadyTime: time.Second, PodStartTime: 3 * time.Second})
	name := launched(t, api, k, f, w)
	clk.Step(fake.DefaultBootDelay)
	simtest.Reconcile(t, k, "", name)
	clk.Step(time.Second)
	simtest.Reconcile(t, k, "", name)

	grace := int64(60)
	web := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "apps"}, Spec: corev1.PodSpec{
		NodeName: name, TerminationGracePeriodSeconds: &grace,
		Containers: []corev1.Container{{Name: "web", Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
			Exec: &corev1.ExecAction{Command: []string{"/bin/sh", "-c", "sleep 20"}}}}}},
	}}
	job := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "apps", Annotations: map[string]string{AnnotationDuration: "5m"}},
		Spec: corev1.PodSpec{NodeName: name, RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "job"}}}}
	simtest.Create(t, api, web, job)
	if res := simtest.Reconcile(t, k, "", name); res.RequeueAfter != 3*time.Second {
		t.Errorf("requeue %s, want the pods' start time", res.RequeueAfter)
	}
	if got := simtest.Get(t, api, "apps", "web", &corev1.Pod{}); got.Status.Phase != corev1.PodPending {
		t.Errorf("started before its start time: %s", got.Status.Phase)
	}
	clk.Step(3 * time.Second)
	if res := simtest.Reconcile(t, k, "", name); res.RequeueAfter != 5*time.Minute {
		t.Errorf("requeue %s, want the job's end", res.RequeueAfter)
	}
	for _, p := range []*corev1.Pod{web, job} {
		if got := simtest.Get(t, api, "apps", p.Name, &corev1.Pod{}); got.Status.Phase != corev1.PodRunning || got.Status.StartTime == nil {
			t.Errorf("%s: phase %s", p.Name, got.Status.Phase)
		}
	}
	clk.Step(5 * time.Minute)
	simtest.Reconcile(t, k, "", name)
	if got := simtest.Get(t, api, "apps", "job", &corev1.Pod{}); got.Status.Phase != corev1.PodSucceeded {
		t.Errorf("job phase %s", got.Status.Phase)
	}

	// Deleting the web pod: it stops after its preStop sleep, within its grace.
	if err := api.Delete(context.Background(), simtest.Get(t, api, "apps", "web", &corev1.Pod{})); err != nil {
		t.Fatal(err)
	}
	if res := simtest.Reconcile(t, k, "", name); res.RequeueAfter != 20*time.Second {
		t.Errorf("requeue %s, want the preStop sleep", res.RequeueAfter)
	}
	clk.Step(20 * time.Second)
	simtest.Reconcile(t, k, "", name)
	if err := api.Get(context.Background(), client.ObjectKey{Namespace: "apps", Name: "web"}, &corev1.Pod{}); !apierrors.IsNotFound(err) {
		t.Errorf("stopped pod still there: %v", err)
	}
}

func TestStopTime(t *testing.T) {
	at := metav1.NewTime(simtest.Start.Add(30 * time.Second))
	grace := int64(30)
	for _, tc := range []struct {
		name string
		pod  corev1.Pod
		want time.Duration
	}{
		{"no hook", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}, 0},
		{"sleep action", corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
			Sleep: &corev1.SleepAction{Seconds: 10}}}}}}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}, 10 * time.Second},
		{"capped by grace", corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{AnnotationShutdown: "1m"}}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}, 30 * time.Second},
		{"never ran", corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{AnnotationShutdown: "1m"}}, Status: corev1.PodStatus{Phase: corev1.PodPending}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.pod
			p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &at, &grace
			if got := StopTime(&p).Sub(simtest.Start); got != tc.want {
				t.Errorf("stops %s after deletion, want %s", got, tc.want)
			}
		})
	}
}
