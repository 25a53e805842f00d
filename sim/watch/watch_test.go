package watch

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/stevedore-autoscaler/stevedore/sim/apiserver"
)

func TestWatches(t *testing.T) {
	podGVK := corev1.SchemeGroupVersion.WithKind("Pod")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Labels: map[string]string{"a": "b"}}, Spec: corev1.PodSpec{NodeName: "n"}}
	change := apiserver.Change{Type: apiserver.Added, GVK: podGVK, Object: pod}
	labelled := func(o client.Object) bool { return o.GetLabels()["a"] == "b" }
	unlabelled := func(o client.Object) bool { return o.GetLabels()["a"] == "" }
	for _, tc := range []struct {
		name string
		w    Watch
		want []reconcile.Request
	}{
		{"own", Own(podGVK), []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "p"}}}},
		{"own, filtered out", Own(podGVK, unlabelled), nil},
		{"fixed", Fixed(podGVK, Named("singleton"), labelled), []reconcile.Request{Named("singleton")}},
		{"map", Map(podGVK, func(o client.Object) []reconcile.Request {
			return []reconcile.Request{Named(o.(*corev1.Pod).Spec.NodeName)}
		}), []reconcile.Request{Named("n")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.w.Map(change)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
}
