package garbagecollect

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
)

const cluster = "my-cluster"

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

type world struct {
	aws   *fake.AWS
	clk   *clocktesting.FakeClock
	setup *fake.ClusterWorld
}

func newWorld(t *testing.T) *world {
	t.Helper()
	clk := clocktesting.NewFakeClock(t0)
	f := fake.New(fake.Options{Seed: 1, Clock: clk, InstanceTypes: []string{"m5.large"}})
	w, err := f.StandardCluster(cluster, "1.33")
	if err != nil {
		t.Fatal(err)
	}
	return &world{aws: f, clk: clk, setup: w}
}

// launch starts one instance with the given tags and returns its ID.
func (w *world) launch(t *testing.T, tags map[string]string) string {
	t.Helper()
	in := &ec2.RunInstancesInput{
		MinCount: aws.Int32(1), MaxCount: aws.Int32(1),
		ImageId:      aws.String(w.setup.Images["al2023/x86_64/standard"]),
		InstanceType: ec2types.InstanceTypeM5Large,
		SubnetId:     aws.String(w.setup.SubnetIDs[0]),
	}
	if len(tags) > 0 {
		spec := ec2types.TagSpecification{ResourceType: ec2types.ResourceTypeInstance}
		for k, v := range tags {
			spec.Tags = append(spec.Tags, ec2types.Tag{Key: aws.String(k), Value: aws.String(v)})
		}
		in.TagSpecifications = []ec2types.TagSpecification{spec}
	}
	out, err := w.aws.RunInstances(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.Instances[0].InstanceId)
}

func owned(extra map[string]string) map[string]string {
	tags := map[string]string{
		"kubernetes.io/cluster/" + cluster: "owned",
		"eks:eks-cluster-name":             cluster,
		"karpenter.sh/nodepool":            "default",
		"karpenter.k8s.aws/ec2nodeclass":   "default",
	}
	for k, v := range extra {
		tags[k] = v
	}
	return tags
}

func TestCollect(t *testing.T) {
	const grace = DefaultGrace
	tests := []struct {
		name  string
		tags  map[string]string
		age   time.Duration
		known bool
		want  bool // terminated
	}{
		{name: "leaked instance is terminated", tags: owned(nil), age: time.Minute, want: true},
		{name: "instance known to a NodeClaim is kept", tags: owned(nil), age: time.Minute, known: true},
		{name: "instance younger than the grace period is kept", tags: owned(nil), age: grace / 2},
		{name: "instance exactly at the grace period is kept", tags: owned(nil), age: grace},
		{name: "cluster tag alone identifies the cluster", tags: map[string]string{
			"kubernetes.io/cluster/" + cluster: "owned", "karpenter.sh/nodepool": "default"}, age: time.Minute, want: true},
		{name: "EKS cluster-name tag alone identifies the cluster", tags: map[string]string{
			"eks:eks-cluster-name": cluster, "karpenter.sh/nodepool": "default"}, age: time.Minute, want: true},
		{name: "instance of another cluster is kept", tags: map[string]string{
			"kubernetes.io/cluster/other": "owned", "eks:eks-cluster-name": "other", "karpenter.sh/nodepool": "default"}, age: time.Minute},
		{name: "cluster name that only shares a prefix is kept", tags: map[string]string{
			"kubernetes.io/cluster/" + cluster + "-prod": "owned", "eks:eks-cluster-name": cluster + "-prod", "karpenter.sh/nodepool": "default"}, age: time.Minute},
		{name: "cluster instance without a nodepool tag is kept", tags: map[string]string{
			"kubernetes.io/cluster/" + cluster: "owned", "eks:eks-cluster-name": cluster}, age: time.Minute},
		{name: "untagged instance is kept", age: time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			id := w.launch(t, tt.tags)
			w.clk.Step(tt.age)
			known := func(got string) bool { return tt.known && got == id }
			terminated, err := Collect(context.Background(), w.aws, cluster, known, w.clk.Now(), grace)
			if err != nil {
				t.Fatal(err)
			}
			if got := slices.Contains(terminated, id); got != tt.want {
				t.Fatalf("terminated = %v, want instance terminated = %v", terminated, tt.want)
			}
			info, ok := w.aws.Instance(id)
			if !ok {
				t.Fatalf("instance %s vanished", id)
			}
			dying := info.State == fake.StateShuttingDown || info.State == fake.StateTerminated
			if dying != tt.want {
				t.Fatalf("instance state %s, want terminated = %v", info.State, tt.want)
			}
		})
	}
}

func TestCollectSortsAndSkipsDying(t *testing.T) {
	w := newWorld(t)
	var leakedIDs []string
	for range 4 {
		leakedIDs = append(leakedIDs, w.launch(t, owned(nil)))
	}
	keep := w.launch(t, owned(nil))
	w.clk.Step(time.Minute)
	known := func(id string) bool { return id == keep }
	got, err := Collect(context.Background(), w.aws, cluster, known, w.clk.Now(), DefaultGrace)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(leakedIDs)
	if !slices.Equal(got, leakedIDs) {
		t.Fatalf("terminated %v, want %v", got, leakedIDs)
	}
	// A second pass finds them shutting down and leaves them alone.
	w.aws.ResetCalls()
	again, err := Collect(context.Background(), w.aws, cluster, known, w.clk.Now(), DefaultGrace)
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != 0 || w.aws.Calls("TerminateInstances") != 0 {
		t.Fatalf("second pass terminated %v (%d calls), want nothing", again, w.aws.Calls("TerminateInstances"))
	}
}

func TestCollectErrors(t *testing.T) {
	tests := []struct {
		name   string
		inject func(f *fake.AWS)
	}{
		{name: "DescribeInstances throttled", inject: func(f *fake.AWS) { f.Throttle("DescribeInstances", 1) }},
		{name: "DescribeInstances server error", inject: func(f *fake.AWS) {
			f.InjectError("DescribeInstances", fake.APIError("InternalError", "An internal error has occurred"), 1)
		}},
		{name: "TerminateInstances denied", inject: func(f *fake.AWS) { f.DenyAction("ec2:TerminateInstances") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			id := w.launch(t, owned(nil))
			w.clk.Step(time.Minute)
			tt.inject(w.aws)
			got, err := Collect(context.Background(), w.aws, cluster, func(string) bool { return false }, w.clk.Now(), DefaultGrace)
			if err == nil {
				t.Fatalf("Collect returned %v and no error", got)
			}
			if len(got) != 0 {
				t.Fatalf("Collect reported %v terminated despite the error", got)
			}
			if info, _ := w.aws.Instance(id); info.State != fake.StateRunning && info.State != fake.StatePending {
				t.Fatalf("instance state %s after a failed pass, want it untouched", info.State)
			}
		})
	}
}

func TestCollectNeedsClusterName(t *testing.T) {
	w := newWorld(t)
	if _, err := Collect(context.Background(), w.aws, "", func(string) bool { return false }, t0, DefaultGrace); err == nil {
		t.Fatal("Collect with an empty cluster name succeeded")
	}
}
