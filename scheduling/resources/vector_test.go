package resources

import (
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestVectorConversion(t *testing.T) {
	for _, tc := range []struct {
		name     string
		in       corev1.ResourceList
		want     string
		wantList corev1.ResourceList // nil: the same as in
	}{
		{name: "empty", in: corev1.ResourceList{}, want: ""},
		{name: "fixed slots", in: list("cpu", "1500m", "memory", "2Gi", "ephemeral-storage", "10Gi", "pods", "110"),
			want: "cpu=1500m memory=2147483648 ephemeral-storage=10737418240 pods=110"},
		{name: "extended sorted", in: list(string(gpu), "2", "hugepages-2Mi", "64Mi", "aws.amazon.com/neuron", "1"),
			want: "aws.amazon.com/neuron=1 hugepages-2Mi=67108864 nvidia.com/gpu=2"},
		{name: "fractions round up", in: list("cpu", "0.0001", "memory", "1.5"),
			want: "cpu=1m memory=2", wantList: list("cpu", "1m", "memory", "2")},
		{name: "zeros are left out of the list", in: list("cpu", "0", string(gpu), "0"), want: "", wantList: corev1.ResourceList{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := NewVector(tc.in)
			if got := v.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
			want := tc.wantList
			if want == nil {
				want = tc.in
			}
			if got := v.ResourceList(); !equal(got, want) {
				t.Errorf("ResourceList() = %v, want %v", got, want)
			}
			for name, q := range want {
				got, wantValue := v.Get(name), q.Value()
				if name == corev1.ResourceCPU {
					wantValue = q.MilliValue()
				}
				if got != wantValue {
					t.Errorf("Get(%s) = %d, want %d", name, got, wantValue)
				}
			}
		})
	}
}

func TestVectorArithmetic(t *testing.T) {
	node := NewVector(list("cpu", "4", "memory", "8Gi", "pods", "3", string(gpu), "1", "vpc.amazonaws.com/pod-eni", "4"))
	remaining := node.Clone()
	pod := NewVector(list("cpu", "1", "memory", "2Gi", string(gpu), "1"))
	pod.Pods = 1
	plain := NewVector(list("cpu", "1", "memory", "2Gi"))
	plain.Pods = 1

	steps := []struct {
		name     string
		req      Vector
		wantFits bool
	}{
		{name: "gpu pod", req: pod, wantFits: true},
		{name: "second gpu pod: no gpu left", req: pod, wantFits: false},
		{name: "plain pod", req: plain, wantFits: true},
		{name: "plain pod again", req: plain, wantFits: true},
		{name: "no pod slot left", req: plain, wantFits: false},
	}
	for _, s := range steps {
		if got := s.req.Fits(remaining); got != s.wantFits {
			t.Fatalf("%s: Fits(%s) = %v, want %v", s.name, remaining, got, s.wantFits)
		}
		if s.wantFits {
			remaining.Sub(s.req)
		}
	}
	if got, want := remaining.String(), "cpu=1000m memory=2147483648 vpc.amazonaws.com/pod-eni=4"; got != want {
		t.Errorf("remaining = %q, want %q", got, want)
	}
	if got, want := node.String(), "cpu=4000m memory=8589934592 pods=3 nvidia.com/gpu=1 vpc.amazonaws.com/pod-eni=4"; got != want {
		t.Errorf("the cloned node changed: %q", got)
	}
	used := Vector{}
	used.Add(pod)
	used.Add(plain)
	used.Add(plain)
	remaining.Add(used)
	if remaining.String() != node.String() {
		t.Errorf("adding back gives %s, want %s", remaining, node)
	}
	used.Sub(used.Clone())
	if !used.IsZero() {
		t.Errorf("v - v = %s, want zero", used)
	}
	if (Vector{}).IsZero() != true || pod.IsZero() {
		t.Errorf("IsZero wrong")
	}
}

func TestVectorSubInsertsMissing(t *testing.T) {
	v := NewVector(list("cpu", "1"))
	v.Sub(NewVector(list("example.com/b", "1", "example.com/a", "2")))
	if got, want := v.String(), "cpu=1000m example.com/a=-2 example.com/b=-1"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestVectorDoesNotAllocate(t *testing.T) {
	node := NewVector(list("cpu", "4", "memory", "8Gi", "pods", "110", string(gpu), "1", "vpc.amazonaws.com/pod-eni", "4"))
	pod := NewVector(list("cpu", "1", "memory", "2Gi", string(gpu), "1", "pods", "1"))
	for name, f := range map[string]func(){
		"Fits": func() { _ = pod.Fits(node) },
		"Add":  func() { node.Add(pod) },
		"Sub":  func() { node.Sub(pod) },
	} {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s allocated %v times, want 0", name, n)
		}
	}
}

func BenchmarkVector(b *testing.B) {
	node := NewVector(list("cpu", "16", "memory", "64Gi", "ephemeral-storage", "100Gi", "pods", "110", string(gpu), "1", "vpc.amazonaws.com/pod-eni", "4"))
	pod := NewVector(list("cpu", "250m", "memory", "512Mi", "pods", "1"))
	gpuPod := NewVector(list("cpu", "1", "memory", "4Gi", "pods", "1", string(gpu), "1"))
	b.Run("fits", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = pod.Fits(node)
		}
	})
	b.Run("fits-extended", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = gpuPod.Fits(node)
		}
	})
	b.Run("sub-add", func(b *testing.B) {
		remaining := node.Clone()
		b.ReportAllocs()
		for b.Loop() {
			remaining.Sub(gpuPod)
			remaining.Add(gpuPod)
		}
	})
}

