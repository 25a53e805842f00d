// Package validation checks manifests offline the way the Kubernetes API server
// checks them online, and then some.
//
// For the kinds stevedore serves (karpenter.sh/v1 NodePool and NodeClaim,
// karpenter.k8s.aws/v1 EC2NodeClass) a Validator runs the API server's own
// custom-resource pipeline against the installed CRDs: strict decoding with
// unknown-field detection, pruning, defaulting, OpenAPI schema validation,
// x-kubernetes-validations (CEL) rules and object-metadata validation. The
// problems it reports carry the field paths and the message text that
// `kubectl apply` would print, each with a fix.
//
// On top of that it runs checks the API server cannot do: semantic checks
// (cron schedules, well-known label values, node class references, duplicate
// taints), cross-object checks within the validated set, and migration
// messages for manifests written against older Karpenter APIs
// (v1alpha5 Provisioner, v1alpha1 AWSNodeTemplate, the v1beta1 kinds).
// Checks that need code this package may not use are added by the caller
// with With: the AWS provider's (cloud/aws/checks) measure an
// EC2NodeClass's user data as stevedore would send it.
//
// Other kinds built into Kubernetes (Deployments, PodDisruptionBudgets, ...) are
// strictly decoded so that misspelt fields are caught. A kind or version that
// does not exist in a group stevedore knows (Kubernetes', Karpenter's,
// stevedore's) is an error with the nearest kind or the versions that exist;
// kinds of other groups are skipped with a warning. Objects defined twice and
// paths with no object are errors too.
package validation
