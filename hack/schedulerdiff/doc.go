// Package schedulerdiff checks the packer's feasibility check against
// kube-scheduler itself. It builds kube-scheduler's filter plugins
// (NodeUnschedulable, NodeResourcesFit, NodeAffinity, TaintToleration,
// NodePorts, InterPodAffinity, PodTopologySpread) through the scheduler
// framework, generates small random clusters from a seed, and its tests ask
// both sides, node by node, whether a pending pod may run there.
//
// It lives in the tools module because it imports k8s.io/kubernetes, which
// the main module does not depend on.
package schedulerdiff
