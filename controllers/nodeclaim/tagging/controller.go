// Package tagging is the NodeClaim tagging controller: once a NodeClaim's
// node has registered, it tags the NodeClaim's EC2 instance with the node's
// name (Name), the NodeClaim's name (karpenter.sh/nodeclaim) and the
// cluster (eks:eks-cluster-name), as Karpenter's nodeclaim.tagging
// controller does, so that the EC2 console and cost reports show which node
// an instance is. Tags the instance already has are left as they are (a
// Name from the EC2NodeClass's spec.tags wins). Afterwards the NodeClaim is
// annotated karpenter.k8s.aws/tagged=true and not looked at again.
//
// The tag keys are exactly those the controller's IAM policy allows on
// existing instances (AllowScopedResourceTagging).
package tagging

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	awsprovider "github.com/stevedore-autoscaler/stevedore/cloud/aws"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/sdk"
)

// Name is the controller's name, as registered with the manager.
const Name = "nodeclaim.tagging"

// Reconciler tags the instances of registered NodeClaims. Create it with New.
type Reconciler struct {
	client      client.Client
	ec2         sdk.EC2
	clusterName string
}

var _ reconcile.Reconciler = (*Reconciler)(nil)

// New returns a Reconciler that tags instances through ec2 for the cluster.
func New(c client.Client, ec2 sdk.EC2, clusterName string) *Reconciler {
	return &Reconciler{client: c, ec2: ec2, clusterName: clusterName}
}

// Register runs the Reconciler under the manager, woken by changes of the
// NodeClaims that still need tagging.
func (r *Reconciler) Register(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named(Name).
		For(&karpv1.NodeClaim{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			nc, ok := o.(*karpv1.NodeClaim)
			return ok && Taggable(nc)
		}))).
		Complete(r)
}

// Taggable reports whether a NodeClaim's instance is due for tagging: it is
// stevedore's (see wellknown.ManagedNodeClaim), its node has registered
// (status.nodeName), it is not being deleted, and it is not annotated as
// tagged yet.
func Taggable(nc *karpv1.NodeClaim) bool {
	return wellknown.ManagedNodeClaim(nc) && nc.Annotations[wellknown.AnnotationInstanceTagged] != "true" &&
		nc.Status.NodeName != "" && nc.DeletionTimestamp.IsZero()
}

// Reconcile tags one NodeClaim's instance.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nc := &karpv1.NodeClaim{}
	if err := r.client.Get(ctx, req.NamespacedName, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !Taggable(nc) {
		return reconcile.Result{}, nil
	}
	id := awsprovider.InstanceID(nc.Status.ProviderID)
	if id == "" {
		// Not an EC2 instance (yet); a providerID change wakes us again.
		return reconcile.Result{}, nil
	}
	out, err := r.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if errorCode(err) == "InvalidInstanceID.NotFound" {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("describing instance %s of NodeClaim %s: %w", id, nc.Name, err)
	}
	have := map[string]bool{}
	for _, res := range out.Reservations {
		for _, inst := range res.Instances {
			for _, t := range inst.Tags {
				have[aws.ToString(t.Key)] = true
			}
		}
	}
	want := []ec2types.Tag{
		{Key: aws.String(wellknown.TagEKSClusterName), Value: aws.String(r.clusterName)},
		{Key: aws.String(wellknown.TagName), Value: aws.String(nc.Status.NodeName)},
		{Key: aws.String(wellknown.TagNodeClaim), Value: aws.String(nc.Name)},
	}
	var tags []ec2types.Tag
	for _, t := range want {
		if !have[*t.Key] {
			tags = append(tags, t)
		}
	}
	if len(tags) > 0 {
		if _, err := r.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{id}, Tags: tags}); err != nil {
			if errorCode(err) == "InvalidInstanceID.NotFound" {
				return reconcile.Result{}, nil
			}
			return reconcile.Result{}, fmt.Errorf("tagging instance %s of NodeClaim %s: %w", id, nc.Name, err)
		}
	}
	base := nc.DeepCopy()
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	nc.Annotations[wellknown.AnnotationInstanceTagged] = "true"
	if err := r.client.Patch(ctx, nc, client.MergeFrom(base)); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("annotating NodeClaim %s as tagged: %w", nc.Name, err))
	}
	return reconcile.Result{}, nil
}

func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}
