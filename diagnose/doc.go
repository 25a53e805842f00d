// Package diagnose walks the path a pending pod takes to a running node and
// says, step by step, where a cluster is stuck and what fixes it.
//
// The path is the one the controllers follow: a pod the scheduler could not
// place; a NodePool that may launch for it; its EC2NodeClass, whose subnets,
// security groups, image and instance profile must resolve; a NodeClaim whose
// instance the controller must be allowed to launch (iam:PassRole); an
// instance whose kubelet must be authorized to join (an EKS access entry or
// an aws-auth mapping for the node role); a node that must initialize. Off
// the path, but as often the cause of a surprise: the controller's own AWS
// credentials, the interruption queue, and settings that are valid but do
// something people rarely intend (@latest image aliases, pods that pin
// their nodes, consolidateAfter values that keep empty nodes, budgets that
// never open).
//
// Each step is a Check: a small function over a World that returns Results,
// each PASS, WARN or FAIL with the evidence it saw and the fix. A World is
// everything the checks read: a state.Snapshot of the cluster, the NodePools
// the provisioner may launch from and those it leaves out, read-only AWS
// clients (the narrow interfaces of package cloud/aws/sdk) and the
// controller's settings. Load fills one from any controller-runtime
// client.Reader — the API server of a live cluster, or the simulator's
// in-memory one — so the checks do not know where their world came from.
//
// Checks only read. They call the AWS APIs that describe, list and get,
// and never one that changes anything.
package diagnose
