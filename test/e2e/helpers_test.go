//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/catalog"
	"github.com/stevedore-autoscaler/stevedore/test/e2e/cluster"
)

// suffix returns a short random string for object names.
func suffix() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// eventually calls check every 250ms until it returns nil, and fails the test
// with check's last error if that takes longer than timeout.
func eventually(t *testing.T, timeout time.Duration, what string, check func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	start := time.Now()
	for {
		err := check(ctx)
		if err == nil {
			t.Logf("%s after %s", what, time.Since(start).Round(10*time.Millisecond))
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not within %s: %v", what, timeout, err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// newNamespace creates a namespace for one test and waits for its default
// service account, without which pod admission refuses pods. The namespace,
// and everything in it, is deleted when the test ends.
func newNamespace(t *testing.T, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: prefix + "-" + suffix()}}
	if err := kube.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := kube.Delete(context.Background(), ns); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting namespace %s: %v", ns.Name, err)
		}
	})
	eventually(t, time.Minute, "default service account in "+ns.Name, func(ctx context.Context) error {
		return kube.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "default"}, &corev1.ServiceAccount{})
	})
	return ns.Name
}

// kwokNode returns a Node as a stevedore-launched instance of the given type
// registers it (name, provider ID, well-known labels, capacity and allocatable
// from the catalog), annotated so that kwok plays its kubelet. It has no
// taints: it stands for a Node stevedore has already registered and
// initialized.
func kwokNode(t *testing.T, instanceType, zone string) *corev1.Node {
	t.Helper()
	it, ok := catalog.Lookup(instanceType)
	if !ok {
		t.Fatalf("instance type %s is not in the catalog", instanceType)
	}
	id := "i-0e2e" + suffix() + suffix()
	ip := make([]byte, 3)
	_, _ = rand.Read(ip)
	region := zone[:len(zone)-1]
	name := fmt.Sprintf("ip-10-%d-%d-%d.%s.compute.internal", ip[0], ip[1], ip[2], region)
	labels := map[string]string{
		wellknown.LabelHostname:       name,
		wellknown.LabelTopologyZone:   zone,
		wellknown.LabelTopologyRegion: region,
		wellknown.LabelNodePool:       "e2e",
		wellknown.LabelCapacityType:   "on-demand",
		wellknown.LabelRegistered:     "true",
		wellknown.LabelInitialized:    "true",
	}
	for k, v := range it.Labels {
		labels[k] = v
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      labels,
			Annotations: map[string]string{cluster.KWOKNodeAnnotation: cluster.KWOKNodeValue},
		},
		Spec: corev1.NodeSpec{ProviderID: "aws:///" + zone + "/" + id},
		Status: corev1.NodeStatus{
			Capacity:    it.Capacity.DeepCopy(),
			Allocatable: it.Allocatable.DeepCopy(),
			NodeInfo:    corev1.NodeSystemInfo{Architecture: it.Arch(), OperatingSystem: "linux"},
		},
	}
}

// createNode creates the Node and deletes it when the test ends.
func createNode(t *testing.T, node *corev1.Node) {
	t.Helper()
	if err := kube.Create(t.Context(), node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := kube.Delete(context.Background(), node); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting node %s: %v", node.Name, err)
		}
	})
}

func isPodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func isNodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
