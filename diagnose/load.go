package diagnose

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/cloud"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/sdk"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/settings"
	"github.com/stevedore-autoscaler/stevedore/cloud/offerings"
	"github.com/stevedore-autoscaler/stevedore/controllers/provisioning"
	"github.com/stevedore-autoscaler/stevedore/explain"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/state"
)

// ControllerLabel is the label the Helm chart puts on the controller's pods
// (app.kubernetes.io/name), by which Load finds them.
const ControllerLabel = "app.kubernetes.io/name"

// Source says where a World comes from.
type Source struct {
	// Reader lists the cluster's objects: a client of a live API server,
	// or the simulator's in-memory one. Only Get and List are called.
	Reader client.Reader
	// AWS are the clients the checks read through; missing ones are
	// reported as not checked. AWSError says why AWS is not available.
	AWS      sdk.Clients
	AWSError error
	// Settings are the controller's settings. An empty ClusterName or
	// InterruptionQueue is taken from the controller pod's environment
	// (CLUSTER_NAME, INTERRUPTION_QUEUE), as the Helm chart sets it.
	Settings settings.Settings
	Region   string
	// Now is the moment diagnosed.
	Now time.Time
	// Controller names the controller's service account; when empty it is
	// found from the controller's pods (label app.kubernetes.io/name=stevedore).
	Controller types.NamespacedName
	// Cloud lists instance types for the NodePools. Nil means the AWS
	// provider over AWS, or the embedded EC2 catalog when AWS cannot list
	// them.
	Cloud cloud.CloudProvider
	// Explain overrides the decision options read from the controller's
	// environment (FEATURE_GATES, PREFERENCE_POLICY).
	Explain *explain.Options
	// Thresholds default to DefaultThresholds.
	Thresholds *Thresholds
}

// Load lists the cluster through src.Reader into a snapshot, finds the
// controller's deployment and settings, and works out which NodePools may
// launch, as the provisioner would.
func Load(ctx context.Context, src Source) (*World, error) {
	if src.Reader == nil {
		return nil, errors.New("diagnose: no cluster reader")
	}
	w := &World{AWS: src.AWS, Settings: src.Settings, Region: src.Region, Thresholds: DefaultThresholds()}
	if src.AWSError != nil {
		w.AWSError = src.AWSError.Error()
	}
	if src.Thresholds != nil {
		w.Thresholds = *src.Thresholds
	}
	st := state.NewCluster()
	pods, err := list(ctx, w, src.Reader, st)
	if err != nil {
		return nil, err
	}
	w.findController(ctx, src, pods)
	if src.Explain != nil {
		w.Explain = *src.Explain
	}
	cm := &corev1.ConfigMap{}
	switch err := src.Reader.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "aws-auth"}, cm); {
	case err == nil:
		w.AWSAuth = cm
	case !apierrors.IsNotFound(err):
		w.Notes = append(w.Notes, "kube-system/aws-auth could not be read ("+err.Error()+"); node-role-access judges by access entries only")
	}

	w.Snapshot = st.Snapshot(src.Now)
	cp := src.Cloud
	catalogNote := ""
	if cp == nil {
		cp, catalogNote = w.defaultCloud()
	}
	pools, skipped := provisioning.LaunchablePools(ctx, cp, w.Snapshot)
	if src.Cloud == nil && catalogNote == "" && allFailed(skipped, len(pools)) {
		why := skipped[0].Message
		cp = catalogCloud(w.Snapshot)
		pools, skipped = provisioning.LaunchablePools(ctx, cp, w.Snapshot)
		catalogNote = "instance types could not be listed from AWS (" + why + "); the embedded EC2 catalog (us-east-1 on-demand prices, every type in every zone) stands in for them"
	}
	if catalogNote != "" {
		w.Notes = append(w.Notes, catalogNote)
	}
	w.Pools = pools
	for _, s := range skipped {
		w.Skipped = append(w.Skipped, explain.Skip{NodePool: s.NodePool.Name, Reason: s.Reason, Message: s.Message})
	}
	w.RepairPolicies = cp.RepairPolicies()
	return w, nil
}

