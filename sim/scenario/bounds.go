package scenario

import (
	"encoding/json"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Bounds of a run. A simulation keeps its whole history in memory and runs
// until its virtual end, so the loader refuses a scenario that would not
// finish or would not fit: generous for any real cluster, small enough that a
// run stays within a laptop's memory.
const (
	// MaxDuration is the longest run: 30 days.
	MaxDuration = 30 * 24 * time.Hour
	// MinSampleEvery is the finest time-series resolution.
	MinSampleEvery = time.Second
	// MaxSamples is the most samples a run takes (duration / sampleEvery).
	MaxSamples = 100_000
	// MaxReplicas is the most pods one workload may ask for (replicas of a
	// Deployment, ReplicaSet or StatefulSet, a Job's parallelism).
	MaxReplicas = 100_000
	// MaxPods is the most pods the manifests and events may ask for
	// together: each workload's largest replicas, summed.
	MaxPods = 200_000
	// MaxNodeCount is the largest count of a spotInterruption, nodeFailure
	// or instanceStatusFailure event.
	MaxNodeCount = 100_000
	// MaxFreeIPs is the most free addresses of a subnet (a /16, the largest
	// subnet a VPC has, holds 65,536).
	MaxFreeIPs = 65_536
	// MaxStartupTime bounds bootTime, readyTime and podStartTime.
	MaxStartupTime = 24 * time.Hour
	// MinKubeAPIQPS and MaxKubeAPIQPS bound kubeAPIQPS, MaxKubeAPIBurst
	// kubeAPIBurst.
	MinKubeAPIQPS   = 0.01
	MaxKubeAPIQPS   = 100_000
	MaxKubeAPIBurst = 100_000
	// MaxFaultTimes is the most calls an awsFault's times may fail.
	MaxFaultTimes = 1_000_000
)

// The years a run may start in: the report writes times as RFC 3339,
// which has four-digit years.
const (
	minStartYear = 2000
	maxStartYear = 2200
)

// runBounds checks the run's length and resolution.
func (l *loader) runBounds(s Spec, run *Run) {
	if s.Duration != "" && run.Duration > MaxDuration {
		l.scenarioError("spec.duration", fmt.Sprintf("%s is longer than the longest run, %s (30 days)", run.Duration, MaxDuration),
			"simulate at most 720h; a longer period repeats what a shorter one shows")
	}
	if s.SampleEvery != "" && run.SampleEvery < MinSampleEvery {
		l.scenarioError("spec.sampleEvery", fmt.Sprintf("%s is finer than the finest resolution, %s", run.SampleEvery, MinSampleEvery),
			"sample every 1s or more; the event log has every change at its exact time")
	} else if s.SampleEvery != "" && run.SampleEvery > run.Duration {
		l.scenarioError("spec.sampleEvery", fmt.Sprintf("%s is longer than the run (%s): the time series would hold only the first sample", run.SampleEvery, run.Duration),
			fmt.Sprintf("sample every %s or less, or lengthen spec.duration", run.Duration))
	} else if n := run.Duration / run.SampleEvery; n > MaxSamples && run.Duration <= MaxDuration {
		least := (run.Duration + MaxSamples - 1) / MaxSamples
		least = (least + time.Second - 1) / time.Second * time.Second
		l.scenarioError("spec.sampleEvery", fmt.Sprintf("sampling %s every %s takes %d samples, more than %d", run.Duration, run.SampleEvery, n, MaxSamples),
			fmt.Sprintf("sample every %s or more, or shorten spec.duration", least))
	}
	if y := run.Start.Year(); s.Start != "" && (y < minStartYear || y >= maxStartYear) {
		l.scenarioError("spec.start", fmt.Sprintf("%s is not between the years %d and %d", run.Start.Format(time.RFC3339), minStartYear, maxStartYear),
			"start the run at a time such as 2026-03-02T10:00:00Z")
	}
	l.startupBound("spec.cluster.podStartTime", run.PodStartTime)
	// An empty list is not an absent one: it would silently mean the
	// default (every type, the region's three zones).
	if s.AWS.InstanceTypes != nil && len(s.AWS.InstanceTypes) == 0 {
		l.scenarioError("spec.aws.instanceTypes", "an empty list names no instance type; it does not mean the whole catalog",
			"list the instance types the account offers, or remove the field to offer every type of the catalog")
	}
	if s.AWS.Zones != nil && len(s.AWS.Zones) == 0 {
		l.scenarioError("spec.aws.zones", "an empty list names no zone; it does not mean the region's zones",
			"list the zones, such as [us-east-1a, us-east-1b], or remove the field for the region's a, b and c zones")
	}
}

// startupBound checks a boot, ready or pod start time.
func (l *loader) startupBound(field string, v time.Duration) {
	if v > MaxStartupTime {
		l.scenarioError(field, fmt.Sprintf("%s is longer than %s", v, MaxStartupTime), "write a time of at most 24h, such as 30s")
	}
}

// workload is what one workload asks for, and where it was asked.
type workload struct {
	key  string
	pods int64
	// where the largest ask was made.
	source, kind, name, field string
}

// podBounds checks the pods the manifests and events ask for: no workload
// more than MaxReplicas, all of them together no more than MaxPods.
func (l *loader) podBounds(objects []Object, events []TimedEvent) {
	var order []string
	asks := map[string]*workload{}
	ask := func(w workload) {
		if w.pods > MaxReplicas {
			l.fail(w.source, w.kind, w.name, w.field, fmt.Sprintf("%d pods are more than one workload may ask for (%d)", w.pods, MaxReplicas),
				fmt.Sprintf("ask for at most %d; the simulator runs at most %d pods", MaxReplicas, MaxPods))
		}
		cur, ok := asks[w.key]
		if !ok {
			order = append(order, w.key)
			asks[w.key] = &w
			return
		}
		if w.pods > cur.pods {
			*cur = w
		}
	}
	for _, o := range objects {
		if pods, field, ok := podsOf(o.Object); ok {
			ask(workload{key: workloadKey(o.GVK.Kind, o.Object.GetNamespace(), o.Object.GetName()), pods: pods,
				source: o.Source, kind: o.GVK.Kind, name: o.Object.GetName(), field: field})
		}
	}
	for _, e := range events {
		w := workload{source: l.scSource, kind: Kind, name: l.scName}
		switch e.Kind {
		case "apply":
			if e.Object == nil {
				continue
			}
			pods, field, ok := podsOf(e.Object)
			if !ok {
				continue
			}
			w.key, w.pods, w.field = workloadKey(e.GVK.Kind, e.Object.GetNamespace(), e.Object.GetName()), pods, e.Field()+".apply."+field
		case "scale":
			// A NodePool's replicas are nodes, not pods.
			if e.Event.Scale.Replicas == nil || isNodePool(e.GVK) {
				continue
			}
			s := e.Event.Scale
			w.key, w.pods, w.field = workloadKey(e.GVK.Kind, s.Namespace, s.Name), int64(*s.Replicas), e.Field()+".scale.replicas"
		case "patch":
			p := e.Event.Patch
			pods, field, ok := patchedPods(p)
			if !ok || isNodePool(e.GVK) {
				continue
			}
			w.key, w.pods, w.field = workloadKey(e.GVK.Kind, p.Namespace, p.Name), pods, e.Field()+".patch.patch"+field
		default:
			continue
		}
		ask(w)
	}
	var total int64
	var largest *workload
	for _, k := range order {
		w := asks[k]
		total += w.pods
		if largest == nil || w.pods > largest.pods {
			largest = w
		}
	}
	if total > MaxPods {
		l.fail(largest.source, largest.kind, largest.name, largest.field,
			fmt.Sprintf("the workloads ask for %d pods together (this one for %d), more than the %d a simulation runs", total, largest.pods, MaxPods),
			fmt.Sprintf("lower the replicas so that they add up to at most %d, or simulate the workloads in separate runs", MaxPods))
	}
}

func workloadKey(kind, namespace, name string) string {
	if namespace == "" {
		namespace = "default"
	}
	return kind + "/" + namespace + "/" + name
}

// podsOf returns how many pods a workload asks for at once, and the field
// that says so.
func podsOf(o client.Object) (int64, string, bool) {
	replicas := func(r *int32) int64 {
		if r == nil {
			return 1
		}
		return max(int64(*r), 0)
	}
	switch w := o.(type) {
	case *appsv1.Deployment:
		return replicas(w.Spec.Replicas), "spec.replicas", true
	case *appsv1.ReplicaSet:
		return replicas(w.Spec.Replicas), "spec.replicas", true
	case *appsv1.StatefulSet:
		return replicas(w.Spec.Replicas), "spec.replicas", true
	case *batchv1.Job:
		return replicas(w.Spec.Parallelism), "spec.parallelism", true
	case *corev1.Pod:
		return 1, "", true
	}
	return 0, "", false
}

// patchedPods returns the replicas or parallelism a patch sets, if it sets
// one: a merge or strategic patch {spec: {replicas: N}}, or a JSON patch
// operation on /spec/replicas.
func patchedPods(p *Patch) (int64, string, bool) {
	if p.Type == "json" {
		var ops []struct {
			Op    string `json:"op"`
			Path  string `json:"path"`
			Value any    `json:"value"`
		}
		if json.Unmarshal(p.Patch, &ops) != nil {
			return 0, "", false
		}
		var best int64
		field, found := "", false
		for i, op := range ops {
			n, ok := op.Value.(float64)
			if (op.Op == "add" || op.Op == "replace") && (op.Path == "/spec/replicas" || op.Path == "/spec/parallelism") && ok && (!found || whole(n) > best) {
				best, field, found = whole(n), fmt.Sprintf("[%d].value", i), true
			}
		}
		return best, field, found
	}
	var m struct {
		Spec map[string]any `json:"spec"`
	}
	if json.Unmarshal(p.Patch, &m) != nil {
		return 0, "", false
	}
	for _, k := range []string{"replicas", "parallelism"} {
		if n, ok := m.Spec[k].(float64); ok {
			return whole(n), ".spec." + k, true
		}
	}
	return 0, "", false
}

// whole turns a number a patch sets into a count, clamped so that no
// conversion overflows.
func whole(n float64) int64 {
	switch {
	case n != n || n < 0:
		return 0
	case n > 1<<40:
		return 1 << 40
	}
	return int64(n)
}
