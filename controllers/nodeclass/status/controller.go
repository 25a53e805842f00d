// Package status is the EC2NodeClass controller. For each EC2NodeClass it:
//
//   - adds the karpenter.k8s.aws/termination finalizer;
//   - writes the karpenter.k8s.aws/ec2nodeclass-hash and -hash-version
//     annotations (drift.Hash, drift.HashVersion), which NodeClaims launched
//     from it are compared against, and, when its hash version is not the
//     current one, re-stamps its NodeClaims first (restampNodeClaims);
//   - resolves the node class against AWS (nodeclass.Resolver) and writes
//     the status it returns. When an AWS call fails the resolver keeps the
//     affected conditions as they were; the status is written anyway and the
//     error returned, so the work queue retries with backoff. Otherwise the
//     node class is resolved again after ReadyRequeue, or NotReadyRequeue
//     while it is not Ready;
//   - on deletion, waits while any NodeClaim references it (with an event),
//     then deletes what stevedore created for it in AWS (launch templates,
//     the managed instance profile; see Finalizer) and removes the
//     finalizer.
//
// Writes are merge patches guarded by the resource version.
package status

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/drift"
)

// Name is the controller's name, as registered with the manager.
const Name = "nodeclass.status"

// Timers.
const (
	// ReadyRequeue is how soon a Ready node class is resolved again, to
	// follow new images, subnets and security groups.
	ReadyRequeue = 5 * time.Minute
	// NotReadyRequeue is how soon a node class that is not Ready is resolved
	// again.
	NotReadyRequeue = time.Minute
	// DeletionPoll is how often a deleting node class checks for NodeClaims
	// that still reference it, besides being woken by their changes.
	DeletionPoll = 30 * time.Second
	// CapacityReservationRequeue is how soon a node class that selects
	// capacity reservations is resolved again, as Karpenter polls them:
	// reservations come and go, and capacity blocks start expiring 40
	// minutes before their end.
	CapacityReservationRequeue = time.Minute
)

// ReasonWaitingOnNodeClaims is the reason of the event recorded while a
// deleting node class waits for its NodeClaims.
const ReasonWaitingOnNodeClaims = "WaitingOnNodeClaimTermination"

// Resolver computes a node class's status; *nodeclass.Resolver is the
// production one.
type Resolver interface {
	Resolve(ctx context.Context, nc *awsv1.EC2NodeClass, kubernetesVersion string) (awsv1.EC2NodeClassStatus, error)
}

// Finalizer is implemented by resolvers that clean up after a deleted node
// class; *nodeclass.Resolver deletes its launch templates and the instance
// profile it manages.
type Finalizer interface {
	Finalize(ctx context.Context, nc *awsv1.EC2NodeClass) error
}

// Options configure a Reconciler.
type Options struct {
	// KubernetesVersion is the cluster's version, such as "1.33"; the
	// caller reads it from the API server's /version. It decides which
	// images an alias selects.
	KubernetesVersion string
	// CABundle is the cluster's certificate authority bundle, part of the
	// node class hash. It must be the one the cloud provider stamps
	// NodeClaims with, or every NodeClaim drifts.
	CABundle string
	// RefreshInterval, when positive, is how soon a Ready node class is
	// resolved again (its images, subnets and security groups), in place of
	// ReadyRequeue: the smaller of the AMI and subnet refresh intervals
	// (AMI_REFRESH_INTERVAL, SUBNET_REFRESH_INTERVAL).
	RefreshInterval time.Duration
}

// Reconciler is the EC2NodeClass controller. Create it with New.
type Reconciler struct {
	client   client.Client
	resolver Resolver
	recorder events.EventRecorder
	opts     Options
}

var _ reconcile.Reconciler = (*Reconciler)(nil)

// New returns a Reconciler. The recorder may be nil, which drops events.
// Condition transition times come from the resolver's clock.
func New(c client.Client, resolver Resolver, recorder events.EventRecorder, opts Options) *Reconciler {
	return &Reconciler{client: c, resolver: resolver, recorder: recorder, opts: opts}
}

