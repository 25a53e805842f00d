// Package kubelet plays the kubelets of the simulated cluster: one per
// instance of the in-memory AWS that boots, plus the nodes given as
// manifests. It is a reconciler keyed by node name, driven like any other
// controller in the simulator.
//
// A kubelet on a launched instance:
//
//   - waits for the instance to boot (the in-memory AWS keeps it pending for
//     its boot delay);
//   - registers the Node only when the instance belongs to the cluster and its
//     role has an EKS access entry (otherwise it keeps failing to
//     authenticate, which from the API looks like nothing at all), with the
//     karpenter.sh/unregistered taint its boot configuration adds; the API
//     server's admission adds node.kubernetes.io/not-ready;
//   - reports Ready ReadyTime after registering and removes the not-ready taint
//     (the node lifecycle controller's part); a simulated agent then removes
//     the NodeClaim's startup taints, as a CNI or a device plugin would;
//   - runs the pods bound to it once Ready: a pod becomes Running and Ready
//     PodStartTime after it was bound (pulling its image, starting its
//     containers, passing its readiness probe; AnnotationStartTime sets it
//     per pod); a pod with restartPolicy Never or OnFailure and the
//     AnnotationDuration annotation succeeds that long after it started;
//   - stops terminating pods: a pod being deleted goes (the kubelet deletes it
//     with grace period 0) when its preStop sleep and its shutdown time
//     (AnnotationShutdown) have passed, but no later than its grace period;
//   - dies with its instance (shutting down, terminated) or when a node
//     failure is injected (Fail): from then on it does nothing, so the node's
//     heartbeat stops and its terminating pods stay terminating.
//
// Nodes given as manifests are unmanaged: their kubelet reports them Ready
// at once, with the catalog's capacity for their instance type when they give
// none.
package kubelet

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/catalog"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/sim/apiserver"
	"github.com/stevedore-autoscaler/stevedore/sim/watch"
)

// Name is the kubelets' controller name.
const Name = "kubelet"

// Annotations a pod may carry to shape its simulated life.
const (
	// AnnotationDuration makes a pod with restartPolicy Never or OnFailure
	// succeed this long (a Go duration) after it started running; Jobs use it.
	AnnotationDuration = "simulate.stevedore.io/duration"
	// AnnotationShutdown is how long (a Go duration) the pod's containers
	// take to exit after SIGTERM, after any preStop sleep; default 0.
	AnnotationShutdown = "simulate.stevedore.io/shutdown"
	// AnnotationStartTime is how long (a Go duration) the pod takes from
	// being bound to being Running and Ready; default Options.PodStartTime.
	AnnotationStartTime = "simulate.stevedore.io/start-time"
)

// Defaults of Options.
const (
	DefaultReadyTime    = 15 * time.Second
	DefaultPodStartTime = 5 * time.Second
	// RegistrationRetry is how often a kubelet that may not join (no access
	// entry for its role) tries again.
	RegistrationRetry = time.Minute
)

var (
	nodeGVK      = corev1.SchemeGroupVersion.WithKind("Node")
	podGVK       = corev1.SchemeGroupVersion.WithKind("Pod")
	nodeClaimGVK = karpv1.GroupVersion.WithKind("NodeClaim")
)

// Options configure the kubelets.
type Options struct {
	API   *apiserver.Server
	AWS   *fake.AWS
	Clock clock.PassiveClock
	// ClusterName is the EKS cluster the kubelets join.
	ClusterName string
	// BootDelay is the in-memory AWS's boot delay, to know when to look.
	BootDelay time.Duration
	// ReadyTime is the time from registration to Ready; default
	// DefaultReadyTime.
	ReadyTime time.Duration
	// PodStartTime is the time from a pod's binding to its being Running
	// and Ready; default DefaultPodStartTime, negative for none.
	PodStartTime time.Duration
	// OnStop is called when a kubelet stops (its instance went or a failure
	// was injected), with the node name; the runner wakes the node lifecycle
	// controller with it. Optional.
	OnStop func(nodeName string)
}

