package apiserver

import (
	"encoding/json"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
)

// viaDocument applies a merge patch the long way: encode, merge, decode
// into a zero value.
func viaDocument(t *testing.T, cur client.Object, patch string) (client.Object, error) {
	t.Helper()
	doc, err := json.Marshal(cur)
	if err != nil {
		t.Fatal(err)
	}
	merged, err := MergePatch(doc, []byte(patch))
	if err != nil {
		return nil, err
	}
	out := zeroOf(cur).(client.Object)
	return out, json.Unmarshal(merged, out)
}

// roundTrip is obj as the document path leaves the parts a patch does not
// reach: through JSON.
func roundTrip[T client.Object](t *testing.T, obj T) T {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	out := zeroOf(obj).(T)
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestMergeTypedMatchesTheDocumentPath: the patches controllers send, and
// the corners of RFC 7386, give through mergeTyped exactly the object the
// document path gives; the patches it cannot follow are refused, so that
// the caller takes the document path (and gets its error, if any).
func TestMergeTypedMatchesTheDocumentPath(t *testing.T) {
	at := metav1.Date(2026, 3, 2, 10, 0, 0, 0, metav1.Now().Location())
	nc := roundTrip(t, &karpv1.NodeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "karpenter.sh/v1", Kind: "NodeClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: "default-abc", ResourceVersion: "41", Labels: map[string]string{"karpenter.sh/nodepool": "default", "team": "a"}, Annotations: map[string]string{"note": "x"}, Finalizers: []string{"karpenter.sh/termination"}},
		Spec:       karpv1.NodeClaimSpec{Taints: []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}},
		Status: karpv1.NodeClaimStatus{
			ProviderID: "aws:///us-east-1a/i-1", NodeName: "ip-10-0-0-1",
			Capacity:   corev1.ResourceList{corev1.ResourceCPU: apiresource.MustParse("2"), corev1.ResourceMemory: apiresource.MustParse("8Gi")},
			Conditions: []metav1.Condition{{Type: "Launched", Status: metav1.ConditionTrue, Reason: "Launched", Message: "old", ObservedGeneration: 3, LastTransitionTime: at}},
		},
	})
	pod := roundTrip(t, &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "apps", ResourceVersion: "7", Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "web"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	})
	cases := []struct {
		name  string
		obj   client.Object
		patch string
		typed bool // mergeTyped follows it
	}{
		{"conditions replaced with the resource version", nc, `{"metadata":{"resourceVersion":"41"},"status":{"conditions":[{"type":"Drifted","status":"True","reason":"AMIDrift","message":"m","lastTransitionTime":"2026-03-02T11:00:00Z"}]}}`, true},
		{"conditions removed", nc, `{"status":{"conditions":null}}`, true},
		{"label added and label removed", nc, `{"metadata":{"labels":{"new":"v","team":null}}}`, true},
		{"annotations onto none", pod, `{"metadata":{"annotations":{"a":"b"}}}`, true},
		{"empty object onto no map", pod, `{"metadata":{"annotations":{}}}`, true},
		{"finalizers replaced", nc, `{"metadata":{"finalizers":[]}}`, true},
		{"quantity changed", nc, `{"status":{"capacity":{"cpu":"4","pods":"110"}}}`, true},
		{"time set", nc, `{"status":{"lastPodEventTime":"2026-03-02T12:00:00Z"}}`, true},
		{"pointer struct created", pod, `{"spec":{"securityContext":{"runAsUser":1000}}}`, true},
		{"pointer struct removed", pod, `{"spec":{"securityContext":null}}`, true},
		{"nested struct merged", pod, `{"status":{"phase":"Succeeded","hostIP":"10.0.0.1"}}`, true},
		{"whole struct nulled", pod, `{"status":null}`, true},
		{"big number kept exact", pod, `{"spec":{"activeDeadlineSeconds":9007199254740993}}`, true},
		{"unknown key ignored", nc, `{"status":{"frobnicate":1}}`, true},
		{"type meta changed", nc, `{"kind":"NodeClaim","apiVersion":"karpenter.sh/v1"}`, true},
		{"key in another case", nc, `{"Status":{"nodeName":"other"}}`, false},
		{"object for a list", nc, `{"spec":{"taints":{"key":"x"}}}`, false},
		{"object for a string", pod, `{"spec":{"nodeName":{"a":1}}}`, false},
		{"object for a quantity", nc, `{"status":{"capacity":{"cpu":{"a":1}}}}`, false},
		{"object for a time", nc, `{"status":{"lastPodEventTime":{"a":1}}}`, false},
		{"string for a number", pod, `{"spec":{"activeDeadlineSeconds":"5"}}`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want, wantErr := viaDocument(t, tc.obj, tc.patch)
			p, err := decodeJSON([]byte(tc.patch))
			if err != nil {
				t.Fatal(err)
			}
			got := tc.obj.DeepCopyObject().(client.Object)
			ok := mergeTyped(reflect.ValueOf(got).Elem(), p)
			if ok != tc.typed {
				t.Fatalf("mergeTyped followed the patch: %v, want %v (document path error: %v)", ok, tc.typed, wantErr)
			}
			if !ok {
				return
			}
			if wantErr != nil {
				t.Fatalf("mergeTyped followed a patch the document path refuses: %v", wantErr)
			}
			if !reflect.DeepEqual(got, want) {
				g, _ := json.Marshal(got)
				w, _ := json.Marshal(want)
				t.Fatalf("mergeTyped gives\n%s\nthe document path\n%s", g, w)
			}
		})
	}
}

// semanticEqual agrees with equality.Semantic.DeepEqual whether the objects
// differ in their status, elsewhere, only in how a quantity is written, or
// not at all.
func TestSemanticEqualLooksAtStatusFirst(t *testing.T) {
	base := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"a": "b"}},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: apiresource.MustParse("1")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	cases := map[string]struct {
		change func(p *corev1.Pod)
		equal  bool
	}{
		"same":           {func(p *corev1.Pod) {}, true},
		"status differs": {func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }, false},
		"label differs":  {func(p *corev1.Pod) { p.Labels["a"] = "c" }, false},
		"quantity written otherwise": {func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = apiresource.MustParse("1000m")
		}, true},
	}
	for name, tc := range cases {
		other := base.DeepCopy()
		tc.change(other)
		if got := semanticEqual(base, other); got != tc.equal {
			t.Errorf("%s: semanticEqual = %v, want %v", name, got, tc.equal)
		}
	}
}
