package workloads

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

type statefulSets struct {
	base
	pace *pacer
}

// Reconcile keeps pods <name>-0 … <name>-(replicas-1) and their claims. Pods
// are created at the pace of the real controller: with Parallel
// management, every missing pod in slow-start batches of at most
// MaxStatefulSetBatch; each pod, and each claim created for it, waits for a
// token of the controller's client.
func (r *statefulSets) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ss := &appsv1.StatefulSet{}
	if err := r.api.Get(ctx, req.NamespacedName, ss); err != nil {
		if apierrors.IsNotFound(err) {
			r.pace.forget(req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if ss.DeletionTimestamp != nil {
		r.pace.forget(req.NamespacedName)
		return reconcile.Result{}, nil
	}
	want := int(replicas(ss.Spec.Replicas))
	parallel := ss.Spec.PodManagementPolicy == appsv1.ParallelPodManagement
	byOrdinal := map[int]*corev1.Pod{}
	var extra []int
	for _, o := range r.owned(podGVK, ss) {
		p := o.(*corev1.Pod)
		i, ok := ordinal(ss.Name, p.Name)
		if !ok {
			continue
		}
		byOrdinal[i] = p
		if i >= want {
			extra = append(extra, i)
		}
	}
	ref := controllerRef(ss, "StatefulSet", appsv1.SchemeGroupVersion.String())
	// missing are the ordinals to create now: with ordered management the
	// lowest missing one once every pod before it is ready.
	var missing []int
	for i := range want {
		p, ok := byOrdinal[i]
		if ok {
			if !parallel && !(active(p) && podReady(p)) {
				// Ordered: the next pod waits for this one.
				break
			}
			continue
		}
		missing = append(missing, i)
		if !parallel {
			break
		}
	}
	start := func() *podSync {
		if len(missing) == 0 {
			return nil
		}
		return creations(len(missing), MaxStatefulSetBatch)
	}
	write := func(_ *podSync, n int) error {
		n = min(n, len(missing))
		for _, i := range missing[:n] {
			if err := r.createPod(ctx, ss, i, ref); err != nil {
				return err
			}
		}
		missing = missing[n:]
		return nil
	}
	wait, err := r.pace.run(r.clock.Now(), req.NamespacedName, 1+len(ss.Spec.VolumeClaimTemplates), start, write)
	if err != nil {
		return reconcile.Result{}, err
	}
	// Scale down from the highest ordinal, one at a time unless Parallel.
	slices.Sort(extra)
	slices.Reverse(extra)
	for _, hi := range extra {
		p := byOrdinal[hi]
		if p.DeletionTimestamp == nil {
			if err := r.api.Delete(ctx, p, client.Preconditions{UID: &p.UID}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return reconcile.Result{}, fmt.Errorf("deleting pod %s: %w", podName(p), err)
			}
		}
		if !parallel {
			break
		}
	}
	st := appsv1.StatefulSetStatus{ObservedGeneration: ss.Generation}
	for i, p := range byOrdinal {
		if i >= want || !active(p) {
			continue
		}
		st.Replicas++
		st.CurrentReplicas++
		st.UpdatedReplicas++
		if podReady(p) {
			st.ReadyReplicas++
			st.AvailableReplicas++
		}
	}
	changed := statusChanged(ss.Status, st)
	ss.Status = st
	return reconcile.Result{RequeueAfter: wait}, r.writeStatus(ctx, ss, changed)
}

// ordinal parses <set>-<n>.
func ordinal(set, pod string) (int, bool) {
	if len(pod) <= len(set)+1 || pod[:len(set)+1] != set+"-" {
		return 0, false
	}
	n, err := strconv.Atoi(pod[len(set)+1:])
	return n, err == nil && n >= 0
}

func (r *statefulSets) createPod(ctx context.Context, ss *appsv1.StatefulSet, i int, ref metav1.OwnerReference) error {
	pod := podFromTemplate(&ss.Spec.Template, ss.Namespace, ref)
	pod.Name = fmt.Sprintf("%s-%d", ss.Name, i)
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[appsv1.StatefulSetPodNameLabel] = pod.Name
	pod.Labels[appsv1.PodIndexLabel] = strconv.Itoa(i)
	pod.Spec.Hostname = pod.Name
	pod.Spec.Subdomain = ss.Spec.ServiceName
	for _, t := range ss.Spec.VolumeClaimTemplates {
		claim := fmt.Sprintf("%s-%s-%d", t.Name, ss.Name, i)
		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: ss.Namespace, Labels: copyMap(ss.Spec.Selector.MatchLabels)},
			Spec:       *t.Spec.DeepCopy(),
		}
		pvc.Status.Phase = corev1.ClaimPending
		if err := r.api.Create(ctx, pvc); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating claim %s/%s: %w", ss.Namespace, claim, err)
		}
		replaced := false
		for k := range pod.Spec.Volumes {
			if pod.Spec.Volumes[k].Name == t.Name {
				pod.Spec.Volumes[k].VolumeSource = corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}
				replaced = true
			}
		}
		if !replaced {
			pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: t.Name, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
			}})
		}
	}
	if err := r.api.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating pod %s/%s: %w", ss.Namespace, pod.Name, err)
	}
	return nil
}
