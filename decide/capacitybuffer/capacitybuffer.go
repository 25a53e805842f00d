// Package capacitybuffer works out what a CapacityBuffer asks for: the pod
// shape of one chunk and how many chunks (Resolve), the placeholder pods that
// stand for them (VirtualPods), and what the buffer's Provisioning condition
// says once those pods were packed (ProvisioningCondition).
//
// Everything here is a pure function of the buffer, the object its reference
// names and a time: the controller fetches the object and writes the status,
// the provisioner packs the pods, and the simulator runs the same code.
package capacitybuffer

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	autoscalingv1beta1 "github.com/stevedore-autoscaler/stevedore/api/autoscaling/v1beta1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/scheduling/resources"
)

// VirtualPodPriority is the priority of the placeholder pods: the lowest
// there is, so that nothing reads them as worth more than a real pod.
const VirtualPodPriority int32 = math.MinInt32

// Ref is the object a buffer's spec names, which the caller fetches.
type Ref struct {
	// Kind is "PodTemplate" (core group) or a workload kind of the apps group.
	Kind string
	Name string
}

// KindPodTemplate is the kind of Ref for a podTemplateRef.
const KindPodTemplate = "PodTemplate"

// Target returns the object the buffer's spec names. An error means there is
// nothing to fetch: no reference, or a kind or group stevedore cannot read;
// its text is the message of the ResolutionFailed condition.
func Target(cb *autoscalingv1beta1.CapacityBuffer) (Ref, error) {
	switch {
	case cb.Spec.PodTemplateRef != nil:
		return Ref{Kind: KindPodTemplate, Name: cb.Spec.PodTemplateRef.Name}, nil
	case cb.Spec.ScalableRef != nil:
		ref := cb.Spec.ScalableRef
		// An empty group is read as apps: the kinds that have a pod
		// template and a scale subresource all live there.
		if ref.APIGroup != "" && ref.APIGroup != "apps" {
			return Ref{}, fmt.Errorf("spec.scalableRef.apiGroup %q is not supported: name a Deployment, StatefulSet or ReplicaSet of the apps group", ref.APIGroup)
		}
		switch ref.Kind {
		case autoscalingv1beta1.KindDeployment, autoscalingv1beta1.KindStatefulSet, autoscalingv1beta1.KindReplicaSet:
			return Ref{Kind: ref.Kind, Name: ref.Name}, nil
		}
		return Ref{}, fmt.Errorf("spec.scalableRef.kind %q is not supported: name a Deployment, StatefulSet or ReplicaSet", ref.Kind)
	}
	return Ref{}, fmt.Errorf("neither podTemplateRef nor scalableRef is set")
}

// Found is the object a Ref named, as fetched: one of the pointers is set.
type Found struct {
	PodTemplate *corev1.PodTemplate
	Deployment  *appsv1.Deployment
	StatefulSet *appsv1.StatefulSet
	ReplicaSet  *appsv1.ReplicaSet
}

// Resolution is what a buffer resolves to.
type Resolution struct {
	// Ready is the ReadyForProvisioning condition's status; Reason and
	// Message are its reason and message.
	Ready   bool
	Reason  string
	Message string
	// Template is the chunk's pod shape (Ready only).
	Template corev1.PodTemplateSpec
	// Replicas is the number of chunks (Ready only).
	Replicas int32
	// PodTemplateRef and PodTemplateGeneration are the PodTemplate's, when
	// the buffer names one (Ready only).
	PodTemplateRef        *autoscalingv1beta1.LocalObjectRef
	PodTemplateGeneration *int64
}

// Failed is the Resolution of a buffer whose target could not be read:
// notFound says the object does not exist, anything else is err.
func Failed(cb *autoscalingv1beta1.CapacityBuffer, err error, notFound bool) Resolution {
	reason := autoscalingv1beta1.ReasonResolutionFailed
	if notFound {
		reason = autoscalingv1beta1.ReasonScalableRefNotFound
		if cb.Spec.PodTemplateRef != nil {
			reason = autoscalingv1beta1.ReasonPodTemplateNotFound
		}
	}
	return Resolution{Reason: reason, Message: err.Error()}
}