// list reads every kind the state holds into st and returns the pods.
func list(ctx context.Context, w *World, r client.Reader, st *state.Cluster) ([]*corev1.Pod, error) {
	need := func(what string, err error) error {
		if err == nil {
			return nil
		}
		if meta.IsNoMatchError(err) {
			return fmt.Errorf("listing %s: the CRD is not installed (stevedore crds | kubectl apply --server-side -f -): %w", what, err)
		}
		return fmt.Errorf("listing %s: %w", what, err)
	}
	optional := func(what string, err error) {
		if err != nil {
			w.Notes = append(w.Notes, fmt.Sprintf("%s could not be listed (%v); decisions that depend on them may differ from the controller's", what, err))
		}
	}

	var nodePools karpv1.NodePoolList
	if err := need("NodePools", r.List(ctx, &nodePools)); err != nil {
		return nil, err
	}
	for i := range nodePools.Items {
		st.UpdateNodePool(&nodePools.Items[i])
	}
	var classes awsv1.EC2NodeClassList
	if err := need("EC2NodeClasses", r.List(ctx, &classes)); err != nil {
		return nil, err
	}
	for i := range classes.Items {
		st.UpdateEC2NodeClass(&classes.Items[i])
	}
	var claims karpv1.NodeClaimList
	if err := need("NodeClaims", r.List(ctx, &claims)); err != nil {
		return nil, err
	}
	for i := range claims.Items {
		st.UpdateNodeClaim(&claims.Items[i])
	}
	var nodes corev1.NodeList
	if err := need("Nodes", r.List(ctx, &nodes)); err != nil {
		return nil, err
	}
	for i := range nodes.Items {
		st.UpdateNode(&nodes.Items[i])
	}
	var podList corev1.PodList
	if err := need("Pods", r.List(ctx, &podList)); err != nil {
		return nil, err
	}
	pods := make([]*corev1.Pod, 0, len(podList.Items))
	for i := range podList.Items {
		st.UpdatePod(&podList.Items[i])
		pods = append(pods, &podList.Items[i])
	}

	var daemonSets appsv1.DaemonSetList
	if err := r.List(ctx, &daemonSets); err == nil {
		for i := range daemonSets.Items {
			st.UpdateDaemonSet(&daemonSets.Items[i])
		}
	} else {
		optional("DaemonSets", err)
	}
	var limitRanges corev1.LimitRangeList
	if err := r.List(ctx, &limitRanges); err == nil {
		for i := range limitRanges.Items {
			st.UpdateLimitRange(&limitRanges.Items[i])
		}
	} else {
		optional("LimitRanges", err)
	}
	var pdbs policyv1.PodDisruptionBudgetList
	if err := r.List(ctx, &pdbs); err == nil {
		for i := range pdbs.Items {
			st.UpdatePodDisruptionBudget(&pdbs.Items[i])
		}
	} else {
		optional("PodDisruptionBudgets", err)
	}
	var namespaces corev1.NamespaceList
	if err := r.List(ctx, &namespaces); err == nil {
		for i := range namespaces.Items {
			st.UpdateNamespace(&namespaces.Items[i])
		}
	} else {
		optional("Namespaces", err)
	}
	var pvs corev1.PersistentVolumeList
	if err := r.List(ctx, &pvs); err == nil {
		for i := range pvs.Items {
			st.UpdatePersistentVolume(&pvs.Items[i])
		}
	} else {
		optional("PersistentVolumes", err)
	}
	var pvcs corev1.PersistentVolumeClaimList
	if err := r.List(ctx, &pvcs); err == nil {
		for i := range pvcs.Items {
			st.UpdatePersistentVolumeClaim(&pvcs.Items[i])
		}
	} else {
		optional("PersistentVolumeClaims", err)
	}
	return pods, nil
}

// findController finds the controller's pods and service account, and fills
// the settings the caller left empty from the controller's environment.
func (w *World) findController(ctx context.Context, src Source, pods []*corev1.Pod) {
	var mine []*corev1.Pod
	for _, p := range pods {
		if p.Labels[ControllerLabel] != "stevedore" || p.DeletionTimestamp != nil {
			continue
		}
		if src.Controller.Name != "" && (p.Namespace != src.Controller.Namespace || serviceAccountOf(p) != src.Controller.Name) {
			continue
		}
		mine = append(mine, p)
	}
	slices.SortFunc(mine, func(a, b *corev1.Pod) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	c := Controller{Namespace: src.Controller.Namespace, ServiceAccountName: src.Controller.Name, Pods: mine}
	if c.ServiceAccountName == "" && len(mine) > 0 {
		c.Namespace, c.ServiceAccountName = mine[0].Namespace, serviceAccountOf(mine[0])
	}
	if c.ServiceAccountName != "" {
		sa := &corev1.ServiceAccount{}
		switch err := src.Reader.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.ServiceAccountName}, sa); {
		case err == nil:
			c.ServiceAccount = sa
		case !apierrors.IsNotFound(err):
			w.Notes = append(w.Notes, fmt.Sprintf("service account %s/%s could not be read: %v", c.Namespace, c.ServiceAccountName, err))
		}
	}
	w.Controller = c

	env := map[string]string{}
	for _, p := range mine {
		for _, ctr := range p.Spec.Containers {
			for _, e := range ctr.Env {
				if _, seen := env[e.Name]; !seen && e.ValueFrom == nil {
					env[e.Name] = e.Value
				}
			}
		}
	}
	if w.Settings.ClusterName == "" {
		w.Settings.ClusterName = env[settings.EnvVar(settings.FlagClusterName)]
	}
	if w.Settings.InterruptionQueue == "" {
		w.Settings.InterruptionQueue = env[settings.EnvVar(settings.FlagInterruptionQueue)]
	}
	if v := env["PREFERENCE_POLICY"]; v != "" {
		w.Explain.PreferencePolicy = packer.PreferencePolicy(v)
	}
	if v := env["MIN_VALUES_POLICY"]; v != "" {
		w.Explain.MinValuesPolicy = packer.MinValuesPolicy(v)
	}
	for _, gate := range strings.Split(env["FEATURE_GATES"], ",") {
		if k, v, ok := strings.Cut(strings.TrimSpace(gate), "="); ok && k == "SpotToSpotConsolidation" {
			w.Explain.SpotToSpot = v == "true"
		}
	}
}

