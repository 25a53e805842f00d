// Package hash computes the static hash of a NodePool's template: the value
// of the karpenter.sh/nodepool-hash annotation, written on the NodePool and
// copied onto each NodeClaim at launch. A NodeClaim whose hash differs from
// its NodePool's (under the same hash version) has drifted.
//
// The hash covers the template fields whose change can only be applied by
// replacing the node:
//
//   - spec.template.metadata.labels
//   - spec.template.metadata.annotations
//   - spec.template.spec.taints
//   - spec.template.spec.startupTaints
//   - spec.template.spec.nodeClassRef (group, kind, name)
//   - spec.template.spec.expireAfter
//   - spec.template.spec.terminationGracePeriod
//
// It leaves out spec.template.spec.requirements (checked separately, label
// by label, as requirements drift), spec.disruption, spec.limits,
// spec.weight and spec.replicas, which apply to existing nodes without
// replacing them.
//
// The value is the one Karpenter computes under hash version v3, so that a
// cluster can move from Karpenter to stevedore and back without a single
// NodeClaim drifting: both read and write the same annotations. That hash is
// hashstructure's FormatV2 hash of the template, with lists taken as sets,
// zero-valued fields skipped and nil pointers hashed like zero values. Since
// FormatV2 hashes Go type and field names along with the values, the
// template is first copied into the types of this package, whose names and
// shapes are those the hash was defined over; stevedore's API types differ
// (metadata is a named field there, label values have a type of their own,
// expireAfter is a pointer) and cannot be hashed directly.
//
// Consequences of that definition, kept because the other side of a move
// computes them too:
//
//   - the order of labels, annotations and taints does not matter;
//   - an empty map or list hashes differently from an absent one;
//   - a taint listed twice cancels itself out of the set;
//   - a taint's timeAdded counts, with the offset of the time zone it was
//     decoded in (the controller's local zone);
//   - expireAfter "Never" hashes like an unset expireAfter;
//   - durations count by length, so "90m" and "1h30m" hash alike.
package hash

import (
	"fmt"
	"strconv"
	"time"

	"github.com/mitchellh/hashstructure/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
)

// Version is the value of the karpenter.sh/nodepool-hash-version annotation
// written next to the hash. A hash is only compared with another of the same
// version.
const Version = wellknown.NodePoolHashVersion

// The types below are what Hash hashes. Their type names, field names,
// field types and field order are all part of the hash: FormatV2 folds each
// non-zero field into the running hash of its struct in declaration order,
// with a non-linear step after each. Renaming a type or a field, reordering
// fields, adding a field that can be non-zero, or turning a value into a
// pointer changes every NodePool's hash and would drift every node. The
// types are exported only because their names, which the hash reads, start
// with a capital.

// NodeClaimTemplate is the hashed form of a NodePool's spec.template.
type NodeClaimTemplate struct {
	// ObjectMeta is embedded, so its field name is its type name.
	ObjectMeta
	Spec NodeClaimTemplateSpec
}

// ObjectMeta is the hashed form of spec.template.metadata.
type ObjectMeta struct {
	Labels      map[string]string
	Annotations map[string]string
}

// NodeClaimTemplateSpec is the hashed form of spec.template.spec, without
// requirements.
type NodeClaimTemplateSpec struct {
	Taints                 []Taint
	StartupTaints          []Taint
	NodeClassRef           *NodeClassReference
	TerminationGracePeriod *Duration
	// ExpireAfter is a value, not a pointer: unset and Never are both its
	// zero value, and a zero-valued field is left out of the hash.
	ExpireAfter NillableDuration
}

// Taint is the hashed form of a template taint.
type Taint struct {
	Key       string
	Value     string
	Effect    string
	TimeAdded *metav1.Time
}

// NodeClassReference is the hashed form of spec.template.spec.nodeClassRef.
type NodeClassReference struct {
	Kind  string
	Name  string
	Group string
}

// Duration is the hashed form of terminationGracePeriod.
type Duration struct {
	Duration time.Duration
}

// NillableDuration is the hashed form of expireAfter; Duration is nil for
// Never.
type NillableDuration struct {
	Duration *time.Duration
}

// options returns the hashstructure options that the hash is defined with,
// new for every hash. hashstructure keeps its hasher in the options it is
// given: it sets Hasher when it is nil, then resets and feeds that one
// hasher for every field it hashes. Options shared between callers would
// share the hasher, and two hashes computed at the same time (by the
// provisioner and the NodePool status controller, say, even of the same
// NodePool) would interleave on it and come out wrong: a NodeClaim stamped
// with such a value has drifted from a template nobody changed.
func options() *hashstructure.HashOptions {
	return &hashstructure.HashOptions{
		SlicesAsSets:    true,
		IgnoreZeroValue: true,
		ZeroNil:         true,
	}
}

// Hash returns the static hash of np's template. It is safe for concurrent
// use.
func Hash(np *karpv1.NodePool) string {
	h, err := hashstructure.Hash(template(np), hashstructure.FormatV2, options())
	if err != nil {
		// The hashed types hold only strings, integers, times, maps of
		// strings and slices of structs of those, all of which hash.
		panic(fmt.Sprintf("hashing NodePool %s: %v", np.Name, err))
	}
	return strconv.FormatUint(h, 10)
}

// template returns the hashed form of np's template. Maps and slices keep
// the nil or empty they had, since the hash tells the two apart.
func template(np *karpv1.NodePool) NodeClaimTemplate {
	t := np.Spec.Template
	out := NodeClaimTemplate{
		ObjectMeta: ObjectMeta{Annotations: t.Metadata.Annotations},
		Spec: NodeClaimTemplateSpec{
			Taints:        taints(t.Spec.Taints),
			StartupTaints: taints(t.Spec.StartupTaints),
		},
	}
	if t.Metadata.Labels != nil {
		out.Labels = make(map[string]string, len(t.Metadata.Labels))
		for k, v := range t.Metadata.Labels {
			out.Labels[k] = string(v)
		}
	}
	if ref := t.Spec.NodeClassRef; ref != nil {
		out.Spec.NodeClassRef = &NodeClassReference{Group: ref.Group, Kind: ref.Kind, Name: ref.Name}
	}
	if d := t.Spec.TerminationGracePeriod; d != nil {
		out.Spec.TerminationGracePeriod = &Duration{Duration: d.Duration}
	}
	if d := t.Spec.ExpireAfter; d != nil && d.Duration != nil {
		v := *d.Duration
		out.Spec.ExpireAfter = NillableDuration{Duration: &v}
	}
	return out
}

// taints returns the hashed form of ts, nil if ts is nil.
func taints(ts []corev1.Taint) []Taint {
	if ts == nil {
		return nil
	}
	out := make([]Taint, len(ts))
	for i, t := range ts {
		out[i] = Taint{Key: t.Key, Value: t.Value, Effect: string(t.Effect), TimeAdded: t.TimeAdded}
	}
	return out
}
