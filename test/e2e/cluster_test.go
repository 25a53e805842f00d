//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
)

// TestStevedoreAPIsServed checks that the cluster serves stevedore's CRDs.
func TestStevedoreAPIsServed(t *testing.T) {
	t.Parallel()
	for _, list := range []client.ObjectList{&karpv1.NodePoolList{}, &karpv1.NodeClaimList{}, &awsv1.EC2NodeClassList{}} {
		if err := kube.List(t.Context(), list); err != nil {
			t.Errorf("listing %T: %v", list, err)
		}
	}
}

// TestClusterIsReal proves that the local cluster behaves as a cluster, not as
// a bare API server: kwok makes a stevedore-shaped Node Ready and renews its
// Lease, and the node lifecycle controller lifts the not-ready taint; the real
// kube-scheduler binds a Deployment's pods to it and kwok runs them; the
// disruption controller keeps the PodDisruptionBudget's status, which the
// Eviction API enforces; evicted and deleted pods go away and the ReplicaSet
// controller replaces them.
func TestClusterIsReal(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ns := newNamespace(t, "real")

	node := kwokNode(t, "m6i.xlarge", "us-west-2a")
	createNode(t, node)
	eventually(t, time.Minute, "node Ready, not-ready taint lifted", func(ctx context.Context) error {
		n := &corev1.Node{}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(node), n); err != nil {
			return err
		}
		if !isNodeReady(n) {
			return fmt.Errorf("conditions %v", n.Status.Conditions)
		}
		for _, taint := range n.Spec.Taints {
			if taint.Key == corev1.TaintNodeNotReady {
				return fmt.Errorf("still tainted %s", taint.ToString())
			}
		}
		// kwok kept what the Node registered with.
		if got, want := n.Status.Allocatable.Cpu().String(), node.Status.Allocatable.Cpu().String(); got != want {
			return fmt.Errorf("allocatable cpu %s, registered %s", got, want)
		}
		return nil
	})
	eventually(t, 30*time.Second, "node Lease renewed", func(ctx context.Context) error {
		lease := &coordinationv1.Lease{}
		if err := kube.Get(ctx, client.ObjectKey{Namespace: corev1.NamespaceNodeLease, Name: node.Name}, lease); err != nil {
			return err
		}
		if lease.Spec.RenewTime == nil || time.Since(lease.Spec.RenewTime.Time) > time.Minute {
			return fmt.Errorf("renew time %v", lease.Spec.RenewTime)
		}
		return nil
	})

	// Three replicas pinned to the Node, and a budget that lets one go at a
	// time. Each pod takes two seconds to start, so that a replacement cannot
	// be Ready between two evictions issued back to back.
	labels := map[string]string{"app": "web"}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: new(int32(3)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      labels,
					Annotations: map[string]string{"kwok.stevedore.io/start-delay": "2s"},
				},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{wellknown.LabelHostname: node.Name},
					Containers: []corev1.Container{{
						Name:  "web",
						Image: "registry.invalid/web:1",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU:    resource.MustParse("500m"),
							corev1.ResourceMemory: resource.MustParse("512Mi"),
						}},
					}},
				},
			},
		},
	}
	if err := kube.Create(ctx, deploy); err != nil {
		t.Fatal(err)
	}
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: new(intstr.FromInt32(2)),
			Selector:     &metav1.LabelSelector{MatchLabels: labels},
		},
	}
	if err := kube.Create(ctx, pdb); err != nil {
		t.Fatal(err)
	}

	pods := waitForRunningPods(t, ns, labels, 3, node.Name)
	for _, p := range pods {
		// Pod admission ran as on a real cluster: the ServiceAccount plugin
		// gave the pod its account and token volume.
		if p.Spec.ServiceAccountName != "default" || !slices.ContainsFunc(p.Spec.Volumes, func(v corev1.Volume) bool {
			return strings.HasPrefix(v.Name, "kube-api-access-")
		}) {
			t.Errorf("pod %s: service account %q, volumes %v: the ServiceAccount admission plugin did not run", p.Name, p.Spec.ServiceAccountName, p.Spec.Volumes)
		}
		if p.Status.PodIP == "" || p.Status.HostIP == "" {
			t.Errorf("pod %s: pod IP %q, host IP %q", p.Name, p.Status.PodIP, p.Status.HostIP)
		}
	}
	eventually(t, 30*time.Second, "scheduler's Scheduled events", func(ctx context.Context) error {
		for _, p := range pods {
			if err := scheduledByScheduler(ctx, p); err != nil {
				return err
			}
		}
		return nil
	})
	waitForBudget(t, ns, "web", 3, 1)

	// Evictions: the budget allows one; a second straight after is refused.
	evicted := pods[0]
	if err := evict(ctx, evicted); err != nil {
		t.Fatalf("evicting %s with one disruption allowed: %v", evicted.Name, err)
	}
	err := evict(ctx, pods[1])
	if !apierrors.IsTooManyRequests(err) {
		t.Fatalf("evicting %s right after %s: got %v, want 429 Too Many Requests from the disruption budget", pods[1].Name, evicted.Name, err)
	}
	t.Logf("second eviction refused: %v", err)
	waitForPodGone(t, evicted)
	replaced := waitForRunningPods(t, ns, labels, 3, node.Name)
	if slices.ContainsFunc(replaced, func(p corev1.Pod) bool { return p.UID == evicted.UID }) {
		t.Fatalf("evicted pod %s still listed", evicted.Name)
	}
	waitForBudget(t, ns, "web", 3, 1)

	// A plain delete: kwok completes it and the ReplicaSet controller
	// replaces the pod.
	deleted := replaced[2]
	if err := kube.Delete(ctx, &deleted); err != nil {
		t.Fatal(err)
	}
	waitForPodGone(t, deleted)
	after := waitForRunningPods(t, ns, labels, 3, node.Name)
	if slices.ContainsFunc(after, func(p corev1.Pod) bool { return p.UID == deleted.UID }) {
		t.Fatalf("deleted pod %s still listed", deleted.Name)
	}
	waitForBudget(t, ns, "web", 3, 1)
}