// Resolve works out the chunk's shape and count from the object the
// buffer's Target named.
func Resolve(cb *autoscalingv1beta1.CapacityBuffer, f Found) Resolution {
	res := Resolution{Ready: true, Reason: autoscalingv1beta1.ReasonResolved, Message: "Pod template resolved successfully"}
	// workload is the scalable workload's replica count; -1 when the
	// target is a PodTemplate. An unset count is the API's default, 1.
	workload := int32(-1)
	replicasOf := func(r *int32) int32 {
		if r == nil {
			return 1
		}
		return *r
	}
	switch {
	case f.PodTemplate != nil:
		res.Template = f.PodTemplate.Template
		res.PodTemplateRef = &autoscalingv1beta1.LocalObjectRef{Name: f.PodTemplate.Name}
		gen := f.PodTemplate.Generation
		res.PodTemplateGeneration = &gen
	case f.Deployment != nil:
		res.Template, workload = f.Deployment.Spec.Template, replicasOf(f.Deployment.Spec.Replicas)
	case f.StatefulSet != nil:
		res.Template, workload = f.StatefulSet.Spec.Template, replicasOf(f.StatefulSet.Spec.Replicas)
	case f.ReplicaSet != nil:
		res.Template, workload = f.ReplicaSet.Spec.Template, replicasOf(f.ReplicaSet.Spec.Replicas)
	default:
		return Resolution{Reason: autoscalingv1beta1.ReasonResolutionFailed, Message: "the referenced object was not found"}
	}
	res.Replicas = Replicas(cb.Spec, workload, &res.Template.Spec)
	return res
}

// Replicas is the number of chunks, as Karpenter counts them: the larger of
// spec.replicas and spec.percentage of the workload's replicas (workload is
// -1 without a scalable workload), capped by what fits within spec.limits;
// with neither replicas nor percentage, what fits within the limits. Limits
// that name no resource the pod requests do not count.
//
// The API's description says the smaller of replicas and percentage; the
// larger is what Karpenter v1.14.1 does, and what stevedore does too.
func Replicas(spec autoscalingv1beta1.CapacityBufferSpec, workload int32, pod *corev1.PodSpec) int32 {
	var sizes []int32
	if spec.Replicas != nil {
		sizes = append(sizes, *spec.Replicas)
	}
	if spec.Percentage != nil && workload > 0 {
		sizes = append(sizes, percentOf(workload, *spec.Percentage))
	}
	var desired int32
	if len(sizes) > 0 {
		desired = slices.Max(sizes)
	}
	if fit, ok := fitWithin(spec.Limits, pod); ok {
		if len(sizes) == 0 {
			return fit
		}
		return min(desired, fit)
	}
	return desired
}

// percentOf is pct percent of n, rounded up, and at least 1 when both are
// above zero.
func percentOf(n, pct int32) int32 {
	v := (int64(n)*int64(pct) + 99) / 100
	if v < 1 && n > 0 && pct > 0 {
		v = 1
	}
	return int32(min(v, math.MaxInt32))
}

// fitWithin is how many pods fit within limits: the least, over the
// resources both name, of the limit over the pod's request, rounded down.
// ok is false when they name no resource in common.
func fitWithin(limits autoscalingv1beta1.Limits, spec *corev1.PodSpec) (n int32, ok bool) {
	if len(limits) == 0 || spec == nil {
		return 0, false
	}
	requests := resources.Requests(&corev1.Pod{Spec: *spec})
	// Sorted names: the answer does not depend on it, but the loop should
	// not depend on map order either.
	names := make([]corev1.ResourceName, 0, len(limits))
	for name := range limits {
		names = append(names, name)
	}
	slices.Sort(names)
	best := int64(math.MaxInt32)
	for _, name := range names {
		req, has := requests[name]
		if !has || req.Sign() <= 0 {
			continue
		}
		limit := limits[name]
		ok = true
		best = min(best, max(limit.MilliValue(), 0)/req.MilliValue())
	}
	if !ok {
		return 0, false
	}
	return int32(best), true
}