// Kubelets are the kubelets of the cluster. Create them with New.
type Kubelets struct {
	opts Options
	// instances maps node names (the instances' private DNS names) to
	// instance IDs, learnt from NodeClaims' provider IDs.
	instances map[string]string
	// stopped records when each dead kubelet stopped.
	stopped map[string]time.Time
	// failed are nodes whose kubelet failed by injection.
	failed map[string]bool
}

// New returns the kubelets.
func New(opts Options) *Kubelets {
	if opts.ReadyTime <= 0 {
		opts.ReadyTime = DefaultReadyTime
	}
	if opts.PodStartTime == 0 {
		opts.PodStartTime = DefaultPodStartTime
	}
	opts.PodStartTime = max(opts.PodStartTime, 0)
	return &Kubelets{opts: opts, instances: map[string]string{}, stopped: map[string]time.Time{}, failed: map[string]bool{}}
}

// Controller returns the kubelets as a controller for the runner. They wake
// for a NodeClaim whose instance they have not seen yet, for every change to
// a Node, and for changes to the pods bound to a node.
func (k *Kubelets) Controller() watch.Controller {
	return watch.Controller{
		Name:       Name,
		Reconciler: k,
		Watches: []watch.Watch{
			watch.Map(nodeClaimGVK, k.learn),
			watch.Own(nodeGVK),
			watch.Map(podGVK, func(o client.Object) []reconcile.Request {
				if n := o.(*corev1.Pod).Spec.NodeName; n != "" {
					return []reconcile.Request{watch.Named(n)}
				}
				return nil
			}),
		},
	}
}

// learn maps a launched NodeClaim to the kubelet of its instance, the first
// time its provider ID is seen.
func (k *Kubelets) learn(o client.Object) []reconcile.Request {
	nc := o.(*karpv1.NodeClaim)
	id := InstanceID(nc.Status.ProviderID)
	if id == "" {
		return nil
	}
	info, ok := k.opts.AWS.Instance(id)
	if !ok || info.PrivateDNSName == "" {
		return nil
	}
	if _, known := k.instances[info.PrivateDNSName]; known {
		return nil
	}
	k.instances[info.PrivateDNSName] = id
	return []reconcile.Request{watch.Named(info.PrivateDNSName)}
}

// NodeName returns the node name of an instance's kubelet, if known.
func (k *Kubelets) NodeName(instanceID string) (string, bool) {
	for name, id := range k.instances {
		if id == instanceID {
			return name, true
		}
	}
	return "", false
}

// Fail stops the node's kubelet for good, as a hardware or kubelet failure
// would. It reports whether the kubelet was running.
func (k *Kubelets) Fail(nodeName string) bool {
	if k.failed[nodeName] {
		return false
	}
	k.failed[nodeName] = true
	k.stop(nodeName)
	return true
}

// Stopped reports when the node's kubelet stopped, if it did.
func (k *Kubelets) Stopped(nodeName string) (time.Time, bool) {
	t, ok := k.stopped[nodeName]
	return t, ok
}

func (k *Kubelets) stop(nodeName string) {
	if _, ok := k.stopped[nodeName]; ok {
		return
	}
	k.stopped[nodeName] = k.opts.Clock.Now()
	if k.opts.OnStop != nil {
		k.opts.OnStop(nodeName)
	}
}

