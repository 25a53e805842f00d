// Package sim is the deterministic world `stevedore simulate` runs the real
// controllers in. It has no code of its own; its subpackages each do one job:
//
//   - clock: the virtual clock every part reads;
//   - apiserver: the in-memory API server behind controller-runtime's
//     client.Client, with graceful pod deletion, finalizers, owner-reference
//     garbage collection, the eviction subresource enforcing
//     PodDisruptionBudgets, and recorded events;
//   - kubelet: the kubelets of the simulated instances (registration, readiness,
//     running and stopping pods, failures);
//   - scheduler: the binder that plays kube-scheduler;
//   - workloads: the workload controllers of kube-controller-manager
//     (Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs, PDB status);
//   - nodelifecycle: the node lifecycle duties of kube-controller-manager and
//     the cloud controller manager (unreachable taints, taint-based eviction,
//     pod garbage collection, deleting Nodes of vanished instances);
//   - scenario: the Scenario input format and the manifests it runs on;
//   - watch: what wakes a reconciler (the simulator's stand-in for
//     informers, watches and work queues);
//   - runner: the deterministic loop that drives all of the above and the
//     production reconcilers on the virtual clock;
//   - report: the JSON document and the text summary of a run.
//
// docs/simulate.md describes the command, the Scenario format and the
// output.
//
// The production AWS provider runs unchanged against the in-memory AWS of
// package cloud/aws/fake; nothing here is a second implementation of a
// controller or of the cloud provider.
package sim