func BenchmarkRequests(b *testing.B) {
	always := corev1.ContainerRestartPolicyAlways
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{container("cpu", "100m"), {Resources: corev1.ResourceRequirements{Requests: list("cpu", "50m", "memory", "64Mi")}, RestartPolicy: &always}},
		Containers:     []corev1.Container{container("cpu", "500m", "memory", "1Gi"), container("cpu", "250m", "memory", "256Mi")},
	}}
	b.Run("list", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = Requests(pod)
		}
	})
	b.Run("vector", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = PodVector(pod)
		}
	})
	b.Run("fits-list", func(b *testing.B) {
		requests, available := Requests(pod), list("cpu", "4", "memory", "16Gi", "pods", "110")
		b.ReportAllocs()
		for b.Loop() {
			_, _ = Fits(requests, available)
		}
	})
}

func TestVectorSaturates(t *testing.T) {
	const inf, minus = Infinite, math.MinInt64
	for _, tc := range []struct {
		name string
		in   corev1.ResourceList
		want Vector // without extended resources
		ext  map[corev1.ResourceName]int64
	}{
		{name: "largest cpu that counts", in: list("cpu", "9223372036854775806m"), want: Vector{CPU: inf - 1}},
		{name: "int64's largest value is Infinite", in: list("cpu", "9223372036854775807m"), want: Vector{CPU: inf}},
		{name: "largest cpu in cores that counts", in: list("cpu", "9223372036854775"), want: Vector{CPU: 9223372036854775000}},
		{name: "a millicore beyond", in: list("cpu", "9223372036854775808m"), want: Vector{CPU: inf}},
		{name: "a fraction of a millicore beyond rounds up beyond", in: list("cpu", "9223372036854775.8071"), want: Vector{CPU: inf}},
		{name: "1e16 cores", in: list("cpu", "1e16"), want: Vector{CPU: inf}},
		{name: "1e30 cores", in: list("cpu", "1e30"), want: Vector{CPU: inf}},
		{name: "2^63-1 cores", in: list("cpu", "9223372036854775807"), want: Vector{CPU: inf}},
		{name: "1e30 memory", in: list("memory", "1e30"), want: Vector{Memory: inf}},
		{name: "1Ei memory counts", in: list("memory", "1Ei"), want: Vector{Memory: 1 << 60}},
		{name: "8Ei memory does not", in: list("memory", "8Ei"), want: Vector{Memory: inf}},
		{name: "2^63 bytes", in: list("ephemeral-storage", "9223372036854775808"), want: Vector{EphemeralStorage: inf}},
		{name: "pods", in: list("pods", "1e19"), want: Vector{Pods: inf}},
		{name: "extended", in: list(string(gpu), "1e30", "example.com/a", "9223372036854775807"),
			ext: map[corev1.ResourceName]int64{gpu: inf, "example.com/a": inf}},
		{name: "negative cpu counts", in: list("cpu", "-98500m"), want: Vector{CPU: -98500}},
		{name: "negative beyond", in: list("cpu", "-1e30", "memory", "-1e30"), want: Vector{CPU: minus, Memory: minus}},
		{name: "negative fractions round away from zero", in: list("cpu", "-0.0001", "memory", "-1.5"), want: Vector{CPU: -1, Memory: -2}},
		{name: "smallest cpu that counts", in: list("cpu", "-9223372036854775806m"), want: Vector{CPU: 1 - inf}},
		{name: "a millicore below", in: list("cpu", "-9223372036854775807m"), want: Vector{CPU: minus}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := NewVector(tc.in)
			got := [4]int64{v.CPU, v.Memory, v.EphemeralStorage, v.Pods}
			if got != [4]int64{tc.want.CPU, tc.want.Memory, tc.want.EphemeralStorage, tc.want.Pods} {
				t.Errorf("NewVector(%v) = %s, want %s", tc.in, v, tc.want)
			}
			for name, want := range tc.ext {
				if got := v.Get(name); got != want {
					t.Errorf("Get(%s) = %d, want %d", name, got, want)
				}
			}
		})
	}
}

