//go:build e2e

package e2e

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/catalog"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/drift"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/controllers/nodepool/hash"
	"github.com/stevedore-autoscaler/stevedore/test/e2e/cluster"
)

// Karpenter v1.14's hash versions, as it leaves them on NodePools,
// EC2NodeClasses and NodeClaims. Both hashes are Karpenter's own algorithms
// in stevedore too, under the same versions, so the hashes Karpenter leaves
// are what stevedore computes for the stored objects (which name the test's
// own pool and class, so the values differ from run to run).
const (
	karpenterNodePoolHashVersion  = "v3"
	karpenterNodeClassHashVersion = "v5"
	// karpenterProfileHash stands for the hash in the name of the instance
	// profile Karpenter created for the node class.
	karpenterProfileHash = "12239840453578113463"
)

// adoptedClaimYAML is a NodeClaim as Karpenter v1.14 leaves it once its
// node has joined: named <pool>-<suffix>, owned by its NodePool, with the
// termination finalizer, the NodePool's requirements plus the one launched
// instance type, the resolved labels of the instance, and the hash
// annotations of Karpenter's hash versions. Its status is written apart
// (the status subresource ignores it on create).
const adoptedClaimYAML = `apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: {{.Name}}
  finalizers: [karpenter.sh/termination]
  ownerReferences:
    - {apiVersion: karpenter.sh/v1, kind: NodePool, name: {{.Pool}}, uid: {{.PoolUID}}, blockOwnerDeletion: true}
  annotations:
    karpenter.sh/nodepool-hash: "{{.PoolHash}}"
    karpenter.sh/nodepool-hash-version: ` + karpenterNodePoolHashVersion + `
    karpenter.k8s.aws/ec2nodeclass-hash: "{{.ClassHash}}"
    karpenter.k8s.aws/ec2nodeclass-hash-version: ` + karpenterNodeClassHashVersion + `
    karpenter.k8s.aws/tagged: "true"
spec:
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: {{.Pool}}}
  expireAfter: 720h
  requirements:
    - {key: karpenter.sh/nodepool, operator: In, values: [{{.Pool}}]}
    - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
    - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
    - {key: karpenter.k8s.aws/instance-generation, operator: Gt, values: ["5"]}
    - {key: node.kubernetes.io/instance-type, operator: In, values: [{{.InstanceType}}]}
  resources:
    requests: {cpu: 500m, memory: 1Gi, pods: "1"}
`

type adoptedClaim struct {
	Name, Pool, PoolUID, PoolHash, ClassHash, InstanceType string
}

// karpenterLeftovers is what a running Karpenter leaves behind for one
// node: the NodeClaim, its Node, its instance.
type karpenterLeftovers struct {
	claim    *karpv1.NodeClaim
	node     *corev1.Node
	instance string
}

