// Package catalog holds the embedded EC2 instance-type catalog: for each of the
// instance types stevedore knows, its well-known labels, its capacity, the
// resources a kubelet makes allocatable on it (AL2023, default kubelet settings)
// and its us-east-1 on-demand price.
//
// The catalog is data, not policy. The AWS provider uses it where the Pricing or
// DescribeInstanceTypes APIs cannot be reached, and the in-memory AWS serves it as
// its DescribeInstanceTypes answer; offerings and spot prices are built on top of
// it elsewhere.
package catalog

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

//go:embed aws-instance-types.jsonl
var raw []byte

// Label keys read from the catalog to derive capacity. They are the provider's
// well-known labels, repeated here so the catalog has no dependency on the API.
const (
	labelCPU          = "karpenter.k8s.aws/instance-cpu"
	labelMemoryMiB    = "karpenter.k8s.aws/instance-memory"
	labelInstanceType = "node.kubernetes.io/instance-type"
	labelArch         = "kubernetes.io/arch"
)

// RootVolumeSize is the root EBS volume an EC2NodeClass without blockDeviceMappings
// gets on AL2023 (20 GiB). The catalog's allocatable ephemeral storage is what remains
// of it after the kubelet's reservation and eviction threshold.
var RootVolumeSize = resource.MustParse("20Gi")

// InstanceType is one EC2 instance type as the catalog records it.
type InstanceType struct {
	// Name is the EC2 instance type name, for example "m6i.large".
	Name string
	// Labels are the well-known node labels of the type (instance category,
	// family, generation, size, cpu, memory, arch, os, …).
	Labels map[string]string
	// Capacity is what the machine has: vCPUs, memory, pods (the ENI-derived
	// maximum), the root volume, and any accelerators or ENI-backed resources.
	Capacity corev1.ResourceList
	// Allocatable is Capacity minus kube-reserved, system-reserved, the eviction
	// threshold and VM memory overhead, as the kubelet on AL2023 reports it.
	Allocatable corev1.ResourceList
	// OnDemandPricePerHour is the us-east-1 Linux on-demand price in USD. It is
	// zero for the few types that are not sold on demand there (HPC types offered
	// in other regions, capacity-block-only types); see Priced.
	OnDemandPricePerHour float64
}

// Priced reports whether the catalog has an on-demand price for the type. A type
// without one must not be offered on demand: its cost could not be compared.
func (t *InstanceType) Priced() bool { return t.OnDemandPricePerHour > 0 }

// Arch is the Kubernetes architecture label of the type ("amd64" or "arm64").
func (t *InstanceType) Arch() string { return t.Labels[labelArch] }

type record struct {
	Name                 string            `json:"name"`
	Labels               map[string]string `json:"labels"`
	Allocatable          map[string]string `json:"allocatable"`
	OnDemandPricePerHour *float64          `json:"onDemandPricePerHour"`
}

var (
	loadOnce sync.Once
	loaded   []InstanceType
	byName   map[string]int
	loadErr  error
)

// All returns every instance type of the catalog, sorted by name. The slice and
// the values in it are shared: callers must not modify them.
func All() ([]InstanceType, error) {
	loadOnce.Do(func() { loaded, byName, loadErr = parse(raw) })
	return loaded, loadErr
}

// Lookup returns the named instance type.
func Lookup(name string) (*InstanceType, bool) {
	all, err := All()
	if err != nil {
		return nil, false
	}
	i, ok := byName[name]
	if !ok {
		return nil, false
	}
	return &all[i], true
}

// Parse decodes a catalog in the embedded JSON-lines format. It is exported for
// tests and tools that bring their own catalog; most callers want All.
func Parse(data []byte) ([]InstanceType, error) {
	types, _, err := parse(data)
	return types, err
}

func parse(data []byte) ([]InstanceType, map[string]int, error) {
	var types []InstanceType
	index := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	line := 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		var r record
		dec := json.NewDecoder(bytes.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			return nil, nil, fmt.Errorf("catalog line %d: %w", line, err)
		}
		t, err := fromRecord(r)
		if err != nil {
			return nil, nil, fmt.Errorf("catalog line %d (%s): %w", line, r.Name, err)
		}
		if _, dup := index[t.Name]; dup {
			return nil, nil, fmt.Errorf("catalog line %d: instance type %s listed twice", line, t.Name)
		}
		index[t.Name] = len(types)
		types = append(types, t)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("reading catalog: %w", err)
	}
	sort.Slice(types, func(i, j int) bool { return types[i].Name < types[j].Name })
	for i := range types {
		index[types[i].Name] = i
	}
	return types, index, nil
}

func fromRecord(r record) (InstanceType, error) {
	if r.Name == "" {
		return InstanceType{}, fmt.Errorf("missing name")
	}
	if r.Labels[labelInstanceType] != r.Name {
		return InstanceType{}, fmt.Errorf("label %s is %q, want the type's name", labelInstanceType, r.Labels[labelInstanceType])
	}
	var price float64
	if r.OnDemandPricePerHour != nil {
		if price = *r.OnDemandPricePerHour; price <= 0 {
			return InstanceType{}, fmt.Errorf("on-demand price %v is not positive; omit it for a type not sold on demand", price)
		}
	}
	alloc := corev1.ResourceList{}
	for name, value := range r.Allocatable {
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return InstanceType{}, fmt.Errorf("allocatable %s: %w", name, err)
		}
		alloc[corev1.ResourceName(name)] = q
	}
	vcpu, err := strconv.ParseInt(r.Labels[labelCPU], 10, 64)
	if err != nil || vcpu <= 0 {
		return InstanceType{}, fmt.Errorf("label %s is %q, want a positive integer", labelCPU, r.Labels[labelCPU])
	}
	memMiB, err := strconv.ParseInt(r.Labels[labelMemoryMiB], 10, 64)
	if err != nil || memMiB <= 0 {
		return InstanceType{}, fmt.Errorf("label %s is %q, want a positive integer", labelMemoryMiB, r.Labels[labelMemoryMiB])
	}
	// Capacity: cpu and memory are the machine's; pods and extended resources
	// are not reserved by the kubelet, so capacity equals allocatable for them.
	capacity := corev1.ResourceList{}
	for name, q := range alloc {
		capacity[name] = q.DeepCopy()
	}
	capacity[corev1.ResourceCPU] = *resource.NewQuantity(vcpu, resource.DecimalSI)
	capacity[corev1.ResourceMemory] = *resource.NewQuantity(memMiB*1024*1024, resource.BinarySI)
	capacity[corev1.ResourceEphemeralStorage] = RootVolumeSize.DeepCopy()
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, corev1.ResourcePods} {
		a, ok := alloc[name]
		if !ok {
			return InstanceType{}, fmt.Errorf("allocatable %s missing", name)
		}
		if c := capacity[name]; a.Cmp(c) > 0 {
			return InstanceType{}, fmt.Errorf("allocatable %s %s exceeds capacity %s", name, a.String(), c.String())
		}
	}
	return InstanceType{Name: r.Name, Labels: r.Labels, Capacity: capacity, Allocatable: alloc, OnDemandPricePerHour: price}, nil
}
