package scenario

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/validation"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/sim/clock"
)

func scheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, karpv1.AddToScheme, awsv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

const manifests = `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: NodeRole
  amiFamily: AL2023
  amiSelectorTerms: [{id: ami-0123456789abcdef0}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: web, resources: {requests: {cpu: 100m}}}]
`

func write(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestDefaultsWithoutAScenario(t *testing.T) {
	dir := write(t, map[string]string{"m.yaml": manifests})
	run, problems, err := Load([]string{dir}, scheme(t))
	if err != nil {
		t.Fatalf("%v %v", err, problems)
	}
	if run.Seed != DefaultSeed || run.Duration != DefaultDuration || run.SampleEvery != DefaultSampleEvery || !run.Start.Equal(clock.DefaultStart) ||
		run.KubeAPIQPS != DefaultKubeAPIQPS || run.KubeAPIBurst != DefaultKubeAPIBurst || run.Controller.MinValuesPolicy != packer.MinValuesStrict {
		t.Errorf("defaults: %+v", run)
	}
	if run.ClusterName != "demo" {
		t.Errorf("cluster name %q, want the discovery tag's demo", run.ClusterName)
	}
	if strings.Join(run.AWS.Roles, ",") != "KarpenterNodeRole-demo,NodeRole" {
		t.Errorf("roles %v", run.AWS.Roles)
	}
	if len(run.AWS.Images) != 1 || run.AWS.Images[0].ID != "ami-0123456789abcdef0" || !run.AWS.Images[0].Auto {
		t.Errorf("images %+v", run.AWS.Images)
	}
	var kinds []string
	for _, o := range run.Objects {
		kinds = append(kinds, o.GVK.Kind+"/"+o.Object.GetName())
	}
	want := "Namespace/default,Namespace/kube-system,Namespace/shop,EC2NodeClass/default,NodePool/default,Deployment/web"
	if strings.Join(kinds, ",") != want {
		t.Errorf("objects %v, want %s", kinds, want)
	}
	np := run.Objects[4].Object.(*karpv1.NodePool)
	if np.Spec.Disruption.ConsolidateAfter.Duration == nil && np.Spec.Disruption.ConsolidationPolicy == "" {
		t.Errorf("NodePool not defaulted: %+v", np.Spec.Disruption)
	}
}

func TestScenarioIsResolved(t *testing.T) {
	dir := write(t, map[string]string{"m.yaml": manifests, "s.yaml": `apiVersion: stevedore.io/v1alpha1
kind: Scenario
metadata: {name: demo}
spec:
  seed: 7
  start: "2026-03-02T10:00:00Z"
  duration: 3h
  sampleEvery: 5m
  cluster: {name: shop, kubernetesVersion: "1.31", controllerManager: {kubeAPIQPS: 20, kubeAPIBurst: 30}}
  aws:
    zones: [us-east-1a, us-east-1b]
    interruptionQueue: shop
    accessEntries: []
    bootTime: 1m
  controller: {batch-idle-duration: 2s, feature-gates: "NodeRepair=true", min-values-policy: BestEffort}
  events:
    - {at: 1h, restartController: {}}
    - {at: 5m, scale: {kind: Deployment, namespace: shop, name: web, replicas: 10}}
    - at: 10m
      apply:
        apiVersion: v1
        kind: Pod
        metadata: {name: extra, namespace: batch}
        spec: {containers: [{name: c, image: c}]}
    - {at: 2h, insufficientCapacity: {capacityType: spot}}
`})
	run, problems, err := Load([]string{dir}, scheme(t))
	if err != nil {
		t.Fatalf("%v %v", err, problems)
	}
	if run.Name != "demo" || run.Seed != 7 || run.Duration != 3*time.Hour || run.SampleEvery != 5*time.Minute || run.ClusterName != "shop" ||
		run.KubernetesVersion != "1.31" || run.AWS.BootTime != time.Minute || run.AWS.AccessEntries == nil || len(run.AWS.AccessEntries) != 0 ||
		run.KubeAPIQPS != 20 || run.KubeAPIBurst != 30 {
		t.Errorf("run %+v", run)
	}
	if run.Controller.BatchIdle != 2*time.Second || !run.Controller.NodeRepair || run.Controller.Settings.InterruptionQueue != "shop" || run.Controller.Settings.ClusterName != "shop" ||
		run.Controller.MinValuesPolicy != packer.MinValuesBestEffort {
		t.Errorf("controller %+v", run.Controller)
	}
	var order []string
	for _, e := range run.Events {
		order = append(order, e.Kind)
	}
	if strings.Join(order, ",") != "scale,apply,restartController,insufficientCapacity" {
		t.Errorf("events in order %v", order)
	}
	if run.Events[1].Object.(*corev1.Pod).Name != "extra" || run.Events[3].For != time.Hour {
		t.Errorf("decoded events %+v", run.Events)
	}
	found := false
	for _, o := range run.Objects {
		found = found || (o.GVK.Kind == "Namespace" && o.Object.GetName() == "batch")
	}
	if !found {
		t.Error("the namespace of an applied object is not created")
	}
}

func TestBadInputIsRejectedWithFieldAndFix(t *testing.T) {
	header := "apiVersion: stevedore.io/v1alpha1\nkind: Scenario\nmetadata: {name: bad}\nspec:\n"
	for _, tc := range []struct {
		name, spec, field, msg string
	}{
		{"unknown field", "  sampleEvry: 1m\n", "spec.sampleEvry", "did you mean sampleEvery"},
		{"unknown nested field", "  aws: {bootTme: 1m}\n", "spec.aws.bootTme", "unknown field"},
		{"unknown event kind", "  events: [{at: 1m, spotInteruption: {count: 1}}]\n", "spec.events[0].spotInteruption", "did you mean spotInterruption"},
		{"bad duration", "  duration: 3 hours\n", "spec.duration", "not a duration"},
		{"bad event time", "  events: [{at: soon, restartController: {}}]\n", "spec.events[0].at", "not a duration"},
		{"event after the end", "  duration: 1h\n  events: [{at: 2h, restartController: {}}]\n", "spec.events[0].at", "after the end"},
		{"event without time", "  events: [{restartController: {}}]\n", "spec.events[0].at", "no time"},
		{"two kinds", "  events: [{at: 1m, restartController: {}, nodeFailure: {count: 1}}]\n", "spec.events[0]", "does one thing"},
		{"empty event", "  events: [{at: 1m}]\n", "spec.events[0]", "does nothing"},
		{"wrong type", "  seed: lots\n", "spec.seed", "whole number"},
		{"bad start", "  start: tomorrow\n", "spec.start", "RFC 3339"},
		{"unknown controller setting", "  controller: {batch-idle: 1s}\n", "spec.controller.batch-idle", "unknown controller setting"},
		{"setting that belongs elsewhere", "  controller: {cluster-name: x}\n", "spec.controller.cluster-name", "spec.cluster.name"},
		{"bad setting value", "  controller: {batch-idle-duration: fast}\n", "spec.controller.batch-idle-duration", "fast"},
		{"unknown feature gate", "  controller: {feature-gates: \"NodeRepiar=true\"}\n", "spec.controller.feature-gates", "did you mean NodeRepair"},
		{"unknown minValues policy", "  controller: {min-values-policy: Loose}\n", "spec.controller.min-values-policy", "Strict or BestEffort"},
		{"unknown kind", "  events: [{at: 1m, delete: {kind: Deploymint, name: web}}]\n", "spec.events[0].delete.kind", "unknown kind"},
		{"scale a DaemonSet", "  events: [{at: 1m, scale: {kind: DaemonSet, name: x, replicas: 2}}]\n", "spec.events[0].scale.kind", "cannot be scaled"},
		{"scale without replicas", "  events: [{at: 1m, scale: {kind: Deployment, name: x}}]\n", "spec.events[0].scale.replicas", "missing"},
		{"strategic patch of a CRD", "  events: [{at: 1m, patch: {kind: NodePool, name: default, type: strategic, patch: {spec: {}}}}]\n", "spec.events[0].patch.type", "merge"},
		{"JSON patch that is not a list", "  events: [{at: 1m, patch: {kind: NodePool, name: default, type: json, patch: {spec: {}}}}]\n", "spec.events[0].patch.patch", "list of operations"},
		{"bad image family", "  events: [{at: 1m, releaseImage: {alias: ubuntu}}]\n", "spec.events[0].releaseImage.alias", "not an alias family"},
		{"bad capacity type", "  events: [{at: 1m, insufficientCapacity: {capacityType: reserved-ish}}]\n", "spec.events[0].insufficientCapacity.capacityType", "not a capacity type"},
		{"invalid applied NodePool", "  events:\n    - at: 1m\n      apply: {apiVersion: karpenter.sh/v1, kind: NodePool, metadata: {name: x}, spec: {template: {spec: {nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}, requirements: []}}, weight: 1000}}\n", "spec.events[0].apply.spec.weight", ""},
		{"bad image ID", "  aws: {images: [{id: image-1}]}\n", "spec.aws.images[0].id", "not an AMI ID"},
		{"no requests a second", "  cluster: {controllerManager: {kubeAPIQPS: 0}}\n", "spec.cluster.controllerManager.kubeAPIQPS", "positive number"},
		{"negative requests a second", "  cluster: {controllerManager: {kubeAPIQPS: -5}}\n", "spec.cluster.controllerManager.kubeAPIQPS", "--kube-api-qps"},
		{"requests a second as a word", "  cluster: {controllerManager: {kubeAPIQPS: fast}}\n", "spec.cluster.controllerManager.kubeAPIQPS", "a number"},
		{"no burst", "  cluster: {controllerManager: {kubeAPIBurst: 0}}\n", "spec.cluster.controllerManager.kubeAPIBurst", "at least 1"},
		{"fractional burst", "  cluster: {controllerManager: {kubeAPIBurst: 2.5}}\n", "spec.cluster.controllerManager.kubeAPIBurst", "whole number"},
		{"misspelt setting", "  cluster: {controllerManager: {kubeApiQps: 50}}\n", "spec.cluster.controllerManager.kubeApiQps", "kubeAPIQPS"},
		{"run too long", "  duration: 24000h\n", "spec.duration", "720h"},
		{"samples too fine", "  sampleEvery: 1ns\n", "spec.sampleEvery", "finest resolution"},
		{"too many samples", "  duration: 720h\n  sampleEvery: 10s\n", "spec.sampleEvery", "sample every 26s or more"},
		{"start out of range", "  start: \"9999-12-31T00:00:00Z\"\n", "spec.start", "between the years"},
		{"scale too far", "  events: [{at: 1m, scale: {kind: Deployment, namespace: shop, name: web, replicas: 2147483647}}]\n", "spec.events[0].scale.replicas", "at most 100000"},
		{"patch too far", "  events: [{at: 1m, patch: {kind: Deployment, namespace: shop, name: web, patch: {spec: {replicas: 1e12}}}}]\n", "spec.events[0].patch.patch.spec.replicas", "more than one workload"},
		{"JSON patch too far", "  events: [{at: 1m, patch: {kind: Deployment, namespace: shop, name: web, type: json, patch: [{op: replace, path: /spec/replicas, value: 150000}]}}]\n", "spec.events[0].patch.patch[0].value", "more than one workload"},
		{"too many pods together", "  events:\n    - {at: 1m, scale: {kind: Deployment, namespace: shop, name: web, replicas: 100000}}\n    - {at: 1m, scale: {kind: StatefulSet, namespace: shop, name: db, replicas: 100000}}\n    - {at: 2m, scale: {kind: Deployment, name: web, replicas: 10}}\n", "spec.events[0].scale.replicas", "200010 pods together"},
		{"too many nodes picked", "  events: [{at: 1m, nodeFailure: {count: 1000000}}]\n", "spec.events[0].nodeFailure.count", "more than an event picks"},
		{"failure of Ready", "  events: [{at: 1m, nodeFailure: {count: 1, condition: Ready}}]\n", "spec.events[0].nodeFailure.condition", "leave condition out"},
		{"failure of a bad condition", "  events: [{at: 1m, nodeFailure: {count: 1, condition: storage-ready}}]\n", "spec.events[0].nodeFailure.condition", "not a node condition type"},
		{"negative event time", "  events: [{at: -5m, restartController: {}}]\n", "spec.events[0].at", "positive"},
		{"too many free addresses", "  aws: {subnets: [{zone: us-east-1a, freeIPs: 10000000}]}\n", "spec.aws.subnets[0].freeIPs", "/16"},
		{"negative free addresses", "  aws: {subnets: [{zone: us-east-1a, freeIPs: -1}]}\n", "spec.aws.subnets[0].freeIPs", "outside 0"},
		{"boot takes days", "  aws: {bootTime: 48h}\n", "spec.aws.bootTime", "at most 24h"},
		{"ready takes days", "  aws: {readyTime: 100h}\n", "spec.aws.readyTime", "at most 24h"},
		{"pods start in days", "  cluster: {podStartTime: 25h}\n", "spec.cluster.podStartTime", "at most 24h"},
		{"requests a second beyond reason", "  cluster: {controllerManager: {kubeAPIQPS: 1e300}}\n", "spec.cluster.controllerManager.kubeAPIQPS", "outside"},
		{"requests a second too few", "  cluster: {controllerManager: {kubeAPIQPS: 1e-300}}\n", "spec.cluster.controllerManager.kubeAPIQPS", "outside"},
		{"burst beyond reason", "  cluster: {controllerManager: {kubeAPIBurst: 2000000000}}\n", "spec.cluster.controllerManager.kubeAPIBurst", "more than"},
		{"unknown type in the account", "  aws: {instanceTypes: [m6i.large, m6i.xlarg]}\n", "spec.aws.instanceTypes[1]", "did you mean m6i.xlarge?"},
		{"capacity of an unknown type", "  events: [{at: 1m, insufficientCapacity: {instanceTypes: [m6i.large, m6i.lrage]}}]\n", "spec.events[0].insufficientCapacity.instanceTypes[1]", "did you mean m6i.large?"},
		{"capacity of a type outside the account", "  aws: {instanceTypes: [m6i.large, c6i.large]}\n  events: [{at: 1m, insufficientCapacity: {instanceTypes: [m5.large]}}]\n", "spec.events[0].insufficientCapacity.instanceTypes[0]", "add it to spec.aws.instanceTypes"},
		{"capacity in an unknown zone", "  aws: {zones: [us-east-1a, us-east-1b]}\n  events: [{at: 1m, insufficientCapacity: {zones: [us-east-1c]}}]\n", "spec.events[0].insufficientCapacity.zones[0]", "use one of us-east-1a, us-east-1b"},
		{"capacity in a misspelt zone", "  events: [{at: 1m, insufficientCapacity: {zones: [us-east1a]}}]\n", "spec.events[0].insufficientCapacity.zones[0]", "did you mean us-east-1a?"},
		{"interruption in an unknown zone", "  events: [{at: 1m, spotInterruption: {nodeSelector: {topology.kubernetes.io/zone: eu-west-1a}}}]\n", "spec.events[0].spotInterruption.nodeSelector.topology.kubernetes.io/zone", "not one of the account's zones"},
		{"failure of an unknown type", "  events: [{at: 1m, nodeFailure: {nodeSelector: {node.kubernetes.io/instance-type: m6i.largee}}}]\n", "spec.events[0].nodeFailure.nodeSelector.node.kubernetes.io/instance-type", "did you mean m6i.large?"},
		{"fault of an unknown operation", "  events: [{at: 1m, awsFault: {operations: [CreateFleet, DescribeInstance], error: throttling, times: 1}}]\n", "spec.events[0].awsFault.operations[1]", "did you mean DescribeInstances?"},
		{"fault without operations", "  events: [{at: 1m, awsFault: {error: throttling, times: 1}}]\n", "spec.events[0].awsFault.operations", "no operations"},
		{"fault of an operation twice", "  events: [{at: 1m, awsFault: {operations: [CreateFleet, CreateFleet], error: throttling, times: 1}}]\n", "spec.events[0].awsFault.operations[1]", "listed twice"},
		{"fault without error", "  events: [{at: 1m, awsFault: {operations: [CreateFleet], times: 1}}]\n", "spec.events[0].awsFault.error", "no error"},
		{"misspelt fault", "  events: [{at: 1m, awsFault: {operations: [CreateFleet], error: throtling, times: 1}}]\n", "spec.events[0].awsFault.error", "did you mean throttling?"},
		{"fault with times and for", "  events: [{at: 1m, awsFault: {operations: [CreateFleet], error: throttling, times: 1, for: 1m}}]\n", "spec.events[0].awsFault", "not both"},
		{"fault without times or for", "  events: [{at: 1m, awsFault: {operations: [CreateFleet], error: throttling}}]\n", "spec.events[0].awsFault", "neither"},
		{"fault of negative times", "  events: [{at: 1m, awsFault: {operations: [CreateFleet], error: throttling, times: -1}}]\n", "spec.events[0].awsFault.times", "outside 1"},
		{"fault of too many times", "  events: [{at: 1m, awsFault: {operations: [CreateFleet], error: throttling, times: 100000000}}]\n", "spec.events[0].awsFault.times", "outside 1"},
		{"fault window not a duration", "  events: [{at: 1m, awsFault: {operations: [CreateFleet], error: throttling, for: ages}}]\n", "spec.events[0].awsFault.for", "not a duration"},
		{"fault window of nothing", "  events: [{at: 1m, awsFault: {operations: [CreateFleet], error: throttling, for: 0s}}]\n", "spec.events[0].awsFault.for", "positive"},
		{"misspelt fault field", "  events: [{at: 1m, awsFault: {operations: [CreateFleet], error: throttling, time: 3}}]\n", "spec.events[0].awsFault.time", "did you mean times?"},
		{"subnet outside the zones", "  aws: {zones: [us-east-1a], subnets: [{zone: us-east-1c}]}\n", "spec.aws.subnets[0].zone", "not one of the account's zones"},
		{"reservation outside the zones", "  aws: {capacityReservations: [{instanceType: m6i.large, zone: eu-west-1a, count: 1}]}\n", "spec.aws.capacityReservations[0].zone", "not one of the account's zones"},
		{"empty reservation", "  aws: {capacityReservations: [{instanceType: m6i.large, zone: us-east-1a}]}\n", "spec.aws.capacityReservations[0].count", "at least 1"},
		{"reservation without a type", "  aws: {capacityReservations: [{zone: us-east-1a, count: 1}]}\n", "spec.aws.capacityReservations[0].instanceType", "no instance type"},
		{"bad reservation ID", "  aws: {capacityReservations: [{id: odcr-1, instanceType: m6i.large, zone: us-east-1a, count: 1}]}\n", "spec.aws.capacityReservations[0].id", "17 hex digits"},
		{"reservation listed twice", "  aws: {capacityReservations: [{id: cr-0a1b2c3d4e5f60718, instanceType: m6i.large, zone: us-east-1a, count: 1}, {id: cr-0a1b2c3d4e5f60718, instanceType: m6i.large, zone: us-east-1b, count: 1}]}\n", "spec.aws.capacityReservations[1].id", "listed twice"},
		{"bad reservation type", "  aws: {capacityReservations: [{instanceType: m6i.large, zone: us-east-1a, count: 1, type: spot}]}\n", "spec.aws.capacityReservations[0].type", "default or capacity-block"},
		{"bad match criteria", "  aws: {capacityReservations: [{instanceType: m6i.large, zone: us-east-1a, count: 1, instanceMatchCriteria: any}]}\n", "spec.aws.capacityReservations[0].instanceMatchCriteria", "targeted or open"},
		{"capacity block without an end", "  aws: {capacityReservations: [{instanceType: p5.48xlarge, zone: us-east-1a, count: 1, type: capacity-block}]}\n", "spec.aws.capacityReservations[0].end", "when it ends"},
		{"zonal shift without a zone", "  events: [{at: 1m, zonalShift: {for: 10m}}]\n", "spec.events[0].zonalShift.zone", "missing"},
		{"zonal shift of an unknown zone", "  events: [{at: 1m, zonalShift: {zone: mars-1a}}]\n", "spec.events[0].zonalShift.zone", "mars-1a"},
		{"zonal shift too long", "  duration: 100h\n  events: [{at: 1m, zonalShift: {zone: us-east-1a, for: 73h}}]\n", "spec.events[0].zonalShift.for", "at most 72h"},
		{"reserved capacity gate not a bool", "  controller: {feature-gates: \"ReservedCapacity=maybe\"}\n", "spec.controller.feature-gates", "not true or false"},
		{"a list where an object goes, in the second event", "  events: [{at: 1m, restartController: {}}, {at: 2m, apply: [a, b]}]\n", "spec.events[1].apply", "found an array"},
		{"no instance types", "  aws: {instanceTypes: []}\n", "spec.aws.instanceTypes", "names no instance type"},
		{"no zones", "  aws: {zones: []}\n", "spec.aws.zones", "names no zone"},
		{"samples sparser than the run", "  duration: 10m\n  sampleEvery: 1h\n", "spec.sampleEvery", "longer than the run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := write(t, map[string]string{"m.yaml": manifests, "s.yaml": header + tc.spec})
			_, problems, err := Load([]string{dir}, scheme(t))
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v, want ErrInvalid", err)
			}
			for _, p := range problems {
				if p.Field == tc.field && strings.Contains(p.Message+" "+p.Fix, tc.msg) {
					if !strings.HasSuffix(p.Source, "s.yaml#1") || p.Fix == "" || p.Severity != validation.SeverityError {
						t.Errorf("problem lacks its source or fix: %+v", p)
					}
					return
				}
			}
			t.Errorf("no problem at %s mentioning %q; got:", tc.field, tc.msg)
			for _, p := range problems {
				t.Log(p.String())
			}
		})
	}
}

