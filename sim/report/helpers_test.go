package report

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
)

type fixedClock struct{}

func (fixedClock) Now() time.Time                  { return t0 }
func (fixedClock) Since(t time.Time) time.Duration { return t0.Sub(t) }

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := karpv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}
