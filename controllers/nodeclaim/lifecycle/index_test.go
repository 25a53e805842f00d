package lifecycle

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	fakeclient "sigs.k8s.io/controller-runtime/pkg/client/fake"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
)

// countingClient counts the List calls that select nothing by field: with
// the index, finding a NodeClaim's Node never lists every Node.
type countingClient struct {
	client.Client
	unfiltered int
}

func (c *countingClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	o := (&client.ListOptions{}).ApplyOptions(opts)
	if o.FieldSelector == nil || o.FieldSelector.Empty() {
		c.unfiltered++
	}
	return c.Client.List(ctx, list, opts...)
}

func TestWithIndexesLooksNodesUp(t *testing.T) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := karpv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	node := func(name, id string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: id}}
	}
	id := "aws:///us-east-1a/i-0123"
	kube := fakeclient.NewClientBuilder().WithScheme(s).
		WithIndex(&corev1.Node{}, NodeProviderIDIndex, NodeProviderID).
		WithIndex(&karpv1.NodeClaim{}, NodeClaimProviderIDIndex, NodeClaimProviderID).
		WithObjects(node("b", id), node("a", id), node("other", "aws:///us-east-1a/i-0456"), node("unmanaged", "")).
		Build()
	counting := &countingClient{Client: kube}
	ctx := context.Background()

	for _, tt := range []struct {
		name       string
		r          *Reconciler
		unfiltered int
	}{
		{"listing", New(counting, nil, nil, nil, nil), 1},
		{"indexed", New(counting, nil, nil, nil, nil).WithIndexes(), 0},
	} {
		counting.unfiltered = 0
		got, err := tt.r.nodesFor(ctx, id)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if len(got) != 2 || got[0].Name != "a" || got[1].Name != "b" {
			t.Errorf("%s: nodesFor = %v, want a and b", tt.name, got)
		}
		if counting.unfiltered != tt.unfiltered {
			t.Errorf("%s: %d unfiltered lists, want %d", tt.name, counting.unfiltered, tt.unfiltered)
		}
	}
	if got := NodeClaimProviderID(&karpv1.NodeClaim{Status: karpv1.NodeClaimStatus{ProviderID: id}}); len(got) != 1 || got[0] != id {
		t.Errorf("NodeClaimProviderID = %v", got)
	}
	if got := NodeProviderID(node("x", "")); got != nil {
		t.Errorf("NodeProviderID of a node without an ID = %v", got)
	}
}
