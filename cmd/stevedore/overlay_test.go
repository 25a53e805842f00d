package main

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-autoscaler/stevedore/api/karpenter/v1alpha1"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
)

// TestControllerWithNodeOverlayGate starts the command with
// FEATURE_GATES NodeOverlay=true against a real API server: it watches
// NodeOverlays and writes their conditions (one valid, one with a key no
// instance type defines).
func TestControllerWithNodeOverlayGate(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real API server")
	}
	srv, kubeconfig := startAPIServer(t)
	f := fake.New(fake.Options{Seed: 7, InstanceTypes: []string{"m6i.large", "c6i.large"}})
	if _, err := f.StandardCluster("overlay-test", "1.33"); err != nil {
		t.Fatal(err)
	}
	var o controllerOptions
	fs := pflag.NewFlagSet("controller", pflag.ContinueOnError)
	o.addFlags(fs, func(string) string { return "" })
	if err := fs.Parse([]string{
		"--kubeconfig=" + kubeconfig, "--cluster-name=overlay-test", "--feature-gates=NodeOverlay=true",
		"--health-probe-bind-address=" + freePort(t), "--metrics-bind-address=" + freePort(t),
		"--leader-election-namespace=default",
	}); err != nil {
		t.Fatal(err)
	}
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	o.logOutput = logs
	o.registerer = prometheus.NewRegistry()
	// Other tests of the package run a controller in this process too.
	o.sharedProcess = true
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runController(ctx, &o, f.Clients(), fake.DefaultRegion) }()
	stopped := false
	t.Cleanup(func() {
		cancel()
		if stopped {
			return
		}
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Error("controller did not stop within 60s of cancellation")
		}
	})

	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	kube, err := client.New(srv.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	adj := "+10%"
	for name, key := range map[string]string{"good": "karpenter.k8s.aws/instance-family", "made-up": "karpenter.k8s.aws/instance-colour"} {
		ov := &v1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.NodeOverlaySpec{
			PriceAdjustment: &adj,
			Requirements:    []v1alpha1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpExists}},
		}}
		if err := kube.Create(ctx, ov); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]string{"good": "True", "made-up": "False"}
	deadline := time.Now().Add(60 * time.Second)
	for {
		got := map[string]string{}
		for name := range want {
			ov := &v1alpha1.NodeOverlay{}
			if err := kube.Get(ctx, client.ObjectKey{Name: name}, ov); err != nil {
				t.Fatal(err)
			}
			if c := meta.FindStatusCondition(ov.Status.Conditions, v1alpha1.ConditionTypeReady); c != nil {
				got[name] = string(c.Status)
			}
		}
		if got["good"] == want["good"] && got["made-up"] == want["made-up"] {
			break
		}
		select {
		case err := <-done:
			stopped = true
			t.Fatalf("controller stopped: %v\nlogs:\n%s", err, logs)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("Ready conditions %v after 60s, want %v\nlogs:\n%s", got, want, logs)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