// Register runs the Reconciler under the manager, woken by EC2NodeClass
// changes and by changes to the NodeClaims that reference one (so that a
// deletion waiting on them goes on as soon as they are gone).
func (r *Reconciler) Register(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named(Name).
		For(&awsv1.EC2NodeClass{}).
		Watches(&karpv1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(nodeClassOfNodeClaim)).
		Complete(r)
}

func nodeClassOfNodeClaim(_ context.Context, o client.Object) []reconcile.Request {
	nc, ok := o.(*karpv1.NodeClaim)
	if !ok || !references(nc, "") {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: nc.Spec.NodeClassRef.Name}}}
}

// references reports whether claim uses an EC2NodeClass, named name unless
// name is empty.
func references(claim *karpv1.NodeClaim, name string) bool {
	ref := claim.Spec.NodeClassRef
	return ref != nil && wellknown.ManagedNodeClass(ref) && (name == "" || ref.Name == name)
}

// Reconcile resolves one EC2NodeClass, or finishes its deletion.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nc := &awsv1.EC2NodeClass{}
	if err := r.client.Get(ctx, req.NamespacedName, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !nc.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, nc)
	}

	hash := drift.Hash(nc, r.opts.CABundle)
	if nc.Annotations[wellknown.AnnotationEC2NodeClassHashVersion] != drift.HashVersion {
		// Before the node class carries the current version: nothing
		// would bring its NodeClaims to it afterwards.
		if err := r.restampNodeClaims(ctx, nc.Name, hash); err != nil {
			return reconcile.Result{}, err
		}
	}
	if err := r.patchMeta(ctx, nc, func(nc *awsv1.EC2NodeClass) {
		if !slices.Contains(nc.Finalizers, wellknown.FinalizerEC2NodeClassTermination) {
			nc.Finalizers = append(nc.Finalizers, wellknown.FinalizerEC2NodeClassTermination)
		}
		if nc.Annotations == nil {
			nc.Annotations = map[string]string{}
		}
		nc.Annotations[wellknown.AnnotationEC2NodeClassHash] = hash
		nc.Annotations[wellknown.AnnotationEC2NodeClassHashVersion] = drift.HashVersion
	}); err != nil {
		return reconcile.Result{}, err
	}

	status, resolveErr := r.resolver.Resolve(ctx, nc, r.opts.KubernetesVersion)
	base := nc.DeepCopy()
	nc.Status = status
	if !equality.Semantic.DeepEqual(base.Status, nc.Status) {
		if err := r.client.Status().Patch(ctx, nc, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			return reconcile.Result{}, fmt.Errorf("patching status of EC2NodeClass %s: %w", nc.Name, err)
		}
	}
	if resolveErr != nil {
		// The work queue retries with its backoff.
		return reconcile.Result{}, fmt.Errorf("resolving EC2NodeClass %s: %w", nc.Name, resolveErr)
	}
	ready := ReadyRequeue
	if r.opts.RefreshInterval > 0 {
		ready = r.opts.RefreshInterval
	}
	return reconcile.Result{RequeueAfter: requeueAfter(nc, ready)}, nil
}

// requeueAfter is how soon a resolved node class is resolved again: after
// ready when it is Ready.
func requeueAfter(nc *awsv1.EC2NodeClass, ready time.Duration) time.Duration {
	d := ready
	if !meta.IsStatusConditionTrue(nc.Status.Conditions, awsv1.ConditionTypeReady) {
		d = NotReadyRequeue
	}
	// The condition is there only while reservations are resolved (the
	// ReservedCapacity feature gate is on).
	if len(nc.Spec.CapacityReservationSelectorTerms) > 0 && meta.FindStatusCondition(nc.Status.Conditions, awsv1.ConditionTypeCapacityReservationsReady) != nil {
		d = min(d, CapacityReservationRequeue)
	}
	return d
}