// Reconcile runs one node's kubelet: registration, readiness, pods.
func (k *Kubelets) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	name := req.Name
	if _, dead := k.stopped[name]; dead {
		return reconcile.Result{}, nil
	}
	now := k.opts.Clock.Now()
	node := &corev1.Node{}
	err := k.opts.API.Get(ctx, client.ObjectKey{Name: name}, node)
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	exists := err == nil
	id, managed := k.instances[name]
	var terminatesAt time.Time
	if managed {
		info, ok := k.opts.AWS.Instance(id)
		if !ok || info.State == fake.StateShuttingDown || info.State == fake.StateTerminated {
			// The instance is gone, and its kubelet with it.
			k.stop(name)
			return reconcile.Result{}, nil
		}
		if info.State == fake.StatePending {
			wait := info.LaunchTime.Add(k.opts.BootDelay).Sub(now)
			return reconcile.Result{RequeueAfter: max(wait, time.Second)}, nil
		}
		if !exists {
			return k.register(ctx, info)
		}
		terminatesAt = info.TerminatesAt
	} else if !exists {
		return reconcile.Result{}, nil
	}
	if !node.DeletionTimestamp.IsZero() && len(node.Finalizers) == 0 {
		return reconcile.Result{}, nil
	}
	var next time.Time
	soon := func(t time.Time) {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	// Wake when EC2 ends the instance (a spot interruption, a retirement):
	// the kubelet dies with it. Asked again on every pass, as a reconciler
	// returns its next wake, since an earlier wake for this node (a pod
	// bound meanwhile) replaces the one asked for when the termination was
	// scheduled.
	if !terminatesAt.IsZero() {
		soon(terminatesAt)
	}
	ready := nodeReady(node)
	if !ready {
		at := node.CreationTimestamp.Add(k.opts.ReadyTime)
		if !managed {
			at = now
		}
		if now.Before(at) {
			soon(at)
		} else {
			if err := k.markReady(ctx, node, managed); err != nil {
				return reconcile.Result{}, err
			}
			ready = true
		}
	}
	if ready && managed {
		if err := k.removeStartupTaints(ctx, node); err != nil {
			return reconcile.Result{}, err
		}
	}
	t, err := k.runPods(ctx, node, ready, now)
	if err != nil {
		return reconcile.Result{}, err
	}
	soon(t)
	if next.IsZero() {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{RequeueAfter: max(next.Sub(now), time.Millisecond)}, nil
}

// register creates the Node of a booted instance, if its kubelet may join.
func (k *Kubelets) register(ctx context.Context, info fake.InstanceInfo) (reconcile.Result, error) {
	if !InCluster(info, k.opts.ClusterName) || info.Role == "" || !k.opts.AWS.AccessEntryAllows(info.Role) {
		return reconcile.Result{RequeueAfter: RegistrationRetry}, nil
	}
	node, err := NodeFor(info)
	if err != nil {
		return reconcile.Result{}, err
	}
	now := metav1.NewTime(k.opts.Clock.Now())
	for i := range node.Status.Conditions {
		node.Status.Conditions[i].LastHeartbeatTime = now
		node.Status.Conditions[i].LastTransitionTime = now
	}
	if err := k.opts.API.Create(ctx, node); err != nil && !apierrors.IsAlreadyExists(err) {
		return reconcile.Result{}, fmt.Errorf("registering node %s for instance %s: %w", node.Name, info.ID, err)
	}
	return reconcile.Result{RequeueAfter: k.opts.ReadyTime}, nil
}

// markReady sets Ready and removes the not-ready taint, as the kubelet and
// then the node lifecycle controller do. An unmanaged node without
// allocatable gets its instance type's from the catalog.
func (k *Kubelets) markReady(ctx context.Context, node *corev1.Node, managed bool) error {
	now := metav1.NewTime(k.opts.Clock.Now())
	base := node.DeepCopy()
	cond := corev1.NodeCondition{
		Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status",
		LastHeartbeatTime: now, LastTransitionTime: now,
	}
	found := false
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == corev1.NodeReady {
			node.Status.Conditions[i] = cond
			found = true
		}
	}
	if !found {
		node.Status.Conditions = append(node.Status.Conditions, cond)
	}
	if !managed && len(node.Status.Allocatable) == 0 {
		if it, ok := catalog.Lookup(node.Labels[wellknown.LabelInstanceType]); ok {
			node.Status.Capacity = it.Capacity.DeepCopy()
			node.Status.Allocatable = it.Allocatable.DeepCopy()
		}
	}
	if err := k.opts.API.Status().Patch(ctx, node, apiserver.MergeFrom(base)); err != nil {
		return fmt.Errorf("marking node %s ready: %w", node.Name, err)
	}
	base = node.DeepCopy()
	node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady })
	if len(node.Spec.Taints) == len(base.Spec.Taints) {
		return nil
	}
	if err := k.opts.API.Patch(ctx, node, apiserver.MergeFrom(base)); err != nil {
		return fmt.Errorf("removing the not-ready taint from node %s: %w", node.Name, err)
	}
	return nil
}