func TestSaturatingArithmetic(t *testing.T) {
	const inf, minus = Infinite, math.MinInt64
	for _, tc := range []struct {
		a, b, sum, diff int64
	}{
		{a: 1, b: 2, sum: 3, diff: -1},
		{a: inf, b: 1, sum: inf, diff: inf - 1},
		{a: inf, b: inf, sum: inf, diff: 0},
		{a: inf - 5, b: 10, sum: inf, diff: inf - 15},
		{a: 10, b: inf, sum: inf, diff: 10 - inf},
		{a: -10, b: inf, sum: inf - 10, diff: minus},
		{a: minus, b: -1, sum: minus, diff: minus + 1},
		{a: minus, b: 1, sum: minus + 1, diff: minus},
		{a: inf, b: minus, sum: -1, diff: inf},
		{a: 0, b: minus, sum: minus, diff: inf},
		{a: -1, b: minus, sum: minus, diff: inf},
	} {
		if got := AddSaturating(tc.a, tc.b); got != tc.sum {
			t.Errorf("AddSaturating(%d, %d) = %d, want %d", tc.a, tc.b, got, tc.sum)
		}
		if got := SubSaturating(tc.a, tc.b); got != tc.diff {
			t.Errorf("SubSaturating(%d, %d) = %d, want %d", tc.a, tc.b, got, tc.diff)
		}
	}
}

// TestVectorSumsSaturate checks that sums over pods stop at Infinite, so
// that a pod too large to count never turns a node's usage small or
// negative, and that a request too large to count fits no node.
func TestVectorSumsSaturate(t *testing.T) {
	node := NewVector(list("cpu", "192", "memory", "1536Gi", "pods", "737", string(gpu), "8"))
	for _, tc := range []struct {
		name string
		pods []corev1.ResourceList
		want string
		fits bool
	}{
		{name: "small", pods: []corev1.ResourceList{list("cpu", "1")}, want: "cpu=1000m pods=1", fits: true},
		{name: "1e30 cpu", pods: []corev1.ResourceList{list("cpu", "1e30")}, want: "cpu=9223372036854775807m pods=1"},
		{name: "2^63-1 cores", pods: []corev1.ResourceList{list("cpu", "9223372036854775807")}, want: "cpu=9223372036854775807m pods=1"},
		{name: "a small pod then a huge one", pods: []corev1.ResourceList{list("cpu", "1"), list("cpu", "1e30")}, want: "cpu=9223372036854775807m pods=2"},
		{name: "two pods half of int64 each", pods: []corev1.ResourceList{list("cpu", "4611686018427388"), list("cpu", "4611686018427388")},
			want: "cpu=9223372036854775807m pods=2"},
		{name: "extended", pods: []corev1.ResourceList{list(string(gpu), "1"), list(string(gpu), "1e30")}, want: "pods=2 nvidia.com/gpu=9223372036854775807"},
		{name: "a negative request counts as none", pods: []corev1.ResourceList{list("cpu", "-98500m", "memory", "1Gi", string(gpu), "-1")},
			want: "memory=1073741824 pods=1", fits: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sum Vector
			for _, r := range tc.pods {
				sum.Add(PodVector(&corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: r}}}}}))
			}
			if got := sum.String(); got != tc.want {
				t.Errorf("sum = %q, want %q", got, tc.want)
			}
			if got := sum.Fits(node); got != tc.fits {
				t.Errorf("Fits = %v, want %v", got, tc.fits)
			}
		})
	}
}
