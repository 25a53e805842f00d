package workloads

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

type jobs struct {
	base
	pace *pacer
}

// Reconcile runs parallelism pods until completions have succeeded, then
// marks the Job Complete and, after ttlSecondsAfterFinished, deletes it.
// Pods are created at the pace of the real controller: at most
// MaxPodCreatesPerSync a sync, in slow-start batches, every request waiting
// for a token of the controller's client.
func (r *jobs) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	job := &batchv1.Job{}
	if err := r.api.Get(ctx, req.NamespacedName, job); err != nil {
		if apierrors.IsNotFound(err) {
			r.pace.forget(req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if job.DeletionTimestamp != nil {
		r.pace.forget(req.NamespacedName)
		return reconcile.Result{}, nil
	}
	now := r.clock.Now()
	if c := jobCondition(job, batchv1.JobComplete); c != nil {
		return r.expire(ctx, job, c.LastTransitionTime.Time, now)
	}
	var running []*corev1.Pod
	succeeded, failed := int32(0), int32(0)
	for _, o := range r.owned(podGVK, job) {
		p := o.(*corev1.Pod)
		switch {
		case p.Status.Phase == corev1.PodSucceeded:
			succeeded++
		case p.Status.Phase == corev1.PodFailed:
			failed++
		case p.DeletionTimestamp == nil:
			running = append(running, p)
		}
	}
	parallelism := replicas(job.Spec.Parallelism)
	if job.Spec.Suspend != nil && *job.Spec.Suspend {
		parallelism = 0
	}
	want := parallelism
	if job.Spec.Completions != nil {
		want = min(want, *job.Spec.Completions-succeeded)
	} else if succeeded > 0 {
		// A work-queue Job is done once a pod has succeeded: start no more.
		want = 0
	}
	ref := controllerRef(job, "Job", batchv1.SchemeGroupVersion.String())
	start := func() *podSync {
		if diff := int(want) - len(running); diff > 0 {
			return creations(min(diff, MaxPodCreatesPerSync), 0)
		}
		return nil
	}
	write := func(_ *podSync, n int) error {
		for range n {
			pod := podFromTemplate(&job.Spec.Template, job.Namespace, ref)
			pod.GenerateName = job.Name + "-"
			if pod.Labels == nil {
				pod.Labels = map[string]string{}
			}
			pod.Labels[batchv1.JobNameLabel] = job.Name
			pod.Labels[batchv1.ControllerUidLabel] = string(job.UID)
			if err := r.api.Create(ctx, pod); err != nil {
				return fmt.Errorf("creating a pod of Job %s/%s: %w", job.Namespace, job.Name, err)
			}
			running = append(running, pod)
		}
		return nil
	}
	wait, err := r.pace.run(now, req.NamespacedName, 1, start, write)
	if err != nil {
		return reconcile.Result{}, err
	}
	st := job.Status.DeepCopy()
	st.Active, st.Succeeded, st.Failed = int32(len(running)), succeeded, failed
	if st.StartTime == nil {
		t := metav1.NewTime(now)
		st.StartTime = &t
	}
	done := (job.Spec.Completions != nil && succeeded >= *job.Spec.Completions) ||
		(job.Spec.Completions == nil && succeeded > 0 && len(running) == 0)
	if done {
		t := metav1.NewTime(now)
		st.CompletionTime = &t
		st.Conditions = append(st.Conditions,
			batchv1.JobCondition{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: t, LastProbeTime: t},
			batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: t, LastProbeTime: t})
	}
	changed := statusChanged(job.Status, *st)
	job.Status = *st
	if err := r.writeStatus(ctx, job, changed); err != nil {
		return reconcile.Result{}, err
	}
	if done {
		r.pace.forget(req.NamespacedName)
		return r.expire(ctx, job, now, now)
	}
	return reconcile.Result{RequeueAfter: wait}, nil
}

// expire deletes a finished Job whose time to live has passed (its pods go
// with it, by garbage collection).
func (r *jobs) expire(ctx context.Context, job *batchv1.Job, finished, now time.Time) (reconcile.Result, error) {
	if job.Spec.TTLSecondsAfterFinished == nil {
		return reconcile.Result{}, nil
	}
	at := finished.Add(time.Duration(*job.Spec.TTLSecondsAfterFinished) * time.Second)
	if now.Before(at) {
		return reconcile.Result{RequeueAfter: at.Sub(now)}, nil
	}
	if err := r.api.Delete(ctx, job); err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, nil
}

func jobCondition(job *batchv1.Job, typ batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range job.Status.Conditions {
		if c := &job.Status.Conditions[i]; c.Type == typ && c.Status == corev1.ConditionTrue {
			return c
		}
	}
	return nil
}
