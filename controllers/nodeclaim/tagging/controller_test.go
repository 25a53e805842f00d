package tagging

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	awsprovider "github.com/stevedore-autoscaler/stevedore/cloud/aws"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/iampolicy"
	"github.com/stevedore-autoscaler/stevedore/test/environment"
)

const clusterName = environment.ClusterName

func TestMain(m *testing.M) { environment.Main(m) }

// launch starts an instance tagged as stevedore tags a launch (plus extra)
// and returns its provider ID.
func launch(t *testing.T, f *fake.AWS, w *fake.ClusterWorld, extra map[string]string) string {
	t.Helper()
	tags := map[string]string{
		"kubernetes.io/cluster/" + clusterName: "owned",
		wellknown.TagEKSClusterName:            clusterName,
		wellknown.TagNodePool:                  "default",
		wellknown.TagEC2NodeClass:              "default",
	}
	for k, v := range extra {
		tags[k] = v
	}
	spec := ec2types.TagSpecification{ResourceType: ec2types.ResourceTypeInstance}
	for k, v := range tags {
		spec.Tags = append(spec.Tags, ec2types.Tag{Key: aws.String(k), Value: aws.String(v)})
	}
	out, err := f.RunInstances(context.Background(), &ec2.RunInstancesInput{
		MinCount: aws.Int32(1), MaxCount: aws.Int32(1), ImageId: aws.String(w.Images["al2023/x86_64/standard"]),
		InstanceType: ec2types.InstanceTypeM6iLarge, SubnetId: aws.String(w.SubnetIDs[0]),
		TagSpecifications: []ec2types.TagSpecification{spec},
	})
	if err != nil {
		t.Fatal(err)
	}
	i := out.Instances[0]
	return fmt.Sprintf("aws:///%s/%s", aws.ToString(i.Placement.AvailabilityZone), aws.ToString(i.InstanceId))
}

// claim creates a NodeClaim with the provider ID and node name, changed
// first by the functions given.
func claim(e *environment.Env, name, providerID, nodeName string, change ...func(*karpv1.NodeClaim)) {
	e.T.Helper()
	nc := environment.NewNodeClaim(name, "default", "default")
	nc.Status.ProviderID = providerID
	nc.Status.NodeName = nodeName
	for _, c := range change {
		c(nc)
	}
	e.Create(nc)
}

// TestTagsRegisteredInstances: a registered NodeClaim's instance gets Name
// (the node's name), karpenter.sh/nodeclaim and eks:eks-cluster-name, a Name
// it already has is kept, the NodeClaim is annotated as tagged, and the
// CreateTags requests pass Karpenter's policy. An unregistered NodeClaim,
// and another provider's NodeClaim, are left alone.
func TestTagsRegisteredInstances(t *testing.T) {
	e := environment.New(t, environment.Options{Seed: 5, InstanceTypes: []string{"m6i.large"}})
	ctx, f, w := e.Ctx, e.AWS, e.World
	clients, log := iampolicy.Record(f.Clients(), f.Authorization())
	r := New(e.Kube, clients.EC2, clusterName)

	plain := launch(t, f, w, nil)
	named := launch(t, f, w, map[string]string{wellknown.TagName: "from-spec-tags"})
	pending := launch(t, f, w, nil)
	foreign := launch(t, f, w, nil)
	claim(e, "tag-plain", plain, "ip-10-0-0-1.ec2.internal")
	claim(e, "tag-named", named, "ip-10-0-0-2.ec2.internal")
	claim(e, "tag-pending", pending, "")
	claim(e, "tag-kwok", foreign, "ip-10-0-0-4.ec2.internal", func(nc *karpv1.NodeClaim) { nc.Spec.NodeClassRef = environment.KWOKNodeClassRef() })

	for _, name := range []string{"tag-plain", "tag-named", "tag-pending", "tag-kwok"} {
		if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: name}}); err != nil {
			t.Fatalf("Reconcile(%s): %v", name, err)
		}
	}
	tags := func(providerID string) map[string]string {
		info, _ := f.Instance(awsprovider.InstanceID(providerID))
		return info.Tags
	}
	if got := tags(plain); got[wellknown.TagName] != "ip-10-0-0-1.ec2.internal" || got[wellknown.TagNodeClaim] != "tag-plain" || got[wellknown.TagEKSClusterName] != clusterName {
		t.Errorf("registered instance tags = %v, want Name, karpenter.sh/nodeclaim and eks:eks-cluster-name", got)
	}
	if got := tags(named); got[wellknown.TagName] != "from-spec-tags" || got[wellknown.TagNodeClaim] != "tag-named" {
		t.Errorf("instance with a Name tags = %v, want its Name kept and the NodeClaim tagged", got)
	}
	if got := tags(pending); got[wellknown.TagName] != "" || got[wellknown.TagNodeClaim] != "" {
		t.Errorf("unregistered instance was tagged: %v", got)
	}
	if got := tags(foreign); got[wellknown.TagName] != "" || got[wellknown.TagNodeClaim] != "" {
		t.Errorf("another provider's instance was tagged: %v", got)
	}
	for name, want := range map[string]string{"tag-plain": "true", "tag-named": "true", "tag-pending": "", "tag-kwok": ""} {
		nc := e.NodeClaim(name)
		if got := nc.Annotations[wellknown.AnnotationInstanceTagged]; got != want {
			t.Errorf("%s: %s = %q, want %q", name, wellknown.AnnotationInstanceTagged, got, want)
		}
	}
	calls := log.Take()
	if len(calls) != 2 {
		t.Errorf("%d CreateTags calls, want 2", len(calls))
	}
	queue := fmt.Sprintf("arn:aws:sqs:%s:%s:%s", f.Region(), f.AccountID(), w.QueueName)
	for _, d := range iampolicy.Denied(iampolicy.KarpenterReference("aws", f.Region(), f.AccountID(), clusterName, w.NodeRoleARN, queue), calls) {
		t.Errorf("karpenter policy refuses %s", d)
	}

	// Tagged NodeClaims are not looked at again.
	before := f.Calls("DescribeInstances")
	if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: "tag-plain"}}); err != nil {
		t.Fatal(err)
	}
	if f.Calls("DescribeInstances") != before {
		t.Error("a tagged NodeClaim's instance was described again")
	}
}
