// Package garbagecollect finds and terminates leaked instances: EC2 instances
// that stevedore launched for a cluster but that no NodeClaim refers to any
// more, for example because the controller restarted between CreateFleet and
// writing the NodeClaim's providerID, or because a NodeClaim was deleted while
// its instance was still being launched.
//
// An instance counts as stevedore's only if it carries both a cluster tag
// (kubernetes.io/cluster/<name> or eks:eks-cluster-name=<name>) and the
// karpenter.sh/nodepool tag. Instances without those tags, or of another
// cluster, are never touched. The grace period covers the window between a
// launch and the NodeClaim recording its instance.
package garbagecollect

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/sdk"
)

// DefaultGrace is the age below which an instance is never collected: long
// enough for a launch to be recorded on its NodeClaim.
const DefaultGrace = 30 * time.Second

// liveStates are the states of instances that still cost money or hold
// addresses. Instances that are shutting down or terminated are already on
// their way out.
var liveStates = []string{"pending", "running", "stopping", "stopped"}

// maxTerminateIDs is how many instance IDs one TerminateInstances call takes.
const maxTerminateIDs = 1000

// Collect terminates the instances stevedore launched for clusterName that
// are pending, running, stopping or stopped, were launched more than grace
// before now, and whose ID known does not recognise. It returns the IDs of the
// instances it terminated, sorted.
//
// known must answer from NodeClaims listed after the instances were (or at
// least not long before): the grace period only protects launches younger
// than grace. On an error, Collect returns the IDs already terminated along
// with it.
func Collect(ctx context.Context, client sdk.EC2, clusterName string, known func(instanceID string) bool, now time.Time, grace time.Duration) ([]string, error) {
	if clusterName == "" {
		return nil, errors.New("garbage collection needs the cluster name")
	}
	candidates, err := leaked(ctx, client, clusterName, known, now, grace)
	if err != nil {
		return nil, err
	}
	var done []string
	for chunk := range slices.Chunk(candidates, maxTerminateIDs) {
		terminated, err := terminate(ctx, client, chunk)
		done = append(done, terminated...)
		if err != nil {
			slices.Sort(done)
			return done, err
		}
	}
	slices.Sort(done)
	return done, nil
}

// leaked lists the instances to terminate, sorted by ID.
func leaked(ctx context.Context, client sdk.EC2, clusterName string, known func(string) bool, now time.Time, grace time.Duration) ([]string, error) {
	// EC2 filters are ANDed, so the two ways of naming the cluster take one
	// query each.
	queries := [][]ec2types.Filter{
		{
			{Name: aws.String("tag-key"), Values: []string{wellknown.TagClusterPrefix + clusterName}},
			{Name: aws.String("tag-key"), Values: []string{wellknown.TagNodePool}},
			{Name: aws.String("instance-state-name"), Values: liveStates},
		},
		{
			{Name: aws.String("tag:" + wellknown.TagEKSClusterName), Values: []string{clusterName}},
			{Name: aws.String("tag-key"), Values: []string{wellknown.TagNodePool}},
			{Name: aws.String("instance-state-name"), Values: liveStates},
		},
	}
	seen := map[string]bool{}
	var out []string
	for _, filters := range queries {
		p := ec2.NewDescribeInstancesPaginator(client, &ec2.DescribeInstancesInput{Filters: filters})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("listing instances of cluster %s: %w", clusterName, err)
			}
			for _, r := range page.Reservations {
				for _, inst := range r.Instances {
					id := aws.ToString(inst.InstanceId)
					if id == "" || seen[id] {
						continue
					}
					seen[id] = true
					if collectable(inst, clusterName, known, now, grace) {
						out = append(out, id)
					}
				}
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// collectable checks an instance again on the client side, so that a filter
// the API ignored or misread can never lead to terminating a foreign instance.
func collectable(inst ec2types.Instance, clusterName string, known func(string) bool, now time.Time, grace time.Duration) bool {
	tags := map[string]string{}
	for _, t := range inst.Tags {
		tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	_, clusterTag := tags[wellknown.TagClusterPrefix+clusterName]
	if !clusterTag && tags[wellknown.TagEKSClusterName] != clusterName {
		return false
	}
	if _, ok := tags[wellknown.TagNodePool]; !ok {
		return false
	}
	if inst.State == nil || !slices.Contains(liveStates, string(inst.State.Name)) {
		return false
	}
	// Without a launch time the age is unknown; leave it for a later pass.
	if inst.LaunchTime == nil || now.Sub(*inst.LaunchTime) <= grace {
		return false
	}
	return !known(aws.ToString(inst.InstanceId))
}

// terminate terminates ids. If EC2 rejects the batch because one of them has
// gone meanwhile, the others are terminated one by one.
func terminate(ctx context.Context, client sdk.EC2, ids []string) ([]string, error) {
	_, err := client.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: ids})
	if err == nil {
		return slices.Clone(ids), nil
	}
	if !isNotFound(err) {
		return nil, fmt.Errorf("terminating leaked instances %v: %w", ids, err)
	}
	var done []string
	for _, id := range ids {
		_, err := client.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
		switch {
		case err == nil:
			done = append(done, id)
		case isNotFound(err):
		default:
			return done, fmt.Errorf("terminating leaked instance %s: %w", id, err)
		}
	}
	return done, nil
}

func isNotFound(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "InvalidInstanceID.NotFound"
}
