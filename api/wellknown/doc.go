// Package wellknown names the labels, annotations, taints, finalizers and
// cloud tags that stevedore reads and writes on Kubernetes objects and EC2
// resources.
//
// The names are those of the Karpenter v1 contract (the karpenter.sh and
// karpenter.k8s.aws domains), so that nodes, dashboards, policies and scripts
// written for Karpenter keep working with stevedore. Every name used anywhere
// else in stevedore should come from here rather than from a string literal.
//
// The package also holds the rules for which label keys a user may put on a
// NodePool (IsRestrictedLabel) and how deprecated beta label keys map to their
// stable names (NormalizeLabel). The CEL rules in the generated CRDs enforce
// the same rules at admission time; a test keeps the two in step.
package wellknown