// Status returns the buffer's status with the resolution written into it,
// as Karpenter writes it: the PodTemplate's name and generation (cleared for
// a workload), the replicas and the ReadyForProvisioning condition. When
// resolution failed, the replicas and template are left as they were.
func Status(cb *autoscalingv1beta1.CapacityBuffer, res Resolution, now time.Time) autoscalingv1beta1.CapacityBufferStatus {
	st := *cb.Status.DeepCopy()
	st.ProvisioningStrategy = cb.Spec.ProvisioningStrategy
	cond := metav1.Condition{
		Type:               autoscalingv1beta1.ConditionReadyForProvisioning,
		Status:             metav1.ConditionFalse,
		ObservedGeneration: cb.Generation,
		LastTransitionTime: metav1.NewTime(now),
		Reason:             res.Reason,
		Message:            res.Message,
	}
	if res.Ready {
		cond.Status = metav1.ConditionTrue
		st.PodTemplateRef = res.PodTemplateRef
		st.PodTemplateGeneration = res.PodTemplateGeneration
		r := res.Replicas
		st.Replicas = &r
	}
	meta.SetStatusCondition(&st.Conditions, cond)
	return st
}

// VirtualPods are the buffer's placeholder pods: replicas pods shaped like
// the template, with the template's labels (so that affinities and spread
// constraints among them and against real pods hold), the lowest priority
// and the annotations that say which buffer they stand for. They are
// pending and unschedulable, as a real pod waiting for a node is. Names
// and UIDs are derived from the buffer, and the creation time is the
// buffer's, so that the same buffer always gives the same pods.
//
// Volumes backed by claims are left out: a placeholder has no claim, and
// a claim's zone must not pin capacity that no pod asked for.
func VirtualPods(cb *autoscalingv1beta1.CapacityBuffer, tmpl corev1.PodTemplateSpec, replicas int32) []*corev1.Pod {
	if replicas <= 0 {
		return nil
	}
	spec := placeholderSpec(tmpl.Spec)
	out := make([]*corev1.Pod, 0, replicas)
	for i := int32(1); i <= replicas; i++ {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name:              fmt.Sprintf("capacity-buffer-%s-%d", cb.Name, i),
				Namespace:         cb.Namespace,
				UID:               types.UID(fmt.Sprintf("%s-%d", cb.UID, i)),
				Labels:            tmpl.Labels,
				CreationTimestamp: cb.CreationTimestamp,
				Annotations: map[string]string{
					wellknown.AnnotationCapacityBufferFakePod:   "true",
					wellknown.AnnotationCapacityBufferName:      cb.Name,
					wellknown.AnnotationCapacityBufferNamespace: cb.Namespace,
				},
			},
			Spec: *spec.DeepCopy(),
			Status: corev1.PodStatus{
				Phase: corev1.PodPending,
				Conditions: []corev1.PodCondition{{
					Type:   corev1.PodScheduled,
					Status: corev1.ConditionFalse,
					Reason: corev1.PodReasonUnschedulable,
				}},
			},
		}
		out = append(out, p)
	}
	return out
}

