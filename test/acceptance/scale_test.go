package acceptance

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// TestNodePoolScaleSubresource drives a static NodePool through its scale
// subresource, as kubectl scale nodepool does: the Scale reads spec.replicas
// and status.nodes, and writing it sets spec.replicas. A dynamic NodePool
// cannot be scaled, since that would make it static.
func TestNodePoolScaleSubresource(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	deleteServedObjects(ctx, t)
	t.Cleanup(func() { deleteServedObjects(context.Background(), t) })
	pools := client.Resource(schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodepools"})

	newPool := func(name, replicas string) *unstructured.Unstructured {
		t.Helper()
		doc := "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: " + name + "}\nspec:\n" + replicas +
			"  template:\n    spec:\n      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n" +
			"      requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]\n"
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
			t.Fatal(err)
		}
		created, err := pools.Create(ctx, obj, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating NodePool %s: %v", name, err)
		}
		return created
	}
	scaleOf := func(name string) (spec, status int64, scale *unstructured.Unstructured) {
		t.Helper()
		scale, err := pools.Get(ctx, name, metav1.GetOptions{}, "scale")
		if err != nil {
			t.Fatalf("getting the scale of NodePool %s: %v", name, err)
		}
		if scale.GetAPIVersion() != "autoscaling/v1" || scale.GetKind() != "Scale" {
			t.Fatalf("scale of NodePool %s is %s %s, want autoscaling/v1 Scale", name, scale.GetAPIVersion(), scale.GetKind())
		}
		spec, _, _ = unstructured.NestedInt64(scale.Object, "spec", "replicas")
		status, _, _ = unstructured.NestedInt64(scale.Object, "status", "replicas")
		return spec, status, scale
	}

	static := newPool("static", "  replicas: 3\n")
	// The NodePool status controller counts the nodes; here the test does.
	if err := unstructured.SetNestedField(static.Object, int64(2), "status", "nodes"); err != nil {
		t.Fatal(err)
	}
	if _, err := pools.UpdateStatus(ctx, static, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("setting status.nodes: %v", err)
	}
	spec, status, scale := scaleOf("static")
	if spec != 3 || status != 2 {
		t.Fatalf("scale spec.replicas %d, status.replicas %d; want spec.replicas 3 and status.nodes 2", spec, status)
	}

	if err := unstructured.SetNestedField(scale.Object, int64(5), "spec", "replicas"); err != nil {
		t.Fatal(err)
	}
	if _, err := pools.Update(ctx, scale, metav1.UpdateOptions{}, "scale"); err != nil {
		t.Fatalf("scaling NodePool static to 5: %v", err)
	}
	got, err := pools.Get(ctx, "static", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r, _, _ := unstructured.NestedInt64(got.Object, "spec", "replicas"); r != 5 {
		t.Errorf("spec.replicas after scaling = %d, want 5", r)
	}
	if n, _, _ := unstructured.NestedInt64(got.Object, "status", "nodes"); n != 2 {
		t.Errorf("status.nodes after scaling = %d, want it untouched at 2", n)
	}
	if spec, status, _ := scaleOf("static"); spec != 5 || status != 2 {
		t.Errorf("scale after scaling: spec.replicas %d, status.replicas %d; want 5 and 2", spec, status)
	}

	// A dynamic NodePool has no spec.replicas, so no Scale: the API server
	// refuses to read it, and to write one, which would make it static.
	dyn := newPool("dynamic", "")
	if _, err := pools.Get(ctx, "dynamic", metav1.GetOptions{}, "scale"); err == nil {
		t.Error("the scale of a dynamic NodePool was served; want it refused, as it has no spec.replicas")
	}
	scale = &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "autoscaling/v1", "kind": "Scale",
		"metadata": map[string]any{"name": "dynamic", "resourceVersion": dyn.GetResourceVersion()},
		"spec":     map[string]any{"replicas": int64(2)},
	}}
	if _, err := pools.Update(ctx, scale, metav1.UpdateOptions{}, "scale"); err == nil {
		t.Error("scaling a dynamic NodePool was accepted; want it refused, as it cannot become static")
	}
	got, err = pools.Get(ctx, "dynamic", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(got.Object, "spec", "replicas"); found {
		t.Error("the dynamic NodePool got spec.replicas")
	}
}
