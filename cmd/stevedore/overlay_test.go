package main

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-autoscaler/stevedore/api/karpenter/v1alpha1"
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
	f, _ := testAccount(t, 7, "overlay-test")
	logs, done, _ := runTestController(t, f, kubeconfig, "--cluster-name=overlay-test", "--feature-gates=NodeOverlay=true",
		"--health-probe-bind-address="+freePort(t), "--metrics-bind-address="+freePort(t))
	ctx := t.Context()

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
			t.Fatalf("controller stopped: %v\nlogs:\n%s", err, logs)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("Ready conditions %v after 60s, want %v\nlogs:\n%s", got, want, logs)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