// finalize removes the finalizer once no NodeClaim references the node
// class.
func (r *Reconciler) finalize(ctx context.Context, nc *awsv1.EC2NodeClass) (reconcile.Result, error) {
	if !slices.Contains(nc.Finalizers, wellknown.FinalizerEC2NodeClassTermination) {
		return reconcile.Result{}, nil
	}
	var claims karpv1.NodeClaimList
	if err := r.client.List(ctx, &claims); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing NodeClaims of EC2NodeClass %s: %w", nc.Name, err)
	}
	var names []string
	for i := range claims.Items {
		if references(&claims.Items[i], nc.Name) {
			names = append(names, claims.Items[i].Name)
		}
	}
	if len(names) > 0 {
		slices.Sort(names)
		if r.recorder != nil {
			r.recorder.Eventf(nc, nil, corev1.EventTypeNormal, ReasonWaitingOnNodeClaims, "Delete",
				"waiting on NodeClaims %s to terminate before deleting EC2NodeClass %s", summarize(names), nc.Name)
		}
		return reconcile.Result{RequeueAfter: DeletionPoll}, nil
	}

	// What stevedore created for the node class in AWS (its launch
	// templates and managed instance profile) goes before the finalizer
	// does; on an error the finalizer stays and the work queue retries.
	if f, ok := r.resolver.(Finalizer); ok {
		if err := f.Finalize(ctx, nc); err != nil {
			return reconcile.Result{}, fmt.Errorf("cleaning up after EC2NodeClass %s: %w", nc.Name, err)
		}
	}

	if err := r.patchMeta(ctx, nc, func(nc *awsv1.EC2NodeClass) {
		nc.Finalizers = slices.DeleteFunc(nc.Finalizers, func(f string) bool { return f == wellknown.FinalizerEC2NodeClassTermination })
	}); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	return reconcile.Result{}, nil
}

// summarize lists at most five names and how many more there are.
func summarize(names []string) string {
	const max = 5
	if len(names) <= max {
		return fmt.Sprint(names)
	}
	return fmt.Sprintf("%v and %d more", names[:max], len(names)-max)
}

// patchMeta applies mutate to nc and, if its metadata changed, writes it with
// a merge patch guarded by the resource version.
func (r *Reconciler) patchMeta(ctx context.Context, nc *awsv1.EC2NodeClass, mutate func(*awsv1.EC2NodeClass)) error {
	base := nc.DeepCopy()
	mutate(nc)
	if equality.Semantic.DeepEqual(base.ObjectMeta, nc.ObjectMeta) {
		return nil
	}
	if err := r.client.Patch(ctx, nc, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("patching EC2NodeClass %s: %w", nc.Name, err)
	}
	return nil
}

// restampNodeClaims gives the NodeClaims of the node class named class the
// current hash version and, unless they have drifted, the node class's hash
// h, where their version differs (drift.Restamp). It runs when the node
// class's own version is not the current one, as Karpenter's node class
// hash controller does: a change of the node class's version is what says
// the hashes were computed by another algorithm (an upgrade), and without
// re-stamping a NodeClaim could never be compared with the node class
// again. A drifted NodeClaim keeps its old hash under the new version, and
// so stays drifted.
func (r *Reconciler) restampNodeClaims(ctx context.Context, class, h string) error {
	var claims karpv1.NodeClaimList
	if err := r.client.List(ctx, &claims); err != nil {
		return fmt.Errorf("listing NodeClaims of EC2NodeClass %s: %w", class, err)
	}
	var errs []error
	for i := range claims.Items {
		claim := &claims.Items[i]
		if !references(claim, class) {
			continue
		}
		stampVersion, stampHash := drift.Restamp(claim, drift.HashVersion)
		if !stampVersion {
			continue
		}
		base := claim.DeepCopy()
		if claim.Annotations == nil {
			claim.Annotations = map[string]string{}
		}
		claim.Annotations[wellknown.AnnotationEC2NodeClassHashVersion] = drift.HashVersion
		if stampHash {
			claim.Annotations[wellknown.AnnotationEC2NodeClassHash] = h
		}
		// Guarded by the resource version: whether to keep the old hash
		// depends on the Drifted condition as read.
		if err := r.client.Patch(ctx, claim, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("re-stamping the EC2NodeClass hash of NodeClaim %s: %w", claim.Name, err))
		}
	}
	return errors.Join(errs...)
}
