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
	for _, kind := range []string{"EC2NodeClass", "EC2NodeClassList"} {
		if !s.Recognizes(GroupVersion.WithKind(kind)) {
			t.Errorf("scheme does not know %s", GroupVersion.WithKind(kind))
		}
	}
	obj, err := s.New(GroupVersion.WithKind("EC2NodeClass"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := obj.(*EC2NodeClass); !ok {
		t.Errorf("New(EC2NodeClass) returned %T", obj)
	}
}
