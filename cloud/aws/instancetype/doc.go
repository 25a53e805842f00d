// Package instancetype turns EC2's description of an instance type
// (ec2types.InstanceTypeInfo, as DescribeInstanceTypes returns it) into what
// the scheduler reasons with: the well-known labels, the capacity, the
// resources the kubelet reserves, and the allocatable that remains for pods.
//
// The arithmetic follows what EKS-optimized images configure the kubelet to
// do, so that a pod that fits an instance type here also fits the node the
// kubelet registers:
//
//   - memory capacity is the type's memory, less 64 MiB of CMA on arm64,
//     less the VM overhead fraction (default 0.075) rounded up to a MiB;
//   - pods is kubelet maxPods if set; otherwise, on every family but
//     Windows, the VPC CNI limit (ENIs on the default network card − reserved
//     ENIs) × (IPv4 addresses per ENI − 1) + 2, with no 110 cap; on Windows
//     110; podsPerCore × vCPUs caps it (Bottlerocket ignores podsPerCore);
//   - kube-reserved cpu is 6% of the first core, 1% of the second, 0.5% of
//     the third and fourth and 0.25% of the rest; memory is 11 MiB per pod
//     plus 255 MiB (pods from the ENI limit on AL2, AL2023 and Custom, from
//     the actual maximum on Bottlerocket and Windows); ephemeral storage
//     1 GiB; kubelet kubeReserved overrides per key;
//   - system-reserved is only what kubelet systemReserved sets;
//   - the eviction threshold is memory.available 100Mi and nodefs.available
//     10%, overridden by evictionHard (a quantity or a percentage of
//     capacity). Soft thresholds do not reduce allocatable, as in the kubelet.
//
// Everything here is a pure function of its arguments.
package instancetype