// TestManifestPodBounds checks that a workload's replicas, and the pods
// of all workloads together, are bounded, with the problem at the manifest.
func TestManifestPodBounds(t *testing.T) {
	deployment := func(name string, replicas int) string {
		return fmt.Sprintf("---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: %s}\nspec:\n  replicas: %d\n  selector: {matchLabels: {app: x}}\n"+
			"  template: {metadata: {labels: {app: x}}, spec: {containers: [{name: c, image: c}]}}\n", name, replicas)
	}
	job := "---\napiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  parallelism: 100001\n  template: {spec: {restartPolicy: Never, containers: [{name: c, image: c}]}}\n"
	for _, tc := range []struct {
		name, docs, object, field, msg string
	}{
		{"one workload", deployment("huge", 2147483647), "huge", "spec.replicas", "more than one workload may ask for (100000)"},
		{"a Job", job, "j", "spec.parallelism", "more than one workload"},
		{"together", deployment("a", 100000) + deployment("b", 99999) + deployment("c", 2), "a", "spec.replicas", "200001 pods together"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := write(t, map[string]string{"w.yaml": tc.docs})
			_, problems, err := Load([]string{dir}, scheme(t))
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v, want ErrInvalid", err)
			}
			for _, p := range problems {
				if p.Name == tc.object && p.Field == tc.field && strings.Contains(p.Message, tc.msg) && strings.HasSuffix(p.Source, "w.yaml#1") == (tc.object != "c") && p.Fix != "" {
					return
				}
			}
			t.Errorf("no problem at %s %s mentioning %q; got %v", tc.object, tc.field, tc.msg, problems)
		})
	}
	// Right at the bounds is fine.
	dir := write(t, map[string]string{"w.yaml": deployment("a", 100000) + deployment("b", 100000)})
	if _, problems, err := Load([]string{dir}, scheme(t)); err != nil {
		t.Errorf("at the bounds: %v %v", err, problems)
	}
}

