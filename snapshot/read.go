package snapshot

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
)

// Cluster is what Read lists: every object of the kinds a simulation needs,
// cluster-wide, as the API server returned them.
type Cluster struct {
	// KubernetesVersion is the API server's minor version, such as "1.33".
	KubernetesVersion string

	NodePools            []karpv1.NodePool
	NodeClasses          []awsv1.EC2NodeClass
	NodeClaims           []karpv1.NodeClaim
	Nodes                []corev1.Node
	Pods                 []corev1.Pod
	PodDisruptionBudgets []policyv1.PodDisruptionBudget
	DaemonSets           []appsv1.DaemonSet
	StatefulSets         []appsv1.StatefulSet
	ReplicaSets          []appsv1.ReplicaSet
	Jobs                 []batchv1.Job
	PriorityClasses      []schedulingv1.PriorityClass
	// PersistentVolumeClaims and PersistentVolumes pin the pods that
	// mount them to their volumes' zones.
	PersistentVolumeClaims []corev1.PersistentVolumeClaim
	PersistentVolumes      []corev1.PersistentVolume

	// NotServed are the kinds the API server does not serve (their CRDs
	// are not installed), read as having no objects.
	NotServed []string
}

// pageSize is how many objects one list call asks for.
const pageSize = 500

// Read lists the objects of the cluster r reads, in pages. kubernetesVersion
// is the API server's minor version, which the caller reads from its
// discovery endpoint (/version). A kind the server does not serve is
// recorded in NotServed; any other failure, a refused list included, is an
// error naming the resource.
func Read(ctx context.Context, r client.Reader, kubernetesVersion string) (*Cluster, error) {
	c := &Cluster{KubernetesVersion: kubernetesVersion}
	lists := []struct {
		kind    string
		list    client.ObjectList
		collect func(client.ObjectList)
	}{
		{"NodePool", &karpv1.NodePoolList{}, func(l client.ObjectList) {
			c.NodePools = append(c.NodePools, l.(*karpv1.NodePoolList).Items...)
		}},
		{"EC2NodeClass", &awsv1.EC2NodeClassList{}, func(l client.ObjectList) {
			c.NodeClasses = append(c.NodeClasses, l.(*awsv1.EC2NodeClassList).Items...)
		}},
		{"NodeClaim", &karpv1.NodeClaimList{}, func(l client.ObjectList) {
			c.NodeClaims = append(c.NodeClaims, l.(*karpv1.NodeClaimList).Items...)
		}},
		{"Node", &corev1.NodeList{}, func(l client.ObjectList) { c.Nodes = append(c.Nodes, l.(*corev1.NodeList).Items...) }},
		{"Pod", &corev1.PodList{}, func(l client.ObjectList) { c.Pods = append(c.Pods, l.(*corev1.PodList).Items...) }},
		{"PodDisruptionBudget", &policyv1.PodDisruptionBudgetList{}, func(l client.ObjectList) {
			c.PodDisruptionBudgets = append(c.PodDisruptionBudgets, l.(*policyv1.PodDisruptionBudgetList).Items...)
		}},
		{"DaemonSet", &appsv1.DaemonSetList{}, func(l client.ObjectList) {
			c.DaemonSets = append(c.DaemonSets, l.(*appsv1.DaemonSetList).Items...)
		}},
		{"StatefulSet", &appsv1.StatefulSetList{}, func(l client.ObjectList) {
			c.StatefulSets = append(c.StatefulSets, l.(*appsv1.StatefulSetList).Items...)
		}},
		{"ReplicaSet", &appsv1.ReplicaSetList{}, func(l client.ObjectList) {
			c.ReplicaSets = append(c.ReplicaSets, l.(*appsv1.ReplicaSetList).Items...)
		}},
		{"Job", &batchv1.JobList{}, func(l client.ObjectList) { c.Jobs = append(c.Jobs, l.(*batchv1.JobList).Items...) }},
		{"PriorityClass", &schedulingv1.PriorityClassList{}, func(l client.ObjectList) {
			c.PriorityClasses = append(c.PriorityClasses, l.(*schedulingv1.PriorityClassList).Items...)
		}},
		{"PersistentVolumeClaim", &corev1.PersistentVolumeClaimList{}, func(l client.ObjectList) {
			c.PersistentVolumeClaims = append(c.PersistentVolumeClaims, l.(*corev1.PersistentVolumeClaimList).Items...)
		}},
		{"PersistentVolume", &corev1.PersistentVolumeList{}, func(l client.ObjectList) {
			c.PersistentVolumes = append(c.PersistentVolumes, l.(*corev1.PersistentVolumeList).Items...)
		}},
	}
	for _, l := range lists {
		err := listPages(ctx, r, l.list, l.collect)
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			c.NotServed = append(c.NotServed, l.kind)
			continue
		}
		if apierrors.IsForbidden(err) {
			return nil, fmt.Errorf("listing %ss: %w (the snapshot needs get and list on every kind it reads: see the ClusterRole in docs/snapshot.md)", l.kind, err)
		}
		if err != nil {
			return nil, fmt.Errorf("listing %ss: %w", l.kind, err)
		}
	}
	return c, nil
}

// listPages lists every object of list's kind, pageSize at a time, and
// calls collect after each page.
func listPages(ctx context.Context, r client.Reader, list client.ObjectList, collect func(client.ObjectList)) error {
	cont := ""
	for {
		opts := []client.ListOption{client.Limit(pageSize)}
		if cont != "" {
			opts = append(opts, client.Continue(cont))
		}
		if err := r.List(ctx, list, opts...); err != nil {
			return err
		}
		collect(list)
		if cont = list.GetContinue(); cont == "" {
			return nil
		}
	}
}