// placeholderSpec is the template's pod spec without what a placeholder
// cannot have: a node name and volumes backed by claims (and their mounts).
func placeholderSpec(in corev1.PodSpec) corev1.PodSpec {
	spec := *in.DeepCopy()
	spec.NodeName = ""
	prio := VirtualPodPriority
	spec.Priority = &prio
	spec.PriorityClassName = ""
	dropped := sets.New[string]()
	spec.Volumes = slices.DeleteFunc(spec.Volumes, func(v corev1.Volume) bool {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			dropped.Insert(v.Name)
			return true
		}
		return false
	})
	if dropped.Len() > 0 {
		unmount := func(cs []corev1.Container) {
			for i := range cs {
				cs[i].VolumeMounts = slices.DeleteFunc(cs[i].VolumeMounts, func(m corev1.VolumeMount) bool { return dropped.Has(m.Name) })
			}
		}
		unmount(spec.Containers)
		unmount(spec.InitContainers)
	}
	return spec
}

// IsVirtual reports whether pod is a buffer's placeholder.
func IsVirtual(pod *corev1.Pod) bool {
	return pod != nil && pod.Annotations[wellknown.AnnotationCapacityBufferFakePod] == "true"
}

// BufferOf is the buffer a placeholder stands for; ok is false for a real
// pod.
func BufferOf(pod *corev1.Pod) (types.NamespacedName, bool) {
	if !IsVirtual(pod) {
		return types.NamespacedName{}, false
	}
	key := types.NamespacedName{Namespace: pod.Annotations[wellknown.AnnotationCapacityBufferNamespace], Name: pod.Annotations[wellknown.AnnotationCapacityBufferName]}
	return key, key.Name != ""
}

// Placed counts where one buffer's placeholders went in a packing.
type Placed struct {
	// Existing were placed on nodes that exist or are on their way.
	Existing int
	// New needed a new NodeClaim.
	New int
	// Failed fit nowhere.
	Failed int
}

// ProvisioningCondition is the Provisioning condition the packing of the
// buffer's placeholders calls for, or nil to leave the condition as it is:
// False/NotReadyForProvisioning before the buffer is resolved,
// False/BufferEmpty for zero chunks, False/RequiresNewCapacity while some
// chunk needs a new node or fits nowhere, True/FitsExistingCapacity once
// every chunk fits on capacity that is there or on its way. placed is nil
// when none of the buffer's placeholders took part in the packing.
func ProvisioningCondition(cb *autoscalingv1beta1.CapacityBuffer, placed *Placed, now time.Time) *metav1.Condition {
	c := &metav1.Condition{
		Type:               autoscalingv1beta1.ConditionProvisioning,
		Status:             metav1.ConditionFalse,
		ObservedGeneration: cb.Generation,
		LastTransitionTime: metav1.NewTime(now),
	}
	replicas := int32(0)
	if cb.Status.Replicas != nil {
		replicas = *cb.Status.Replicas
	}
	switch {
	case !meta.IsStatusConditionTrue(cb.Status.Conditions, autoscalingv1beta1.ConditionReadyForProvisioning):
		c.Reason, c.Message = autoscalingv1beta1.ReasonNotReadyForProvisioning, "Buffer is not ReadyForProvisioning"
	case replicas <= 0:
		c.Reason, c.Message = autoscalingv1beta1.ReasonBufferEmpty, "Buffer has zero desired replicas"
	case placed == nil:
		return nil
	case placed.New > 0 || placed.Failed > 0:
		c.Reason = autoscalingv1beta1.ReasonRequiresNewCapacity
		c.Message = fmt.Sprintf("%d/%d virtual pods required new capacity, %d failed", placed.New, replicas, placed.Failed)
	case placed.Existing == int(replicas):
		c.Status, c.Reason = metav1.ConditionTrue, autoscalingv1beta1.ReasonFitsExistingCapacity
		c.Message = fmt.Sprintf("All %d virtual pods fit on existing capacity", replicas)
	default:
		return nil
	}
	return c
}

// SortPods orders pods by namespace and name, the order in which the
// placeholders of several buffers are handed to the packer.
func SortPods(pods []*corev1.Pod) {
	slices.SortFunc(pods, func(a, b *corev1.Pod) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
}
