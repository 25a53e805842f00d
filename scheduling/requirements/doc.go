// Package requirements is the node-selector algebra that the scheduling
// engine reasons with: what values a label key may take on a node, and
// whether two sets of such constraints can both be met.
//
// A Requirement constrains one label key. It is a set over the key's possible
// values plus one extra point, "the label is absent":
//
//   - In [a b]: the label is set to a or b;
//   - NotIn [a b]: the label is absent, or set to anything but a and b;
//   - Exists: the label is set, to anything;
//   - DoesNotExist: the label is absent;
//   - Gt 4, Lt 16: the label is set to an integer above 4, or below 16;
//   - Gte 4, Lte 16: Karpenter's inclusive forms, at least 4, or at most 16.
//
// The value set is kept either as a finite sorted list or as the complement of
// one (everything except a finite list), optionally narrowed by inclusive
// integer bounds. As in Karpenter, Gt n is held (and printed, and written
// back) as Gte n+1 and Lt n as Lte n-1. Intersection is exact: intersecting two requirements yields the
// requirement met by exactly the nodes that meet both, in a canonical form, so
// that equal sets compare equal.
//
// Requirements holds at most one Requirement per label key, sorted by key.
// Keys are normalized on the way in (failure-domain.beta.kubernetes.io/zone
// becomes topology.kubernetes.io/zone, and so on; see wellknown.NormalizeLabel).
// Both types are immutable values: every operation returns a new value and may
// share storage with its inputs, so they can be copied and shared freely.
//
// The packer calls Compatible, Conflict and Intersects for every candidate
// pairing, so those do not allocate unless they report an incompatibility as
// an error. Nothing in this package reads a clock, a random source, the API
// server or the cloud; map iteration order never shows in a result.
package requirements