func TestAWSFaultIsResolved(t *testing.T) {
	dir := write(t, map[string]string{"m.yaml": manifests, "s.yaml": `apiVersion: stevedore.io/v1alpha1
kind: Scenario
metadata: {name: faults}
spec:
  events:
    - {at: 20m, awsFault: {operations: [CreateFleet, DescribeInstances], error: throttling, for: 10m}}
    - {at: 30m, awsFault: {operations: [GetParameter], error: UnauthorizedOperation, times: 3}}
    - {at: 40m, awsFault: {operations: [DescribeSubnets], error: serverError, times: 1}}
    - {at: 50m, awsFault: {operations: [ReceiveMessage], error: unavailable, for: 1h}}
`})
	run, problems, err := Load([]string{dir}, scheme(t))
	if err != nil {
		t.Fatalf("%v %v", err, problems)
	}
	var got []string
	for _, e := range run.Events {
		got = append(got, fmt.Sprintf("%s %s %s %d %s", e.Kind, e.Event.AWSFault.Operations, e.Event.AWSFault.Error, e.Event.AWSFault.Times, e.For))
	}
	want := []string{
		"awsFault [CreateFleet DescribeInstances] throttling 0 10m0s",
		"awsFault [GetParameter] UnauthorizedOperation 3 0s",
		"awsFault [DescribeSubnets] serverError 1 0s",
		"awsFault [ReceiveMessage] unavailable 0 1h0m0s",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestZonalShiftIsResolved(t *testing.T) {
	dir := write(t, map[string]string{"m.yaml": manifests, "s.yaml": `apiVersion: stevedore.io/v1alpha1
kind: Scenario
metadata: {name: shifts}
spec:
  duration: 100h
  events:
    - {at: 1h, zonalShift: {zone: us-east-1b, for: 30m}}
    - {at: 2h, zonalShift: {zone: us-east-1a}}
    - {at: 99h, zonalShift: {zone: us-east-1c}}
`})
	run, problems, err := Load([]string{dir}, scheme(t))
	if err != nil {
		t.Fatalf("%v %v", err, problems)
	}
	var got []string
	for _, e := range run.Events {
		got = append(got, fmt.Sprintf("%s %s %s", e.Kind, e.Event.ZonalShift.Zone, e.For))
	}
	want := []string{
		"zonalShift us-east-1b 30m0s",
		"zonalShift us-east-1a 72h0m0s", // to the end, at most ARC's limit
		"zonalShift us-east-1c 1h0m0s",  // to the end
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestInvalidManifestsAndSecondScenario(t *testing.T) {
	scenario := "apiVersion: stevedore.io/v1alpha1\nkind: Scenario\nmetadata: {name: s}\n"
	dir := write(t, map[string]string{
		"a.yaml": scenario, "b.yaml": scenario,
		"m.yaml": "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: x}\nspec: {template: {spec: {nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: d}, requirements: [], expireAfter: soon}}}\n",
	})
	_, problems, err := Load([]string{dir}, scheme(t))
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("error %v", err)
	}
	var second, invalid bool
	for _, p := range problems {
		second = second || strings.Contains(p.Message, "a second Scenario")
		invalid = invalid || (p.Kind == "NodePool" && strings.Contains(p.Field, "expireAfter"))
	}
	if !second || !invalid {
		for _, p := range problems {
			t.Log(p.String())
		}
		t.Errorf("second scenario reported %v, invalid NodePool reported %v", second, invalid)
	}
}

func TestAFolderOfScenarios(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"b-second", "a-first"} {
		sub := filepath.Join(dir, name)
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		data := manifests + "---\napiVersion: stevedore.io/v1alpha1\nkind: Scenario\nmetadata: {name: " + name + "}\n"
		if err := os.WriteFile(filepath.Join(sub, "s.yaml"), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, problems, err := Load([]string{dir}, scheme(t))
	if !errors.Is(err, ErrInvalid) || len(problems) != 1 {
		t.Fatalf("error %v, problems %v; want one problem", err, problems)
	}
	got := problems[0].String()
	for _, want := range []string{"holds 2 Scenarios, each in a directory of its own", "a-first (" + filepath.Join(dir, "a-first") + ")",
		"b-second (" + filepath.Join(dir, "b-second") + ")", "fix: simulate one directory at a time, for example: stevedore simulate " + filepath.Join(dir, "a-first")} {
		if !strings.Contains(got, want) {
			t.Errorf("problem lacks %q:\n%s", want, got)
		}
	}
	// Each directory alone is a scenario.
	run, problems, err := Load([]string{filepath.Join(dir, "b-second")}, scheme(t))
	if err != nil || run.Name != "b-second" {
		t.Errorf("one directory: %v %v", err, problems)
	}
}

func TestShippedScenario(t *testing.T) {
	run, problems, err := Load([]string{"../../examples/drift-upgrade"}, scheme(t))
	if err != nil {
		t.Fatalf("%v %v", err, problems)
	}
	if run.Name != "drift-upgrade" || run.ClusterName != "eks-workshop" || len(run.Events) != 2 || run.Duration != time.Hour {
		t.Errorf("run %+v", run)
	}
}

// TestDocsNameEveryOperation keeps docs/simulate.md's list of the
// operations an awsFault may name in step with the simulated AWS.
func TestDocsNameEveryOperation(t *testing.T) {
	data, err := os.ReadFile("../../docs/simulate.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range fake.Operations() {
		if !strings.Contains(string(data), "`"+op+"`") {
			t.Errorf("docs/simulate.md does not list %s among the operations an awsFault may name", op)
		}
	}
}

func TestCapacityReservationsAreResolved(t *testing.T) {
	spec := `apiVersion: stevedore.io/v1alpha1
kind: Scenario
metadata: {name: reserved}
spec:
  start: "2026-03-02T09:00:00Z"
  aws:
    capacityReservations:
      - {instanceType: m6i.large, zone: us-east-1a, count: 3, tags: {team: web}}
      - {id: cr-0a1b2c3d4e5f60718, instanceType: p5.48xlarge, zone: us-east-1b, count: 1, type: capacity-block, end: 6h, interruptible: true}
`
	dir := write(t, map[string]string{"m.yaml": manifests, "s.yaml": spec})
	run, problems, err := Load([]string{dir}, scheme(t))
	if err != nil {
		t.Fatalf("%v: %v", err, problems)
	}
	start := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	want := []CapacityReservationConfig{
		{InstanceType: "m6i.large", Zone: "us-east-1a", Count: 3, Type: "default", InstanceMatchCriteria: "targeted", Tags: map[string]string{"team": "web"}},
		{ID: "cr-0a1b2c3d4e5f60718", InstanceType: "p5.48xlarge", Zone: "us-east-1b", Count: 1, Type: "capacity-block", InstanceMatchCriteria: "targeted",
			End: start.Add(6 * time.Hour), Interruptible: true},
	}
	if got := run.AWS.CapacityReservations; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("reservations\ngot  %+v\nwant %+v", got, want)
	}
	if !run.Controller.ReservedCapacity {
		t.Error("ReservedCapacity is off by default; Karpenter has it on")
	}
}

// A NodePool duration too long for Go is reported once, naming the field and
// the bound, not a second time as a document that does not decode.
func TestDurationBeyondRange(t *testing.T) {
	const long = "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: x}\nspec: {template: {spec: {nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: d}, requirements: []}}, disruption: {consolidateAfter: 9999999999h}}\n"
	_, problems, err := Load([]string{write(t, map[string]string{"m.yaml": long})}, scheme(t))
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("Load = %v, want ErrInvalid", err)
	}
	var about []validation.Problem
	for _, p := range problems {
		if strings.Contains(p.Message, "9999999999h") || strings.Contains(p.Message, "invalid duration") {
			about = append(about, p)
		}
	}
	if len(about) != 1 || about[0].Field != "spec.disruption.consolidateAfter" || !strings.Contains(about[0].Fix, "2562047h") {
		t.Errorf("problems about the duration: %+v, want one naming spec.disruption.consolidateAfter and the bound", about)
	}
}