// TestJobRunsToCompletion checks the other half of kwok's pod lifecycle: a
// Job's pod runs, succeeds, and the job controller marks the Job complete.
func TestJobRunsToCompletion(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ns := newNamespace(t, "job")
	node := kwokNode(t, "m6i.large", "us-west-2b")
	createNode(t, node)

	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "once"},
		Spec: batchv1.JobSpec{
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"kwok.stevedore.io/run-time": "1s"}},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					NodeSelector:  map[string]string{wellknown.LabelHostname: node.Name},
					Containers:    []corev1.Container{{Name: "task", Image: "registry.invalid/task:1"}},
				},
			},
		},
	}
	if err := kube.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "job complete", func(ctx context.Context) error {
		j := &batchv1.Job{}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(job), j); err != nil {
			return err
		}
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("succeeded %d, active %d, conditions %v", j.Status.Succeeded, j.Status.Active, j.Status.Conditions)
	})
}

// waitForRunningPods waits until exactly n pods match the labels, none being
// deleted, all bound to nodeName, Running and Ready, and returns them.
func waitForRunningPods(t *testing.T, ns string, labels map[string]string, n int, nodeName string) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	eventually(t, 2*time.Minute, fmt.Sprintf("%d pods Running on %s", n, nodeName), func(ctx context.Context) error {
		list := &corev1.PodList{}
		if err := kube.List(ctx, list, client.InNamespace(ns), client.MatchingLabels(labels)); err != nil {
			return err
		}
		var problems []string
		for _, p := range list.Items {
			switch {
			case p.DeletionTimestamp != nil:
				problems = append(problems, p.Name+" being deleted")
			case p.Spec.NodeName != nodeName:
				problems = append(problems, fmt.Sprintf("%s on node %q", p.Name, p.Spec.NodeName))
			case p.Status.Phase != corev1.PodRunning || !isPodReady(&p):
				problems = append(problems, fmt.Sprintf("%s %s", p.Name, p.Status.Phase))
			}
		}
		if len(list.Items) != n || len(problems) > 0 {
			return fmt.Errorf("%d pods: %s", len(list.Items), strings.Join(problems, "; "))
		}
		pods = list.Items
		return nil
	})
	slices.SortFunc(pods, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return pods
}

// scheduledByScheduler checks for the Scheduled event kube-scheduler records
// when it binds a pod.
func scheduledByScheduler(ctx context.Context, p corev1.Pod) error {
	events := &corev1.EventList{}
	if err := kube.List(ctx, events, client.InNamespace(p.Namespace)); err != nil {
		return err
	}
	for _, e := range events.Items {
		if e.InvolvedObject.UID == p.UID && e.Reason == "Scheduled" &&
			(e.ReportingController == "default-scheduler" || e.Source.Component == "default-scheduler") {
			return nil
		}
	}
	return fmt.Errorf("no Scheduled event from default-scheduler for pod %s", p.Name)
}

// waitForBudget waits until the disruption controller has observed the
// budget's current generation and reports the given healthy pods and allowed
// disruptions.
func waitForBudget(t *testing.T, ns, name string, healthy, allowed int32) {
	t.Helper()
	eventually(t, time.Minute, fmt.Sprintf("budget %s: %d healthy, %d disruptions allowed", name, healthy, allowed), func(ctx context.Context) error {
		pdb := &policyv1.PodDisruptionBudget{}
		if err := kube.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, pdb); err != nil {
			return err
		}
		s := pdb.Status
		if s.ObservedGeneration != pdb.Generation || s.CurrentHealthy != healthy || s.DisruptionsAllowed != allowed || s.ExpectedPods != healthy {
			return fmt.Errorf("status %+v", s)
		}
		return nil
	})
}

func evict(ctx context.Context, p corev1.Pod) error {
	return clientset.CoreV1().Pods(p.Namespace).EvictV1(ctx, &policyv1.Eviction{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name},
	})
}

// waitForPodGone waits until the pod object is gone: kwok has finished its
// deletion as a kubelet would once the containers stop.
func waitForPodGone(t *testing.T, p corev1.Pod) {
	t.Helper()
	eventually(t, time.Minute, "pod "+p.Name+" gone", func(ctx context.Context) error {
		got := &corev1.Pod{}
		err := kube.Get(ctx, client.ObjectKeyFromObject(&p), got)
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		case got.UID != p.UID:
			return nil
		default:
			return errors.New("still there, deletion timestamp " + fmt.Sprint(got.DeletionTimestamp))
		}
	})
}
