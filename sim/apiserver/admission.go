package apiserver

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-autoscaler/stevedore/scheduling/taints"
	"github.com/stevedore-autoscaler/stevedore/scheduling/workloads"
)

var (
	priorityClassGVK = schedulingv1.SchemeGroupVersion.WithKind("PriorityClass")
	limitRangeGVK    = corev1.SchemeGroupVersion.WithKind("LimitRange")
)

// Built-in priority classes, which every cluster has.
var systemPriorities = map[string]int32{
	"system-node-critical":    2000001000,
	"system-cluster-critical": 2000000000,
}

// DefaultTolerationSeconds is how long pods tolerate a not-ready or
// unreachable node unless they say otherwise: the DefaultTolerationSeconds
// admission plugin adds NoExecute tolerations of this length.
const DefaultTolerationSeconds int64 = 300

// admit applies the defaults and admission plugins of a real API server that
// scheduling and disruption depend on, to an object being created.
func (s *Server) admit(_ schema.GroupVersionKind, o client.Object) error {
	switch obj := o.(type) {
	case *corev1.Pod:
		return s.admitPod(obj)
	case *corev1.Node:
		admitNode(obj)
	case *appsv1.Deployment:
		obj.Spec.Replicas = defaultReplicas(obj.Spec.Replicas)
	case *appsv1.ReplicaSet:
		obj.Spec.Replicas = defaultReplicas(obj.Spec.Replicas)
	case *appsv1.StatefulSet:
		obj.Spec.Replicas = defaultReplicas(obj.Spec.Replicas)
	case *batchv1.Job:
		if obj.Spec.Parallelism == nil {
			obj.Spec.Parallelism = defaultReplicas(nil)
		}
		if obj.Spec.Completions == nil && *obj.Spec.Parallelism == 1 {
			obj.Spec.Completions = defaultReplicas(nil)
		}
	}
	return nil
}

func defaultReplicas(p *int32) *int32 {
	if p != nil {
		return p
	}
	one := int32(1)
	return &one
}

func (s *Server) admitPod(pod *corev1.Pod) error {
	spec := &pod.Spec
	if spec.SchedulerName == "" {
		spec.SchedulerName = corev1.DefaultSchedulerName
	}
	if spec.TerminationGracePeriodSeconds == nil {
		g := defaultGracePeriod
		spec.TerminationGracePeriodSeconds = &g
	}
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = corev1.RestartPolicyAlways
	}
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = corev1.DNSClusterFirst
	}
	// Requests from the containers' limits, then the LimitRanger plugin's
	// defaults from the namespace's LimitRanges, in the API server's order.
	workloads.DefaultPod(pod, s.limitRanges(pod.Namespace))
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			for j := range cs[i].Ports {
				if cs[i].Ports[j].Protocol == "" {
					cs[i].Ports[j].Protocol = corev1.ProtocolTCP
				}
			}
		}
	}
	if err := s.admitPriority(pod); err != nil {
		return err
	}
	addDefaultToleration(pod, corev1.TaintNodeNotReady)
	addDefaultToleration(pod, corev1.TaintNodeUnreachable)
	if pod.Status.Phase == "" {
		pod.Status.Phase = corev1.PodPending
	}
	return nil
}

// limitRanges returns the LimitRanges of namespace, in name order.
func (s *Server) limitRanges(namespace string) []*corev1.LimitRange {
	var out []*corev1.LimitRange
	for _, e := range s.store(limitRangeGVK).entries() {
		if e.key.Namespace == namespace {
			out = append(out, e.obj.(*corev1.LimitRange))
		}
	}
	return out
}

// admitPriority sets spec.priority (and preemptionPolicy) from the pod's
// PriorityClass, or from the global default class, as the Priority admission
// plugin does.
func (s *Server) admitPriority(pod *corev1.Pod) error {
	name := pod.Spec.PriorityClassName
	var value int32
	var policy *corev1.PreemptionPolicy
	switch {
	case name != "":
		if v, ok := systemPriorities[name]; ok {
			value = v
			break
		}
		pc, ok := s.store(priorityClassGVK).objs[types.NamespacedName{Name: name}].(*schedulingv1.PriorityClass)
		if !ok {
			return apierrors.NewForbidden(resource(podGVK), pod.Name, fmt.Errorf("no PriorityClass with name %s was found", name))
		}
		value, policy = pc.Value, pc.PreemptionPolicy
	default:
		ks := s.store(priorityClassGVK)
		for _, e := range ks.entries() {
			if pc := e.obj.(*schedulingv1.PriorityClass); pc.GlobalDefault {
				pod.Spec.PriorityClassName = pc.Name
				value, policy = pc.Value, pc.PreemptionPolicy
				break
			}
		}
	}
	pod.Spec.Priority = &value
	if policy == nil {
		p := corev1.PreemptLowerPriority
		policy = &p
	}
	pod.Spec.PreemptionPolicy = policy
	return nil
}

// addDefaultToleration adds a NoExecute toleration of the key for
// DefaultTolerationSeconds unless the pod already tolerates it.
func addDefaultToleration(pod *corev1.Pod, key string) {
	taint := corev1.Taint{Key: key, Effect: corev1.TaintEffectNoExecute}
	if taints.Tolerates(pod.Spec.Tolerations, taint) {
		return
	}
	secs := DefaultTolerationSeconds
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{
		Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &secs,
	})
}

// admitNode adds the not-ready taint to a new node that is not Ready, as the
// TaintNodesByCondition admission plugin does, so that nothing is scheduled
// on it before its kubelet reports Ready (the node lifecycle controller then
// removes the taint; in the simulator the kubelet does).
func admitNode(node *corev1.Node) {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			return
		}
	}
	for _, t := range node.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady && t.Effect == corev1.TaintEffectNoSchedule {
			return
		}
	}
	node.Spec.Taints = append(node.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule})
}
