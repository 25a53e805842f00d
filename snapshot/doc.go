// Package snapshot writes a live cluster down as the input of a simulation:
// the directory `stevedore snapshot DIR` writes is one that `stevedore
// simulate DIR` runs and `stevedore plan -f DIR` plans, so that a platform
// team can ask what-if questions of its own cluster (a new NodePool, another
// consolidation policy, an AMI release, a lost zone) without touching it.
//
// It is the third read-only tool, beside diagnose and explain, and is split
// like the rest of stevedore. Read is the imperative shell: it lists, through
// any controller-runtime client.Reader, the objects a simulation needs
// (NodePools, EC2NodeClasses, NodeClaims, Nodes, Pods, PodDisruptionBudgets,
// DaemonSets, StatefulSets, ReplicaSets, Jobs, PriorityClasses,
// PersistentVolumeClaims, PersistentVolumes) into a Cluster. Build is a
// pure function of that Cluster and the Options: it decides what is written
// and what is left out, reduces every object to the fields a simulation
// reads, infers the simulated AWS account (region, zones, subnets, security
// groups, images) from the EC2NodeClasses' status and the nodes' labels, and
// returns the files with an account of what it did (Result.Summary). The
// same Cluster and Options always give the same bytes: objects are sorted by
// namespace and name, maps are written with sorted keys. Write puts the
// files in a new directory.
//
// What the simulator cannot use, or would misread, is left out and counted:
// finished pods and Jobs, mirror pods, objects being deleted, empty
// ReplicaSets, the built-in priority classes. Deployments are not written at
// all: their ReplicaSets are, without the owner reference, so that each keeps
// its pods and replaces those a what-if evicts, while the simulator's own
// Deployment controller does not start a rollout of its own.
package snapshot
