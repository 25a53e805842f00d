package resources

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

const gpu = corev1.ResourceName("nvidia.com/gpu")

// list builds a resource list from alternating names and quantities.
func list(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func container(kv ...string) corev1.Container {
	return corev1.Container{Resources: corev1.ResourceRequirements{Requests: list(kv...)}}
}

func sidecar(kv ...string) corev1.Container {
	c := container(kv...)
	always := corev1.ContainerRestartPolicyAlways
	c.RestartPolicy = &always
	return c
}

// equal compares resource lists by value, treating a missing resource as
// different from a zero one.
func equal(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, q := range a {
		if other, ok := b[name]; !ok || q.Cmp(other) != 0 {
			return false
		}
	}
	return true
}

func TestRequests(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec corev1.PodSpec
		want corev1.ResourceList
	}{
		{
			name: "no requests count zero, not the scoring defaults",
			spec: corev1.PodSpec{Containers: []corev1.Container{{}, {}}},
			want: corev1.ResourceList{},
		},
		{
			name: "containers add up",
			spec: corev1.PodSpec{Containers: []corev1.Container{
				container("cpu", "1", "memory", "1Gi"),
				container("cpu", "500m", string(gpu), "1"),
			}},
			want: list("cpu", "1500m", "memory", "1Gi", string(gpu), "1"),
		},
		{
			name: "an init container larger than the containers sets the request",
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{container("cpu", "2", "memory", "256Mi")},
				Containers:     []corev1.Container{container("cpu", "1", "memory", "1Gi")},
			},
			want: list("cpu", "2", "memory", "1Gi"),
		},
		{
			name: "init containers run one at a time: the largest counts, not the sum",
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{container("cpu", "2"), container("cpu", "3"), container("cpu", "1")},
				Containers:     []corev1.Container{container("cpu", "1")},
			},
			want: list("cpu", "3"),
		},
		{
			name: "sidecars add to the containers",
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{sidecar("cpu", "500m", "memory", "128Mi")},
				Containers:     []corev1.Container{container("cpu", "1", "memory", "1Gi")},
			},
			want: list("cpu", "1500m", "memory", "1152Mi"),
		},
		{
			name: "an init container after a sidecar runs alongside it",
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{sidecar("cpu", "1"), container("cpu", "2500m")},
				Containers:     []corev1.Container{container("cpu", "1")},
			},
			want: list("cpu", "3500m"),
		},
		{
			name: "an init container before a sidecar runs alone",
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{container("cpu", "2500m"), sidecar("cpu", "1")},
				Containers:     []corev1.Container{container("cpu", "1")},
			},
			want: list("cpu", "2500m"),
		},
		{
			name: "overhead is added",
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{container("cpu", "2")},
				Containers:     []corev1.Container{container("cpu", "1", "memory", "1Gi")},
				Overhead:       list("cpu", "250m", "memory", "64Mi"),
			},
			want: list("cpu", "2250m", "memory", "1088Mi"),
		},
		{
			name: "pod-level requests replace the containers' cpu and memory",
			spec: corev1.PodSpec{
				Resources:  &corev1.ResourceRequirements{Requests: list("cpu", "4", "memory", "8Gi")},
				Containers: []corev1.Container{container("cpu", "1", "memory", "1Gi", string(gpu), "2")},
				Overhead:   list("cpu", "100m"),
			},
			want: list("cpu", "4100m", "memory", "8Gi", string(gpu), "2"),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Requests(&corev1.Pod{Spec: tc.spec})
			if !equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			v := PodVector(&corev1.Pod{Spec: tc.spec})
			want := NewVector(tc.want)
			want.Pods = 1
			if v.String() != want.String() {
				t.Errorf("PodVector = %s, want %s", v, want)
			}
		})
	}
}

