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
// by label, as requirements drift), spec.disruption, spec.limits and
// spec.weight, which apply to existing nodes without replacing them.
//
// The hashed fields are encoded as JSON with map keys sorted, taints sorted
// (their order carries no meaning), and empty maps and lists written like
// absent ones; the hash is the first eight bytes of the SHA-256 of that
// encoding, as a decimal number. Equal templates therefore hash equally
// however they were written. The encoding is versioned by Version: change
// it, and the version must change too.
package hash

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
)

// Version is the value of the karpenter.sh/nodepool-hash-version annotation
// written next to the hash.
const Version = wellknown.NodePoolHashVersion

// hashed is what the hash covers. Field names are part of the encoding.
type hashed struct {
	Labels                 map[string]string `json:"labels,omitempty"`
	Annotations            map[string]string `json:"annotations,omitempty"`
	Taints                 []taint           `json:"taints,omitempty"`
	StartupTaints          []taint           `json:"startupTaints,omitempty"`
	NodeClassRef           *nodeClassRef     `json:"nodeClassRef,omitempty"`
	ExpireAfter            string            `json:"expireAfter,omitempty"`
	TerminationGracePeriod string            `json:"terminationGracePeriod,omitempty"`
}

type taint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

type nodeClassRef struct {
	Group string `json:"group"`
	Kind  string `json:"kind"`
	Name  string `json:"name"`
}

// Hash returns the static hash of np's template.
func Hash(np *karpv1.NodePool) string {
	tmpl := np.Spec.Template
	h := hashed{
		Annotations:   tmpl.Metadata.Annotations,
		Taints:        taints(tmpl.Spec.Taints),
		StartupTaints: taints(tmpl.Spec.StartupTaints),
	}
	if len(h.Annotations) == 0 {
		h.Annotations = nil
	}
	if len(tmpl.Metadata.Labels) > 0 {
		h.Labels = make(map[string]string, len(tmpl.Metadata.Labels))
		for k, v := range tmpl.Metadata.Labels {
			h.Labels[k] = string(v)
		}
	}
	if ref := tmpl.Spec.NodeClassRef; ref != nil {
		h.NodeClassRef = &nodeClassRef{Group: ref.Group, Kind: ref.Kind, Name: ref.Name}
	}
	if d := tmpl.Spec.ExpireAfter; d != nil {
		h.ExpireAfter = d.String()
	}
	if d := tmpl.Spec.TerminationGracePeriod; d != nil {
		h.TerminationGracePeriod = d.Duration.String()
	}
	data, err := json.Marshal(h)
	if err != nil {
		// Strings, maps of strings and slices of structs of strings always
		// marshal.
		panic(fmt.Sprintf("hashing NodePool %s: %v", np.Name, err))
	}
	sum := sha256.Sum256(data)
	return strconv.FormatUint(binary.BigEndian.Uint64(sum[:8]), 10)
}

// taints returns ts in a canonical order, without the fields a template
// taint does not use (timeAdded), or nil when there are none.
func taints(ts []corev1.Taint) []taint {
	if len(ts) == 0 {
		return nil
	}
	out := make([]taint, len(ts))
	for i, t := range ts {
		out[i] = taint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)}
	}
	slices.SortFunc(out, func(a, b taint) int {
		if c := strings.Compare(a.Key, b.Key); c != 0 {
			return c
		}
		if c := strings.Compare(a.Effect, b.Effect); c != 0 {
			return c
		}
		return strings.Compare(a.Value, b.Value)
	})
	return out
}
