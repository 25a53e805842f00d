package resources

import (
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Vector is a resource list in fixed integer units for the packer's inner
// loop: cpu in millicores, memory and ephemeral storage in bytes, pods as a
// count, and every other resource (extended resources, hugepages) as an
// integer in a short list sorted by name. Quantities are rounded up to the
// unit, so a Vector never understates a request.
//
// The zero Vector is empty. Vectors share their extended list when copied:
// Add and Sub modify it in place, so Clone a Vector before modifying a copy
// that must stay independent.
type Vector struct {
	CPU              int64 // millicores
	Memory           int64 // bytes
	EphemeralStorage int64 // bytes
	Pods             int64
	extended         []scalar // sorted by name
}

// scalar is one extended resource in a Vector.
type scalar struct {
	name  corev1.ResourceName
	value int64
}

// Infinite is the amount a Vector holds for a quantity too large to count in
// its unit: more than math.MaxInt64 millicores, bytes or items. No node has
// that much, so a request of it fits nowhere; no node adds up to it, so a
// limit of it never binds. Sums stop at it instead of wrapping around.
const Infinite int64 = math.MaxInt64

// The largest quantities whose value in millis or units an int64 holds.
var (
	maxMilli = *resource.NewMilliQuantity(math.MaxInt64, resource.DecimalSI)
	maxUnit  = *resource.NewQuantity(math.MaxInt64, resource.DecimalSI)
)

// MilliValue returns q in thousandths, rounded up, as q.MilliValue does, but
// saturated: Infinite when that is more than an int64 holds and
// math.MinInt64 when it is less, where q.MilliValue wraps around (1e30 cpu
// would come out as a small or negative number of millicores). A negative
// quantity is rounded away from zero.
func MilliValue(q resource.Quantity) int64 {
	return scaledValue(q, resource.Milli, &maxMilli)
}

// Value returns q rounded up to an integer, as q.Value does, but saturated
// like MilliValue.
func Value(q resource.Quantity) int64 {
	return scaledValue(q, 0, &maxUnit)
}

// scaledValue returns q in units of 10^scale, rounded away from zero,
// saturated beyond ±limit.
func scaledValue(q resource.Quantity, scale resource.Scale, limit *resource.Quantity) int64 {
	if q.Sign() < 0 {
		// Quantity rounds negative values inconsistently (and its
		// inf.Dec form wrongly); work with the magnitude. Neg would
		// change an inf.Dec that q shares with the caller: copy first.
		q = q.DeepCopy()
		q.Neg()
		if v := scaledValue(q, scale, limit); v != Infinite {
			return -v
		}
		return math.MinInt64
	}
	if q.Cmp(*limit) > 0 {
		return Infinite
	}
	return q.ScaledValue(scale)
}

// AddSaturating returns a+b, or Infinite or math.MinInt64 when the sum is
// beyond what an int64 holds.
func AddSaturating(a, b int64) int64 {
	s := a + b
	if (s^a)&(s^b) < 0 { // a and b have the same sign and s the other
		return math.MaxInt64 ^ (a >> 63)
	}
	return s
}

// SubSaturating returns a-b, or Infinite or math.MinInt64 when the
// difference is beyond what an int64 holds.
func SubSaturating(a, b int64) int64 {
	d := a - b
	if (a^b)&(a^d) < 0 { // a and b have different signs and d has b's
		return math.MaxInt64 ^ (a >> 63)
	}
	return d
}

// NewVector returns list as a Vector. A quantity beyond what an int64 holds
// in its unit becomes Infinite (math.MinInt64 when negative).
func NewVector(list corev1.ResourceList) Vector {
	var v Vector
	for name, q := range list {
		switch name {
		case corev1.ResourceCPU:
			v.CPU = MilliValue(q)
		case corev1.ResourceMemory:
			v.Memory = Value(q)
		case corev1.ResourceEphemeralStorage:
			v.EphemeralStorage = Value(q)
		case corev1.ResourcePods:
			v.Pods = Value(q)
		default:
			v.extended = append(v.extended, scalar{name: name, value: Value(q)})
		}
	}
	slices.SortFunc(v.extended, func(a, b scalar) int { return strings.Compare(string(a.name), string(b.name)) })
	return v
}

// PodVector returns what pod requests (see Requests) plus the one pod slot
// it takes on a node. A request too large to count is Infinite, so the pod
// fits no node. A negative request, which the API server never admits
// (validation rejects it), counts as zero: a pod never gives a node room.
func PodVector(pod *corev1.Pod) Vector {
	v := NewVector(Requests(pod))
	v.CPU = max(v.CPU, 0)
	v.Memory = max(v.Memory, 0)
	v.EphemeralStorage = max(v.EphemeralStorage, 0)
	v.Pods = AddSaturating(max(v.Pods, 0), 1)
	for i := range v.extended { // NewVector's own list
		v.extended[i].value = max(v.extended[i].value, 0)
	}
	return v
}

// ResourceList returns v as a new resource list. Resources at zero are left
// out.
func (v Vector) ResourceList() corev1.ResourceList {
	out := make(corev1.ResourceList, 4+len(v.extended))
	put := func(name corev1.ResourceName, q *resource.Quantity) {
		if !q.IsZero() {
			out[name] = *q
		}
	}
	put(corev1.ResourceCPU, resource.NewMilliQuantity(v.CPU, resource.DecimalSI))
	put(corev1.ResourceMemory, resource.NewQuantity(v.Memory, resource.BinarySI))
	put(corev1.ResourceEphemeralStorage, resource.NewQuantity(v.EphemeralStorage, resource.BinarySI))
	put(corev1.ResourcePods, resource.NewQuantity(v.Pods, resource.DecimalSI))
	for _, s := range v.extended {
		format := resource.DecimalSI
		if strings.HasPrefix(string(s.name), corev1.ResourceHugePagesPrefix) {
			format = resource.BinarySI
		}
		put(s.name, resource.NewQuantity(s.value, format))
	}
	return out
}

// Get returns the amount of name in v, in v's units.
func (v Vector) Get(name corev1.ResourceName) int64 {
	switch name {
	case corev1.ResourceCPU:
		return v.CPU
	case corev1.ResourceMemory:
		return v.Memory
	case corev1.ResourceEphemeralStorage:
		return v.EphemeralStorage
	case corev1.ResourcePods:
		return v.Pods
	}
	if i, found := v.find(name); found {
		return v.extended[i].value
	}
	return 0
}

// Clone returns a copy of v that shares nothing with it.
func (v Vector) Clone() Vector {
	v.extended = slices.Clone(v.extended)
	return v
}

// IsZero reports whether every resource in v is zero.
func (v Vector) IsZero() bool {
	if v.CPU != 0 || v.Memory != 0 || v.EphemeralStorage != 0 || v.Pods != 0 {
		return false
	}
	for _, s := range v.extended {
		if s.value != 0 {
			return false
		}
	}
	return true
}

// Add adds o to v in place, saturating (see AddSaturating). It does not
// allocate unless o has an extended resource that v lacks.
func (v *Vector) Add(o Vector) {
	v.CPU = AddSaturating(v.CPU, o.CPU)
	v.Memory = AddSaturating(v.Memory, o.Memory)
	v.EphemeralStorage = AddSaturating(v.EphemeralStorage, o.EphemeralStorage)
	v.Pods = AddSaturating(v.Pods, o.Pods)
	for _, s := range o.extended {
		v.addExtended(s.name, s.value, false)
	}
}

// Sub subtracts o from v in place, saturating (see SubSaturating). It does
// not allocate unless o has an extended resource that v lacks.
//
// Saturation loses what it cuts off: once a sum has reached Infinite,
// subtracting from it does not give back the amounts added before.
func (v *Vector) Sub(o Vector) {
	v.CPU = SubSaturating(v.CPU, o.CPU)
	v.Memory = SubSaturating(v.Memory, o.Memory)
	v.EphemeralStorage = SubSaturating(v.EphemeralStorage, o.EphemeralStorage)
	v.Pods = SubSaturating(v.Pods, o.Pods)
	for _, s := range o.extended {
		v.addExtended(s.name, s.value, true)
	}
}

// Fits reports whether v, as requests, fits in available. A resource that v
// requests at zero or less always fits. Fits does not allocate.
func (v Vector) Fits(available Vector) bool {
	if v.CPU > 0 && v.CPU > available.CPU ||
		v.Memory > 0 && v.Memory > available.Memory ||
		v.EphemeralStorage > 0 && v.EphemeralStorage > available.EphemeralStorage ||
		v.Pods > 0 && v.Pods > available.Pods {
		return false
	}
	have := available.extended
	for _, want := range v.extended {
		if want.value <= 0 {
			continue
		}
		// Both lists are sorted: skip what v does not request.
		for len(have) > 0 && have[0].name < want.name {
			have = have[1:]
		}
		if len(have) == 0 || have[0].name != want.name || want.value > have[0].value {
			return false
		}
	}
	return true
}

// Insufficient returns, sorted, the resources that v requests beyond what
// available has; none if v fits.
func (v Vector) Insufficient(available Vector) []corev1.ResourceName {
	var short []corev1.ResourceName
	check := func(name corev1.ResourceName, want, have int64) {
		if want > 0 && want > have {
			short = append(short, name)
		}
	}
	check(corev1.ResourceCPU, v.CPU, available.CPU)
	check(corev1.ResourceMemory, v.Memory, available.Memory)
	check(corev1.ResourceEphemeralStorage, v.EphemeralStorage, available.EphemeralStorage)
	check(corev1.ResourcePods, v.Pods, available.Pods)
	for _, s := range v.extended {
		check(s.name, s.value, available.Get(s.name))
	}
	slices.Sort(short)
	return short
}

// String returns v's non-zero resources in a stable form, for example
// "cpu=1500m memory=2147483648 pods=1 nvidia.com/gpu=1".
func (v Vector) String() string {
	var b strings.Builder
	field := func(name string, value int64, unit string) {
		if value == 0 {
			return
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(name)
		b.WriteByte('=')
		b.WriteString(strconv.FormatInt(value, 10))
		b.WriteString(unit)
	}
	field(string(corev1.ResourceCPU), v.CPU, "m")
	field(string(corev1.ResourceMemory), v.Memory, "")
	field(string(corev1.ResourceEphemeralStorage), v.EphemeralStorage, "")
	field(string(corev1.ResourcePods), v.Pods, "")
	for _, s := range v.extended {
		field(string(s.name), s.value, "")
	}
	return b.String()
}

// find returns the index of name in v's extended list, or where it would go.
// The list holds a handful of entries, so a linear scan beats a binary
// search.
func (v Vector) find(name corev1.ResourceName) (int, bool) {
	for i := range v.extended {
		if v.extended[i].name >= name {
			return i, v.extended[i].name == name
		}
	}
	return len(v.extended), false
}

// addExtended adds delta to extended resource name, or subtracts it when
// sub is set, saturating, and inserts name if v lacks it.
func (v *Vector) addExtended(name corev1.ResourceName, delta int64, sub bool) {
	i, found := v.find(name)
	var have int64
	if found {
		have = v.extended[i].value
	}
	if sub {
		have = SubSaturating(have, delta)
	} else {
		have = AddSaturating(have, delta)
	}
	if found {
		v.extended[i].value = have
		return
	}
	// Insert into a new list, so that a copy sharing the old one keeps a
	// consistent (if stale) list.
	grown := make([]scalar, 0, len(v.extended)+1)
	grown = append(grown, v.extended[:i]...)
	grown = append(grown, scalar{name: name, value: have})
	v.extended = append(grown, v.extended[i:]...)
}