func TestFits(t *testing.T) {
	node := list("cpu", "2", "memory", "4Gi", "pods", "10", string(gpu), "1")
	for _, tc := range []struct {
		name      string
		requests  corev1.ResourceList
		available corev1.ResourceList
		wantShort []corev1.ResourceName
	}{
		{name: "nothing requested", available: node},
		{name: "exactly full", requests: list("cpu", "2", "memory", "4Gi", string(gpu), "1"), available: node},
		{name: "cpu short", requests: list("cpu", "2001m"), available: node, wantShort: []corev1.ResourceName{"cpu"}},
		{name: "several short, sorted", requests: list("memory", "5Gi", "cpu", "3", string(gpu), "2"), available: node,
			wantShort: []corev1.ResourceName{"cpu", "memory", gpu}},
		{name: "a resource the node lacks", requests: list("example.com/fpga", "1"), available: node,
			wantShort: []corev1.ResourceName{"example.com/fpga"}},
		{name: "zero of a resource the node lacks fits", requests: list("example.com/fpga", "0"), available: node},
		{name: "zero request fits an over-committed node", requests: list("cpu", "0", "memory", "1Gi"), available: list("cpu", "-1", "memory", "1Gi")},
		{name: "anything fits when requests are empty", requests: corev1.ResourceList{}, available: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, short := Fits(tc.requests, tc.available)
			if ok != (tc.wantShort == nil) || !slices.Equal(short, tc.wantShort) {
				t.Errorf("Fits = %v, %v; want short %v", ok, short, tc.wantShort)
			}
			if got := NewVector(tc.requests).Fits(NewVector(tc.available)); got != ok {
				t.Errorf("Vector.Fits = %v, want %v", got, ok)
			}
			if got := NewVector(tc.requests).Insufficient(NewVector(tc.available)); !slices.Equal(got, tc.wantShort) {
				t.Errorf("Vector.Insufficient = %v, want %v", got, tc.wantShort)
			}
		})
	}
}

func TestArithmetic(t *testing.T) {
	a := list("cpu", "1", "memory", "1Gi")
	b := list("cpu", "500m", string(gpu), "1")
	for _, tc := range []struct {
		name string
		got  corev1.ResourceList
		want corev1.ResourceList
	}{
		{name: "Add", got: Add(a, b, b), want: list("cpu", "2", "memory", "1Gi", string(gpu), "2")},
		{name: "Add nothing", got: Add(), want: corev1.ResourceList{}},
		{name: "Subtract", got: Subtract(a, b), want: list("cpu", "500m", "memory", "1Gi", string(gpu), "-1")},
		{name: "Max", got: Max(a, b, list("memory", "512Mi")), want: list("cpu", "1", "memory", "1Gi", string(gpu), "1")},
		{name: "Max keeps a lone negative", got: Max(list("cpu", "-1")), want: list("cpu", "-1")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !equal(tc.got, tc.want) {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
	if !equal(a, list("cpu", "1", "memory", "1Gi")) || !equal(b, list("cpu", "500m", string(gpu), "1")) {
		t.Errorf("inputs changed: %v, %v", a, b)
	}
	// Results own their quantities: changing one leaves the inputs alone.
	big := list("cpu", "1.5")
	sum := Add(big)
	q := sum["cpu"]
	q.Add(resource.MustParse("1"))
	sum["cpu"] = q
	if !equal(big, list("cpu", "1.5")) {
		t.Errorf("Add shares quantities with its input: %v", big)
	}
}

func TestIsZeroAndCmp(t *testing.T) {
	for _, tc := range []struct {
		list corev1.ResourceList
		want bool
	}{
		{nil, true},
		{corev1.ResourceList{}, true},
		{list("cpu", "0", "memory", "0"), true},
		{list("cpu", "0", "memory", "1"), false},
		{list("cpu", "-1m"), false},
	} {
		if got := IsZero(tc.list); got != tc.want {
			t.Errorf("IsZero(%v) = %v, want %v", tc.list, got, tc.want)
		}
	}
	a, b := list("cpu", "1", "memory", "1Gi"), list("cpu", "1000m")
	for _, tc := range []struct {
		name corev1.ResourceName
		want int
	}{
		{"cpu", 0},
		{"memory", 1},
		{gpu, 0},
	} {
		if got := Cmp(a, b, tc.name); got != tc.want {
			t.Errorf("Cmp(%s) = %d, want %d", tc.name, got, tc.want)
		}
		if got := Cmp(b, a, tc.name); got != -tc.want {
			t.Errorf("Cmp(%s) reversed = %d, want %d", tc.name, got, -tc.want)
		}
	}
}