func serviceAccountOf(p *corev1.Pod) string {
	if p.Spec.ServiceAccountName == "" {
		return "default"
	}
	return p.Spec.ServiceAccountName
}

// defaultCloud is the AWS provider over w's clients, or, when AWS cannot
// describe instance types, the embedded catalog and a note saying so.
func (w *World) defaultCloud() (cloud.CloudProvider, string) {
	why := ""
	switch {
	case w.AWS.EC2 == nil:
		why = w.awsMissing("EC2")
	case w.Settings.ClusterName == "":
		why = "the cluster name is not known"
	}
	if why == "" {
		classes := w.Snapshot.NodeClasses
		p, err := aws.New(aws.Options{
			Clients:  w.AWS,
			Settings: w.Settings,
			Clock:    fixedClock(w.Snapshot.Time),
			NodeClass: func(_ context.Context, name string) (*awsv1.EC2NodeClass, error) {
				for _, c := range classes {
					if c.Name == name {
						return c, nil
					}
				}
				return nil, nil
			},
			Region: w.Region,
		})
		if err == nil {
			return p, ""
		}
		why = err.Error()
	}
	return catalogCloud(w.Snapshot), "instance types and prices come from the embedded EC2 catalog (us-east-1 on-demand prices, every type in every zone) because " + why
}

// allFailed reports whether every NodePool that reached the instance-type
// listing failed it, so that a wholesale AWS failure (credentials, region)
// does not read as every NodePool being broken.
func allFailed(skipped []provisioning.Skip, launchable int) bool {
	if launchable > 0 {
		return false
	}
	failed := 0
	for _, s := range skipped {
		if s.Reason == provisioning.ReasonInstanceTypesFailed && s.Err != nil {
			failed++
		}
	}
	return failed > 0 && failed == len(skipped)
}

// fixedClock is a clock stopped at one moment: the diagnosis is of that
// moment, and the provider's caches must not expire midway.
type fixedClock time.Time

func (c fixedClock) Now() time.Time                  { return time.Time(c) }
func (c fixedClock) Since(t time.Time) time.Duration { return time.Time(c).Sub(t) }

// catalog is a cloud provider that only lists instance types, from the
// embedded EC2 catalog, offered in the zones of the node classes' subnets.
type catalog struct {
	zones []string
}

func catalogCloud(snap state.Snapshot) cloud.CloudProvider {
	var zones []string
	for _, nc := range snap.NodeClasses {
		for _, s := range nc.Status.Subnets {
			if s.Zone != "" && !slices.Contains(zones, s.Zone) {
				zones = append(zones, s.Zone)
			}
		}
	}
	slices.Sort(zones)
	return &catalog{zones: zones}
}

var errCatalogReadOnly = errors.New("the embedded catalog only lists instance types")

func (c *catalog) Create(context.Context, *karpv1.NodeClaim) (*karpv1.NodeClaim, error) {
	return nil, errCatalogReadOnly
}
func (c *catalog) Delete(context.Context, *karpv1.NodeClaim) error { return errCatalogReadOnly }
func (c *catalog) Get(context.Context, string) (*karpv1.NodeClaim, error) {
	return nil, errCatalogReadOnly
}
func (c *catalog) List(context.Context) ([]*karpv1.NodeClaim, error) { return nil, nil }
func (c *catalog) GetInstanceTypes(_ context.Context, _ *karpv1.NodePool) ([]*packer.InstanceType, error) {
	return offerings.Catalog(offerings.Options{Zones: c.zones})
}
func (c *catalog) IsDrifted(context.Context, *karpv1.NodeClaim) (cloud.DriftReason, error) {
	return "", nil
}
func (c *catalog) RepairPolicies() []cloud.RepairPolicy { return nil }
func (c *catalog) Name() string                         { return "catalog" }
func (c *catalog) GetSupportedNodeClasses() []schema.GroupVersionKind {
	return []schema.GroupVersionKind{awsv1.GroupVersion.WithKind("EC2NodeClass")}
}
