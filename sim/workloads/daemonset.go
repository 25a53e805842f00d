package workloads

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/stevedore-autoscaler/stevedore/scheduling/taints"
)

type daemonSets struct{ base }

// daemonTolerations are the tolerations the DaemonSet controller adds to its
// pods, so that they run on nodes that are starting, short of resources or
// cordoned.
var daemonTolerations = []corev1.Toleration{
	{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodePIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
}

// Reconcile keeps one pod on every node the DaemonSet's pods may run on.
func (r *daemonSets) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ds := &appsv1.DaemonSet{}
	if err := r.api.Get(ctx, req.NamespacedName, ds); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if ds.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	template := podFromTemplate(&ds.Spec.Template, ds.Namespace, controllerRef(ds, "DaemonSet", appsv1.SchemeGroupVersion.String()))
	template.Spec.Tolerations = withDaemonTolerations(template.Spec.Tolerations, template.Spec.HostNetwork)
	affinity := nodeaffinity.GetRequiredNodeAffinity(template)

	byNode := map[string][]*corev1.Pod{}
	for _, o := range r.owned(podGVK, ds) {
		p := o.(*corev1.Pod)
		if active(p) {
			byNode[targetNode(p)] = append(byNode[targetNode(p)], p)
		}
	}
	st := appsv1.DaemonSetStatus{ObservedGeneration: ds.Generation}
	wanted := map[string]bool{}
	for _, o := range r.api.Objects(nodeGVK) {
		node := o.(*corev1.Node)
		if node.DeletionTimestamp != nil {
			continue
		}
		if ok, _ := affinity.Match(node); !ok {
			continue
		}
		if ok, _ := taints.ToleratesAll(template.Spec.Tolerations, node.Spec.Taints, taints.Blocking); !ok {
			continue
		}
		wanted[node.Name] = true
		st.DesiredNumberScheduled++
		pods := byNode[node.Name]
		if len(pods) == 0 {
			if err := r.createPod(ctx, ds, template, node.Name); err != nil {
				return reconcile.Result{}, err
			}
			continue
		}
		st.CurrentNumberScheduled++
		st.UpdatedNumberScheduled++
		if podReady(pods[0]) {
			st.NumberReady++
			st.NumberAvailable++
		}
		for _, extra := range pods[1:] {
			if err := r.delete(ctx, extra); err != nil {
				return reconcile.Result{}, err
			}
		}
	}
	// Pods on nodes that no longer want them (or are gone) go.
	for _, o := range r.owned(podGVK, ds) {
		p := o.(*corev1.Pod)
		if active(p) && !wanted[targetNode(p)] {
			st.NumberMisscheduled++
			if err := r.delete(ctx, p); err != nil {
				return reconcile.Result{}, err
			}
		}
	}
	st.NumberUnavailable = max(st.DesiredNumberScheduled-st.NumberAvailable, 0)
	changed := statusChanged(ds.Status, st)
	ds.Status = st
	return reconcile.Result{}, r.writeStatus(ctx, ds, changed)
}

func (r *daemonSets) delete(ctx context.Context, p *corev1.Pod) error {
	err := r.api.Delete(ctx, p, client.Preconditions{UID: &p.UID})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting pod %s: %w", podName(p), err)
	}
	return nil
}

func (r *daemonSets) createPod(ctx context.Context, ds *appsv1.DaemonSet, template *corev1.Pod, node string) error {
	pod := template.DeepCopy()
	pod.GenerateName = ds.Name + "-"
	pod.Spec.Affinity = pinTo(pod.Spec.Affinity, node)
	if err := r.api.Create(ctx, pod); err != nil {
		return fmt.Errorf("creating a pod of DaemonSet %s/%s for node %s: %w", ds.Namespace, ds.Name, node, err)
	}
	return nil
}

func withDaemonTolerations(tols []corev1.Toleration, hostNetwork bool) []corev1.Toleration {
	out := append([]corev1.Toleration(nil), tols...)
	add := daemonTolerations
	if hostNetwork {
		add = append(append([]corev1.Toleration(nil), add...), corev1.Toleration{Key: corev1.TaintNodeNetworkUnavailable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	}
	for _, t := range add {
		if !taints.Tolerates(out, corev1.Taint{Key: t.Key, Effect: t.Effect}) {
			out = append(out, t)
		}
	}
	return out
}

// pinTo requires metadata.name = node, replacing any node-name term the
// affinity had, as the DaemonSet controller does.
func pinTo(a *corev1.Affinity, node string) *corev1.Affinity {
	a = a.DeepCopy()
	if a == nil {
		a = &corev1.Affinity{}
	}
	if a.NodeAffinity == nil {
		a.NodeAffinity = &corev1.NodeAffinity{}
	}
	term := corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}
	req := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if req == nil || len(req.NodeSelectorTerms) == 0 {
		a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{term}}},
		}
		return a
	}
	for i := range req.NodeSelectorTerms {
		req.NodeSelectorTerms[i].MatchFields = []corev1.NodeSelectorRequirement{term}
	}
	return a
}

// targetNode returns the node a DaemonSet pod is bound or pinned to.
func targetNode(p *corev1.Pod) string {
	if p.Spec.NodeName != "" {
		return p.Spec.NodeName
	}
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, f := range t.MatchFields {
				if f.Key == "metadata.name" && len(f.Values) == 1 {
					return f.Values[0]
				}
			}
		}
	}
	return ""
}
