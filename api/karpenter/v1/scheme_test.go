package v1

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

func TestAddToScheme(t *testing.T) {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"NodePool", "NodePoolList", "NodeClaim", "NodeClaimList"} {
		if !s.Recognizes(GroupVersion.WithKind(kind)) {
			t.Errorf("scheme does not know %s", GroupVersion.WithKind(kind))
		}
	}
	obj, err := s.New(GroupVersion.WithKind("NodePool"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := obj.(*NodePool); !ok {
		t.Errorf("New(NodePool) returned %T", obj)
	}
}
