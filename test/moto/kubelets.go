package moto

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/catalog"
)

// KWOK's annotation: a Node carrying it is kept Ready by KWOK's controller,
// which also runs the pods bound to it.
const (
	kwokNodeAnnotation = "kwok.x-k8s.io/node"
	kwokNodeValue      = "fake"
)

// KubeletPoll is how often RunKubelets looks at moto's instances.
const KubeletPoll = 500 * time.Millisecond

// RunKubelets plays the kubelet of every instance moto runs for the
// cluster, until ctx ends: each running instance gets a KWOK Node with the
// instance's provider ID, name and labels, and the
// karpenter.sh/unregistered taint the node's bootstrap would give it; the
// Node goes once the instance is shutting down or terminated. moto starts
// no machine, so this is the part of EC2 and the kubelet that stands in for
// one. Problems (an instance type outside the catalog, a Node that cannot
// be written) go to report; moto's own errors are retried on the next poll.
func RunKubelets(ctx context.Context, c *ec2.Client, cluster string, kube client.Client, report func(error)) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(KubeletPoll):
		}
		out, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
			{Name: aws.String("tag:" + wellknown.TagEKSClusterName), Values: []string{cluster}}}})
		if err != nil {
			continue
		}
		for _, r := range out.Reservations {
			for _, in := range r.Instances {
				if err := syncNode(ctx, kube, in); err != nil && ctx.Err() == nil {
					report(err)
				}
			}
		}
	}
}

func syncNode(ctx context.Context, kube client.Client, in ec2types.Instance) error {
	name := aws.ToString(in.PrivateDnsName)
	node := &corev1.Node{}
	err := kube.Get(ctx, client.ObjectKey{Name: name}, node)
	switch state := in.State.Name; {
	case state == ec2types.InstanceStateNameTerminated || state == ec2types.InstanceStateNameShuttingDown:
		if err == nil {
			if err := kube.Delete(ctx, node); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting the Node of terminated instance %s: %w", aws.ToString(in.InstanceId), err)
			}
		}
	case apierrors.IsNotFound(err):
		it, ok := catalog.Lookup(string(in.InstanceType))
		if !ok {
			return fmt.Errorf("moto launched %s (instance %s), which is not in the catalog", in.InstanceType, aws.ToString(in.InstanceId))
		}
		zone := aws.ToString(in.Placement.AvailabilityZone)
		labels := map[string]string{wellknown.LabelHostname: name, wellknown.LabelTopologyZone: zone, wellknown.LabelTopologyRegion: zone[:len(zone)-1]}
		for k, v := range it.Labels {
			labels[k] = v
		}
		n := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: map[string]string{kwokNodeAnnotation: kwokNodeValue}},
			Spec: corev1.NodeSpec{ProviderID: "aws:///" + zone + "/" + aws.ToString(in.InstanceId),
				Taints: []corev1.Taint{wellknown.UnregisteredTaint()}},
			Status: corev1.NodeStatus{Capacity: it.Capacity.DeepCopy(), Allocatable: it.Allocatable.DeepCopy(),
				NodeInfo: corev1.NodeSystemInfo{Architecture: it.Arch(), OperatingSystem: "linux"}},
		}
		if err := kube.Create(ctx, n); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating the Node of instance %s: %w", aws.ToString(in.InstanceId), err)
		}
	}
	return nil
}
