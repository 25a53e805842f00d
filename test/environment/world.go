package environment

import (
	"context"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/test/apiserver"
	"github.com/stevedore-autoscaler/stevedore/test/kubelet"
)

// SyncState feeds the cluster state what the API server holds, as the
// informers would, and makes it forget what the server no longer holds:
// the NodePools, EC2NodeClasses, NodeClaims and Nodes, and the pods,
// DaemonSets, LimitRanges and PodDisruptionBudgets of the Env's namespace.
func (e *Env) SyncState() {
	e.T.Helper()
	var (
		pools      karpv1.NodePoolList
		classes    awsv1.EC2NodeClassList
		claims     karpv1.NodeClaimList
		nodes      corev1.NodeList
		pods       corev1.PodList
		daemonSets appsv1.DaemonSetList
		ranges     corev1.LimitRangeList
		pdbs       policyv1.PodDisruptionBudgetList
	)
	for _, l := range []client.ObjectList{&pools, &classes, &claims, &nodes} {
		if err := e.Kube.List(e.Ctx, l); err != nil {
			e.T.Fatal(err)
		}
	}
	for _, l := range []client.ObjectList{&pods, &daemonSets, &ranges, &pdbs} {
		if err := e.Kube.List(e.Ctx, l, client.InNamespace(e.Name)); err != nil {
			e.T.Fatal(err)
		}
	}
	feed(pools.Items, e.State.UpdateNodePool)
	feed(classes.Items, e.State.UpdateEC2NodeClass)
	seen := map[string]bool{}
	feed(claims.Items, func(nc *karpv1.NodeClaim) {
		e.State.UpdateNodeClaim(nc)
		seen["nodeclaim/"+nc.Name] = true
	})
	feed(nodes.Items, func(n *corev1.Node) {
		e.State.UpdateNode(n)
		seen["node/"+n.Name] = true
	})
	feed(pods.Items, func(p *corev1.Pod) {
		e.State.UpdatePod(p)
		seen["pod/"+p.Namespace+"/"+p.Name] = true
	})
	feed(daemonSets.Items, e.State.UpdateDaemonSet)
	feed(ranges.Items, e.State.UpdateLimitRange)
	feed(pdbs.Items, e.State.UpdatePodDisruptionBudget)
	snap := e.State.Snapshot(e.Clock.Now())
	forgetPod := func(p *corev1.Pod) {
		if !seen["pod/"+p.Namespace+"/"+p.Name] {
			e.State.DeletePod(p.Namespace, p.Name)
		}
	}
	for _, n := range snap.Nodes {
		if n.NodeClaim != nil && !seen["nodeclaim/"+n.NodeClaim.Name] {
			e.State.DeleteNodeClaim(n.NodeClaim.Name)
		}
		if n.Node != nil && !seen["node/"+n.Node.Name] {
			e.State.DeleteNode(n.Node.Name)
		}
		for _, p := range n.Pods {
			forgetPod(p)
		}
	}
	for _, p := range snap.PendingPods {
		forgetPod(p)
	}
}

// Settle reconciles the NodeClaim with r until a reconcile succeeds and
// leaves it as it was, or it is gone, and returns it (nil when gone) with
// the last result. A failed reconcile is logged and retried, as the
// controller's queue would. The clock does not move.
func (e *Env) Settle(r reconcile.Reconciler, name string) (*karpv1.NodeClaim, reconcile.Result) {
	e.T.Helper()
	last := ""
	for range 20 {
		res, err := r.Reconcile(e.Ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: name}})
		nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if !e.Exists(nc) {
			return nil, res
		}
		if err != nil {
			e.T.Logf("reconcile %s: %v", name, err)
		} else if nc.ResourceVersion == last {
			return nc, res
		}
		last = nc.ResourceVersion
	}
	e.T.Fatalf("NodeClaim %s kept changing", name)
	return nil, reconcile.Result{}
}

// feed passes each item to update.
func feed[T any](items []T, update func(*T)) {
	for i := range items {
		update(&items[i])
	}
}

// Boot moves the clock past the instances' boot delay and plays their
// kubelets (package test/kubelet): a Node registers, NotReady, for every
// running instance of the cluster that has none. It returns their names.
func (e *Env) Boot() []string {
	e.T.Helper()
	e.Clock.Step(fake.DefaultBootDelay + time.Second)
	names, err := kubelet.Sync(e.Ctx, e.Kube, e.AWS, ClusterName)
	if err != nil {
		e.T.Fatal(err)
	}
	return names
}

// MarkReady plays the Node's kubelet once its runtime and network are up,
// and the node lifecycle controller (see kubelet.MarkReady).
func (e *Env) MarkReady(node string) {
	e.T.Helper()
	if err := kubelet.MarkReady(e.Ctx, e.Kube, node); err != nil {
		e.T.Fatal(err)
	}
}

// Pods returns the names of the pods of the Env's namespace that are not
// being deleted, and of those that are, each sorted.
func (e *Env) Pods() (running, terminating []string) {
	e.T.Helper()
	var list corev1.PodList
	if err := e.Kube.List(e.Ctx, &list, client.InNamespace(e.Name)); err != nil {
		e.T.Fatal(err)
	}
	for _, p := range list.Items {
		if p.DeletionTimestamp.IsZero() {
			running = append(running, p.Name)
		} else {
			terminating = append(terminating, p.Name)
		}
	}
	slices.Sort(running)
	slices.Sort(terminating)
	return running, terminating
}

// FinishTerminating plays the kubelets once the containers of the pods
// being deleted have stopped: those pods of the Env's namespace are
// removed.
func (e *Env) FinishTerminating() {
	e.T.Helper()
	var list corev1.PodList
	if err := e.Kube.List(e.Ctx, &list, client.InNamespace(e.Name)); err != nil {
		e.T.Fatal(err)
	}
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp.IsZero() {
			continue
		}
		if err := e.Kube.Delete(e.Ctx, &list.Items[i], client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
			e.T.Fatal(err)
		}
	}
}

// NewManager returns a controller manager for the package's API server,
// as the controller binary makes one but serving no metrics or health
// probes, and without checking that controller names are unique (each
// test registers its controllers again). Register controllers with it and
// start it with StartManager.
func NewManager(t *testing.T) manager.Manager {
	t.Helper()
	mgr, err := manager.New(server.config, manager.Options{
		Scheme:                 apiserver.Scheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	return mgr
}

// StartManager starts the manager, logging through the Env, and stops it
// when the test ends, failing the test if it stopped on an error.
func (e *Env) StartManager(mgr manager.Manager) {
	ctx, cancel := context.WithCancel(e.Ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	e.T.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			e.T.Errorf("manager: %v", err)
		}
	})
}

// Patience is how long Eventually waits: long enough for a controller
// under a manager to see an event and act on it on a loaded machine. It
// bounds the wait for something that should happen; nothing is asserted
// about how long it takes.
const Patience = 30 * time.Second

// Eventually waits until done reports true, checking every 50ms, and fails
// the test, saying what it was waiting for, if it has not after Patience.
func Eventually(t *testing.T, what string, done func() bool) {
	t.Helper()
	deadline := time.Now().Add(Patience)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