// removeStartupTaints plays the agent (a CNI, a device plugin) that removes
// the NodeClaim's startup taints once the node is up. It waits for the
// lifecycle controller to have registered the node, which is when those
// taints are put on.
func (k *Kubelets) removeStartupTaints(ctx context.Context, node *corev1.Node) error {
	if node.Labels[wellknown.LabelRegistered] != "true" || len(node.Spec.Taints) == 0 {
		return nil
	}
	var claims karpv1.NodeClaimList
	if err := k.opts.API.List(ctx, &claims, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	var startup []corev1.Taint
	for i := range claims.Items {
		if claims.Items[i].Status.ProviderID == node.Spec.ProviderID {
			startup = claims.Items[i].Spec.StartupTaints
		}
	}
	if len(startup) == 0 {
		return nil
	}
	base := node.DeepCopy()
	node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool {
		return slices.ContainsFunc(startup, func(s corev1.Taint) bool { return s.MatchTaint(&t) })
	})
	if len(node.Spec.Taints) == len(base.Spec.Taints) {
		return nil
	}
	return k.opts.API.Patch(ctx, node, apiserver.MergeFrom(base))
}

// runPods starts, finishes and stops the node's pods. It returns when it
// has to look again (zero for never).
func (k *Kubelets) runPods(ctx context.Context, node *corev1.Node, ready bool, now time.Time) (time.Time, error) {
	// The stored pods, not copies: most are only looked at, and the few
	// that change are copied first.
	pods := k.opts.API.Select(podGVK, "spec.nodeName", node.Name)
	var next time.Time
	soon := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	for _, o := range pods {
		pod := o.(*corev1.Pod)
		switch {
		case pod.DeletionTimestamp != nil:
			stop := StopTime(pod)
			if now.Before(stop) {
				soon(stop)
				continue
			}
			err := k.opts.API.Delete(ctx, pod, client.GracePeriodSeconds(0), client.Preconditions{UID: &pod.UID})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return time.Time{}, fmt.Errorf("removing terminated pod %s/%s: %w", pod.Namespace, pod.Name, err)
			}
		case pod.Status.Phase == corev1.PodPending && ready:
			if at := k.startAt(pod); now.Before(at) {
				soon(at)
				continue
			}
			if err := k.startPod(ctx, pod, node, now); err != nil {
				return time.Time{}, err
			}
			if d, ok := runFor(pod); ok {
				soon(now.Add(d))
			}
		case pod.Status.Phase == corev1.PodRunning:
			d, ok := runFor(pod)
			if !ok || pod.Status.StartTime == nil {
				continue
			}
			done := pod.Status.StartTime.Add(d)
			if now.Before(done) {
				soon(done)
				continue
			}
			if err := k.finishPod(ctx, pod, now); err != nil {
				return time.Time{}, err
			}
		}
	}
	return next, nil
}

// startAt returns when a bound pod is Running and Ready: its start time
// after its binding.
func (k *Kubelets) startAt(pod *corev1.Pod) time.Time {
	d := k.opts.PodStartTime
	if v, ok := pod.Annotations[AnnotationStartTime]; ok {
		if a, err := time.ParseDuration(v); err == nil && a >= 0 {
			d = a
		}
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Add(d)
		}
	}
	// Bound without the scheduler (spec.nodeName set by hand): from its
	// creation.
	return pod.CreationTimestamp.Add(d)
}