// launchAsKarpenter launches an instance in the account as Karpenter
// v1.14 would have for a NodeClaim of the pool (with its ownership tags),
// then creates the NodeClaim in the state Karpenter leaves a working node
// in (Launched, Registered, Initialized, Ready) and the Node, registered and
// initialized (Karpenter's labels, its termination finalizer, owned by the
// NodeClaim, no unregistered taint), for kwok to play. The Node is created
// before the instance has booted, so the account's kubelet finds it
// registered already.
func launchAsKarpenter(t *testing.T, acc *servedAccount, clusterName string, np *karpv1.NodePool, classHash, instanceType string) karpenterLeftovers {
	t.Helper()
	ctx := t.Context()
	aws := acc.AWS
	name := np.Name + "-" + suffix()[:5]
	subnets, err := aws.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{
		{Name: ptrTo("tag:karpenter.sh/discovery"), Values: []string{clusterName}},
	}})
	if err != nil || len(subnets.Subnets) == 0 {
		t.Fatalf("the account's subnets: %v (%d)", err, len(subnets.Subnets))
	}
	groups, err := aws.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{
		{Name: ptrTo("tag:karpenter.sh/discovery"), Values: []string{clusterName}},
	}})
	if err != nil || len(groups.SecurityGroups) == 0 {
		t.Fatalf("the account's security groups: %v", err)
	}
	var groupIDs []string
	for _, g := range groups.SecurityGroups {
		groupIDs = append(groupIDs, *g.GroupId)
	}
	// Karpenter names its instance profiles <cluster>_<hash>.
	profile := clusterName + "_" + karpenterProfileHash
	if _, ok := aws.InstanceProfileRoles(profile); !ok {
		if err := aws.AddInstanceProfile(profile, "KarpenterNodeRole-"+clusterName); err != nil {
			t.Fatal(err)
		}
	}
	tags := []ec2types.Tag{
		{Key: ptrTo(wellknown.TagNodePool), Value: ptrTo(np.Name)},
		{Key: ptrTo(wellknown.TagNodeClaim), Value: ptrTo(name)},
		{Key: ptrTo(wellknown.TagEC2NodeClass), Value: ptrTo(np.Name)},
		{Key: ptrTo(wellknown.TagClusterPrefix + clusterName), Value: ptrTo("owned")},
		{Key: ptrTo(wellknown.TagEKSClusterName), Value: ptrTo(clusterName)},
	}
	out, err := aws.RunInstances(ctx, &ec2.RunInstancesInput{
		MinCount: ptrTo[int32](1), MaxCount: ptrTo[int32](1),
		ImageId: ptrTo(amiOld), InstanceType: ec2types.InstanceType(instanceType),
		SubnetId: subnets.Subnets[0].SubnetId, SecurityGroupIds: groupIDs,
		IamInstanceProfile: &ec2types.IamInstanceProfileSpecification{Name: ptrTo(profile)},
		// Karpenter tags what a launch creates, which its own policy
		// (enforced by the account) requires.
		TagSpecifications: []ec2types.TagSpecification{
			{ResourceType: ec2types.ResourceTypeInstance, Tags: tags},
			{ResourceType: ec2types.ResourceTypeVolume, Tags: tags},
			{ResourceType: ec2types.ResourceTypeNetworkInterface, Tags: tags},
		},
	})
	if err != nil {
		t.Fatalf("launching an instance as Karpenter: %v", err)
	}
	id := *out.Instances[0].InstanceId
	info, ok := aws.Instance(id)
	if !ok {
		t.Fatalf("instance %s not found", id)
	}
	it, ok := catalog.Lookup(instanceType)
	if !ok {
		t.Fatalf("instance type %s is not in the catalog", instanceType)
	}

	// The labels Karpenter puts on the NodeClaim and its Node: the
	// instance type's well-known labels, the resolved offering, the pool.
	labels := maps.Clone(it.Labels)
	maps.Copy(labels, map[string]string{
		wellknown.LabelNodePool:       np.Name,
		wellknown.LabelEC2NodeClass:   np.Name,
		wellknown.LabelInstanceType:   instanceType,
		wellknown.LabelCapacityType:   wellknown.CapacityTypeOnDemand,
		wellknown.LabelTopologyZone:   info.Zone,
		wellknown.LabelTopologyRegion: aws.Region(),
		wellknown.LabelArch:           it.Arch(),
		wellknown.LabelOS:             wellknown.OSLinux,
	})
	create(t, adoptedClaimYAML, adoptedClaim{
		Name: name, Pool: np.Name, PoolUID: string(np.UID), PoolHash: np.Annotations[wellknown.AnnotationNodePoolHash],
		ClassHash: classHash, InstanceType: instanceType,
	})
	nc := &karpv1.NodeClaim{}
	if err := kube.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
		t.Fatal(err)
	}
	nc.Labels = maps.Clone(labels)
	if err := kube.Update(ctx, nc); err != nil {
		t.Fatalf("labelling NodeClaim %s: %v", name, err)
	}
	// Long since up: Initialized an hour ago.
	then := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	nc.Status = karpv1.NodeClaimStatus{
		ProviderID: "aws:///" + info.Zone + "/" + id, NodeName: info.PrivateDNSName, ImageID: amiOld,
		Capacity: it.Capacity.DeepCopy(), Allocatable: it.Allocatable.DeepCopy(),
	}
	for _, c := range []string{karpv1.ConditionTypeLaunched, karpv1.ConditionTypeRegistered, karpv1.ConditionTypeInitialized, karpv1.ConditionTypeReady} {
		nc.Status.Conditions = append(nc.Status.Conditions, metav1.Condition{
			Type: c, Status: metav1.ConditionTrue, Reason: c, LastTransitionTime: then, ObservedGeneration: nc.Generation,
		})
	}
	if err := kube.Status().Update(ctx, nc); err != nil {
		t.Fatalf("writing the status of NodeClaim %s: %v", name, err)
	}

	nodeLabels := maps.Clone(labels)
	maps.Copy(nodeLabels, map[string]string{
		wellknown.LabelHostname:    info.PrivateDNSName,
		wellknown.LabelRegistered:  "true",
		wellknown.LabelInitialized: "true",
	})
	now := metav1.Now()
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: info.PrivateDNSName, Labels: nodeLabels,
			Annotations: map[string]string{cluster.KWOKNodeAnnotation: cluster.KWOKNodeValue},
			Finalizers:  []string{wellknown.FinalizerTermination},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: karpv1.GroupVersion.String(), Kind: "NodeClaim", Name: nc.Name, UID: nc.UID, BlockOwnerDeletion: ptrTo(true),
			}},
		},
		Spec: corev1.NodeSpec{ProviderID: nc.Status.ProviderID},
		Status: corev1.NodeStatus{
			Capacity: it.Capacity.DeepCopy(), Allocatable: it.Allocatable.DeepCopy(),
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}},
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: info.PrivateIP},
				{Type: corev1.NodeInternalDNS, Address: info.PrivateDNSName},
				{Type: corev1.NodeHostName, Address: info.PrivateDNSName},
			},
			NodeInfo: corev1.NodeSystemInfo{Architecture: it.Arch(), OperatingSystem: wellknown.OSLinux},
		},
	}
	if err := kube.Create(ctx, node); err != nil {
		t.Fatalf("creating node %s: %v", node.Name, err)
	}
	if err := kube.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
		t.Fatal(err)
	}
	return karpenterLeftovers{claim: nc, node: node, instance: id}
}

func ptrTo[T any](v T) *T { return &v }

// pinnedYAML is a Deployment of one pod bound by name to a node (no
// scheduler involved), as a workload Karpenter's node already runs.
const pinnedYAML = `apiVersion: apps/v1
kind: Deployment
metadata: {name: {{.Name}}, namespace: {{.Namespace}}}
spec:
  replicas: 1
  selector: {matchLabels: {app: {{.Name}}}}
  template:
    metadata:
      labels: {app: {{.Name}}}
      annotations: {kwok.stevedore.io/stop-delay: 500ms}
    spec:
      nodeName: {{.Node}}
      terminationGracePeriodSeconds: 5
      containers:
        - name: app
          image: registry.invalid/{{.Name}}:1
          resources: {requests: {cpu: 500m, memory: 1Gi}}
`

// TestAdopt is the cut-over from a running Karpenter: the account holds
// three instances Karpenter launched (tagged as it tags them) and the
// cluster their NodeClaims and Nodes as Karpenter leaves them, with the
// hash annotations of Karpenter's hash versions on the NodePool, the
// EC2NodeClass and the NodeClaims. Two nodes run a pod each; the third is
// empty. Then stevedore starts, as it would once Karpenter's deployment is
// scaled to zero.
//
// It must take the fleet over, not replace it: for the whole observation
// the two busy NodeClaims keep their UIDs and are never deleted, drifted
// or tainted, their instances keep running, no NodeClaim is created and
// the pods stay where they are. And it must manage it: the NodePool, the
// EC2NodeClass and the NodeClaims keep the hashes Karpenter left (stevedore
// computes the same ones under the same versions), the NodePool's status
// counts the adopted nodes, and the empty node is consolidated as Karpenter
// would have (WhenEmpty after 30 s), its instance terminated.
func TestAdopt(t *testing.T) {
	ctx := t.Context()
	spec := accountSpec{Cluster: "e2e-adopt", Region: "eu-central-1", Seed: 14}
	acc := serveAccount(t, spec)
	pool := "adopt-" + suffix()

	// What Karpenter's chart and the user left: the pool and its class,
	// with Karpenter's hash annotations.
	create(t, nodePoolYAML, poolSpec{
		Name: pool, Cluster: spec.Cluster, AMI: amiOld, Discovery: spec.Cluster, CapacityType: wellknown.CapacityTypeOnDemand,
		Disruption: "    consolidationPolicy: WhenEmpty\n    consolidateAfter: 30s\n    budgets: [{nodes: \"100%\"}]",
	})
	// Should the test fail before stevedore starts, the pool goes anyway,
	// so that no later test's controller finds it.
	t.Cleanup(func() { deletePool(t, pool) })
	annotate := func(obj client.Object, hashKey, versionKey, hash, version string) {
		patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q,%q:%q}}}`, hashKey, hash, versionKey, version))
		if err := kube.Patch(ctx, obj, patch); err != nil {
			t.Fatal(err)
		}
	}
	np := &karpv1.NodePool{}
	if err := kube.Get(ctx, client.ObjectKey{Name: pool}, np); err != nil {
		t.Fatal(err)
	}
	// The NodePool as stored, defaults applied, is what Karpenter hashed.
	karpenterNodePoolHash := hash.Hash(np)
	annotate(np, wellknown.AnnotationNodePoolHash, wellknown.AnnotationNodePoolHashVersion, karpenterNodePoolHash, karpenterNodePoolHashVersion)
	class := &awsv1.EC2NodeClass{}
	if err := kube.Get(ctx, client.ObjectKey{Name: pool}, class); err != nil {
		t.Fatal(err)
	}
	// The node class hash covers the cluster CA, which Karpenter read as
	// stevedore does.
	karpenterNodeClassHash := drift.Hash(class, controllerCABundle(t))
	annotate(class, wellknown.AnnotationEC2NodeClassHash, wellknown.AnnotationEC2NodeClassHashVersion, karpenterNodeClassHash, karpenterNodeClassHashVersion)
	if err := kube.Get(ctx, client.ObjectKey{Name: pool}, np); err != nil {
		t.Fatal(err)
	}

	var busy []karpenterLeftovers
	for range 2 {
		busy = append(busy, launchAsKarpenter(t, acc, spec.Cluster, np, karpenterNodeClassHash, "m6i.large"))
	}
	empty := launchAsKarpenter(t, acc, spec.Cluster, np, karpenterNodeClassHash, "m6i.large")

	ns := newNamespace(t, "adopt")
	for i, l := range busy {
		create(t, pinnedYAML, map[string]string{"Name": fmt.Sprintf("app-%d", i), "Namespace": ns, "Node": l.node.Name})
	}
	podOf := map[string]corev1.Pod{}
	for i, l := range busy {
		p := waitRunning(t, time.Minute, ns, fmt.Sprintf("app-%d", i), 1)[0]
		if p.Spec.NodeName != l.node.Name {
			t.Fatalf("pod %s on %s, not %s", p.Name, p.Spec.NodeName, l.node.Name)
		}
		podOf[l.node.Name] = p
	}
	eventually(t, 30*time.Second, "the instances running, the Nodes Ready", func(ctx context.Context) error {
		for _, l := range append(slices.Clone(busy), empty) {
			if info, ok := acc.AWS.Instance(l.instance); !ok || info.State != fake.StateRunning {
				return fmt.Errorf("instance %s: %s", l.instance, info.State)
			}
			n := &corev1.Node{}
			if err := kube.Get(ctx, client.ObjectKey{Name: l.node.Name}, n); err != nil {
				return err
			}
			if !isNodeReady(n) {
				return fmt.Errorf("node %s not Ready", n.Name)
			}
		}
		return nil
	})

	// Karpenter is gone; stevedore takes over. When the test ends, the
	// workloads go first, then the pool, while stevedore still runs.
	startController(t, controllerOptions{name: "stevedore-adopt", account: acc.URL})
	t.Cleanup(func() {
		if err := kube.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting namespace %s: %v", ns, err)
		}
		deletePool(t, pool)
	})
	started := time.Now()

	kept := map[string]karpenterLeftovers{}
	for _, l := range busy {
		kept[l.claim.Name] = l
	}
	mon := monitor(t, 250*time.Millisecond, func(ctx context.Context, o *observation) error {
		s, err := readPool(ctx, pool)
		if err != nil {
			return err
		}
		var problems []string
		for _, nc := range s.claims {
			l, busyClaim := kept[nc.Name]
			switch {
			case nc.Name == empty.claim.Name:
			case !busyClaim:
				problems = append(problems, "new NodeClaim "+nc.Name)
			case nc.UID != l.claim.UID:
				problems = append(problems, "NodeClaim "+nc.Name+" recreated")
			case nc.DeletionTimestamp != nil:
				problems = append(problems, "NodeClaim "+nc.Name+" deleted")
			case meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeDrifted):
				problems = append(problems, "NodeClaim "+nc.Name+" drifted: "+meta.FindStatusCondition(nc.Status.Conditions, karpv1.ConditionTypeDrifted).Reason)
			case meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeDisruptionReason):
				problems = append(problems, "NodeClaim "+nc.Name+" marked for disruption")
			case !meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeInitialized):
				problems = append(problems, "NodeClaim "+nc.Name+" no longer Initialized")
			}
		}
		for name, l := range kept {
			if !slices.ContainsFunc(s.claims, func(nc karpv1.NodeClaim) bool { return nc.Name == name }) {
				problems = append(problems, "NodeClaim "+name+" gone")
			}
			i := slices.IndexFunc(s.nodes, func(n corev1.Node) bool { return n.Name == l.node.Name })
			if i < 0 {
				problems = append(problems, "node "+l.node.Name+" gone")
			} else if disrupted(&s.nodes[i]) {
				problems = append(problems, "node "+l.node.Name+" tainted or deleted")
			}
			if info, ok := acc.AWS.Instance(l.instance); !ok || info.State != fake.StateRunning {
				problems = append(problems, fmt.Sprintf("instance %s %s", l.instance, info.State))
			}
			p := &corev1.Pod{}
			want := podOf[l.node.Name]
			if err := kube.Get(ctx, client.ObjectKeyFromObject(&want), p); err != nil || p.UID != want.UID || p.DeletionTimestamp != nil || p.Spec.NodeName != l.node.Name {
				problems = append(problems, fmt.Sprintf("pod %s moved or gone (%v)", want.Name, err))
			}
		}
		// Every instance of the pool is one of the three.
		for _, id := range acc.AWS.InstanceIDs() {
			if info, ok := acc.AWS.Instance(id); ok && info.Tags[wellknown.TagNodePool] == pool && id != empty.instance && !slices.ContainsFunc(busy, func(l karpenterLeftovers) bool { return l.instance == id }) {
				problems = append(problems, "new instance "+id)
			}
		}
		o.max("problems", len(problems))
		if len(problems) > 0 {
			return errors.New(fmt.Sprint(problems))
		}
		return nil
	})

	// Managed: the hashes Karpenter left kept, the empty node consolidated
	// and its instance terminated, the pool counting the two it kept.
	if err := kube.Get(ctx, client.ObjectKey{Name: pool}, np); err != nil {
		t.Fatal(err)
	}
	if h, v := np.Annotations[wellknown.AnnotationNodePoolHash], np.Annotations[wellknown.AnnotationNodePoolHashVersion]; h != karpenterNodePoolHash || v != karpenterNodePoolHashVersion {
		t.Errorf("NodePool %s: hash %s version %s, want Karpenter's %s version %s", pool, h, v, karpenterNodePoolHash, karpenterNodePoolHashVersion)
	}
	if err := kube.Get(ctx, client.ObjectKey{Name: pool}, class); err != nil {
		t.Fatal(err)
	}
	if h, v := class.Annotations[wellknown.AnnotationEC2NodeClassHash], class.Annotations[wellknown.AnnotationEC2NodeClassHashVersion]; h != karpenterNodeClassHash || v != karpenterNodeClassHashVersion {
		t.Errorf("EC2NodeClass %s: hash %s version %s, want Karpenter's %s version %s", pool, h, v, karpenterNodeClassHash, karpenterNodeClassHashVersion)
	}
	eventually(t, 30*time.Second, "NodeClaims with the hashes Karpenter left", func(ctx context.Context) error {
		for name := range kept {
			nc := &karpv1.NodeClaim{}
			if err := kube.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
				return err
			}
			if h, v := nc.Annotations[wellknown.AnnotationNodePoolHash], nc.Annotations[wellknown.AnnotationNodePoolHashVersion]; h != karpenterNodePoolHash || v != wellknown.NodePoolHashVersion {
				return fmt.Errorf("NodeClaim %s: NodePool hash %s version %s, want %s version %s", name, h, v, karpenterNodePoolHash, wellknown.NodePoolHashVersion)
			}
			if h, v := nc.Annotations[wellknown.AnnotationEC2NodeClassHash], nc.Annotations[wellknown.AnnotationEC2NodeClassHashVersion]; h != karpenterNodeClassHash || v != wellknown.EC2NodeClassHashVersion {
				return fmt.Errorf("NodeClaim %s: EC2NodeClass hash %s version %s, want %s version %s", name, h, v, karpenterNodeClassHash, wellknown.EC2NodeClassHashVersion)
			}
		}
		return nil
	})
	eventually(t, time.Minute, "the empty adopted node consolidated", func(ctx context.Context) error {
		info, ok := acc.AWS.Instance(empty.instance)
		if ok && (info.State == fake.StatePending || info.State == fake.StateRunning) {
			return fmt.Errorf("instance %s %s", empty.instance, info.State)
		}
		evs, err := events(ctx, empty.claim.Name, "DisruptionTerminating")
		if err != nil {
			return err
		}
		if len(evs) == 0 {
			return errors.New("no DisruptionTerminating event on its NodeClaim")
		}
		t.Logf("NodeClaim %s: %s", empty.claim.Name, evs[0].Message)
		return nil
	})
	eventually(t, 30*time.Second, "the NodePool counts the two adopted nodes it kept", func(ctx context.Context) error {
		got := &karpv1.NodePool{}
		if err := kube.Get(ctx, client.ObjectKey{Name: pool}, got); err != nil {
			return err
		}
		if got.Status.Nodes != 2 {
			return fmt.Errorf("status.nodes %d", got.Status.Nodes)
		}
		return nil
	})
	// Keep watching for a while: a replacement or garbage collection would
	// show within it.
	if rest := 45*time.Second - time.Since(started); rest > 0 {
		time.Sleep(rest)
	}
	obs := mon.stop()
	t.Logf("watched the adopted fleet for %s: %s", time.Since(started).Round(time.Second), obs)
	if obs.maxs["problems"] > 0 {
		t.Errorf("stevedore disturbed the adopted fleet: %s", obs.failures())
	}
	if err := checkNoLeaks(ctx, acc.AWS, spec.Cluster, pool); err != nil {
		t.Error(err)
	}
}

// controllerCABundle is the cluster CA as the controller reads it from its
// kubeconfig, base64 encoded: the node class hash covers it.
func controllerCABundle(t *testing.T) string {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", testCluster.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	data := cfg.CAData
	if len(data) == 0 && cfg.CAFile != "" {
		if data, err = os.ReadFile(cfg.CAFile); err != nil {
			t.Fatal(err)
		}
	}
	return base64.StdEncoding.EncodeToString(data)
}