// startPod and finishPod take the stored pod, the base of their patch, and
// change a copy.
func (k *Kubelets) startPod(ctx context.Context, pod *corev1.Pod, node *corev1.Node, now time.Time) error {
	base := pod
	pod = pod.DeepCopy()
	t := metav1.NewTime(now)
	pod.Status.Phase = corev1.PodRunning
	pod.Status.StartTime = &t
	pod.Status.HostIP = nodeIP(node)
	for _, typ := range []corev1.PodConditionType{corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady, corev1.PodScheduled} {
		setPodCondition(pod, typ, corev1.ConditionTrue, "", t)
	}
	pod.Status.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, Ready: true, Started: ptr(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t}},
		})
	}
	if err := k.opts.API.Status().Patch(ctx, pod, apiserver.MergeFrom(base)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("starting pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

func (k *Kubelets) finishPod(ctx context.Context, pod *corev1.Pod, now time.Time) error {
	base := pod
	pod = pod.DeepCopy()
	t := metav1.NewTime(now)
	pod.Status.Phase = corev1.PodSucceeded
	setPodCondition(pod, corev1.PodReady, corev1.ConditionFalse, "PodCompleted", t)
	setPodCondition(pod, corev1.ContainersReady, corev1.ConditionFalse, "PodCompleted", t)
	for i := range pod.Status.ContainerStatuses {
		cs := &pod.Status.ContainerStatuses[i]
		started := t
		if cs.State.Running != nil {
			started = cs.State.Running.StartedAt
		}
		cs.Ready = false
		cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: started, FinishedAt: t}}
	}
	if err := k.opts.API.Status().Patch(ctx, pod, apiserver.MergeFrom(base)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("finishing pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// runFor returns how long a run-to-completion pod runs, if it says.
func runFor(pod *corev1.Pod) (time.Duration, bool) {
	if pod.Spec.RestartPolicy == corev1.RestartPolicyAlways || pod.Spec.RestartPolicy == "" {
		return 0, false
	}
	v, ok := pod.Annotations[AnnotationDuration]
	if !ok {
		return 0, false
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, false
	}
	return d, true
}

// StopTime returns when a terminating pod's containers have all exited: its
// deletion started its grace period before its deletionTimestamp, and it
// takes its longest preStop sleep plus its shutdown time, capped by the
// grace period. A pod that never ran stops at once.
func StopTime(pod *corev1.Pod) time.Time {
	if pod.DeletionTimestamp == nil {
		return time.Time{}
	}
	grace := time.Duration(0)
	if g := pod.DeletionGracePeriodSeconds; g != nil {
		grace = time.Duration(*g) * time.Second
	}
	start := pod.DeletionTimestamp.Add(-grace)
	if pod.Status.Phase != corev1.PodRunning {
		return start
	}
	var need time.Duration
	for _, c := range pod.Spec.Containers {
		need = max(need, preStopSleep(c))
	}
	if v, ok := pod.Annotations[AnnotationShutdown]; ok {
		if d, err := time.ParseDuration(v); err == nil && d > 0 {
			need += d
		}
	}
	return start.Add(min(need, grace))
}

var sleepCommand = regexp.MustCompile(`(?:^|[\s;&|])sleep\s+(\d+)`)

// preStopSleep returns how long a container's preStop hook sleeps: a sleep
// action, or an exec hook that runs "sleep N".
func preStopSleep(c corev1.Container) time.Duration {
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil {
		return 0
	}
	h := c.Lifecycle.PreStop
	if h.Sleep != nil {
		return time.Duration(h.Sleep.Seconds) * time.Second
	}
	if h.Exec != nil {
		m := sleepCommand.FindStringSubmatch(strings.Join(h.Exec.Command, " "))
		if m != nil {
			if n, err := strconv.Atoi(m[1]); err == nil {
				return time.Duration(n) * time.Second
			}
		}
	}
	return 0
}

func setPodCondition(pod *corev1.Pod, typ corev1.PodConditionType, status corev1.ConditionStatus, reason string, t metav1.Time) {
	for i := range pod.Status.Conditions {
		c := &pod.Status.Conditions[i]
		if c.Type == typ {
			if c.Status != status {
				c.LastTransitionTime = t
			}
			c.Status, c.Reason = status, reason
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: typ, Status: status, Reason: reason, LastTransitionTime: t})
}

func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func nodeIP(node *corev1.Node) string {
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	return ""
}

func ptr[T any](v T) *T { return &v }
